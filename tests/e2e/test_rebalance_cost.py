"""What a rebalance costs the members that stay: in cooperative mode (classic with
cooperative-sticky, and the consumer protocol, incremental by design) a joining member takes
only the partitions that must move, measured by the listener's revoked sets; a static member
restarts without a rebalance at all."""

from __future__ import annotations

import time

import pytest

from tests.e2e.helpers import (
    CONVERGE_S,
    all_partitions,
    balanced,
    beats_since,
    create_topic,
    grow_topic,
    no_errors,
    settled,
    start_member,
    unique,
    wait_until,
)

PARTITIONS = 12


@pytest.mark.parametrize(
    ("protocol", "assignors"),
    [
        pytest.param("classic", ("cooperative-sticky",), id="classic-cooperative-sticky"),
        pytest.param("consumer", ("range",), id="consumer"),
    ],
)
def test_a_fourth_member_joining_three_revokes_only_what_must_move(
    coordinator: str, protocol: str, assignors: tuple[str, ...]
) -> None:
    topic, group = unique("events"), unique("cooperative")
    create_topic(coordinator, topic, PARTITIONS)
    everything = all_partitions(topic, PARTITIONS)
    members = [start_member(coordinator, group, [topic], protocol, assignors) for _ in range(3)]
    try:
        # Settled, not just balanced: the three members' own cooperative rounds must be over,
        # or a partition they still move would count against the newcomer's rebalance.
        wait_until(
            lambda: settled(coordinator, group, protocol, members, everything),
            CONVERGE_S,
            "three members settled",
        )
        before = {id(m): set(m.owned) for m in members}
        joined_at = time.monotonic()
        newcomer = start_member(coordinator, group, [topic], protocol, assignors)
        members.append(newcomer)
        wait_until(
            lambda: settled(coordinator, group, protocol, members, everything),
            CONVERGE_S,
            "four members settled",
        )

        old = members[:3]
        revoked = [
            set().union(*(e.partitions for e in m.recorder.since(joined_at, "revoked")))
            for m in old
        ]
        moved = newcomer.owned
        # 12 partitions over 4: the newcomer takes 3, one from each of the others, and
        # nothing else is revoked (eager rebalancing would revoke all 12).
        assert len(moved) == 3
        assert set().union(*revoked) == moved, (revoked, moved)
        assert [len(r) for r in revoked] == [1, 1, 1]
        for m, r in zip(old, revoked, strict=True):
            assert m.owned == before[id(m)] - r, "a member kept a revoked partition or gained one"
            assert not m.recorder.since(joined_at, "lost")
        no_errors(members)
    finally:
        for m in members:
            m.close()


@pytest.mark.parametrize(
    ("protocol", "assignors"),
    [
        pytest.param("classic", ("range",), id="classic-eager-range"),
        pytest.param("consumer", ("range",), id="consumer"),
    ],
)
def test_a_static_member_restarts_without_a_rebalance(
    coordinator: str, protocol: str, assignors: tuple[str, ...]
) -> None:
    topic, group = unique("invoices"), unique("static")
    create_topic(coordinator, topic, PARTITIONS - 3)
    instances = [unique("host") for _ in range(3)]
    members = [
        start_member(coordinator, group, [topic], protocol, assignors, instance_id=i)
        for i in instances
    ]
    try:
        first = all_partitions(topic, PARTITIONS - 3)
        wait_until(lambda: balanced(members, first), CONVERGE_S, "three members balanced")
        # Static members live through rebalances: the topic grows, everyone rejoins (so a
        # classic member's last subscription carries a generation, unlike its successor's
        # first: the coordinator must not rebalance for that, as Kafka's does not).
        grow_topic(coordinator, topic, PARTITIONS)
        everything = all_partitions(topic, PARTITIONS)
        wait_until(lambda: balanced(members, everything), CONVERGE_S, "balanced after growth")

        restarting, others = members[1], [members[0], members[2]]
        kept = set(restarting.owned)

        # The process restarts: close() (a static member leaves only temporarily), then a
        # new GroupMember with the same instance id.
        restarting.close()
        restarted_at = time.monotonic()
        back = start_member(coordinator, group, [topic], protocol, assignors, instances[1])
        members.append(back)
        group_now = [members[0], back, members[2]]
        wait_until(lambda: balanced(group_now, everything), CONVERGE_S, "the member is back")
        assert back.owned == kept, "the restarted member did not get its old partitions"
        # The others keep heartbeating (twice, so a rebalance would have reached them)...
        settled_at = time.monotonic()
        wait_until(
            lambda: all(beats_since(m.member, settled_at + 0.01) for m in others),
            CONVERGE_S,
            "the others heartbeat after the restart",
        )
        second = time.monotonic()
        wait_until(
            lambda: all(beats_since(m.member, second + 0.01) for m in others),
            CONVERGE_S,
            "the others heartbeat again",
        )
        # ... and were never asked to give anything up: no rebalance.
        for m in others:
            assert m.recorder.since(restarted_at) == [], m.recorder.since(restarted_at)
        assert balanced(group_now, everything)
        no_errors(members)
    finally:
        for m in members:
            m.close()
