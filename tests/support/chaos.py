"""What the chaos test (tests/e2e/test_chaos.py) is built from: several `groupcoord serve`
processes on one table that can be SIGKILLed and restarted, an HTTP caller that sends each
request to a random instance and tells a transport error (a killed instance's connection) from
an answer, members of both protocols that heartbeat and commit through it and can be told to
stall into zombies, and a journal that checks the invariants as the answers arrive.

Offsets come from one counter for the whole run, so an acknowledged commit of a partition is
always newer than every commit acknowledged before it; a zombie commits a sentinel far above
the counter, so a zombie offset that landed is recognisable wherever it is read."""

from __future__ import annotations

import base64
import itertools
import json
import os
import random
import signal
import socket
import threading
import time
import urllib.error
import urllib.request
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import Any

from groupcoord.client.transport import NETWORK_ERRORS, TIMEOUT_HEADER, budget_ms
from groupcoord.local.processes import ServeUrl
from groupcoord.wire.consumer_protocol import (
    Assignment,
    Subscription,
    decode_assignment,
    encode_assignment,
    encode_subscription,
)
from tests.support.chaos_push import PushLink
from tests.support.servers import TEST_PUSH, running_serve

TopicPartition = tuple[str, int]

# A zombie's commits carry offsets from here up: far above anything the run's counter reaches.
ZOMBIE_OFFSET_BASE = 10**12

# One attempt's timeout; the server gets it less the write margin as its write budget
# (Groupcoord-Timeout-Ms), as the client library sends it. Long: on two overloaded cores a
# request can wait seconds for the shared endpoint, and an attempt given up on is still
# worked on by the server, so retrying it early only adds load.
ATTEMPT_TIMEOUT_S = 20.0
# How long one request may go on finding an instance that answers before the run fails.
REQUEST_DEADLINE_S = 45.0

MONITOR_EVERY_S = 2.0
CLOCK_OFFSET = "groupcoord.fault.clock.offset.ms"

NONE = 0
COORDINATOR_LOAD_IN_PROGRESS = 14
UNKNOWN_MEMBER_ID = 25
ILLEGAL_GENERATION = 22
REBALANCE_IN_PROGRESS = 27
MEMBER_ID_REQUIRED = 79
FENCED_MEMBER_EPOCH = 110
STALE_MEMBER_EPOCH = 113
REQUEST_TIMED_OUT = 7


class Aborted(Exception):
    """The run is stopping (a failure was recorded, or the members were stopped)."""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# --- serve instances ---


class Instance:
    """One `groupcoord serve` slot, started on a fresh port each time (Cluster.kill SIGKILLs
    it like a crashed Lambda container: no cleanup, in-flight requests cut)."""

    def __init__(
        self, slot: int, endpoint: str, table: str, settings: dict[str, str], push: bool
    ) -> None:
        self.slot = slot
        self.push = push
        self.endpoint = endpoint
        self.table = table
        self.settings = settings
        self.url = ""
        self.pid = 0
        self.state = "down"  # up | down | starting
        self._serving: AbstractContextManager[ServeUrl] | None = None

    def start(self, attempts: int = 3) -> None:
        self.state = "starting"
        for attempt in range(attempts):
            port = free_port()
            serving = running_serve(
                self.endpoint, self.settings, table=self.table,
                extra_args=["--port", str(port)], push=self.push,
            )  # fmt: skip
            try:
                url = serving.__enter__()
                break
            except RuntimeError:  # its output is on stderr; e.g. the port was taken meanwhile
                if attempt == attempts - 1:
                    self.state = "down"
                    raise
        self._serving = serving
        self.pid = url.pid
        self.url = url
        self.state = "up"

    def stop(self) -> None:
        """Stop (or, after a SIGKILL, reap) the process; running_serve prints the traceback of
        any request it answered 500 to stderr."""
        self.state = "down"
        serving, self._serving = self._serving, None
        if serving is not None:
            serving.__exit__(None, None, None)


