"""A pool of member processes (bench/push_member.py) and the four timed moves of bench/push.py
on them: a cold start, a graceful leave, a joiner, a SIGKILL, each followed by a check that no
partition was ever owned by two live members at once (bench/ownership.py).

The processes are started (and their imports done) before anything is timed and are reused
from one group to the next: a member that left is idle and joins again as the next joiner or
in the next cold start; a killed one is replaced by a fresh process, outside the timings.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from .ownership import (
    ASSIGNED,
    KILLED,
    Event,
    held,
    overlaps,
    owned_again,
    owned_at,
    paused,
    reached,
)

REPO = Path(__file__).resolve().parents[1]
READY_S = 60.0
# After a move the group is left this long before the next one (a notice's beat is followed
# by a second look a second later: a kill while that beat is in flight would renew the
# session, docs/sessions.md), plus up to KILL_JITTER_S at random before a kill.
SETTLE_S = 2.0
KILL_JITTER_S = 1.0
# A folder for the member processes' stderr (the client's log), kept after the run.
LOGS_ENV = "GROUPCOORD_BENCH_PUSH_LOGS"
Join = Callable[[str], dict[str, Any]]  # group id -> the join command of a member


class Host:
    """One member process; its events as they come, and what it owns now."""

    def __init__(self, name: str, changed: threading.Condition) -> None:
        self.name = name
        self.changed = changed
        self.events: list[Event] = []
        self.owned: set[int] = set()
        self.errors: list[str] = []
        self.state = "starting"  # idle, joined, leaving, dead
        self._log = _log_file(name)
        env = {**os.environ, "PYTHONPATH": str(REPO), "PYTHONUNBUFFERED": "1"}
        self.process = subprocess.Popen(
            [sys.executable, "-m", "bench.push_member"],
            cwd=REPO,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._log,
            text=True,
        )
        threading.Thread(target=self._read, name=f"read-{name}", daemon=True).start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            record = json.loads(line)
            event = Event(record["t"], record["ev"], frozenset(record.get("p", ())))
            with self.changed:
                self.events.append(event)
                self._apply(event, record)
                self.changed.notify_all()

    def _apply(self, event: Event, record: dict[str, Any]) -> None:
        if self.state == "dead":
            return  # said before the kill, read after it
        if event.name == ASSIGNED:
            self.owned |= event.partitions
        elif event.name in ("revoked", "lost"):
            self.owned -= event.partitions
        elif event.name in ("ready", "left"):
            self.state = "idle"
        elif event.name == "error":
            self.errors.append(record.get("msg", "?"))

    def send(self, command: dict[str, Any]) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps(command) + "\n")
        self.process.stdin.flush()

    def join(self, command: dict[str, Any]) -> None:
        self.state = "joined"
        self.send(command)

    def leave(self) -> None:
        self.state = "leaving"
        self.send({"op": "leave"})

    def kill(self) -> float:
        """SIGKILL; when it was sent."""
        with self.changed:
            at = time.monotonic()
            self.process.send_signal(signal.SIGKILL)
            self.state = "dead"
            self.owned = set()
            self.events.append(Event(at, KILLED))
        self.process.wait(timeout=10)
        return at

    def last(self, name: str) -> Event | None:
        return next((e for e in reversed(self.events) if e.name == name), None)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait(timeout=10)
        self._log.close()


def _log_file(name: str) -> IO[Any]:
    """Where a member process's stderr goes: $GROUPCOORD_BENCH_PUSH_LOGS, or nowhere kept."""
    logs = os.environ.get(LOGS_ENV)
    if logs:
        return open(Path(logs) / f"{name}-{os.getpid()}.log", "a")
    return tempfile.TemporaryFile()


@dataclass
class Run:
    """One run's timings (seconds) and what went wrong in it."""

    seconds: dict[str, float] = field(default_factory=dict)
    paused: dict[str, int] = field(default_factory=dict)
    failures: list[str] = field(default_factory=list)
    # Every member's events, seconds from the run's start (bench/.results: to see a slow move).
    events: dict[str, list[Any]] = field(default_factory=dict)


