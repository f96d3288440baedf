"""The uniform assignor when members subscribe to different topics (pure).

Balance as Kafka defines it for such groups: no partition of a topic could move from its owner
to another subscriber of that topic with two or more fewer partitions in all. Then sticky: a
member keeps the partitions it claims (its previous target, still subscribed and assignable)
as far as that balance allows.

1. Every member keeps its claims.
2. The free partitions go, topic by topic (the most partitions per subscriber first, as Kafka
   orders them), to the least loaded subscribers, water-filled, in contiguous runs; a share one
   larger goes to the members with the most topics, which can pass a partition on to another
   topic's subscriber (4/4/4 where Kafka's balance may stop at 3/4/5).
3. While a topic's most loaded holder has two or more than its least loaded subscriber, one
   partition moves: one the giver did not claim first, then the one it is least behind on
   (`lags`), then the highest. Every move lowers the sum of squared loads, so it ends.
4. A member that gave up a claimed partition of a topic and took an unclaimed one of the same
   topic swaps back: the same loads, a move fewer.

Linear in partitions plus subscriptions per pass, a few passes: 100,000 partitions over 2,000
members in 1-2 s on 2 busy cores (bench/assignors.py).
"""

from __future__ import annotations

import heapq
from bisect import bisect_left, bisect_right
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from itertools import accumulate

from .assignment import Assignment, TopicPartition

FREE = -1
BLOCKED = -2


@dataclass
class _State:
    subscribers: dict[str, list[int]]  # topic -> member indices, ascending
    owner: dict[str, list[int]]  # topic -> per partition: member index, FREE or BLOCKED
    claimant: dict[str, list[int]]  # topic -> per partition: who claimed it, or FREE
    loads: list[int]
    lags: Mapping[TopicPartition, int]
    # topic -> member -> its partitions of the topic, the next to give away last.
    pools: dict[str, dict[int, list[int]]]
    # Per member, its rank for an extra partition: the most topics first, then by index.
    extra_order: list[int]


def assign_heterogeneous(
    member_topics: Sequence[frozenset[str]],
    claims: Sequence[Sequence[TopicPartition]],
    topics: Mapping[str, int],
    blocked: Mapping[str, frozenset[int]],
    lags: Mapping[TopicPartition, int],
) -> list[Assignment]:
    """Per member (in the order given, which breaks ties), its target. `claims` are each
    member's valid previous partitions, none claimed twice."""
    state = _initial_state(member_topics, claims, topics, blocked, lags)
    for topic in _topic_order(state, topics):
        _fill(state, topic)
    _balance(state, _topic_order(state, topics))
    _swap_back(state)
    return _targets(state, len(member_topics))


def _subscribers(
    member_topics: Sequence[frozenset[str]], topics: Mapping[str, int]
) -> dict[str, list[int]]:
    """Topic -> its subscribers' indices, ascending; members that subscribe alike (most of a
    large group) are handled once per subscription."""
    alike: dict[frozenset[str], list[int]] = {}
    for index, subscribed in enumerate(member_topics):
        alike.setdefault(subscribed, []).append(index)
    subscribers: dict[str, list[int]] = {}
    for subscribed, indices in alike.items():
        for topic in subscribed:
            if topic in topics:
                subscribers.setdefault(topic, []).extend(indices)
    if len(alike) > 1:
        for indices in subscribers.values():
            indices.sort()
    return subscribers


def _initial_state(member_topics, claims, topics, blocked, lags) -> _State:
    subscribers = _subscribers(member_topics, topics)
    owner: dict[str, list[int]] = {}
    for topic in subscribers:
        row = [FREE] * topics[topic]
        for partition in blocked.get(topic, ()):
            if partition < len(row):
                row[partition] = BLOCKED
        owner[topic] = row
    loads = [0] * len(member_topics)
    for index, claimed in enumerate(claims):
        for topic, partition in claimed:
            owner[topic][partition] = index
        loads[index] = len(claimed)
    claimant = {t: [o if o >= 0 else FREE for o in row] for t, row in owner.items()}
    count = len(member_topics)
    extra_order = [-len(subs & topics.keys()) * count + i for i, subs in enumerate(member_topics)]
    return _State(subscribers, owner, claimant, loads, lags, {}, extra_order)


def _topic_order(state: _State, topics: Mapping[str, int]) -> list[str]:
    """The most partitions per subscriber first, then the fewest subscribers, then by id."""
    subs = state.subscribers
    return sorted(subs, key=lambda t: (-topics[t] / len(subs[t]), len(subs[t]), t))


