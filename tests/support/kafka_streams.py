"""Streams-group heartbeats shaped exactly as Kafka Streams' client sends them (its
StreamsGroupHeartbeatRequestManager, docs/streams.md "What Kafka Streams sends"), for tests
that replay a real application over HTTP, and the topologies of three typical applications as
its StreamThread describes them (a repartition topic only in repartitionSourceTopics, topology
epoch 0, replication factor -1, the topic configs it sets)."""

from __future__ import annotations

import uuid
from typing import Any

from tests.support.api import Api
from tests.support.streams import HB, TaskHolder, as_entries

REBALANCE_TIMEOUT_MS = 300_000  # max.poll.interval.ms's default
REPARTITION_CONFIGS = [
    {"key": "cleanup.policy", "value": "delete"},
    {"key": "message.timestamp.type", "value": "CreateTime"},
    {"key": "retention.ms", "value": "-1"},
    {"key": "segment.bytes", "value": "52428800"},
]
CHANGELOG_CONFIGS = [
    {"key": "cleanup.policy", "value": "compact"},
    {"key": "message.timestamp.type", "value": "CreateTime"},
]


def internal(name: str, configs: list[dict[str, str]]) -> dict[str, Any]:
    """A TopicInfo as Kafka Streams fills it: no partition count, replication.factor -1."""
    return {"name": name, "partitions": 0, "replicationFactor": -1, "topicConfigs": configs}


def subtopology(sid: str, **fields: Any) -> dict[str, Any]:
    """Every list present, as the client's request always has them."""
    empty = ("sourceTopics", "sourceTopicRegex", "stateChangelogTopics",
             "repartitionSinkTopics", "repartitionSourceTopics", "copartitionGroups")  # fmt: skip
    return {"subtopologyId": sid, **{key: [] for key in empty}, **fields}


def word_count(app: str, lines: str) -> dict[str, Any]:
    """lines -> flatMap -> groupBy(word) -> count: 0 reads `lines` and writes the repartition
    topic; 1 reads only that and counts into a store with a changelog."""
    rep = f"{app}-KSTREAM-AGGREGATE-STATE-STORE-0000000003-repartition"
    return {
        "epoch": 0,
        "subtopologies": [
            subtopology("0", sourceTopics=[lines], repartitionSinkTopics=[rep]),
            subtopology(
                "1",
                repartitionSourceTopics=[internal(rep, REPARTITION_CONFIGS)],
                stateChangelogTopics=[internal(f"{app}-counts-changelog", CHANGELOG_CONFIGS)],
            ),
        ],
    }


def stream_table_join(app: str, orders: str, customers: str) -> dict[str, Any]:
    """orders (a stream) joined with customers (a table): one stateful sub-topology whose two
    sources form a co-partition group (indexes into its sorted sourceTopics)."""
    return {
        "epoch": 0,
        "subtopologies": [
            subtopology(
                "0",
                sourceTopics=sorted([orders, customers]),
                stateChangelogTopics=[internal(f"{app}-customers-changelog", CHANGELOG_CONFIGS)],
                copartitionGroups=[
                    {"sourceTopics": [0, 1], "sourceTopicRegex": [], "repartitionSourceTopics": []}
                ],
            )
        ],
    }


def two_stage_aggregation(app: str, clicks: str) -> dict[str, Any]:
    """clicks -> groupBy(user) -> aggregate -> groupBy(region) -> aggregate: stages 1 and 2
    read only a repartition topic each, and both keep a store."""
    by_user, by_region = f"{app}-by-user-repartition", f"{app}-by-region-repartition"
    return {
        "epoch": 0,
        "subtopologies": [
            subtopology("0", sourceTopics=[clicks], repartitionSinkTopics=[by_user]),
            subtopology(
                "1",
                repartitionSourceTopics=[internal(by_user, REPARTITION_CONFIGS)],
                stateChangelogTopics=[internal(f"{app}-per-user-changelog", CHANGELOG_CONFIGS)],
                repartitionSinkTopics=[by_region],
            ),
            subtopology(
                "2",
                repartitionSourceTopics=[internal(by_region, REPARTITION_CONFIGS)],
                stateChangelogTopics=[internal(f"{app}-per-region-changelog", CHANGELOG_CONFIGS)],
            ),
        ],
    }


