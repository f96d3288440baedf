"""A classic group's state transition as the writes that make it: the group item's
conditional write and the member, payload, instance and join-counter writes riding along
(store/classic/repository.py commits it).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ...core.classic.model import (
    ClassicGroup,
    ClassicMember,
)
from .. import schema
from ..codecs.classic import payload_attributes
from ..dynamo import Delete, TransactItem, Update


def set_item(item: dict[str, Any], optional: Sequence[str], condition: str) -> Update:
    """An UpdateItem that sets every attribute of `item` and removes absent optional ones.

    Unlike a Put it leaves attributes it does not name alone (`topicChanges`, bumped by the
    topic registry with ADD), so a concurrent notification is never overwritten.
    """
    key = {schema.PK: item[schema.PK], schema.SK: item[schema.SK]}
    attrs = {k: v for k, v in item.items() if k not in key}
    names = {f"#a{i}": name for i, name in enumerate(attrs)}
    values = {f":v{i}": value for i, value in enumerate(attrs.values())}
    expression = "SET " + ", ".join(f"#a{i} = :v{i}" for i in range(len(attrs)))
    absent = [name for name in optional if name not in attrs]
    if absent:
        names.update({f"#r{i}": name for i, name in enumerate(absent)})
        expression += " REMOVE " + ", ".join(f"#r{i}" for i in range(len(absent)))
    return Update(key, expression, names=names, values=values, condition=condition)


def sets_update(key: dict[str, Any], attributes: dict[str, Any], condition: str | None) -> Update:
    """An UpdateItem that SETs `attributes` and leaves the item's others alone."""
    return Update(
        key,
        "SET " + ", ".join(f"#a{i} = :v{i}" for i in range(len(attributes))),
        names={f"#a{i}": name for i, name in enumerate(attributes)},
        values={f":v{i}": value for i, value in enumerate(attributes.values())},
        condition=condition,
    )


def payload_update(
    group: ClassicGroup, member: ClassicMember, condition: str | None = None
) -> Update:
    """Write the member's protocols on its payload item (creating it if needed), and its
    assignment only when the member carries one (a static member's replacement inherits it):
    a join leaves the assignment stored by the last sync alone."""
    attributes = payload_attributes(group, member, assignment=member.assignment_generation >= 0)
    key = schema.payload_key(group.group_id, member.member_id, group.member_shards)
    return sets_update(key, attributes, condition)


def member_deletes(group: ClassicGroup, member: ClassicMember) -> list[TransactItem]:
    """A departed member's member item, then its payload item (pending ids have none)."""
    deletes: list[TransactItem] = [
        Delete(schema.member_key(group.group_id, member.member_id, group.member_shards))
    ]
    if not member.pending:
        key = schema.payload_key(group.group_id, member.member_id, group.member_shards)
        deletes.append(Delete(key))
    return deletes


@dataclass(frozen=True)
class MemberUpdate:
    """A member's generations and session deadline, set without touching the rest of its item
    (None: left as it is)."""

    member_id: str
    joined_generation: int | None = None
    member_generation: int | None = None
    synced_generation: int | None = None
    session_deadline_ms: int | None = None

    def attributes(self) -> dict[str, int]:
        named = {
            "joinedGeneration": self.joined_generation,
            "memberGeneration": self.member_generation,
            "syncedGeneration": self.synced_generation,
            "sessionDeadline": self.session_deadline_ms,
        }
        return {name: value for name, value in named.items() if value is not None}


@dataclass
class ClassicTransition:
    """A group state change and the member writes that go with it."""

    group: ClassicGroup  # the new state; its version is bumped on commit
    expected_version: int | None  # None: the group item must not exist yet
    put_members: list[ClassicMember] = field(default_factory=list)
    # Members whose payload item is written with the flip (payload_update): a member joining
    # for the first time, or with new metadata, or a static member's replacement.
    put_payloads: list[ClassicMember] = field(default_factory=list)
    # Their payload items go too (pending member ids have none).
    delete_members: list[ClassicMember] = field(default_factory=list)
    put_instances: dict[str, str] = field(default_factory=dict)  # instance -> member id
    delete_instances: list[str] = field(default_factory=list)
    # Fields of members set without touching the rest of their items.
    member_updates: list[MemberUpdate] = field(default_factory=list)
    # (member id, +1 / -1): joins counted for (or uncounted from) the open barrier of `group`,
    # on the member's shard counter, in the same transaction.
    join_counts: list[tuple[str, int]] = field(default_factory=list)


def barrier_id(group: ClassicGroup) -> str:
    """Names one join barrier of a group: its pending generation and when it started (a group
    recreated under the same id starts its generations again)."""
    return f"{group.pending_generation:010d}#{group.rebalance_started_ms or 0}"
