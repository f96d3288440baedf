"""Kinesis worker processes (tests/support/kinesis_worker.py) driven from a test: started,
stopped gracefully (SIGTERM), frozen (SIGSTOP) and thawed; their logs read back; a producer
whose records carry a sequence per partition key; and the checks of what the workers did:
every record handled, each key's records in order across parent and child shards, duplicates
only where no commit covered the record yet, and, exactly once, each record's write in the
sink table once."""

from __future__ import annotations

import hashlib
import json
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from groupcoord.client.errors import FENCING_ERRORS

ROOT = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class Handled:
    """A record a worker's handler got."""

    t: float
    worker: str
    partition: int
    key: str
    seq: int
    sn: int  # its sequence number


@dataclass(frozen=True)
class Commit:
    """A commit a worker made, and the error code the client raised (0: accepted)."""

    t: float
    worker: str
    positions: dict[int, dict[str, Any]]
    error: int
    writes: int

    def covers(self, partition: int, sn: int) -> bool:
        """Accepted, with a checkpoint of `partition` at or past `sn`."""
        at = self.positions.get(partition)
        if self.error or at is None:
            return False
        return bool(at.get("shardEnd")) or int(at.get("sequenceNumber") or -1) >= sn


class WorkerProcess:
    """One `python -m tests.support.kinesis_worker` and its log."""

    def __init__(self, folder: Path, name: str, url: str, group: str, topic: str, **options: Any):
        self.name = name
        self.stopped = False  # by the test: its exit is no failure
        self.log = folder / f"{name}.jsonl"
        command = [sys.executable, "-m", "tests.support.kinesis_worker", "--name", name]
        command += ["--url", url, "--group", group, "--topic", topic, "--log", str(self.log)]
        for option, value in options.items():
            if value is not None:
                command += [f"--{option.replace('_', '-')}", str(value)]
        self.process = subprocess.Popen(command, cwd=ROOT, stdin=subprocess.PIPE, text=True)

    def lines(self) -> list[dict[str, Any]]:
        if not self.log.exists():
            return []
        found = []
        for line in self.log.read_text().splitlines():
            try:
                found.append(json.loads(line))
            except json.JSONDecodeError:  # a line being written
                continue
        return found

    def handled(self) -> list[Handled]:
        return [
            Handled(x["t"], x["w"], x["p"], x["k"], x["s"], int(x["sn"]))
            for x in self.lines()
            if "k" in x
        ]

    def commits(self) -> list[Commit]:
        return [
            Commit(
                x["t"],
                x["w"],
                {int(p): at for p, at in x["commit"].items()},
                x["error"],
                x["writes"],
            )
            for x in self.lines()
            if "commit" in x
        ]

    def event(self, name: str) -> dict[str, Any] | None:
        return next((x for x in self.lines() if x.get("event") == name), None)

    def alive(self) -> bool:
        return self.process.poll() is None

    def terminate(self, timeout_s: float = 30.0) -> int:
        """A graceful stop (SIGTERM: commit and leave); the exit code."""
        self.stopped = True
        if self.alive():
            self.process.send_signal(signal.SIGTERM)
        return self.process.wait(timeout=timeout_s)

    def freeze(self) -> None:
        self.process.send_signal(signal.SIGSTOP)

    def thaw(self) -> None:
        self.process.send_signal(signal.SIGCONT)

    def release(self) -> None:
        """Let a batch held by --hold-key go on."""
        assert self.process.stdin is not None
        self.process.stdin.write("\n")
        self.process.stdin.flush()

    def close(self) -> None:
        """Whatever state it is in: gone."""
        if self.alive():
            self.process.send_signal(signal.SIGKILL)
            self.process.send_signal(signal.SIGCONT)
            self.process.wait(timeout=10)


class KeyedProducer:
    """Rounds of records, one per key each, every `pause_s` on its thread: the key's record
    of round n carries `<key>:<n>`. A round is one PutRecords; a record Kinesis refused is
    sent again before the next round, so that each key's records are in order in its shard."""

    def __init__(self, client: Any, arn: str, keys: list[str], pause_s: float = 0.1) -> None:
        self.client, self.arn, self.keys, self.pause_s = client, arn, keys, pause_s
        self.rounds = 0
        self.failures: list[BaseException] = []
        self._bursts: list[int] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            while not self._stop.is_set():
                for _ in range(1 + (self._bursts.pop() if self._bursts else 0)):
                    self._put([self._record(key) for key in self.keys])
                    self.rounds += 1
                self._stop.wait(self.pause_s)
        except BaseException as error:  # shown by the test
            self.failures.append(error)

    def _record(self, key: str) -> dict[str, Any]:
        return {"PartitionKey": key, "Data": f"{key}:{self.rounds}".encode()}

    def burst(self, rounds: int) -> None:
        """Put `rounds` more rounds at once, without pauses: a backlog for the readers."""
        self._bursts.append(rounds)
        done = self.rounds + rounds
        while self.rounds < done:
            assert not self.failures, self.failures
            time.sleep(0.01)

    def _put(self, entries: list[dict[str, Any]]) -> None:
        while entries:
            answer = self.client.put_records(StreamARN=self.arn, Records=entries)
            results = zip(entries, answer["Records"], strict=True)
            entries = [entry for entry, result in results if "ErrorCode" in result]
            if entries:
                time.sleep(0.05)

    def stop(self) -> dict[str, int]:
        """Stop after the round being sent; how many records of each key were sent."""
        self._stop.set()
        self._thread.join(timeout=30)
        assert not self._thread.is_alive() and not self.failures, self.failures
        return dict.fromkeys(self.keys, self.rounds)