class Cluster:
    """The serve instances on one table. Callers pick any slot's last URL: a killed slot's
    refuses connections until it is back (on a new port)."""

    def __init__(
        self,
        endpoint: str,
        table: str,
        settings: dict[str, str],
        count: int,
        clock_offsets_ms: tuple[int, ...] | None = None,
        push: bool = TEST_PUSH,
    ) -> None:
        """`clock_offsets_ms`: per slot, how far its clock runs ahead of the system's
        (groupcoord.fault.clock.offset.ms); all in step by default. `push`: the instances offer
        the push channel and the members hold sockets (chaos_push.py)."""
        offsets = clock_offsets_ms or (0,) * count
        self.push = push
        self.instances = [
            Instance(i, endpoint, table, {**settings, CLOCK_OFFSET: str(offsets[i])}, push)
            for i in range(count)
        ]
        self.skew_s = (max(offsets) - min(offsets)) / 1000
        self.lock = threading.Lock()
        self.kills = 0
        self.restarts = 0
        self._starting: list[threading.Thread] = []

    def start(self) -> None:
        threads = [threading.Thread(target=i.start) for i in self.instances]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        down = [i.slot for i in self.instances if i.state != "up"]
        if down:
            raise RuntimeError(f"serve slots {down} did not start")

    def urls(self) -> list[str]:
        with self.lock:
            return [i.url for i in self.instances if i.url]

    def pick(self, rng: random.Random) -> str:
        return rng.choice(self.urls())

    def kill(self, slot: int) -> None:
        instance = self.instances[slot]
        with self.lock:
            os.kill(instance.pid, signal.SIGKILL)
            instance.state = "down"
            self.kills += 1
        instance.stop()  # reaps it

    def restart(self, slot: int) -> threading.Thread:
        """Start the slot again on a thread (a start takes a second or more); stop() waits
        for it, so that no instance outlives the run."""

        def start() -> None:
            self.instances[slot].start()
            with self.lock:
                self.restarts += 1

        thread = threading.Thread(target=start, daemon=True)
        self._starting.append(thread)
        thread.start()
        return thread

    def stop(self) -> None:
        for thread in self._starting:
            thread.join(timeout=120)
        for i in self.instances:
            i.stop()


# --- the journal: what every member saw, checked as it arrives ---


@dataclass
class Zombie:
    protocol: str
    who: str
    member_id: str
    generation_or_epoch: int
    partitions: list[int]
    offset: int
    stalled_s: float
    codes: list[int] = field(default_factory=list)
    transport_errors: int = 0
    socket: str = ""  # its push socket through the stall: "open" (silent), "crashed", none
    lease_left_s: float = 0.0  # its session's least time left as it stalled (Member.lease_end)


