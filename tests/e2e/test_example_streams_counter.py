"""examples/streams_counter.py as a user runs it: two processes count keys with a standby of
each task on the other; one is killed (SIGKILL) and the survivor carries on from its warm
standby state (its log shows it took the task over with the state whole, where a cold start
replays the whole changelog): every key counted exactly as the input says, every offset
committed."""

from __future__ import annotations

import json
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections import Counter
from pathlib import Path

from groupcoord.client.transport import Transport
from tests.e2e.helpers import unique, wait_until

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "streams_counter.py"
PARTITIONS, LINES = 2, 30
KEYS = ["apple", "pear", "fig"]
# What the example prints when a task becomes active on it.
TAKEN_OVER = re.compile(r"^active 0_(\d+): state at changelog offset (\d+) of (\d+)$", re.M)
# What its rebalance listener prints: the active tasks assigned or revoked.
ACTIVE_MOVED = re.compile(
    r"^(assigned|revoked) StreamsTasks\(active=\{(?:'0': frozenset\(\{([\d, ]*)\}\))?\}", re.M
)


def _active_held(log: Path) -> set[int]:
    """The active tasks a process holds, by its listener's lines so far."""
    held: set[int] = set()
    for kind, listed in ACTIVE_MOVED.findall(log.read_text()):
        tasks = {int(t) for t in listed.split(",") if t.strip()}
        held = held | tasks if kind == "assigned" else held - tasks
    return held


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _committed(url: str, group: str) -> dict[int, int]:
    body = Transport(url).call("offset-fetch", {"groups": [{"groupId": group}]}).body
    return {
        p["partitionIndex"]: p["committedOffset"]
        for t in body["groups"][0]["topics"]
        for p in t["partitions"]
    }


def _append(data: Path, start: int, count: int) -> None:
    for p in range(PARTITIONS):
        with (data / "input" / f"{p}.txt").open("a") as f:
            for n in range(start, start + count):
                f.write(KEYS[(n + p) % len(KEYS)] + "\n")


def _start(url: str, group: str, data: Path, state: Path, log: Path, port: int) -> subprocess.Popen:
    command = [sys.executable, str(EXAMPLE), str(data), "--url", url, "--group", group,
               "--state", str(state), "--port", str(port)]  # fmt: skip
    return subprocess.Popen(command, stdout=log.open("w"), stderr=subprocess.STDOUT)


def _caught_up(state: Path) -> bool:
    """Whether the process holds state of every task, each with the whole changelog."""
    stores = [json.loads(f.read_text()) for f in state.glob("0_*.json")]
    return len(stores) == PARTITIONS and all(s["changelogOffset"] == LINES for s in stores)


def _query(port: int, partition: int, key: str) -> int | None:
    """The count a process answers (following its redirect to the owner), None if not yet."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/count/{partition}/{key}") as r:
            return json.loads(r.read())["count"]
    except (urllib.error.URLError, OSError):
        return None


def test_a_killed_process_hands_its_tasks_to_the_warm_standby(
    coordinator: str, tmp_path: Path
) -> None:
    data, group = tmp_path / "data", unique("counter")
    (data / "input").mkdir(parents=True)
    _append(data, 0, LINES)
    a_port, b_port = _free_port(), _free_port()
    a = _start(coordinator, group, data, tmp_path / "a", tmp_path / "a.log", a_port)
    b = _start(coordinator, group, data, tmp_path / "b", tmp_path / "b.log", b_port)
    try:
        done = dict.fromkeys(range(PARTITIONS), LINES)
        wait_until(lambda: _committed(coordinator, group) == done, 60, "the input counted")
        # Each process holds state of both tasks: its active one, and the other's standby,
        # each of them caught up with the changelog. (On busy cores the group may still be
        # moving a task from one process to the other after a warm-up: wait for one each.)
        logs = [tmp_path / f"{n}.log" for n in "ab"]
        wait_until(lambda: all(len(_active_held(log)) == 1 for log in logs), 60, "one task each")
        wait_until(lambda: all(_caught_up(tmp_path / n) for n in "ab"), 30, "standbys warm")
        # Either process answers for every partition: its own, or by redirecting to the owner.
        for p in range(PARTITIONS):
            expected = (data / "input" / f"{p}.txt").read_text().split().count("apple")
            wait_until(lambda p=p, e=expected: _query(a_port, p, "apple") == e, 30, "a query")
        a.send_signal(signal.SIGKILL)
        a.wait(10)
        killed, b_log_before = time.monotonic(), (tmp_path / "b.log").stat().st_size
        _append(data, LINES, 10)
        done = dict.fromkeys(range(PARTITIONS), LINES + 10)
        wait_until(lambda: _committed(coordinator, group) == done, 60, "b took over")
        print(f"failover to the standby: {time.monotonic() - killed:.1f} s", flush=True)
    finally:
        for process in (a, b):
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
        b.wait(20)
    # b took a's task over with its standby's state: none of the changelog left to replay.
    with (tmp_path / "b.log").open() as log:
        log.seek(b_log_before)
        taken = [tuple(map(int, m)) for m in TAKEN_OVER.findall(log.read())]
    assert len(taken) == 1 and taken[0][1:] == (LINES, LINES), taken
    printed = [json.loads(line) for line in (tmp_path / "b.log").read_text().splitlines()
               if line.startswith("{")]  # fmt: skip
    counts = {entry["partition"]: entry["counts"] for entry in printed}
    for p in range(PARTITIONS):
        keys = (data / "input" / f"{p}.txt").read_text().split()
        assert counts[p] == dict(Counter(keys)), p
