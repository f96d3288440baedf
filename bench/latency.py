"""Latency per API: p50/p95/p99 in-process (the Lambda handler against DynamoDB Local) and over
HTTP (`groupcoord serve` backed by the same DynamoDB Local), with the DynamoDB round trips.

    python -m bench.latency [--samples 30] [--members 10] [--no-write]
    python -m bench.latency --smoke   # 2 samples, 3 members; writes nothing

Every DynamoDB call of a handler is sequential, so Usage.requests is the number of round trips
a call waits for: on AWS (a few ms per round trip in-region) that, not DynamoDB Local's speed,
decides its latency. Barrier holds are off (groupcoord.barrier.hold.ms=0) so that a join or sync
that would be held answers 202 at once: the figures are the work, not the wait.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.common import (
    TOPIC,
    Call,
    ConsumerGroupSim,
    InProcess,
    assignment_bytes,
    build_classic_group_direct,
    create_topic,
    dynamodb_local,
    fmt,
    parse_args,
    percentile,
    range_assign,
    running_serve,
    save_results,
    settle_consumer_group,
    subscription_b64,
    table,
    write_section,
)
from groupcoord.client.errors import GroupcoordError
from groupcoord.client.transport import Transport
from groupcoord.store import capacity

SETTINGS = {"groupcoord.barrier.hold.ms": "0"}
PARTITIONS = 1000
COMMAND = "python -m bench.latency"
Caller = Callable[[str, Any], Call]


def http_caller(transport: Transport) -> Caller:
    """Calls over HTTP with the client's transport, one attempt each (no retries): a 4xx or 5xx
    is the Call's status, as the in-process calls report it."""

    def call(name: str, body: Any) -> Call:
        start = time.perf_counter()
        try:
            reply = transport.call(name, body, retries=0)
            status, answer = reply.status, reply.body
        except GroupcoordError as error:
            if error.status is None:  # no answer at all
                raise
            status, answer = error.status, {"errorMessage": str(error)}
        seconds = time.perf_counter() - start
        return Call(name, status, answer, capacity.Usage(), None, seconds)

    return call


def _b64(data: bytes) -> str:
    import base64

    return base64.b64encode(data).decode()


class Samples(dict[str, list[Call]]):
    """Timed calls per API; a call answered an error stops the run."""

    def add(self, name: str, answer: Call) -> None:
        if answer.status >= 400:
            raise RuntimeError(f"{name}: {answer.status} {answer.body}")
        self.setdefault(name, []).append(answer)


JOIN = {
    "sessionTimeoutMs": 300_000,
    "protocolType": "consumer",
    "protocols": [{"name": "range", "metadata": subscription_b64()}],
}


def scenarios(setup: InProcess, call: Caller, members: int, samples: int) -> dict[str, list[Call]]:
    """Timed calls per API; groups are built directly (setup) so each sample starts alike."""
    found = Samples()
    stable = f"lat-{uuid.uuid4().hex[:8]}"
    ids = build_classic_group_direct(setup, stable, members, partitions=PARTITIONS)
    for i in range(samples):
        stable_samples(found, call, stable, ids, i)
        join_samples(found, setup, call, members)
        completing_samples(found, setup, call, members)
    consumer_samples(found, setup, call, members, samples)
    return found


def stable_samples(found: Samples, call: Caller, stable: str, ids: list[str], i: int) -> None:
    """The calls that change no group's membership: discovery, topics, a Stable group's
    heartbeat, its offsets."""
    found.add(
        "find-coordinator", call("find-coordinator", {"keyType": 0, "coordinatorKeys": ["g"]})
    )
    found.add("metadata (all topics)", call("metadata", {}))
    topic = {"name": f"lat-{uuid.uuid4().hex[:8]}", "numPartitions": 10}
    found.add("create-topics", call("create-topics", {"topics": [topic]}))
    beat = {"groupId": stable, "generationId": 1, "memberId": ids[i % len(ids)]}
    found.add("heartbeat", call("heartbeat", beat))
    for count in (1, 100):
        body = {
            "groupId": stable,
            "generationIdOrMemberEpoch": 1,
            "memberId": ids[0],
            "topics": [
                {
                    "name": TOPIC,
                    "partitions": [
                        {"partitionIndex": p, "committedOffset": i} for p in range(count)
                    ],
                }
            ],
        }
        found.add(
            f"offset-commit ({count} partition{'s' * (count > 1)})", call("offset-commit", body)
        )
    partitions = [{"name": TOPIC, "partitionIndexes": list(range(100))}]
    body = {"groups": [{"groupId": stable, "topics": partitions}]}
    found.add("offset-fetch (100 partitions)", call("offset-fetch", body))


def join_samples(found: Samples, setup: InProcess, call: Caller, members: int) -> None:
    """A new member joins a Stable group: the id request, then the join that opens the
    rebalance (fresh group each time)."""
    fresh = f"lat-{uuid.uuid4().hex[:8]}"
    build_classic_group_direct(setup, fresh, members, partitions=PARTITIONS)
    first = call("join-group", {"groupId": fresh, "memberId": "", **JOIN})
    found.add("join-group (new member, id request)", first)
    found.add(
        "join-group (new member, opens rebalance; 202)",
        call("join-group", {"groupId": fresh, "memberId": first.body["memberId"], **JOIN}),
    )


