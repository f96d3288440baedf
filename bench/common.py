"""What the benchmarks share: the servers, the in-process coordinator, an independent capacity
audit, classic group builders and simulated members, and the writer of docs/performance.md."""

from __future__ import annotations

import argparse
import base64
import json
import math
import os
import platform
import random
import re
import sys
import time
import uuid
import warnings
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:  # `python bench/x.py`: the bench package must import
    sys.path.insert(0, str(REPO))

os.environ.setdefault("AWS_ACCESS_KEY_ID", "testing")
os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "testing")
os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")
os.environ.setdefault("POWERTOOLS_METRICS_DISABLED", "true")
os.environ.setdefault("POWERTOOLS_TRACE_DISABLED", "true")
os.environ.setdefault("POWERTOOLS_LOG_LEVEL", "WARNING")
warnings.filterwarnings("ignore", module="aws_lambda_powertools")

from groupcoord import runtime  # noqa: E402
from groupcoord.core.classic.model import STABLE, ClassicMember, Protocol  # noqa: E402
from groupcoord.http.apis import API_FUNCTION, FUNCTION_APIS  # noqa: E402
from groupcoord.http.handler import LambdaHandler, make_api_handler  # noqa: E402
from groupcoord.local.events import LambdaContext, http_api_event  # noqa: E402
from groupcoord.local.kinesis_local import running_kinesis_local  # noqa: E402
from groupcoord.local.processes import running_dynamodb, running_serve, unique_table  # noqa: E402
from groupcoord.local.seed import (  # noqa: E402
    add_joined_members,
    write_classic_group,
)
from groupcoord.settings import Settings  # noqa: E402
from groupcoord.store import capacity, schema  # noqa: E402
from groupcoord.store.classic.repository import ClassicGroupStore  # noqa: E402
from groupcoord.store.classic.transition import ClassicTransition  # noqa: E402
from groupcoord.store.codecs.classic import group_from_item  # noqa: E402
from groupcoord.store.codecs.consumer import (  # noqa: E402
    group_from_item as consumer_group_from_item,
)
from groupcoord.store.codecs.consumer import member_to_item as consumer_member_to_item  # noqa: E402
from groupcoord.store.codecs.streams import (  # noqa: E402
    group_from_item as streams_group_from_item,
)
from groupcoord.store.dynamo import Dynamo, deserialize, make_client  # noqa: E402
from groupcoord.store.store import Store  # noqa: E402
from groupcoord.wire.consumer_protocol import (  # noqa: E402
    Assignment,
    Subscription,
    decode_assignment,
    decode_subscription,
    encode_assignment,
    encode_subscription,
)

__all__ = ["running_serve", "unique_table"]

PERFORMANCE_MD = REPO / "docs" / "performance.md"
RESULTS = REPO / "bench" / ".results"
# Sections of docs/performance.md, in the order they appear.
SECTION_ORDER = ("cost", "cost_model", "latency", "rebalance", "scale", "coldstart")
TOPIC = "bench-topic"
ASSIGNOR = "range"
COOPERATIVE_ASSIGNOR = "cooperative-sticky"
# Classic members beat this many times a session and are dead after as many missed beats
# (one session, as groupcoord's client sends them): 5 s heartbeats in a 45 s session, the
# ratio the cost model takes (a session renewal's slack is at most a third of the session,
# so at 3 a session no heartbeat could skip its write).
HEARTBEAT_FREQUENCY = 9


# --- the DynamoDB endpoint ---


# A DynamoDB Local (or Kinesis) already running, instead of one started for the run: CI's, or a
# shared machine's (each run still works on tables of its own).
DYNAMODB_ENDPOINT_ENV = "GROUPCOORD_BENCH_DYNAMODB_ENDPOINT"
KINESIS_ENDPOINT_ENV = "GROUPCOORD_BENCH_KINESIS_ENDPOINT"


@contextmanager
def _given(url: str) -> Iterator[str]:
    yield url


def dynamodb_local() -> AbstractContextManager[str]:
    """Amazon's DynamoDB Local as a child process (groupcoord.local.dynamodb_local), or the one
    at $GROUPCOORD_BENCH_DYNAMODB_ENDPOINT: its URL."""
    url = os.environ.get(DYNAMODB_ENDPOINT_ENV)
    return _given(url) if url else running_dynamodb()


def kinesis_local() -> AbstractContextManager[str]:
    """kinesis-local as a child process, or the one at $GROUPCOORD_BENCH_KINESIS_ENDPOINT."""
    url = os.environ.get(KINESIS_ENDPOINT_ENV)
    return _given(url) if url else running_kinesis_local()


# --- the independent capacity audit ---


@dataclass
class Audited:
    """Capacity recomputed from the items a call actually read and wrote (before and after),
    in total and per partition key (GSI keys as `<index>:<key>`)."""

    read_units: float = 0.0
    write_units: float = 0.0
    index_write_units: float = 0.0  # GSI writes, billed as write units too
    largest_item: int = 0
    reads_by_key: dict[str, float] = field(default_factory=dict)
    writes_by_key: dict[str, float] = field(default_factory=dict)

    def read(self, key: str, units: float) -> None:
        self.read_units += units
        self.reads_by_key[key] = self.reads_by_key.get(key, 0.0) + units

    def write(self, key: str, units: float, index: bool = False) -> None:
        if index:
            self.index_write_units += units
        else:
            self.write_units += units
        self.writes_by_key[key] = self.writes_by_key.get(key, 0.0) + units