@dataclass
class Journal:
    seed: int
    # The most two instances' clocks disagree by: a silent member may be removed this much
    # before its session ran out (docs/sessions.md, "Clocks that disagree").
    skew_s: float = 0.0
    started: float = field(default_factory=time.monotonic)
    lock: threading.Lock = field(default_factory=threading.Lock)
    failures: list[str] = field(default_factory=list)
    abort: threading.Event = field(default_factory=threading.Event)
    # ownership as the members see it: partition -> the member processing it
    holders: dict[TopicPartition, Any] = field(default_factory=dict)
    # commits: the last acknowledged offset, and offsets whose outcome is unknown (an attempt
    # cut by a kill, the retry then refused), which may have landed
    acked: dict[TopicPartition, int] = field(default_factory=dict)
    acked_count: int = 0
    maybe: dict[TopicPartition, set[int]] = field(default_factory=dict)
    refused_commits: int = 0
    observed: dict[TopicPartition, int] = field(default_factory=dict)
    zombies: list[Zombie] = field(default_factory=list)
    transport_errors: dict[str, int] = field(default_factory=dict)
    deadline_503: int = 0
    throttled_429: int = 0
    requests: int = 0
    seconds: list[float] = field(default_factory=list)  # answered attempts, for the report
    log: list[str] = field(default_factory=list)
    phases: dict[str, float] = field(default_factory=dict)
    push: Counter = field(default_factory=Counter)  # the members' push sockets (chaos_push.py)
    waiting: str = ""  # what the test is waiting for, when it gives up
    _offsets: Iterator[int] = field(default_factory=lambda: itertools.count(1))
    _zombie_offsets: Iterator[int] = field(
        default_factory=lambda: itertools.count(ZOMBIE_OFFSET_BASE)
    )

    def elapsed(self) -> float:
        return time.monotonic() - self.started

    def mark(self, phase: str) -> None:
        """The end of a phase of the run, for the report."""
        self.phases[phase] = self.elapsed()
        self.note(phase)

    def note(self, text: str) -> None:
        with self.lock:
            self.log.append(f"+{self.elapsed():6.2f}s {text}")

    def fail(self, text: str) -> None:
        with self.lock:
            self.failures.append(f"+{self.elapsed():6.2f}s {text}")
            self.log.append(f"+{self.elapsed():6.2f}s FAILURE {text}")
        self.abort.set()

    def next_offset(self) -> int:
        with self.lock:
            return next(self._offsets)

    def zombie_offset(self) -> int:
        with self.lock:
            return next(self._zombie_offsets)

    # ownership

    def acquire(self, member: Member, partitions: set[TopicPartition], answered: float) -> None:
        """`member` starts processing `partitions` (its answer came at `answered`). A partition
        still held by another member whose session cannot have ended by then (its last renewal
        plus its session timeout, less the clocks' skew) was given out twice."""
        with self.lock:
            for tp in sorted(partitions):
                holder = self.holders.get(tp)
                held_until = holder.lease_end - self.skew_s if holder is not None else 0.0
                if holder is not None and holder is not member and held_until > answered:
                    text = (
                        f"{tp} given to {member.name} while {holder.name} still held it (its "
                        f"session ran until +{holder.lease_end - self.started:.2f}s)"
                    )
                    self.failures.append(f"+{self.elapsed():6.2f}s {text}")
                    self.abort.set()
                self.holders[tp] = member

    def release(self, member: Member, partitions: set[TopicPartition]) -> None:
        with self.lock:
            for tp in partitions:
                if self.holders.get(tp) is member:
                    del self.holders[tp]

    # commits

    def committed(self, who: str, partitions: list[TopicPartition], offset: int) -> None:
        """An acknowledged commit: per partition, newer than every one acknowledged before."""
        with self.lock:
            self.acked_count += 1
            for tp in partitions:
                last = self.acked.get(tp, 0)
                if offset <= last:
                    self.failures.append(
                        f"+{self.elapsed():6.2f}s {who}: commit {offset} of {tp} acknowledged "
                        f"after {last}: acknowledged commits moved backwards"
                    )
                    self.abort.set()
                self.acked[tp] = max(last, offset)
                self.maybe.get(tp, set()).discard(offset)

    def unknown(self, partitions: list[TopicPartition], offset: int) -> None:
        with self.lock:
            for tp in partitions:
                self.maybe.setdefault(tp, set()).add(offset)

    def observe(self, tp: TopicPartition, offset: int, acked_before: int) -> None:
        """An offset-fetch answer: no zombie offset, nothing older than what was acknowledged
        before the fetch was sent, never older than an earlier fetch saw."""
        with self.lock:
            seen = self.observed.get(tp, -1)
            self.observed[tp] = max(seen, offset)
        if offset >= ZOMBIE_OFFSET_BASE:
            self.fail(f"offset-fetch of {tp} answered {offset}: a zombie commit landed")
        elif offset < acked_before:
            self.fail(f"offset-fetch of {tp} answered {offset}, older than acked {acked_before}")
        elif offset < seen:
            self.fail(f"offset-fetch of {tp} answered {offset} after {seen}: it went back")

    def transport_error(self, kind: str) -> None:
        with self.lock:
            self.transport_errors[kind] = self.transport_errors.get(kind, 0) + 1


# --- HTTP to a random instance ---


@dataclass
class Answer:
    status: int
    body: dict[str, Any]
    transport_errors: int  # attempts cut off before any answer (a killed instance)


def _post(url: str, api: str, body: dict[str, Any], client_id: str) -> tuple[int, Any, Any]:
    request = urllib.request.Request(
        f"{url}/v1/{api}",
        data=json.dumps(body).encode(),
        method="POST",
        headers={
            "Content-Type": "application/json",
            "Kafka-Client-Id": client_id,
            TIMEOUT_HEADER: str(budget_ms(ATTEMPT_TIMEOUT_S)),
        },
    )
    try:
        with urllib.request.urlopen(request, timeout=ATTEMPT_TIMEOUT_S) as response:
            return response.status, json.loads(response.read() or b"{}"), response.headers
    except urllib.error.HTTPError as error:
        try:
            raw = error.read()
            try:
                parsed = json.loads(raw or b"{}")
            except ValueError:
                parsed = {"raw": raw[:300].decode("utf-8", "replace")}
            return error.code, parsed, error.headers
        finally:
            error.close()


def _kind(error: BaseException) -> str:
    reason = getattr(error, "reason", None)
    return type(reason if isinstance(reason, BaseException) else error).__name__


