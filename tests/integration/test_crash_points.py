"""Every DynamoDB write of a request is a crash point (groupcoord/faults.py: `write.<n>.before`
and `write.<n>.after`), and a request that dies at any of them leaves a group that clients
recover by doing what they do after a 500. For each scenario, a run on the normal deployment
counts the writes W of the request under test; then, for every k in 1..W and both sides, a
fresh group runs the scenario's prefix, the request goes to a deployment beside the normal one
(same table) that dies at the point, and the clients carry on on the normal one: the group
converges, no partition has two owners, epochs and generations never go back, and an
acknowledged commit is never lost. In process, on the in-memory store."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest

from groupcoord import clock, faults
from tests.support.api import Answer, Api
from tests.support.classic_client import (
    FAST_SETTINGS,
    NONE,
    REBALANCE_IN_PROGRESS,
    Consumer,
    Ownership,
    assignments_of,
    b64,
)
from tests.support.classic_client import settle as settle_classic
from tests.support.consumer import (
    Member,
    assert_no_partition_held_twice,
    create_topic,
    settle,
    unique,
    until,
    wire,
)
from tests.support.consumer import describe as describe_consumer
from tests.support.servers import IMMEDIATE_INSTALLS, InProcessCoordinator, running_coordinator

PARTITIONS = 4
SETTLE_S = 20.0
SETTINGS = {**FAST_SETTINGS, **IMMEDIATE_INSTALLS}
UNKNOWN_MEMBER_ID = 25
FENCED_MEMBER_EPOCH = 110


class Skew:
    """The coordinators' clock, ahead of the system's by `ahead_ms`: a lease a crashed request
    left (an install's, 10 s) passes by moving it, not by waiting."""

    def __init__(self) -> None:
        self.ahead_ms = 0

    def now_ms(self) -> int:
        return clock.system_ms() + self.ahead_ms


SKEW = Skew()


@pytest.fixture(scope="module")
def normal() -> Iterator[InProcessCoordinator]:
    with clock.use(SKEW.now_ms), running_coordinator(SETTINGS) as coordinator:
        yield coordinator


@dataclass
class Run:
    """One scenario run on a fresh group: what its prefix set up and what was acknowledged."""

    api: Api
    group: str
    topic: str
    state: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Scenario:
    name: str
    prefix: Callable[[Run], None]
    # Sends the request under test to the given base URL; the run holds the rest.
    request: Callable[[Run, str], Answer]
    # After the request: what clients do next (re-sending it after a 500), then the checks.
    recover: Callable[[Run], None]


# --- consumer-group-heartbeat: a second member joins a one-member group ---


def join_body(member: Member) -> dict[str, Any]:
    return {
        "groupId": member.group,
        "memberId": member.member_id,
        "memberEpoch": 0,
        "rebalanceTimeoutMs": member.rebalance_timeout_ms,
        "topicPartitions": [],
        "subscribedTopicNames": member.topics,
    }


def consumer_prefix(run: Run) -> None:
    a = Member(run.api, run.group, topics=[run.topic])
    a.join()
    settle([a])
    run.state.update(a=a, b=Member(run.api, run.group, topics=[run.topic]))
    run.state["epochs"] = {a.member_id: a.epoch}
    run.state["group_epoch"] = describe_consumer(run.api, run.group)["groupEpoch"]


def consumer_join(run: Run, url: str) -> Answer:
    return Api(url).call("consumer-group-heartbeat", join_body(run.state["b"]))


def consumer_recover(run: Run) -> None:
    a, b = run.state["a"], run.state["b"]
    b.join()  # the same join again, as a client does after a 500
    until(lambda: consumers_converged([a, b]), SETTLE_S)
    assert_no_partition_held_twice([a, b])
    owned = [p for m in (a, b) for ps in m.owned.values() for p in ps]
    assert sorted(owned) == list(range(PARTITIONS)), (a.owned, b.owned)
    assert a.owned and b.owned
    assert a.epoch >= run.state["epochs"][a.member_id]
    group = describe_consumer(run.api, run.group)
    assert group["groupEpoch"] > run.state["group_epoch"]
    assert {m["memberId"] for m in group["members"]} == {a.member_id, b.member_id}


def consumers_converged(members: list[Member]) -> bool:
    """One heartbeat round (rejoining a fenced member, as a client does); True once it changed
    nothing and the members share all partitions. Otherwise the clock moves on a second, so
    that a lease the crash left expires within a few polls."""
    before = [(m.epoch, m.owned) for m in members]
    for m in members:
        answer = m.api.call("consumer-group-heartbeat", heartbeat_body(m))
        assert answer.status == 200, (answer.status, answer.body)
        if answer.body["errorCode"] in (UNKNOWN_MEMBER_ID, FENCED_MEMBER_EPOCH):
            m.epoch, m.owned = 0, {}
            m.join()
            continue
        assert answer.body["errorCode"] == 0, answer.body
        previous = m.epoch
        m.last = answer.body
        m._take(answer.body)
        assert m.epoch >= previous, f"{m.member_id}: epoch {previous} -> {m.epoch}"
    owned = sorted(p for m in members for ps in m.owned.values() for p in ps)
    done = before == [(m.epoch, m.owned) for m in members] and owned == list(range(PARTITIONS))
    if not done:
        SKEW.ahead_ms += 1000
    return done and all(m.owned for m in members)


def heartbeat_body(member: Member) -> dict[str, Any]:
    return {
        "groupId": member.group,
        "memberId": member.member_id,
        "memberEpoch": member.epoch,
        "topicPartitions": wire(member.owned),
    }


# --- classic: the join that completes a barrier of two, and the leader's sync-group ---


def classic_members(run: Run, names: list[str]) -> list[Consumer]:
    ownership = run.state.setdefault("ownership", Ownership())
    return [
        # A short session: heartbeats every 250 ms, so that a rejoin is seen soon.
        Consumer(
            run.api.base_url,
            run.group,
            [run.topic],
            name=n,
            ownership=ownership,
            session_timeout_ms=3000,
        )
        for n in names
    ]


def barrier_prefix(run: Run) -> None:
    (c1,) = classic_members(run, ["c1"])
    c1.rebalance()  # alone, generation 1
    (c2,) = classic_members(run, ["c2"])
    first = c2.join_once()
    assert first.body["errorCode"] == 79, first.body
    c2.member_id = first.body["memberId"]
    pending = c2.join_once()  # registered: the barrier waits for c1
    assert pending.status == 202, pending.body
    assert c1.heartbeat() == REBALANCE_IN_PROGRESS
    c1.needs_rejoin = True
    run.state.update(c1=c1, c2=c2, generation=c1.generation)


def barrier_join(run: Run, url: str) -> Answer:
    c1 = run.state["c1"]
    c1._refresh_protocols()
    return Api(url, c1.client_id).call("join-group", c1.join_body())


def classic_recover(run: Run) -> None:
    consumers = [run.state[n] for n in ("c1", "c2") if n in run.state]
    for c in consumers:
        c.needs_rejoin = True  # a 500 on join or sync: the client joins again
        c.start()
    try:
        group = settle_classic(run.api, run.group, consumers, SETTLE_S)
    finally:
        for c in consumers:
            c.stop()
    assert not run.state["ownership"].violations, run.state["ownership"].violations
    assignments = assignments_of(group)
    owned = [tp for tps in assignments.values() for tp in tps]
    assert len(owned) == len(set(owned)) == PARTITIONS, assignments
    for c in consumers:
        assert c.generation >= run.state["generation"], (c.name, c.generation)


def sync_prefix(run: Run) -> None:
    (c1,) = classic_members(run, ["c1"])
    joined = c1.join()
    assert joined["errorCode"] == NONE and c1.is_leader, joined
    assignments, _ = c1._assign(joined["members"])
    run.state.update(c1=c1, assignments=assignments, generation=c1.generation)


def leader_sync(run: Run, url: str) -> Answer:
    c1 = run.state["c1"]
    body = {
        "groupId": run.group,
        "generationId": c1.generation,
        "memberId": c1.member_id,
        "protocolType": c1.protocol_type,
        "protocolName": c1.protocol_name,
        "assignments": [
            {"memberId": m, "assignment": b64(a)} for m, a in run.state["assignments"].items()
        ],
    }
    return Api(url, c1.client_id).call("sync-group", body)


# --- offset-commit by a consumer member ---


def fetch_offsets(run: Run) -> dict[int, int]:
    body = {"groupId": run.group, "topics": [{"name": run.topic, "partitionIndexes": [0, 1]}]}
    group = run.api.ok("offset-fetch", {"groups": [body]})["groups"][0]
    return {p["partitionIndex"]: p["committedOffset"] for p in group["topics"][0]["partitions"]}


def commit_body(run: Run, offset: int) -> dict[str, Any]:
    a: Member = run.state["a"]
    partitions = [{"partitionIndex": p, "committedOffset": offset} for p in (0, 1)]
    return {
        "groupId": run.group,
        "generationIdOrMemberEpoch": a.epoch,
        "memberId": a.member_id,
        "topics": [{"name": run.topic, "partitions": partitions}],
    }


def acknowledged(answer: Answer) -> bool:
    return answer.status == 200 and all(
        p["errorCode"] == 0 for t in answer.body["topics"] for p in t["partitions"]
    )


def commit_prefix(run: Run) -> None:
    a = Member(run.api, run.group, topics=[run.topic])
    a.join()
    settle([a])
    run.state["a"] = a
    assert acknowledged(run.api.call("offset-commit", commit_body(run, 5)))
    run.state["acked"] = 5


def commit_request(run: Run, url: str) -> Answer:
    return Api(url).call("offset-commit", commit_body(run, 7))


def commit_recover(run: Run) -> None:
    # Whatever the crash left, the acknowledged 5 stands (or the crashed 7 landed).
    assert all(offset in (5, 7) for offset in fetch_offsets(run).values()), fetch_offsets(run)
    answer = run.api.call("offset-commit", commit_body(run, 7))  # the client's retry
    assert acknowledged(answer), answer.body
    assert fetch_offsets(run) == {0: 7, 1: 7}
    settle([run.state["a"]])
    assert fetch_offsets(run) == {0: 7, 1: 7}


SCENARIOS = [
    Scenario("consumer-join", consumer_prefix, consumer_join, consumer_recover),
    Scenario("classic-barrier-join", barrier_prefix, barrier_join, classic_recover),
    Scenario("classic-leader-sync", sync_prefix, leader_sync, classic_recover),
    Scenario("consumer-commit", commit_prefix, commit_request, commit_recover),
]


def fresh_run(url: str, prefix: Callable[[Run], None]) -> Run:
    api = Api(url)
    run = Run(api, unique("crash"), unique("t"))
    create_topic(api, run.topic, PARTITIONS)
    prefix(run)
    return run


def count_writes(normal: InProcessCoordinator, scenario: Scenario) -> int:
    """W: the write calls of the scenario's request on a normal deployment (which then
    recovers as after any request, to show the scenario holds without a crash)."""
    run = fresh_run(normal.url, scenario.prefix)
    with faults.observed() as counts:
        answer = scenario.request(run, normal.url)
    assert answer.status == 200, (answer.status, answer.body)
    assert len(counts) == 1, counts
    scenario.recover(run)
    return counts[0]


@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda s: s.name)
def test_a_crash_at_any_write_is_recovered(
    normal: InProcessCoordinator, scenario: Scenario
) -> None:
    writes = count_writes(normal, scenario)
    assert writes >= 1
    points = [f"write.{k}.{side}" for k in range(1, writes + 1) for side in ("before", "after")]
    for point in points:
        run = fresh_run(normal.url, scenario.prefix)
        crash_settings = {**SETTINGS, "groupcoord.fault.crash.at": point}
        with (
            clock.use(SKEW.now_ms),
            running_coordinator(crash_settings, store=normal.store) as crashing,
        ):
            answer = scenario.request(run, crashing.url)
        assert answer.status == 500, (point, answer.status, answer.body)
        try:
            scenario.recover(run)
        except AssertionError as error:
            raise AssertionError(f"{scenario.name}, crashed at {point}: {error}") from error
    print(f"{scenario.name}: W={writes}, {len(points)} crash points")
