"""Server-side assignors (pure): `uniform` (balance first, then stickiness) and `range`.

Both take the members (their subscribed topic ids and their previous target) and the
partition count of every subscribed topic, and return every member's new target. Every
partition of a subscribed topic goes to exactly one member subscribed to that topic, but the
`blocked` ones (a Kinesis-backed topic's shards that are done, or whose parents are not:
core/kinesis/shards.blocked_partitions), which go to none.

`lags` (the members' reported lags, core/lag.py) only steer which partitions `uniform` moves
when balance forces a move: the ones least behind, so a lagging partition (a Kinesis shard a
member is catching up on) keeps its owner and its warm iterator, and a move costs the least.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from .assignment import Assignment, TopicPartition, from_pairs, pairs
from .uniform_heterogeneous import assign_heterogeneous

UNIFORM = "uniform"
RANGE = "range"


@dataclass(frozen=True)
class AssignorMember:
    member_id: str
    topics: frozenset[str]  # subscribed topic ids (resolved from names and regex)
    previous: Assignment = field(default_factory=dict)  # the previous target, for stickiness
    instance_id: str | None = None


# Per topic id, the partitions no member is given.
Blocked = Mapping[str, frozenset[int]]
NOTHING_BLOCKED: Blocked = {}
# Per partition, its last reported lag (ms); a partition not in it counts as caught up.
PartitionLags = Mapping[TopicPartition, int]
NO_LAGS: PartitionLags = {}
AssignorFn = Callable[..., dict[str, Assignment]]


def _valid_previous(
    member: AssignorMember,
    topics: Mapping[str, int],
    taken: set[TopicPartition],
    blocked: Blocked = NOTHING_BLOCKED,
) -> list[TopicPartition]:
    kept = []
    for topic, partition in sorted(pairs(member.previous)):
        valid = topic in member.topics and partition < topics.get(topic, 0)
        valid = valid and partition not in blocked.get(topic, ())
        if valid and (topic, partition) not in taken:
            kept.append((topic, partition))
            taken.add((topic, partition))
    return kept


def _partitions(
    topic_ids: Iterable[str], topics: Mapping[str, int], blocked: Blocked = NOTHING_BLOCKED
) -> list[TopicPartition]:
    return [
        (t, p)
        for t in sorted(topic_ids)
        if t in topics
        for p in range(topics[t])
        if p not in blocked.get(t, ())
    ]


def assign_uniform(
    members: Sequence[AssignorMember],
    topics: Mapping[str, int],
    blocked: Blocked = NOTHING_BLOCKED,
    lags: PartitionLags = NO_LAGS,
) -> dict[str, Assignment]:
    """Balanced to within one partition when all members subscribe to the same topics (the
    best effort otherwise), then sticky: a member keeps what it had as far as balance allows,
    and what it gives up is what it is least behind on."""
    ordered = sorted(members, key=lambda m: m.member_id)
    if not ordered:
        return {}
    if len({frozenset(m.topics & topics.keys()) for m in ordered}) == 1:
        return _uniform_homogeneous(ordered, topics, blocked, lags)
    return _uniform_general(ordered, topics, blocked, lags)


def _most_behind_first(partitions: list[TopicPartition], lags: PartitionLags) -> None:
    """Sorts in place, the largest lag first (stable: equal lags keep their order)."""
    if lags:
        partitions.sort(key=lambda tp: -lags.get(tp, 0))


def _uniform_homogeneous(
    members: list[AssignorMember], topics: Mapping[str, int], blocked: Blocked, lags: PartitionLags
) -> dict[str, Assignment]:
    every = _partitions(members[0].topics, topics, blocked)
    base, extra = divmod(len(every), len(members))
    taken: set[TopicPartition] = set()
    retained = {m.member_id: _valid_previous(m, topics, taken, blocked) for m in members}
    for kept_by_member in retained.values():
        _most_behind_first(kept_by_member, lags)
    # The members that retain the most get the extra partition: the fewest moves.
    by_retained = sorted(members, key=lambda m: (-len(retained[m.member_id]), m.member_id))
    quota = {m.member_id: base + (1 if i < extra else 0) for i, m in enumerate(by_retained)}
    result: dict[str, list[TopicPartition]] = {}
    kept: set[TopicPartition] = set()
    for m in members:
        mine = retained[m.member_id][: quota[m.member_id]]
        result[m.member_id] = mine
        kept.update(mine)
    # Free partitions go out in contiguous runs (each member its whole deficit at once), so
    # targets stay a few ranges long in the stored form (assignment.encode_partitions).
    free = [tp for tp in every if tp not in kept]
    start = 0
    for m in members:
        deficit = quota[m.member_id] - len(result[m.member_id])
        if deficit > 0:
            result[m.member_id].extend(free[start : start + deficit])
            start += deficit
    return {m: from_pairs(tps) for m, tps in result.items()}


def _uniform_general(
    members: list[AssignorMember], topics: Mapping[str, int], blocked: Blocked, lags: PartitionLags
) -> dict[str, Assignment]:
    taken: set[TopicPartition] = set()
    claims = [_valid_previous(m, topics, taken, blocked) for m in members]
    targets = assign_heterogeneous([m.topics for m in members], claims, topics, blocked, lags)
    return {m.member_id: target for m, target in zip(members, targets, strict=True)}


def _range_order(member: AssignorMember) -> tuple[int, str, str]:
    # Static members first, by instance id; then dynamic ones by member id.
    if member.instance_id is not None:
        return (0, member.instance_id, member.member_id)
    return (1, "", member.member_id)


def assign_range(
    members: Sequence[AssignorMember],
    topics: Mapping[str, int],
    blocked: Blocked = NOTHING_BLOCKED,
    lags: PartitionLags = NO_LAGS,
) -> dict[str, Assignment]:
    """Per topic: its subscribers in order, contiguous ranges of n/m partitions (of those not
    blocked), the first n % m members one more. `lags` are not weighed: range's placement is
    a function of the members and partitions alone, as Kafka's."""
    del lags
    subscribers: dict[str, list[str]] = {}
    for m in sorted(members, key=_range_order):
        for topic in m.topics:
            if topic in topics:
                subscribers.setdefault(topic, []).append(m.member_id)
    result: dict[str, Assignment] = {m.member_id: {} for m in members}
    for topic, subscribed in subscribers.items():
        allowed = [p for p in range(topics[topic]) if p not in blocked.get(topic, ())]
        base, extra = divmod(len(allowed), len(subscribed))
        start = 0
        # With fewer partitions than members, the members past the first `extra` get none.
        for i, member_id in enumerate(subscribed if base else subscribed[:extra]):
            count = base + (1 if i < extra else 0)
            result[member_id][topic] = frozenset(allowed[start : start + count])
            start += count
    return result


ASSIGNORS: dict[str, AssignorFn] = {UNIFORM: assign_uniform, RANGE: assign_range}


def choose_assignor(votes: Iterable[str | None], configured: Sequence[str]) -> str:
    """The assignor most members ask for; ties and no votes go to the configured order."""
    counts: dict[str, int] = {}
    for vote in votes:
        if vote is not None and vote in configured:
            counts[vote] = counts.get(vote, 0) + 1
    if not counts:
        return configured[0] if configured else UNIFORM
    best = max(counts.values())
    return next(name for name in configured if counts.get(name) == best)