class Cluster:
    """`size` member processes that join groups of `partitions` partitions when told."""

    def __init__(self, size: int, partitions: int, join: Join, wait_s: float) -> None:
        self.partitions = partitions
        self.join_command = join
        self.wait_s = wait_s
        self.changed = threading.Condition()
        self.hosts: list[Host] = []
        self._count = 0
        self._started = time.monotonic()
        for _ in range(size):
            self._spawn()
        self._wait("every member process ready", lambda: all(h.state == "idle" for h in self.live))

    def _spawn(self) -> Host:
        self._count += 1
        host = Host(f"m{self._count}", self.changed)
        self.hosts.append(host)
        return host

    @property
    def live(self) -> list[Host]:
        return [h for h in self.hosts if h.state != "dead"]

    @property
    def members(self) -> list[Host]:
        return [h for h in self.hosts if h.state == "joined"]

    def close(self) -> None:
        for host in self.hosts:
            host.stop()

    def _wait(self, what: str, condition: Callable[[], bool], timeout_s: float | None = None):
        with self.changed:
            if not self.changed.wait_for(condition, timeout=timeout_s or self.wait_s):
                raise TimeoutError(f"timed out waiting for {what}")

    def balanced(self) -> bool:
        """Every partition owned by exactly one member, each member its share."""
        members = self.members
        if not members:
            return False
        counts = [len(h.owned) for h in members]
        low = self.partitions // len(members)
        union = set().union(*(h.owned for h in members))
        return sum(counts) == self.partitions == len(union) and all(
            low <= c <= low + (self.partitions % len(members) > 0) for c in counts
        )

    def _phase(self, what: str) -> None:
        """Progress on stderr, seconds since the run started (to see where a run waits)."""
        print(f"  {time.monotonic() - self._started:7.2f} s {what}", file=sys.stderr, flush=True)

    def _settle(self, jitter_s: float = 0.0) -> None:
        self._wait("a balanced group", self.balanced)
        time.sleep(SETTLE_S + random.uniform(0.0, jitter_s))
        self._wait("a balanced group", self.balanced)

    # --- the moves ---

    def run(self, group: str, members: int) -> Run:
        """One run: a cold start of `members`, a leave, a join, a kill, then everyone leaves."""
        run = Run()
        started = self._started = time.monotonic()
        moves = (("cold start", lambda: (self.cold_start(group, members), 0), 0.0),
                 ("handoff", self.handoff, 0.0),
                 ("joiner", lambda: self.joiner(group), KILL_JITTER_S),
                 ("kill", self.kill, 0.0))  # fmt: skip
        try:
            for name, move, jitter in moves:
                self._phase(name)
                run.seconds[name], run.paused[name] = move()
                self._phase(f"{name}: {run.seconds[name]:.2f} s; settling")
                self._settle(jitter)
        except TimeoutError as error:
            run.failures.append(str(error))
        finally:
            self._phase("everyone leaves")
            self._leave_all()
            self._phase("done")
        run.events = self._events(started)
        run.failures += self._check(started)
        return run

    def _events(self, since: float) -> dict[str, list[Any]]:
        with self.changed:
            return {
                h.name: [[round(e.t - since, 3), e.name, sorted(e.partitions)]
                         for e in h.events if e.t >= since]
                for h in self.hosts
            }  # fmt: skip

    def cold_start(self, group: str, members: int) -> float:
        idle = [h for h in self.live if h.state == "idle"][:members]
        for host in idle:
            host.join(self.join_command(group))
        self._wait("the cold start balanced", self.balanced)
        with self.changed:
            joining = [h.last("joining") for h in idle]
            since = min(e.t for e in joining if e is not None)
            last = max(e.t for h in idle for e in h.events if e.t >= since)
        return last - since

    def handoff(self) -> tuple[float, int]:
        leaver = random.choice([h for h in self.members if h.owned])
        mark = time.monotonic()
        leaver.leave()
        self._wait("the leave", lambda: leaver.state == "idle")
        leaving = leaver.last("leaving")
        assert leaving is not None
        return self._owned_again(leaver, leaving.t, mark)

    def kill(self) -> tuple[float, int]:
        victim = random.choice([h for h in self.members if h.owned])
        at = victim.kill()
        taken = self._owned_again(victim, at, at)
        self._spawn()  # its replacement, idle once ready (outside the timing)
        return taken

    def _owned_again(self, gone: Host, since: float, mark: float) -> tuple[float, int]:
        """Seconds from `since` until the partitions `gone` held were all owned by the
        others, and the partitions the others paused meanwhile."""
        held_then = owned_at(gone.events, since)
        others = self.members

        def done() -> bool:
            return owned_again(held_then, {h.name: h.events for h in others}, since) is not None

        self._wait(f"{gone.name}'s partitions owned again", done)
        self._wait("a balanced group", self.balanced)
        with self.changed:
            at = owned_again(held_then, {h.name: h.events for h in others}, since)
            assert at is not None
            return at - since, sum(paused(h.events, mark, h.owned) for h in others)

    def joiner(self, group: str) -> tuple[float, int]:
        joiner = next(h for h in self.live if h.state == "idle")
        mark = time.monotonic()
        others = self.members
        joiner.join(self.join_command(group))
        share = self.partitions // (len(others) + 1)
        self._wait("the joiner's share", lambda: len(joiner.owned) >= share)
        self._wait("a balanced group", self.balanced)
        with self.changed:
            joining = joiner.last("joining")
            assert joining is not None
            at = reached(joiner.events, share, joining.t)
            assert at is not None
            return at - joining.t, sum(paused(h.events, mark, h.owned) for h in others)

    def _leave_all(self) -> None:
        for host in self.members:
            host.leave()
        self._wait("every member left", lambda: all(h.state in ("idle", "dead") for h in
                                                    self.hosts))  # fmt: skip
        self._wait("every member process ready", lambda: all(h.state == "idle" for h in self.live))

    def _check(self, since: float) -> list[str]:
        """The run's overlaps and the errors its members reported."""
        with self.changed:
            intervals = [i for h in self.hosts for i in held(h.name, list(h.events), since)]
            errors = [f"{h.name}: {e}" for h in self.hosts for e in h.errors]
            for host in self.hosts:
                host.errors.clear()
        self.hosts = self.live  # the killed ones are done with
        return [str(o) for o in overlaps(intervals)] + errors
