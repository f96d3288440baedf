"""A small classic-protocol client for the tests, speaking the HTTP contract.

`ClassicClient` is one member's raw requests: the two-step join (79), polling of the 202
"registered, not complete" answers until the 200, sync, heartbeat, leave.

`Consumer` is a consumer on top of it: it encodes its subscription with kafka-python's
ConsumerProtocol classes, computes the leader's assignment with kafka-python's assignors
(range, or cooperative-sticky for KIP-429), applies eager or cooperative revocation, and can
run a background loop (heartbeat, rejoin on 27, start over on 25) like a real client's poll
loop. An `Ownership` registry shared by the consumers of a test records any partition taken
while another consumer still holds it.

`shared_serve` starts one `groupcoord serve` per distinct settings for the whole test session,
so that the classic test modules share it (they use unique group ids).
"""

from __future__ import annotations

import atexit
import base64
import contextlib
import threading
import time
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

from kafka.coordinator.assignors.cooperative_sticky import CooperativeStickyAssignor
from kafka.coordinator.assignors.range import RangePartitionAssignor
from kafka.protocol.consumer.metadata import (
    ConsumerProtocolAssignment,
    ConsumerProtocolSubscription,
)

from tests.support.api import Answer, Api
from tests.support.servers import running_serve

# How long a join or sync may keep answering 202 before the client gives up (generous: the
# barrier may legitimately wait for a rebalance timeout).
BARRIER_DEADLINE_S = 30.0

NONE = 0
ILLEGAL_GENERATION = 22
INCONSISTENT_GROUP_PROTOCOL = 23
UNKNOWN_MEMBER_ID = 25
REBALANCE_IN_PROGRESS = 27
MEMBER_ID_REQUIRED = 79
FENCED_INSTANCE_ID = 82

# Short settings the classic tests run with (any value may be set low for tests).
FAST_SETTINGS = {
    "group.initial.rebalance.delay.ms": "200",
    "group.min.session.timeout.ms": "100",
    "groupcoord.barrier.hold.ms": "300",
    # Each sweep queries every deadline shard of the shared DynamoDB endpoint: sweeping every
    # 100 ms would take a good part of its capacity away from the tests.
    "groupcoord.sweep.interval.ms": "500",
}

TopicPartition = tuple[str, int]


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def unb64(text: str | None) -> bytes:
    return base64.b64decode(text or "")


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:10]}"


# --- one serve process per settings, shared by the whole session ---

_SERVERS: dict[tuple[str, tuple[tuple[str, str], ...]], str] = {}
_SERVERS_LOCK = threading.Lock()
_STACK = contextlib.ExitStack()
atexit.register(_STACK.close)


def shared_serve(dynamodb_endpoint: str | None, settings: dict[str, str] | None = None) -> str:
    """The base URL of a `groupcoord serve` with these settings, started on first use and
    stopped when the test process exits."""
    key = (dynamodb_endpoint, tuple(sorted((settings or {}).items())))
    with _SERVERS_LOCK:
        if key not in _SERVERS:
            _SERVERS[key] = _STACK.enter_context(running_serve(dynamodb_endpoint, settings))
        return _SERVERS[key]


# --- raw requests ---


class ProtocolError(AssertionError):
    """An answer the client did not expect."""


