"""A steady streams-group heartbeat's cost (docs/streams.md) next to a consumer-protocol one, in
$ per member-month at a 5 s heartbeat, by bench/cost_model.py's method and with its functions,
for groups of 10 and 100 members.

    python -m bench.streams [--sizes 10,100] [--no-write]
    python -m bench.streams --smoke   # 10 members, 8 beats and 2 checks timed; writes nothing

The Lambda handlers run in-process on API Gateway events (bench.common.InProcess) against a
DynamoDB Local started here. Per protocol and size, in one group (streams: every member its own
process, a two-sub-topology topology, one standby; consumer protocol: cost_model's group, built
directly):

- units per heartbeat from the capacity audit (bench.common.CapacityAudit, as bench/cost.py:
  read units, and write units with the GSI writes), every member's heartbeat once with its
  session renewal due (skips 0) and once not due (the default skips, right after a renewal),
  blended (skips x not due + due) / (skips + 1);
- Lambda duration: cost_model.steady_ms, the p50 in-process handler time in a 10-member group
  (renewing, only reading), blended the same way, billed at template.yaml's Lambda;
- the group's timer check (its expiry check, due about every session - interval/2): what one
  adds to its heartbeat, units from the audit and time from cost_model.check_ms, priced by
  pricing.check_month and spread over the members.

Priced with pricing.per_heartbeat (the HTTP API front door, Lambda requests and duration,
DynamoDB): the same model as bench/cost_model.py's rows (bench/pricing.py).
"""

from __future__ import annotations

import argparse
import sys
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.common import (
    TOPIC,
    Call,
    InProcess,
    create_topic,
    dynamodb_local,
    make_streams_group_timer_due,
    parse_args,
    table,
    write_section,
)
from bench.cost import RENEWAL_SKIPS, renewal_skips
from bench.cost_model import (
    ARCHITECTURE,
    MEMORY_MB,
    TEMPLATE_LAMBDA,
    built_group,
    check_calls,
    check_ms,
    num,
    steady_ms,
    usd,
)
from bench.pricing import (
    CONSUMER,
    HEARTBEAT_S,
    MONTH_S,
    STREAMS,
    Check,
    SteadyTimes,
    blended,
    check_interval_s,
    check_month,
    per_heartbeat,
)

COMMAND = "python -m bench.streams"
API = "streams-group-heartbeat"
SETTINGS = {
    "group.streams.initial.rebalance.delay.ms": "0",
    "group.streams.assignment.interval.ms": "0",
    "group.streams.num.standby.replicas": "1",
    "group.consumer.assignment.interval.ms": "0",
}
DURATION_SIZE = 10  # cost_model measures steady durations in a 10-member group
STEADY_SAMPLES, CHECK_SAMPLES, CHECK_AUDITS = 100, 15, 3
Beat = Callable[[str], Call]


@dataclass(frozen=True)
class Units:
    """Per heartbeat: read units, write units (GSI writes included), DynamoDB requests."""

    read: float
    write: float
    requests: float

    @classmethod
    def of(cls, calls: list[Call]) -> Units:
        audits = [c.audited for c in calls if c.audited is not None]
        assert len(audits) == len(calls), "calls measured without the audit"
        return cls(
            read=sum(a.read_units for a in audits) / len(calls),
            write=sum(a.write_units + a.index_write_units for a in audits) / len(calls),
            requests=sum(c.usage.requests for c in calls) / len(calls),
        )


@dataclass(frozen=True)
class Figures:
    not_due: Units
    due: Units
    check: Check  # what one timer check adds to its heartbeat


