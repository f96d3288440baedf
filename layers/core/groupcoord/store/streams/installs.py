"""A streams group's target installs (service/streams/install.py), as the consumer protocol's
(store/consumer/installs.py): the install lease on the group item (one installer at a time, on
the version read), the members' new targets in transactions of under 100 items each renewing
the lease, and the flip of the target epoch that makes them the group's. A crashed install
leaves the old target epoch in force."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence
from dataclasses import replace

from ...core.streams.group import StreamsGroup
from ...core.streams.member import StreamsGroupMember
from .. import schema
from ..dynamo import ConditionFailed, Dynamo, TransactionCanceled, TransactItem, Update
from ..errors import Conflict
from .codec import group_from_item, group_update, tasks_to_item

# Items per transaction, leaving room for the group item (DynamoDB allows 100).
CHUNK = 98


class StreamsInstalls:
    def __init__(self, dynamo: Dynamo, deadline_shards: int) -> None:
        self.dynamo = dynamo
        self.deadline_shards = deadline_shards

    def _transact(self, items: Sequence[TransactItem]) -> None:
        try:
            self.dynamo.transact(items)
        except TransactionCanceled:
            raise Conflict("transaction") from None

    def target_update(self, group: StreamsGroup, m: StreamsGroupMember, epoch: int) -> Update:
        """A new target for a member, conditioned on it not having acquired anything since
        the install read it (so the holders recorded in `waitOn` are complete)."""
        return Update(
            schema.member_key(group.group_id, m.member_id, group.member_shards),
            "SET #target = :target, targetEpoch = :epoch, waitOn = :wait, tver = tver + :one",
            names={"#target": "target"},
            values={
                ":target": tasks_to_item(m.target),
                ":epoch": epoch,
                ":wait": list(m.wait_on),
                ":one": 1,
                ":acq": m.acquired_version,
            },
            condition="attribute_exists(pk) AND acqVersion = :acq",
        )

    def take_install_lease(self, old: StreamsGroup, new: StreamsGroup, now_ms: int) -> StreamsGroup:
        """Write `new`, which holds the install lease (`install_id`, `install_until`), on the
        version read (so the group epoch it installs for is the current one) and only if no
        live lease is held."""
        assert new.install_id is not None
        update = group_update(old, new, self.deadline_shards)
        update = replace(
            update,
            condition="#version = :expected AND "
            "(attribute_not_exists(installId) OR installUntil <= :now)",
            values={**(update.values or {}), ":now": now_ms},
        )
        try:
            self.dynamo.update(update)
        except ConditionFailed:
            raise Conflict(old.group_id) from None
        return replace(new, version=old.version + 1)

    def renew_install(self, group: StreamsGroup, install_id: str, until_ms: int) -> Update:
        """Each chunk of target writes renews the lease, and fails if it was lost (the group's
        `version` is not bumped: the lease is not group state)."""
        return Update(
            schema.group_key(group.group_id),
            "SET installUntil = :until",
            values={":id": install_id, ":until": until_ms},
            condition="installId = :id",
        )

    def write_targets(
        self,
        group: StreamsGroup,
        install_id: str,
        updates: Sequence[Update],
        lease_until: Callable[[], int],
    ) -> None:
        """Chunks of target writes (< 100 items per transaction), each guarded by the install
        lease on the group item."""
        for start in range(0, len(updates), CHUNK):
            chunk = list(updates[start : start + CHUNK])
            self._transact([*chunk, self.renew_install(group, install_id, lease_until())])

    def flip_target(self, old: StreamsGroup, new: StreamsGroup, install_id: str) -> StreamsGroup:
        """The install's last write: `new` (its target epoch the group epoch read when the
        lease was taken, the lease released), if the lease is still ours and the target epoch
        never went past it. Joins that bumped the group epoch meanwhile are installed by the
        next request: the group is returned as it is after the write."""
        update = group_update(old, new, self.deadline_shards)
        update = replace(
            update,
            condition="installId = :install AND targetEpoch < :epoch",
            values={**(update.values or {}), ":install": install_id, ":epoch": new.target_epoch},
        )
        update.values.pop(":expected", None)  # type: ignore[union-attr]
        try:
            item = self.dynamo.update(update, return_new=True)
        except ConditionFailed:
            raise Conflict(old.group_id) from None
        assert item is not None
        return group_from_item(item)

    def release_install(self, group_id: str, install_id: str) -> None:
        """Give up the install lease (best effort: it expires anyway)."""
        with contextlib.suppress(ConditionFailed):
            self.dynamo.update(
                Update(
                    schema.group_key(group_id),
                    "REMOVE installId, installUntil SET #version = #version + :one",
                    names={"#version": "version"},
                    values={":id": install_id, ":one": 1},
                    condition="installId = :id",
                )
            )