class Caller:
    """Sends each attempt to a random instance. No answer (refused, reset, cut short: what a
    killed instance's connections do) is a transport error and is retried elsewhere, as are
    429 and a 503 REQUEST_TIMED_OUT (the request's write budget ran out: deadline.py). Any
    other 5xx is an answer from a live instance, and a failure of the run."""

    def __init__(self, cluster: Cluster, journal: Journal, rng: random.Random, who: str) -> None:
        self.cluster = cluster
        self.journal = journal
        self.rng = rng
        self.who = who
        self.last_url = ""  # the instance that answered last
        self.on_answer: Callable[[], None] = lambda: None  # after each answered attempt

    def call(self, api: str, body: dict[str, Any]) -> Answer:
        deadline = time.monotonic() + REQUEST_DEADLINE_S
        cut = 0
        while True:
            if self.journal.abort.is_set():
                raise Aborted()
            if time.monotonic() > deadline:
                self.journal.fail(f"{self.who}: {api} found no instance that answered")
                raise Aborted()
            url = self.cluster.pick(self.rng)
            with self.journal.lock:
                self.journal.requests += 1
            sent = time.monotonic()
            try:
                status, answer, headers = _post(url, api, body, self.who)
            except NETWORK_ERRORS as error:
                cut += 1
                self.journal.transport_error(_kind(error))
                self.journal.abort.wait(self.rng.uniform(0.01, 0.05))  # then another instance
                continue
            with self.journal.lock:
                self.journal.seconds.append(time.monotonic() - sent)
            self.last_url = url
            self.on_answer()
            if status in (200, 202):
                return Answer(status, answer, cut)
            if status == 429:
                with self.journal.lock:
                    self.journal.throttled_429 += 1
                self.journal.abort.wait(min(1.0, float(headers.get("Retry-After") or 0.1)))
                continue
            if status == 503 and answer.get("errorCode") == REQUEST_TIMED_OUT:
                with self.journal.lock:
                    self.journal.deadline_503 += 1
                continue
            self.journal.fail(f"{self.who}: {api} answered HTTP {status} by {url}: {answer}")
            raise Aborted()


# --- members ---