def _key(item: dict[str, Any]) -> dict[str, Any]:
    return {schema.PK: item[schema.PK], schema.SK: item[schema.SK]}


def _size(raw: dict[str, Any] | None) -> int:
    return capacity.item_size(deserialize(raw)) if raw else 0


def _units(size: int, unit: int) -> int:
    return max(1, math.ceil(size / unit))


class CapacityAudit:
    """Wraps the boto3 client under the store. While `measuring()`, every write is charged by
    DynamoDB's rules on the real items: the larger of the item before and after (an UpdateItem
    is billed on the whole item, not on the attributes it sets), twice in a transaction
    (a ConditionCheck too), plus one write per GSI whose projection changed (two when its key
    moved). Reads are charged on the items returned. The raw reads it makes for this go around
    the store's accounting."""

    _WRITES = ("put_item", "update_item", "delete_item", "transact_write_items", "batch_write_item")
    _READS = ("get_item", "query", "batch_get_item")

    def __init__(self, client: Any, table_name: str) -> None:
        self._client = client
        self.table_name = table_name
        self.indexes: list[tuple[str, list[str], list[str]]] = []
        for index in schema.table_definition(table_name)["GlobalSecondaryIndexes"]:
            keys = [k["AttributeName"] for k in index["KeySchema"]]
            projected = [schema.PK, schema.SK, *index["Projection"].get("NonKeyAttributes", [])]
            self.indexes.append((index["IndexName"], keys, keys + projected))
        self.current: Audited | None = None

    @contextmanager
    def measuring(self) -> Iterator[Audited]:
        self.current = Audited()
        try:
            yield self.current
        finally:
            self.current = None

    def __getattr__(self, name: str) -> Any:
        method = getattr(self._client, name)
        if name not in self._WRITES + self._READS:
            return method

        def call(**kwargs: Any) -> Any:
            if self.current is None:
                return method(**kwargs)
            if name in self._READS:
                response = method(**kwargs)
                self._charge_reads(name, kwargs, response)
                return response
            writes = self._writes_of(name, kwargs)
            before = self._items([k for k, _ in writes])
            try:
                return method(**kwargs)
            finally:
                after = self._items([k for k, _ in writes])
                for key, factor in writes:
                    ident = self._ident(key)
                    self._charge_write(ident[0], before.get(ident), after.get(ident), factor)

        return call

    @staticmethod
    def _ident(key: dict[str, Any]) -> tuple[str, str]:
        return key[schema.PK]["S"], key[schema.SK]["S"]

    def _items(self, keys: Sequence[dict[str, Any]]) -> dict[tuple[str, str], dict[str, Any]]:
        found: dict[tuple[str, str], dict[str, Any]] = {}
        for start in range(0, len(keys), 100):
            chunk = list({self._ident(k): k for k in keys[start : start + 100]}.values())
            request = {self.table_name: {"Keys": chunk, "ConsistentRead": True}}
            while request:
                response = self._client.batch_get_item(RequestItems=request)
                for item in response["Responses"].get(self.table_name, []):
                    found[self._ident(item)] = item
                request = response.get("UnprocessedKeys") or {}
        return found

    def _writes_of(self, name: str, kwargs: dict[str, Any]) -> list[tuple[dict[str, Any], int]]:
        if name == "put_item":
            return [(_key(kwargs["Item"]), 1)]
        if name in ("update_item", "delete_item"):
            return [(kwargs["Key"], 1)]
        if name == "batch_write_item":
            return [
                (
                    _key(r["PutRequest"]["Item"])
                    if "PutRequest" in r
                    else r["DeleteRequest"]["Key"],
                    1,
                )
                for r in kwargs["RequestItems"][self.table_name]
            ]
        found = []
        for entry in kwargs["TransactItems"]:
            ((kind, body),) = entry.items()
            if body["TableName"] != self.table_name:
                continue  # a commit's sink write: another table, not audited
            found.append((_key(body["Item"]) if kind == "Put" else body["Key"], 2))
        return found

    def _charge_write(self, pk: str, before: Any, after: Any, factor: int) -> None:
        audited = self.current
        assert audited is not None
        largest = max(_size(before), _size(after))
        audited.largest_item = max(audited.largest_item, largest)
        audited.write(pk, factor * _units(largest, capacity.WRITE_UNIT_BYTES))
        for index, keys, projected in self.indexes:
            old, new = (self._entry(i, keys, projected) for i in (before, after))
            if old == new:
                continue
            moved = old is not None and new is not None and any(old[k] != new[k] for k in keys)
            for entry in [old, new] if moved else [new if new is not None else old]:
                assert entry is not None
                key = f"{index}:{next(iter(entry[keys[0]].values()))}"
                audited.write(key, _units(_size(entry), capacity.WRITE_UNIT_BYTES), index=True)

    @staticmethod
    def _entry(item: Any, keys: list[str], projected: list[str]) -> dict[str, Any] | None:
        if not item or any(k not in item for k in keys):
            return None
        return {k: item[k] for k in projected if k in item}

    def _charge_reads(self, name: str, kwargs: dict[str, Any], response: dict[str, Any]) -> None:
        audited = self.current
        assert audited is not None
        if name == "batch_get_item":
            request = kwargs["RequestItems"][self.table_name]
            consistent = request.get("ConsistentRead", False)
            returned = {self._ident(i): i for i in response["Responses"].get(self.table_name, [])}
            unread = response.get("UnprocessedKeys", {}).get(self.table_name, {}).get("Keys", [])
            skipped = {self._ident(k) for k in unread}
            # Each key is read as a GetItem: rounded up, and a missing item costs the minimum.
            for key in request["Keys"]:
                ident = self._ident(key)
                if ident not in skipped:
                    size = _size(returned.get(ident))
                    audited.read(ident[0], capacity.read_units(size, consistent))
            return
        if name == "get_item":
            key, consistent = kwargs["Key"][schema.PK]["S"], bool(kwargs.get("ConsistentRead"))
            items = [response["Item"]] if response.get("Item") else []
        else:  # a Query: its partition key is the first string value of the key condition
            values = kwargs.get("ExpressionAttributeValues", {})
            key = next((v["S"] for v in values.values() if "S" in v), "?")
            if "IndexName" in kwargs:
                key = f"{kwargs['IndexName']}:{key}"
            consistent = bool(kwargs.get("ConsistentRead")) and "IndexName" not in kwargs
            items = response.get("Items", [])
        audited.read(key, capacity.read_units(sum(_size(i) for i in items), consistent))