def _streams_group(coordinator: InProcess, size: int) -> tuple[Beat, list[str], Callable[[], None]]:
    """A group of `size` members (a process each) on a 2-sub-topology topology, reconciled:
    its steady heartbeat, its member ids and how to force its timer check due."""
    group = f"bench-{uuid.uuid4().hex[:8]}"
    words = f"{group}-words"
    create_topic(coordinator, words, 2 * size)
    topology = {"epoch": 1, "subtopologies": [
        {"subtopologyId": "0", "sourceTopics": [words], "repartitionSinkTopics": [f"{group}-r"]},
        {"subtopologyId": "1", "sourceTopics": [f"{group}-r"],
         "repartitionSourceTopics": [{"name": f"{group}-r"}],
         "stateChangelogTopics": [{"name": f"{group}-c"}]},
    ]}  # fmt: skip
    epochs: dict[str, int] = {}
    owned: dict[str, dict[str, Any]] = {}

    def send(member: str, body: dict[str, Any]) -> None:
        answer = coordinator.call(API, {"groupId": group, "memberId": member, **body}).body
        assert answer["errorCode"] == 0, answer
        epochs[member] = answer["memberEpoch"]
        if answer.get("activeTasks") is not None:
            owned[member] = {
                f"{r}Tasks": answer[f"{r}Tasks"] for r in ("active", "standby", "warmup")
            }

    for i in range(size):
        send(f"m-{i}", {"memberEpoch": 0, "processId": f"p{i}", "rebalanceTimeoutMs": 30000,
                        "topology": topology, "activeTasks": [], "standbyTasks": [],
                        "warmupTasks": []})  # fmt: skip
    for _ in range(6):
        for member in list(epochs):
            send(member, {"memberEpoch": epochs[member], **owned[member]})

    def beat(member: str) -> Call:
        body = {"groupId": group, "memberId": member, "memberEpoch": epochs[member]}
        return coordinator.call(API, body)

    return beat, list(epochs), lambda: make_streams_group_timer_due(coordinator, group)


def _group(coordinator: InProcess, protocol: str, size: int) -> tuple[Beat, list[str], Any]:
    with coordinator.unaudited():
        if protocol == STREAMS:
            return _streams_group(coordinator, size)
        return built_group(coordinator, protocol, size)


def _steady_units(coordinator: InProcess, beat: Beat, ids: list[str]) -> tuple[Units, Units]:
    """(renewal not due, renewal due) of every member's heartbeat, audited."""
    with renewal_skips(coordinator, 0):
        due = [beat(m) for m in ids]
    with renewal_skips(coordinator, max(1, RENEWAL_SKIPS)):
        for m in ids:
            beat(m)  # renews: the next heartbeat finds its session a session ahead
        quiet = [beat(m) for m in ids]
    for answer in due + quiet:
        assert answer.status == 200 and answer.error_code == 0, answer.body
    assert all(a.usage.write_units for a in due), "a heartbeat at skips 0 did not renew"
    assert not any(a.usage.write_units for a in quiet), "a heartbeat right after one renewed"
    return Units.of(quiet), Units.of(due)


def measure(
    coordinator: InProcess, beat: Beat, ids: list[str], make_due: Any, check_samples: int
) -> Figures:
    """A group's steady heartbeat (audited units) and timer check (audited units, then its
    time unaudited)."""
    not_due, due = _steady_units(coordinator, beat, ids)
    quiet, checked = check_calls(coordinator, beat, ids[0], make_due, CHECK_AUDITS)
    added, base = Units.of(checked), Units.of(quiet)
    with coordinator.unaudited():
        seconds = check_ms(coordinator, beat, ids[0], make_due, check_samples) / 1000
    check = Check(read=added.read - base.read, write=added.write - base.write, seconds=seconds)
    return Figures(not_due, due, check)


def measure_protocol(
    coordinator: InProcess,
    protocol: str,
    sizes: list[int],
    samples: tuple[int, int] = (STEADY_SAMPLES, CHECK_SAMPLES),
) -> tuple[dict[int, Figures], SteadyTimes]:
    """Figures per size, and the steady durations of a 10-member group (cost_model's);
    `samples`: the steady heartbeats and the timer checks timed."""
    figures, times = {}, None
    for size in sorted({*sizes, DURATION_SIZE}):
        beat, ids, make_due = _group(coordinator, protocol, size)
        if size in sizes:
            figures[size] = measure(coordinator, beat, ids, make_due, samples[1])
        if size == DURATION_SIZE:
            with coordinator.unaudited():
                times = steady_ms(coordinator, protocol, beat, ids, samples[0])
    assert times is not None
    return figures, times


def month(protocol: str, size: int, f: Figures, times: SteadyTimes) -> dict[str, float]:
    """$ per member-month: steady heartbeats, and the member's share of the timer checks."""
    read, write = blended({size: (f.not_due.read, f.not_due.write)},
                          {size: (f.due.read, f.due.write)}, RENEWAL_SKIPS)[size]  # fmt: skip
    beats = MONTH_S / HEARTBEAT_S
    parts = per_heartbeat(read, write, times.billed_ms(RENEWAL_SKIPS), TEMPLATE_LAMBDA)
    costs = {k: v * beats for k, v in parts.items()}
    checks = check_month(f.check, check_interval_s(protocol, RENEWAL_SKIPS), TEMPLATE_LAMBDA)
    costs["group timer checks"] = sum(checks.values()) / size
    return costs


