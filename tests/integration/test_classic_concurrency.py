"""Many members joining, syncing, heartbeating and leaving one classic group at once, through
the HTTP API: every transition is a conditional write, so whatever the interleaving, the group
ends in one generation with one leader, every survivor in it and no partition given twice."""

from __future__ import annotations

import random
import threading

import pytest

from tests.support.api import Api
from tests.support.classic_client import (
    FAST_SETTINGS,
    Consumer,
    Ownership,
    assignments_of,
    describe,
    settle,
    unique,
)

MEMBERS = 8
LEAVERS = 3
LATE = 2
PARTITIONS = 16


pytestmark = pytest.mark.coordinator(FAST_SETTINGS, shared=True)


def test_concurrent_joins_syncs_heartbeats_and_leaves_end_in_one_consistent_generation(
    url: str, consumers
) -> None:
    api = Api(url)
    topic = unique("t")
    api.ok("create-topics", {"topics": [{"name": topic, "numPartitions": PARTITIONS}]})
    group_id, ownership = unique("crowd"), Ownership()
    rng = random.Random(7)

    def consumer(n: int) -> Consumer:
        created = crowd_member(url, group_id, topic, ownership, n)
        consumers.append(created)
        return created

    crowd = [consumer(n) for n in range(MEMBERS)]
    threads = start_at_once(crowd)
    # While they join, sync and heartbeat: three leave at random moments, two more arrive.
    leavers = crowd[:LEAVERS]
    late = [consumer(MEMBERS + n) for n in range(LATE)]
    leave_answers: dict[str, dict] = {}
    actions = [
        threading.Thread(
            target=leave_later, args=(m, rng.uniform(0.2, 2.0), leave_answers), daemon=True
        )
        for m in leavers
    ] + [
        threading.Thread(target=start_later, args=(m, rng.uniform(0.2, 2.0)), daemon=True)
        for m in late
    ]
    for action in actions:
        action.start()
    for action in [*threads, *actions]:
        action.join(30)

    survivors = crowd[LEAVERS:] + late
    group = settle(api, group_id, survivors, 40, "the crowd to settle")
    assert_one_generation_one_leader_no_partition_twice(group, survivors, ownership)
    # Each leave was answered per member: 0, or 25 for one that left before it had joined.
    for member in leavers:
        codes = [m["errorCode"] for m in leave_answers[member.name]["members"]]
        assert codes in ([0], [25]), (member.name, leave_answers[member.name])
        assert member.heartbeat() == 25
    # The survivors keep heartbeating in the generation they agree on.
    for consumer_ in survivors:
        consumer_.stop()
        assert consumer_.heartbeat() == 0
    assert describe(api, group_id)["groupState"] == "Stable"


def crowd_member(url: str, group_id: str, topic: str, ownership: Ownership, n: int) -> Consumer:
    return Consumer(
        url,
        group_id,
        [topic],
        name=f"m{n}",
        ownership=ownership,
        # Long timeouts: the test is about races, not about slow members being dropped.
        session_timeout_ms=10000,
        rebalance_timeout_ms=15000,
        # A heartbeat every 500 ms (plenty of concurrent heartbeats); dead after the session.
        heartbeat_frequency=20,
        failed_heartbeat_threshold=20,
    )


def start_at_once(crowd: list[Consumer]) -> list[threading.Thread]:
    """All of `crowd` start at the same instant: their two-step joins race on the new group."""
    gate = threading.Barrier(len(crowd))
    threads = [
        threading.Thread(target=lambda c=c: (gate.wait(), c.start()), daemon=True) for c in crowd
    ]
    for thread in threads:
        thread.start()
    return threads


def leave_later(member: Consumer, delay_s: float, answers: dict[str, dict]) -> None:
    threading.Event().wait(delay_s)
    answers[member.name] = member.close()


def start_later(member: Consumer, delay_s: float) -> None:
    threading.Event().wait(delay_s)
    member.start()


def assert_one_generation_one_leader_no_partition_twice(
    group: dict, survivors: list[Consumer], ownership: Ownership
) -> None:
    # One generation, one leader, every survivor in it.
    assert len({c.generation for c in survivors}) == 1
    assert len({c.synced_generation for c in survivors}) == 1
    leaders = {c.leader for c in survivors}
    assert len(leaders) == 1
    assert [c for c in survivors if c.is_leader] == [c for c in survivors if c.member_id in leaders]
    assert sum(c.is_leader for c in survivors) == 1
    assert {m["memberId"] for m in group["members"]} == {c.member_id for c in survivors}
    # No partition assigned twice; every partition assigned.
    assigned = assignments_of(group)
    every = [tp for tps in assigned.values() for tp in tps]
    assert len(every) == len(set(every)) == PARTITIONS
    for consumer_ in survivors:
        assert consumer_.owned == assigned[consumer_.member_id]
    assert ownership.violations == []
