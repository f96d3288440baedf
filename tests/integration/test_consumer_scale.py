"""A 5,000-member consumer group over 100,000 partitions (bounded items), and what a
join costs as the group grows.

Driving 5,000 joins over HTTP would take minutes, so this runs the store and service code on
the in-memory
DynamoDB of groupcoord/local/memory/, which enforces the item and transaction limits.
The group is grown in the store directly (member items written as if the members had joined
while an install was running, which is what a burst of joins leaves behind), then the real
service code takes over: the install (`ensure_target_installed`), reconciling heartbeats, and a
join. Every DynamoDB write
goes through a recorder that checks the limits: no transaction over 100 items, and, after the
install, no item in the table anywhere near 400 KB.

GROUPCOORD_SCALE_MEMBERS / GROUPCOORD_SCALE_PARTITIONS change the size (defaults 5,000 and
100,000); GROUPCOORD_SCALE_REPORT=1 prints the figures.
"""

from __future__ import annotations

import os
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from typing import Any

import pytest

from groupcoord.core.consumer.assignment import size
from groupcoord.core.consumer.assignors import AssignorMember, assign_uniform
from groupcoord.core.consumer.model import ConsumerGroup
from groupcoord.core.topics import TopicRecord
from groupcoord.local.memory import MemoryDynamoClient
from groupcoord.local.seed import add_joined_members, largest_items
from groupcoord.models.consumer import ConsumerGroupHeartbeatRequest
from groupcoord.service.consumer.common import reload
from groupcoord.service.consumer.heartbeat import consumer_group_heartbeat
from groupcoord.service.consumer.install import ensure_target_installed
from groupcoord.service.context import ApiContext
from groupcoord.settings import Settings
from groupcoord.store import capacity, schema
from groupcoord.store.dynamo import Dynamo
from groupcoord.store.store import Store
from groupcoord.topic_ids import new_topic_id
from tests.support.consumer import unique
from tests.support.servers import IMMEDIATE_INSTALLS

MEMBERS = int(os.environ.get("GROUPCOORD_SCALE_MEMBERS", "5000"))
PARTITIONS = int(os.environ.get("GROUPCOORD_SCALE_PARTITIONS", "100000"))
REPORT = os.environ.get("GROUPCOORD_SCALE_REPORT") == "1"
TOPICS = 4
ITEM_LIMIT = 400 * 1024


@dataclass
class Recorder:
    """Every transaction's size and every member partition key written."""

    transactions: list[int] = field(default_factory=list)
    written_pks: Counter = field(default_factory=Counter)
    largest_put: int = 0


@contextmanager
def recording(dynamo: Dynamo) -> Iterator[Recorder]:
    rec = Recorder()
    transact, put = dynamo.transact, dynamo.put

    def recorded_transact(items: Any) -> None:
        rec.transactions.append(len(items))
        for i in items:
            key = getattr(i, "key", None) or {k: i.item[k] for k in (schema.PK, schema.SK)}
            rec.written_pks[key[schema.PK]] += 1
        transact(items)

    def recorded_put(item: dict, **kwargs: Any) -> None:
        rec.largest_put = max(rec.largest_put, capacity.item_size(item))
        rec.written_pks[item[schema.PK]] += 1
        put(item, **kwargs)

    dynamo.transact, dynamo.put = recorded_transact, recorded_put  # type: ignore[method-assign]
    try:
        yield rec
    finally:
        del dynamo.transact, dynamo.put


def heartbeat(store: Store, body: dict) -> dict:
    ctx = ApiContext(
        settings=store.settings, store=store, now_ms=int(time.time() * 1000), endpoint="http://x"
    )
    request = ConsumerGroupHeartbeatRequest.model_validate(body)
    answer = consumer_group_heartbeat(request, ctx).to_json_dict()
    assert answer["errorCode"] == 0, answer
    return answer


def join_body(group: str, member_id: str, topics: list[str]) -> dict:
    return {"groupId": group, "memberId": member_id, "memberEpoch": 0,
            "rebalanceTimeoutMs": 30000, "subscribedTopicNames": topics,
            "topicPartitions": []}  # fmt: skip


def owned_wire(assignment: dict | None) -> list[dict]:
    return [
        {"topicId": tp["topicId"], "partitions": tp["partitions"]}
        for tp in (assignment or {}).get("topicPartitions", [])
    ]


