"""Simulated Kafka Streams members driving a streams group in this process, on the in-memory
DynamoDB (groupcoord/local/memory/), for bench/streams_scale.py and the tests that count
writes (tests/integration/test_streams_rebalance_writes.py).

Each member heartbeats through the real service code (streams_group_heartbeat) at the
simulation's clock, reports what it owns as Kafka Streams does (the task lists only when they
changed, null otherwise), sends back the endpoint epoch it last heard and keeps the last
endpoints map it was answered. `ItemWrites` counts the write requests per item key under the
store, so a test or a bench can see how often one item (the group item) is written.
"""

from __future__ import annotations

import threading
import zlib
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from groupcoord.core.streams.reconciliation import MemberState
from groupcoord.local.memory import MemoryDynamoClient
from groupcoord.models.streams import (
    StreamsGroupHeartbeatRequest,
    StreamsGroupHeartbeatResponse,
    StreamsTaskIds,
)
from groupcoord.service.context import ApiContext
from groupcoord.service.streams.common import reload
from groupcoord.service.streams.heartbeat import streams_group_heartbeat
from groupcoord.settings import Settings
from groupcoord.store import schema
from groupcoord.store.dynamo import Dynamo
from groupcoord.store.store import Store

Tasks = dict[str, set[int]]
ROLES = ("active", "standby", "warmup")
# Sessions long enough that nobody expires while thousands of members take their turns.
SESSION_MS = 600_000


class ManualClock:
    """Time that moves only when the simulation says so (or code sleeps on it)."""

    def __init__(self, start_ms: int = 1_700_000_000_000) -> None:
        self._ms = start_ms
        self._lock = threading.Lock()

    def now_ms(self) -> int:
        with self._lock:
            return self._ms

    def monotonic_s(self) -> float:
        return self.now_ms() / 1000

    def sleep(self, seconds: float) -> None:
        self.advance(max(0, round(seconds * 1000)))

    def advance(self, ms: int) -> None:
        with self._lock:
            self._ms += ms


class ItemWrites:
    """Wraps the boto3-like client under the store: write requests per item key (pk, sk),
    a transaction's items each counted once."""

    _SINGLE = ("put_item", "update_item", "delete_item")

    def __init__(self, client: Any) -> None:
        self._client = client
        self.by_item: Counter[tuple[str, str]] = Counter()

    def __getattr__(self, name: str) -> Any:
        method = getattr(self._client, name)
        if name not in (*self._SINGLE, "transact_write_items", "batch_write_item"):
            return method

        def call(**kwargs: Any) -> Any:
            for key in _written_keys(name, kwargs):
                self.by_item[(key[schema.PK]["S"], key[schema.SK]["S"])] += 1
            return method(**kwargs)

        return call


def _written_keys(name: str, kwargs: dict[str, Any]) -> list[dict[str, Any]]:
    def key_of(item: dict[str, Any]) -> dict[str, Any]:
        return {schema.PK: item[schema.PK], schema.SK: item[schema.SK]}

    if name == "put_item":
        return [key_of(kwargs["Item"])]
    if name in ("update_item", "delete_item"):
        return [kwargs["Key"]]
    if name == "batch_write_item":
        requests = [r for rs in kwargs["RequestItems"].values() for r in rs]
        return [
            key_of(r["PutRequest"]["Item"]) if "PutRequest" in r else r["DeleteRequest"]["Key"]
            for r in requests
        ]
    keys = []
    for entry in kwargs["TransactItems"]:
        ((kind, body),) = entry.items()
        keys.append(key_of(body["Item"]) if kind == "Put" else body["Key"])
    return keys


def streams_settings(overrides: dict[str, str] | None = None) -> Settings:
    """No initial delay, installs at once, one standby, Kafka 4.2's immediate moves, sessions
    that outlast a round of thousands of members."""
    return Settings.from_mapping(
        {
            "groupcoord.table.name": "streams-sim",
            "group.streams.initial.rebalance.delay.ms": "0",
            "group.streams.assignment.interval.ms": "0",
            "group.streams.num.standby.replicas": "1",
            "group.streams.num.warmup.replicas": "0",
            "group.streams.session.timeout.ms": str(SESSION_MS),
            "group.streams.max.session.timeout.ms": str(SESSION_MS),
            **(overrides or {}),
        }
    )


def sim_store(settings: Settings, clock: ManualClock, wrap: Any = None) -> tuple[Store, ItemWrites]:
    """The store on a fresh in-memory DynamoDB, its writes counted per item (`wrap`, e.g.
    bench/common.CapacityAudit, goes between the counter and the memory)."""
    memory = MemoryDynamoClient()
    writes = ItemWrites(wrap(memory) if wrap is not None else memory)
    dynamo = Dynamo(writes, settings.table_name, settings.store_max_attempts, clock)
    store = Store(dynamo, settings)
    store.ensure_table()
    return store, writes


def word_count(words: str, prefix: str) -> dict[str, Any]:
    """Sub-topology 0 reads `words` and repartitions; 1 reads that and keeps a store with a
    changelog (stateful: it gets standbys)."""
    return {"epoch": 1, "subtopologies": [
        {"subtopologyId": "0", "sourceTopics": [words], "repartitionSinkTopics": [f"{prefix}-r"]},
        {"subtopologyId": "1", "sourceTopics": [f"{prefix}-r"],
         "repartitionSourceTopics": [{"name": f"{prefix}-r"}],
         "stateChangelogTopics": [{"name": f"{prefix}-c"}]},
    ]}  # fmt: skip


def _tasks(entries: list[StreamsTaskIds] | None) -> Tasks:
    return {e.subtopology_id: set(e.partitions) for e in entries or () if e.partitions}


