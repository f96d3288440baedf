"""Target installs' writes for consumer groups (service/consumer/install.py): the shared
install lease (store/install_lease.py) over the consumer group item and its members' targets,
and the waiters each holder's item names (core/consumer/waiters.py)."""

from __future__ import annotations

from dataclasses import replace

from ...core.consumer.member import ConsumerGroupMember
from ...core.consumer.model import ConsumerGroup
from ...core.consumer.waiters import Waiters
from .. import schema
from ..codecs.consumer import CODEC
from ..dynamo import Update
from ..install_lease import CHUNK, InstallLease

__all__ = ["CHUNK", "TargetInstalls"]


class TargetInstalls(InstallLease[ConsumerGroup, ConsumerGroupMember]):
    codec = CODEC

    def target_update(self, group: ConsumerGroup, m: ConsumerGroupMember, epoch: int) -> Update:
        """The new target, and the member's waiters as the install found them."""
        return _with_waiters(super().target_update(group, m, epoch), m.waiters)

    def waiters_update(self, group: ConsumerGroup, m: ConsumerGroupMember) -> Update:
        """A holder's waiters grew while its target stayed: written with `tver` bumped, so a
        heartbeat of the holder that read the item before cannot put the old list back (its
        write is conditioned on `tver`), and the holder's release reads the new one."""
        update = Update(
            schema.member_key(group.group_id, m.member_id, group.member_shards),
            "SET tver = tver + :one",
            values={":one": 1},
            condition="attribute_exists(pk)",
        )
        return _with_waiters(update, m.waiters)


def _with_waiters(update: Update, waiters: Waiters) -> Update:
    if waiters is None:  # too many to name
        return replace(update, expression=update.expression + " REMOVE waiters")
    return replace(
        update,
        expression=update.expression + ", waiters = :waiters",
        values={**(update.values or {}), ":waiters": list(waiters)},
    )
