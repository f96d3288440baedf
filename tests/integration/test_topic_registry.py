"""The topic registry and the DynamoDB wrapper under it, against the real test endpoint: topics
by name and id, conditional growth, subscriptions, topic-change notification (and its crash
safety through the sweeper), and the wrapper's errors, batching, pagination and metering."""

from __future__ import annotations

from typing import Any

import pytest

from groupcoord.core.sweeping import FIRST_DELAY_MS
from groupcoord.core.topics import TopicRecord
from groupcoord.runtime import now_ms
from groupcoord.service import sweep as sweeper
from groupcoord.store import capacity, schema
from groupcoord.store.dynamo import (
    Check,
    ConditionFailed,
    Delete,
    Put,
    TransactionCanceled,
    Update,
)
from groupcoord.store.store import Store
from groupcoord.store.topics import (
    NOTIFY_GRACE_MS,
    TOPIC_CHANGES_PK,
    TopicAlreadyExists,
    TopicChanged,
    TopicRegistry,
)
from groupcoord.topic_ids import new_topic_id


def record(name: str = "orders", partitions: int = 3, **kwargs: Any) -> TopicRecord:
    return TopicRecord(
        name=name,
        topic_id=kwargs.pop("topic_id", None) or new_topic_id(),
        partitions=partitions,
        **kwargs,
    )


def put_group(store: Store, group_id: str) -> None:
    """A bare group item (the group protocols own its real shape)."""
    store.dynamo.put({**schema.group_key(group_id), "kind": schema.KIND_GROUP, "groupId": group_id})


def topic_changes(store: Store, group_id: str) -> int | None:
    item = store.dynamo.get(schema.group_key(group_id), consistent=True)
    assert item is not None, group_id
    return item.get("topicChanges")


def pending_changes(store: Store) -> list[dict[str, Any]]:
    return list(store.dynamo.query("pk = :pk", {":pk": TOPIC_CHANGES_PK}, consistent=True))


# --- topics by name and by id ---


def test_create_get_get_by_id_and_list(store: Store) -> None:
    now = now_ms()
    orders = record("orders", 6, replication_factor=3, created_at_ms=now)
    payments = record("payments", 1)
    store.topics.create(orders, now)
    store.topics.create(payments, now)

    assert store.topics.get("orders") == orders
    assert store.topics.get_by_id(orders.topic_id) == orders
    assert store.topics.get_by_id(payments.topic_id) == payments
    assert store.topics.get("missing") is None
    assert store.topics.get_by_id(new_topic_id()) is None
    assert store.topics.list() == [orders, payments]  # in name order
    assert pending_changes(store) == []  # notified: no change item left behind


def test_create_twice_raises_topic_already_exists(store: Store) -> None:
    first = record("orders")
    store.topics.create(first, now_ms())
    with pytest.raises(TopicAlreadyExists):
        store.topics.create(record("orders", 9), now_ms())
    assert store.topics.get("orders") == first
    assert store.topics.get_by_id(first.topic_id) == first
    assert pending_changes(store) == []  # the cancelled transaction wrote nothing


def test_get_by_id_ignores_a_pointer_to_a_topic_with_another_id(store: Store) -> None:
    orders = record("orders")
    store.topics.create(orders, now_ms())
    stale_id = new_topic_id()
    store.dynamo.put({**schema.topic_id_key(stale_id), "kind": "topic-id", "name": "orders"})
    assert store.topics.get_by_id(stale_id) is None


def test_grow_is_conditional_on_what_was_read(store: Store) -> None:
    stale = record("orders", 3)
    store.topics.create(stale, now_ms())
    store.topics.grow(stale, 5, now_ms())
    assert store.topics.get("orders").partitions == 5

    # The stale record (3 partitions) can neither shrink the topic nor grow it to 5 again.
    with pytest.raises(TopicChanged):
        store.topics.grow(stale, 4, now_ms())
    with pytest.raises(TopicChanged):
        store.topics.grow(stale, 5, now_ms())
    assert store.topics.get("orders").partitions == 5
    # Past the current count it may still grow: counts only grow, whatever raced.
    store.topics.grow(stale, 8, now_ms())
    assert store.topics.get("orders").partitions == 8
    assert pending_changes(store) == []


