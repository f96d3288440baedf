"""Push (docs/sessions.md, "Push") measured with real processes: `groupcoord serve` on DynamoDB
Local and every member an OS process of its own (bench/push_member.py: the Python client's
GroupMember as a user runs it), so that a SIGKILL is a real one and the dead member's socket
closes as a dead process's does. Push on (serve's default) and off (`serve --no-push`) side by
side, at the coordinator's default settings (5 s heartbeat, 45 s session, 1 s disconnect
grace), `--runs` runs each (after one untimed run: the engines' warm-up) of:

- cold start: `--members` members join a new group of `--partitions` partitions at once, until
  it is balanced (every partition owned by one member, each member its share);
- handoff: a member leaves gracefully (GroupMember.close()), until the others own every
  partition it held;
- joiner: a member joins the balanced group, until it owns its share;
- kill: a member's process is SIGKILLed, until the others own every partition it held.

Every member reports each change of what it owns (its rebalance listener's calls) stamped
with the machine's monotonic clock; every run is checked for a partition owned by two live
members at once, which fails the run (bench/ownership.py). Times are from the leaving
member's close(), the joiner's start, the SIGKILL, the first member's start.

`--modes zookeeper`: the same moves side by side with ZooKeeper's recipe on the same machine
in the same run: 16 members, 64 partitions, 6 s sessions, 2 s heartbeats; groupcoord with push,
and a standalone ZooKeeper (bench/zookeeper.py) with kazoo's SetPartitioner in each member
process (`time_boundary` `--zk-time-boundary`). Skipped, saying what to install, when Java,
ZooKeeper or kazoo is missing (`pip install -e ".[bench]"` brings kazoo).

`--modes kinesis,streams`: bench.kinesis's SIGTERM handoff and SIGKILL failover of a Kinesis
worker process, and bench.streams_failover's SIGKILL of the active's process (the time until
the warm standby serves the task), at the default settings with push on (`--kinesis-runs`,
`--streams-runs`, 20 each) and off (`--no-push-runs`, 5: a SIGKILL waits out the 45 s
session): they run the clients as they are.

    python -m bench.push [--runs 20] [--modes push,poll,zookeeper,kinesis,streams]
    python -m bench.push --render      # the section again from bench/.results/push.json
    python -m bench.push --smoke       # 3 members, 6 partitions, 1 run, push on; writes nothing

Each mode's figures are saved in bench/.results/push.json (merged, so modes may be run
apart) and the section is written from all the saved modes.
"""

from __future__ import annotations

import argparse
import os
import signal
import statistics
import sys
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.common import (
    dynamodb_local,
    kinesis_local,
    load_results,
    parse_args,
    percentile,
    running_serve,
    save_results,
    write_section,
)
from bench.push_cluster import Cluster, Run
from bench.zookeeper import missing, running_zookeeper
from groupcoord.client.transport import Transport

COMMAND = "python -m bench.push"
TITLE = "Push: handoff, kill, cold start, joiner"
MODES = ("push", "poll", "zookeeper", "kinesis", "streams")
MOVES = ("handoff", "kill", "cold start", "joiner")
TARGETS = {"handoff": 1.0, "kill": 2.0, "cold start": 2.0, "joiner": 1.0}
DEFAULT_SESSION_MS = 45_000
# The side-by-side's settings (issue's): 6 s sessions, 2 s heartbeats, for both systems.
ZK_SESSION_MS, ZK_HEARTBEAT_MS = 6000, 2000
ZK_SETTINGS = {
    "group.consumer.session.timeout.ms": str(ZK_SESSION_MS),
    "group.consumer.min.session.timeout.ms": str(ZK_SESSION_MS),
    "group.consumer.heartbeat.interval.ms": str(ZK_HEARTBEAT_MS),
    "group.consumer.min.heartbeat.interval.ms": str(ZK_HEARTBEAT_MS),
}
CLIENT_TARGET = 2.0  # each of the client moves, p99 with push
CLIENT_MOVES = (
    ("kinesis", "Kinesis worker process (examples/kinesis_counts.py)"),
    ("streams", "streams active's process, to the warm standby serving"),
)
GROUPCOORD, NO_PUSH, ZOOKEEPER = "groupcoord, push", "groupcoord, no push", "ZooKeeper + kazoo"
Results = dict[str, Any]