# --- the coordinator, in-process ---


@dataclass
class Call:
    api: str
    status: int
    body: Any
    usage: capacity.Usage
    audited: Audited | None
    seconds: float
    cpu_seconds: float = 0.0  # this process's CPU time in the call (the handler, botocore)

    @property
    def error_code(self) -> int | None:
        return self.body.get("errorCode") if isinstance(self.body, dict) else None


class InProcess:
    """The Lambda handlers called with API Gateway events, the runtime configured on a fresh
    table of the given DynamoDB endpoint (as `serve` does, minus HTTP)."""

    def __init__(
        self, endpoint: str, overrides: dict[str, str] | None = None, audit: bool = False
    ) -> None:
        table = unique_table()
        self.base = {"groupcoord.table.name": table}
        settings = Settings.from_mapping({**self.base, **(overrides or {})})
        client = make_client(endpoint_url=endpoint)
        self.audit = CapacityAudit(client, table) if audit else None
        self.dynamo = Dynamo(self.audit or client, table, settings.store_max_attempts)
        self.configure(overrides or {})
        self.store.ensure_table()
        self.handlers: dict[str, LambdaHandler] = {f: make_api_handler(f) for f in FUNCTION_APIS}

    def configure(self, overrides: dict[str, str]) -> None:
        """Settings for the next calls (same table): `overrides` on Kafka's defaults (kept in
        `self.overrides`, so that a caller can change one setting and restore the rest)."""
        self.overrides = dict(overrides)
        self.settings = Settings.from_mapping({**self.base, **overrides})
        self.store = Store(self.dynamo, self.settings)
        runtime.configure(self.settings, self.store)

    def call(self, api: str, body: Any, client_id: str = "bench") -> Call:
        function = API_FUNCTION[api]
        event = http_api_event(
            "POST",
            f"/v1/{api}",
            json.dumps(body).encode(),
            {"content-type": "application/json", "kafka-client-id": client_id},
        )
        with capacity.metered() as usage, self._audited() as audited:
            start, cpu_start = time.perf_counter(), time.process_time()
            result = self.handlers[function](event, LambdaContext(function))
            seconds = time.perf_counter() - start
            cpu_seconds = time.process_time() - cpu_start
        body = json.loads(result["body"] or "null")
        return Call(api, result["statusCode"], body, usage, audited, seconds, cpu_seconds)

    @contextmanager
    def unaudited(self) -> Iterator[None]:
        """Calls in the block are not audited: timed calls, which the audit's own reads of
        the items written would slow down."""
        saved, self.audit = self.audit, None
        try:
            yield
        finally:
            self.audit = saved

    @contextmanager
    def _audited(self) -> Iterator[Audited | None]:
        if self.audit is None:
            yield None
            return
        with self.audit.measuring() as audited:
            yield audited

    def classic_groups(self) -> ClassicGroupStore:
        return self.store.classic


def create_topic(coordinator: InProcess, name: str = TOPIC, partitions: int = 1000) -> None:
    body = {"topics": [{"name": name, "numPartitions": partitions, "replicationFactor": 1}]}
    answer = coordinator.call("create-topics", body)
    code = answer.body["topics"][0]["errorCode"]
    if answer.status != 200 or code not in (0, 36):
        raise RuntimeError(f"create-topics failed: {answer.status} {answer.body}")


