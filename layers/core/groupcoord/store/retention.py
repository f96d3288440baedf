"""The items of offset retention: each group's retention check (a deadline-index item the
sweeper completes) and the conditional deletes the check decides (service/offset_retention.py
holds the rules; docs/offsets.md "Retention")."""

from __future__ import annotations

import contextlib

from ..core.classic.model import ClassicGroup
from ..core.offsets import RetainingGroup
from . import schema
from .codecs.classic import group_to_item
from .dynamo import ConditionFailed, Dynamo, Update
from .stored_group import StoredGroup

KIND = "offset-retention"


def retaining_group(found: StoredGroup) -> RetainingGroup:
    """What retention needs of a group of any type."""
    item = found.raw
    empty_since = item.get("emptySinceMs")
    return RetainingGroup(
        is_consumer_group=item.get("groupType") == "consumer",
        member_count=int(item.get("memberCount", 0)),
        empty_since_ms=int(empty_since) if empty_since is not None else None,
        subscribed_topics=frozenset(item.get("subscribedTopics") or ()),
    )


class RetentionStore:
    def __init__(self, dynamo: Dynamo, deadline_shards: int) -> None:
        self.dynamo = dynamo
        self.deadline_shards = deadline_shards

    def schedule_check(self, group_id: str, at_ms: int) -> None:
        """The group's (one) retention check becomes due at `at_ms`."""
        self.dynamo.put(
            {
                **schema.retention_key(group_id),
                "kind": KIND,
                "groupId": group_id,
                schema.DEADLINE: at_ms,
                schema.DEADLINE_SHARD: schema.deadline_shard_value(
                    f"{group_id}/retention", self.deadline_shards
                ),
            }
        )

    def arm(self, group_id: str, first_check_ms: int) -> None:
        """After a group's first commit: schedule its check and mark the group armed (so that
        later commits skip this), if the group item exists."""
        self.schedule_check(group_id, first_check_ms)
        with contextlib.suppress(ConditionFailed):
            self.dynamo.update(
                Update(
                    schema.group_key(group_id),
                    "SET retentionArmed = :armed",
                    values={":armed": True},
                    condition="attribute_exists(pk)",
                )
            )

    def disarm(self, group_id: str, due_ms: int) -> None:
        """Delete the group's check, unless a commit re-armed it since (a new due time)."""
        with contextlib.suppress(ConditionFailed):
            self.dynamo.delete(
                schema.retention_key(group_id),
                condition="#dl = :dl",
                names={"#dl": schema.DEADLINE},
                values={":dl": due_ms},
            )

    def delete_check(self, group_id: str) -> None:
        self.dynamo.delete(schema.retention_key(group_id))

    def recreate_group(self, group: ClassicGroup) -> None:
        """Put the group item back (a simple group) for offsets a commit wrote while their
        group was being deleted, unless a commit re-created it already."""
        with contextlib.suppress(ConditionFailed):
            self.dynamo.put(
                group_to_item(group, self.deadline_shards), condition="attribute_not_exists(pk)"
            )
