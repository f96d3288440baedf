"""A deleted group's cleanup marker: delete-groups removes the group item and puts this marker
in one transaction, then deletes what the group leaves behind (its type's items, its topic
subscriptions, its offsets) and the marker. A request that dies in between leaves the marker,
due in the deadline index a little later, and the sweeper finishes the cleanup from it
(service/group_admin.py). Without it, a crash there would leave the offsets behind, and a group
re-created under the same id would inherit them."""

from __future__ import annotations

import contextlib
from dataclasses import dataclass

from . import schema
from .dynamo import ConditionFailed, Delete, Dynamo, Put, TransactionCanceled
from .stored_group import StoredGroup, stored

KIND = "group-cleanup"
SORT_KEY = "CLEANUP"
DELETED_AT = "deletedAtMs"
GROUP = "group"


def cleanup_key(group_id: str) -> dict[str, str]:
    return {schema.PK: schema.group_pk(group_id), schema.SK: SORT_KEY}


@dataclass(frozen=True)
class Cleanup:
    group: StoredGroup
    deleted_at_ms: int


class GroupCleanups:
    def __init__(self, dynamo: Dynamo, deadline_shards: int) -> None:
        self.dynamo = dynamo
        self.deadline_shards = deadline_shards

    def delete_group(self, found: StoredGroup, now_ms: int, grace_ms: int) -> bool:
        """Delete an empty group's item if it is still at the version read and empty (as
        GroupDirectory.delete_if_unchanged), and leave the marker of its cleanup, due at
        `now_ms + grace_ms`; False if the group moved meanwhile."""
        group_item = found.raw
        group_id = found.group_id
        marker = {
            **cleanup_key(group_id),
            "kind": KIND,
            "groupId": group_id,
            DELETED_AT: now_ms,
            GROUP: group_item,
            schema.DEADLINE: now_ms + grace_ms,
            schema.DEADLINE_SHARD: schema.deadline_shard_value(
                f"{group_id}/cleanup", self.deadline_shards
            ),
        }
        delete = Delete(
            schema.group_key(group_id),
            condition="#version = :version AND memberCount = :zero",
            names={"#version": "version"},
            values={":version": group_item.get("version", 0), ":zero": 0},
        )
        try:
            self.dynamo.transact([delete, Put(marker)])
        except TransactionCanceled as cancel:
            if 0 in cancel.failed_conditions():
                return False
            raise
        return True

    def read(self, group_id: str) -> Cleanup | None:
        """The marker a deletion left until its cleanup is done: the group as deleted."""
        marker = self.dynamo.get(cleanup_key(group_id), consistent=True)
        if marker is None:
            return None
        deleted = stored(marker[GROUP])
        assert deleted is not None
        return Cleanup(deleted, int(marker[DELETED_AT]))

    def done(self, group_id: str, deleted_at_ms: int) -> None:
        """Drop the marker of the deletion at `deleted_at_ms` (not a later deletion's)."""
        with contextlib.suppress(ConditionFailed):
            self.dynamo.delete(
                cleanup_key(group_id),
                condition="#at = :at",
                names={"#at": DELETED_AT},
                values={":at": deleted_at_ms},
            )
