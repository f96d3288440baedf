"""The sticky assignors' plan (sticky and cooperative-sticky), after Kafka's
AbstractStickyAssignor: balanced where balance is possible, then sticky; cooperative, nothing
goes to a member while another still holds it. Roughly linear in partitions: quotas for equal
subscriptions, heaps by load for unequal ones."""

from __future__ import annotations

import heapq
from collections.abc import Mapping
from collections.abc import Set as AbstractSet
from typing import NamedTuple

from ..wire.consumer_protocol import Subscription
from .topic_partitions import (
    NOTHING_BLOCKED,
    Assignment,
    Blocked,
    TopicPartition,
    allowed_partitions,
    subscribed_topics,
)

_new = tuple.__new__  # TopicPartition without its Python-level __new__: 3x faster, in hot loops


class _Claims(NamedTuple):
    keep: dict[str, list[TopicPartition]]  # what each member may keep (sticky credit)
    holders: dict[TopicPartition, set[str]]  # every member that says it still has it


def _claims(
    subscriptions: Mapping[str, Subscription], assignable: Mapping[str, AbstractSet[int]]
) -> _Claims:
    """Who owns what. A partition claimed by several members belongs to the newest
    generation's claim; if that generation has two claimants, to neither (Kafka's
    AbstractStickyAssignor). A member keeps credit only for an assignable partition of a
    topic it still subscribes to; but every claimant still *holds* its partition, whatever
    its generation or subscription, until it revokes it."""
    holders: dict[TopicPartition, set[str]] = {}
    newest: dict[TopicPartition, tuple[int, list[str]]] = {}
    for member, sub in subscriptions.items():
        for topic, parts in sub.owned_partitions.items():
            for p in set(parts):
                tp = _new(TopicPartition, (topic, p))
                holders.setdefault(tp, set()).add(member)
                best = newest.get(tp)
                if best is None or sub.generation_id > best[0]:
                    newest[tp] = (sub.generation_id, [member])
                elif sub.generation_id == best[0]:
                    best[1].append(member)
    keep: dict[str, list[TopicPartition]] = {m: [] for m in subscriptions}
    for tp, (_, claimants) in newest.items():
        if len(claimants) > 1:
            continue  # disputed: no credit; both claimants hold it until they revoke it
        (member,) = claimants
        if (
            tp.partition in assignable.get(tp.topic, ())
            and tp.topic in subscriptions[member].topics
        ):
            keep[member].append(tp)
    return _Claims(keep, holders)


def assign_sticky(
    subscriptions: Mapping[str, Subscription],
    partitions: Mapping[str, int],
    blocked: Blocked = NOTHING_BLOCKED,
    cooperative: bool = False,
) -> Assignment:
    """Balanced, then sticky: no member could take a partition from one with two more
    (sizes within one for equal subscriptions), and members keep what they own where that
    allows. Cooperative (KIP-429): a partition another member still holds goes to no one new
    this round; its holder revokes it, rejoins, and the next round hands it over."""
    if not subscriptions:
        return {}
    topics = subscribed_topics(subscriptions)
    allowed = {t: allowed_partitions(t, partitions, blocked) for t in topics}
    claims = _claims(subscriptions, {t: set(parts) for t, parts in allowed.items()})
    result = _plan(subscriptions, allowed, claims.keep)
    if cooperative:
        given = _withhold_held(result, claims)
        if sum(map(len, given.values())) < sum(map(len, result.values())):
            given = _settled(subscriptions, allowed, given)
        result = given
    return {m: sorted(parts) for m, parts in result.items()}


def _plan(
    subscriptions: Mapping[str, Subscription],
    allowed: Mapping[str, list[int]],
    keep: Mapping[str, list[TopicPartition]],
) -> Assignment:
    """The balanced assignment that keeps as much of `keep` as balance allows."""
    if len({frozenset(s.topics) for s in subscriptions.values()}) == 1:
        all_tps = [_new(TopicPartition, (t, p)) for t in sorted(allowed) for p in allowed[t]]
        return _assign_uniform(sorted(subscriptions), all_tps, keep)
    return _assign_general(subscriptions, allowed, keep)