class Member:
    """What both protocols' members share: a thread that heartbeats and commits until
    stopped, a session lease (what the coordinator must assume it still holds), and a stall:
    stop talking until the coordinator has removed it, then commit with its old identity.

    With push on (the cluster's) it holds a push socket (chaos_push.PushLink) and heartbeats at
    once on a notice; a stall keeps the socket open and silent (a zombie the session must
    expire) or, half the time, crashes it (a dead process: expired by `$disconnect` after the
    grace); a member that stops at the end closes it, crashed or cleanly, half the time each.

    The lease, both ends: the coordinator never expires a session sooner than a session after
    the last renewal was sent (`lease_end`: a heartbeat that skips its write finds the stored
    deadline at least that far; the ownership check relies on it), and never later than a
    session plus the renewal slack after the member's last answered request (`lease_limit`:
    any request may have renewed it; the slack of core/session_renewal.member_renewal_slack_ms,
    a connected member's if push is on, is `renewal_slack_s`; the zombie's wait for its
    removal relies on it)."""

    protocol = ""

    def __init__(
        self,
        name: str,
        group: str,
        topic: str,
        partitions: int,
        cluster: Cluster,
        journal: Journal,
        rng: random.Random,
        session_s: float,
        interval_s: float,
        commit_every_s: float,
        renewal_slack_s: float = 0.0,
    ) -> None:
        self.name = name
        self.group = group
        self.topic = topic
        self.partitions = partitions
        self.journal = journal
        self.rng = rng
        self.caller = Caller(cluster, journal, rng, name)
        self.session_s = session_s
        self.interval_s = interval_s
        self.commit_every_s = commit_every_s
        self.next_commit = 0.0
        self.owned: set[int] = set()
        self.lease_end = 0.0  # monotonic: last session renewal sent + the session timeout
        self.renewal_slack_s = renewal_slack_s
        self.lease_limit = 0.0  # monotonic: last request answered + session + slack
        self.caller.on_answer = self._answered
        self.push: PushLink | None = None
        self._push_rng = random.Random(f"{name}-crash")  # apart: the fault schedule's draws stay
        self.stop = threading.Event()
        self.stall_requested = threading.Event()
        self.stalling = threading.Event()
        self.last_commit_ok = 0.0  # monotonic time of the last acknowledged commit
        self.thread = threading.Thread(target=self._run, name=name, daemon=True)

    # identity, overridden per protocol

    @property
    def member_id(self) -> str:
        raise NotImplementedError

    def identity(self) -> int:
        """The generation (classic) or member epoch (consumer) commits are sent with."""
        raise NotImplementedError

    def ready(self) -> bool:
        """Holds an assignment the coordinator considers current (may commit it)."""
        raise NotImplementedError

    def step(self) -> None:
        raise NotImplementedError

    def forget(self) -> None:
        """Start over as a new member (a restarted process)."""
        raise NotImplementedError

    def member_ids(self, caller: Caller) -> set[str]:
        raise NotImplementedError

    # the loop

    def exists(self) -> bool:
        """The coordinator has created the member (its push socket may open)."""
        return self.ready()

    def start(self) -> Member:
        if self.caller.cluster.push:
            cluster, caller = self.caller.cluster, self.caller
            self.push = PushLink(
                self.name, self.group, cluster.urls, lambda: caller.last_url, self.journal.push
            )
        self.thread.start()
        return self

    def hang_up(self) -> None:
        """Stopped for good: its push socket crashes or closes cleanly."""
        if self.push is not None:
            self.push.stop(crash=self._push_rng.random() < 0.5)

    def _run(self) -> None:
        try:
            while not self.stop.is_set():
                if self.stall_requested.is_set():
                    self._stall()
                    continue
                self.step()
                if self.ready() and self.owned and time.monotonic() >= self.next_commit:
                    self.next_commit = time.monotonic() + self.commit_every_s
                    self.commit()
                if self.push is None:
                    self.stop.wait(self.interval_s)
                else:
                    self.push.want(self.member_id if self.exists() else "")
                    self.push.pause(self.stop, self.interval_s)
        except Aborted:
            return
        except BaseException as error:  # surfaced as a failure of the run
            self.journal.fail(f"{self.name} crashed: {error!r}")

    def renewed(self, sent: float) -> None:
        self.lease_end = max(self.lease_end, sent + self.session_s)

    def _answered(self) -> None:
        limit = time.monotonic() + self.session_s + self.renewal_slack_s
        self.lease_limit = max(self.lease_limit, limit)

    def tps(self, partitions: set[int]) -> set[TopicPartition]:
        return {(self.topic, p) for p in partitions}

    def take(self, partitions: set[int], answered: float) -> None:
        """Process exactly `partitions` from now on."""
        self.journal.release(self, self.tps(self.owned - partitions))
        self.journal.acquire(self, self.tps(partitions - self.owned), answered)
        self.owned = set(partitions)

    def drop_all(self) -> None:
        self.journal.release(self, self.tps(self.owned))
        self.owned = set()

    # commits

    def commit_body(self, member_id: str, identity: int, offsets: dict[int, int]) -> dict:
        return {
            "groupId": self.group,
            "memberId": member_id,
            "generationIdOrMemberEpoch": identity,
            "topics": [
                {
                    "name": self.topic,
                    "partitions": [
                        {"partitionIndex": p, "committedOffset": o}
                        for p, o in sorted(offsets.items())
                    ],
                }
            ],
        }

    def commit(self) -> None:
        partitions = sorted(self.owned)
        offset = self.journal.next_offset()
        tps = [(self.topic, p) for p in partitions]
        sent = time.monotonic()
        body = self.commit_body(self.member_id, self.identity(), dict.fromkeys(partitions, offset))
        answer = self.caller.call("offset-commit", body)
        codes = {p["errorCode"] for p in answer.body["topics"][0]["partitions"]}
        if codes == {NONE}:
            self.journal.committed(self.name, tps, offset)
            self.renewed(sent)
            self.last_commit_ok = time.monotonic()
            return
        with self.journal.lock:
            self.journal.refused_commits += 1
        if answer.transport_errors:
            self.journal.unknown(tps, offset)  # an attempt cut by a kill may have landed
        if len(codes) != 1 or codes - self.refusals:
            self.journal.fail(f"{self.name}: commit answered {answer.body}")
        self.refused(codes.pop())

    refusals: set[int] = set()

    def refused(self, code: int) -> None:
        """A refused commit: the member learns its assignment is no longer current."""

    # the stall: a zombie

    def _stall(self) -> None:
        self.stalling.set()
        member_id, identity, partitions = self.member_id, self.identity(), sorted(self.owned)
        stalled, lease_end = time.monotonic(), self.lease_end
        # A stalled process is not processing anything; what it believes it holds is what
        # its zombie commit below will try to write.
        self.drop_all()
        socket = self._silence()
        self.journal.note(
            f"{self.name} stalls (id {member_id[:8]}, {identity}, {partitions}, socket "
            f"{socket or 'none'})"
        )
        watcher = Caller(self.caller.cluster, self.journal, self.rng, f"{self.name}-watch")
        # The latest the coordinator may keep it (its clock up to the skew behind), and room.
        deadline = max(stalled, self.lease_limit) + self.journal.skew_s + 40.0
        while member_id in self.member_ids(watcher):
            if time.monotonic() > deadline:
                self.journal.fail(f"{self.name}: still a member {deadline - stalled:.0f}s on")
                raise Aborted()
            self.journal.abort.wait(0.2)
        waited = time.monotonic() - stalled
        # Removed by the coordinator: wake up and commit with the old identity, as a paused
        # process resuming its work would.
        offset = self.journal.zombie_offset()
        zombie = Zombie(
            self.protocol, self.name, member_id, identity, partitions or [0], offset, waited
        )
        zombie.socket, zombie.lease_left_s = socket, lease_end - stalled
        body = self.commit_body(member_id, identity, dict.fromkeys(zombie.partitions, offset))
        answer = self.caller.call("offset-commit", body)
        zombie.codes = [p["errorCode"] for p in answer.body["topics"][0]["partitions"]]
        zombie.transport_errors = answer.transport_errors
        with self.journal.lock:
            self.journal.zombies.append(zombie)
        self.journal.note(f"{self.name} zombie commit after {waited:.1f}s: {zombie.codes}")
        if NONE in zombie.codes:
            self.journal.fail(
                f"zombie commit landed: {self.protocol} member {self.name} ({member_id}) "
                f"removed by the coordinator {waited:.1f}s into its stall, committed "
                f"{offset} to {zombie.partitions} with its old "
                f"{'generation' if self.protocol == 'classic' else 'epoch'} {identity}: "
                f"answered {answer.body}"
            )
        self.forget()
        if self.push is not None:
            self.push.want("")
            self.push.silent.clear()  # the restarted process opens its own
        self.stall_requested.clear()
        self.stalling.clear()

    def _silence(self) -> str:
        """The stalled member's push socket: kept open and silent, or crashed (half the
        time): what the zombie's report says ("" without one)."""
        if self.push is None:
            return ""
        if self._push_rng.random() < 0.5 and self.push.crash():
            return "crashed"
        self.push.silent.set()
        return "open" if self.push.is_open() else ""