def completing_samples(found: Samples, setup: InProcess, call: Caller, members: int) -> None:
    """CompletingRebalance: the leader's sync, a follower's, then a leave in Stable."""
    completing = f"lat-{uuid.uuid4().hex[:8]}"
    group_ids = build_classic_group_direct(
        setup, completing, members, partitions=PARTITIONS, stable=False
    )
    sync = {
        "groupId": completing,
        "generationId": 1,
        "protocolType": "consumer",
        "protocolName": "range",
    }
    plan = range_assign(group_ids, PARTITIONS)
    assignments = [
        {"memberId": m, "assignment": _b64(assignment_bytes(p))} for m, p in plan.items()
    ]
    found.add(
        "sync-group (leader)",
        call("sync-group", {**sync, "memberId": group_ids[0], "assignments": assignments}),
    )
    found.add(
        "sync-group (follower, after the leader)",
        call("sync-group", {**sync, "memberId": group_ids[1]}),
    )
    leave = {"groupId": completing, "members": [{"memberId": group_ids[-1]}]}
    found.add("leave-group", call("leave-group", leave))


def consumer_samples(
    found: Samples, setup: InProcess, call: Caller, members: int, samples: int
) -> None:
    """A settled consumer-protocol group's steady heartbeats."""
    sim = ConsumerGroupSim(call, f"lat-{uuid.uuid4().hex[:8]}", members)
    failed = settle_consumer_group(setup, sim)
    if failed is not None:
        print(f"consumer-group-heartbeat not measured: {failed.status} {failed.body}")
        return
    for i in range(samples):
        found.add("consumer-group-heartbeat", sim.beat(sim.ids[i % members]))


def summary(calls: list[Call]) -> tuple[str, str, str]:
    ms = [c.seconds * 1000 for c in calls]
    return tuple(fmt(percentile(ms, q)) for q in (50, 95, 99))  # type: ignore[return-value]


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=30)
    parser.add_argument("--members", type=int, default=10, help="classic group size")
    parser.add_argument("--no-write", action="store_true")
    args = parse_args(parser, argv, samples=2, members=3)
    started = time.perf_counter()
    with dynamodb_local() as endpoint:
        inproc = InProcess(endpoint, SETTINGS)
        create_topic(inproc, TOPIC, PARTITIONS)
        local = scenarios(inproc, inproc.call, args.members, args.samples)
        print(f"in-process done in {time.perf_counter() - started:.0f}s")
        setup = InProcess(endpoint, SETTINGS)
        with running_serve(endpoint, SETTINGS, table=setup.settings.table_name) as url:
            create_topic(setup, TOPIC, PARTITIONS)
            transport = Transport(url, client_id="bench", timeout_s=30)
            remote = scenarios(setup, http_caller(transport), args.members, args.samples)
    elapsed = time.perf_counter() - started
    rows = []
    results: dict[str, Any] = {}
    for name, calls in local.items():
        trips = statistics.median(c.usage.requests for c in calls)
        http = summary(remote[name]) if name in remote else ("", "", "")
        rows.append((name, *summary(calls), *http, fmt(trips), len(calls)))
        results[name] = {
            "inprocess_ms": [c.seconds * 1000 for c in calls],
            "http_ms": [c.seconds * 1000 for c in remote.get(name, [])],
            "round_trips": trips,
        }
    headers = (
        "API call",
        "in-process p50 ms",
        "p95",
        "p99",
        "HTTP p50 ms",
        "p95",
        "p99",
        "DynamoDB round trips",
        "n",
    )
    text = table(headers, rows)
    print(text)
    print(f"took {elapsed:.0f}s")
    if not args.smoke:
        save_results("latency", results)
    if not args.no_write:
        body = "\n\n".join(
            [
                DOC_INTRO.format(members=args.members, samples=args.samples),
                text,
                f"The run took {elapsed:.0f} s.",
            ]
        )
        command = COMMAND if argv is None else f"{COMMAND} {' '.join(argv)}"
        print(f"wrote {write_section('latency', 'Latency per API call', command, body)}")
    return results


DOC_INTRO = """\
Milliseconds per call on this machine, {samples} samples each (p99 of {samples} samples is close
to the maximum). *In-process*: the Lambda handler called with an API Gateway event, DynamoDB
being DynamoDB Local in another process. *HTTP*: `groupcoord serve` (the same handlers behind
werkzeug, its sweeper running) on the same DynamoDB Local, called with the client's transport
(`groupcoord.client.transport`, one attempt per call). Classic groups have {members} members,
built directly (store code) before each sample that changes them;
`groupcoord.barrier.hold.ms=0`, so a join or sync that would be held answers 202 at once. Every
DynamoDB call of a handler waits for the previous one: *round trips* is the count a call waits
for (median), and on AWS, at a few ms per in-region round trip, it sets the latency; DynamoDB
Local's own speed (a few ms per request) sets the times here."""


if __name__ == "__main__":
    main()
