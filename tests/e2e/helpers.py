"""What the end-to-end tests share: the coordinator's test settings, members that poll on
their own threads, a listener that records what it is told, and waiting with deadlines."""

from __future__ import annotations

import socket
import threading
import time
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from groupcoord.client import GroupMember, TopicPartition
from groupcoord.client.transport import Transport

# The coordinator as the e2e tests run it: short timers so that failures are detected in
# seconds. The consumer-protocol session is 5 s rather than 2 s: beside two busy loops on the 2
# cores (.ci/under-load) a heartbeat took several seconds, and 3 s sessions expired members
# that were alive, so that a group never settled.
CONSUMER_SESSION_MS = 5000
CONSUMER_HEARTBEAT_MS = 200
SETTINGS = {
    "group.consumer.heartbeat.interval.ms": str(CONSUMER_HEARTBEAT_MS),
    "group.consumer.min.heartbeat.interval.ms": "100",
    "group.consumer.session.timeout.ms": str(CONSUMER_SESSION_MS),
    "group.consumer.min.session.timeout.ms": "1000",
    "group.min.session.timeout.ms": "100",
    "group.initial.rebalance.delay.ms": "100",
    "groupcoord.barrier.hold.ms": "300",
    "groupcoord.sweep.interval.ms": "200",
    # Streams groups (examples/streams_counter.py): the consumer protocol's timers, one standby.
    "group.streams.heartbeat.interval.ms": str(CONSUMER_HEARTBEAT_MS),
    "group.streams.min.heartbeat.interval.ms": "100",
    "group.streams.session.timeout.ms": str(CONSUMER_SESSION_MS),
    "group.streams.min.session.timeout.ms": "1000",
    "group.streams.initial.rebalance.delay.ms": "100",
    "group.streams.assignment.interval.ms": "0",
    "group.streams.num.standby.replicas": "1",
}
SWEEP_S = 0.2

# Classic members choose their own session timeout and heartbeat interval. 8 s rather than
# 2 s: a classic rebalance round (join barrier, the leader's assignment, sync) can take a few
# seconds on two busy cores, and a member does not heartbeat during it; a heartbeat's own
# budget is the session less 2 s (client/transport.py), and beside two busy loops
# (.ci/under-load) heartbeats ran past the 3 s that a 5 s session left them, so that three
# members never settled. Heartbeats every 500 ms, so a rebalance is heard of quickly.
CLASSIC_SESSION_MS = 8000
CLASSIC_HEARTBEAT_MS = 500
CLASSIC_REBALANCE_MS = 15000

# What a failure detection may take beyond "session timeout + one heartbeat interval": the
# sweeper's period, the rebalance itself (a classic join/sync round, or the consumer
# protocol's revoke/ack steps) and two busy CI cores.
SLACK_S = 8.0
# Generous: a real-time bound, met in seconds on an idle machine (under load, tens of seconds).
CONVERGE_S = 90.0
# How long no listener may have been called for a group to count as settled: several
# heartbeat intervals of either protocol, so a pending rebalance would have been heard of.
QUIET_S = 2.0


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def create_topic(url: str, name: str, partitions: int) -> str:
    reply = Transport(url).call(
        "create-topics", {"topics": [{"name": name, "numPartitions": partitions}]}
    )
    topic = reply.body["topics"][0]
    assert topic["errorCode"] == 0, topic
    return topic["topicId"]


def grow_topic(url: str, name: str, partitions: int) -> None:
    reply = Transport(url).call(
        "create-partitions", {"topics": [{"name": name, "count": partitions}]}
    )
    assert reply.body["results"][0]["errorCode"] == 0, reply.body


def wait_until(
    condition: Callable[[], Any], timeout_s: float, what: str, interval_s: float = 0.05
) -> Any:
    """Poll `condition` until it is truthy; fail naming `what` at the deadline."""
    deadline = time.monotonic() + timeout_s
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {timeout_s:.0f}s: {what}")
        time.sleep(interval_s)


@dataclass
class Event:
    at: float
    kind: str  # revoked | assigned | lost
    partitions: frozenset[TopicPartition]


@dataclass
class Recorder:
    """A RebalanceListener that records every call with its time."""

    events: list[Event] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def _add(self, kind: str, partitions: set[TopicPartition]) -> None:
        with self.lock:
            self.events.append(Event(time.monotonic(), kind, frozenset(partitions)))

    def on_partitions_revoked(self, partitions: set[TopicPartition]) -> None:
        self._add("revoked", partitions)

    def on_partitions_assigned(self, partitions: set[TopicPartition]) -> None:
        self._add("assigned", partitions)

    def on_partitions_lost(self, partitions: set[TopicPartition]) -> None:
        self._add("lost", partitions)

    def since(self, at: float, kind: str | None = None) -> list[Event]:
        with self.lock:
            return [e for e in self.events if e.at >= at and (kind is None or e.kind == kind)]


