"""Leader-side assignors of the classic protocol: range, roundrobin, sticky, cooperative-sticky.

Each takes the members' ConsumerProtocol subscriptions, the partition counts and the
partitions that go to no one (`blocked`: a Kinesis-backed topic's shards that are not
assignable to the group, which the leader's metadata with its groupId leaves out) and returns
every member's partitions. Kafka's assignors are the reference; the sticky one keeps what
members own where balance allows, and in cooperative mode (KIP-429) never moves a partition
directly from one owner to another in one round.
"""

from __future__ import annotations

import struct
from collections.abc import Mapping
from contextlib import suppress
from dataclasses import replace
from typing import Protocol

from ..wire.consumer_protocol import ConsumerProtocolError, Subscription
from .sticky import assign_sticky
from .topic_partitions import (
    NOTHING_BLOCKED,
    Assignment,
    Blocked,
    TopicPartition,
    allowed_partitions,
    subscribed_topics,
)

__all__ = [
    "ASSIGNORS",
    "COOPERATIVE_ASSIGNORS",
    "NOTHING_BLOCKED",
    "Assignment",
    "Assignor",
    "Blocked",
    "TopicPartition",
    "assign_cooperative_sticky",
    "assign_range",
    "assign_roundrobin",
    "assign_sticky",
    "decode_sticky_user_data",
    "encode_cooperative_user_data",
    "encode_sticky_user_data",
    "with_cooperative_generation",
    "with_sticky_memory",
]


class Assignor(Protocol):
    def __call__(
        self,
        subscriptions: Mapping[str, Subscription],
        partitions: Mapping[str, int],
        blocked: Blocked = ...,
        /,
    ) -> Assignment: ...


def _member_order(subscriptions: Mapping[str, Subscription]) -> list[str]:
    """Static members first, by groupInstanceId, then dynamic ones by member id (Kafka's
    MemberInfo order): a static member that restarts with a new member id keeps its place,
    so range and roundrobin hand everyone the same partitions again."""

    def key(member: str) -> tuple[int, str]:
        instance = subscriptions[member].group_instance_id
        return (0, instance) if instance else (1, member)

    return sorted(subscriptions, key=key)


def assign_range(
    subscriptions: Mapping[str, Subscription],
    partitions: Mapping[str, int],
    blocked: Blocked = NOTHING_BLOCKED,
) -> Assignment:
    """Per topic, contiguous ranges of its assignable partitions: n/m each, the first n%m
    members one more."""
    result: Assignment = {m: [] for m in subscriptions}
    order = _member_order(subscriptions)
    for topic in subscribed_topics(subscriptions):
        members = [m for m in order if topic in subscriptions[m].topics]
        allowed = allowed_partitions(topic, partitions, blocked)
        if not members or not allowed:
            continue
        per, extra = divmod(len(allowed), len(members))
        start = 0
        for i, member in enumerate(members):
            size = per + (1 if i < extra else 0)
            result[member] += [TopicPartition(topic, p) for p in allowed[start : start + size]]
            start += size
    return result


def assign_roundrobin(
    subscriptions: Mapping[str, Subscription],
    partitions: Mapping[str, int],
    blocked: Blocked = NOTHING_BLOCKED,
) -> Assignment:
    """All assignable partitions in order, dealt to the members in turn (skipping the
    unsubscribed)."""
    result: Assignment = {m: [] for m in subscriptions}
    members = _member_order(subscriptions)
    turn = 0
    for topic in subscribed_topics(subscriptions):
        for p in allowed_partitions(topic, partitions, blocked):
            for _ in range(len(members)):
                member = members[turn % len(members)]
                turn += 1
                if topic in subscriptions[member].topics:
                    result[member].append(TopicPartition(topic, p))
                    break
    return result


# --- the eager sticky assignor's memory ---
#
# Eager members revoke everything before they join, so their subscription's ownedPartitions is
# empty and the leader would have nothing to stick to. Kafka's StickyAssignor sends the
# previous assignment in the subscription's userData instead (StickyAssignorUserData v1:
# [topic, [partition]] and the generation); so does this client, in the same layout.


def encode_sticky_user_data(partitions: Mapping[str, list[int]], generation: int) -> bytes:
    out = struct.pack(">i", len(partitions))
    for topic, parts in sorted(partitions.items()):
        raw = topic.encode("utf-8")
        out += struct.pack(">h", len(raw)) + raw
        out += struct.pack(f">i{len(parts)}i", len(parts), *sorted(parts))
    return out + struct.pack(">i", generation)


def decode_sticky_user_data(data: bytes) -> tuple[dict[str, list[int]], int]:
    try:
        pos = 0

        def take(fmt: str) -> tuple:
            nonlocal pos
            values = struct.unpack_from(fmt, data, pos)
            pos += struct.calcsize(fmt)
            return values

        result: dict[str, list[int]] = {}
        for _ in range(take(">i")[0]):
            (size,) = take(">h")
            topic = data[pos : pos + size].decode("utf-8")
            pos += size
            (count,) = take(">i")
            result.setdefault(topic, []).extend(take(f">{count}i"))
        generation = take(">i")[0] if pos < len(data) else -1  # v0 has no generation
        return result, generation
    except (struct.error, UnicodeDecodeError) as error:
        raise ConsumerProtocolError(f"bad sticky userData: {error}") from error


def with_sticky_memory(subscription: Subscription) -> Subscription:
    """What an eager sticky member owns and its generation, from its userData alone (Kafka's
    StickyAssignor): it revoked everything before joining, so its subscription's
    ownedPartitions are not its previous assignment, whatever they say. No userData, or one
    that cannot be read, is no claim."""
    owned: dict[str, list[int]] = {}
    generation = -1
    if subscription.user_data:
        with suppress(ConsumerProtocolError):
            owned, generation = decode_sticky_user_data(subscription.user_data)
    return replace(subscription, owned_partitions=owned, generation_id=generation)


# --- the cooperative sticky assignor's generation ---
#
# Kafka's CooperativeStickyAssignor sends its generation as the subscription's userData (an
# int32), for leaders reading a subscription older than v2, which has no generationId field.


def encode_cooperative_user_data(generation: int) -> bytes:
    return struct.pack(">i", generation)


def with_cooperative_generation(subscription: Subscription) -> Subscription:
    """A subscription without a generationId (v0/v1) takes the one its userData carries."""
    data = subscription.user_data
    if subscription.generation_id >= 0 or data is None or len(data) != 4:
        return subscription
    return replace(subscription, generation_id=struct.unpack(">i", data)[0])


def assign_cooperative_sticky(
    subscriptions: Mapping[str, Subscription],
    partitions: Mapping[str, int],
    blocked: Blocked = NOTHING_BLOCKED,
) -> Assignment:
    return assign_sticky(subscriptions, partitions, blocked, cooperative=True)


ASSIGNORS: dict[str, Assignor] = {
    "range": assign_range,
    "roundrobin": assign_roundrobin,
    "sticky": assign_sticky,
    "cooperative-sticky": assign_cooperative_sticky,
}
COOPERATIVE_ASSIGNORS = frozenset({"cooperative-sticky"})
