"""Failover of a stateful streams task to a warm standby against a cold rebuild (docs/streams.md):
examples/streams_counter.py as a user runs it, two processes on a `groupcoord serve` started
here; the process holding the task active is SIGKILLed, and the survivor is queried until it
serves the task again with the whole state.

    python -m bench.streams_failover [--keys 10000,100000] [--store memory|dynamodb-local]
                                     [--runs 1] [--no-write]
    python -m bench.streams_failover --smoke   # a state of 20 keys; writes nothing

One task (one input partition) whose state is `keys` distinct counts, so its changelog holds
`keys` records. With `group.streams.num.standby.replicas` 1 the survivor held the task as a
standby and tailed the changelog into its own state; with 0 it holds nothing and rebuilds the
state from the whole changelog once it is given the task. Two times from the SIGKILL: until
the survivor answers a query for the task itself (it holds the task active: the coordinator
expired the dead member and moved the task), and until that answer is the right count of the
changelog's last key (the state is whole). The session timeout is short (stated in the
output), as the failure detection it bounds is the same in both cases.
"""

from __future__ import annotations

import argparse
import http.client
import json
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.common import dynamodb_local, fmt, parse_args, running_serve, table, write_section

COMMAND = "python -m bench.streams_failover"
EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "streams_counter.py"
SESSION_MS, HEARTBEAT_MS = 2000, 250
SETTINGS = {
    "group.streams.session.timeout.ms": str(SESSION_MS),
    "group.streams.min.session.timeout.ms": "1000",
    "group.streams.heartbeat.interval.ms": str(HEARTBEAT_MS),
    "group.streams.min.heartbeat.interval.ms": "100",
    "group.streams.initial.rebalance.delay.ms": "100",
    "group.streams.assignment.interval.ms": "0",
    "groupcoord.sweep.interval.ms": "200",
}
POLL_S = 0.01
WAIT_S = 120.0


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def query(port: int, key: str) -> tuple[int, int | None]:
    """The status a process answers for task 0's `key` (no redirect followed), its count when
    it answered itself; (0, None) when it does not answer."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
    try:
        connection.request("GET", f"/count/0/{key}")
        response = connection.getresponse()
        body = response.read()
        count = json.loads(body)["count"] if response.status == 200 else None
        return response.status, count
    except (OSError, http.client.HTTPException, ValueError):
        return 0, None
    finally:
        connection.close()


def wait_for(what: str, check: object, timeout: float = WAIT_S) -> None:
    deadline = time.monotonic() + timeout
    while not check():  # type: ignore[operator]
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out waiting for {what}")
        time.sleep(0.05)


@dataclass
class Process:
    name: str
    port: int
    state: Path
    popen: subprocess.Popen[bytes]


@contextmanager
def processes(url: str, data: Path, group: str, last_key: str) -> Iterator[list[Process]]:
    """Two example processes, the second started once the first counted the input (so the
    first holds the task active)."""
    started: list[Process] = []
    try:
        for name in ("a", "b"):
            port, state = free_port(), data.parent / f"state-{name}"
            log = (data.parent / f"{name}.log").open("w")
            command = [sys.executable, str(EXAMPLE), str(data), "--url", url, "--group", group,
                       "--state", str(state), "--port", str(port)]  # fmt: skip
            popen = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
            started.append(Process(name, port, state, popen))
            if name == "a":
                wait_for("the input counted", lambda p=port: query(p, last_key) == (200, 1))
        yield started
    finally:
        for p in started:
            if p.popen.poll() is None:
                p.popen.send_signal(signal.SIGTERM)
        for p in started:
            try:
                p.popen.wait(20)
            except subprocess.TimeoutExpired:
                p.popen.kill()


def _warm(p: Process, records: int) -> bool:
    path = p.state / "0_0.json"
    try:
        return json.loads(path.read_text())["changelogOffset"] == records
    except (OSError, ValueError, KeyError):
        return False


def run_once(url: str, keys: int, standby: bool) -> tuple[float, float]:
    """One failover: seconds from the SIGKILL until the survivor answers for the task, and
    until its answer is whole."""
    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp) / "data"
        (data / "input").mkdir(parents=True)
        names = [f"k{i:07d}" for i in range(keys)]
        (data / "input" / "0.txt").write_text("\n".join(names) + "\n")
        group = f"failover-{uuid.uuid4().hex[:8]}"
        with processes(url, data, group, names[-1]) as (a, b):
            if standby:
                wait_for("the standby warm", lambda: _warm(b, keys))
            # The survivor is a member that knows the owner (its endpoint answer came back).
            wait_for("both members", lambda: query(b.port, names[-1])[0] == 307)
            owner, survivor = a, b
            if query(owner.port, names[-1]) != (200, 1):
                raise RuntimeError("the task moved off the first process before the kill")
            owner.popen.send_signal(signal.SIGKILL)
            owner.popen.wait(10)
            killed = time.monotonic()
            active = whole = None
            while whole is None:
                if time.monotonic() - killed > WAIT_S:
                    raise TimeoutError("the survivor never served the task")
                status, count = query(survivor.port, names[-1])
                now = time.monotonic()
                if status == 200 and active is None:
                    active = now - killed
                if status == 200 and count == 1:
                    whole = now - killed
                time.sleep(POLL_S)
            assert active is not None
            return active, whole


@contextmanager
def serving(store: str, standby: bool) -> Iterator[str]:
    settings = {**SETTINGS, "group.streams.num.standby.replicas": "1" if standby else "0"}
    if store == "dynamodb-local":
        with dynamodb_local() as endpoint, running_serve(endpoint, settings) as url:
            yield url
    else:
        with running_serve(None, settings) as url:
            yield url


def measure(store: str, sizes: list[int], runs: int) -> list[list[str]]:
    rows = []
    for standby in (True, False):
        with serving(store, standby) as url:
            for keys in sizes:
                times = [run_once(url, keys, standby) for _ in range(runs)]
                active = statistics.median(t[0] for t in times)
                whole = statistics.median(t[1] for t in times)
                how = "warm standby (1 replica)" if standby else "cold rebuild (0 replicas)"
                rows.append([how, fmt(keys, 0), f"{active:.2f}", f"{whole:.2f}",
                             f"{whole - active:.2f}"])  # fmt: skip
                print(" | ".join(rows[-1]), flush=True)
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--keys", default="10000,100000", help="state sizes, comma-separated")
    parser.add_argument("--store", choices=("memory", "dynamodb-local"), default="memory")
    parser.add_argument("--runs", type=int, default=1, help="failovers per row (median)")
    parser.add_argument("--no-write", action="store_true", help="print, leave the docs alone")
    args = parse_args(parser, argv, keys="20")
    sizes = [int(s) for s in args.keys.split(",")]
    rows = measure(args.store, sizes, args.runs)
    headers = ["survivor", "state: keys (changelog records)", "s until it serves the task",
               "s until its state is whole", "rebuild: the difference, s"]  # fmt: skip
    body = (
        f"examples/streams_counter.py, two processes on `groupcoord serve --store {args.store}`, "
        f"one task; the active's process SIGKILLed. Session timeout {SESSION_MS} ms, heartbeat "
        f"{HEARTBEAT_MS} ms (short, as the failure detection is the same in both rows); median "
        f"of {args.runs} run(s). Times from the SIGKILL, queried every {POLL_S * 1000:.0f} ms.\n\n"
        + table(headers, rows)
    )
    print(body)
    if not args.no_write:
        engine = args.store == "dynamodb-local"
        write_section("streams_failover", "Streams groups: failover to a standby vs a cold "
                      "rebuild", COMMAND, body, engine=engine)  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
