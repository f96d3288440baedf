"""What the classic assignors' tests check, as Kafka's own assignor tests check it: every
partition exactly once among its topic's subscribers, balance (nobody could take a partition
from a member with two more), and, for a cooperative round, that nothing another member still
holds is handed out."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping

from groupcoord.client.assignors import Assignment, TopicPartition
from groupcoord.wire.consumer_protocol import Subscription


def sub(
    topics: Iterable[str],
    owned: Iterable[TopicPartition] = (),
    generation: int = -1,
    instance: str | None = None,
) -> Subscription:
    by_topic: dict[str, list[int]] = {}
    for tp in sorted(owned):
        by_topic.setdefault(tp.topic, []).append(tp.partition)
    return Subscription(
        sorted(topics),
        owned_partitions=by_topic,
        generation_id=generation,
        version=2,
        group_instance_id=instance,
    )


def tps(topic: str, *partitions: int) -> list[TopicPartition]:
    return [TopicPartition(topic, p) for p in partitions]


def every_partition(
    subscriptions: Mapping[str, Subscription], counts: Mapping[str, int]
) -> set[TopicPartition]:
    topics = {t for s in subscriptions.values() for t in s.topics}
    return {TopicPartition(t, p) for t in topics for p in range(counts.get(t, 0))}


def assert_subscribed_only_and_once(
    subscriptions: Mapping[str, Subscription], plan: Assignment
) -> None:
    seen: set[TopicPartition] = set()
    for member, parts in plan.items():
        for tp in parts:
            assert tp.topic in subscriptions[member].topics, (member, tp)
            assert tp not in seen, f"{tp} given twice"
            seen.add(tp)


def assert_valid(
    subscriptions: Mapping[str, Subscription], counts: Mapping[str, int], plan: Assignment
) -> None:
    """Each partition of a subscribed topic exactly once, to a subscriber."""
    assert set(plan) == set(subscriptions)
    assert_subscribed_only_and_once(subscriptions, plan)
    given = {tp for parts in plan.values() for tp in parts}
    assert given == every_partition(subscriptions, counts)


def assert_balanced(subscriptions: Mapping[str, Subscription], plan: Assignment) -> None:
    """Kafka's verifyValidityAndBalance: a member with two more than another holds no
    partition of a topic the other subscribes to."""
    for small, few in plan.items():
        for large, many in plan.items():
            if len(many) - len(few) > 1:
                movable = [tp for tp in many if tp.topic in subscriptions[small].topics]
                assert not movable, f"{large} ({len(many)}) could give {movable[0]} to {small}"


def assert_nothing_moves_directly(
    subscriptions: Mapping[str, Subscription], plan: Assignment
) -> None:
    """Cooperative: a partition goes to a member that does not hold it only if no other
    member still holds it (a holder may keep it; the others' stale claims are revoked)."""
    holders: dict[TopicPartition, set[str]] = {}
    for member, s in subscriptions.items():
        for topic, parts in s.owned_partitions.items():
            for p in parts:
                holders.setdefault(TopicPartition(topic, p), set()).add(member)
    for member, parts in plan.items():
        for tp in parts:
            if member in holders.get(tp, ()):
                continue
            others = holders.get(tp, set())
            assert not others, f"{tp} given to {member} while {sorted(others)} still hold it"


def next_round(
    subscriptions: Mapping[str, Subscription], plan: Assignment, generation: int
) -> dict[str, Subscription]:
    """Every member rejoins owning what it was given."""
    return {
        m: sub(s.topics, plan[m], generation, s.group_instance_id) for m, s in subscriptions.items()
    }


def assert_a_leaver_moves_only_its_own(
    assign: Callable[[Mapping[str, Subscription], Mapping[str, int]], Assignment],
    subscriptions: Mapping[str, Subscription],
    counts: Mapping[str, int],
    leaver: str,
) -> None:
    """Kafka's testReassignmentAfterOneConsumerLeaves, testStickiness, testSameSubscriptions:
    after `leaver` leaves, what the others had stays where it is; only its partitions move."""
    plan = assign(subscriptions, counts)
    assert_valid(subscriptions, counts, plan)
    rest = next_round({m: s for m, s in subscriptions.items() if m != leaver}, plan, 1)
    again = assign(rest, counts)
    assert_valid(rest, counts, again)
    assert_balanced(rest, again)
    for member in rest:
        assert set(plan[member]) <= set(again[member]), member


def moves_between(
    before: Mapping[TopicPartition, str], after: Mapping[TopicPartition, str]
) -> dict[TopicPartition, tuple[str, str]]:
    return {
        tp: (before[tp], owner)
        for tp, owner in after.items()
        if tp in before and before[tp] != owner
    }


def assert_no_swap_within_a_topic(moves: Mapping[TopicPartition, tuple[str, str]]) -> None:
    """Kafka's PartitionMovements.isSticky: per topic, no pair of members traded partitions
    (one of them could have kept its own instead)."""
    pairs = {(tp.topic, source, target) for tp, (source, target) in moves.items()}
    for topic, source, target in pairs:
        assert (topic, target, source) not in pairs, (
            f"{topic}: partitions moved both ways between {source} and {target}: {dict(moves)}"
        )
