"""Leader-side assignors of the classic protocol: range, roundrobin, cooperative-sticky.

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
from collections.abc import Set as AbstractSet
from dataclasses import replace
from typing import NamedTuple, Protocol

from ..core.consumer_protocol import ConsumerProtocolError, Subscription


class TopicPartition(NamedTuple):
    topic: str
    partition: int


Assignment = dict[str, list[TopicPartition]]
Blocked = Mapping[str, AbstractSet[int]]
NOTHING_BLOCKED: Blocked = {}


class Assignor(Protocol):
    def __call__(
        self,
        subscriptions: Mapping[str, Subscription],
        partitions: Mapping[str, int],
        blocked: Blocked = ...,
        /,
    ) -> Assignment: ...


def _eligible(subscriptions: Mapping[str, Subscription], topic: str) -> list[str]:
    return sorted(m for m, s in subscriptions.items() if topic in s.topics)


def _allowed(topic: str, partitions: Mapping[str, int], blocked: Blocked) -> list[int]:
    """The topic's partitions that may be assigned, in order."""
    gone = blocked.get(topic, ())
    return [p for p in range(partitions.get(topic, 0)) if p not in gone]


def assign_range(
    subscriptions: Mapping[str, Subscription],
    partitions: Mapping[str, int],
    blocked: Blocked = NOTHING_BLOCKED,
) -> Assignment:
    """Per topic, contiguous ranges of its assignable partitions: n/m each, the first n%m
    members one more."""
    result: Assignment = {m: [] for m in subscriptions}
    for topic in sorted({t for s in subscriptions.values() for t in s.topics}):
        members = _eligible(subscriptions, topic)
        allowed = _allowed(topic, partitions, blocked)
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
    members = sorted(subscriptions)
    turn = 0
    for topic in sorted({t for s in subscriptions.values() for t in s.topics}):
        for p in _allowed(topic, partitions, blocked):
            for _ in range(len(members)):
                member = members[turn % len(members)]
                turn += 1
                if topic in subscriptions[member].topics:
                    result[member].append(TopicPartition(topic, p))
                    break
    return result


def _owned(
    subscriptions: Mapping[str, Subscription], partitions: Mapping[str, int], blocked: Blocked
) -> dict[str, list[TopicPartition]]:
    """What each member says it owns, dropping what it cannot keep (gone, or blocked); a
    partition claimed by two members goes to the one with the newer generation (neither if
    they tie)."""
    claims: dict[TopicPartition, list[tuple[int, str]]] = {}
    for member, sub in subscriptions.items():
        for topic, parts in sub.owned_partitions.items():
            if topic not in sub.topics:
                continue
            for p in parts:
                if 0 <= p < partitions.get(topic, 0) and p not in blocked.get(topic, ()):
                    claims.setdefault(TopicPartition(topic, p), []).append(
                        (sub.generation_id, member)
                    )
    owned: dict[str, list[TopicPartition]] = {m: [] for m in subscriptions}
    for tp, claimants in claims.items():
        claimants.sort(reverse=True)
        if len(claimants) == 1 or claimants[0][0] > claimants[1][0]:
            owned[claimants[0][1]].append(tp)
    return owned


def assign_sticky(
    subscriptions: Mapping[str, Subscription],
    partitions: Mapping[str, int],
    blocked: Blocked = NOTHING_BLOCKED,
    cooperative: bool = False,
) -> Assignment:
    """Balanced (sizes within one for equal subscriptions), then sticky: members keep what
    they own up to their share. Cooperative: a partition that changes owner is left out of
    this round; its old owner revokes it, rejoins, and the next round hands it over."""
    members = sorted(subscriptions)
    if not members:
        return {}
    topics = sorted({t for s in subscriptions.values() for t in s.topics})
    all_tps = [TopicPartition(t, p) for t in topics for p in _allowed(t, partitions, blocked)]
    share = -(-len(all_tps) // len(members))  # ceil: nobody keeps more than a full share
    owned = _owned(subscriptions, partitions, blocked)
    result: Assignment = {m: sorted(owned[m])[:share] for m in members}
    taken = {tp for parts in result.values() for tp in parts}
    for tp in [tp for tp in all_tps if tp not in taken]:
        candidates = [m for m in members if tp.topic in subscriptions[m].topics]
        if candidates:
            target = min(candidates, key=lambda m: (len(result[m]), m))
            result[target].append(tp)
    _rebalance(result, subscriptions)
    if cooperative:
        previous = {tp: m for m, parts in owned.items() for tp in parts}
        for member, parts in result.items():
            result[member] = [tp for tp in parts if previous.get(tp, member) == member]
    return {m: sorted(parts) for m, parts in result.items()}


def _rebalance(result: Assignment, subscriptions: Mapping[str, Subscription]) -> None:
    """Move partitions from the fullest to the emptiest eligible member until sizes differ by
    at most one (for members that can take them)."""
    while True:
        moved = False
        for low in sorted(result, key=lambda m: (len(result[m]), m)):
            for high in sorted(result, key=lambda m: (-len(result[m]), m)):
                if len(result[high]) - len(result[low]) <= 1:
                    break
                movable = [tp for tp in result[high] if tp.topic in subscriptions[low].topics]
                if movable:
                    tp = movable[-1]
                    result[high].remove(tp)
                    result[low].append(tp)
                    moved = True
                    break
            if moved:
                break
        if not moved:
            return


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
    """An eager sticky member's previous assignment (from its userData) as what it owns."""
    if subscription.owned_partitions or not subscription.user_data:
        return subscription
    try:
        owned, generation = decode_sticky_user_data(subscription.user_data)
    except ConsumerProtocolError:
        return subscription
    return replace(subscription, owned_partitions=owned, generation_id=generation)


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