def spread_keys(prefix: str, ranges: int = 8) -> list[str]:
    """One partition key in each of `ranges` equal slices of the hash-key space (Kinesis hashes
    a key with MD5), so that every shard of a split, a merge or a uniform re-count into up to
    `ranges` shards gets records."""
    found: dict[int, str] = {}
    i = 0
    while len(found) < ranges:
        key = f"{prefix}-{i}"
        found.setdefault(int(hashlib.md5(key.encode()).hexdigest(), 16) * ranges >> 128, key)
        i += 1
    return [found[r] for r in range(ranges)]


def every_record(sent: dict[str, int]) -> set[tuple[str, int]]:
    return {(key, seq) for key, count in sent.items() for seq in range(count)}


def missing(handled: Iterable[Handled], sent: dict[str, int]) -> set[tuple[str, int]]:
    return every_record(sent) - {(h.key, h.seq) for h in handled}


def out_of_order(handled: Iterable[Handled]) -> dict[str, list[int]]:
    """The keys whose records were first handled out of their order (by when, across every
    worker): each such key's sequence of first handlings."""
    first: dict[str, list[int]] = {}
    seen: set[tuple[str, int]] = set()
    for h in sorted(handled, key=lambda h: h.t):
        if (h.key, h.seq) not in seen:
            seen.add((h.key, h.seq))
            first.setdefault(h.key, []).append(h.seq)
    return {key: seqs for key, seqs in first.items() if seqs != sorted(seqs)}


def redelivered_after_commit(handled: list[Handled], commits: list[Commit]) -> list[Handled]:
    """Records handled again although an accepted commit had covered them before: a duplicate
    that is not from an uncommitted tail. A zombie's handling is excused: a worker that lost
    its shards without knowing it yet (its next commit fenced) may handle a batch its
    successor already committed; at least once, that is the price (exactly once, its writes
    are refused with its commit)."""
    seen: set[tuple[int, int]] = set()
    wrong = []
    for h in sorted(handled, key=lambda h: h.t):
        record = (h.partition, h.sn)
        covered = any(c.t < h.t and c.covers(h.partition, h.sn) for c in commits)
        if record in seen and covered and not _fenced_next(h, commits):
            wrong.append(h)
        seen.add(record)
    return wrong


def _fenced_next(h: Handled, commits: list[Commit]) -> bool:
    """The worker's next commit of the partition after handling `h` was fenced."""
    later = [
        c for c in commits if c.worker == h.worker and c.t > h.t and h.partition in c.positions
    ]
    return bool(later) and min(later, key=lambda c: c.t).error in FENCING_ERRORS


def twice(handled: Iterable[Handled]) -> int:
    """How many handlings were of a record handled before."""
    counts = Counter((h.partition, h.sn) for h in handled)
    return sum(n - 1 for n in counts.values())


def marks(client: Any, table: str, keys: list[str]) -> dict[tuple[str, int], dict[str, Any]]:
    """The exactly-once writes in the sink table of these keys' records: (key, seq) -> n, at
    (when handled) and by (the workers whose writes landed)."""
    found: dict[tuple[str, int], dict[str, Any]] = {}
    wanted = set(keys)
    pages = client.get_paginator("scan").paginate(TableName=table, ConsistentRead=True)
    for page in pages:
        for item in page["Items"]:
            key, seq = item["k"]["S"].rsplit("#", 1)
            if key in wanted:
                found[key, int(seq)] = {
                    "n": int(item["n"]["N"]),
                    "at": float(item["at"]["N"]),
                    "by": set(item.get("by", {}).get("SS", [])),
                }
    return found


def marks_out_of_order(found: dict[tuple[str, int], dict[str, Any]]) -> dict[str, list[int]]:
    """The keys whose writes were made out of order (an earlier record handled later)."""
    wrong = {}
    for key in {k for k, _ in found}:
        seqs = sorted(s for k, s in found if k == key)
        times = [found[key, s]["at"] for s in seqs]
        if times != sorted(times):
            wrong[key] = sorted(seqs, key=lambda s: found[key, s]["at"])
    return wrong


def until(
    condition: Callable[[], Any], timeout_s: float, what: str, watch: Iterable[Any] = ()
) -> Any:
    """Poll `condition` until truthy; fail naming `what`, or at once when a watched worker
    exited unasked or a producer failed."""
    deadline = time.monotonic() + timeout_s
    while not (found := condition()):
        for thing in watch:
            if isinstance(thing, WorkerProcess):
                exited = f"worker {thing.name} exited {thing.process.returncode}"
                assert thing.alive() or thing.stopped, exited
            else:
                assert not thing.failures, thing.failures
        assert time.monotonic() < deadline, f"not within {timeout_s:.0f} s: {what}"
        time.sleep(0.1)
    return found