def owning(group: str, member_id: str, answer: dict) -> dict:
    """The member's next heartbeat: at the epoch `answer` gave, owning what it assigned."""
    return {"groupId": group, "memberId": member_id, "memberEpoch": answer["memberEpoch"],
            "topicPartitions": owned_wire(answer["assignment"])}  # fmt: skip


@pytest.fixture
def store() -> Store:
    settings = Settings.from_mapping({"groupcoord.table.name": "scale", **IMMEDIATE_INSTALLS})
    store = Store(Dynamo(MemoryDynamoClient(), settings.table_name), settings)
    store.ensure_table()
    return store


@pytest.fixture
def topics(store: Store) -> list[str]:
    names = [unique("scale") for _ in range(TOPICS)]
    for name in names:
        store.topics.create(TopicRecord(name, new_topic_id(), PARTITIONS // TOPICS), now_ms=0)
    return names


def test_the_uniform_assignor_computes_a_5000_member_target_quickly() -> None:
    topics = {f"t{i}": PARTITIONS // TOPICS for i in range(TOPICS)}
    members = [AssignorMember(f"m{i:05d}", frozenset(topics)) for i in range(MEMBERS)]
    started = time.perf_counter()
    first = assign_uniform(members, topics)
    cold = time.perf_counter() - started
    sticky = [replace(m, previous=first[m.member_id]) for m in members[1:]]
    started = time.perf_counter()
    second = assign_uniform([*sticky, AssignorMember("joiner", frozenset(topics))], topics)
    warm = time.perf_counter() - started
    assert sum(size(a) for a in second.values()) == PARTITIONS
    if REPORT:
        print(f"\nassignor {MEMBERS} x {PARTITIONS}: cold {cold:.2f}s, sticky rerun {warm:.2f}s")
    assert cold < 10 and warm < 10  # seconds, on a busy 2-core CI machine


def test_a_5000_member_group_over_100000_partitions(store: Store, topics: list[str]) -> None:
    group = unique("scale-g")
    seen: dict[str, Any] = {}  # the figures GROUPCOORD_SCALE_REPORT=1 prints
    with recording(store.dynamo) as rec:
        first = first_member_takes_every_partition(store, group, topics, seen)
        before, after, joined = grow_then_install(store, group, topics, rec, seen)
        reconcile_then_heartbeat_steadily(store, group, first, before, after, joined[0], seen)
        one_more_member_joins(store, group, topics, after, rec, seen)
    if REPORT:
        print_report(seen)


def first_member_takes_every_partition(
    store: Store, group: str, topics: list[str], seen: dict[str, Any]
) -> dict:
    """The first member gets all 100,000 partitions: its item must still be small."""
    first = heartbeat(store, join_body(group, "first", topics))
    assert sum(len(tp["partitions"]) for tp in first["assignment"]["topicPartitions"]) == (
        PARTITIONS // TOPICS * TOPICS
    )
    largest_single, _ = largest_items(store, group)
    assert largest_single < 4 * 1024, largest_single
    seen["largest_single"] = largest_single
    return first


def grow_then_install(
    store: Store, group: str, topics: list[str], rec: Recorder, seen: dict[str, Any]
) -> tuple[ConsumerGroup, ConsumerGroup, list[str]]:
    """The other members, as a burst of joins leaves them; then the install of their targets,
    within the limits: transactions, item sizes, and writes spread over the member shards."""
    joined = add_joined_members(
        store, group, MEMBERS - 1, topics, session_ms=600_000, rebalance_timeout_ms=30_000
    )
    before = reload(store.consumer, group)
    assert before is not None
    with capacity.metered() as install_usage:
        started = time.perf_counter()
        after, installed = ensure_target_installed(store, before)
        seen["install_s"] = time.perf_counter() - started
    assert installed is not None and after.target_epoch == after.group_epoch
    targets = [installed.members[mid].target for mid in ["first", *joined]]
    per_member = PARTITIONS // MEMBERS
    assert {size(t) for t in targets} <= {per_member, per_member + 1}

    assert max(rec.transactions) <= 100
    largest_member, group_item = largest_items(store, group)
    assert largest_member < 4 * 1024 and group_item < 4 * 1024
    assert rec.largest_put < ITEM_LIMIT // 100
    shards = Counter({pk: n for pk, n in rec.written_pks.items() if pk.startswith(f"G#{group}#M")})
    assert len(shards) == after.member_shards
    assert max(shards.values()) < 2 * (sum(shards.values()) / len(shards))
    seen.update(
        install_usage=install_usage,
        largest_member=largest_member,
        group_item=group_item,
        shards=shards,
    )
    return before, after, joined


def reconcile_then_heartbeat_steadily(
    store: Store,
    group: str,
    first: dict,
    before: ConsumerGroup,
    after: ConsumerGroup,
    member_id: str,
    seen: dict[str, Any],
) -> None:
    """The first member revokes what it lost; then each member takes its share, and a steady
    heartbeat costs the same whatever the group's size."""
    revoked = heartbeat(store, owning(group, "first", first))
    kept = heartbeat(store, owning(group, "first", revoked))
    assert kept["memberEpoch"] == after.target_epoch
    with capacity.metered() as reconcile_usage:
        got = heartbeat(
            store,
            {
                "groupId": group,
                "memberId": member_id,
                "memberEpoch": before.target_epoch,
                "topicPartitions": [],
            },
        )
    assert got["memberEpoch"] == after.target_epoch
    per_member = PARTITIONS // MEMBERS
    assert sum(len(tp["partitions"]) for tp in got["assignment"]["topicPartitions"]) in (
        per_member,
        per_member + 1,
    )
    with capacity.metered() as steady_usage:
        heartbeat(
            store,
            {"groupId": group, "memberId": member_id, "memberEpoch": got["memberEpoch"]},
        )
    # Two reads and, when the session needs renewing (docs/sessions.md), one write:
    # whatever the group's size.
    assert steady_usage.by_operation.get("get_item") == 2, steady_usage.by_operation
    assert set(steady_usage.by_operation) <= {"get_item", "put_item"}
    assert steady_usage.write_units <= 1.0 and steady_usage.read_units <= 1.5
    seen.update(reconcile_usage=reconcile_usage, steady_usage=steady_usage)


def one_more_member_joins(
    store: Store,
    group: str,
    topics: list[str],
    after: ConsumerGroup,
    rec: Recorder,
    seen: dict[str, Any],
) -> None:
    """One more member joins the 5,000: a constant number of requests; the members it takes
    partitions from get new targets, nobody else is written."""
    seen["install_transaction"] = max(rec.transactions)
    rec.transactions.clear()
    with capacity.metered() as join_usage:
        started = time.perf_counter()
        heartbeat(store, join_body(group, "late-joiner", topics))
        seen["join_s"] = time.perf_counter() - started
    assert join_usage.by_operation["query"] <= 1 + after.member_shards * 2
    assert max(rec.transactions) <= 100
    per_member = PARTITIONS // MEMBERS
    assert sum(rec.transactions) <= 2 + 2 * (per_member + 1) + 2
    seen["join_usage"] = join_usage


def print_report(seen: dict[str, Any]) -> None:
    install_usage, reconcile_usage = seen["install_usage"], seen["reconcile_usage"]
    steady_usage, join_usage = seen["steady_usage"], seen["join_usage"]
    print(
        f"\n{MEMBERS} members x {PARTITIONS} partitions: install {seen['install_s']:.1f}s "
        f"({install_usage.requests} requests {install_usage.by_operation}, "
        f"{install_usage.read_units:.0f} RU, {install_usage.write_units:.0f} WU), "
        f"largest item {seen['largest_member']} B (single member over all: "
        f"{seen['largest_single']} B), group item {seen['group_item']} B, largest transaction "
        f"{seen['install_transaction']} items, shard writes {sorted(seen['shards'].values())}\n"
        f"reconcile heartbeat {reconcile_usage.by_operation}; steady heartbeat "
        f"{steady_usage.by_operation} {steady_usage.read_units} RU "
        f"{steady_usage.write_units} WU\n"
        f"join #{MEMBERS + 1}: {seen['join_s']:.2f}s {join_usage.requests} requests "
        f"{join_usage.by_operation} {join_usage.read_units:.1f} RU "
        f"{join_usage.write_units:.1f} WU"
    )