def offsets_of(values: dict[tuple[str, int], int]) -> list[dict[str, Any]]:
    return [
        {"subtopologyId": s, "partition": p, "offset": o} for (s, p), o in sorted(values.items())
    ]


class KafkaStreamsThread(TaskHolder):
    """One stream thread (one member) of a Kafka Streams process, as its client builds each
    heartbeat: the topology and process fields only with the join; the three owned task lists
    only when the reconciled assignment changed since last sent; offsets with the join, then
    only when changed and (the assignment changed or the offset interval passed); after an
    error everything again. `state` is the process's state directory: changelog offset sums
    per task, reported for every task but the ones this thread runs active."""

    def __init__(
        self,
        api: Api,
        group: str,
        topology: dict[str, Any],
        process_id: str,
        state: dict[tuple[str, int], int] | None = None,
        endpoint: tuple[str, int] | None = None,
        client_tags: dict[str, str] | None = None,
    ) -> None:
        super().__init__()
        self.api, self.group, self.topology = api, group, topology
        self.member_id = str(uuid.uuid4())
        self.process_id = process_id
        self.state = state if state is not None else {}
        self.end_offsets: dict[tuple[str, int], int] = {}
        self.endpoint, self.client_tags = endpoint, client_tags or {}
        self.endpoint_epoch = -1
        self.shutdown = False
        self.sent: list[dict[str, Any]] = []
        self._sent_tasks: tuple[Any, ...] | None = None
        self._sent_offsets: tuple[Any, Any] | None = None

    def _reported(self) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        running = {(s, p) for s, ps in self.active.items() for p in ps}
        offsets = {t: o for t, o in self.state.items() if t not in running}
        ends = {t: o for t, o in self.end_offsets.items() if t not in running}
        return offsets_of(offsets), offsets_of(ends)

    def _send(self, body: dict[str, Any]) -> dict[str, Any]:
        body = {"groupId": self.group, "memberId": self.member_id, **body}
        body["endpointInformationEpoch"] = self.endpoint_epoch
        body["shutdownApplication"] = self.shutdown
        self.sent.append(body)
        answer = self.api.ok(HB, body)
        self.last = answer
        if answer["errorCode"] != 0:
            self._sent_tasks = self._sent_offsets = None
            return answer
        self.endpoint_epoch = answer["endpointInformationEpoch"]
        self._take(answer)
        return answer

    def join(self) -> dict[str, Any]:
        offsets, ends = self._reported()
        body: dict[str, Any] = {
            "memberEpoch": 0,
            "topology": self.topology,
            "rebalanceTimeoutMs": REBALANCE_TIMEOUT_MS,
            "processId": self.process_id,
            "clientTags": [{"key": k, "value": v} for k, v in sorted(self.client_tags.items())],
            "activeTasks": [],
            "standbyTasks": [],
            "warmupTasks": [],
            "taskOffsets": offsets,
            "taskEndOffsets": ends,
        }
        if self.endpoint is not None:
            body["userEndpoint"] = {"host": self.endpoint[0], "port": self.endpoint[1]}
        # The join records the offsets it sent, not the assignment: the first heartbeat
        # after it always carries the three lists.
        self._sent_tasks, self._sent_offsets = None, (offsets, ends)
        return self._send(body)

    def heartbeat(self, offset_interval_passed: bool = False) -> dict[str, Any]:
        body: dict[str, Any] = {"memberEpoch": self.epoch}
        owned = (as_entries(self.active), as_entries(self.standby), as_entries(self.warmup))
        changed = owned != self._sent_tasks
        if changed:
            body |= dict(zip(("activeTasks", "standbyTasks", "warmupTasks"), owned, strict=True))
            self._sent_tasks = owned
        offsets, ends = self._reported()
        if changed or offset_interval_passed:
            last = self._sent_offsets or (None, None)
            if offsets != last[0]:
                body["taskOffsets"] = offsets
            if ends != last[1]:
                body["taskEndOffsets"] = ends
            self._sent_offsets = (offsets, ends)
        return self._send(body)

    def leave(self) -> dict[str, Any]:
        """close(): the leave heartbeat (the reconciled assignment is unchanged: no lists)."""
        answer = self._send({"memberEpoch": -1})
        self.active, self.standby, self.warmup = {}, {}, {}
        return answer