class Polled:
    """A GroupMember polled on its own thread, as a consumer's main loop would."""

    def __init__(self, member: GroupMember, recorder: Recorder) -> None:
        self.member = member
        self.recorder = recorder
        self.errors: list[BaseException] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self.member.poll(0.1)
            except Exception as error:
                self.errors.append(error)
                time.sleep(0.1)

    @property
    def owned(self) -> set[TopicPartition]:
        return self.member.assignment()

    def stop_polling(self) -> None:
        self._stop.set()
        self._thread.join(timeout=30)
        assert not self._thread.is_alive(), "poll() did not return"

    def crash(self) -> None:
        """Stop as a killed process would: no more polls or heartbeats, no leave."""
        self.stop_polling()
        self.member._simulate_crash()

    def close(self) -> None:
        self.stop_polling()
        self.member.close()


def start_member(
    url: str,
    group: str,
    topics: list[str],
    protocol: str,
    assignors: Iterable[str] = ("range",),
    instance_id: str | None = None,
    client_id: str = "e2e",
) -> Polled:
    recorder = Recorder()
    classic = protocol == "classic"
    member = GroupMember(
        url,
        group,
        topics=topics,
        protocol=protocol,
        assignors=tuple(assignors),
        listener=recorder,
        instance_id=instance_id,
        session_timeout_ms=CLASSIC_SESSION_MS if classic else CONSUMER_SESSION_MS,
        rebalance_timeout_ms=CLASSIC_REBALANCE_MS,
        heartbeat_interval_ms=CLASSIC_HEARTBEAT_MS if classic else None,
        client_id=client_id,
    )
    return Polled(member, recorder)


def all_partitions(topic: str, count: int) -> set[TopicPartition]:
    return {TopicPartition(topic, p) for p in range(count)}


def balanced(members: list[Polled], partitions: set[TopicPartition]) -> bool:
    """Every partition owned by exactly one member, sizes within one of each other."""
    owned = [m.owned for m in members]
    if sum(len(o) for o in owned) != len(partitions) or set().union(*owned) != partitions:
        return False
    return max(map(len, owned)) - min(map(len, owned)) <= 1


def settled(
    url: str, group: str, protocol: str, members: list[Polled], partitions: set[TopicPartition]
) -> bool:
    """Balanced, the coordinator says the group is Stable with exactly these members, and no
    member's listener was called for the last QUIET_S. A balanced moment alone can fall inside
    a rebalance that is still moving partitions (a cooperative round's follow-up)."""
    if not balanced(members, partitions):
        return False
    described = describe_group(url, group, protocol)
    if described["groupState"] != "Stable":
        return False
    if {m["memberId"] for m in described["members"]} != {p.member.member_id for p in members}:
        return False
    quiet_since = time.monotonic() - QUIET_S
    return not any(m.recorder.since(quiet_since) for m in members)


def heartbeat_interval_s(protocol: str) -> float:
    if protocol == "classic":
        return CLASSIC_HEARTBEAT_MS / 1000
    return CONSUMER_HEARTBEAT_MS / 1000


def session_s(protocol: str) -> float:
    return (CLASSIC_SESSION_MS if protocol == "classic" else CONSUMER_SESSION_MS) / 1000


def describe_group(url: str, group: str, protocol: str) -> dict[str, Any]:
    """The group as its protocol's describe API answers for it now."""
    transport = Transport(url)
    if protocol == "classic":
        return transport.call("describe-groups", {"groups": [group]}).body["groups"][0]
    body = transport.call("consumer-group-describe", {"groupIds": [group]}).body
    return body["groups"][0]


def member_ids(url: str, group: str, protocol: str) -> set[str]:
    """The members the coordinator lists for the group now."""
    described = describe_group(url, group, protocol)
    assert described["errorCode"] == 0, described
    return {m["memberId"] for m in described["members"]}


def beats_since(member: GroupMember, at: float) -> bool:
    """The member had a successful heartbeat (or join) after `at`."""
    return member._last_ok > at


def no_errors(members: Iterable[Polled]) -> None:
    for m in members:
        assert not m.errors, f"poll() raised: {m.errors!r}"