class ClassicMember(Member):
    """A classic consumer: two-step join, the leader assigns (range) and syncs, heartbeats;
    eager: gives everything up before rejoining."""

    protocol = "classic"
    refusals = {UNKNOWN_MEMBER_ID, ILLEGAL_GENERATION, REBALANCE_IN_PROGRESS}

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._member_id = ""
        self.generation = -1
        self.needs_rejoin = True
        self.synced_generation = -1

    @property
    def member_id(self) -> str:
        return self._member_id

    def identity(self) -> int:
        return self.generation

    def exists(self) -> bool:
        return bool(self._member_id) and self.generation >= 0

    def ready(self) -> bool:
        return not self.needs_rejoin

    def forget(self) -> None:
        self.drop_all()
        self._member_id = ""
        self.generation = -1
        self.needs_rejoin = True

    def member_ids(self, caller: Caller) -> set[str]:
        body = caller.call("describe-groups", {"groups": [self.group]}).body["groups"][0]
        return {m["memberId"] for m in body["members"]}

    def refused(self, code: int) -> None:
        self.needs_rejoin = True
        if code == UNKNOWN_MEMBER_ID:
            self.forget()

    def step(self) -> None:
        if self.needs_rejoin:
            self._rebalance()
            return
        sent = time.monotonic()
        body = {"groupId": self.group, "generationId": self.generation, "memberId": self.member_id}
        code = self.caller.call("heartbeat", body).body["errorCode"]
        if code == NONE:
            self.renewed(sent)
        elif code in self.refusals:
            self.refused(code)
        else:
            self.journal.fail(f"{self.name}: heartbeat answered {code}")

    def _send_until_done(self, api: str, body: Callable[[], dict]) -> dict:
        """Re-send after a 202 (registered, not complete) until a 200."""
        deadline = time.monotonic() + REQUEST_DEADLINE_S
        while True:
            answer = self.caller.call(api, body())
            if answer.status == 200:
                return answer.body
            self._member_id = answer.body["memberId"]
            if time.monotonic() > deadline:
                self.journal.fail(f"{self.name}: {api} still 202 after {REQUEST_DEADLINE_S}s")
                raise Aborted()
            self.journal.abort.wait(answer.body["retryAfterMs"] / 1000)

    def _rebalance(self) -> None:
        self.drop_all()  # eager: nothing is processed while the group rebalances
        subscription = encode_subscription(Subscription(topics=[self.topic]))
        sent = time.monotonic()
        joined = self._send_until_done(
            "join-group",
            lambda: {
                "groupId": self.group,
                "memberId": self.member_id,
                "sessionTimeoutMs": int(self.session_s * 1000),
                "rebalanceTimeoutMs": 30_000,
                "protocolType": "consumer",
                "protocols": [
                    {"name": "range", "metadata": base64.b64encode(subscription).decode()}
                ],
            },
        )
        code = joined["errorCode"]
        if code == MEMBER_ID_REQUIRED:
            self._member_id = joined["memberId"]
            return
        if code in (REBALANCE_IN_PROGRESS, ILLEGAL_GENERATION):
            return
        if code == UNKNOWN_MEMBER_ID:
            self._member_id = ""
            return
        if code != NONE:
            self.journal.fail(f"{self.name}: join answered {joined}")
            raise Aborted()
        self._member_id = joined["memberId"]
        self.generation = joined["generationId"]
        self.renewed(sent)
        assignments: list[dict[str, str]] = []
        if joined["leader"] == self.member_id and not joined.get("skipAssignment"):
            ids = sorted(m["memberId"] for m in joined["members"])
            share, extra = divmod(self.partitions, len(ids))
            start = 0
            for i, member_id in enumerate(ids):
                count = share + (1 if i < extra else 0)
                parts = list(range(start, start + count))
                start += count
                data = encode_assignment(Assignment({self.topic: parts} if parts else {}))
                assignments.append(
                    {"memberId": member_id, "assignment": base64.b64encode(data).decode()}
                )
        synced = self._send_until_done(
            "sync-group",
            lambda: {
                "groupId": self.group,
                "generationId": self.generation,
                "memberId": self.member_id,
                "protocolType": "consumer",
                "protocolName": "range",
                "assignments": assignments,
            },
        )
        answered = time.monotonic()
        code = synced["errorCode"]
        if code in (REBALANCE_IN_PROGRESS, ILLEGAL_GENERATION):
            return
        if code == UNKNOWN_MEMBER_ID:
            self._member_id = ""
            return
        if code != NONE:
            self.journal.fail(f"{self.name}: sync answered {synced}")
            raise Aborted()
        data = base64.b64decode(synced.get("assignment") or "")
        parts = set(decode_assignment(data).partitions.get(self.topic, [])) if data else set()
        self.take(parts, answered)
        self.synced_generation = self.generation
        self.needs_rejoin = False