def _settled(
    subscriptions: Mapping[str, Subscription],
    allowed: Mapping[str, list[int]],
    given: Assignment,
) -> Assignment:
    """A cooperative round that withheld partitions is followed by one that hands them out;
    that round plans again from what this one gives. Give now only what it will not move
    again (dropping the rest: revoked now, or left for it), so the group settles in that
    single follow-up round, as Kafka's does. Each pass only drops partitions, so it ends."""
    while True:
        follow_up = _plan(subscriptions, allowed, given)
        narrowed = {}
        for member, parts in given.items():
            stays = set(follow_up[member])
            narrowed[member] = [tp for tp in parts if tp in stays]
        if sum(map(len, narrowed.values())) == sum(map(len, given.values())):
            return given
        given = narrowed


def _withhold_held(result: Assignment, claims: _Claims) -> Assignment:
    """Cooperative: a member gets a partition only if it keeps it (its claim is the newest)
    or nobody else holds it; the others' claims to it are stale and they revoke it now."""
    kept = {tp: member for member, parts in claims.keep.items() for tp in parts}
    return {
        member: [
            tp
            for tp in parts
            if kept.get(tp) == member or not claims.holders.get(tp, {member}) - {member}
        ]
        for member, parts in result.items()
    }


def _spread(parts: list[TopicPartition]) -> list[TopicPartition]:
    """A member's partitions ordered so that any prefix takes evenly from its topics: what it
    keeps when it must give some up stays balanced per topic."""
    rank: dict[str, int] = {}
    ranked = []
    for tp in sorted(parts):
        rank[tp.topic] = rank.get(tp.topic, -1) + 1
        ranked.append((rank[tp.topic], tp))
    ranked.sort()
    return [tp for _, tp in ranked]


def _assign_uniform(
    members: list[str], all_tps: list[TopicPartition], keep: Mapping[str, list[TopicPartition]]
) -> Assignment:
    """Everyone subscribes to the same topics: each gets floor(n/m) or one more, keeping
    what it owns up to that (Kafka's constrained assignment); linear in partitions."""
    low, extra = divmod(len(all_tps), len(members))
    result: Assignment = {}
    for member in sorted(members, key=lambda m: (-len(keep[m]), m)):
        kept = _spread(keep[member])
        size = low + 1 if extra > 0 and len(kept) > low else low
        extra -= size - low
        result[member] = kept[:size]
    taken = {tp for parts in result.values() for tp in parts}
    pool = iter([tp for tp in all_tps if tp not in taken])
    hungry = [m for m in members if len(result[m]) < low]
    while hungry:  # dealt in turn: each topic's spare partitions spread over the takers
        for member in hungry:
            result[member].append(next(pool))
        hungry = [m for m in hungry if len(result[m]) < low]
    for member in members:  # what is left: one more each for as many as it takes
        if len(result[member]) == low:
            tp = next(pool, None)
            if tp is None:
                break
            result[member].append(tp)
    return result


class _Loads:
    """Members' partition counts with, per distinct subscription (members with the same
    topics are interchangeable takers), a min-heap of its members by count. Entries go stale
    when a count changes: each change pushes a fresh one, readers drop stale ones on top."""

    def __init__(self, topics: Mapping[str, frozenset[str]], load: dict[str, int]) -> None:
        self.topics = topics
        self.load = load
        self.heaps: dict[frozenset[str], list[tuple[int, str]]] = {}
        subscribers: dict[str, int] = {}
        for member, subscribed in topics.items():
            self.heaps.setdefault(subscribed, []).append((load[member], member))
            for topic in subscribed:
                subscribers[topic] = subscribers.get(topic, 0) + 1
        for heap in self.heaps.values():
            heapq.heapify(heap)
        # A taker gets a topic few others could take first, leaving the widely read ones for
        # members that cannot read the rest.
        self.preferred = {
            subscribed: sorted(subscribed, key=lambda t: (subscribers[t], t))
            for subscribed in self.heaps
        }

    def add(self, member: str, delta: int) -> None:
        self.load[member] += delta
        heapq.heappush(self.heaps[self.topics[member]], (self.load[member], member))

    def least(self, subscribed: frozenset[str]) -> tuple[int, str] | None:
        """The member subscribed to exactly these topics with the fewest partitions."""
        heap = self.heaps[subscribed]
        while heap and heap[0][0] != self.load[heap[0][1]]:
            heapq.heappop(heap)
        return heap[0] if heap else None