# --- assignments (the classic leader's job, done client-side) ---


def range_assign(member_ids: Sequence[str], partitions: int) -> dict[str, list[int]]:
    """Kafka's RangeAssignor on one topic: members sorted, contiguous ranges."""
    ordered = sorted(member_ids)
    share, extra = divmod(partitions, len(ordered)) if ordered else (0, 0)
    result: dict[str, list[int]] = {}
    start = 0
    for i, member in enumerate(ordered):
        count = share + (1 if i < extra else 0)
        result[member] = list(range(start, start + count))
        start += count
    return result


def subscription_b64(topic: str = TOPIC, owned: list[int] | None = None) -> str:
    """A Subscription; with `owned` (cooperative, KIP-429), version 1 with owned partitions."""
    if owned is None:
        return base64.b64encode(encode_subscription(Subscription(topics=[topic]))).decode()
    sub = Subscription(topics=[topic], owned_partitions={topic: sorted(owned)}, version=1)
    return base64.b64encode(encode_subscription(sub)).decode()


def cooperative_sticky_assign(
    owned_by: dict[str, list[int]], partitions: int
) -> dict[str, list[int]]:
    """A cooperative-sticky leader on one topic (KIP-429): balanced to within one partition,
    each member keeping as much of what it owns as balance allows; then every partition that
    changes owner is left out of this generation (its owner revokes it and rejoins, and the
    next rebalance gives it to its new owner)."""
    ordered = sorted(owned_by)
    if not ordered:
        return {}
    base, extra = divmod(partitions, len(ordered))
    claimed: dict[int, str] = {}
    for member in ordered:
        for p in owned_by[member]:
            claimed.setdefault(p, member)
    kept: dict[str, list[int]] = {m: [] for m in ordered}
    for p, member in sorted(claimed.items()):
        kept[member].append(p)
    plan: dict[str, list[int]] = {}
    free = [p for p in range(partitions) if p not in claimed]
    # Members owning more than the base keep base + 1 while the extra slots last.
    by_owned = sorted(ordered, key=lambda m: -len(kept[m]))
    quota = {m: base + (1 if i < extra else 0) for i, m in enumerate(by_owned)}
    for member in ordered:
        plan[member] = kept[member][: quota[member]]
        free += kept[member][quota[member] :]
    free.sort()
    for member in ordered:
        need = quota[member] - len(plan[member])
        plan[member] += free[:need]
        free = free[need:]
    return {m: sorted(p for p in plan[m] if claimed.get(p, m) == m) for m in ordered}


def assignment_bytes(parts: list[int], topic: str = TOPIC) -> bytes:
    return encode_assignment(Assignment({topic: parts} if parts else {}))


# --- classic groups built directly with the store's own code ---


def build_classic_group_direct(
    coordinator: InProcess,
    group_id: str,
    size: int,
    *,
    partitions: int = 1000,
    session_timeout_ms: int = 300_000,
    stable: bool = True,
    assignor: str = ASSIGNOR,
) -> list[str]:
    """A classic group of `size` members written as the protocol leaves it (generation 1,
    Stable with range assignments, or CompletingRebalance before any sync), through the
    store's member_items (member and payload items) / BatchWriteItem / commit. Returns the
    member ids, leader first."""
    now = runtime.now_ms()
    ids = [f"bench-{uuid.uuid4()}" for _ in range(size)]
    assigned = range_assign(ids, partitions)
    metadata = encode_subscription(Subscription(topics=[TOPIC]))
    members = [
        ClassicMember(
            member_id=member_id,
            client_id="bench",
            client_host="127.0.0.1",
            session_timeout_ms=session_timeout_ms,
            rebalance_timeout_ms=session_timeout_ms,
            expiry_ms=session_timeout_ms,
            heartbeat_interval_ms=session_timeout_ms // HEARTBEAT_FREQUENCY,
            protocol_type="consumer",
            protocols=(Protocol(assignor, metadata),),
            joined_generation=1,
            member_generation=1,  # the barrier of generation 1 closed with it (commit fence)
            joined_at_ms=now + i,
            synced_generation=1 if stable else -1,
            assignment=assignment_bytes(assigned[member_id]) if stable else b"",
            assignment_generation=1 if stable else -1,
            session_deadline_ms=now + session_timeout_ms,
        )
        for i, member_id in enumerate(ids)
    ]
    write_classic_group(
        coordinator.store,
        group_id,
        members,
        protocol=assignor,
        rebalance_timeout_ms=session_timeout_ms,
        next_check_ms=now + session_timeout_ms,
        state=STABLE if stable else "CompletingRebalance",
        sync_deadline_ms=None if stable else now + session_timeout_ms,
        subscribed_topics=(TOPIC,),
        created_at_ms=now,
    )
    coordinator.store.topics.subscribe(TOPIC, group_id)
    return ids


