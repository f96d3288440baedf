"""A streams group member (KIP-1071) from the application's side: `StreamsMember` joins with
the processing topology, heartbeats, applies the tasks the coordinator gives it (active,
standby, warm-up), tells a listener what it lost and got, reports its state stores' changelog
offsets for warm-ups by lag, and answers which endpoint serves a partition (interactive
queries).

Single-threaded: the application calls `poll()` often (at least every heartbeat interval);
`poll` heartbeats when one is due, or at once after the tasks changed (to acknowledge a
revocation) or a push notice came, and returns the member's tasks; `poll(timeout_s)` waits up
to that long for a heartbeat to be due. The member asks find-coordinator for the push channel
before its join and opens its socket as soon as the join is answered (client/member_push.py, as
GroupMember does): a notice makes the next poll heartbeat, so a task move reaches it at once,
and while the socket is open the steady heartbeat is a third as often. Each request has the
fields Kafka Streams' client sends (docs/streams.md, "What Kafka Streams sends"): the topology
and the process's fields only with the join; the owned task lists only when they changed since
the coordinator last took them (null: unchanged; all three again after a join or an error);
task offsets as task_offsets.py says; `instanceId` (static membership) and
`shutdownApplication` on every request.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from ..errors import Errors
from .errors import RETRIABLE_ERRORS, CoordinatorUnavailable, GroupcoordError, error_of
from .member_push import MemberPush
from .task_offsets import TaskId, TaskOffsetReports
from .transport import Transport

API = "streams-group-heartbeat"
Tasks = dict[str, frozenset[int]]  # subtopology id -> partitions
Endpoint = tuple[str, int]  # (host, port)
SHUTDOWN_APPLICATION = 4  # the status code
REJOIN_ERRORS = {Errors.FENCED_MEMBER_EPOCH, Errors.UNKNOWN_MEMBER_ID}

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class StreamsTasks:
    """A member's tasks by role."""

    active: Tasks = field(default_factory=dict)
    standby: Tasks = field(default_factory=dict)
    warmup: Tasks = field(default_factory=dict)

    def minus(self, other: StreamsTasks) -> StreamsTasks:
        def less(a: Tasks, b: Tasks) -> Tasks:
            found = {s: ps - b.get(s, frozenset()) for s, ps in a.items()}
            return {s: ps for s, ps in found.items() if ps}

        return StreamsTasks(
            less(self.active, other.active),
            less(self.standby, other.standby),
            less(self.warmup, other.warmup),
        )

    def is_empty(self) -> bool:
        return not (self.active or self.standby or self.warmup)


class StreamsListener(Protocol):
    """Told of task changes, revocations first (close or hand off the state), then
    assignments (restore or resume it)."""

    def on_tasks_revoked(self, tasks: StreamsTasks) -> None: ...

    def on_tasks_assigned(self, tasks: StreamsTasks) -> None: ...


def _tasks(entries: list[dict[str, Any]] | None) -> Tasks:
    found = {e["subtopologyId"]: frozenset(e["partitions"]) for e in entries or ()}
    return {s: ps for s, ps in found.items() if ps}


def _entries(tasks: Tasks) -> list[dict[str, Any]]:
    return [{"subtopologyId": s, "partitions": sorted(ps)} for s, ps in sorted(tasks.items())]


def _task_ids(tasks: Tasks) -> set[TaskId]:
    return {(s, p) for s, ps in tasks.items() for p in ps}