def _entries(tasks: Tasks) -> list[dict[str, Any]]:
    return [{"subtopologyId": s, "partitions": sorted(ps)} for s, ps in sorted(tasks.items())]


@dataclass
class SimMember:
    member_id: str
    process_id: str
    endpoint: tuple[str, int] | None
    epoch: int = 0
    owned: dict[str, Tasks] = field(default_factory=lambda: {r: {} for r in ROLES})
    unsent: bool = True  # owned changed since it was last reported
    endpoint_epoch: int = -1
    routes: list[dict[str, Any]] | None = None  # the last partitionsByUserEndpoint heard


class StreamsSim:
    """A streams group's members, heartbeating through the service at the clock's time."""

    def __init__(
        self,
        store: Store,
        clock: ManualClock,
        group_id: str,
        topology: dict,
        keep_routes: bool = True,
        instances: int = 1,
    ) -> None:
        self.store, self.clock, self.group_id, self.topology = store, clock, group_id, topology
        # Function instances: stores on the same table, each with its own copies (the
        # endpoints maps it read); a member's requests go to one by its id.
        others = [Store(store.dynamo, store.settings) for _ in range(1, instances)]
        self.instances = [store, *others]
        self.members: dict[str, SimMember] = {}
        # Thousands of members each keeping a map of thousands of endpoints would not fit.
        self.keep_routes = keep_routes
        self.maps_heard = 0

    def _call(self, body: dict[str, Any]) -> StreamsGroupHeartbeatResponse:
        store = self.instances[zlib.crc32(body["memberId"].encode()) % len(self.instances)]
        ctx = ApiContext(
            settings=store.settings,
            store=store,
            now_ms=self.clock.now_ms(),
            endpoint="http://sim",
        )
        answer = streams_group_heartbeat(StreamsGroupHeartbeatRequest.model_validate(body), ctx)
        if answer.error_code != 0:
            raise RuntimeError(f"streams-group-heartbeat: {answer.to_json_dict()}")
        return answer

    def _heard(self, m: SimMember, answer: StreamsGroupHeartbeatResponse) -> None:
        """What the member keeps of an answer (read off the model: at thousands of endpoints
        serializing every answer's map would be most of a run's time)."""
        m.epoch = answer.member_epoch
        if answer.active_tasks is not None:
            roles = (answer.active_tasks, answer.standby_tasks, answer.warmup_tasks)
            owned = {r: _tasks(ts) for r, ts in zip(ROLES, roles, strict=True)}
            m.unsent = m.unsent or owned != m.owned
            m.owned = owned
        m.endpoint_epoch = answer.endpoint_information_epoch
        if answer.partitions_by_user_endpoint is not None:
            self.maps_heard += 1
            if self.keep_routes:
                m.routes = answer.to_json_dict()["partitionsByUserEndpoint"]

    def join(
        self, member_id: str, process_id: str, endpoint: tuple[str, int] | None = None
    ) -> StreamsGroupHeartbeatResponse:
        m = SimMember(member_id, process_id, endpoint)
        self.members[member_id] = m
        body = {"groupId": self.group_id, "memberId": member_id, "memberEpoch": 0,
                "processId": process_id, "rebalanceTimeoutMs": 300_000,
                "topology": self.topology, "endpointInformationEpoch": -1,
                **{f"{r}Tasks": [] for r in ROLES}}  # fmt: skip
        if endpoint is not None:
            body["userEndpoint"] = {"host": endpoint[0], "port": endpoint[1]}
        m.unsent = False
        answer = self._call(body)
        self._heard(m, answer)
        return answer

    def beat(self, member_id: str) -> StreamsGroupHeartbeatResponse:
        m = self.members[member_id]
        body: dict[str, Any] = {"groupId": self.group_id, "memberId": member_id,
                                "memberEpoch": m.epoch,
                                "endpointInformationEpoch": m.endpoint_epoch}  # fmt: skip
        if m.unsent:
            body |= {f"{r}Tasks": _entries(m.owned[r]) for r in ROLES}
            m.unsent = False
        answer = self._call(body)
        self._heard(m, answer)
        return answer

    def leave(self, member_id: str) -> StreamsGroupHeartbeatResponse:
        self.members.pop(member_id)
        body = {"groupId": self.group_id, "memberId": member_id, "memberEpoch": -1}
        return self._call(body)

    def converged(self) -> bool:
        """Every member at the group's target epoch, Stable, owning (as it last reported)
        exactly its target, and nothing left to report."""
        group = reload(self.store.streams, self.group_id)
        if group is None or group.target_epoch != group.group_epoch:
            return False
        stored = {m.member_id: m for m in self.store.streams.members(group)}
        for m in self.members.values():
            s = stored.get(m.member_id)
            if s is None or m.unsent or m.epoch != group.target_epoch:
                return False
            if s.state is not MemberState.STABLE or s.tasks.assigned != s.target:
                return False
        return True

    def owners(self) -> dict[tuple[str, int], tuple[str, int]]:
        """(sub-topology, partition) of every active task -> its owner's endpoint, from what
        the members own."""
        found = {}
        for m in self.members.values():
            for sub, ps in m.owned["active"].items():
                for p in ps:
                    assert m.endpoint is not None
                    found[(sub, p)] = m.endpoint
        return found


def routes_of(routes: list[dict[str, Any]] | None) -> dict[tuple[str, int], tuple[str, int]]:
    """(topic, partition) -> the endpoint a partitionsByUserEndpoint answer names as active."""
    found = {}
    for e in routes or ():
        where = (e["userEndpoint"]["host"], int(e["userEndpoint"]["port"]))
        for tp in e["activePartitions"]:
            for p in tp["partitions"]:
                found[(tp["topic"], p)] = where
    return found
