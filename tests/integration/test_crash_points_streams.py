"""Crash points of the streams heartbeat (tests/support/crash_points.py): a second member's
join (with its target install and the topology's internal topics already there) and the
revocation acknowledgement that frees tasks for it, each crashed at every one of its writes.
The clients carry on as after a 500 and the group converges: every task active exactly once,
both members with tasks, epochs that never go back. In process, on the in-memory store."""

from __future__ import annotations

import pytest

from tests.support.api import Answer, Api
from tests.support.consumer import until
from tests.support.crash_points import (
    FENCED_MEMBER_EPOCH,
    SKEW,
    UNKNOWN_MEMBER_ID,
    Run,
    Scenario,
    crash_every_write,
)
from tests.support.servers import InProcessCoordinator
from tests.support.streams import HB, StreamsMember, as_entries, describe

DELAY_AND_INTERVAL_MS = 3_001 + 1_001  # the default initial delay and assignment interval


def topology(run: Run) -> dict:
    return {"epoch": 1, "subtopologies": [{"subtopologyId": "0", "sourceTopics": [run.topic]}]}


def converged(members: list[StreamsMember]) -> bool:
    """A heartbeat round (rejoining a fenced member); True once it changed nothing and the
    members share every task. Otherwise the clock moves a second (a lease the crash left)."""
    before = [(m.epoch, m.active) for m in members]
    for m in members:
        previous = m.epoch
        answer = m.heartbeat()
        if answer["errorCode"] in (UNKNOWN_MEMBER_ID, FENCED_MEMBER_EPOCH):
            m.epoch, m.active, m.standby, m.warmup = 0, {}, {}, {}
            assert m.join()["errorCode"] == 0
            continue
        assert answer["errorCode"] == 0, answer
        assert m.epoch >= previous, (previous, m.epoch)
    held = [(s, p) for m in members for s, ps in m.active.items() for p in ps]
    assert len(held) == len(set(held)), held  # never one task active twice
    done = before == [(m.epoch, m.active) for m in members] and len(held) == 4
    if not (done and all(m.active for m in members)):
        SKEW.ahead_ms += 1000
        return False
    return True


def join_prefix(run: Run) -> None:
    a = StreamsMember(run.api, run.group, topology(run))
    a.join()
    SKEW.ahead_ms += DELAY_AND_INTERVAL_MS
    until(lambda: converged([a]))
    SKEW.ahead_ms += DELAY_AND_INTERVAL_MS
    run.state.update(a=a, b=StreamsMember(run.api, run.group, topology(run)))
    run.state["epoch"] = describe(run.api, run.group)["groupEpoch"]


def join_request(run: Run, url: str) -> Answer:
    b = run.state["b"]
    body = {"groupId": run.group, "memberId": b.member_id, "memberEpoch": 0,
            "rebalanceTimeoutMs": 30000, "topology": b.topology, "processId": b.process_id,
            "activeTasks": [], "standbyTasks": [], "warmupTasks": []}  # fmt: skip
    return Api(url).call(HB, body)


def join_recover(run: Run) -> None:
    a, b = run.state["a"], run.state["b"]
    assert b.join()["errorCode"] == 0  # the same join again, as a client does after a 500
    until(lambda: converged([a, b]), 20)
    group = describe(run.api, run.group)
    assert group["groupEpoch"] > run.state["epoch"]
    assert {m["memberId"] for m in group["members"]} == {a.member_id, b.member_id}


def ack_prefix(run: Run) -> None:
    join_prefix(run)
    a, b = run.state["a"], run.state["b"]
    b.join()
    revoking = a.heartbeat()  # a must give tasks up: its next heartbeat acknowledges it
    assert revoking["errorCode"] == 0 and len([p for ps in a.active.values() for p in ps]) < 4


def ack_request(run: Run, url: str) -> Answer:
    a = run.state["a"]
    body = {"groupId": run.group, "memberId": a.member_id, "memberEpoch": a.epoch,
            "activeTasks": as_entries(a.active), "standbyTasks": [], "warmupTasks": []}  # fmt: skip
    return Api(url).call(HB, body)


def ack_recover(run: Run) -> None:
    a, b = run.state["a"], run.state["b"]
    until(lambda: converged([a, b]), 20)


SCENARIOS = [
    Scenario("streams-join", join_prefix, join_request, join_recover),
    Scenario("streams-revocation-ack", ack_prefix, ack_request, ack_recover),
]


@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda s: s.name)
def test_a_crash_at_any_streams_write_is_recovered(
    normal: InProcessCoordinator, scenario: Scenario
) -> None:
    crash_every_write(normal, scenario)