def _wait_s(session_ms: int) -> float:
    """How long a move may take before the run fails: a session and then some."""
    return 3 * session_ms / 1000 + 60


def create_topic(url: str, partitions: int) -> str:
    topic = f"push-{uuid.uuid4().hex[:8]}"
    body = {"topics": [{"name": topic, "numPartitions": partitions}]}
    answer = Transport(url).call("create-topics", body).body
    code = answer["topics"][0].get("errorCode", 0)
    if code:
        raise RuntimeError(f"create-topics answered {code}")
    return topic


def groupcoord_join(url: str, topic: str, session_ms: int) -> Callable[[str], dict[str, Any]]:
    def join(group: str) -> dict[str, Any]:
        return {"op": "join", "system": "groupcoord", "url": url, "group": group,
                "topic": topic, "session_ms": session_ms}  # fmt: skip

    return join


def runs_of(cluster: Cluster, members: int, runs: int, label: str) -> dict[str, Any]:
    """`runs` runs on the cluster, printed as they go; their figures by move. One untimed
    run first: the first group on a fresh coordinator pays its engines' warm-up (DynamoDB
    Local's or ZooKeeper's JVM compiling, the server's first imports), not the group's cold
    start. Its failures count all the same."""
    warm_up = cluster.run(f"push-{uuid.uuid4().hex[:10]}", members)
    print(f"{label} warm-up (untimed): {warm_up.failures or 'no overlap'}", flush=True)
    done: list[Run] = []
    for i in range(runs):
        run = cluster.run(f"push-{uuid.uuid4().hex[:10]}", members)
        done.append(run)
        times = ", ".join(f"{m} {s:.2f} s" for m, s in run.seconds.items())
        print(f"{label} run {i + 1}/{runs}: {times}; {run.failures or 'no overlap'}", flush=True)
    return {
        "seconds": {m: [r.seconds[m] for r in done if m in r.seconds] for m in MOVES},
        "paused": {m: [r.paused[m] for r in done if m in r.paused] for m in MOVES},
        "failures": [f"warm-up: {f}" for f in warm_up.failures]
        + [f for r in done for f in r.failures],
        "runs": runs,
        "events": [r.events for r in done],
    }


@contextmanager
def cluster_of(members: int, partitions: int, join: Any, session_ms: int) -> Iterator[Cluster]:
    cluster = Cluster(members, partitions, join, _wait_s(session_ms))
    try:
        yield cluster
    finally:
        cluster.close()


def measure_groupcoord(push: bool, args: argparse.Namespace) -> dict[str, Any]:
    """groupcoord at the default settings, push on or off."""
    with dynamodb_local() as endpoint, running_serve(endpoint, push=push) as url:
        join = groupcoord_join(url, create_topic(url, args.partitions), DEFAULT_SESSION_MS)
        with cluster_of(args.members, args.partitions, join, DEFAULT_SESSION_MS) as cluster:
            label = GROUPCOORD if push else NO_PUSH
            return {label: runs_of(cluster, args.members, args.runs, label)}


def measure_zookeeper(args: argparse.Namespace) -> dict[str, Any] | None:
    """The side-by-side: groupcoord (push) and ZooKeeper's recipe at 6 s sessions."""
    why = missing()
    if why is not None:
        print(f"ZooKeeper's side-by-side skipped: {why}", flush=True)
        return None
    found: dict[str, Any] = {}
    with dynamodb_local() as endpoint, running_serve(endpoint, ZK_SETTINGS) as url:
        join = groupcoord_join(url, create_topic(url, args.partitions), ZK_SESSION_MS)
        with cluster_of(args.members, args.partitions, join, ZK_SESSION_MS) as cluster:
            found[GROUPCOORD] = runs_of(cluster, args.members, args.runs, "groupcoord")
    with running_zookeeper() as hosts:

        def zk_join(group: str) -> dict[str, Any]:
            return {"op": "join", "system": "zookeeper", "hosts": hosts, "group": group,
                    "partitions": args.partitions, "session_ms": ZK_SESSION_MS,
                    "time_boundary_s": args.zk_time_boundary}  # fmt: skip

        with cluster_of(args.members, args.partitions, zk_join, ZK_SESSION_MS) as cluster:
            found[ZOOKEEPER] = runs_of(cluster, args.members, args.runs, "ZooKeeper")
    return found