def make_group_timer_due(coordinator: InProcess, group_id: str) -> None:
    """Move the group item's next check (`dl`) into the past, as time passing does: the next
    request that touches the group runs the expiry check."""
    groups = coordinator.classic_groups()
    item = groups.group_item(group_id)
    assert item is not None
    group = group_from_item(item)
    moved = replace(group, next_check_ms=runtime.now_ms() - 1)
    groups.commit(ClassicTransition(group=moved, expected_version=group.version))


def make_consumer_group_timer_due(coordinator: InProcess, group_id: str) -> None:
    """Move a consumer group's next deadline (`dl` on its group item, `ConsumerGroup.deadline`:
    the earliest session deadline or armed rebalance timeout of its members, a lower bound that
    heartbeats do not lower when they renew) into the past, as time passing does: the next
    heartbeat of the group claims and runs the expiry scan (service/consumer/expiry.py)."""
    consumer = coordinator.store.consumer
    item = consumer.group_item(group_id, consistent=True)
    assert item is not None
    group = consumer_group_from_item(item)
    consumer.update_group(group, replace(group, deadline=runtime.now_ms() - 1))


def make_streams_group_timer_due(coordinator: InProcess, group_id: str) -> None:
    """Move a streams group's next deadline (`dl`, as a consumer group's: the earliest session
    deadline or rebalance timeout of its members) into the past: the next heartbeat of the
    group runs its expiry check (service/streams/expiry.py)."""
    streams = coordinator.store.streams
    item = streams.group_item(group_id, consistent=True)
    assert item is not None
    group = streams_group_from_item(item)
    streams.update_group(group, replace(group, deadline=runtime.now_ms() - 1))


# --- simulated classic members (a consumer's poll loop, one request per round) ---


@dataclass
class SimMember:
    """A classic consumer: joins (two-step, re-sending on 202), syncs (the leader assigns with
    the range assignor), heartbeats; rejoins on 27, resets its id on 25."""

    call: Callable[[str, Any], Call]
    group_id: str
    session_timeout_ms: int
    partitions: int
    index: int = 0
    rebalance_timeout_ms: int = -1  # -1: the session timeout, as in Kafka
    member_id: str = ""
    state: str = "join"  # join | sync | stable | dead | left
    generation: int = -1
    members: list[str] = field(default_factory=list)  # the leader's view of the generation
    metadata: dict[str, Any] = field(default_factory=dict)  # the leader's: member subscriptions
    assigned: list[int] = field(default_factory=list)
    stop_at_sync: bool = False  # idle once joined (to leave the group CompletingRebalance)
    cooperative: bool = False  # KIP-429: keep owned partitions through the rebalance
    revoked: int = 0  # partitions this member gave up (stopped consuming) so far

    @property
    def live(self) -> bool:
        return self.state in ("join", "sync", "stable")

    def step(self) -> Call | None:
        if self.state == "join":
            return self._join()
        if self.state == "sync":
            return None if self.stop_at_sync else self._sync()
        if self.state == "stable":
            return self._heartbeat()
        return None

    def leave(self) -> Call:
        self.state = "left"
        body = {"groupId": self.group_id, "members": [{"memberId": self.member_id}]}
        return self.call("leave-group", body)

    def _join(self) -> Call:
        body = {
            "groupId": self.group_id,
            "memberId": self.member_id,
            "sessionTimeoutMs": self.session_timeout_ms,
            "rebalanceTimeoutMs": self.rebalance_timeout_ms,
            "heartbeatFrequency": HEARTBEAT_FREQUENCY,
            "failedHeartbeatThreshold": HEARTBEAT_FREQUENCY,  # dead after the session, as Kafka
            "protocolType": "consumer",
            "protocols": [{"name": self.assignor, "metadata": self._metadata()}],
        }
        answer = self.call("join-group", body)
        if answer.status == 202:
            self.member_id = answer.body["memberId"]
        elif answer.status == 200:
            code = answer.error_code
            if code == 79:
                self.member_id = answer.body["memberId"]
            elif code == 0:
                self.generation = answer.body["generationId"]
                self.members = [m["memberId"] for m in answer.body["members"]]
                self.metadata = {m["memberId"]: m.get("metadata") for m in answer.body["members"]}
                self.state = "sync"
            elif code == 25:
                self.member_id = ""
        return answer

    @property
    def assignor(self) -> str:
        return COOPERATIVE_ASSIGNOR if self.cooperative else ASSIGNOR

    def _metadata(self) -> str:
        return subscription_b64(owned=self.assigned if self.cooperative else None)

    def _plan(self) -> dict[str, list[int]]:
        if not self.cooperative:
            return range_assign(self.members, self.partitions)
        owned = {}
        for member_id in self.members:
            raw = self.metadata.get(member_id)
            sub = decode_subscription(base64.b64decode(raw)) if raw else None
            owned[member_id] = sub.owned_partitions.get(TOPIC, []) if sub else []
        return cooperative_sticky_assign(owned, self.partitions)

    def _sync(self) -> Call:
        body: dict[str, Any] = {
            "groupId": self.group_id,
            "generationId": self.generation,
            "memberId": self.member_id,
            "protocolType": "consumer",
            "protocolName": self.assignor,
        }
        if self.members:  # the leader
            plan = self._plan()
            body["assignments"] = [
                {"memberId": m, "assignment": base64.b64encode(assignment_bytes(p)).decode()}
                for m, p in plan.items()
            ]
        answer = self.call("sync-group", body)
        if answer.status == 200:
            if answer.error_code == 0:
                data = base64.b64decode(answer.body.get("assignment") or "")
                assigned = decode_assignment(data).partitions.get(TOPIC, [])
                lost = set(self.assigned) - set(assigned)
                self.revoked += len(lost)
                self.assigned = assigned
                # KIP-429: a member that revoked something rejoins at once.
                self.state = "join" if self.cooperative and lost else "stable"
            else:
                self._rejoin(answer.error_code)
        return answer

    def _heartbeat(self) -> Call:
        body = {
            "groupId": self.group_id,
            "generationId": self.generation,
            "memberId": self.member_id,
        }
        answer = self.call("heartbeat", body)
        if answer.status == 200 and answer.error_code != 0:
            self._rejoin(answer.error_code)
        return answer

    def _rejoin(self, code: int | None) -> None:
        self.state = "join"
        if code == 25:
            self.member_id = ""
        if code == 25 or not self.cooperative:  # eager: give everything up before rejoining
            self.revoked += len(self.assigned)
            self.assigned = []


