"""The crash-point tests' machinery (tests/integration/test_crash_points*.py): a scenario is a
prefix that sets a fresh group up, the request (or sweep) under test, and what the clients do
next with the checks of the invariants. `crash_every_write` counts the request's writes W on the
normal deployment, then for every k in 1..W and both sides runs the scenario again with the
request sent to a deployment beside it (same table) that dies at `write.<k>.<side>`;
`crash_every_sweep_write` does the same for a sweep run through the sweeper's entry point, on a
fresh deployment without a periodic sweeper, at `sweep.write.<k>.<side>`."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import pytest

from groupcoord import clock, faults, runtime
from groupcoord.http.handler import make_sweeper_handler
from groupcoord.local.events import LambdaContext, scheduled_event
from groupcoord.settings import Settings
from groupcoord.store.store import Store
from tests.support.api import Answer, Api
from tests.support.classic_client import (
    FAST_SETTINGS,
    Consumer,
    Ownership,
    assignments_of,
)
from tests.support.classic_client import settle as settle_classic
from tests.support.consumer import (
    Member,
    assert_no_partition_held_twice,
    create_topic,
    unique,
    until,
    wire,
)
from tests.support.consumer import describe as describe_consumer
from tests.support.servers import IMMEDIATE_INSTALLS, InProcessCoordinator, running_coordinator

PARTITIONS = 4
SETTLE_S = 20.0
# Every heartbeat writes its renewal (docs/sessions.md): the scenarios move the clock by parts of
# a session and count on exact expiry.
SETTINGS = {**FAST_SETTINGS, **IMMEDIATE_INSTALLS, "groupcoord.session.renewal.skips": "0"}
# The sweep scenarios' deployments: no periodic sweep, the test runs each one.
NO_SWEEPER = {**SETTINGS, "groupcoord.sweep.interval.ms": str(3_600_000)}
CRASH_AT = "groupcoord.fault.crash.at"
UNKNOWN_MEMBER_ID = 25
FENCED_MEMBER_EPOCH = 110
SIDES = ("before", "after")


class Skew:
    """The coordinators' clock, ahead of the system's by `ahead_ms`: a lease a crashed request
    left (an install's, 10 s) passes by moving it, not by waiting."""

    def __init__(self) -> None:
        self.ahead_ms = 0

    def now_ms(self) -> int:
        return clock.system_ms() + self.ahead_ms


SKEW = Skew()


@contextmanager
def normal_deployment(settings: dict[str, str] | None = None) -> Iterator[InProcessCoordinator]:
    """The deployment the clients use, on the skewed clock (for a module-scoped fixture)."""
    with clock.use(SKEW.now_ms), running_coordinator(settings or SETTINGS) as coordinator:
        yield coordinator


@dataclass
class Run:
    """One scenario run on a fresh group: what its prefix set up and what was acknowledged."""

    api: Api
    group: str
    topic: str
    state: dict[str, Any] = field(default_factory=dict)
    # The sweep scenarios: the deployment the run is on.
    deployment: InProcessCoordinator | None = None


@dataclass(frozen=True)
class Scenario:
    name: str
    prefix: Callable[[Run], None]
    # Sends the request under test to the given base URL; the run holds the rest.
    request: Callable[[Run, str], Answer]
    # After the request: what clients do next (re-sending it after a 500), then the checks.
    recover: Callable[[Run], None]


def fresh_run(url: str, prefix: Callable[[Run], None]) -> Run:
    api = Api(url)
    run = Run(api, unique("crash"), unique("t"))
    create_topic(api, run.topic, PARTITIONS)
    prefix(run)
    return run


def points(writes: int, prefix: str = "write") -> list[str]:
    return [f"{prefix}.{k}.{side}" for k in range(1, writes + 1) for side in SIDES]


def count_writes(normal: InProcessCoordinator, scenario: Scenario) -> int:
    """W: the write calls of the scenario's request on a normal deployment (which then
    recovers as after any request, to show the scenario holds without a crash)."""
    run = fresh_run(normal.url, scenario.prefix)
    with faults.observed(table=normal.store.settings.table_name) as counts:
        answer = scenario.request(run, normal.url)
    assert answer.status == 200, (answer.status, answer.body)
    assert len(counts) == 1, counts
    scenario.recover(run)
    return counts[0]


@contextmanager
def crashing_deployment(normal: InProcessCoordinator, point: str) -> Iterator[str]:
    """A deployment beside `normal` (its table) that dies at `point`; yields its base URL."""
    crashing = InProcessCoordinator({**SETTINGS, CRASH_AT: point}, store=normal.store)
    try:
        yield crashing.url
    finally:
        # Its HTTP loop sees the shutdown within its 0.5 s poll: not waited for, per point.
        threading.Thread(target=crashing.stop, name="stop-crashing", daemon=True).start()


def crash_every_write(normal: InProcessCoordinator, scenario: Scenario) -> int:
    """Crash the scenario's request at each of its write points in turn; returns W."""
    writes = count_writes(normal, scenario)
    assert writes >= 1
    for point in points(writes):
        run = fresh_run(normal.url, scenario.prefix)
        with crashing_deployment(normal, point) as url:
            answer = scenario.request(run, url)
        assert answer.status == 500, (point, answer.status, answer.body)
        try:
            scenario.recover(run)
        except AssertionError as error:
            raise AssertionError(f"{scenario.name}, crashed at {point}: {error}") from error
    print(f"{scenario.name}: W={writes}, {2 * writes} crash points")
    return writes


# --- the sweeper ---


@dataclass(frozen=True)
class SweepScenario:
    name: str
    # Leaves the group with something for the sweeper (a dead member, say), on `run.deployment`.
    prefix: Callable[[Run], None]
    # After the (crashed) sweep: normal sweeps (`sweep(run)`), what clients do, the checks.
    recover: Callable[[Run], None]


def sweep(run: Run, crash_at: str = "") -> dict[str, Any]:
    """One run of the sweeper's Lambda handler on the run's table, as EventBridge invokes it;
    with `crash_at`, on a deployment that dies at that point."""
    deployment = run.deployment
    assert deployment is not None
    base = deployment.coordinator.settings
    settings = Settings.from_mapping({CRASH_AT: crash_at}, base=base) if crash_at else base
    store = Store(deployment.store.dynamo, settings)
    handler = make_sweeper_handler(budget_ms=10_000)
    with runtime.scoped(settings, store):
        return handler(scheduled_event(), LambdaContext("sweeper", timeout_ms=60_000))


@contextmanager
def sweep_run(prefix: Callable[[Run], None]) -> Iterator[Run]:
    """A fresh deployment (its own table, no periodic sweep) with the scenario's prefix run."""
    with running_coordinator(NO_SWEEPER) as deployment:
        api = Api(deployment.url)
        run = Run(api, unique("crash"), unique("t"), deployment=deployment)
        create_topic(api, run.topic, PARTITIONS)
        prefix(run)
        yield run


def run_table(run: Run) -> str:
    assert run.deployment is not None
    return run.deployment.store.settings.table_name


def crash_every_sweep_write(scenario: SweepScenario) -> int:
    """Crash the scenario's sweep at each of its write points in turn; returns W. Runs on the
    skewed clock (the caller's module fixture holds it)."""
    with (
        sweep_run(scenario.prefix) as run,
        faults.observed(faults.SWEEP, table=run_table(run)) as counts,
    ):
        sweep(run)
        assert len(counts) == 1, counts
        writes = counts[0]
        scenario.recover(run)
    assert writes >= 1
    for point in points(writes, "sweep.write"):
        with sweep_run(scenario.prefix) as run:
            with pytest.raises(faults.InjectedCrash, match=point.replace(".", r"\.")):
                sweep(run, crash_at=point)
            try:
                scenario.recover(run)
            except AssertionError as error:
                raise AssertionError(f"{scenario.name}, crashed at {point}: {error}") from error
    print(f"{scenario.name}: W={writes}, {2 * writes} crash points")
    return writes


# --- consumer-protocol members ---


def join_body(member: Member) -> dict[str, Any]:
    body: dict[str, Any] = {
        "groupId": member.group,
        "memberId": member.member_id,
        "memberEpoch": 0,
        "rebalanceTimeoutMs": member.rebalance_timeout_ms,
        "topicPartitions": [],
        "subscribedTopicNames": member.topics,
        "subscribedTopicRegex": member.regex,
    }
    if member.instance_id is not None:
        body["instanceId"] = member.instance_id
    return body


def heartbeat_body(member: Member) -> dict[str, Any]:
    body: dict[str, Any] = {
        "groupId": member.group,
        "memberId": member.member_id,
        "memberEpoch": member.epoch,
        "topicPartitions": wire(member.owned),
    }
    if member.instance_id is not None:
        body["instanceId"] = member.instance_id
    return body


def leave_body(member: Member, epoch: int) -> dict[str, Any]:
    body: dict[str, Any] = {
        "groupId": member.group,
        "memberId": member.member_id,
        "memberEpoch": epoch,
    }
    if member.instance_id is not None:
        body["instanceId"] = member.instance_id
    return body


def consumers_converged(members: list[Member], partitions: int = PARTITIONS) -> bool:
    """One heartbeat round (rejoining a fenced member, as a client does); True once it changed
    nothing and the members share all `partitions` (of every topic). Otherwise the clock moves
    on a second, so that a lease the crash left expires within a few polls."""
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
    assert_no_partition_held_twice(members)
    owned = [(t, p) for m in members for t, ps in m.owned.items() for p in ps]
    unchanged = before == [(m.epoch, m.owned) for m in members]
    done = unchanged and len(owned) == partitions and all(m.owned for m in members)
    if not done:
        SKEW.ahead_ms += 1000
    return done


def converge(members: list[Member], partitions: int = PARTITIONS) -> None:
    """Heartbeat until `consumers_converged`; fail saying what each member holds."""
    try:
        until(lambda: consumers_converged(members, partitions), SETTLE_S)
    except AssertionError:
        held = {m.member_id[:8]: sum(len(ps) for ps in m.owned.values()) for m in members}
        raise AssertionError(
            f"members did not converge on {partitions} partitions: they hold {held}"
        ) from None


def consumer_group_members(api: Api, group: str) -> set[str]:
    return {m["memberId"] for m in describe_consumer(api, group)["members"]}


def group_epoch(api: Api, group: str) -> int:
    return describe_consumer(api, group)["groupEpoch"]


# --- classic members ---


def classic_members(run: Run, names: list[str], **kwargs: Any) -> list[Consumer]:
    ownership = run.state.setdefault("ownership", Ownership())
    # A short session by default: heartbeats every 250 ms, so that a rejoin is seen soon.
    kwargs.setdefault("session_timeout_ms", 3000)
    return [
        Consumer(run.api.base_url, run.group, [run.topic], name=n, ownership=ownership, **kwargs)
        for n in names
    ]


def classic_settle(run: Run, consumers: list[Consumer]) -> dict[str, Any]:
    """Run the consumers' loops (each rejoining first, as a client does after a 500 on join or
    sync) until the group is Stable with exactly them; checks no partition was held twice and
    each partition is assigned once; returns the group's description."""
    for c in consumers:
        c.resume(rejoin=True)
    try:
        group = settle_classic(run.api, run.group, consumers, SETTLE_S)
    finally:
        for c in consumers:
            c.stop()
    assert not run.state["ownership"].violations, run.state["ownership"].violations
    assignments = assignments_of(group)
    owned = [tp for tps in assignments.values() for tp in tps]
    assert len(owned) == len(set(owned)) == PARTITIONS, assignments
    return group


def classic_recover(run: Run) -> None:
    """The classic scenarios' recovery: the consumers in `run.state["live"]` (or c1 and c2)
    converge, and no generation went back."""
    names = run.state.get("live", ["c1", "c2"])
    consumers = [run.state[n] for n in names if n in run.state]
    classic_settle(run, consumers)
    for c in consumers:
        assert c.generation >= run.state["generation"], (c.name, c.generation)
