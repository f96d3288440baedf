"""Lineage gating of a Kinesis-backed topic for a consumer group's assignor (pure): a child
handed preferably to its parent's last owner (the child joins that member's previous target,
which the sticky assignor keeps as far as balance allows). Which partitions the assignor may
not hand out at all is core/kinesis/shards.blocked_partitions, given here as `blocked`."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace

from .assignors import AssignorMember, Blocked

# Per topic id: each parent partition's children (core/kinesis/shards.heirs).
Heirs = Mapping[str, Mapping[int, tuple[int, ...]]]


def with_heirs(
    members: Sequence[AssignorMember], heirs: Heirs, blocked: Blocked
) -> list[AssignorMember]:
    """The members, each one's previous target grown by the assignable children of the
    parents it held."""
    result = []
    for member in members:
        previous = dict(member.previous)
        for topic, partitions in member.previous.items():
            children = heirs.get(topic, {})
            inherited = {
                child
                for parent in partitions
                for child in children.get(parent, ())
                if child not in blocked.get(topic, ())
            }
            if inherited:
                previous[topic] = frozenset(partitions) | inherited
        result.append(replace(member, previous=previous) if previous != member.previous else member)
    return result