def all_stable(members: Sequence[SimMember], partitions: int) -> bool:
    """Every live member has its assignment for one generation and every partition has
    exactly one owner."""
    live = [m for m in members if m.live]
    if not live or any(m.state != "stable" for m in live):
        return False
    if len({m.generation for m in live}) != 1:
        return False
    owned = sorted(p for m in live for p in m.assigned)
    return owned == list(range(partitions))


# A round slower than this is reported as it ends (large groups: progress while they run).
SLOW_ROUND_S = 5.0


@dataclass
class Rounds:
    rounds: int = 0
    seconds: float = 0.0
    usage: capacity.Usage = field(default_factory=capacity.Usage)


def run_rounds(
    members: Sequence[SimMember],
    done: Callable[[], bool],
    *,
    max_rounds: int = 200,
    heartbeat_interval_ms: int = 0,
    concurrency: int = 1,
) -> Rounds:
    """Rounds of classic members until `done()`: in each, every member takes its next step
    (see `run_rounds_of`). Rounds in which every live member only heartbeats are paced to the
    heartbeat interval; barrier re-sends (after a 202) go at once."""
    return run_rounds_of(
        lambda: [m.step for m in members],
        done,
        lambda: all(m.state == "stable" for m in members if m.live),
        max_rounds=max_rounds,
        heartbeat_interval_ms=heartbeat_interval_ms,
        concurrency=concurrency,
    )


def run_rounds_of(
    requests: Callable[[], Sequence[Callable[[], Call | None]]],
    done: Callable[[], bool],
    paced: Callable[[], bool],
    *,
    max_rounds: int,
    heartbeat_interval_ms: int,
    concurrency: int,
) -> Rounds:
    """Rounds until `done()`: in each, every one of `requests()` is sent once, in shuffled
    order, from `concurrency` threads at once (as clients send theirs side by side). A round
    that `paced()` says is only heartbeats lasts at least the heartbeat interval."""
    result = Rounds()
    start = time.perf_counter()
    with ThreadPoolExecutor(concurrency) as pool:
        while not done():
            if result.rounds >= max_rounds:
                raise RuntimeError(f"not done after {max_rounds} rounds")
            round_start = time.perf_counter()
            pace = paced()
            order = list(requests())
            random.shuffle(order)
            for answer in pool.map(lambda send: send(), order):
                if answer is not None:
                    result.usage.add(answer.usage)
                    if answer.status >= 400:
                        raise RuntimeError(f"{answer.api}: {answer.status} {answer.body}")
            result.rounds += 1
            took = time.perf_counter() - round_start
            if took > SLOW_ROUND_S:
                print(f"    round {result.rounds}: {took:.0f}s", flush=True)
            if pace:
                wait = heartbeat_interval_ms / 1000 - (time.perf_counter() - round_start)
                if wait > 0:
                    time.sleep(wait)
    result.seconds = time.perf_counter() - start
    return result


# --- numbers and tables ---


def percentile(values: Sequence[float], q: float) -> float:
    """Nearest-rank percentile (q in 0..100)."""
    ordered = sorted(values)
    rank = max(1, math.ceil(q / 100 * len(ordered)))
    return ordered[rank - 1]


def fmt(value: float, digits: int = 1) -> str:
    if value == int(value):
        return f"{int(value):,}"
    return f"{value:,.{digits}f}"


def table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    lines = ["| " + " | ".join(headers) + " |", "|" + "|".join("---" for _ in headers) + "|"]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def machine(engine: bool = True) -> str:
    """The machine line of a section; `engine` names the DynamoDB Local it ran on."""
    line = (
        f"{os.cpu_count()} cores ({platform.machine()}, {platform.system()}, shared with other "
        f"test runs), Python {platform.python_version()}"
    )
    return f"{line}, DynamoDB Local ({dynamodb_local_version()})" if engine else line


