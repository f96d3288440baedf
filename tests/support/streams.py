"""A streams group member driven by hand over HTTP (streams-group-heartbeat), for the service
tests: it keeps what the coordinator gave it and reports it back, as Kafka Streams does."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Any

from tests.support.api import Api
from tests.support.classic_client import FAST_SETTINGS, shared_serve

HB = "streams-group-heartbeat"

# The streams service tests' coordinator: no initial delay, installs at once, one standby,
# Kafka 4.2's immediate moves (no warm-ups), and the classic protocol's short timers.
STREAMS_SETTINGS = {
    **FAST_SETTINGS,
    "group.streams.initial.rebalance.delay.ms": "0",
    "group.streams.assignment.interval.ms": "0",
    "group.streams.num.standby.replicas": "1",
    "group.streams.num.warmup.replicas": "0",
}


def streams_serve(dynamodb_endpoint: str) -> str:
    """One `serve` on DynamoDB Local with STREAMS_SETTINGS, shared by the modules that use it
    (they use unique names)."""
    return shared_serve(dynamodb_endpoint, STREAMS_SETTINGS)


Tasks = dict[str, set[int]]


def word_count(words: str, prefix: str) -> dict[str, Any]:
    """Two sub-topologies: 0 reads `words` and repartitions by word into `<prefix>-rep`; 1
    reads that and counts into a store with a changelog (stateful: it gets standbys)."""
    return {
        "epoch": 1,
        "subtopologies": [
            {
                "subtopologyId": "0",
                "sourceTopics": [words],
                "repartitionSinkTopics": [f"{prefix}-rep"],
            },
            {
                "subtopologyId": "1",
                "sourceTopics": [f"{prefix}-rep"],
                "repartitionSourceTopics": [{"name": f"{prefix}-rep"}],
                "stateChangelogTopics": [{"name": f"{prefix}-counts-changelog"}],
            },
        ],
    }


def counter(words: str, prefix: str) -> dict[str, Any]:
    """One stateful sub-topology: a count per key kept in a store with a changelog."""
    return {
        "epoch": 1,
        "subtopologies": [
            {
                "subtopologyId": "0",
                "sourceTopics": [words],
                "stateChangelogTopics": [{"name": f"{prefix}-counts-changelog"}],
            }
        ],
    }


def offsets(tasks: set[int], value: int) -> list[dict[str, Any]]:
    """A taskOffsets (or taskEndOffsets) list: `value` for each task 0_p of `tasks`."""
    return [{"subtopologyId": "0", "partition": p, "offset": value} for p in sorted(tasks)]


def as_tasks(entries: list[dict[str, Any]] | None) -> Tasks:
    return {e["subtopologyId"]: set(e["partitions"]) for e in entries or () if e["partitions"]}


def as_entries(tasks: Tasks) -> list[dict[str, Any]]:
    return [{"subtopologyId": s, "partitions": sorted(ps)} for s, ps in sorted(tasks.items())]


class TaskHolder:
    """What a streams member keeps of its heartbeats' answers: its epoch, the tasks it was
    last given (active, standby, warm-up) and the last answer."""

    def __init__(self) -> None:
        self.epoch = 0
        self.active: Tasks = {}
        self.standby: Tasks = {}
        self.warmup: Tasks = {}
        self.last: dict[str, Any] = {}

    def heartbeat(self) -> dict[str, Any]:
        """A heartbeat with nothing new to say (settle sends them)."""
        raise NotImplementedError

    def _take(self, answer: dict[str, Any]) -> None:
        """An accepted answer: its member epoch, and its tasks unless they are null
        (unchanged)."""
        self.epoch = answer["memberEpoch"]
        if answer.get("activeTasks") is not None:
            self.active = as_tasks(answer["activeTasks"])
            self.standby = as_tasks(answer["standbyTasks"])
            self.warmup = as_tasks(answer["warmupTasks"])

    def statuses(self) -> list[int]:
        return [s["statusCode"] for s in self.last.get("status") or ()]


class StreamsMember(TaskHolder):
    def __init__(
        self,
        api: Api,
        group: str,
        topology: dict[str, Any],
        process_id: str | None = None,
        **join_fields: Any,
    ) -> None:
        super().__init__()
        self.api = api
        self.group = group
        self.topology = topology
        self.member_id = str(uuid.uuid4())
        self.process_id = process_id or str(uuid.uuid4())
        self.join_fields = join_fields

    def call(self, **fields: Any) -> dict[str, Any]:
        body = {"groupId": self.group, "memberId": self.member_id, "memberEpoch": self.epoch}
        body |= fields
        answer = self.api.ok(HB, body)
        self.last = answer
        if answer["errorCode"] == 0:
            self._take(answer)
        return answer

    def join(self, **fields: Any) -> dict[str, Any]:
        body = {
            "memberEpoch": 0,
            "rebalanceTimeoutMs": 30000,
            "topology": self.topology,
            "processId": self.process_id,
            "activeTasks": [],
            "standbyTasks": [],
            "warmupTasks": [],
        }
        return self.call(**{**body, **self.join_fields, **fields})

    def heartbeat(self, **fields: Any) -> dict[str, Any]:
        """A heartbeat that reports what the member owns (what it was last given)."""
        return self.call(
            activeTasks=as_entries(self.active),
            standbyTasks=as_entries(self.standby),
            warmupTasks=as_entries(self.warmup),
            **fields,
        )

    def leave(self) -> dict[str, Any]:
        return self.call(memberEpoch=-1)


def settle(members: Sequence[TaskHolder], rounds: int = 8) -> None:
    """Heartbeat every member until two rounds in a row change nothing."""
    quiet = 0
    for _ in range(rounds):
        before = [(m.epoch, m.active, m.standby, m.warmup) for m in members]
        for m in members:
            answer = m.heartbeat()
            assert answer["errorCode"] == 0, answer
        after = [(m.epoch, m.active, m.standby, m.warmup) for m in members]
        quiet = quiet + 1 if before == after else 0
        if quiet == 2:
            return
    raise AssertionError("the group did not settle")


def describe(api: Api, group: str) -> dict[str, Any]:
    return api.ok("streams-group-describe", {"groupIds": [group]})["groups"][0]