def test_grow_of_a_deleted_or_recreated_topic_raises_topic_changed(store: Store) -> None:
    old = record("orders", 3)
    store.topics.create(old, now_ms())
    store.topics.delete(old, now_ms())
    with pytest.raises(TopicChanged):
        store.topics.grow(old, 10, now_ms())
    assert store.topics.get("orders") is None

    store.topics.create(record("orders", 2), now_ms())
    with pytest.raises(TopicChanged):
        store.topics.grow(old, 10, now_ms())
    assert store.topics.get("orders").partitions == 2


def test_delete_then_recreate_gets_a_new_id(store: Store) -> None:
    old = record("orders", 3)
    store.topics.create(old, now_ms())
    store.topics.delete(old, now_ms())
    assert store.topics.get("orders") is None
    assert store.topics.get_by_id(old.topic_id) is None
    assert store.dynamo.get(schema.topic_id_key(old.topic_id)) is None
    assert store.topics.list() == []

    new = record("orders", 3)
    assert new.topic_id != old.topic_id
    store.topics.create(new, now_ms())
    assert store.topics.get("orders").topic_id == new.topic_id
    assert store.topics.get_by_id(old.topic_id) is None

    # Deleting through the old record must not delete the new topic.
    with pytest.raises(TopicChanged):
        store.topics.delete(old, now_ms())
    assert store.topics.get("orders") == new


# --- subscriptions ---


def test_subscribers_index(store: Store) -> None:
    for group in ("g2", "g1", "g3"):
        store.topics.subscribe("orders", group)
    store.topics.subscribe("orders", "g1")  # idempotent
    store.topics.subscribe("payments", "g9")
    assert store.topics.subscribers("orders") == ["g1", "g2", "g3"]
    assert store.topics.subscribers("payments") == ["g9"]
    assert store.topics.subscribers("nobody") == []

    store.topics.unsubscribe("orders", "g2")
    store.topics.unsubscribe("orders", "never-subscribed")
    assert store.topics.subscribers("orders") == ["g1", "g3"]


def test_regex_subscribers_match_in_full(store: Store) -> None:
    store.topics.set_regex("prefix", "ord.*")
    store.topics.set_regex("partial", "ord")  # would match "orders" with search(), not in full
    store.topics.set_regex("either", "orders|payments")
    store.topics.set_regex("broken", "(")
    assert sorted(store.topics.regex_subscribers()) == [
        ("broken", "("),
        ("either", "orders|payments"),
        ("partial", "ord"),
        ("prefix", "ord.*"),
    ]
    store.topics.subscribe("orders", "by-name")
    assert store.topics.groups_affected_by("orders") == {"prefix", "either", "by-name"}
    assert store.topics.groups_affected_by("ord") == {"prefix", "partial"}
    assert store.topics.groups_affected_by("payments") == {"either"}
    assert store.topics.groups_affected_by("orders.dlq") == {"prefix"}

    store.topics.set_regex("prefix", "pay.*")  # replaced
    store.topics.set_regex("either", None)  # forgotten
    assert store.topics.groups_affected_by("orders") == {"by-name"}
    assert store.topics.groups_affected_by("payments") == {"prefix"}


# --- topic changes reach the groups ---


@pytest.fixture
def groups(store: Store) -> Store:
    """by-name and by-regex follow "orders"; the others do not."""
    for group in ("by-name", "by-regex", "other-topic", "other-regex", "no-subscription"):
        put_group(store, group)
    store.topics.subscribe("orders", "by-name")
    store.topics.set_regex("by-regex", "ord[a-z]+")
    store.topics.subscribe("payments", "other-topic")
    store.topics.set_regex("other-regex", "orders-.*")
    return store


