"""Rebalance speed, side by side: classic eager (range assignor), classic cooperative
(cooperative-sticky, KIP-429) and the consumer protocol (KIP-848, server-side uniform assignor):
N members over 1,000 partitions, from a cold start to Stable, then after one member joins, one
dies, one leaves.

    python -m bench.rebalance [--sizes 10,100] [--protocols eager,cooperative,consumer]
                              [--partitions 1000] [--no-write]
    python -m bench.rebalance --smoke   # 3 members over 12 partitions; writes nothing

Simulated consumers (bench/common.py SimMember, ConsumerMembers below) call the Lambda handlers
in-process, against DynamoDB Local. A *round* is every live member sending its next request once
(a heartbeat, a join or sync, or the re-send of one answered 202): rounds in which everyone only
heartbeats are paced to the heartbeat interval, the others go back-to-back (a classic client
re-sends after retryAfterMs; a consumer-protocol client heartbeats at once to acknowledge a new
assignment). Short timeouts: barrier hold 0, initial rebalance delay 200 ms, and a session
timeout of five heartbeat intervals, the interval sized to the time a round takes here.
"Stable" means every live member holds its assignment of one generation (member epoch) and
every partition has exactly one owner.
"""

from __future__ import annotations

import argparse
import functools
import random
import sys
import threading
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.common import (
    TOPIC,
    Call,
    ConsumerGroupSim,
    InProcess,
    Rounds,
    SimMember,
    all_stable,
    build_classic_group_direct,
    create_topic,
    dynamodb_local,
    fmt,
    load_results,
    parse_args,
    percentile,
    range_assign,
    run_rounds,
    run_rounds_of,
    save_results,
    table,
    write_section,
)
from groupcoord.errors import Errors
from groupcoord.store import schema

COMMAND = "python -m bench.rebalance"
SETTINGS = {
    "groupcoord.barrier.hold.ms": "0",
    "group.initial.rebalance.delay.ms": "200",
    "group.min.session.timeout.ms": "100",
}
# The heartbeat interval is this many times the time a round of sequential calls takes now
# (calibrated: the machine is shared), and the session timeout this many intervals.
INTERVAL_MARGIN = 2
SESSION_INTERVALS = 5
MIN_INTERVAL_MS = 300  # the shortest heartbeat interval (--min-interval-ms)
# Threads sending a round's requests side by side, as clients do: the consumer protocol's first
# joins then share target installs (one install lease at a time) instead of each installing
# over all the members before it.
CONCURRENCY = 8
# Classic groups this large start from a Stable group written directly (bench/common.py
# build_classic_group_direct) instead of a simulated cold start: 1,000 new members joining at
# once take many rounds of contended joins (each writes the group item) on the one DynamoDB
# Local here, far longer than a benchmark may run. The consumer protocol's cold start is
# simulated at every size.
DIRECT_FROM = 1000


PROTOCOLS = ("eager", "cooperative", "consumer")
PROTOCOL_NAMES = {
    "eager": "classic eager (range)",
    "cooperative": "classic cooperative (cooperative-sticky)",
    "consumer": "consumer protocol (uniform)",
}


@dataclass
class Phase:
    size: int
    phase: str
    protocol: str = "eager"
    rounds: int = 0
    seconds: float = 0.0
    moved: int | str = ""
    revoked: int = 0  # partitions given up by members that stay (stopped, then resumed)
    generations: int = 0  # how many times the join barrier closed on the way
    requests: int = 0
    read_units: float = 0.0
    write_units: float = 0.0
    interval_ms: int = 0
    session_ms: int = 0
    busy: int = 0  # consumer protocol: answers 14 (the group busy with write races), retried
    error: str = ""


def owners(members: list[SimMember]) -> dict[int, str]:
    return {p: m.member_id for m in members if m.live for p in m.assigned}