class ConsumerMember(Member):
    """A consumer-protocol (KIP-848) member: full heartbeats (epoch, subscription, what it
    owns), revokes and takes what each answer's assignment says; a fenced member starts over
    under a new member id."""

    protocol = "consumer"
    refusals = {UNKNOWN_MEMBER_ID, STALE_MEMBER_EPOCH, FENCED_MEMBER_EPOCH}

    def __init__(self, *args: Any, topic_id: str, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.topic_id = topic_id
        self._member_id = str(uuid.uuid4())
        self.epoch = 0

    @property
    def member_id(self) -> str:
        return self._member_id

    def identity(self) -> int:
        return self.epoch

    def ready(self) -> bool:
        return self.epoch > 0

    def forget(self) -> None:
        self.drop_all()
        self._member_id = str(uuid.uuid4())
        self.epoch = 0

    def member_ids(self, caller: Caller) -> set[str]:
        body = caller.call("consumer-group-describe", {"groupIds": [self.group]}).body
        return {m["memberId"] for m in body["groups"][0]["members"]}

    def refused(self, code: int) -> None:
        if code in (UNKNOWN_MEMBER_ID, FENCED_MEMBER_EPOCH):
            self.forget()

    def step(self) -> None:
        owned = [{"topicId": self.topic_id, "partitions": sorted(self.owned)}] if self.owned else []
        body = {
            "groupId": self.group,
            "memberId": self.member_id,
            "memberEpoch": self.epoch,
            "rebalanceTimeoutMs": 30_000,
            "subscribedTopicNames": [self.topic],
            "topicPartitions": owned if self.epoch > 0 else [],
        }
        sent = time.monotonic()
        answer = self.caller.call("consumer-group-heartbeat", body).body
        answered = time.monotonic()
        code = answer["errorCode"]
        if code == NONE:
            self.renewed(sent)
            self.epoch = answer["memberEpoch"]
            if answer.get("assignment") is not None:
                parts: set[int] = set()
                for tp in answer["assignment"]["topicPartitions"]:
                    assert tp["topicId"] == self.topic_id, answer
                    parts |= set(tp["partitions"])
                self.take(parts, answered)
        elif code in (UNKNOWN_MEMBER_ID, FENCED_MEMBER_EPOCH):
            self.forget()
        elif code != COORDINATOR_LOAD_IN_PROGRESS:  # 14: retry
            self.journal.fail(f"{self.name}: consumer-group-heartbeat answered {answer}")


# --- looking at the groups from outside ---


def classic_view(caller: Caller, group: str, topic: str) -> dict[str, Any]:
    body = caller.call("describe-groups", {"groups": [group]}).body["groups"][0]
    owned: dict[str, set[int]] = {}
    for m in body["members"]:
        data = base64.b64decode(m.get("memberAssignment") or "")
        owned[m["memberId"]] = (
            set(decode_assignment(data).partitions.get(topic, [])) if data else set()
        )
    return {"state": body["groupState"], "owned": owned}


def consumer_view(caller: Caller, group: str) -> dict[str, Any]:
    body = caller.call("consumer-group-describe", {"groupIds": [group]}).body["groups"][0]
    owned: dict[str, set[int]] = {}
    epochs: dict[str, int] = {}
    for m in body["members"]:
        owned[m["memberId"]] = {
            p
            for tp in (m.get("assignment") or {}).get("topicPartitions", [])
            for p in tp["partitions"]
        }
        epochs[m["memberId"]] = m["memberEpoch"]
    return {
        "state": body["groupState"],
        "owned": owned,
        "epochs": epochs,
        "epoch": body["groupEpoch"],
        "target": body["assignmentEpoch"],
    }


def doubles(owned: dict[str, set[int]]) -> dict[int, list[str]]:
    """Partitions the coordinator lists under more than one member."""
    seen: dict[int, list[str]] = {}
    for member_id, parts in owned.items():
        for p in parts:
            seen.setdefault(p, []).append(member_id)
    return {p: ids for p, ids in seen.items() if len(ids) > 1}


class Monitor:
    """Reads the groups from outside while the run goes on, each read through a random
    instance: offsets (no zombie offset, nothing older than acknowledged before the read,
    never back) and the coordinator's own assignments (no partition under two members)."""

    def __init__(
        self,
        cluster: Cluster,
        journal: Journal,
        rng: random.Random,
        groups: list[tuple[str, str, str, int]],  # (protocol, group, topic, partitions)
    ) -> None:
        self.caller = Caller(cluster, journal, rng, "monitor")
        self.journal = journal
        self.groups = groups
        self.stop = threading.Event()
        self.rounds = 0
        self.thread = threading.Thread(target=self._run, name="monitor", daemon=True)

    def start(self) -> Monitor:
        self.thread.start()
        return self

    def _run(self) -> None:
        try:
            while not self.stop.is_set():
                for protocol, group, topic, partitions in self.groups:
                    self.check_offsets(group, topic, partitions)
                    self.check_assignments(protocol, group, topic)
                self.rounds += 1
                self.stop.wait(MONITOR_EVERY_S)
        except Aborted:
            return
        except BaseException as error:
            self.journal.fail(f"monitor crashed: {error!r}")

    def fetch(self, group: str, topic: str, partitions: int) -> dict[int, int]:
        body = {
            "groups": [
                {
                    "groupId": group,
                    "topics": [{"name": topic, "partitionIndexes": list(range(partitions))}],
                }
            ]
        }
        answer = self.caller.call("offset-fetch", body).body["groups"][0]
        assert answer["errorCode"] == NONE, answer
        return {
            p["partitionIndex"]: p["committedOffset"] for p in answer["topics"][0]["partitions"]
        }

    def check_offsets(self, group: str, topic: str, partitions: int) -> None:
        with self.journal.lock:
            before = {p: self.journal.acked.get((topic, p), -1) for p in range(partitions)}
        for p, offset in self.fetch(group, topic, partitions).items():
            self.journal.observe((topic, p), offset, before[p])

    def check_assignments(self, protocol: str, group: str, topic: str) -> None:
        if protocol == "classic":
            view = classic_view(self.caller, group, topic)
            if view["state"] != "Stable":  # assignments are of one generation once Stable
                return
        else:
            view = consumer_view(self.caller, group)
        twice = doubles(view["owned"])
        if twice:
            self.journal.fail(
                f"{group}: the coordinator lists partitions under two members: {twice}"
            )
