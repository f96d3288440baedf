"""The consumer protocol (KIP-848) from the member's side: heartbeats carry the subscription
and what the member owns; responses carry its assignment; the member revokes what it lost
and acknowledges by reporting what it owns in the next heartbeat."""

from __future__ import annotations

import uuid
from collections.abc import Callable

from ..errors import Errors
from .assignors import TopicPartition
from .errors import (
    RETRIABLE_ERRORS,
    CoordinatorUnavailable,
    FencedInstance,
    GroupcoordError,
    error_of,
)
from .lags import LagReports
from .transport import Transport

JOIN_EPOCH = 0
LEAVE_EPOCH = -1
STATIC_LEAVE_EPOCH = -2


class RejoinRequired(Exception):
    """The coordinator no longer knows this member at its epoch (FENCED_MEMBER_EPOCH,
    UNKNOWN_MEMBER_ID): its partitions are lost; it rejoins with epoch 0."""

    def __init__(self, error: Errors) -> None:
        super().__init__(error.name)
        self.error = error


class ConsumerMembership:
    def __init__(
        self,
        transport: Callable[[], Transport],
        group_id: str,
        *,
        topics: list[str] | None,
        pattern: str | None,
        assignor: str | None,
        rebalance_timeout_ms: int,
        instance_id: str | None,
        topic_name: Callable[[str], str | None],
        topic_id: Callable[[str], str | None],
    ) -> None:
        self.transport = transport
        self.group_id = group_id
        self.topics = topics
        self.pattern = pattern
        self.assignor = assignor
        self.rebalance_timeout_ms = rebalance_timeout_ms
        self.instance_id = instance_id
        self.topic_name = topic_name
        self.topic_id = topic_id
        # Generated once and kept for the member's life, rejoins included (KIP-848).
        self.member_id = str(uuid.uuid4())
        self.epoch = JOIN_EPOCH
        self.heartbeat_interval_ms = 5000
        self._sent_owned: set[TopicPartition] | None = None
        self._lags = LagReports(topic_id)
        # After a heartbeat that got no answer, the next one is "full" (every field, as
        # Kafka's consumer does): if the lost one was applied, the coordinator answers it
        # under its lost-response rule instead of fencing the member.
        self._full = True
        self._attempted = False  # a heartbeat was sent: the coordinator may know this member

    @property
    def joining(self) -> bool:
        return self.epoch == JOIN_EPOCH

    def heartbeat(
        self,
        owned: set[TopicPartition],
        timeout_s: float | None = None,
        lags: dict[TopicPartition, int] | None = None,
    ) -> set[TopicPartition] | None:
        """One heartbeat reporting `owned` (and `lags` on owned partitions, when they changed
        since the last answered heartbeat); returns the new assignment when the coordinator
        sent one. Raises RejoinRequired, FencedInstance, CoordinatorUnavailable (retry, after
        rediscovering the coordinator) or GroupcoordError (fatal: a bad subscription, group
        full, ...)."""
        joining = self.joining
        full = joining or self._full
        body: dict = {
            "groupId": self.group_id,
            "memberId": self.member_id,
            "memberEpoch": self.epoch,
            "instanceId": self.instance_id,
            "rebalanceTimeoutMs": self.rebalance_timeout_ms if full else -1,
            "subscribedTopicNames": self.topics if full else None,
            "subscribedTopicRegex": self.pattern if full else None,
            "serverAssignor": self.assignor if full else None,
            "topicPartitions": None,
        }
        if joining:
            # A (re)joining member owns nothing (Kafka rejects anything else).
            owned = set()
            body["topicPartitions"] = []
        elif full or owned != self._sent_owned:
            by_topic: dict[str, list[int]] = {}
            for tp in sorted(owned):
                tid = self.topic_id(tp.topic)
                if tid is not None:
                    by_topic.setdefault(tid, []).append(tp.partition)
            body["topicPartitions"] = [
                {"topicId": tid, "partitions": parts} for tid, parts in sorted(by_topic.items())
            ]
        body["partitionLags"], sent_lags = self._lags.body(lags or {}, owned, full)
        self._attempted = True
        self._full = True  # until an answer arrives
        reply = self.transport().call(
            "consumer-group-heartbeat", body, timeout_s=timeout_s, retries=0
        )
        self._full = False
        error = error_of(reply.body)
        message = f"consumer-group-heartbeat: {error.name}: {reply.body.get('errorMessage') or ''}"
        if error in (Errors.FENCED_MEMBER_EPOCH, Errors.UNKNOWN_MEMBER_ID):
            self.reset()
            raise RejoinRequired(error)
        if error in (Errors.FENCED_INSTANCE_ID, Errors.UNRELEASED_INSTANCE_ID):
            raise FencedInstance(message, error)
        if error in RETRIABLE_ERRORS:
            raise CoordinatorUnavailable(message, error)
        if error != Errors.NONE:
            raise GroupcoordError(message, error)
        if body["topicPartitions"] is not None:
            self._sent_owned = set(owned)
        if body["partitionLags"] is not None:
            self._lags.answered(sent_lags)
        self.epoch = reply.body["memberEpoch"]
        self.heartbeat_interval_ms = reply.body.get("heartbeatIntervalMs") or 5000
        assignment = reply.body.get("assignment")
        if assignment is None:
            return None
        result: set[TopicPartition] = set()
        for entry in assignment.get("topicPartitions", []):
            name = self.topic_name(entry["topicId"])
            if name is not None:
                result.update(TopicPartition(name, p) for p in entry["partitions"])
        return result

    def reset(self) -> None:
        """Forget the epoch: the next heartbeat rejoins (same member id, epoch 0)."""
        self.epoch = JOIN_EPOCH
        self._sent_owned = None
        self._lags.reset()
        self._full = True

    def leave(self) -> None:
        """Leave (-1), or for a static member leave temporarily (-2): the coordinator keeps
        its assignment for the instance's return until the session times out."""
        epoch = STATIC_LEAVE_EPOCH if self.instance_id else LEAVE_EPOCH
        self.reset()
        if not self._attempted:
            return  # never sent a heartbeat: the coordinator does not know this member
        self._attempted = False
        self.transport().call(
            "consumer-group-heartbeat",
            {
                "groupId": self.group_id,
                "memberId": self.member_id,
                "memberEpoch": epoch,
                "instanceId": self.instance_id,
            },
            retries=1,
        )

    def commit_fields(self) -> dict:
        return {
            "generationIdOrMemberEpoch": self.epoch,
            "memberId": self.member_id,
            "groupInstanceId": self.instance_id,
        }
