"""Crash points of the sweeper (groupcoord/faults.py: a sweep's write calls are
`sweep.write.<n>.before|after`), through its Lambda entry point (tests/support/crash_points.py:
`crash_every_sweep_write`). Each scenario leaves work for the sweeper on a fresh deployment
that sweeps only when the test says: a dead consumer-protocol member, a dead classic member,
a topic change whose groups a crashed create-topics did not tell. A sweep run counts its writes
W; then, for every k in 1..W and both sides, a sweep dies at the point, the clock moves past the
leases it may have left, a normal sweep runs and must finish the job (the dead member is gone,
the groups are told), and the live members converge, with epochs and generations that never
went back and no partition held twice."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from groupcoord import clock
from groupcoord.store.topics import NOTIFY_GRACE_MS
from tests.support.api import Api
from tests.support.classic_client import NONE
from tests.support.consumer import Member, create_topic, settle, unique
from tests.support.crash_points import (
    CRASH_AT,
    NO_SWEEPER,
    PARTITIONS,
    SKEW,
    Run,
    SweepScenario,
    classic_members,
    classic_settle,
    consumer_group_members,
    converge,
    crash_every_sweep_write,
    group_epoch,
    sweep,
)
from tests.support.servers import InProcessCoordinator

SECOND = 2  # the partitions of the topic the crashed create-topics created
# Past what a crashed sweep may leave: an install's lease (10 s), a scan's claim (2 s).
CONSUMER_LEASES_MS = 11_000
CLASSIC_CLAIM_MS = 3_000  # a classic timer check's claim is 2 s
# The classic members' session: long enough for the clock to jump past a dead member's.
CLASSIC_SESSION_MS = 30_000


@pytest.fixture(scope="module", autouse=True)
def skewed_clock() -> Iterator[None]:
    with clock.use(SKEW.now_ms):
        yield


def session_ms(run: Run) -> int:
    assert run.deployment is not None
    return run.deployment.coordinator.settings.group_consumer_session_timeout_ms


# --- a consumer-protocol member's session runs out; the sweeper fences it ---


def dead_consumer_prefix(run: Run) -> None:
    a = Member(run.api, run.group, topics=[run.topic])
    b = Member(run.api, run.group, topics=[run.topic])
    a.join()
    b.join()
    settle([a, b])
    half = session_ms(run) // 2
    SKEW.ahead_ms += half
    assert a.heartbeat()["errorCode"] == 0  # a lives on; b is silent from now on
    run.state.update(a=a, b=b, epoch_a=a.epoch, group_epoch=group_epoch(run.api, run.group))
    SKEW.ahead_ms += half + 1000  # b's session is over, a's is not


def dead_consumer_recover(run: Run) -> None:
    SKEW.ahead_ms += CONSUMER_LEASES_MS
    sweep(run)
    a = run.state["a"]
    assert consumer_group_members(run.api, run.group) == {a.member_id}
    assert group_epoch(run.api, run.group) > run.state["group_epoch"]
    converge([a])
    assert a.epoch >= run.state["epoch_a"]


# --- a classic member's session runs out; the sweeper removes it and starts a rebalance ---


def dead_classic_prefix(run: Run) -> None:
    c1, c2 = classic_members(run, ["c1", "c2"], session_timeout_ms=CLASSIC_SESSION_MS)
    classic_settle(run, [c1, c2])
    c2.crash()  # silent from now on, holding nothing
    SKEW.ahead_ms += CLASSIC_SESSION_MS // 2
    assert c1.heartbeat() == NONE
    run.state.update(c1=c1, c2=c2, generation=c1.generation)
    SKEW.ahead_ms += CLASSIC_SESSION_MS // 2 + 1000


def dead_classic_recover(run: Run) -> None:
    SKEW.ahead_ms += CLASSIC_CLAIM_MS
    sweep(run)
    c1 = run.state["c1"]
    group = run.api.ok("describe-groups", {"groups": [run.group]})["groups"][0]
    assert [m["memberId"] for m in group["members"]] == [c1.member_id], group
    assert group["groupState"] != "Stable", group  # a rebalance without c2 is under way
    classic_settle(run, [c1])
    assert c1.generation > run.state["generation"]


# --- a topic change the request that made it did not tell the groups of ---


def untold_change_prefix(run: Run) -> None:
    base = unique("rx")
    first, second = f"{base}-a", f"{base}-b"
    create_topic(run.api, first, PARTITIONS)
    by_regex = Member(run.api, run.group, regex=f"{base}-.*")
    by_name = Member(run.api, unique("crash"), topics=[first, second])
    for m in (by_regex, by_name):
        m.join()
        settle([m])
    run.state.update(
        members=[by_regex, by_name],
        epochs={m.group: group_epoch(run.api, m.group) for m in (by_regex, by_name)},
    )
    # The topic and its change item land, then the request dies: nobody was told.
    assert run.deployment is not None
    crashing = InProcessCoordinator(
        {**NO_SWEEPER, CRASH_AT: "write.1.after"}, store=run.deployment.store
    )
    try:
        topics = [{"name": second, "numPartitions": SECOND}]
        answer = Api(crashing.url).call("create-topics", {"topics": topics})
        assert answer.status == 500, answer.body
    finally:
        crashing.stop()
    SKEW.ahead_ms += NOTIFY_GRACE_MS + 1000  # the change item is due


def untold_change_recover(run: Run) -> None:
    sweep(run)
    for m in run.state["members"]:
        converge([m], PARTITIONS + SECOND)
        assert group_epoch(run.api, m.group) > run.state["epochs"][m.group], m.group


SCENARIOS = [
    SweepScenario("sweep-consumer-expiry", dead_consumer_prefix, dead_consumer_recover),
    SweepScenario("sweep-classic-expiry", dead_classic_prefix, dead_classic_recover),
    SweepScenario("sweep-topic-change", untold_change_prefix, untold_change_recover),
]


@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda s: s.name)
def test_a_crash_at_any_write_of_a_sweep_is_recovered(scenario: SweepScenario) -> None:
    crash_every_sweep_write(scenario)
