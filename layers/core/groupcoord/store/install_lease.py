"""A group's target installs, for every family that computes targets (the consumer protocol's
store/consumer/installs.py, streams groups' store/streams/installs.py): the install lease on
the group item (one installer at a time, on the version read), the members' new targets in
transactions of under 100 items each renewing the lease, and the flip of the target epoch that
makes them the group's. A crashed install leaves the old target epoch in force. A family says
only how its group item and a member's target are encoded."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any, Generic, Protocol, TypeVar

from . import schema
from .dynamo import ConditionFailed, Dynamo, TransactionCanceled, TransactItem, Update
from .errors import Conflict
from .family_codec import FamilyCodec

# Items per transaction, leaving room for the group item (DynamoDB allows 100).
CHUNK = 98


class InstallableGroup(Protocol):
    @property
    def group_id(self) -> str: ...
    @property
    def version(self) -> int: ...
    @property
    def member_shards(self) -> int: ...
    @property
    def target_epoch(self) -> int: ...
    @property
    def install_id(self) -> str | None: ...


class TargetedMember(Protocol):
    @property
    def member_id(self) -> str: ...
    @property
    def acquired_version(self) -> int: ...


G = TypeVar("G", bound=InstallableGroup)
M = TypeVar("M", bound=TargetedMember)


class InstallLease(Generic[G, M]):
    """The install writes of one family; a subclass encodes its group item and targets."""

    def __init__(self, dynamo: Dynamo, deadline_shards: int) -> None:
        self.dynamo = dynamo
        self.deadline_shards = deadline_shards

    # --- what a family supplies ---

    # How the family encodes its items (store/codecs/<family>.py's CODEC).
    codec: FamilyCodec[Any, Any]

    def group_update(self, old: G, new: G) -> Update:
        return self.codec.group_update(old, new, self.deadline_shards)

    def group_from_item(self, item: dict[str, Any]) -> G:
        return self.codec.group_from_item(item)  # type: ignore[no-any-return]

    def target_values(self, member: M) -> tuple[Any, list[Any]]:
        """The member's target and its `waitOn` list, as stored."""
        return self.codec.target_values(member)

    # --- the writes ---

    def _transact(self, items: Sequence[TransactItem]) -> None:
        try:
            self.dynamo.transact(items)
        except TransactionCanceled:
            raise Conflict("transaction") from None

    def target_update(self, group: G, m: M, epoch: int) -> Update:
        """A new target for a member, conditioned on it not having acquired anything since
        the install read it (so the holders recorded in `waitOn` are complete)."""
        target, wait_on = self.target_values(m)
        return Update(
            schema.member_key(group.group_id, m.member_id, group.member_shards),
            "SET #target = :target, targetEpoch = :epoch, waitOn = :wait, tver = tver + :one",
            names={"#target": "target"},
            values={
                ":target": target,
                ":epoch": epoch,
                ":wait": wait_on,
                ":one": 1,
                ":acq": m.acquired_version,
            },
            condition="attribute_exists(pk) AND acqVersion = :acq",
        )

    def take_install_lease(self, old: G, new: G, now_ms: int) -> G:
        """Write `new`, which holds the install lease (`install_id`, `install_until`), on the
        version read (so the group epoch it installs for is the current one) and only if no
        live lease is held."""
        assert new.install_id is not None
        update = self.group_update(old, new)
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
        return replace(new, version=old.version + 1)  # type: ignore[type-var]

    def renew_install(self, group: G, install_id: str, until_ms: int) -> Update:
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
        group: G,
        install_id: str,
        updates: Sequence[Update],
        lease_until: Callable[[], int],
    ) -> None:
        """Chunks of target writes (< 100 items per transaction), each guarded by the install
        lease on the group item."""
        for start in range(0, len(updates), CHUNK):
            chunk = list(updates[start : start + CHUNK])
            self._transact([*chunk, self.renew_install(group, install_id, lease_until())])

    def flip_target(self, old: G, new: G, install_id: str) -> G:
        """The install's last write: `new` (its target epoch the group epoch read when the
        lease was taken, the lease released), if the lease is still ours and the target epoch
        never went past it. Joins that bumped the group epoch meanwhile are installed by the
        next request: the group is returned as it is after the write."""
        update = self.group_update(old, new)
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
        return self.group_from_item(item)

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