class ConsumerMembers:
    """Consumer-protocol members (KIP-848) in rounds: each live member heartbeats once per round
    (joining with epoch 0, acknowledging a new assignment with its owned partitions, leaving
    with epoch -1). A member stops consuming a partition as soon as an answer leaves it out."""

    def __init__(self, coordinator: InProcess, group_id: str, partitions: int) -> None:
        self.coordinator = coordinator
        self.sim = ConsumerGroupSim(coordinator.call, group_id, 0)
        self.partitions = partitions
        self.live: list[str] = []
        self.revoked = 0
        self.busy = 0  # answers 14 (COORDINATOR_LOAD_IN_PROGRESS), retried next round
        self._lock = threading.Lock()  # members beat from several threads

    def add(self) -> str:
        member_id = str(uuid.uuid4())
        self.sim.ids.append(member_id)
        self.live.append(member_id)
        return member_id

    def held(self, member_id: str) -> list[int]:
        return [p for tp in self.sim.owned.get(member_id, []) for p in tp["partitions"]]

    def owners(self) -> dict[int, str]:
        return {p: m for m in self.live for p in self.held(m)}

    def epoch(self) -> int:
        return max((self.sim.epochs.get(m, 0) for m in self.live), default=0)

    def beat(self, member_id: str) -> Call:
        before = set(self.held(member_id))
        answer = self.sim.beat(member_id)
        if answer.error_code == Errors.COORDINATOR_LOAD_IN_PROGRESS:
            with self._lock:  # the group was busy (write races): a client retries, as here
                self.busy += 1
            return answer
        if answer.status >= 400 or answer.error_code not in (0, None):
            raise RuntimeError(f"consumer-group-heartbeat: {answer.status} {answer.body}")
        with self._lock:
            self.revoked += len(before - set(self.held(member_id)))
        return answer

    def leave(self, member_id: str) -> Call:
        self.live.remove(member_id)
        body = {"groupId": self.sim.group_id, "memberId": member_id, "memberEpoch": -1}
        return self.sim.call("consumer-group-heartbeat", body)

    def stable(self) -> bool:
        if not self.live or any(m not in self.sim.epochs for m in self.live):
            return False
        if self.sim.unacked or len({self.sim.epochs[m] for m in self.live}) != 1:
            return False
        owned = sorted(p for m in self.live for p in self.held(m))
        if owned != list(range(self.partitions)):
            return False
        # ... and the coordinator has no bump left to install (a join or an expiry within the
        # assignment interval of the last install waits for one): read, not a request.
        key = schema.group_key(self.sim.group_id)
        item = self.coordinator.dynamo.get(key, consistent=True) or {}
        return int(item.get("groupEpoch", 0)) == int(item.get("targetEpoch", -1))

    def run(self, max_rounds: int, interval_ms: int, concurrency: int) -> Rounds:
        return run_rounds_of(
            lambda: [functools.partial(self.beat, m) for m in self.live],
            self.stable,
            lambda: not self.sim.unacked and all(m in self.sim.epochs for m in self.live),
            max_rounds=max_rounds,
            heartbeat_interval_ms=interval_ms,
            concurrency=concurrency,
        )


def run_phase(
    size: int,
    name: str,
    members: list[SimMember],
    partitions: int,
    interval_ms: int,
    before: dict[int, str] | None,
    protocol: str,
    concurrency: int,
) -> Phase:
    phase = Phase(
        size, name, protocol, interval_ms=interval_ms, session_ms=SESSION_INTERVALS * interval_ms
    )
    generation = max((m.generation for m in members if m.live), default=0)
    revoked = sum(m.revoked for m in members if m.live)
    try:
        result = run_rounds(
            members,
            lambda: all_stable(members, partitions),
            max_rounds=100,
            heartbeat_interval_ms=interval_ms,
            concurrency=concurrency,
        )
    except RuntimeError as error:
        phase.error = str(error)[:160]
        return phase
    after = owners(members)
    phase.generations = max(m.generation for m in members if m.live) - max(generation, 0)
    phase.revoked = sum(m.revoked for m in members if m.live) - revoked
    return _filled(phase, result, before, after, partitions)