def dynamodb_local_version() -> str:
    """The DynamoDB Local the benchmarks run on: its bundle's date, from the jar's folder."""
    from groupcoord.local.dynamodb_local import Missing, find_jar

    try:
        return find_jar().parent.name.removeprefix("dynamodb_local_")
    except Missing:
        return "not installed"


DEFAULT_HEADER = (
    "# Performance\n\nMeasured by the scripts in `bench/` (see `bench/README.md`); each section "
    "is rewritten by its script.\n\n"
)


def write_section(key: str, title: str, command: str, body: str, engine: bool = True) -> Path:
    """Put the benchmark's section into docs/performance.md, replacing its previous run."""
    text = PERFORMANCE_MD.read_text() if PERFORMANCE_MD.exists() else ""
    pattern = re.compile(r"<!-- bench:(\w+) -->\n(.*?)<!-- /bench:\1 -->\n", re.S)
    matches = list(pattern.finditer(text))
    sections = {m.group(1): m.group(2) for m in matches}
    # Text after the last section (the hand-written "What the figures found" part) is kept.
    trailer = text[matches[-1].end() :] if matches else ""
    date = datetime.now(UTC).strftime("%Y-%m-%d")
    sections[key] = (
        f"## {title}\n\n"
        f"Reproduce: `{command}` (from the repository root). Run {date} on {machine(engine)}.\n\n"
        f"{body.strip()}\n\n"
    )
    order = [k for k in SECTION_ORDER if k in sections] + sorted(
        k for k in sections if k not in SECTION_ORDER
    )
    # The page's opening (before the first section) is hand-written: kept as it is.
    header = text[: matches[0].start()] if matches else DEFAULT_HEADER
    out = header + "".join(f"<!-- bench:{k} -->\n{sections[k]}<!-- /bench:{k} -->\n" for k in order)
    out += trailer
    PERFORMANCE_MD.write_text(out)
    return PERFORMANCE_MD


def parse_args(
    parser: argparse.ArgumentParser, argv: Sequence[str] | None, **smoke: Any
) -> argparse.Namespace:
    """The runner's arguments, with `--smoke`: a tiny run that checks the whole path at the
    sizes `smoke` gives (option dest -> value) and writes nothing (`no_write`; the runners
    save no bench/.results either). tests/integration/test_bench_smoke.py runs each so."""
    sizes = ", ".join(f"--{k.replace('_', '-')} {v}" for k, v in smoke.items())
    parser.add_argument(
        "--smoke", action="store_true", help=f"a tiny run ({sizes}) that writes nothing"
    )
    args = parser.parse_args(argv)
    if args.smoke:
        vars(args).update(smoke, no_write=True)
    return args


def save_results(name: str, data: Any) -> Path:
    """Raw figures for the other scripts (bench/.results/<name>.json, not committed)."""
    RESULTS.mkdir(exist_ok=True)
    path = RESULTS / f"{name}.json"
    path.write_text(json.dumps(data, indent=2))
    return path


def load_results(name: str) -> Any | None:
    path = RESULTS / f"{name}.json"
    return json.loads(path.read_text()) if path.exists() else None


# --- simulated consumer-protocol members (KIP-848) ---


class ConsumerGroupSim:
    """Members of a consumer-protocol group: join with epoch 0, then heartbeat, acknowledging
    each new assignment once (topicPartitions is sent only when it changed, as clients do)."""

    def __init__(
        self, call: Callable[[str, Any], Call], group_id: str, size: int, topic: str = TOPIC
    ) -> None:
        self.call = call
        self.group_id = group_id
        self.topic = topic
        self.ids = [str(uuid.uuid4()) for _ in range(size)]
        self.epochs: dict[str, int] = {}
        self.owned: dict[str, list[dict[str, Any]]] = {}
        self.unacked: set[str] = set()

    def beat(self, member_id: str) -> Call:
        body: dict[str, Any] = {
            "groupId": self.group_id,
            "memberId": member_id,
            "memberEpoch": self.epochs.get(member_id, 0),
        }
        if member_id not in self.epochs:
            body |= {
                "subscribedTopicNames": [self.topic],
                "rebalanceTimeoutMs": 300_000,
                "topicPartitions": [],
            }
        elif member_id in self.unacked:
            body["topicPartitions"] = self.owned.get(member_id, [])
        answer = self.call("consumer-group-heartbeat", body)
        if answer.status == 200 and answer.error_code == 0:
            self.unacked.discard(member_id)  # else the retry acknowledges it again
            self.epochs[member_id] = answer.body["memberEpoch"]
            if answer.body.get("assignment") is not None:
                self.owned[member_id] = answer.body["assignment"]["topicPartitions"]
                self.unacked.add(member_id)
        return answer

    def converge(self, max_rounds: int = 30) -> Call | None:
        """Heartbeat every member until a round changes nothing; a failed answer, else None.
        A quiet round may come before the group's target is installed (installs are batched,
        group.consumer.assignment.interval.ms): settle_consumer_group waits for Stable."""
        for _ in range(max_rounds):
            before = (dict(self.epochs), set(self.unacked))
            for member_id in self.ids:
                answer = self.beat(member_id)
                if answer.status != 200 or answer.error_code != 0:
                    return answer
            if (dict(self.epochs), set(self.unacked)) == before and not self.unacked:
                return None
        return None