def measure_kinesis(args: argparse.Namespace) -> dict[str, Any]:
    """bench.kinesis's moves of a worker process (SIGTERM, SIGKILL), push on and off."""
    import boto3

    from bench import kinesis as kb

    for name, value in (("AWS_ACCESS_KEY_ID", "bench"), ("AWS_SECRET_ACCESS_KEY", "bench"),
                        ("AWS_DEFAULT_REGION", "us-east-1")):  # fmt: skip
        os.environ.setdefault(name, value)
    found: dict[str, Any] = {}
    with kinesis_local() as kinesis_url, dynamodb_local() as endpoint:
        os.environ["AWS_ENDPOINT_URL_KINESIS"] = kinesis_url  # the example worker's too
        client = boto3.client("kinesis", endpoint_url=kinesis_url)
        table = kb.sink_table(endpoint)
        for push in (True, False):
            settings = {"groupcoord.sink.tables": table}
            with running_serve(endpoint, settings, push=push) as url:
                transport = Transport(url)

                def api(name: str, body: Any, t: Transport = transport) -> Any:
                    return t.call(name, body).body

                seconds: dict[str, list[float]] = {"SIGTERM": [], "SIGKILL": []}
                for _ in range(args.kinesis_runs if push else args.no_push_runs):
                    for signal_name, kill in (("SIGTERM", False), ("SIGKILL", True)):
                        took = kb.moves(url, api, client, table, kill=kill)
                        seconds[signal_name].append(took)
                        print(f"kinesis push={push} {signal_name}: {took:.2f} s", flush=True)
            found[GROUPCOORD if push else NO_PUSH] = {"seconds": seconds, "failures": []}
    return found


def measure_streams(args: argparse.Namespace) -> dict[str, Any]:
    """bench.streams_failover's SIGKILL of the active's process, warm standby, push on/off,
    at the coordinator's default settings (its 45 s session, 5 s heartbeat) but one standby."""
    from bench import streams_failover as sf

    settings = {"group.streams.num.standby.replicas": "1"}
    found: dict[str, Any] = {}
    with dynamodb_local() as endpoint:
        for push in (True, False):
            with running_serve(endpoint, settings, push=push) as url:
                times = []
                for _ in range(args.streams_runs if push else args.no_push_runs):
                    active, _whole = sf.run_once(url, args.streams_keys, standby=True)
                    times.append(active)
                    print(f"streams push={push}: {active:.2f} s", flush=True)
            found[GROUPCOORD if push else NO_PUSH] = {"seconds": {"SIGKILL": times},
                                                      "failures": []}  # fmt: skip
    return found


def load_average() -> str:
    try:
        return ", ".join(f"{x:.1f}" for x in os.getloadavg())
    except OSError:
        return "?"


def measure(mode: str, args: argparse.Namespace) -> dict[str, Any] | None:
    started, load = datetime.now(UTC), load_average()
    if mode in ("push", "poll"):
        systems = measure_groupcoord(mode == "push", args)
    elif mode == "zookeeper":
        systems = measure_zookeeper(args)
    elif mode == "kinesis":
        systems = measure_kinesis(args)
    else:
        systems = measure_streams(args)
    if systems is None:
        return None
    minutes = (datetime.now(UTC) - started).total_seconds() / 60
    return {
        "systems": systems,
        "when": started.strftime("%Y-%m-%d %H:%M UTC"),
        "load": f"{load} at the start, {load_average()} at the end",
        "minutes": round(minutes, 1),
        "members": args.members,
        "partitions": args.partitions,
    }


# --- the section ---


def _stats(values: list[float]) -> str:
    if not values:
        return "-"
    return f"{statistics.median(values):.2f} / {percentile(values, 99):.2f} s"


def _mark(values: list[float], target: float) -> str:
    if not values:
        return "-"
    return "met" if percentile(values, 99) <= target else "**missed**"


def _caption(found: dict[str, Any]) -> str:
    return (f"measured {found['when']} in {found['minutes']} min, load average "
            f"{found['load']}")  # fmt: skip


def _failures(found: dict[str, Any]) -> str:
    lines = []
    for system, figures in found["systems"].items():
        failures = figures.get("failures", [])
        state = "none" if not failures else f"{len(failures)}: " + "; ".join(failures[:5])
        lines.append(f"{system}: runs failed (an overlap, an error or a move not done): {state}")
    return "\n".join(f"- {line}" for line in lines)


