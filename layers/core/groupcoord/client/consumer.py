"""The consumer protocol (KIP-848) from the member's side: heartbeats carry the subscription
and what the member owns; responses carry its assignment; the member revokes what it lost
and acknowledges by reporting what it owns in the next heartbeat."""

from __future__ import annotations

import uuid
from collections.abc import Callable

from ..errors import Errors
from .assignors import TopicPartition
from .errors import FencedInstance, GroupcoordError
from .transport import Transport


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
        self.member_id = str(uuid.uuid4())
        self.epoch = 0
        self.heartbeat_interval_ms = 5000
        self._sent_owned: set[TopicPartition] | None = None

    def heartbeat(self, owned: set[TopicPartition]) -> set[TopicPartition] | None:
        """One heartbeat reporting `owned`; returns the new assignment when the coordinator
        sent one. Raises RejoinRequired or FencedInstance."""
        joining = self.epoch == 0
        body: dict = {
            "groupId": self.group_id,
            "memberId": self.member_id,
            "memberEpoch": self.epoch,
            "instanceId": self.instance_id,
            "rebalanceTimeoutMs": self.rebalance_timeout_ms if joining else -1,
            "subscribedTopicNames": (self.topics if joining and self.topics is not None else None),
            "subscribedTopicRegex": self.pattern if joining else None,
            "serverAssignor": self.assignor if joining else None,
            "topicPartitions": None,
        }
        if joining or owned != self._sent_owned:
            by_topic: dict[str, list[int]] = {}
            for tp in sorted(owned):
                tid = self.topic_id(tp.topic)
                if tid is not None:
                    by_topic.setdefault(tid, []).append(tp.partition)
            body["topicPartitions"] = [
                {"topicId": tid, "partitions": parts} for tid, parts in sorted(by_topic.items())
            ]
        reply = self.transport().call("consumer-group-heartbeat", body)
        error = Errors(reply.body.get("errorCode", 0))
        if error in (Errors.FENCED_MEMBER_EPOCH, Errors.UNKNOWN_MEMBER_ID):
            self.epoch = 0
            self._sent_owned = None
            raise RejoinRequired(error)
        if error == Errors.FENCED_INSTANCE_ID or error == Errors.UNRELEASED_INSTANCE_ID:
            raise FencedInstance(f"consumer-group-heartbeat: {error.name}", error)
        if error != Errors.NONE:
            raise GroupcoordError(
                f"consumer-group-heartbeat: {error.name}: {reply.body.get('errorMessage')}", error
            )
        if body["topicPartitions"] is not None:
            self._sent_owned = set(owned)
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

    def leave(self) -> None:
        epoch = -2 if self.instance_id else -1
        self.transport().call(
            "consumer-group-heartbeat",
            {
                "groupId": self.group_id,
                "memberId": self.member_id,
                "memberEpoch": epoch,
                "instanceId": self.instance_id,
            },
        )
        self.epoch = 0
        self._sent_owned = None

    def commit_fields(self) -> dict:
        return {
            "generationIdOrMemberEpoch": self.epoch,
            "memberId": self.member_id,
            "groupInstanceId": self.instance_id,
        }


class RejoinRequired(Exception):
    def __init__(self, error: Errors) -> None:
        super().__init__(error.name)
        self.error = error