def settle_consumer_group(
    coordinator: InProcess, sim: ConsumerGroupSim, timeout_s: float = 60.0
) -> Call | None:
    """Heartbeat the members until the group is Stable: its target installed for the latest
    group epoch and every member reconciled to it. `converge()` alone stops at the first round
    that changes nothing, which may come before the target is installed (at most once per
    `group.consumer.assignment.interval.ms`). A failed answer, else None."""
    from groupcoord.service.consumer.common import reload

    give_up = time.monotonic() + timeout_s
    while True:
        failed = sim.converge()
        if failed is not None:
            return failed
        group = reload(coordinator.store.consumer, sim.group_id)
        assert group is not None
        epochs = {sim.epochs.get(m) for m in sim.ids}
        if group.target_epoch == group.group_epoch and epochs == {group.group_epoch}:
            return None
        if time.monotonic() > give_up:
            raise RuntimeError(f"{sim.group_id} not Stable after {timeout_s:g}s")
        time.sleep(0.2)


# --- consumer-protocol groups built with the store's own code ---


def build_consumer_group_direct(
    coordinator: InProcess, group_id: str, size: int, session_timeout_ms: int = 300_000
) -> tuple[ConsumerGroupSim, dict[str, float]]:
    """A Stable consumer-protocol group of `size` members over TOPIC, built the way
    tests/integration/test_consumer_scale.py builds one: the first member joins through the
    handler (and gets every partition); the others are written as a burst of joins leaves them
    (member items by the store's `member_to_item` + BatchWriteItem, the group epoch bumped);
    the real install code (`ensure_target_installed`) computes and writes their targets; the
    first member revokes through the handler; the others' items are then written reconciled
    (epoch = target epoch, holding their targets), as their next heartbeats would leave them.
    Returns the simulated members (their epochs set) and the build's phase times in seconds."""
    from groupcoord.service.consumer.install import ensure_target_installed

    times: dict[str, float] = {}
    started = time.perf_counter()
    sim = ConsumerGroupSim(coordinator.call, group_id, 1)
    failed = sim.converge()
    if failed is not None:
        raise RuntimeError(f"first member: {failed.status} {failed.body}")
    first = sim.ids[0]
    group, ids = _join_burst(coordinator, group_id, size - 1, session_timeout_ms)
    times["members written"] = time.perf_counter() - started
    started = time.perf_counter()
    group, installed = ensure_target_installed(coordinator.store, group, batched=False)
    if installed is None or group.target_epoch != group.group_epoch:
        raise RuntimeError("the install did not complete")
    times["install"] = time.perf_counter() - started
    started = time.perf_counter()
    _revoke_first(sim, first, group.target_epoch)
    reconciled = [
        _reconciled(installed.members[mid], group.target_epoch, session_timeout_ms) for mid in ids
    ]
    coordinator.dynamo.batch_write(
        puts=[consumer_member_to_item(group_id, group.member_shards, m) for m in reconciled]
    )
    times["members reconciled"] = time.perf_counter() - started
    sim.ids = [first, *ids]
    for mid in ids:
        sim.epochs[mid] = group.target_epoch
    return sim, times


def _join_burst(
    coordinator: InProcess, group_id: str, count: int, session_timeout_ms: int
) -> tuple[Any, list[str]]:
    """`count` members written as a burst of joins leaves them: the group as written, their
    ids."""
    from groupcoord.service.consumer.common import reload

    ids = [f"bench-{i:06d}-{uuid.uuid4().hex[:6]}" for i in range(count)]
    store = coordinator.store
    add_joined_members(
        store,
        group_id,
        count,
        [TOPIC],
        session_ms=session_timeout_ms,
        rebalance_timeout_ms=300_000,
        ids=ids,
    )
    return reload(store.consumer, group_id), ids


def _revoke_first(sim: ConsumerGroupSim, first: str, target_epoch: int) -> None:
    """The first member revokes what the install took away, then acknowledges."""
    sim.unacked.add(first)
    for _ in range(4):
        answer = sim.beat(first)
        if answer.status != 200 or answer.error_code != 0:
            raise RuntimeError(f"first member: {answer.status} {answer.body}")
        if sim.epochs[first] == target_epoch and first not in sim.unacked:
            break


def _reconciled(member: Any, epoch: int, session_timeout_ms: int) -> Any:
    """A member as its heartbeats would leave it once reconciled: at `epoch`, holding its
    target."""
    from groupcoord.core.consumer.reconciliation import MemberAssignment

    return replace(
        member,
        assignment=MemberAssignment(
            epoch=epoch,
            previous_epoch=member.assignment.epoch,
            assigned=member.target,
            assigned_at={epoch: member.target},
        ),
        wait_on=(),
        acquired_version=member.acquired_version + 1,
        version=member.version + 1,
        session_deadline=runtime.now_ms() + session_timeout_ms,
    )