def run_consumer_phase(
    size: int,
    name: str,
    group: ConsumerMembers,
    partitions: int,
    interval_ms: int,
    before: dict[int, str] | None,
    concurrency: int,
) -> Phase:
    phase = Phase(
        size,
        name,
        "consumer",
        interval_ms=interval_ms,
        session_ms=SESSION_INTERVALS * interval_ms,
    )
    epoch, revoked, busy = group.epoch(), group.revoked, group.busy
    try:
        result = group.run(100, interval_ms, concurrency)
    except RuntimeError as error:
        phase.error = str(error)[:160]
        return phase
    phase.generations = group.epoch() - epoch
    phase.revoked = group.revoked - revoked
    phase.busy = group.busy - busy
    return _filled(phase, result, before, group.owners(), partitions)


def _filled(
    phase: Phase,
    result: Rounds,
    before: dict[int, str] | None,
    after: dict[int, str],
    partitions: int,
) -> Phase:
    phase.rounds, phase.seconds = result.rounds, result.seconds
    phase.requests = result.usage.requests
    phase.read_units, phase.write_units = result.usage.read_units, result.usage.write_units
    if before is None:
        phase.moved = f"{partitions:,} assigned"
    else:
        phase.moved = sum(1 for p in range(partitions) if before.get(p) != after.get(p))
    return phase


def _add_call(phase: Phase, answer: Call) -> Phase:
    """Count a call made outside the rounds (a leave) in the phase."""
    phase.seconds += answer.seconds
    phase.requests += answer.usage.requests
    phase.read_units += answer.usage.read_units
    phase.write_units += answer.usage.write_units
    return phase


def ms_per_call(coordinator: InProcess) -> float:
    """p75 time of a join and a heartbeat against a small group, on this machine now."""
    group_id = f"calibrate-{uuid.uuid4().hex[:8]}"
    ids = build_classic_group_direct(coordinator, group_id, 10)
    times = []
    for member_id in ids:
        body = {"groupId": group_id, "generationId": 1, "memberId": member_id}
        times.append(coordinator.call("heartbeat", body).seconds * 1000)
        body = {
            "groupId": group_id,
            "memberId": "",
            "sessionTimeoutMs": 10_000,
            "protocolType": "consumer",
            "protocols": [{"name": "range"}],
        }
        times.append(coordinator.call("join-group", body).seconds * 1000)
    return percentile(times, 75)


# The consumer protocol's cold start runs with this session timeout: each of its joins installs a
# new target over the members so far, so a round of N first joins takes longer here than five
# intervals sized on classic calls, and early joiners would expire before the round ends.
COLD_START_SESSION_MS = 600_000


def consumer_settings(interval_ms: int, session_ms: int = 0) -> dict[str, str]:
    session_ms = session_ms or SESSION_INTERVALS * interval_ms
    return {
        **SETTINGS,
        "group.consumer.heartbeat.interval.ms": str(interval_ms),
        "group.consumer.min.heartbeat.interval.ms": "100",
        "group.consumer.session.timeout.ms": str(session_ms),
        "group.consumer.min.session.timeout.ms": "100",
        "group.consumer.max.session.timeout.ms": str(max(session_ms, 60_000)),
    }


def run_size(
    endpoint: str,
    size: int,
    partitions: int,
    protocol: str,
    concurrency: int,
    min_interval_ms: int = MIN_INTERVAL_MS,
) -> list[Phase]:
    coordinator = InProcess(endpoint, SETTINGS)
    create_topic(coordinator, TOPIC, partitions)
    calibrated = int(INTERVAL_MARGIN * size * ms_per_call(coordinator))
    interval_ms = max(min_interval_ms, calibrated)
    if protocol == "consumer":
        coordinator.configure(consumer_settings(interval_ms, COLD_START_SESSION_MS))
        return run_consumer_size(coordinator, size, partitions, interval_ms, concurrency)
    session_ms = SESSION_INTERVALS * interval_ms
    group_id = f"rebalance-{uuid.uuid4().hex[:8]}"

    def member(index: int) -> SimMember:
        return SimMember(
            coordinator.call,
            group_id,
            session_ms,
            partitions,
            index=index,
            rebalance_timeout_ms=10 * session_ms,
            cooperative=protocol == "cooperative",
        )

    def phase(name: str, before: dict[int, str] | None) -> Phase:
        return run_phase(
            size, name, members, partitions, interval_ms, before, protocol, concurrency
        )

    members = [member(i) for i in range(size)]
    if size >= DIRECT_FROM:
        phases = [built_stable(coordinator, members, protocol, interval_ms, session_ms)]
    else:
        phases = [phase("cold start", None)]
    if phases[-1].error:
        return phases
    print(
        f"  {size} {protocol}: cold start in {phases[-1].rounds} rounds, {phases[-1].seconds:.1f}s"
    )

    before = owners(members)
    members.append(member(size))
    phases.append(phase("one member joins", before))
    if phases[-1].error:
        return phases

    before = owners(members)
    followers = [m for m in members if m.live and not m.members]
    random.choice(followers).state = "dead"
    phases.append(phase("one member dies", before))
    if phases[-1].error:
        return phases

    before = owners(members)
    leaving = random.choice([m for m in members if m.live and not m.members])
    answer = leaving.leave()
    phases.append(_add_call(phase("one member leaves", before), answer))
    return phases