@dataclass
class ClassicClient:
    """One classic member's requests. 202s are polled with the same body after retryAfterMs."""

    base_url: str
    group_id: str
    protocols: list[tuple[str, bytes]] = field(default_factory=lambda: [("range", b"")])
    protocol_type: str = "consumer"
    session_timeout_ms: int = 6000
    rebalance_timeout_ms: int = -1
    instance_id: str | None = None
    client_id: str = "classic-test"
    heartbeat_frequency: int | None = None
    failed_heartbeat_threshold: int | None = None
    member_id: str = ""
    generation: int = -1
    leader: str = ""
    protocol_name: str | None = None
    heartbeat_interval_ms: int = 0
    accepted: int = 0  # how many 202s this client has been answered

    def __post_init__(self) -> None:
        self.api = Api(self.base_url, self.client_id)
        # (monotonic time sent, api, HTTP status, errorCode, generation, seconds taken): the
        # requests this client made, for timing checks and failure messages.
        self.log: list[tuple[float, str, int, int | None, int, float]] = []

    def _call(self, api: str, body: dict[str, Any]) -> Answer:
        sent = time.monotonic()
        answer = self.api.call(api, body)
        code = answer.body.get("errorCode") if isinstance(answer.body, dict) else None
        taken = round(time.monotonic() - sent, 3)
        self.log.append((sent, api, answer.status, code, self.generation, taken))
        return answer

    @property
    def is_leader(self) -> bool:
        return bool(self.member_id) and self.leader == self.member_id

    # join-group

    def join_body(self) -> dict[str, Any]:
        body: dict[str, Any] = {
            "groupId": self.group_id,
            "sessionTimeoutMs": self.session_timeout_ms,
            "rebalanceTimeoutMs": self.rebalance_timeout_ms,
            "memberId": self.member_id,
            "groupInstanceId": self.instance_id,
            "protocolType": self.protocol_type,
            "protocols": [{"name": n, "metadata": b64(m)} for n, m in self.protocols],
        }
        if self.heartbeat_frequency is not None:
            body["heartbeatFrequency"] = self.heartbeat_frequency
        if self.failed_heartbeat_threshold is not None:
            body["failedHeartbeatThreshold"] = self.failed_heartbeat_threshold
        return body

    def join_once(self) -> Answer:
        """One join-group request as it is (no 79 or 202 handling)."""
        return self._call("join-group", self.join_body())

    def join(self, deadline_s: float = BARRIER_DEADLINE_S, two_step: bool = True) -> dict:
        """Join until a 200 that is not 79: polls 202s, rejoins with the id a 79 hands out.
        Records the generation, leader and member id of a successful join."""
        return self._poll(self.join_once, deadline_s, two_step=two_step, on_ok=self._joined)

    def _joined(self, body: dict) -> None:
        if body["errorCode"] == NONE:
            self.member_id = body["memberId"]
            self.generation = body["generationId"]
            self.leader = body["leader"]
            self.protocol_name = body["protocolName"]
            self.heartbeat_interval_ms = body["heartbeatIntervalMs"]

    # sync-group

    def sync_once(self, assignments: dict[str, bytes] | None = None) -> Answer:
        body = {
            "groupId": self.group_id,
            "generationId": self.generation,
            "memberId": self.member_id,
            "groupInstanceId": self.instance_id,
            "protocolType": self.protocol_type,
            "protocolName": self.protocol_name,
            "assignments": [
                {"memberId": m, "assignment": b64(a)} for m, a in (assignments or {}).items()
            ],
        }
        return self._call("sync-group", body)

    def sync(
        self, assignments: dict[str, bytes] | None = None, deadline_s: float = BARRIER_DEADLINE_S
    ) -> dict:
        return self._poll(lambda: self.sync_once(assignments), deadline_s)

    # heartbeat and leave

    def heartbeat(self) -> int:
        answer = self._call(
            "heartbeat",
            {
                "groupId": self.group_id,
                "generationId": self.generation,
                "memberId": self.member_id,
                "groupInstanceId": self.instance_id,
            },
        )
        assert answer.status == 200, (answer.status, answer.body)
        return answer.body["errorCode"]

    def leave(self) -> dict:
        return self.api.ok(
            "leave-group",
            {
                "groupId": self.group_id,
                "members": [{"memberId": self.member_id, "groupInstanceId": self.instance_id}],
            },
        )

    # polling

    def _poll(
        self,
        send: Callable[[], Answer],
        deadline_s: float,
        two_step: bool = False,
        on_ok: Callable[[dict], None] | None = None,
        stop: threading.Event | None = None,
    ) -> dict:
        deadline = time.monotonic() + deadline_s
        while True:
            answer = send()
            if answer.status == 202:
                self.accepted += 1
                assert set(answer.body) == {"memberId", "retryAfterMs"}, answer.body
                self.member_id = answer.body["memberId"]
            elif answer.status == 200:
                body = answer.body
                if two_step and body["errorCode"] == MEMBER_ID_REQUIRED:
                    self.member_id = body["memberId"]
                    continue
                if on_ok is not None:
                    on_ok(body)
                return body
            else:
                raise ProtocolError(f"unexpected HTTP {answer.status}: {answer.body}")
            if time.monotonic() >= deadline:
                raise ProtocolError(f"still 202 after {deadline_s}s")
            if stop is not None and stop.is_set():
                raise Stopped()
            time.sleep(answer.body["retryAfterMs"] / 1000)


