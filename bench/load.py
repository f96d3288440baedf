"""Load and soak: N members of both protocols heartbeating and committing over HTTP against one
`groupcoord serve` for M minutes; the heartbeat rate it holds, latency, errors, and the serve
process's memory at the start, after warm-up and at the end.

    python -m bench.load [--members 100] [--minutes 2] [--group-size 10] [--partitions 100]
                         [--store memory|dynamodb-local] [--threads 32] [--no-write]
    python -m bench.load --smoke   # 4 members for 3 s at 0.5 s intervals; writes nothing

Half the members speak the classic protocol (join, sync, heartbeat every
--classic-heartbeat-ms, Kafka's 3 s; 45 s sessions), half the consumer protocol
(consumer-group-heartbeat at the coordinator's interval, 5 s by default); every member commits
its partitions every --commit-ms (Kafka's auto-commit interval, 5 s). Members are simulated
(bench/common.py SimMember, ConsumerGroupSim), driven by a scheduler on a pool of threads:
each sends its next request when it is due, one at a time. Warm-up ends when every group is
Stable; then the window of M minutes is measured. Memory is the serve process's resident set
(VmRSS in /proc/<pid>/status), sampled every 5 s. `serve` keeps its table in its own process
on the default store (the in-memory adapter), so what it holds is part of the figure: commits
rewrite one item per partition and heartbeats rewrite member items, so nothing should grow.
"""

from __future__ import annotations

import argparse
import heapq
import socket
import statistics
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.common import (
    TOPIC,
    Call,
    ConsumerGroupSim,
    SimMember,
    all_stable,
    dynamodb_local,
    fmt,
    parse_args,
    percentile,
    running_serve,
    save_results,
    table,
    write_section,
)
from groupcoord.client.errors import GroupcoordError
from groupcoord.client.transport import Transport
from groupcoord.store import capacity

COMMAND = "python -m bench.load"
CLASSIC_SESSION_MS = 45_000  # Kafka's session.timeout.ms
RSS_EVERY_S = 5.0
HEARTBEATS = ("heartbeat", "consumer-group-heartbeat")

# A call to the coordinator: (API, body) -> its answer.
Caller = Callable[[str, Any], Call]


