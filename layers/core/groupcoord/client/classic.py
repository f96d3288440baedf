"""The classic protocol from the member's side: two-step join, 202 polling, the leader's
assignment, sync, heartbeats, leave. Eager members revoke everything before rejoining;
cooperative members (KIP-429) keep what they own and revoke only what moved."""

from __future__ import annotations

import base64
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace

from ..errors import Errors
from ..wire.consumer_protocol import (
    Assignment,
    ConsumerProtocolError,
    Subscription,
    decode_assignment,
    decode_subscription,
    encode_assignment,
    encode_subscription,
)
from .assignors import (
    ASSIGNORS,
    COOPERATIVE_ASSIGNORS,
    Blocked,
    TopicPartition,
    encode_cooperative_user_data,
    encode_sticky_user_data,
    with_cooperative_generation,
    with_sticky_memory,
)
from .errors import (
    RETRIABLE_ERRORS,
    CoordinatorUnavailable,
    FencedInstance,
    GroupcoordError,
    error_of,
)
from .lags import LagReports
from .transport import Reply, Transport

PROTOCOL_TYPE = "consumer"
STICKY_USER_DATA = frozenset({"sticky"})  # eager: remembers through userData
COOPERATIVE_STICKY = "cooperative-sticky"  # its userData: the generation (Kafka's)


@dataclass
class JoinResult:
    """The outcome of one rebalance round, for the listener."""

    revoked: set[TopicPartition] = field(default_factory=set)  # after the sync (cooperative)
    assigned: set[TopicPartition] = field(default_factory=set)
    lost: set[TopicPartition] = field(default_factory=set)
    rejoin: bool = False  # cooperative: something was revoked, rejoin at once


class RejoinNeeded(Exception):
    """The round failed with an error that a fresh join resolves."""

    def __init__(self, error: Errors, lost: bool = False) -> None:
        super().__init__(error.name)
        self.error = error
        self.lost = lost