def built_stable(
    coordinator: InProcess,
    members: list[SimMember],
    protocol: str,
    interval_ms: int,
    session_ms: int,
) -> Phase:
    """A classic group of `members` written Stable in generation 1 (range assignment) with
    the store's own code instead of simulated: see DIRECT_FROM. The members take it over."""
    first = members[0]
    started = time.perf_counter()
    ids = build_classic_group_direct(
        coordinator,
        first.group_id,
        len(members),
        partitions=first.partitions,
        session_timeout_ms=session_ms,
        assignor=first.assignor,
    )
    plan = range_assign(ids, first.partitions)
    for member, member_id in zip(members, ids, strict=True):
        member.member_id, member.state, member.generation = member_id, "stable", 1
        member.assigned = plan[member_id]
    first.members = list(ids)  # the leader (ids[0]) knows the generation's members
    phase = Phase(len(members), "built Stable directly (no cold start)", protocol)
    phase.seconds = time.perf_counter() - started
    phase.moved = f"{first.partitions:,} assigned"
    phase.interval_ms, phase.session_ms = interval_ms, session_ms
    return phase


def run_consumer_size(
    coordinator: InProcess, size: int, partitions: int, interval_ms: int, concurrency: int
) -> list[Phase]:
    group = ConsumerMembers(coordinator, f"rebalance-{uuid.uuid4().hex[:8]}", partitions)

    def phase(name: str, before: dict[int, str] | None) -> Phase:
        return run_consumer_phase(size, name, group, partitions, interval_ms, before, concurrency)

    for _ in range(size):
        group.add()
    phases = [phase("cold start", None)]
    if phases[-1].error:
        return phases
    print(f"  {size} consumer: cold start in {phases[-1].rounds} rounds, {phases[-1].seconds:.1f}s")
    # Short sessions from here on: every member renews with them during the join phase.
    coordinator.configure(consumer_settings(interval_ms))

    before = group.owners()
    group.add()
    phases.append(phase("one member joins", before))
    if phases[-1].error:
        return phases

    before = group.owners()
    group.live.remove(random.choice(group.live))  # it stops heartbeating
    phases.append(phase("one member dies", before))
    if phases[-1].error:
        return phases

    before = group.owners()
    answer = group.leave(random.choice(group.live))
    phases.append(_add_call(phase("one member leaves", before), answer))
    return phases


HEADERS = (
    "members",
    "protocol",
    "event",
    "rounds to Stable",
    "rebalances",
    "wall s",
    "partitions moved",
    "revoked by members that stay",
    "DynamoDB requests",
    "est. RCU",
    "est. WCU",
    "note",
)


def phase_row(p: Phase) -> tuple[Any, ...]:
    if p.error:
        return (p.size, PROTOCOL_NAMES[p.protocol], p.phase, *[""] * 8, f"FAILED: {p.error}")
    return (
        p.size,
        PROTOCOL_NAMES[p.protocol],
        p.phase,
        p.rounds,
        p.generations,
        f"{p.seconds:.1f}",
        p.moved,
        fmt(p.revoked),
        fmt(p.requests),
        fmt(p.read_units),
        fmt(p.write_units),
        f"interval {p.interval_ms:,} ms, session {p.session_ms:,} ms"
        + (f"; {p.busy:,} answers 14 (busy), retried" if p.busy else ""),
    )