def _assign_general(
    subscriptions: Mapping[str, Subscription],
    allowed: Mapping[str, list[int]],
    keep: Mapping[str, list[TopicPartition]],
) -> Assignment:
    """Unequal subscriptions: everyone keeps what it owns; the rest goes, topics with the
    fewest subscribers first, to the least loaded subscriber; then partitions move from the
    most loaded member to a subscriber with two fewer until none can."""
    held: dict[str, dict[str, list[TopicPartition]]] = {m: {} for m in subscriptions}
    taken = set()
    for member, parts in keep.items():
        for tp in sorted(parts):  # a canonical order: the TypeScript client's is the same
            held[member].setdefault(tp.topic, []).append(tp)
            taken.add(tp)
    load = {m: len(keep[m]) for m in subscriptions}
    subscribers: dict[str, list[str]] = {t: [] for t in allowed}
    for member in sorted(subscriptions):
        for topic in set(subscriptions[member].topics):
            subscribers[topic].append(member)
    width = {m: len(set(s.topics)) for m, s in subscriptions.items()}
    for topic in sorted(allowed, key=lambda t: (len(subscribers[t]), t)):
        free = [_new(TopicPartition, (topic, p)) for p in allowed[topic]]
        free = [tp for tp in free if tp not in taken]
        # Ties go to the members with the fewest topics: the others have more to choose from.
        heap = [(load[m], width[m], m) for m in subscribers[topic]]
        heapq.heapify(heap)
        for tp in free:  # loads only grow here: a stale entry is refreshed when it surfaces
            while heap[0][0] != load[heap[0][2]]:
                heapq.heapreplace(heap, (load[heap[0][2]], *heap[0][1:]))
            member = heap[0][2]
            held[member].setdefault(topic, []).append(tp)  # after the kept: moved first
            load[member] += 1
            heapq.heapreplace(heap, (load[member], width[member], member))
    topics = {m: frozenset(t for t in s.topics if t in allowed) for m, s in subscriptions.items()}
    _even_out(held, _Loads(topics, load), {m: set(parts) for m, parts in keep.items()})
    return {m: [tp for parts in by_topic.values() for tp in parts] for m, by_topic in held.items()}


def _even_out(
    held: dict[str, dict[str, list[TopicPartition]]],
    loads: _Loads,
    kept: Mapping[str, AbstractSet[TopicPartition]],
) -> None:
    """Move one partition at a time from the most loaded member to the least loaded
    subscriber of one of its topics while that one has at least two fewer, one the giver did
    not own before where it can. Each move lowers the sum of squared loads, so this ends; it
    ends with no such pair left (Kafka's balance)."""
    moved = True
    while moved:
        moved = False
        givers = [(-load, m) for m, load in loads.load.items()]
        heapq.heapify(givers)
        while givers:
            negative, giver = heapq.heappop(givers)
            if -negative != loads.load[giver]:
                continue
            target = _taker(held[giver], loads, -negative, kept[giver])
            if target is None:
                continue
            topic, taker = target
            tp = held[giver][topic].pop()
            if not held[giver][topic]:
                del held[giver][topic]
            held[taker].setdefault(topic, []).append(tp)
            loads.add(giver, -1)
            loads.add(taker, 1)
            heapq.heappush(givers, (-loads.load[giver], giver))
            heapq.heappush(givers, (-loads.load[taker], taker))
            moved = True


def _taker(
    by_topic: Mapping[str, list[TopicPartition]],
    loads: _Loads,
    load: int,
    kept: AbstractSet[TopicPartition],
) -> tuple[str, str] | None:
    """The topic and member to move one of these partitions to: the least loaded subscriber
    of any of their topics, if it has at least two fewer than `load`; a topic whose last
    partition (the next to move) was not kept by the giver first, so that a cooperative
    follow-up round does not move what the previous one left in place."""
    best: tuple[int, str, frozenset[str]] | None = None
    for subscribed in loads.heaps:
        least = loads.least(subscribed)
        if least is None or least[0] > load - 2 or subscribed.isdisjoint(by_topic):
            continue
        if best is None or least < best[:2]:
            best = (least[0], least[1], subscribed)
    if best is None:
        return None
    preferred = [t for t in loads.preferred[best[2]] if t in by_topic]
    topic = next((t for t in preferred if by_topic[t][-1] not in kept), preferred[0])
    return topic, best[1]