# --- the serve process ---


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def rss_kb(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise RuntimeError(f"no VmRSS for {pid}")


@contextmanager
def serving(store: str, settings: dict[str, str]) -> Iterator[tuple[str, int]]:
    """`groupcoord serve` on the store asked for: its URL and pid."""
    port = free_port()
    extra = ["--port", str(port)]
    if store == "dynamodb-local":
        with (
            dynamodb_local() as endpoint,
            running_serve(endpoint, settings, extra_args=extra) as url,
        ):
            yield url, url.pid
    else:
        with running_serve(None, settings, extra_args=extra) as url:
            yield url, url.pid


# --- what was measured ---


@dataclass
class Figures:
    """Calls answered in the measured window, per API; the rest are counted as warm-up."""

    lock: threading.Lock = field(default_factory=threading.Lock)
    measuring: bool = False
    seconds: dict[str, list[float]] = field(default_factory=dict)
    codes: dict[str, dict[int, int]] = field(default_factory=dict)
    failed: dict[str, int] = field(default_factory=dict)  # no answer, or an HTTP error
    lateness: list[float] = field(default_factory=list)  # heartbeats: sent after due, s

    def record(self, call: Call, late_s: float) -> None:
        with self.lock:
            if not self.measuring:
                return
            self.seconds.setdefault(call.api, []).append(call.seconds)
            if call.status not in (200, 202):
                self.failed[call.api] = self.failed.get(call.api, 0) + 1
            else:
                for code in _codes(call):
                    per_api = self.codes.setdefault(call.api, {})
                    per_api[code] = per_api.get(code, 0) + 1
            if call.api in HEARTBEATS:
                self.lateness.append(late_s)


def _codes(call: Call) -> list[int]:
    if call.api == "offset-commit":
        return [p["errorCode"] for t in call.body["topics"] for p in t["partitions"]][:1]
    code = call.error_code
    return [] if code is None else [code]


def http_caller(transport: Transport) -> Callable[[str, Any], Call]:
    """One attempt per call (no retries): a transport error is status 0, an HTTP error its
    status, so that every failure is counted, not hidden by a retry."""

    def call(name: str, body: Any) -> Call:
        start = time.perf_counter()
        try:
            reply = transport.call(name, body, retries=0)
            status, answer = reply.status, reply.body
        except GroupcoordError as error:
            status, answer = error.status or 0, {"errorMessage": str(error)}
        return Call(name, status, answer, capacity.Usage(), None, time.perf_counter() - start)

    return call


# --- the members, each driven by the scheduler ---


class Driven:
    """One member: `step()` sends what is due and answers when to call it next (monotonic)."""

    def __init__(self, call: Callable[[str, Any], Call], figures: Figures, commit_s: float) -> None:
        self.call = call
        self.figures = figures
        self.commit_s = commit_s
        self.offset = 0

    def step(self, due: float) -> float:
        raise NotImplementedError

    def commit_body(self) -> dict[str, Any] | None:
        raise NotImplementedError

    def commit(self, due: float) -> float:
        """The auto-commit: what the member holds, every commit interval (on its own
        schedule, beside the heartbeats, as a consumer's poll loop beside its heartbeat
        thread); nothing while it holds nothing."""
        body = self.commit_body()
        if body is not None:
            self.figures.record(self.call("offset-commit", body), 0.0)
        return max(due + self.commit_s, time.monotonic())

    def commit_topics(self, topic: dict[str, str], partitions: list[int]) -> list[dict[str, Any]]:
        self.offset += 1
        entries = [{"partitionIndex": p, "committedOffset": self.offset} for p in partitions]
        return [{**topic, "partitions": entries}]


def _next(due: float, now: float, interval_s: float, steady: bool) -> float:
    """A steady member's next heartbeat is due one interval after this one was due (so that a
    slow answer shows as lateness), without bursts to catch up; others wait from now."""
    return max(due + interval_s, now) if steady else now + interval_s


class Classic(Driven):
    def __init__(self, sim: SimMember, heartbeat_s: float, *args: Any) -> None:
        super().__init__(*args)
        self.sim = sim
        self.heartbeat_s = heartbeat_s

    def step(self, due: float) -> float:
        before = self.sim.state
        late = time.monotonic() - due
        answer = self.sim.step()
        now = time.monotonic()
        if answer is not None:
            self.figures.record(answer, late if before == "stable" else 0.0)
        if self.sim.state != "stable":
            if answer is not None and answer.status == 202:
                return now + answer.body.get("retryAfterMs", 100) / 1000
            # a failed call is retried after a pause, a step forward at once
            return now + (0.5 if answer is None or answer.status != 200 else 0.0)
        return _next(due, now, self.heartbeat_s, before == "stable")

    def commit_body(self) -> dict[str, Any] | None:
        if not self.sim.assigned:
            return None
        return {
            "groupId": self.sim.group_id,
            "generationIdOrMemberEpoch": self.sim.generation,
            "memberId": self.sim.member_id,
            "topics": self.commit_topics({"name": TOPIC}, self.sim.assigned),
        }


class Consumer(Driven):
    def __init__(self, sim: ConsumerGroupSim, member_id: str, *args: Any) -> None:
        super().__init__(*args)
        self.sim = sim
        self.member_id = member_id

    def step(self, due: float) -> float:
        late = time.monotonic() - due
        steady = self.member_id in self.sim.epochs and self.member_id not in self.sim.unacked
        answer = self.sim.beat(self.member_id)
        now = time.monotonic()
        self.figures.record(answer, late if steady else 0.0)
        if answer.status != 200 or answer.error_code != 0:
            if answer.status == 200 and answer.error_code in (25, 110):  # fenced: start over
                self.sim.epochs.pop(self.member_id, None)
                self.sim.unacked.discard(self.member_id)
            return now + 0.5
        if self.member_id in self.sim.unacked:
            return now  # acknowledge a new assignment at once, as clients do
        interval = answer.body.get("heartbeatIntervalMs", 5000) / 1000
        return _next(due, now, interval, steady)

    def commit_body(self) -> dict[str, Any] | None:
        owned = self.sim.owned.get(self.member_id) or []
        if not owned:
            return None
        topics: list[dict[str, Any]] = []
        for tp in owned:
            if tp["partitions"]:
                topics += self.commit_topics({"topicId": tp["topicId"]}, tp["partitions"])
        if not topics:
            return None
        return {
            "groupId": self.sim.group_id,
            "generationIdOrMemberEpoch": self.sim.epochs[self.member_id],
            "memberId": self.member_id,
            "topics": topics,
        }


class Commits:
    """A member's commits as a schedule of their own."""

    def __init__(self, member: Driven) -> None:
        self.member = member

    def step(self, due: float) -> float:
        return self.member.commit(due)


class Scheduler:
    """Calls each member's step when it is due, on a pool of threads; a member is never in
    two steps at once. `late` is how far behind the schedule a step started."""

    def __init__(self, members: list[Driven | Commits], threads: int, spread_s: float) -> None:
        self.lock = threading.Condition()
        start = time.monotonic()
        self.queue = [(start + spread_s * i / max(1, len(members)), i) for i in range(len(members))]
        heapq.heapify(self.queue)
        self.members = members
        self.pool = ThreadPoolExecutor(threads)
        self.stopping = threading.Event()
        self.errors: list[BaseException] = []

    def run_until(self, stop: Callable[[], bool]) -> None:
        while not stop() and not self.errors:
            with self.lock:
                if not self.queue:
                    self.lock.wait(0.1)
                    continue
                due, index = self.queue[0]
                wait = due - time.monotonic()
                if wait > 0:
                    self.lock.wait(min(wait, 0.1))
                    continue
                heapq.heappop(self.queue)
            self.pool.submit(self._step, index, due)
        if self.errors:
            raise self.errors[0]

    def _step(self, index: int, due: float) -> None:
        try:
            following = self.members[index].step(due)
        except BaseException as error:  # stops the run
            self.errors.append(error)
            return
        if self.stopping.is_set():
            return
        with self.lock:
            heapq.heappush(self.queue, (following, index))
            self.lock.notify()

    def stop(self) -> None:
        self.stopping.set()
        self.pool.shutdown(wait=True)


# --- the run ---


@dataclass
class Run:
    members: int
    classic: int
    consumer: int
    groups: int
    warmup_s: float
    window_s: float
    target_hb_s: float
    rss: list[tuple[float, int]]  # (seconds from start, KB)
    rss_start_kb: int
    rss_warm_kb: int
    rss_end_kb: int
    figures: Figures


def warm(
    classic: list[list[SimMember]],
    consumer: list[ConsumerGroupSim],
    partitions: int,
    caller: Callable[[str, Any], Call],
) -> bool:
    """Every group Stable: classic members all holding one generation's assignment, every
    consumer-protocol group Stable by its own description."""
    if not all(all_stable(group, partitions) for group in classic):
        return False
    for sim in consumer:
        answer = caller("consumer-group-describe", {"groupIds": [sim.group_id]})
        if answer.status != 200 or answer.body["groups"][0]["groupState"] != "Stable":
            return False
        if len(sim.epochs) != len(sim.ids) or sim.unacked:
            return False
    return True


@dataclass
class Members:
    """The simulated members: classic groups, consumer-protocol groups, and every member as
    the scheduler drives it."""

    classic: list[list[SimMember]] = field(default_factory=list)
    consumer: list[ConsumerGroupSim] = field(default_factory=list)
    driven: list[Driven] = field(default_factory=list)


def make_members(args: argparse.Namespace, call: Caller, figures: Figures) -> Members:
    """Half the members classic, half consumer protocol, in groups of --group-size."""
    n_classic = args.members // 2
    n_consumer = args.members - n_classic
    size = args.group_size
    commit_s = args.commit_ms / 1000
    found = Members()
    run_id = uuid.uuid4().hex[:6]
    for g, start in enumerate(range(0, n_classic, size)):
        group = [
            SimMember(call, f"load-{run_id}-c{g}", CLASSIC_SESSION_MS, args.partitions, index=i)
            for i in range(min(size, n_classic - start))
        ]
        found.classic.append(group)
        found.driven += [
            Classic(m, args.classic_heartbeat_ms / 1000, call, figures, commit_s) for m in group
        ]
    for g, start in enumerate(range(0, n_consumer, size)):
        sim = ConsumerGroupSim(call, f"load-{run_id}-k{g}", min(size, n_consumer - start))
        found.consumer.append(sim)
        found.driven += [Consumer(sim, m, call, figures, commit_s) for m in sim.ids]
    return found


@contextmanager
def sampling_rss(pid: int, started: float) -> Iterator[list[tuple[float, int]]]:
    """The serve process's VmRSS every RSS_EVERY_S (seconds since `started`, KB), from now."""
    rss: list[tuple[float, int]] = [(0.0, rss_kb(pid))]
    stop = threading.Event()

    def sample() -> None:
        while not stop.wait(RSS_EVERY_S):
            rss.append((time.monotonic() - started, rss_kb(pid)))

    threading.Thread(target=sample, daemon=True).start()
    try:
        yield rss
    finally:
        stop.set()


def warm_up(scheduler: Scheduler, members: Members, args: argparse.Namespace, call: Caller) -> None:
    """Drive the members until every group is Stable (checked every 2 s)."""
    warm_deadline = time.monotonic() + args.warmup_max_s
    checked = [0.0]

    def warmed() -> bool:
        if time.monotonic() > warm_deadline:
            raise RuntimeError(f"the groups were not Stable within {args.warmup_max_s}s")
        if time.monotonic() - checked[0] < 2.0:
            return False
        checked[0] = time.monotonic()
        return warm(members.classic, members.consumer, args.partitions, call)

    scheduler.run_until(warmed)


def measure_window(scheduler: Scheduler, figures: Figures, minutes: float) -> float:
    """Drive the members for the measured window, recording their calls: its length, s."""
    with figures.lock:
        figures.measuring = True
    window_start = time.monotonic()
    window_end = window_start + minutes * 60
    scheduler.run_until(lambda: time.monotonic() >= window_end)
    with figures.lock:
        figures.measuring = False
    return time.monotonic() - window_start


def run(args: argparse.Namespace) -> Run:
    settings = {"group.consumer.heartbeat.interval.ms": str(args.consumer_heartbeat_ms)}
    if args.consumer_heartbeat_ms < 5000:
        settings["group.consumer.min.heartbeat.interval.ms"] = str(args.consumer_heartbeat_ms)
    figures = Figures()
    started = time.monotonic()
    with serving(args.store, settings) as (url, pid):
        with sampling_rss(pid, started) as rss:
            call = http_caller(Transport(url, client_id="bench-load", timeout_s=10))
            topic = {"name": TOPIC, "numPartitions": args.partitions}
            created = call("create-topics", {"topics": [topic]})
            if created.status != 200 or created.body["topics"][0]["errorCode"] not in (0, 36):
                raise RuntimeError(f"create-topics: {created.status} {created.body}")
            members = make_members(args, call, figures)
            commits = [Commits(d) for d in members.driven]
            commit_s = args.commit_ms / 1000
            scheduler = Scheduler([*members.driven, *commits], args.threads, spread_s=commit_s)
            try:
                warm_up(scheduler, members, args, call)
                warmup_s = time.monotonic() - started
                rss_warm = rss_kb(pid)
                rss.append((warmup_s, rss_warm))
                print(f"warm after {warmup_s:.0f}s: RSS {rss_warm / 1024:.1f} MiB", flush=True)
                window_s = measure_window(scheduler, figures, args.minutes)
            finally:
                scheduler.stop()
        rss_end = rss_kb(pid)
        rss.append((time.monotonic() - started, rss_end))
    n_classic = sum(len(g) for g in members.classic)
    n_consumer = args.members - n_classic
    target = n_classic / (args.classic_heartbeat_ms / 1000) + n_consumer / (
        args.consumer_heartbeat_ms / 1000
    )
    return Run(
        members=args.members,
        classic=n_classic,
        consumer=n_consumer,
        groups=len(members.classic) + len(members.consumer),
        warmup_s=warmup_s,
        window_s=window_s,
        target_hb_s=target,
        rss=rss,
        rss_start_kb=rss[0][1],
        rss_warm_kb=rss_warm,
        rss_end_kb=rss_end,
        figures=figures,
    )


def slope_kb_per_min(samples: list[tuple[float, int]]) -> float:
    """Least-squares growth of the samples, KB per minute."""
    if len(samples) < 2:
        return 0.0
    xs = [t / 60 for t, _ in samples]
    ys = [float(kb) for _, kb in samples]
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    den = sum((x - mx) ** 2 for x in xs)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / den if den else 0.0


def mib(kb: float) -> str:
    return f"{kb / 1024:.1f}"


def summary_table(result: Run, args: argparse.Namespace) -> str:
    """Heartbeats and commits held against the rates due, lateness, failures."""
    f = result.figures
    heartbeats = sum(len(f.seconds.get(api, [])) for api in HEARTBEATS)
    commits = len(f.seconds.get("offset-commit", []))
    lateness = [s * 1000 for s in f.lateness] or [0.0]
    return table(
        (
            "members (classic + consumer)",
            "groups",
            "window",
            "heartbeats/s held (due)",
            "heartbeat sent late p50 / p99 ms",
            "commits/s (due)",
            "no answer or HTTP error",
            "refused (errorCode ≠ 0)",
        ),
        [
            (
                f"{result.members} ({result.classic} + {result.consumer})",
                result.groups,
                f"{result.window_s / 60:.1f} min",
                f"{heartbeats / result.window_s:.1f} ({result.target_hb_s:.1f})",
                f"{fmt(percentile(lateness, 50))} / {fmt(percentile(lateness, 99))}",
                f"{commits / result.window_s:.1f} ({result.members / args.commit_ms * 1000:.1f})",
                failed_calls(f),
                refused_calls(f),
            )
        ],
    )


def failed_calls(f: Figures) -> int:
    return sum(f.failed.values())


def refused_calls(f: Figures) -> int:
    return sum(n for per_api in f.codes.values() for c, n in per_api.items() if c != 0)


def latency_table(f: Figures) -> str:
    """p50 / p99 / max per API, and the error codes answered."""
    rows = []
    for api in sorted(f.seconds):
        ms = [s * 1000 for s in f.seconds[api]]
        codes = ", ".join(f"{c}: {n}" for c, n in sorted(f.codes.get(api, {}).items()))
        rows.append(
            (
                api,
                len(ms),
                fmt(percentile(ms, 50)),
                fmt(percentile(ms, 99)),
                fmt(max(ms)),
                f.failed.get(api, 0),
                codes,
            )
        )
    return table(
        ("API call", "calls", "p50 ms", "p99 ms", "max ms", "no answer / HTTP error", "errorCodes"),
        rows,
    )


def memory_table(result: Run) -> str:
    """The serve process's resident memory at the start, after warm-up, at the end; its trend."""
    window = [kb for t, kb in result.rss if t >= result.warmup_s]
    trend = slope_kb_per_min([s for s in result.rss if s[0] >= result.warmup_s])
    return table(
        (
            "serve RSS, MiB: start",
            "after warm-up",
            "end",
            "growth after warm-up",
            "trend after warm-up",
            "max",
            "samples",
        ),
        [
            (
                mib(result.rss_start_kb),
                mib(result.rss_warm_kb),
                mib(result.rss_end_kb),
                f"{(result.rss_end_kb - result.rss_warm_kb) / 1024:+.1f}",
                f"{trend / 1024:+.2f} MiB/min",
                mib(max(window or [result.rss_end_kb])),
                len(result.rss),
            )
        ],
    )


def report(result: Run, args: argparse.Namespace) -> tuple[str, dict[str, Any]]:
    f = result.figures
    heartbeats = sum(len(f.seconds.get(api, [])) for api in HEARTBEATS)
    commits = len(f.seconds.get("offset-commit", []))
    text = "\n\n".join([summary_table(result, args), latency_table(f), memory_table(result)])
    data = {
        "members": result.members,
        "window_s": result.window_s,
        "heartbeats_per_s": heartbeats / result.window_s,
        "target_heartbeats_per_s": result.target_hb_s,
        "commits_per_s": commits / result.window_s,
        "failed": failed_calls(f),
        "refused": refused_calls(f),
        "latency_ms": {api: [s * 1000 for s in v] for api, v in f.seconds.items()},
        "rss_kb": result.rss,
        "store": args.store,
    }
    return text, data


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--members", type=int, default=100, help="half classic, half consumer")
    parser.add_argument("--minutes", type=float, default=2.0, help="the measured window")
    parser.add_argument("--group-size", type=int, default=10)
    parser.add_argument("--partitions", type=int, default=100, help="of the one topic")
    parser.add_argument("--classic-heartbeat-ms", type=int, default=3000)
    parser.add_argument("--consumer-heartbeat-ms", type=int, default=5000)
    parser.add_argument("--commit-ms", type=int, default=5000)
    parser.add_argument("--store", choices=("memory", "dynamodb-local"), default="memory")
    parser.add_argument("--threads", type=int, default=32)
    parser.add_argument("--warmup-max-s", type=float, default=180.0)
    parser.add_argument("--no-write", action="store_true")
    args = parse_args(
        parser,
        argv,
        members=4,
        minutes=0.05,
        group_size=2,
        partitions=4,
        classic_heartbeat_ms=500,
        consumer_heartbeat_ms=500,
        commit_ms=500,
        threads=4,
    )
    started = time.perf_counter()
    result = run(args)
    elapsed = time.perf_counter() - started
    text, data = report(result, args)
    print(text)
    print(f"took {elapsed:.0f}s")
    if not args.smoke:
        save_results("load", data)
    if not args.no_write:
        body = "\n\n".join(
            [
                DOC_INTRO.format(
                    members=args.members,
                    minutes=f"{args.minutes:g}",
                    store=args.store,
                    size=args.group_size,
                    partitions=args.partitions,
                    classic_s=args.classic_heartbeat_ms / 1000,
                    consumer_s=args.consumer_heartbeat_ms / 1000,
                    commit_s=args.commit_ms / 1000,
                ),
                text,
                f"Warm-up took {result.warmup_s:.0f} s; the run took {elapsed:.0f} s.",
            ]
        )
        command = " ".join([COMMAND, *(sys.argv[1:] if argv is None else argv)])
        print(f"wrote {write_section('load', 'Load and soak', command, body)}")
    return data


DOC_INTRO = """\
{members} members, half classic (heartbeat every {classic_s:g} s, 45 s sessions), half consumer
protocol (every {consumer_s:g} s), in groups of {size} on one topic of {partitions} partitions,
each committing its partitions every {commit_s:g} s, over HTTP against one `groupcoord serve`
(store: {store}) for {minutes} minutes after warm-up (every group Stable). The load generator
shares the machine's cores with `serve`. *Held*: heartbeats answered per second in the window,
against the rate due; *sent late*: how far behind its schedule a steady heartbeat went out.
Memory: the serve process's resident set (VmRSS), sampled every 5 s; the trend is the
least-squares slope of the samples after warm-up."""


if __name__ == "__main__":
    main()