def run_all(
    sizes: list[int], protocols: list[str], partitions: int, concurrency: int, min_interval_ms: int
) -> tuple[list[Phase], dict[tuple[int, str], float]]:
    """Every size with every protocol: the phases, and the seconds each run took."""
    phases: list[Phase] = []
    took: dict[tuple[int, str], float] = {}
    with dynamodb_local() as endpoint:
        for size in sizes:
            for protocol in protocols:
                print(f"{size} members over {partitions:,} partitions, {protocol}")
                run_started = time.perf_counter()
                phases += run_size(
                    endpoint, size, partitions, protocol, concurrency, min_interval_ms
                )
                took[(size, protocol)] = time.perf_counter() - run_started
    return phases, took


def main(argv: list[str] | None = None) -> list[Phase]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10,100")
    parser.add_argument("--protocols", default=",".join(PROTOCOLS))
    parser.add_argument("--partitions", type=int, default=1000)
    parser.add_argument(
        "--concurrency",
        type=int,
        default=CONCURRENCY,
        help="threads sending a round's requests side by side",
    )
    parser.add_argument(
        "--merge",
        action="store_true",
        help="keep the saved results of the sizes and protocols not run now (long sizes alone)",
    )
    parser.add_argument(
        "--no-write", action="store_true", help="print only: no doc section, no saved results"
    )
    parser.add_argument("--min-interval-ms", type=int, default=MIN_INTERVAL_MS)
    args = parse_args(parser, argv, sizes="3", partitions=12)
    protocols = [p for p in args.protocols.split(",") if p]
    unknown = set(protocols) - set(PROTOCOLS)
    if unknown:
        parser.error(f"unknown protocols {sorted(unknown)}: choose from {', '.join(PROTOCOLS)}")
    started = time.perf_counter()
    sizes = [int(s) for s in args.sizes.split(",")]
    phases, took = run_all(
        sizes, protocols, args.partitions, args.concurrency, args.min_interval_ms
    )
    elapsed = time.perf_counter() - started
    command = " ".join([COMMAND, *(sys.argv[1:] if argv is None else argv)])
    runs = {
        f"{size}:{protocol}": {"seconds": round(seconds), "command": command}
        for (size, protocol), seconds in took.items()
    }
    if args.merge:
        phases, runs = merged(phases, runs)
    text = table(HEADERS, [phase_row(p) for p in phases])
    print(text)
    run_times = ", ".join(
        f"{key.split(':')[0]} {PROTOCOL_NAMES[key.split(':')[1]]}: {run['seconds']} s"
        for key, run in runs.items()
    )
    print(f"took {elapsed:.0f}s ({run_times})")
    if not args.no_write:  # a trial run leaves the saved rows (--merge's) alone
        save_results("rebalance", {"phases": [p.__dict__ for p in phases], "runs": runs})
        body = "\n\n".join(
            [
                DOC_INTRO.format(
                    partitions=args.partitions,
                    margin=INTERVAL_MARGIN,
                    concurrency=args.concurrency,
                    sessions=SESSION_INTERVALS,
                    direct=DIRECT_FROM,
                ),
                text,
                SIZES_NOTE,
                f"Run times: {run_times}.",
            ]
        )
        commands = "`; `".join(dict.fromkeys(run["command"] for run in runs.values()))
        print(f"wrote {write_section('rebalance', 'Rebalance speed', commands, body)}")
    return phases


def merged(
    phases: list[Phase], runs: dict[str, dict[str, Any]]
) -> tuple[list[Phase], dict[str, dict[str, Any]]]:
    """This run's phases and runs with the last saved ones of the sizes and protocols it did not
    run, in table order (size, then protocol)."""
    saved = load_results("rebalance")
    if isinstance(saved, dict):
        ran = {(p.size, p.protocol) for p in phases}
        phases = phases + [
            Phase(**p) for p in saved["phases"] if (p["size"], p["protocol"]) not in ran
        ]
        runs = {**{k: v for k, v in saved["runs"].items() if k not in runs}, **runs}
    phases.sort(key=lambda p: (p.size, PROTOCOLS.index(p.protocol)))
    order = {f"{p.size}:{p.protocol}": i for i, p in enumerate(phases)}
    return phases, dict(sorted(runs.items(), key=lambda kv: order.get(kv[0], 0)))


