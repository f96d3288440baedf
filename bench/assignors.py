"""Assignors at Kafka's sizes: seconds per assignment of every assignor groupcoord ships, at
100,000 partitions x 2,000 consumers, in the shapes of Kafka's large sticky-assignor tests.

    python -m bench.assignors [--partitions 100000] [--consumers 2000] [--topics 500]
                              [--repeat 3] [--budget 120] [--only NAME,...] [--no-write]

Shapes (Kafka's AbstractStickyAssignorTest testLargeAssignmentAndGroupWithUniformSubscription
and ...WithNonEqualSubscription, at 100,000 partitions instead of their 1,000,000): `uniform`,
every consumer subscribes to all --topics topics (partitions spread evenly over them);
`non-uniform`, the last consumer subscribes to the first topic only.
Per assignor and shape: a cold assignment (nobody owns anything), then, from that answer as
every consumer's owned partitions (previous target for the server's), a reassignment after one
consumer joins and one after one leaves. The pure assignors are called directly, in-process:
the classic client assignors (groupcoord.client.assignors: range, roundrobin, sticky,
cooperative-sticky), the consumer protocol's server assignors (uniform, range) and the streams
sticky task assignor (core/streams/assignor.py; tasks instead of partitions: --partitions
tasks over --topics sub-topologies, one member per process, without standbys and with one
standby of the stateful half).
Each figure is the median of --repeat runs; a run over 30 s is not repeated, and one over
--budget seconds is stopped and shown as "> budget" (its reassignments are then not run).
"""

from __future__ import annotations

import argparse
import os
import signal
import statistics
import sys
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.common import save_results, table, write_section
from groupcoord.client import assignors as classic
from groupcoord.core.consumer import assignors as server
from groupcoord.core.streams import assignor as streams
from groupcoord.core.streams.tasks import TasksTuple
from groupcoord.wire.consumer_protocol import Subscription

COMMAND = "python -m bench.assignors"
NO_REPEAT_OVER_S = 30.0
OPERATIONS = ("cold", "join", "leave")
NOT_RUN = "not run"  # a reassignment whose cold assignment went over the budget
Figure = float | str | None  # seconds, NOT_RUN, or None: stopped at the budget


@dataclass(frozen=True)
class Shape:
    name: str
    topics: dict[str, int]
    subscriptions: dict[str, frozenset[str]]  # consumer -> its topics


def shapes(partitions: int, consumers: int, topic_count: int) -> list[Shape]:
    names = [f"topic-{i:04d}" for i in range(topic_count)]
    per, extra = divmod(partitions, topic_count)
    topics = {t: per + (1 if i < extra else 0) for i, t in enumerate(names)}
    everyone = [f"consumer-{i:05d}" for i in range(consumers)]
    uniform = {c: frozenset(names) for c in everyone}
    non_uniform = {**uniform, everyone[-1]: frozenset(names[:1])}
    return [Shape("uniform", topics, uniform), Shape("non-uniform", topics, non_uniform)]


# An adapter runs one assignor on (shape's topics, consumer -> (topics, owned)) and returns
# consumer -> owned partitions (topic -> partitions), the next run's input.
Owned = dict[str, dict[str, list[int]]]
Adapter = Callable[[Mapping[str, int], Mapping[str, tuple[frozenset[str], Any]]], Owned]


def _classic(fn: Callable[..., Any]) -> Adapter:
    def run(topics, group) -> Owned:
        subscriptions = {
            m: Subscription(topics=sorted(subs), owned_partitions=owned, generation_id=1)
            for m, (subs, owned) in group.items()
        }
        answer = fn(subscriptions, topics)
        found: Owned = {}
        for member, tps in answer.items():
            mine: dict[str, list[int]] = {}
            for topic, partition in tps:
                mine.setdefault(topic, []).append(partition)
            found[member] = mine
        return found

    return run


def _server(fn: server.AssignorFn) -> Adapter:
    def run(topics, group) -> Owned:
        members = [
            server.AssignorMember(m, subs, {t: frozenset(ps) for t, ps in owned.items()})
            for m, (subs, owned) in group.items()
        ]
        answer = fn(members, topics)
        return {m: {t: sorted(ps) for t, ps in a.items()} for m, a in answer.items()}

    return run


def _streams(num_standby: int) -> Adapter:
    """Sub-topologies for topics, tasks for partitions, one member per process; the
    odd-numbered sub-topologies stateful (their standbys counted in the load)."""

    def run(topics, group) -> Owned:
        members = [
            streams.AssignorMember(m, f"process-{m}", TasksTuple.of(active=owned))
            for m, (_, owned) in group.items()
        ]
        stateful = [t for i, t in enumerate(sorted(topics)) if i % 2]
        answer = streams.assign(members, topics, stateful, num_standby)
        return {m: {t: sorted(ps) for t, ps in a.active.items()} for m, a in answer.items()}

    return run


ASSIGNORS: dict[str, Adapter] = {
    "classic range": _classic(classic.assign_range),
    "classic roundrobin": _classic(classic.assign_roundrobin),
    "classic sticky": _classic(classic.assign_sticky),
    "classic cooperative-sticky": _classic(classic.assign_cooperative_sticky),
    "server uniform": _server(server.assign_uniform),
    "server range": _server(server.assign_range),
    "streams sticky (no standby)": _streams(0),
    "streams sticky (1 standby, stateful half)": _streams(1),
}