def default_table(results: Results) -> str:
    push, poll = results.get("push"), results.get("poll")
    if push is None and poll is None:
        return "(not run: `--modes push,poll`)"
    head = ["move", "runs", "push: median / p99", "no push: median / p99", "target (p99, push)",
            "push meets it"]  # fmt: skip
    rows = []
    for move in MOVES:
        on = push["systems"][GROUPCOORD]["seconds"][move] if push else []
        off = poll["systems"][NO_PUSH]["seconds"][move] if poll else []
        rows.append([move, f"{len(on)} / {len(off)}", _stats(on), _stats(off),
                     f"<= {TARGETS[move]:.0f} s", _mark(on, TARGETS[move])])  # fmt: skip
    captions = [f"push {_caption(push)}" for _ in [0] if push] + [
        f"no push {_caption(poll)}" for _ in [0] if poll
    ]
    notes = "\n".join(_failures(found) for found in (push, poll) if found)
    return _table(head, rows) + "\n\n" + "; ".join(captions) + ".\n\n" + notes


def zookeeper_table(results: Results) -> str:
    found = results.get("zookeeper")
    if found is None:
        return "(not run: `--modes zookeeper`, which needs " + missing_hint() + ")"
    gc, zk = found["systems"][GROUPCOORD], found["systems"][ZOOKEEPER]
    head = ["move", "runs", "groupcoord (push): median / p99", "ZooKeeper: median / p99",
            "faster (median)", "paused partitions, median: groupcoord / ZooKeeper"]  # fmt: skip
    rows = []
    for move in MOVES:
        a, b = gc["seconds"][move], zk["seconds"][move]
        faster = _faster(a, b)
        pa, pb = gc["paused"].get(move, []), zk["paused"].get(move, [])
        pa, pb = ([], []) if move == "cold start" else (pa, pb)
        paused = (f"{statistics.median(pa):.0f} / {statistics.median(pb):.0f}"
                  if pa and pb else "-")  # fmt: skip
        rows.append([move, f"{len(a)} / {len(b)}", _stats(a), _stats(b), faster, paused])
    return _table(head, rows) + f"\n\n{_caption(found)}.\n\n" + _failures(found)


def _faster(groupcoord: list[float], zookeeper: list[float]) -> str:
    if not groupcoord or not zookeeper:
        return "-"
    if statistics.median(groupcoord) < statistics.median(zookeeper):
        return "groupcoord"
    return "**ZooKeeper**"


def missing_hint() -> str:
    return "Java, ZooKeeper and kazoo (bench/zookeeper.py)"


def clients_table(results: Results) -> str:
    rows = []
    for mode, what in CLIENT_MOVES:
        found = results.get(mode)
        if found is None:
            rows.append([what, "-", "(not run)", "(not run)", "<= 2 s", "-"])
            continue
        on, off = found["systems"][GROUPCOORD]["seconds"], found["systems"][NO_PUSH]["seconds"]
        for signal_name in on:
            a, b = on[signal_name], off.get(signal_name, [])
            rows.append([f"{what}: {signal_name}", f"{len(a)} / {len(b)}", _stats(a), _stats(b),
                         f"<= {CLIENT_TARGET:.0f} s", _mark(a, CLIENT_TARGET)])  # fmt: skip
    head = ["move", "runs", "push: median / p99", "no push: median / p99", "target (p99, push)",
            "push meets it"]  # fmt: skip
    captions = [f"{m}: {_caption(results[m])}" for m in ("kinesis", "streams") if m in results]
    return _table(head, rows) + "\n\n" + "; ".join(captions) + ("." if captions else "")


def _table(head: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(head) + " |", "|" + "|".join("---" for _ in head) + "|"]
    return "\n".join(lines + ["| " + " | ".join(r) + " |" for r in rows])


def render(results: Results, args: argparse.Namespace) -> str:
    size = results.get("push") or results.get("poll") or {}
    members = size.get("members", args.members)
    partitions = size.get("partitions", args.partitions)
    return "\n\n".join([
        INTRO.format(members=members, partitions=partitions),
        "### At the default settings (5 s heartbeat, 45 s session, 1 s grace)",
        default_table(results),
        ZK_INTRO.format(boundary=args.zk_time_boundary),
        zookeeper_table(results),
        CLIENTS_INTRO,
        clients_table(results),
    ])  # fmt: skip