def changes_by_group(store: Store) -> dict[str, int | None]:
    names = ("by-name", "by-regex", "other-topic", "other-regex", "no-subscription")
    return {g: topic_changes(store, g) for g in names}


def test_create_grow_and_delete_bump_only_the_affected_groups(groups: Store) -> None:
    store = groups
    orders = record("orders", 3)
    store.topics.create(orders, now_ms())
    expected = {"other-topic": None, "other-regex": None, "no-subscription": None}
    assert changes_by_group(store) == {"by-name": 1, "by-regex": 1, **expected}

    store.topics.grow(orders, 4, now_ms())
    assert changes_by_group(store) == {"by-name": 2, "by-regex": 2, **expected}

    store.topics.delete(store.topics.get("orders"), now_ms())
    assert changes_by_group(store) == {"by-name": 3, "by-regex": 3, **expected}

    store.topics.create(record("unrelated"), now_ms())
    assert changes_by_group(store) == {"by-name": 3, "by-regex": 3, **expected}
    assert pending_changes(store) == []


def test_a_bump_keeps_the_rest_of_the_group_item(groups: Store) -> None:
    store = groups
    store.dynamo.update(
        Update(schema.group_key("by-name"), "SET groupEpoch = :e", values={":e": 7})
    )
    store.topics.create(record("orders"), now_ms())
    item = store.dynamo.get(schema.group_key("by-name"), consistent=True)
    assert item is not None
    assert (item["groupEpoch"], item["topicChanges"], item["kind"]) == (7, 1, "group")


def test_a_subscription_of_a_deleted_group_creates_no_group_item(store: Store) -> None:
    store.topics.subscribe("orders", "gone")
    store.topics.set_regex("also-gone", "orders")
    store.topics.create(record("orders"), now_ms())
    assert store.dynamo.get(schema.group_key("gone"), consistent=True) is None
    assert store.dynamo.get(schema.group_key("also-gone"), consistent=True) is None
    assert pending_changes(store) == []