class StreamsMember:
    def __init__(
        self,
        url: str,
        group_id: str,
        topology: dict[str, Any],
        *,
        process_id: str | None = None,
        endpoint: Endpoint | None = None,
        client_tags: Mapping[str, str] | None = None,
        rack_id: str | None = None,
        rebalance_timeout_ms: int = 60_000,
        instance_id: str | None = None,
        listener: StreamsListener | None = None,
        transport: Transport | None = None,
        push: bool = True,
        push_heartbeat_interval_ms: int = 15000,
    ) -> None:
        self.transport = transport or Transport(url)
        self.group_id = group_id
        self.topology = topology
        # The member id is kept for the member's life, rejoins included; the process id for
        # the process's (its members share a state directory).
        self.member_id = str(uuid.uuid4())
        self.process_id = process_id or str(uuid.uuid4())
        self.endpoint = endpoint
        self.client_tags = dict(client_tags or {})
        self.rack_id = rack_id
        self.rebalance_timeout_ms = rebalance_timeout_ms
        # Static membership: a close keeps the tasks for the instance's return (-2).
        self.instance_id = instance_id
        self.listener = listener
        self.epoch = 0
        self.tasks = StreamsTasks()
        # The owned tasks the coordinator last took (None: it has none of ours for sure).
        self._sent_tasks: StreamsTasks | None = None
        self.statuses: list[tuple[int, str]] = []
        self.heartbeat_interval_ms = 5000
        self._next_heartbeat = 0.0
        self._endpoint_epoch = -1
        self._routes: list[dict[str, Any]] = []
        self.reports = TaskOffsetReports()
        self._shutdown = False
        # The push channel: `push` False keeps the member off it; while its socket is open
        # the member heartbeats every `push_heartbeat_interval_ms` (at most 3 intervals).
        self._push_enabled = push
        self._push_interval_s = push_heartbeat_interval_ms / 1000
        self._push = self._new_push()
        self._push_asked = not push

    # --- what the application calls ---

    def poll(self, timeout_s: float = 0.0) -> StreamsTasks:
        """Heartbeat if one is due (its interval, or a push notice's), waiting up to
        `timeout_s` for one to be; returns the member's tasks."""
        deadline = time.monotonic() + max(0.0, timeout_s)
        while True:
            now = time.monotonic()
            if now >= self._next_heartbeat or self._push.due_beat(now) <= now:
                self._heartbeat()
                return self.tasks
            due = min(self._next_heartbeat, self._push.next_beat(), deadline)
            if now >= deadline:
                return self.tasks
            self._push.wait(due - now)

    @property
    def push_connected(self) -> bool:
        """Whether the member's push socket is open now."""
        return self._push.connected

    def heartbeat(self) -> StreamsTasks:
        """Heartbeat now, whatever the interval (a test, or a member about to do long work)."""
        self._heartbeat()
        return self.tasks

    def report_offsets(
        self, offsets: Mapping[TaskId, int], end_offsets: Mapping[TaskId, int] | None = None
    ) -> None:
        """The state stores' changelog offsets per task (cumulative), and the changelogs' end
        offsets (None: unchanged). Call it as often as convenient: the latest values go with
        the join, then at most every taskOffsetIntervalMs, and at once (a heartbeat now) when
        they show a warm-up task caught up, which the coordinator then promotes."""
        self.reports.record(offsets, end_offsets)
        if self.epoch > 0 and self.reports.caught_up(_task_ids(self.tasks.warmup)):
            self._next_heartbeat = 0.0

    @property
    def shutdown_requested(self) -> bool:
        """Whether the last answer carried SHUTDOWN_APPLICATION (status 4): a member of the
        application asked every member to shut down (close, then stop the process)."""
        return any(code == SHUTDOWN_APPLICATION for code, _ in self.statuses)

    def request_shutdown(self) -> None:
        """Ask every member of the application to shut down (status 4)."""
        self._shutdown = True
        self._next_heartbeat = 0.0

    def route(self, topic: str, partition: int) -> Endpoint | None:
        """The endpoint whose active task reads this partition (None: not known yet)."""
        return self._lookup(topic, partition, "activePartitions")

    def standby_routes(self, topic: str, partition: int) -> list[Endpoint]:
        """The endpoints with a standby copy of this partition's state."""
        found = []
        for entry in self._routes:
            for tp in entry.get("standbyPartitions") or ():
                if tp["topic"] == topic and partition in tp["partitions"]:
                    e = entry["userEndpoint"]
                    found.append((e["host"], e["port"]))
        return found

    def commit(self, offsets: Mapping[tuple[str, int], int]) -> None:
        """Commit input offsets ((topic, partition) -> next offset) at the member's epoch;
        GroupcoordError if the coordinator refuses (a task that moved: 113)."""
        topics: dict[str, list[dict[str, Any]]] = {}
        for (topic, partition), offset in sorted(offsets.items()):
            topics.setdefault(topic, []).append(
                {"partitionIndex": partition, "committedOffset": offset}
            )
        body = {
            "groupId": self.group_id,
            "generationIdOrMemberEpoch": self.epoch,
            "memberId": self.member_id,
            "topics": [{"name": t, "partitions": ps} for t, ps in topics.items()],
        }
        answer = self.transport.call("offset-commit", body).body
        for topic in answer.get("topics") or ():
            for p in topic["partitions"]:
                if p["errorCode"] != 0:
                    error = error_of(p)
                    raise GroupcoordError(f"offset-commit {topic['name']}/{p['partitionIndex']}: "
                                          f"{error.name}")  # fmt: skip

    def committed(self, topic: str, partitions: list[int]) -> dict[int, int | None]:
        """The group's committed offsets of these partitions (None: nothing committed)."""
        group = {
            "groupId": self.group_id,
            "memberId": self.member_id,
            "memberEpoch": self.epoch,
            "topics": [{"name": topic, "partitionIndexes": sorted(partitions)}],
        }
        answer = self.transport.call("offset-fetch", {"groups": [group]}).body["groups"][0]
        if answer["errorCode"] != 0:
            raise GroupcoordError(f"offset-fetch: {error_of(answer).name}")
        found: dict[int, int | None] = dict.fromkeys(partitions)
        for t in answer.get("topics") or ():
            for p in t["partitions"]:
                offset = p["committedOffset"]
                found[p["partitionIndex"]] = offset if offset >= 0 else None
        return found

    def close(self) -> None:
        """Leave: the tasks move at once; a static member's (-2) wait for its instance's
        return within the session."""
        if self.epoch > 0:
            self._call({"memberEpoch": -1 if self.instance_id is None else -2})
        self._push.close()  # after the leave: no member left for a disconnect to expire
        self._push, self._push_asked = self._new_push(), not self._push_enabled  # a rejoin's
        self._apply_tasks(StreamsTasks())
        self.epoch = 0
        self._sent_tasks = None

    # --- the protocol ---

    def _lookup(self, topic: str, partition: int, role: str) -> Endpoint | None:
        for entry in self._routes:
            for tp in entry.get(role) or ():
                if tp["topic"] == topic and partition in tp["partitions"]:
                    e = entry["userEndpoint"]
                    return e["host"], e["port"]
        return None

    def _join_fields(self) -> dict[str, Any]:
        body: dict[str, Any] = {
            "rebalanceTimeoutMs": self.rebalance_timeout_ms,
            "topology": self.topology,
            "processId": self.process_id,
            "clientTags": [{"key": k, "value": v} for k, v in sorted(self.client_tags.items())],
            "activeTasks": [],
            "standbyTasks": [],
            "warmupTasks": [],
        }
        if self.endpoint is not None:
            body["userEndpoint"] = {"host": self.endpoint[0], "port": self.endpoint[1]}
        if self.rack_id is not None:
            body["rackId"] = self.rack_id
        return body

    def _heartbeat(self) -> None:
        now = time.monotonic()
        joining = self.epoch == 0
        if joining:
            if not self._push_asked:
                # Before the join: its answer then opens the socket at once (notices posted to
                # a joiner before its socket is open are lost), not a round trip later.
                self._offer_push()
            self.reports.rejoined()
            body, owned = self._join_fields(), StreamsTasks()
            report = self.reports.whole()
        else:
            owned = self.tasks
            tasks_changed = owned != self._sent_tasks
            body = {}
            if tasks_changed:
                body = {
                    "activeTasks": _entries(owned.active),
                    "standbyTasks": _entries(owned.standby),
                    "warmupTasks": _entries(owned.warmup),
                }
            report = self.reports.due(now, _task_ids(owned.warmup), tasks_changed)
        body.update(report.fields())
        answer = self._call({"memberEpoch": self.epoch, **body})
        error = error_of(answer)
        if error == Errors.NONE:
            self.reports.sent(report, now)
            # As Kafka's client, a join records no assignment as sent: the heartbeat after
            # it carries the three lists, even empty ones.
            self._sent_tasks = None if joining else owned
        else:  # as Kafka's client: after an error, everything is sent again
            self.reports.rejoined()
            self._sent_tasks = None
        if error in REJOIN_ERRORS:
            self._apply_tasks(StreamsTasks())  # its tasks are lost: rejoin from nothing
            self.epoch = 0
            self._next_heartbeat = 0.0
            return
        if error in RETRIABLE_ERRORS:
            self._next_heartbeat = time.monotonic() + 0.1
            return
        if error != Errors.NONE:
            raise GroupcoordError(f"{API}: {error.name}: {answer.get('errorMessage')}")
        self._applied(answer)

    def _call(self, fields: dict[str, Any]) -> dict[str, Any]:
        body = {"groupId": self.group_id, "memberId": self.member_id, **fields}
        body["endpointInformationEpoch"] = self._endpoint_epoch
        if self.instance_id is not None:
            body["instanceId"] = self.instance_id
        body["shutdownApplication"] = self._shutdown
        return self.transport.call(API, body).body

    def _applied(self, answer: dict[str, Any]) -> None:
        joined = self.epoch == 0
        self.epoch = answer["memberEpoch"]
        if joined:
            self._push.member_changed()  # its socket opens now, not at the channel's next look
        self.heartbeat_interval_ms = answer.get("heartbeatIntervalMs") or 5000
        self.reports.interval_ms = answer.get("taskOffsetIntervalMs", self.reports.interval_ms)
        self.reports.acceptable_lag = answer.get("acceptableRecoveryLag")
        self.statuses = [(s["statusCode"], s["statusDetail"]) for s in answer.get("status") or ()]
        due = time.monotonic() + self._push.interval_s(self.heartbeat_interval_ms / 1000)
        if answer.get("partitionsByUserEndpoint") is not None:
            self._routes = answer["partitionsByUserEndpoint"]
        self._endpoint_epoch = answer.get("endpointInformationEpoch", self._endpoint_epoch)
        if answer.get("activeTasks") is not None:
            new = StreamsTasks(
                _tasks(answer["activeTasks"]),
                _tasks(answer["standbyTasks"]),
                _tasks(answer["warmupTasks"]),
            )
            if new != self.tasks:
                self._apply_tasks(new)
                due = 0.0  # acknowledge at once: the next heartbeat reports what it owns
        self._next_heartbeat = due
        if not self._push_asked:
            self._offer_push()

    def _new_push(self) -> MemberPush:
        return MemberPush(
            self.group_id,
            lambda: self.member_id if self.epoch > 0 else "",
            enabled=self._push_enabled,
            interval_s=self._push_interval_s,
            headers_for=self.transport.handshake_headers,
        )

    def _offer_push(self) -> None:
        """Before the join: find-coordinator's pushUrl, where the socket opens once the join is
        answered (a hint: a failed look leaves the member polling, and the next answer looks
        again)."""
        try:
            reply = self.transport.call(
                "find-coordinator", {"keyType": 0, "coordinatorKeys": [self.group_id]}
            )
        except CoordinatorUnavailable:
            return  # the next answer looks again
        except GroupcoordError as error:
            log.info("push: find-coordinator refused (%s); polling at the interval", error)
            self._push_asked = True
            return
        self._push_asked = True
        entry = (reply.body.get("coordinators") or [{}])[0]
        self._push.offer(entry.get("pushUrl") if entry.get("errorCode", 0) == 0 else None)

    def _apply_tasks(self, new: StreamsTasks) -> None:
        revoked, assigned = self.tasks.minus(new), new.minus(self.tasks)
        if self.listener is not None and not revoked.is_empty():
            self.listener.on_tasks_revoked(revoked)
        self.tasks = new
        if self.listener is not None and not assigned.is_empty():
            self.listener.on_tasks_assigned(assigned)
