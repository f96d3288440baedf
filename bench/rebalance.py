"""Rebalance speed of the classic protocol (eager, range assignor): N members over 1,000
partitions, from a cold start to Stable, then after one member joins, one dies, one leaves.

    python -m bench.rebalance [--sizes 10,50,100] [--partitions 1000] [--no-write]

Simulated consumers (bench/common.py SimMember) call the Lambda handlers in-process, against a
moto server. A *round* is every live member sending its next request once (a heartbeat, a join
or sync, or the re-send of one answered 202): rounds in which everyone only heartbeats are paced
to the heartbeat interval, barrier rounds go back-to-back (a client re-sends after retryAfterMs).
Short timeouts: barrier hold 0, initial rebalance delay 200 ms, and a session timeout of three
heartbeat intervals, the interval sized to the time a round takes here. "Stable" means every
live member holds its assignment of one generation and every partition has exactly one owner.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.common import (
    TOPIC,
    InProcess,
    Rounds,
    SimMember,
    all_stable,
    build_classic_group_direct,
    create_topic,
    fmt,
    moto_server,
    percentile,
    run_rounds,
    save_results,
    table,
    write_section,
)

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


@dataclass
class Phase:
    size: int
    phase: str
    rounds: int = 0
    seconds: float = 0.0
    moved: int | str = ""
    generations: int = 0  # how many times the join barrier closed on the way
    requests: int = 0
    read_units: float = 0.0
    write_units: float = 0.0
    interval_ms: int = 0
    session_ms: int = 0
    error: str = ""


def owners(members: list[SimMember]) -> dict[int, str]:
    return {p: m.member_id for m in members if m.live for p in m.assigned}


def run_phase(
    size: int,
    name: str,
    members: list[SimMember],
    partitions: int,
    interval_ms: int,
    before: dict[int, str] | None,
) -> Phase:
    phase = Phase(size, name, interval_ms=interval_ms, session_ms=SESSION_INTERVALS * interval_ms)
    generation = max((m.generation for m in members if m.live), default=0)
    try:
        result = run_rounds(
            members,
            lambda: all_stable(members, partitions),
            max_rounds=100,
            heartbeat_interval_ms=interval_ms,
        )
    except RuntimeError as error:
        phase.error = str(error)[:160]
        return phase
    after = owners(members)
    phase.generations = max(m.generation for m in members if m.live) - max(generation, 0)
    return _filled(phase, result, before, after, partitions)


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


def run_size(endpoint: str, size: int, partitions: int) -> list[Phase]:
    coordinator = InProcess(endpoint, SETTINGS)
    create_topic(coordinator, TOPIC, partitions)
    interval_ms = max(300, int(INTERVAL_MARGIN * size * ms_per_call(coordinator)))
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
        )

    members = [member(i) for i in range(size)]
    phases = [run_phase(size, "cold start", members, partitions, interval_ms, None)]
    if phases[-1].error:
        return phases
    print(f"  {size}: cold start in {phases[-1].rounds} rounds, {phases[-1].seconds:.1f}s")

    before = owners(members)
    members.append(member(size))
    phases.append(run_phase(size, "one member joins", members, partitions, interval_ms, before))
    if phases[-1].error:
        return phases

    before = owners(members)
    followers = [m for m in members if m.live and not m.members]
    random.choice(followers).state = "dead"
    phases.append(run_phase(size, "one member dies", members, partitions, interval_ms, before))
    if phases[-1].error:
        return phases

    before = owners(members)
    leaving = random.choice([m for m in members if m.live and not m.members])
    answer = leaving.leave()
    phase = run_phase(size, "one member leaves", members, partitions, interval_ms, before)
    phase.seconds += answer.seconds
    phase.requests += answer.usage.requests
    phase.read_units += answer.usage.read_units
    phase.write_units += answer.usage.write_units
    phases.append(phase)
    return phases


def main(argv: list[str] | None = None) -> list[Phase]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10,50,100")
    parser.add_argument("--partitions", type=int, default=1000)
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    phases: list[Phase] = []
    with moto_server() as endpoint:
        for size in (int(s) for s in args.sizes.split(",")):
            print(f"{size} members over {args.partitions:,} partitions")
            phases += run_size(endpoint, size, args.partitions)
    elapsed = time.perf_counter() - started
    rows = []
    for p in phases:
        if p.error:
            rows.append((p.size, p.phase, "", "", "", "", "", "", "", f"FAILED: {p.error}"))
            continue
        rows.append(
            (
                p.size,
                p.phase,
                p.rounds,
                p.generations,
                f"{p.seconds:.1f}",
                p.moved,
                fmt(p.requests),
                fmt(p.read_units),
                fmt(p.write_units),
                f"interval {p.interval_ms:,} ms, session {p.session_ms:,} ms",
            )
        )
    headers = (
        "members",
        "event",
        "rounds to Stable",
        "rebalances",
        "wall s",
        "partitions moved",
        "DynamoDB requests",
        "est. RCU",
        "est. WCU",
        "note",
    )
    text = table(headers, rows)
    print(text)
    print(f"took {elapsed:.0f}s")
    save_results("rebalance", [p.__dict__ for p in phases])
    if not args.no_write:
        body = "\n\n".join(
            [
                DOC_INTRO.format(
                    partitions=args.partitions,
                    margin=INTERVAL_MARGIN,
                    sessions=SESSION_INTERVALS,
                ),
                text,
                "Eager only: the cooperative protocol (cooperative-sticky, two rebalances, "
                "only the moved partitions revoked) and the consumer protocol are not "
                "measured yet.",
                f"The run took {elapsed:.0f} s.",
            ]
        )
        command = COMMAND if argv is None else f"{COMMAND} {' '.join(argv)}"
        print(
            f"wrote {write_section('rebalance', 'Rebalance speed (classic, eager)', command, body)}"
        )
    return phases


DOC_INTRO = """\
Simulated classic consumers (range assignor, one topic of {partitions:,} partitions) call the
Lambda handlers in-process against a moto server. A *round* is every live member sending its
next request once (heartbeat, join, sync, or the re-send of a 202). Rounds in which everyone
only heartbeats are paced to the heartbeat interval: {margin} x the time a round of sequential
calls takes (members x the p75 call time measured just before, at least 300 ms: the machine is
shared and its speed varies); barrier rounds run back-to-back, as clients re-send after
`retryAfterMs`. Timeouts are short: `groupcoord.barrier.hold.ms=0`, initial rebalance delay
200 ms, session timeout {sessions} intervals, rebalance timeout 10 sessions. *Stable*: every
live member holds its assignment of one generation and every partition has exactly one owner.
*Rebalances*: how many times the join barrier closed on the way. *Moved*: partitions whose owner
changed (eager revokes everything, so every member stops for the whole
rebalance). "Dies": a member stops sending; the others notice when its session expires. On AWS a
heartbeat round is one heartbeat interval (3 s with Kafka's defaults); wall times here are this
machine's sequential calls and the short timeouts, not AWS figures."""


if __name__ == "__main__":
    main()