class Stopped(Exception):
    """The consumer was stopped while waiting."""


# --- consumers with kafka-python's protocol classes and assignors ---


class Ownership:
    """Which consumer holds which partition right now, across the consumers of a test.

    A partition taken while another consumer still holds it is a violation: eager members
    revoke everything before rejoining, cooperative members keep what they own and the leader
    must not hand it to anyone else in the same round (KIP-429)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.owner: dict[TopicPartition, str] = {}
        self.violations: list[str] = []
        self.moves: list[tuple[float, str, TopicPartition, str]] = []  # (t, who, tp, event)

    def acquire(self, who: str, partitions: Iterable[TopicPartition]) -> None:
        with self._lock:
            for tp in partitions:
                holder = self.owner.get(tp)
                if holder is not None and holder != who:
                    self.violations.append(f"{who} took {tp} while {holder} still held it")
                self.owner[tp] = who
                self.moves.append((time.monotonic(), who, tp, "acquire"))

    def release(self, who: str, partitions: Iterable[TopicPartition]) -> None:
        with self._lock:
            for tp in partitions:
                if self.owner.get(tp) == who:
                    del self.owner[tp]
                self.moves.append((time.monotonic(), who, tp, "release"))

    def held_by(self, who: str) -> set[TopicPartition]:
        with self._lock:
            return {tp for tp, holder in self.owner.items() if holder == who}


class Cluster:
    """What kafka-python's assignors ask of cluster metadata, read from the coordinator's own
    `metadata` API (as a real leader reads it from the brokers)."""

    def __init__(self, api: Api, topics: Iterable[str]) -> None:
        body = api.ok("metadata", {"topics": [{"name": t} for t in sorted(set(topics))]})
        self._partitions = {
            t["name"]: {p["partitionIndex"] for p in t["partitions"]}
            for t in body["topics"]
            if t["errorCode"] == NONE
        }

    def topics(self) -> set[str]:
        return set(self._partitions)

    def partitions_for_topic(self, topic: str) -> set[int] | None:
        return self._partitions.get(topic)


def encode_subscription(
    topics: Iterable[str], owned: Iterable[TopicPartition] = (), version: int = 0
) -> bytes:
    """A ConsumerProtocol Subscription as kafka-python encodes it."""
    fields: dict[str, Any] = {"version": version, "topics": sorted(topics), "user_data": b""}
    if version >= 1:
        by_topic: dict[str, list[int]] = {}
        for topic, partition in sorted(owned):
            by_topic.setdefault(topic, []).append(partition)
        fields["owned_partitions"] = [
            ConsumerProtocolSubscription.TopicPartition(topic=t, partitions=p)
            for t, p in by_topic.items()
        ]
    return ConsumerProtocolSubscription(**fields).encode()


def decode_assignment(data: bytes) -> set[TopicPartition]:
    if not data:
        return set()
    return {(tp.topic, tp.partition) for tp in ConsumerProtocolAssignment.decode(data).partitions()}


@dataclass
class Round:
    """One completed rebalance as a consumer saw it."""

    generation: int
    leader: bool
    assigned: set[TopicPartition]
    revoked: set[TopicPartition]
    # Leader only: what each member said it owned when it joined, and what the leader gave it.
    owned_by_member: dict[str, set[TopicPartition]] | None = None
    leader_assignment: dict[str, set[TopicPartition]] | None = None


class Consumer(ClassicClient):
    """A consumer group member: subscription, assignor, eager or cooperative revocation."""

    def __init__(
        self,
        base_url: str,
        group_id: str,
        topics: Iterable[str],
        *,
        name: str,
        ownership: Ownership,
        cooperative: bool = False,
        **kwargs: Any,
    ) -> None:
        self.topics = sorted(topics)
        self.name = name
        self.ownership = ownership
        self.cooperative = cooperative
        self.assignor: Any = CooperativeStickyAssignor() if cooperative else RangePartitionAssignor
        self.owned: set[TopicPartition] = set()
        self.rounds: list[Round] = []
        self.heartbeats: list[tuple[float, int]] = []  # (monotonic time sent, error code)
        self.needs_rejoin = True
        self.synced_generation = -1
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.error: BaseException | None = None
        # A heartbeat every twelfth of the session (500 ms at the default 6 s), with the same
        # expiry as Kafka's (one session of silence): a loop sees a rebalance soon after it
        # starts, so the tests do not wait a third of a session for each one.
        kwargs.setdefault("heartbeat_frequency", 12)
        kwargs.setdefault("failed_heartbeat_threshold", kwargs["heartbeat_frequency"])
        super().__init__(base_url, group_id, protocols=[], client_id=name, **kwargs)
        self._refresh_protocols()

    def _refresh_protocols(self) -> None:
        version = 1 if self.cooperative else 0
        owned = self.owned if self.cooperative else set()
        self.protocols = [(self.assignor.name, encode_subscription(self.topics, owned, version))]

    # the rebalance

    def _revoke(self, partitions: set[TopicPartition]) -> None:
        self.ownership.release(self.name, partitions)
        self.owned -= partitions

    def rebalance(self, deadline_s: float = BARRIER_DEADLINE_S) -> Round:
        """Join and sync until this consumer holds an assignment of a completed generation
        (cooperative: until a round that revoked nothing)."""
        deadline = time.monotonic() + deadline_s
        while True:
            if self._stop.is_set():
                raise Stopped()
            if time.monotonic() >= deadline:
                raise ProtocolError(f"{self.name}: no stable assignment within {deadline_s}s")
            if not self.cooperative:
                self._revoke(set(self.owned))  # eager: give everything up before rejoining
            self._refresh_protocols()
            joined = self._poll(
                self.join_once, deadline_s, two_step=True, on_ok=self._joined, stop=self._stop
            )
            code = joined["errorCode"]
            if code in (REBALANCE_IN_PROGRESS, ILLEGAL_GENERATION):
                continue
            if code == UNKNOWN_MEMBER_ID:
                self.member_id = ""
                self._revoke(set(self.owned))
                continue
            if code != NONE:
                raise ProtocolError(f"{self.name}: join answered {joined}")
            owned_by_member = None
            assignments: dict[str, bytes] = {}
            if self.is_leader and not joined["skipAssignment"]:
                assignments, owned_by_member = self._assign(joined["members"])
            synced = self._poll(
                lambda a=assignments: self.sync_once(a), deadline_s, stop=self._stop
            )
            code = synced["errorCode"]
            if code in (REBALANCE_IN_PROGRESS, ILLEGAL_GENERATION):
                continue
            if code == UNKNOWN_MEMBER_ID:
                self.member_id = ""
                self._revoke(set(self.owned))
                continue
            if code != NONE:
                raise ProtocolError(f"{self.name}: sync answered {synced}")
            assigned = decode_assignment(unb64(synced["assignment"]))
            revoked = self.owned - assigned
            self._revoke(revoked)
            self.ownership.acquire(self.name, assigned - self.owned)
            self.owned = set(assigned)
            self.synced_generation = self.generation
            round_ = Round(
                self.generation,
                self.is_leader,
                assigned,
                revoked,
                owned_by_member,
                {m: decode_assignment(a) for m, a in assignments.items()} if assignments else None,
            )
            self.rounds.append(round_)
            if self.cooperative and revoked:
                continue  # KIP-429: rejoin at once so the revoked partitions can move
            self.needs_rejoin = False
            return round_

    def _assign(
        self, members: list[dict]
    ) -> tuple[dict[str, bytes], dict[str, set[TopicPartition]]]:
        decoded = [
            SimpleNamespace(
                member_id=m["memberId"],
                group_instance_id=m.get("groupInstanceId"),
                metadata=ConsumerProtocolSubscription.decode(unb64(m["metadata"])),
            )
            for m in members
        ]
        topics = {t for m in decoded for t in m.metadata.topics}
        owned_by_member = {
            m.member_id: {
                (tp.topic, p)
                for tp in (getattr(m.metadata, "owned_partitions", None) or ())
                for p in tp.partitions
            }
            for m in decoded
        }
        result = self.assignor.assign(Cluster(self.api, topics), decoded)
        return {mid: a.encode() for mid, a in result.items()}, owned_by_member

    # the background loop

    def start(self) -> Consumer:
        self._thread = threading.Thread(target=self._loop, name=self.name, daemon=True)
        self._thread.start()
        return self

    def _loop(self) -> None:
        try:
            while not self._stop.is_set():
                if self.needs_rejoin:
                    self.rebalance()
                    continue
                sent = time.monotonic()
                code = self.heartbeat()
                self.heartbeats.append((sent, code))
                if code == REBALANCE_IN_PROGRESS:
                    self.needs_rejoin = True
                    continue
                if code in (UNKNOWN_MEMBER_ID, ILLEGAL_GENERATION, FENCED_INSTANCE_ID):
                    if code == UNKNOWN_MEMBER_ID:
                        self.member_id = ""
                    self._revoke(set(self.owned))
                    self.needs_rejoin = True
                    continue
                if code != NONE:
                    raise ProtocolError(f"{self.name}: heartbeat answered {code}")
                self._stop.wait(max(self.heartbeat_interval_ms, 10) / 1000)
        except Stopped:
            return
        except BaseException as error:  # surfaced by check()
            self.error = error

    def stop(self, timeout_s: float = 30) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout_s)
            assert not self._thread.is_alive(), f"{self.name} did not stop"

    def resume(self, rejoin: bool = False) -> Consumer:
        """Start the loop again after stop(), rejoining first if asked."""
        self._stop.clear()
        self.needs_rejoin = self.needs_rejoin or rejoin
        return self.start()

    def crash(self) -> None:
        """Stop dead: no leave, no more heartbeats. A crashed process holds nothing."""
        self.stop()
        self.ownership.release(self.name, set(self.owned))
        self.owned = set()

    def close(self) -> dict:
        """A graceful shutdown: stop the loop, revoke everything, leave the group."""
        self.stop()
        self._revoke(set(self.owned))
        return self.leave()

    def check(self) -> None:
        if self.error is not None:
            raise AssertionError(f"{self.name} failed: {self.error!r}") from self.error

    def settled_at(self, generation: int) -> bool:
        return not self.needs_rejoin and self.synced_generation == generation


# --- looking at a group from outside ---


def describe(api: Api, group_id: str) -> dict:
    return api.ok("describe-groups", {"groups": [group_id]})["groups"][0]


def wait_until(condition: Callable[[], Any], timeout_s: float, what: str, every_s: float = 0.1):
    """Poll `condition` until it is truthy (returned) or fail after `timeout_s`."""
    deadline = time.monotonic() + timeout_s
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() >= deadline:
            raise AssertionError(f"timed out after {timeout_s}s waiting for {what}")
        time.sleep(every_s)


def converged(api: Api, group_id: str, consumers: list[Consumer]) -> dict | None:
    """The group's description once it is Stable with exactly these consumers, all settled
    at its generation with their assignment applied; else None."""
    for consumer in consumers:
        consumer.check()
    # The consumers' own view first: it costs no request.
    generations = {c.synced_generation for c in consumers}
    if len(generations) != 1 or any(not c.settled_at(c.generation) for c in consumers):
        return None
    group = describe(api, group_id)
    if group["groupState"] != "Stable":
        return None
    if {m["memberId"] for m in group["members"]} != {c.member_id for c in consumers}:
        return None
    return group


def assignments_of(group: dict) -> dict[str, set[TopicPartition]]:
    return {
        m["memberId"]: decode_assignment(unb64(m["memberAssignment"])) for m in group["members"]
    }


def diagnosis(api: Api, group_id: str, consumers: list[Consumer], last: int = 12) -> str:
    """The group and each consumer's recent requests, for a failure message."""
    lines = [f"group: {describe(api, group_id)}"]
    start = min((c.log[0][0] for c in consumers if c.log), default=0.0)
    for c in consumers:
        lines.append(
            f"{c.name} id={c.member_id[-8:]} gen={c.generation} synced={c.synced_generation} "
            f"rejoin={c.needs_rejoin} leader={c.is_leader} error={c.error!r}"
        )
        for sent, api_name, status, code, generation, taken in c.log[-last:]:
            lines.append(
                f"    +{sent - start:7.3f}s {api_name} -> {status} {code} (gen {generation}, "
                f"{taken:.3f}s)"
            )
    return "\n".join(lines)


def settle(
    api: Api, group_id: str, consumers: list[Consumer], timeout_s: float, what: str = ""
) -> dict:
    """Wait until `converged`; fail with a diagnosis."""
    try:
        return wait_until(
            lambda: converged(api, group_id, consumers),
            timeout_s,
            what or f"{group_id} to settle",
        )
    except AssertionError as timeout:
        raise AssertionError(f"{timeout}\n{diagnosis(api, group_id, consumers)}") from None