def _fill(state: _State, topic: str) -> None:
    """The topic's free partitions to its least loaded subscribers, levelled up together."""
    row = state.owner[topic]
    free = [p for p, o in enumerate(row) if o == FREE]
    if not free:
        return
    loads = state.loads
    # Lightest first; ties by index (the subscribers are in index order, the sort is stable).
    ordered = sorted(state.subscribers[topic], key=loads.__getitem__)
    sorted_loads = list(map(loads.__getitem__, ordered))
    below = list(accumulate(sorted_loads, initial=0))  # below[k]: the first k members' loads
    # The first `count` members can all be raised to the load of the next one.
    count = 1 + bisect_right(
        range(1, len(ordered)), len(free), key=lambda k: sorted_loads[k] * k - below[k]
    )
    level, extra = divmod(len(free) + below[count], count)
    # One more each for `extra` of them: those with the most topics, which can pass a
    # partition on to a subscriber of another topic when balancing, then by index.
    more = set(heapq.nsmallest(extra, ordered[:count], key=state.extra_order.__getitem__))
    raised = ordered[: bisect_left(sorted_loads, level, 0, count)]  # those below the level
    start = 0
    for index in sorted(more.union(raised)):
        take = level + (1 if index in more else 0) - loads[index]
        for partition in free[start : start + take]:
            row[partition] = index
        loads[index] += take
        start += take


def _pools(state: _State, topic: str) -> dict[int, list[int]]:
    """Who holds what of the topic, each list ordered so that pop() gives the partition to
    move: one its holder did not claim, then the one it is least behind on, then the highest."""
    pools = state.pools.get(topic)
    if pools is None:
        pools = {}
        for partition, index in enumerate(state.owner[topic]):
            if index >= 0:
                pools.setdefault(index, []).append(partition)
        claimant, lags = state.claimant[topic], state.lags
        for index, held in pools.items():
            held.sort(key=lambda p: (claimant[p] != index, -lags.get((topic, p), 0), p))
        state.pools[topic] = pools
    return pools


def _balance(state: _State, order: list[str]) -> None:
    """Passes over the topics until one moves nothing."""
    candidates = [t for t in order if len(state.subscribers[t]) > 1]
    moved = True
    while moved:
        moved = False
        for topic in candidates:
            moved = _balance_topic(state, topic) or moved


def _balance_topic(state: _State, topic: str) -> bool:
    loads, subscribers = state.loads, state.subscribers[topic]
    holders = set(state.owner[topic]) - {FREE, BLOCKED}
    if not holders:
        return False
    if max(map(loads.__getitem__, holders)) - min(map(loads.__getitem__, subscribers)) <= 1:
        return False
    pools = _pools(state, topic)
    light = [(loads[i], i) for i in subscribers]
    heavy = [(-loads[i], i) for i in holders]
    heapq.heapify(light)
    heapq.heapify(heavy)
    moved = False
    while heavy and light:
        load, giver = heapq.heappop(heavy)
        if -load != loads[giver] or not pools[giver]:
            continue  # stale
        while light and light[0][0] != loads[light[0][1]]:
            heapq.heappop(light)
        taker = light[0][1]
        if loads[giver] - loads[taker] <= 1:
            break
        _move(state, topic, giver, taker)
        moved = True
        heapq.heapreplace(light, (loads[taker], taker))
        heapq.heappush(light, (loads[giver], giver))
        if pools[giver]:
            heapq.heappush(heavy, (-loads[giver], giver))
    return moved


def _move(state: _State, topic: str, giver: int, taker: int) -> None:
    pools = state.pools[topic]
    partition = pools[giver].pop()
    state.owner[topic][partition] = taker
    # The taker gives it up first again (it did not claim it), unless it is its own claim.
    pool = pools.setdefault(taker, [])
    if state.claimant[topic][partition] == taker:
        pool.insert(0, partition)
    else:
        pool.append(partition)
    state.loads[giver] -= 1
    state.loads[taker] += 1


def _swap_back(state: _State) -> None:
    """A member holding an unclaimed partition of a topic while another member holds one it
    claimed of the same topic gets its own back in exchange."""
    for topic, row in state.owner.items():
        claimant = state.claimant[topic]
        unclaimed: dict[int, list[int]] = {}
        for partition, index in enumerate(row):
            if index >= 0 and claimant[partition] != index:
                unclaimed.setdefault(index, []).append(partition)
        for partition, index in enumerate(row):
            claimer = claimant[partition]
            if claimer < 0 or claimer == index:
                continue
            other = _unclaimed_of(claimer, unclaimed, row, claimant)
            if other is not None:
                row[partition], row[other] = claimer, index
                if claimant[other] != index:
                    unclaimed.setdefault(index, []).append(other)


def _unclaimed_of(
    index: int, unclaimed: dict[int, list[int]], row: list[int], claimant: list[int]
) -> int | None:
    """A partition the member still holds without having claimed it, if any."""
    candidates = unclaimed.get(index, [])
    while candidates:
        partition = candidates.pop()
        if row[partition] == index and claimant[partition] != index:
            return partition
    return None


def _targets(state: _State, member_count: int) -> list[Assignment]:
    found: list[dict[str, list[int]]] = [{} for _ in range(member_count)]
    for topic, row in state.owner.items():
        for partition, index in enumerate(row):
            if index >= 0:
                found[index].setdefault(topic, []).append(partition)
    return [{t: frozenset(ps) for t, ps in parts.items()} for parts in found]