class FlakyNotification:
    """Makes TopicRegistry.bump_groups raise the first `failures` times it is called."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, failures: int = 1) -> None:
        self.failures = failures
        self.calls = 0
        original = TopicRegistry.bump_groups

        def bump_groups(registry: TopicRegistry, group_ids: Any) -> int:
            self.calls += 1
            if self.calls <= self.failures:
                raise RuntimeError("Lambda timed out between the two writes")
            return original(registry, group_ids)

        monkeypatch.setattr(TopicRegistry, "bump_groups", bump_groups)


# What a sweep's report says when it took every overdue item and quarantined none.
NOTHING_LEFT = {"quarantined": 0, "remaining": False, "deferred": 0}


def overdue_keys(store: Store, at_ms: int) -> list[tuple[str, str]]:
    return [(i.item["pk"], i.item["sk"]) for i in store.deadlines.overdue(at_ms)]


def test_a_crash_after_the_transaction_is_completed_by_the_sweeper(
    groups: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = groups
    FlakyNotification(monkeypatch)
    now = now_ms()
    with pytest.raises(RuntimeError):
        store.topics.create(record("orders"), now)

    # The topic is there; its groups have not heard of it yet.
    assert store.topics.get("orders") is not None
    assert topic_changes(store, "by-name") is None
    (change,) = pending_changes(store)
    assert change["kind"] == "topic-change" and change["topic"] == "orders"
    assert change[schema.DEADLINE] == now + NOTIFY_GRACE_MS
    assert change[schema.DEADLINE_SHARD] == schema.deadline_shard_value(
        change["sk"], store.settings.deadline_shards
    )
    # It sits in the deadline index, due at its deadline and not before.
    key = (change["pk"], change["sk"])
    assert key not in overdue_keys(store, now + NOTIFY_GRACE_MS - 1)
    assert key in overdue_keys(store, now + NOTIFY_GRACE_MS)

    # A sweep before the deadline leaves it alone.
    early = sweeper.sweep(store, now + 1)
    assert (early.overdue, early.completed, early.failed) == (0, {}, 0)
    assert len(pending_changes(store)) == 1

    report = sweeper.sweep(store, now + NOTIFY_GRACE_MS + 1)
    assert report.as_dict() == {
        "overdue": 1,
        "completed": {"topic-change": 1},
        "failed": 0,
        **NOTHING_LEFT,
    }
    assert changes_by_group(store) == {
        "by-name": 1,
        "by-regex": 1,
        "other-topic": None,
        "other-regex": None,
        "no-subscription": None,
    }
    assert pending_changes(store) == []
    assert overdue_keys(store, now + 10 * NOTIFY_GRACE_MS) == []


def test_a_failed_completion_is_retried_by_a_sweep_after_its_delay(
    groups: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = groups
    flaky = FlakyNotification(monkeypatch, failures=3)
    now = now_ms()
    orders = record("orders")
    with pytest.raises(RuntimeError):
        store.topics.create(orders, now)
    with pytest.raises(RuntimeError):
        store.topics.grow(orders, 6, now + 1)
    assert len(pending_changes(store)) == 2

    # The first completion fails; the other one still runs.
    report = sweeper.sweep(store, now + NOTIFY_GRACE_MS + 10)
    assert report.as_dict() == {
        "overdue": 2,
        "completed": {"topic-change": 1},
        "failed": 1,
        **NOTHING_LEFT,
    }
    assert len(pending_changes(store)) == 1
    assert topic_changes(store, "by-name") == 1

    # It is put back behind the others, due again after a delay (core/sweeping.py).
    assert sweeper.sweep(store, now + NOTIFY_GRACE_MS + 20).overdue == 0
    report = sweeper.sweep(store, now + NOTIFY_GRACE_MS + 10 + FIRST_DELAY_MS)
    assert report.as_dict() == {
        "overdue": 1,
        "completed": {"topic-change": 1},
        "failed": 0,
        **NOTHING_LEFT,
    }
    assert pending_changes(store) == []
    assert topic_changes(store, "by-regex") == 2
    assert flaky.calls == 5


def test_sweep_with_nothing_overdue_does_nothing(store: Store) -> None:
    put_group(store, "g")
    store.topics.subscribe("orders", "g")
    store.topics.create(record("orders"), now_ms())
    before = store.dynamo.get(schema.group_key("g"), consistent=True)
    with capacity.metered() as usage:
        report = sweeper.sweep(store, now_ms() + 10 * NOTIFY_GRACE_MS)
    assert report.as_dict() == {"overdue": 0, "completed": {}, "failed": 0, **NOTHING_LEFT}
    assert store.dynamo.get(schema.group_key("g"), consistent=True) == before
    # One query per deadline shard (through the index, never a scan), and no writes.
    assert usage.by_operation == {"query": store.settings.deadline_shards}


def test_sweep_skips_overdue_items_of_unknown_kind(store: Store) -> None:
    store.dynamo.put(
        {
            schema.PK: "SOMETHING",
            schema.SK: "ELSE",
            "kind": "not-a-kind",
            schema.DEADLINE_SHARD: schema.deadline_shard_value("x", store.settings.deadline_shards),
            schema.DEADLINE: 1,
        }
    )
    report = sweeper.sweep(store, now_ms())
    assert report.as_dict() == {"overdue": 1, "completed": {}, "failed": 0, **NOTHING_LEFT}


# --- metering of registry calls (store/capacity.py) ---


def test_create_costs_one_transaction_two_queries_one_bump_per_group_and_a_delete(
    groups: Store,
) -> None:
    with capacity.metered() as usage:
        groups.topics.create(record("orders"), now_ms())
    assert usage.by_operation == {
        "transact_write_items": 1,  # topic, id pointer, change item
        "query": 2,  # subscribers of the topic, regex subscribers
        "update_item": 2,  # by-name and by-regex
        "delete_item": 1,  # the change item
    }
    assert usage.requests == 6
    # 3 transactional writes (2 units each at least) + 2 updates + 1 delete.
    assert usage.write_units >= 3 * 2 + 2 + 1


# --- the DynamoDB wrapper ---


def test_condition_failed_carries_the_old_item(store: Store) -> None:
    original = {"pk": "X", "sk": "1", "v": 1, "tags": ["a", "b"], "m": {"n": 2}}
    store.dynamo.put(original)
    with pytest.raises(ConditionFailed) as failed:
        store.dynamo.put({"pk": "X", "sk": "1", "v": 2}, condition="attribute_not_exists(pk)")
    assert failed.value.old == original
    assert store.dynamo.get({"pk": "X", "sk": "1"}, consistent=True) == original

    with pytest.raises(ConditionFailed) as failed:
        store.dynamo.update(
            Update(
                {"pk": "X", "sk": "1"},
                "SET v = :v",
                values={":v": 3, ":old": 9},
                condition="v = :old",
            )
        )
    assert failed.value.old == original

    with pytest.raises(ConditionFailed) as failed:
        store.dynamo.delete({"pk": "X", "sk": "1"}, condition="v = :old", values={":old": 9})
    assert failed.value.old == original


def test_condition_failed_on_a_missing_item_has_no_old_item(store: Store) -> None:
    with pytest.raises(ConditionFailed) as failed:
        store.dynamo.update(
            Update(
                {"pk": "X", "sk": "none"},
                "SET v = :v",
                values={":v": 1},
                condition="attribute_exists(pk)",
            )
        )
    assert failed.value.old is None
    assert store.dynamo.get({"pk": "X", "sk": "none"}, consistent=True) is None


def test_update_and_delete_return_values(store: Store) -> None:
    key = {"pk": "X", "sk": "1"}
    assert store.dynamo.update(Update(key, "ADD n :one", values={":one": 1}), return_new=True) == {
        **key,
        "n": 1,
    }
    assert store.dynamo.update(Update(key, "ADD n :one", values={":one": 1})) is None
    assert store.dynamo.delete(key) == {**key, "n": 2}
    assert store.dynamo.delete(key) is None


def test_transaction_canceled_lists_the_reason_of_each_item(store: Store) -> None:
    existing = {"pk": "T", "sk": "exists", "v": 1}
    store.dynamo.put(existing)
    store.dynamo.put({"pk": "T", "sk": "checked", "v": 1})
    with pytest.raises(TransactionCanceled) as canceled:
        store.dynamo.transact(
            [
                Put({"pk": "T", "sk": "new"}),
                Put({"pk": "T", "sk": "exists", "v": 2}, condition="attribute_not_exists(pk)"),
                Check({"pk": "T", "sk": "checked"}, "v = :one", values={":one": 1}),
                Delete({"pk": "T", "sk": "missing"}),
            ]
        )
    error = canceled.value
    assert error.reasons == ["None", "ConditionalCheckFailed", "None", "None"]
    assert error.failed_conditions() == [1]
    assert error.old_items[1] == existing
    assert error.old_items[0] is None
    # All or nothing.
    assert store.dynamo.get({"pk": "T", "sk": "new"}, consistent=True) is None
    assert store.dynamo.get({"pk": "T", "sk": "exists"}, consistent=True) == existing


def test_a_transaction_applies_every_item(store: Store) -> None:
    store.dynamo.put({"pk": "T", "sk": "gone"})
    store.dynamo.transact(
        [
            Put({"pk": "T", "sk": "a", "v": 1}, condition="attribute_not_exists(pk)"),
            Update({"pk": "T", "sk": "b"}, "SET v = :v", values={":v": 2}),
            Delete({"pk": "T", "sk": "gone"}, condition="attribute_exists(pk)"),
        ]
    )
    items = list(store.dynamo.query("pk = :pk", {":pk": "T"}, consistent=True))
    assert items == [{"pk": "T", "sk": "a", "v": 1}, {"pk": "T", "sk": "b", "v": 2}]
    with pytest.raises(ValueError, match="100"):
        store.dynamo.transact([Put({"pk": "T", "sk": str(i)}) for i in range(101)])


def test_batch_write_and_batch_get_split_into_25_and_100(store: Store) -> None:
    items = [{"pk": "B", "sk": f"{i:04}", "n": i} for i in range(130)]
    with capacity.metered() as writes:
        store.dynamo.batch_write(items)
    assert writes.by_operation == {"batch_write_item": 6}  # ceil(130 / 25)
    assert writes.write_units >= 130

    keys = [{"pk": "B", "sk": f"{i:04}"} for i in range(130)] + [{"pk": "B", "sk": "none"}]
    with capacity.metered() as reads:
        found = store.dynamo.batch_get(keys, consistent=True)
    assert reads.by_operation == {"batch_get_item": 2}  # ceil(131 / 100)
    assert reads.read_units == 131  # one per key, the missing one too (billed the minimum)
    assert sorted(found, key=lambda i: i["sk"]) == items

    deletes = [{"pk": "B", "sk": f"{i:04}"} for i in range(0, 130, 2)]
    with capacity.metered() as mixed:
        store.dynamo.batch_write(puts=[{"pk": "B", "sk": "extra"}], deletes=deletes)
    assert mixed.by_operation == {"batch_write_item": 3}  # 66 requests
    remaining = list(store.dynamo.query("pk = :pk", {":pk": "B"}, consistent=True))
    assert len(remaining) == 65 + 1


def test_query_follows_pagination_past_one_megabyte(store: Store) -> None:
    blob = "x" * 40_000
    store.dynamo.batch_write([{"pk": "Q", "sk": f"{i:03}", "d": blob} for i in range(40)])
    store.dynamo.put({"pk": "Q-other", "sk": "000"})
    with capacity.metered() as usage:
        items = list(store.dynamo.query("pk = :pk", {":pk": "Q"}, consistent=True))
    assert [i["sk"] for i in items] == [f"{i:03}" for i in range(40)]
    assert usage.by_operation["query"] >= 2  # 1.6 MB: at least two pages
    assert usage.read_units >= 40 * 40_000 / 4096  # consistent reads of 1.6 MB

    backwards = list(store.dynamo.query("pk = :pk", {":pk": "Q"}, forward=False))
    assert [i["sk"] for i in backwards] == [f"{i:03}" for i in reversed(range(40))]


def test_query_limit_is_a_total(store: Store) -> None:
    store.dynamo.batch_write([{"pk": "L", "sk": f"{i:02}"} for i in range(30)])
    with capacity.metered() as usage:
        items = list(store.dynamo.query("pk = :pk", {":pk": "L"}, limit=7))
    assert [i["sk"] for i in items] == [f"{i:02}" for i in range(7)]
    assert usage.by_operation == {"query": 1}


def test_metered_counts_requests_per_operation(store: Store) -> None:
    key = {"pk": "M", "sk": "1"}
    with capacity.metered() as outer:
        store.dynamo.put({**key, "v": 1})
        store.dynamo.get(key)
        store.dynamo.get(key, consistent=True)
        with capacity.metered() as inner:
            store.dynamo.update(Update(key, "SET v = :v", values={":v": 2}))
            list(store.dynamo.query("pk = :pk", {":pk": "M"}))
            store.dynamo.transact([Put({"pk": "M", "sk": "2"}), Delete(key)])
        with pytest.raises(ConditionFailed):
            store.dynamo.put(key, condition="attribute_exists(pk)")
    assert inner.by_operation == {"update_item": 1, "query": 1, "transact_write_items": 1}
    assert outer.by_operation == {
        "put_item": 2,
        "get_item": 2,
        "update_item": 1,
        "query": 1,
        "transact_write_items": 1,
    }
    assert outer.requests == 7
    # Small items: a strongly consistent read is 1 unit, an eventually consistent one half,
    # the query's eventually consistent page half; each write 1, each transactional write 2.
    assert outer.read_units == 1 + 0.5 + 0.5
    assert outer.write_units == 1 + 1 + 1 + 2 * 2