class OverBudget(Exception):
    pass


@contextmanager
def budget(seconds: float) -> Iterator[None]:
    """Stops the assignor (an exception from a timer signal) once `seconds` have passed."""

    def stop(signum: int, frame: Any) -> None:
        raise OverBudget

    previous = signal.signal(signal.SIGALRM, stop)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def timed(run: Callable[[], Owned], repeat: int, limit: float) -> tuple[float | None, Owned]:
    """The median seconds of `repeat` runs (one when a run is slow) and the answer; None
    when a run went over `limit` seconds."""
    times: list[float] = []
    answer: Owned = {}
    for _ in range(repeat):
        started = time.perf_counter()
        try:
            with budget(limit):
                answer = run()
        except OverBudget:
            return None, {}
        times.append(time.perf_counter() - started)
        if times[-1] > NO_REPEAT_OVER_S:
            break
    return statistics.median(times), answer


def measure(adapter: Adapter, shape: Shape, repeat: int, limit: float) -> dict[str, Figure]:
    """Cold, then a consumer joins, then (from the cold answer again) one leaves."""
    cold_group = {m: (subs, {}) for m, subs in shape.subscriptions.items()}
    cold, owned = timed(lambda: adapter(shape.topics, cold_group), repeat, limit)
    figures: dict[str, Figure] = {"cold": cold, "join": NOT_RUN, "leave": NOT_RUN}
    if cold is None:
        return figures
    warm = {m: (subs, owned.get(m, {})) for m, subs in shape.subscriptions.items()}
    joined = {**warm, "consumer-joiner": (next(iter(shape.subscriptions.values())), {})}
    figures["join"] = timed(lambda: adapter(shape.topics, joined), repeat, limit)[0]
    left = dict(warm)
    del left[next(iter(left))]
    figures["leave"] = timed(lambda: adapter(shape.topics, left), repeat, limit)[0]
    return figures


def _cell(seconds: Figure, limit: float) -> str:
    if seconds is None:
        return f"> {limit:g} s"
    if isinstance(seconds, str):
        return seconds
    return f"{seconds:.3f}" if seconds < 1 else f"{seconds:.2f}"


def main(argv: list[str] | None = None) -> list[dict[str, Any]]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--partitions", type=int, default=100_000)
    parser.add_argument("--consumers", type=int, default=2000)
    parser.add_argument("--topics", type=int, default=500)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--budget", type=float, default=120.0)
    parser.add_argument("--only", default="", help="comma-separated assignor names")
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args(argv)
    only = {n.strip() for n in args.only.split(",") if n.strip()}
    load_before = os.getloadavg()[0]
    rows: list[dict[str, Any]] = []
    for name, adapter in ASSIGNORS.items():
        if only and name not in only:
            continue
        for shape in shapes(args.partitions, args.consumers, args.topics):
            if name.startswith("streams") and shape.name != "uniform":
                continue  # tasks have no subscriptions: one shape
            figures = measure(adapter, shape, args.repeat, args.budget)
            rows.append({"assignor": name, "shape": shape.name, **figures})
            cells = [_cell(figures[op], args.budget) for op in OPERATIONS]
            print(f"{name:42} {shape.name:12} " + "  ".join(f"{c:>10}" for c in cells), flush=True)
    save_results("assignors", rows)
    loads = (load_before, os.getloadavg()[0])
    if not args.no_write:
        body = _body(args, rows, loads)
        write_section("assignors", "Assignors at Kafka's sizes", COMMAND, body, False)
    return rows


def _body(args: argparse.Namespace, rows: list[dict[str, Any]], loads: tuple[float, float]) -> str:
    size = (
        f"{args.partitions:,} partitions over {args.topics:,} topics, {args.consumers:,} "
        f"consumers; seconds per assignment (wall clock, the pure assignor called in-process), "
        f"the median of {args.repeat} runs (one run where a run took over "
        f'{NO_REPEAT_OVER_S:.0f} s; stopped at {args.budget:.0f} s: "> {args.budget:g} s", '
        f'its reassignments then "{NOT_RUN}"). Subscriptions as in Kafka\'s '
        f"AbstractStickyAssignorTest large tests: *uniform*, every consumer on every topic; "
        f"*non-uniform*, the last consumer on the first topic only. *Cold*: nobody owns "
        f"anything; *a consumer joins* / *leaves*: every consumer owns (the server's: has as "
        f"its previous target) the cold answer, then one more consumer subscribes to every "
        f"topic / the first one is gone. Streams: tasks for partitions (sub-topologies for "
        f"topics), one member per process. The machine's 1-minute load average was "
        f"{loads[0]:.1f} at the start and {loads[1]:.1f} at the end (2 cores, shared): "
        f"figures on an idle machine are lower."
    )
    headers = ["assignor", "subscriptions", "cold", "a consumer joins", "a consumer leaves"]
    cells = [
        [r["assignor"], r["shape"], *(_cell(r[op], args.budget) for op in OPERATIONS)] for r in rows
    ]
    return f"{size}\n\n{table(headers, cells)}"


if __name__ == "__main__":
    main()
