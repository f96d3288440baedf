"""Lineage gating of a Kinesis-backed topic for one group (pure): which partitions its
assignor may hand out (core/kinesis/shards.blocked_partitions), and a child handed preferably
to its parent's last owner (the child joins that member's previous target, which the sticky
assignor keeps as far as balance allows)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace

from ...wire.consumer_protocol import ConsumerProtocolError, decode_assignment, encode_assignment
from ..consumer.assignors import AssignorMember, Blocked

# Per topic id: each parent partition's children (shards.heirs).
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


def stripped(assignment: bytes, blocked: Mapping[str, frozenset[int]]) -> bytes:
    """A classic leader's ConsumerProtocol assignment without the partitions blocked for the
    group (`blocked` by topic name); bytes that do not decode are left as sent (the group's
    protocol is the clients' business, as in Kafka)."""
    try:
        decoded = decode_assignment(assignment)
    except ConsumerProtocolError:
        return assignment
    kept = {
        topic: [p for p in partitions if p not in blocked.get(topic, ())]
        for topic, partitions in decoded.partitions.items()
    }
    if kept == decoded.partitions:
        return assignment
    return encode_assignment(replace(decoded, partitions=kept))