DOC_INTRO = """\
Three protocols side by side, one topic of {partitions:,} partitions: *classic eager* (range
assignor: every member revokes everything when a rebalance starts, and nobody consumes until the
sync), *classic cooperative* (cooperative-sticky, KIP-429, computed by the simulated leader:
members keep what they own through the rebalance; a partition that changes owner is revoked in a
first rebalance and assigned in a second), *consumer protocol* (KIP-848
consumer-group-heartbeat, the coordinator's uniform assignor; a member gives up a partition when
an answer leaves it out and acknowledges on its next heartbeat; a partition moves once its old
owner has revoked it). Simulated members call the Lambda handlers in-process against DynamoDB
Local. A *round* is every live member sending its next request once (heartbeat, join, sync, the
re-send of a 202, or a consumer heartbeat), {concurrency} at a time from as many threads, as
clients send theirs side by side (a consumer-protocol answer 14, the group busy with racing
writes, is retried in the next round, as clients retry it; the note counts them). Rounds in
which nobody has anything to do but heartbeat are paced to the heartbeat interval: {margin} x
the time a round of sequential calls would take (members x the p75 call time measured just
before, at least 300 ms: the machine is shared and its speed varies); the others run
back-to-back, as classic clients re-send after `retryAfterMs` and consumer clients acknowledge a
new assignment at once. Timeouts are short:
`groupcoord.barrier.hold.ms=0`, initial rebalance delay 200 ms, session timeout {sessions}
intervals (`group.consumer.session.timeout.ms` the same for the consumer protocol, except during
its cold start, which runs with 10-minute sessions: a round of N contended first joins takes
longer here than five intervals sized on single calls), rebalance timeout 10 sessions; the
consumer protocol's installs are batched in time with Kafka's default
`group.consumer.assignment.interval.ms` (1 s). *Stable*: every live member holds its assignment
of one generation (one member epoch) and every partition has exactly one owner (consumer
protocol: and the group has no epoch bump left to install). Classic groups of {direct:,} members
or more start from a Stable group written directly with the store's code (generation 1, range
assignment) instead of a simulated cold start (see below). *Rebalances*:
how many times the join barrier closed on the way (consumer protocol: how far the group epoch
moved). *Moved*: partitions whose owner changed. *Revoked by members that stay*: partitions that
a member still in the group stopped consuming on the way (eager: everything it owned, at every
rebalance). "Dies": a member stops sending; the others notice when its session expires (lazily,
on a request that finds the group's next check passed). On AWS a heartbeat round is one
heartbeat interval (3 s with Kafka's classic defaults, 5 s for the consumer protocol); wall
times here are this machine's sequential calls and the short timeouts, not AWS figures."""

SIZES_NOTE = """\
The default run is N = 10 and 100 (a few minutes); N = 1,000 runs on its own, `--sizes 1000
--merge`, and its rows are merged with the saved ones of the default run (bench/.results). At
1,000 members a round is 1,000 requests against one DynamoDB Local, so wall times there mostly
measure DynamoDB Local on this machine; the rounds, rebalances, partitions moved and request
and unit counts are what carry over to AWS. The classic cold start is not simulated at 1,000: its
new members' joins all write the group item (its member count) and race on its version; from 8
threads against moto, 100 new members took 10-30 s a round and about 10 rounds, and 1,000
would take many times that. On AWS a classic cold start of thousands of members is bound by that key
too; `group.initial.rebalance.delay.ms` (3 s by default) gathers them into one rebalance. The
consumer protocol's cold start shows the target installs batched in time
(`group.consumer.assignment.interval.ms`, 1 s by default, as in Kafka's KIP-1263): its joins
share about one install a second, each reading every member, instead of one install per join."""


if __name__ == "__main__":
    main()