def row(protocol: str, size: int, f: Figures, times: SteadyTimes) -> tuple[str, ...]:
    def blend(name: str) -> float:
        return (RENEWAL_SKIPS * getattr(f.not_due, name) + getattr(f.due, name)) / (
            RENEWAL_SKIPS + 1
        )

    costs = month(protocol, size, f, times)
    dynamodb = costs.pop("DynamoDB writes") + costs.pop("DynamoDB reads")
    return (
        f"{protocol}, {size:,} members, HTTP API",
        f"{blend('requests'):.2f}",
        f"{blend('read'):.3f}",
        f"{blend('write'):.3f}",
        f"{f.not_due.requests:.0f} / {f.due.requests:.0f}",
        f"{times.billed_ms(RENEWAL_SKIPS):.1f}",
        f"{num(f.check.read)} / {num(f.check.write)} / {f.check.seconds * 1000:.0f}",
        usd(costs["front door"] + costs["Lambda requests"]),
        usd(costs["Lambda duration"]),
        usd(dynamodb),
        usd(costs["group timer checks"]),
        f"**{usd(dynamodb + sum(costs.values()))}**",
    )


HEADERS = (
    "per member-month",
    "DynamoDB requests / heartbeat",
    "RCU / heartbeat",
    "WCU / heartbeat",
    "requests: renewal not due / due",
    "billed ms / heartbeat (10 members)",
    "one timer check adds: RCU / WCU / ms",
    "front door + Lambda requests",
    "Lambda duration",
    "DynamoDB",
    "group timer checks",
    "total",
)


def explanation() -> str:
    return (
        "A steady heartbeat of a settled group, streams (every member its own process, a "
        "two-sub-topology topology, one standby) next to the consumer protocol, priced by "
        "bench/pricing.py's model, as bench/cost_model.py's rows: units from the capacity "
        "audit (GSI writes included), renewal not due and due blended at session.renewal.skips "
        f"{RENEWAL_SKIPS}; Lambda duration billed at the p50 in-process handler time of a "
        f"10-member group ({ARCHITECTURE}, {MEMORY_MB} MB, template.yaml); the group's timer "
        "check (what one forced due adds to its heartbeat: audited units, in-process time) "
        "once per check interval (pricing.check_interval_s: "
        f"{check_interval_s(STREAMS, RENEWAL_SKIPS):g} s for streams, "
        f"{check_interval_s(CONSUMER, RENEWAL_SKIPS):g} s for the consumer protocol, at their "
        "default sessions and intervals), spread over the members. Times are this machine's "
        "against DynamoDB Local (as in cost_model: an estimate, not a bound)."
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="10,100")
    parser.add_argument("--samples", type=int, default=STEADY_SAMPLES, help="steady beats timed")
    parser.add_argument("--check-samples", type=int, default=CHECK_SAMPLES, help="checks timed")
    parser.add_argument("--no-write", action="store_true", help="print, leave the docs alone")
    args = parse_args(parser, argv, sizes=str(DURATION_SIZE), samples=8, check_samples=2)
    sizes = [int(s) for s in args.sizes.split(",")]
    measured = {}
    with dynamodb_local() as url:
        coordinator = InProcess(url, SETTINGS, audit=True)
        create_topic(coordinator, TOPIC, 1000)  # the consumer protocol's groups read it
        for protocol in (STREAMS, CONSUMER):
            samples = (args.samples, args.check_samples)
            measured[protocol] = measure_protocol(coordinator, protocol, sizes, samples)
    rows, totals = [], {}
    for size in sizes:
        for protocol, (figures, times) in measured.items():
            rows.append(row(protocol, size, figures[size], times))
            totals[protocol, size] = sum(month(protocol, size, figures[size], times).values())
    compared = "; ".join(
        f"at {size:,} members streams {usd(totals[STREAMS, size])}, consumer protocol "
        f"{usd(totals[CONSUMER, size])} ({totals[STREAMS, size] / totals[CONSUMER, size]:.2f}x)"
        for _, size in sorted(k for k in totals if k[0] == STREAMS)
    )
    body = f"{explanation()}\n\n{table(HEADERS, rows)}\n\nPer member-month: {compared}."
    print(body)
    if not args.no_write:
        write_section("streams", "Streams groups: a steady heartbeat's cost", COMMAND, body)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
