"""The classic protocol from the member's side: two-step join, 202 polling, the leader's
assignment, sync, heartbeats, leave. Eager members revoke everything before rejoining;
cooperative members (KIP-429) keep what they own and revoke only what moved."""

from __future__ import annotations

import base64
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from ..core.consumer_protocol import (
    Assignment,
    ConsumerProtocolError,
    Subscription,
    decode_assignment,
    decode_subscription,
    encode_assignment,
    encode_subscription,
)
from ..errors import Errors
from .assignors import ASSIGNORS, COOPERATIVE_ASSIGNORS, TopicPartition
from .errors import FencedInstance, GroupcoordError
from .transport import Transport

PROTOCOL_TYPE = "consumer"


@dataclass
class JoinResult:
    """The outcome of one rebalance round, for the listener."""

    revoked: set[TopicPartition] = field(default_factory=set)
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
        partition_counts: Callable[[list[str]], dict[str, int]],
        *,
        assignors: list[str],
        session_timeout_ms: int,
        rebalance_timeout_ms: int,
        instance_id: str | None = None,
    ) -> None:
        unknown = [a for a in assignors if a not in ASSIGNORS]
        if unknown or not assignors:
            raise ValueError(f"unknown assignor(s) {unknown}; choose from {sorted(ASSIGNORS)}")
        self.transport = transport
        self.group_id = group_id
        self.topics = topics
        self.partition_counts = partition_counts
        self.assignors = assignors
        self.session_timeout_ms = session_timeout_ms
        self.rebalance_timeout_ms = rebalance_timeout_ms
        self.instance_id = instance_id
        self.member_id = ""
        self.generation = -1
        self.owned: set[TopicPartition] = set()
        self.heartbeat_interval_ms = max(1, session_timeout_ms // 3)
        self.subscribed: list[str] = []

    @property
    def cooperative(self) -> bool:
        return self.assignors[0] in COOPERATIVE_ASSIGNORS

    # --- a rebalance round ---

    def rejoin(self, before_join: Callable[[set[TopicPartition]], None]) -> JoinResult:
        """Join and sync one round. `before_join` is called with what must be revoked before
        joining (everything for eager members, nothing for cooperative ones)."""
        if not self.cooperative and self.owned:
            before_join(set(self.owned))
            revoked_first = set(self.owned)
            self.owned = set()
        else:
            revoked_first = set()
        joined = self._join()
        assignment = self._sync(joined)
        result = JoinResult(revoked=revoked_first)
        if self.cooperative:
            result.revoked = self.owned - assignment
            result.rejoin = bool(result.revoked)
        result.assigned = assignment - self.owned
        self.owned = assignment
        return result

    def _metadata(self) -> str:
        self.subscribed = sorted(self.topics())
        owned: dict[str, list[int]] = {}
        for tp in sorted(self.owned):
            owned.setdefault(tp.topic, []).append(tp.partition)
        sub = Subscription(
            topics=self.subscribed, owned_partitions=owned, generation_id=self.generation, version=2
        )
        return base64.b64encode(encode_subscription(sub)).decode("ascii")

    def _join(self) -> dict:
        metadata = self._metadata()
        while True:
            body = {
                "groupId": self.group_id,
                "sessionTimeoutMs": self.session_timeout_ms,
                "rebalanceTimeoutMs": self.rebalance_timeout_ms,
                "memberId": self.member_id,
                "groupInstanceId": self.instance_id,
                "protocolType": PROTOCOL_TYPE,
                "protocols": [{"name": name, "metadata": metadata} for name in self.assignors],
            }
            reply = self.transport().call("join-group", body)
            if reply.status == 202:
                self.member_id = reply.body["memberId"]
                time.sleep(reply.body.get("retryAfterMs", 100) / 1000)
                continue
            error = Errors(reply.body.get("errorCode", 0))
            if error == Errors.MEMBER_ID_REQUIRED:
                self.member_id = reply.body["memberId"]
                continue
            if error == Errors.UNKNOWN_MEMBER_ID:
                self.member_id = ""
                raise RejoinNeeded(error, lost=True)
            if error == Errors.FENCED_INSTANCE_ID:
                raise FencedInstance("another member took this groupInstanceId", error)
            if error in (Errors.REBALANCE_IN_PROGRESS, Errors.ILLEGAL_GENERATION):
                raise RejoinNeeded(error)
            if error != Errors.NONE:
                raise GroupcoordError(f"join-group failed: {error.name}", error)
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
                subscriptions[member["memberId"]] = decode_subscription(
                    base64.b64decode(member["metadata"])
                )
            except ConsumerProtocolError:
                subscriptions[member["memberId"]] = Subscription([])
        topics = sorted({t for s in subscriptions.values() for t in s.topics})
        counts = self.partition_counts(topics)
        assignor = ASSIGNORS[joined["protocolName"]]
        plan = assignor(subscriptions, counts)
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
        while True:
            reply = self.transport().call("sync-group", body)
            if reply.status == 202:
                time.sleep(reply.body.get("retryAfterMs", 100) / 1000)
                continue
            error = Errors(reply.body.get("errorCode", 0))
            if error == Errors.FENCED_INSTANCE_ID:
                raise FencedInstance("another member took this groupInstanceId", error)
            if error != Errors.NONE:
                raise RejoinNeeded(error, lost=error == Errors.UNKNOWN_MEMBER_ID)
            raw = base64.b64decode(reply.body.get("assignment") or "")
            try:
                assigned = decode_assignment(raw).partitions
            except ConsumerProtocolError:
                assigned = {}
            return {TopicPartition(t, p) for t, parts in assigned.items() for p in parts}

    # --- between rounds ---

    def heartbeat(self) -> Errors:
        reply = self.transport().call(
            "heartbeat",
            {
                "groupId": self.group_id,
                "generationId": self.generation,
                "memberId": self.member_id,
                "groupInstanceId": self.instance_id,
            },
            timeout_s=max(1.0, self.session_timeout_ms / 1000),
        )
        return Errors(reply.body.get("errorCode", 0))

    def leave(self) -> None:
        if not self.member_id or self.instance_id:
            return  # a static member leaves temporarily: its session timeout frees it
        self.transport().call(
            "leave-group",
            {"groupId": self.group_id, "members": [{"memberId": self.member_id}]},
        )
        self.member_id, self.generation = "", -1

    def reset(self) -> None:
        """Forget the membership (UNKNOWN_MEMBER_ID / fenced): the next join starts afresh."""
        self.member_id, self.generation = "", -1

    def commit_fields(self) -> dict:
        return {
            "generationIdOrMemberEpoch": self.generation,
            "memberId": self.member_id,
            "groupInstanceId": self.instance_id,
        }