class ClassicMembership:
    def __init__(
        self,
        transport: Callable[[], Transport],
        group_id: str,
        topics: Callable[[], list[str]],
        leader_partitions: Callable[[list[str]], tuple[dict[str, int], Blocked]],
        *,
        assignors: list[str],
        session_timeout_ms: int,
        rebalance_timeout_ms: int,
        instance_id: str | None = None,
        heartbeat_interval_ms: int | None = None,
        topic_id: Callable[[str], str | None] = lambda _: None,
    ) -> None:
        unknown = [a for a in assignors if a not in ASSIGNORS]
        if unknown or not assignors:
            raise ValueError(f"unknown assignor(s) {unknown}; choose from {sorted(ASSIGNORS)}")
        self.transport = transport
        self.group_id = group_id
        self.topics = topics
        # The subscribed topics' partition counts and the partitions not assignable to the
        # group, as the leader's metadata (asked with the groupId) tells them.
        self.leader_partitions = leader_partitions
        self.assignors = assignors
        self.session_timeout_ms = session_timeout_ms
        self.rebalance_timeout_ms = rebalance_timeout_ms
        self.instance_id = instance_id
        self.member_id = ""
        self.generation = -1
        self.owned: set[TopicPartition] = set()
        self._lags = LagReports(topic_id)
        self.heartbeat_interval_ms = max(1, session_timeout_ms // 3)
        # Kafka's heartbeat.interval.ms is the client's choice; over HTTP it travels as the
        # join-group's heartbeatFrequency (heartbeats per session), with the failed-heartbeat
        # threshold equal to it so that the coordinator still waits one session timeout.
        self.heartbeat_frequency: int | None = None
        if heartbeat_interval_ms is not None:
            if not 0 < heartbeat_interval_ms < session_timeout_ms:
                raise ValueError("heartbeat_interval_ms must be below session_timeout_ms")
            self.heartbeat_frequency = max(1, session_timeout_ms // heartbeat_interval_ms)
            self.heartbeat_interval_ms = session_timeout_ms // self.heartbeat_frequency
        self.subscribed: list[str] = []
        # The last assignment and its generation: the eager sticky assignor's userData.
        self.previous: set[TopicPartition] = set()
        self.previous_generation = -1

    @property
    def cooperative(self) -> bool:
        """Kafka's rule: COOPERATIVE only if every listed assignor supports it. The group may
        pick any of them, and one that is not cooperative (range, in the upgrade path
        ["cooperative-sticky", "range"]) hands out partitions their owners still keep."""
        return all(name in COOPERATIVE_ASSIGNORS for name in self.assignors)

    # --- a rebalance round ---

    def rejoin(self, before_join: Callable[[set[TopicPartition]], None]) -> JoinResult:
        """Join and sync one round. `before_join` is called with what must be revoked before
        joining: everything for eager members; for cooperative ones the partitions of topics
        no longer subscribed (no assignor may keep them, and claiming them would hold them
        from everyone for a round)."""
        self.subscribed = sorted(self.topics())
        if self.cooperative:
            revoked_first = {tp for tp in self.owned if tp.topic not in self.subscribed}
        else:
            revoked_first = set(self.owned)
        if revoked_first:
            before_join(revoked_first)
            self.owned -= revoked_first
        joined = self._join()
        assignment = self._sync(joined)
        result = JoinResult()
        if any(tp.topic not in self.subscribed for tp in assignment):
            # Kafka's consumer refuses an assignment that does not match its subscription
            # (the subscription changed after the join, or a leader's mistake): it keeps
            # what it has and rejoins with the current subscription.
            result.rejoin = True
            return result
        if self.cooperative:
            result.revoked = self.owned - assignment
            result.rejoin = bool(result.revoked)
        result.assigned = assignment - self.owned
        self.owned = assignment
        self.previous, self.previous_generation = set(assignment), self.generation
        return result

    def _metadata(self) -> dict[str, str]:
        """Each protocol's metadata: Kafka's ConsumerProtocol subscription (v2), with the
        previous assignment as userData for the eager sticky assignor."""
        owned = _by_topic(self.owned)
        metadata = {}
        for name in self.assignors:
            user_data = None
            if name in STICKY_USER_DATA and self.previous_generation >= 0:
                user_data = encode_sticky_user_data(
                    _by_topic(self.previous), self.previous_generation
                )
            elif name == COOPERATIVE_STICKY:
                user_data = encode_cooperative_user_data(self.generation)
            sub = Subscription(
                topics=self.subscribed,
                user_data=user_data,
                owned_partitions=owned,
                generation_id=self.generation,
                version=2,
            )
            metadata[name] = base64.b64encode(encode_subscription(sub)).decode("ascii")
        return metadata

    def _join(self) -> dict:
        metadata = self._metadata()
        deadline = time.monotonic() + self._barrier_limit_s()
        while True:
            body = {
                "groupId": self.group_id,
                "sessionTimeoutMs": self.session_timeout_ms,
                "rebalanceTimeoutMs": self.rebalance_timeout_ms,
                "memberId": self.member_id,
                "groupInstanceId": self.instance_id,
                "protocolType": PROTOCOL_TYPE,
                "protocols": [{"name": n, "metadata": metadata[n]} for n in self.assignors],
            }
            if self.heartbeat_frequency is not None:
                body["heartbeatFrequency"] = self.heartbeat_frequency
                body["failedHeartbeatThreshold"] = self.heartbeat_frequency
            reply = self.transport().call("join-group", body)
            if reply.status == 202:
                self.member_id = reply.body["memberId"]
                self._wait_at_barrier("join-group", reply, deadline)
                continue
            error = error_of(reply.body)
            if error == Errors.MEMBER_ID_REQUIRED:
                self.member_id = reply.body["memberId"]
                continue
            if error == Errors.UNKNOWN_MEMBER_ID:
                self.reset()
                raise RejoinNeeded(error, lost=True)
            if error == Errors.FENCED_INSTANCE_ID:
                raise FencedInstance("another member took this groupInstanceId", error)
            if error in (Errors.REBALANCE_IN_PROGRESS, Errors.ILLEGAL_GENERATION):
                raise RejoinNeeded(error)
            if error in RETRIABLE_ERRORS:
                raise CoordinatorUnavailable(f"join-group: {error.name}", error)
            if error != Errors.NONE:
                raise GroupcoordError(
                    f"join-group failed: {error.name}: {reply.body.get('errorMessage') or ''}",
                    error,
                )
            self.member_id = reply.body["memberId"]
            self.generation = reply.body["generationId"]
            self.heartbeat_interval_ms = reply.body.get("heartbeatIntervalMs") or (
                self.session_timeout_ms // 3
            )
            return reply.body

    def _leader_assignments(self, joined: dict) -> list[dict]:
        if joined.get("skipAssignment"):
            return []
        subscriptions: dict[str, Subscription] = {}
        for member in joined["members"]:
            try:
                subscriptions[member["memberId"]] = replace(
                    decode_subscription(base64.b64decode(member["metadata"])),
                    group_instance_id=member.get("groupInstanceId"),
                )
            except ConsumerProtocolError:
                subscriptions[member["memberId"]] = Subscription([])
        if joined["protocolName"] in STICKY_USER_DATA:
            subscriptions = {m: with_sticky_memory(s) for m, s in subscriptions.items()}
        elif joined["protocolName"] == COOPERATIVE_STICKY:
            subscriptions = {m: with_cooperative_generation(s) for m, s in subscriptions.items()}
        topics = sorted({t for s in subscriptions.values() for t in s.topics})
        counts, blocked = self.leader_partitions(topics)
        assignor = ASSIGNORS[joined["protocolName"]]
        plan = assignor(subscriptions, counts, blocked)
        assignments = []
        for member_id, parts in plan.items():
            by_topic: dict[str, list[int]] = {}
            for tp in parts:
                by_topic.setdefault(tp.topic, []).append(tp.partition)
            data = encode_assignment(Assignment(by_topic))
            assignments.append(
                {"memberId": member_id, "assignment": base64.b64encode(data).decode("ascii")}
            )
        return assignments

    def _sync(self, joined: dict) -> set[TopicPartition]:
        leader = joined["leader"] == self.member_id
        body = {
            "groupId": self.group_id,
            "generationId": self.generation,
            "memberId": self.member_id,
            "groupInstanceId": self.instance_id,
            "protocolType": PROTOCOL_TYPE,
            "protocolName": joined["protocolName"],
            "assignments": self._leader_assignments(joined) if leader else [],
        }
        deadline = time.monotonic() + self._barrier_limit_s()
        while True:
            reply = self.transport().call("sync-group", body)
            if reply.status == 202:
                self._wait_at_barrier("sync-group", reply, deadline)
                continue
            error = error_of(reply.body)
            if error == Errors.FENCED_INSTANCE_ID:
                raise FencedInstance("another member took this groupInstanceId", error)
            if error in RETRIABLE_ERRORS:
                raise CoordinatorUnavailable(f"sync-group: {error.name}", error)
            if error == Errors.UNKNOWN_MEMBER_ID:
                self.reset()
                raise RejoinNeeded(error, lost=True)
            if error != Errors.NONE:
                raise RejoinNeeded(error)
            raw = base64.b64decode(reply.body.get("assignment") or "")
            try:
                assigned = decode_assignment(raw).partitions
            except ConsumerProtocolError:
                assigned = {}
            return {TopicPartition(t, p) for t, parts in assigned.items() for p in parts}

    def _barrier_limit_s(self) -> float:
        # The coordinator completes a barrier within the rebalance timeout (a join) or hands
        # the leader's assignment out as soon as it has it (a sync); past that plus a margin
        # something is wrong: give up the round and let the caller start another.
        return self.rebalance_timeout_ms / 1000 + max(5.0, self.session_timeout_ms / 1000)

    @staticmethod
    def _wait_at_barrier(api: str, reply: Reply, deadline: float) -> None:
        if time.monotonic() >= deadline:
            raise CoordinatorUnavailable(f"{api}: the barrier did not complete in time")
        time.sleep(max(0.0, reply.body.get("retryAfterMs", 100)) / 1000)

    # --- between rounds ---

    def heartbeat(
        self, timeout_s: float | None = None, lags: dict[TopicPartition, int] | None = None
    ) -> Errors:
        """One heartbeat, carrying `lags` of owned partitions when they changed (the
        coordinator keeps them for describe-group-activity)."""
        partition_lags, sent = self._lags.body(lags or {}, set(self.owned), full=False)
        reply = self.transport().call(
            "heartbeat",
            {
                "groupId": self.group_id,
                "generationId": self.generation,
                "memberId": self.member_id,
                "groupInstanceId": self.instance_id,
                "partitionLags": partition_lags,
            },
            timeout_s=timeout_s,
            retries=0,
        )
        error = error_of(reply.body)
        if partition_lags is not None and error == Errors.NONE:
            self._lags.answered(sent)
        return error

    def leave(self) -> None:
        """Leave the group (a dynamic member); a static member sends nothing and so leaves
        temporarily, as Kafka's consumer does: its partitions wait for it (no rebalance) until
        its session timeout."""
        if not self.member_id or self.instance_id:
            return
        member_id = self.member_id
        self.reset()
        self.transport().call(
            "leave-group",
            {"groupId": self.group_id, "members": [{"memberId": member_id}]},
            retries=1,
        )

    def reset(self) -> None:
        """Forget the membership (UNKNOWN_MEMBER_ID / fenced): the next join starts afresh."""
        self.member_id, self.generation = "", -1
        self._lags.reset()

    def commit_fields(self) -> dict:
        return {
            "generationIdOrMemberEpoch": self.generation,
            "memberId": self.member_id,
            "groupInstanceId": self.instance_id,
        }


def _by_topic(partitions: set[TopicPartition]) -> dict[str, list[int]]:
    result: dict[str, list[int]] = {}
    for tp in sorted(partitions):
        result.setdefault(tp.topic, []).append(tp.partition)
    return result
