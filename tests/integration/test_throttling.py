"""Throttling by DynamoDB: the store retries (bounded, jittered) and, when the throttling
outlasts the retries, the API answers 429 with Retry-After
(docs/table-layout.md, "Retries, throttling and cost accounting") and has changed nothing. A
throttling proxy in front of the test endpoint fails the chosen DynamoDB operations."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import dataclass

import pytest
from botocore.exceptions import ClientError

from groupcoord.runtime import now_ms
from groupcoord.service import sweep as sweeper
from groupcoord.settings import Settings
from groupcoord.store import capacity, schema
from groupcoord.store.dynamo import Put, StoreThrottled
from groupcoord.store.store import Store
from groupcoord.store.topics import NOTIFY_GRACE_MS, TOPIC_CHANGES_PK
from tests.support.api import Answer, Api
from tests.support.servers import running_serve, unique_table
from tests.support.throttling_proxy import (
    Fault,
    ThrottlingProxy,
    first_attempts,
    transaction_conflict,
)

MAX_ATTEMPTS = 2


@pytest.fixture(scope="module")
def proxy(dynamodb_endpoint: str) -> Iterator[ThrottlingProxy]:
    with ThrottlingProxy(dynamodb_endpoint) as proxy:
        yield proxy


@pytest.fixture(autouse=True)
def forward_everything(proxy: ThrottlingProxy) -> Iterator[None]:
    proxy.reset()
    yield
    proxy.reset()


@dataclass
class Served:
    api: Api
    direct: Store  # the same table, straight on the test endpoint (no proxy)


@pytest.fixture(scope="module")
def served(proxy: ThrottlingProxy, dynamodb_endpoint: str) -> Iterator[Served]:
    """`groupcoord serve` whose DynamoDB is the proxy, with two attempts per call."""
    table = unique_table()
    settings = {
        "groupcoord.store.max.attempts": str(MAX_ATTEMPTS),
        # The sweeper would query through the proxy meanwhile; these tests sweep themselves.
        "groupcoord.sweep.interval.ms": "3600000",
    }
    with running_serve(proxy.url, settings=settings, table=table) as url:
        direct = Store.connect(
            Settings.from_mapping({"groupcoord.table.name": table}), endpoint_url=dynamodb_endpoint
        )
        yield Served(Api(url), direct)


def topic_name() -> str:
    return f"throttled-{uuid.uuid4().hex[:10]}"


def create_body(name: str) -> dict:
    return {"topics": [{"name": name, "numPartitions": 3}]}


def assert_untouched(store: Store, name: str) -> None:
    assert store.topics.get(name) is None
    assert name not in {t.name for t in store.topics.list()}
    changes = store.dynamo.query("pk = :pk", {":pk": TOPIC_CHANGES_PK}, consistent=True)
    assert [c for c in changes if c["topic"] == name] == []


def assert_429(answer: Answer) -> None:
    assert answer.status == 429, (answer.status, answer.body)
    assert int(answer.headers["Retry-After"]) >= 1
    assert answer.body["errorCode"] == 42
    assert "throttled" in answer.body["errorMessage"]
    assert answer.headers["Content-Type"].startswith("application/json")


# --- through `groupcoord serve` ---


def test_throttled_transaction_answers_429_and_writes_nothing(
    served: Served, proxy: ThrottlingProxy
) -> None:
    name = topic_name()
    proxy.fail("TransactWriteItems")
    answer = served.api.call(
        "create-topics", create_body(name), headers={"Kafka-Correlation-Id": "41"}
    )
    assert_429(answer)
    assert answer.headers["Kafka-Correlation-Id"] == "41"
    assert proxy.calls["TransactWriteItems"] == MAX_ATTEMPTS  # retried, then gave up
    assert_untouched(served.direct, name)

    # Nothing half-done stands in the way of the client's retry.
    proxy.reset()
    created = served.api.ok("create-topics", create_body(name))["topics"][0]
    assert created["errorCode"] == 0, created
    assert served.direct.topics.get(name).partitions == 3


def test_throttled_read_answers_429_before_anything_is_written(
    served: Served, proxy: ThrottlingProxy
) -> None:
    name = topic_name()
    proxy.fail("GetItem")
    assert_429(served.api.call("create-topics", create_body(name)))
    assert proxy.calls["GetItem"] == MAX_ATTEMPTS
    assert proxy.calls["TransactWriteItems"] == 0
    assert_untouched(served.direct, name)
    assert_429(served.api.call("metadata", {"topics": [{"name": name}]}))


def test_throttled_listing_answers_429(served: Served, proxy: ThrottlingProxy) -> None:
    proxy.fail("Query")
    assert_429(served.api.call("metadata", {}))
    assert proxy.calls["Query"] == MAX_ATTEMPTS


def test_throttling_of_the_first_attempts_only_is_absorbed_by_the_retry(
    served: Served, proxy: ThrottlingProxy
) -> None:
    name = topic_name()
    proxy.fail("TransactWriteItems", when=first_attempts)
    created = served.api.ok("create-topics", create_body(name))["topics"][0]
    assert created["errorCode"] == 0, created
    assert (proxy.calls["TransactWriteItems"], proxy.failed["TransactWriteItems"]) == (2, 1)
    assert served.direct.topics.get(name).topic_id == created["topicId"]


def test_every_operation_throttled_once_per_call_still_succeeds(
    served: Served, proxy: ThrottlingProxy
) -> None:
    name = topic_name()
    operations = ("GetItem", "Query", "TransactWriteItems", "UpdateItem", "DeleteItem")
    proxy.fail(*operations, when=first_attempts)
    created = served.api.ok("create-topics", create_body(name))["topics"][0]
    assert created["errorCode"] == 0, created
    grown = served.api.ok("create-partitions", {"topics": [{"name": name, "count": 5}]})
    assert grown["results"][0]["errorCode"] == 0, grown
    shown = served.api.ok("metadata", {"topics": [{"name": name}]})["topics"][0]
    assert (shown["topicId"], len(shown["partitions"])) == (created["topicId"], 5)
    assert sum(proxy.failed.values()) > 0
    for operation in operations:
        # Each call failed once and went through on its retry.
        assert proxy.calls[operation] == 2 * proxy.failed[operation], operation


def test_throttling_after_the_commit_leaves_the_change_to_the_sweeper(
    served: Served, proxy: ThrottlingProxy
) -> None:
    """The topic transaction commits; notifying its groups (a Query) is throttled. Whatever
    the answer, the committed change reaches the subscribed groups by the next sweep."""
    name = topic_name()
    group = f"g-{uuid.uuid4().hex[:8]}"
    direct = served.direct
    direct.dynamo.put({**schema.group_key(group), "kind": schema.KIND_GROUP, "groupId": group})
    direct.topics.subscribe(name, group)
    proxy.fail("Query")

    answer = served.api.call("create-topics", create_body(name))
    assert answer.status in (200, 429), (answer.status, answer.body)
    assert proxy.calls["TransactWriteItems"] == 1
    assert direct.topics.get(name) is not None
    pending = [
        c
        for c in direct.dynamo.query("pk = :pk", {":pk": TOPIC_CHANGES_PK}, consistent=True)
        if c["topic"] == name
    ]
    assert len(pending) == 1

    proxy.reset()
    sweeper.sweep(direct, now_ms() + NOTIFY_GRACE_MS + 1000)
    group_item = direct.dynamo.get(schema.group_key(group), consistent=True)
    assert group_item is not None and group_item["topicChanges"] == 1
    assert direct.dynamo.get({"pk": TOPIC_CHANGES_PK, "sk": pending[0]["sk"]}) is None


# --- the store's retry loop, in process ---


@pytest.fixture
def throttled_store(proxy: ThrottlingProxy) -> Store:
    """A store with three attempts per call, on a fresh table, through the proxy."""
    settings = Settings.from_mapping(
        {"groupcoord.table.name": unique_table(), "groupcoord.store.max.attempts": "3"}
    )
    store = Store.connect(settings, endpoint_url=proxy.url)
    store.ensure_table()
    return store


def test_store_gives_up_after_max_attempts_and_meters_each_attempt(
    throttled_store: Store, proxy: ThrottlingProxy
) -> None:
    proxy.fail("GetItem")
    with capacity.metered() as usage, pytest.raises(StoreThrottled) as throttled:
        throttled_store.dynamo.get({"pk": "a", "sk": "b"})
    assert throttled.value.retry_after_s >= 1
    assert "3 attempts" in str(throttled.value)
    assert proxy.calls["GetItem"] == 3
    assert usage.by_operation == {"get_item": 3}


def test_store_retry_succeeds_and_meters_both_attempts(
    throttled_store: Store, proxy: ThrottlingProxy
) -> None:
    throttled_store.dynamo.put({"pk": "a", "sk": "b", "v": 1})
    proxy.fail("GetItem", when=first_attempts)
    with capacity.metered() as usage:
        item = throttled_store.dynamo.get({"pk": "a", "sk": "b"}, consistent=True)
    assert item == {"pk": "a", "sk": "b", "v": 1}
    assert usage.by_operation == {"get_item": 2}
    assert (proxy.calls["GetItem"], proxy.failed["GetItem"]) == (2, 1)


def test_a_transaction_conflict_is_retried(throttled_store: Store, proxy: ThrottlingProxy) -> None:
    proxy.fail("TransactWriteItems", when=first_attempts, fault=transaction_conflict(2))
    throttled_store.dynamo.transact([Put({"pk": "t", "sk": "1"}), Put({"pk": "t", "sk": "2"})])
    assert proxy.calls["TransactWriteItems"] == 2
    assert throttled_store.dynamo.get({"pk": "t", "sk": "2"}, consistent=True) is not None

    proxy.fail("TransactWriteItems", fault=transaction_conflict(1))
    with pytest.raises(StoreThrottled):
        throttled_store.dynamo.transact([Put({"pk": "t", "sk": "3"})])


def test_a_non_retryable_error_is_not_retried(
    throttled_store: Store, proxy: ThrottlingProxy
) -> None:
    proxy.fail("GetItem", fault=Fault("ValidationException", "One or more parameter values"))
    with pytest.raises(ClientError):
        throttled_store.dynamo.get({"pk": "a", "sk": "b"})
    assert proxy.calls["GetItem"] == 1
