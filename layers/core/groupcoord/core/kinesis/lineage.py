"""Lineage gating of a Kinesis-backed topic for one group (pure), for a classic group: its
leader's assignment without the partitions its assignor may not hand out
(core/kinesis/shards.blocked_partitions). A consumer group's server-side assignor is gated
beside it (core/consumer/heirs.py)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

from ...wire.consumer_protocol import ConsumerProtocolError, decode_assignment, encode_assignment


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