INTRO = """\
Real processes on one machine (2 cores shared with four other engineers' test runs and the
lead's: the load averages below): DynamoDB Local, `groupcoord serve` on it (push on, its
default, and `--no-push`), and {members} member processes (bench/push_member.py: the Python
client's GroupMember), on a topic of {partitions} partitions, the uniform assignor. Times from
the leaving member's close(), the SIGKILL, the joiner's start, the first member's start; until
the others own every partition the leaver (the killed member) held, until the joiner owns its
share, until the group is balanced. p99 is the nearest rank: of 20 runs, their maximum. Each
system first runs one round untimed (the first group on a fresh coordinator pays its engines'
warm-up: DynamoDB Local's or ZooKeeper's JVM, the server's first imports). Every
member reports each change of what it owns (its rebalance listener's calls) on the machine's
monotonic clock, and every run is checked for a partition owned by two live members at once
(a failure of the run, listed under each table)."""

ZK_INTRO = """\
### Side by side with ZooKeeper's recipe

The same moves, same machine, same run: 16 members, 64 partitions, 6 s sessions, 2 s
heartbeats. groupcoord with push (`group.consumer.session.timeout.ms` and its minimum 6000,
`group.consumer.heartbeat.interval.ms` and its minimum 2000); ZooKeeper 3.8 standalone (its
defaults: tickTime 2 s) with kazoo's SetPartitioner in every member process, `time_boundary`
{boundary:g} s (how long the party must be still before the set is divided), kazoo's session
timeout 6 s (it pings every 2 s). "Paused partitions": partitions a member other than the one
that left, joined or died gave up during the move and owns again after it (work stopped for
nothing: ZooKeeper's recipe releases every member's whole set on every change)."""

CLIENTS_INTRO = """\
### Kinesis workers and streams failover, as their clients are

At the coordinator's default settings (5 s heartbeat, 45 s session, 1 s disconnect grace), with
`serve`'s push on and off: bench.kinesis's moves (a worker process, examples/kinesis_counts.py,
SIGTERMed right after the survivor's share came, or SIGKILLed; to the survivor's first record
of the shard; the survivor a KinesisConsumer at its defaults, GetRecords 1 s apart) and
bench.streams_failover's (examples/streams_counter.py, one standby replica, the active's
process SIGKILLed, to the warm standby serving the task). KinesisConsumer runs a GroupMember;
both it and StreamsMember use push when `serve` offers it. Without push a SIGKILL waits out the
session, so fewer runs (`--no-push-runs`)."""


def main(argv: list[str] | None = None) -> Results:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--members", type=int, default=16)
    parser.add_argument("--partitions", type=int, default=64)
    parser.add_argument("--modes", default=",".join(MODES), help="comma-separated: " +
                        ", ".join(MODES))  # fmt: skip
    parser.add_argument("--zk-time-boundary", type=float, default=1.0)
    parser.add_argument("--kinesis-runs", type=int, default=20, help="each signal, push on")
    parser.add_argument("--streams-runs", type=int, default=20, help="push on")
    no_push = "kinesis and streams without push (a kill waits out the session)"
    parser.add_argument("--no-push-runs", type=int, default=5, help=no_push)
    parser.add_argument("--streams-keys", type=int, default=1000)
    parser.add_argument("--render", action="store_true", help="write the saved figures only")
    parser.add_argument("--no-write", action="store_true", help="print, leave the docs alone")
    args = parse_args(parser, argv, runs=1, members=3, partitions=6, modes="push")
    modes = [m for m in args.modes.split(",") if m]
    unknown = set(modes) - set(MODES)
    if unknown:
        parser.error(f"unknown modes: {', '.join(sorted(unknown))}")
    # A SIGTERM stops the run as Ctrl-C does: serve, ZooKeeper and the members stopped.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    results: Results = {}
    for mode in [] if args.render else modes:
        found = measure(mode, args)
        if found is not None:
            results[mode] = found
    if not args.smoke:
        results = {**(load_results("push") or {}), **results}
        save_results("push", results)
    body = render(results, args)
    print(body)
    if not args.no_write:
        write_section("push", TITLE, COMMAND, body)
    return results


if __name__ == "__main__":
    main()
