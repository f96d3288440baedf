"""What keeps a storm of joins cheap. Target installs batched in time (Kafka's KIP-1263,
`group.consumer.assignment.interval.ms`): a group's first target waits until no member joined
for `groupcoord.consumer.first.assignment.delay.ms`, so that members joining together share it;
a bump within the interval after an install waits for a request after it, and one install then
covers every bump made meanwhile. An expiry scan keeps its result when a join lands between its
member read and its write (else its claim runs out and the next request reads every member
again)."""

from __future__ import annotations

import threading
import time
from dataclasses import replace

import pytest

from groupcoord.core.modern.expiry import SCAN_LEASE_MS
from groupcoord.core.topics import TopicRecord
from groupcoord.models.consumer import ConsumerGroupHeartbeatRequest
from groupcoord.service.consumer.common import reload
from groupcoord.service.consumer.heartbeat import consumer_group_heartbeat
from groupcoord.service.context import ApiContext
from groupcoord.settings import Settings
from groupcoord.store import schema
from groupcoord.store.codecs.consumer import SCAN_ID
from groupcoord.store.consumer.repository import ConsumerGroupStore
from groupcoord.store.store import Store
from groupcoord.topic_ids import new_topic_id
from tests.support.consumer import unique

# Long enough that the joins below all happen within it, even on a busy machine.
INTERVAL_MS = 4_000


def batching(store: Store, interval_ms: int = INTERVAL_MS, first_delay_ms: int = 400) -> Store:
    overrides = {
        "group.consumer.assignment.interval.ms": str(interval_ms),
        "groupcoord.consumer.first.assignment.delay.ms": str(first_delay_ms),
    }
    return Store(store.dynamo, Settings.from_mapping(overrides, base=store.settings))


def heartbeat(store: Store, body: dict) -> dict:
    now_ms = int(time.time() * 1000)
    ctx = ApiContext(settings=store.settings, store=store, now_ms=now_ms, endpoint="http://x")
    request = ConsumerGroupHeartbeatRequest.model_validate(body)
    answer = consumer_group_heartbeat(request, ctx).to_json_dict()
    assert answer["errorCode"] == 0, answer
    return answer


def join(store: Store, group: str, topic: str, member: str) -> dict:
    body = {"groupId": group, "memberId": member, "memberEpoch": 0, "rebalanceTimeoutMs": 30000,
            "subscribedTopicNames": [topic], "topicPartitions": []}  # fmt: skip
    return heartbeat(store, body)


def group_epochs(store: Store, group: str) -> tuple[int, int]:
    item = store.dynamo.get(schema.group_key(group), consistent=True)
    assert item is not None
    return int(item["groupEpoch"]), int(item["targetEpoch"])


def partitions(answer: dict) -> int:
    assignment = answer.get("assignment") or {"topicPartitions": []}
    return sum(len(tp["partitions"]) for tp in assignment["topicPartitions"])


def test_joins_within_the_interval_share_one_install_after_it(service_store: Store) -> None:
    store = batching(service_store)
    topic, group = unique("t"), unique("g")
    store.topics.create(TopicRecord(topic, new_topic_id(), 12), now_ms=0)

    first = join(store, group, topic, "m-0")
    started = time.monotonic()
    # The first target, once no other member joined for the delay.
    assert (first["memberEpoch"], partitions(first)) == (1, 12)
    joiners = [join(store, group, topic, f"m-{i}") for i in range(1, 6)]
    if time.monotonic() - started < INTERVAL_MS / 1000:
        # Five bumps, no install: the joiners are in, at the target epoch, holding nothing.
        assert group_epochs(store, group) == (6, 1)
        assert [(j["memberEpoch"], partitions(j)) for j in joiners] == [(1, 0)] * 5

    # A heartbeat after the interval installs once, for every bump so far.
    deadline = time.monotonic() + 4 * INTERVAL_MS / 1000
    body = {"groupId": group, "memberId": "m-0", "memberEpoch": 1}
    while group_epochs(store, group)[1] < 6:
        assert time.monotonic() < deadline, "the deferred target was never installed"
        heartbeat(store, body)
        time.sleep(0.1)
    assert group_epochs(store, group) == (6, 6)


def test_members_joining_a_new_group_together_share_its_first_target(
    service_store: Store,
) -> None:
    # The longest hold, so that the second join surely lands within it on a busy machine.
    store = batching(service_store, first_delay_ms=2_000)
    topic, group = unique("t"), unique("g")
    store.topics.create(TopicRecord(topic, new_topic_id(), 12), now_ms=0)
    answers: dict[str, dict] = {}
    first = threading.Thread(
        target=lambda: answers.update({"m-0": join(store, group, topic, "m-0")})
    )
    first.start()
    deadline = time.monotonic() + 10
    while store.dynamo.get(schema.group_key(group), consistent=True) is None:
        assert time.monotonic() < deadline and first.is_alive(), answers
        time.sleep(0.01)
    answers["m-1"] = join(store, group, topic, "m-1")
    first.join(timeout=10)
    # One install for both: neither was ever given a partition the other must take back
    # (before, the first join's answer gave it all 12 at epoch 1).
    assert group_epochs(store, group) == (2, 2)
    assert [(a["memberEpoch"], partitions(a)) for a in answers.values()] == [(2, 6), (2, 6)]


def test_without_an_interval_every_join_installs(service_store: Store) -> None:
    store = batching(service_store, 0)
    topic, group = unique("t"), unique("g")
    store.topics.create(TopicRecord(topic, new_topic_id(), 12), now_ms=0)
    for i in range(4):
        join(store, group, topic, f"m-{i}")
        assert group_epochs(store, group) == (i + 1, i + 1)


def test_a_scan_keeps_its_result_when_a_join_lands_after_its_read(
    service_store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = batching(service_store, 0)
    topic, group = unique("t"), unique("g")
    store.topics.create(TopicRecord(topic, new_topic_id(), 12), now_ms=0)
    first = join(store, group, topic, "m-0")
    cs = store.consumer
    record = reload(cs, group)
    assert record is not None
    cs.update_group(record, replace(record, deadline=int(time.time() * 1000) - 1))  # due

    # The scan's member read is followed at once by another member's join (a concurrent
    # request, as in a storm), which writes the group item before the scan does.
    read_members = ConsumerGroupStore.members
    landed: list[dict] = []

    def members_then_a_join(self: ConsumerGroupStore, *args: object, **kwargs: object) -> list:
        found = read_members(self, *args, **kwargs)
        if not landed:
            landed.append({})
            landed[0] = join(store, group, topic, "m-1")
        return found

    monkeypatch.setattr(ConsumerGroupStore, "members", members_then_a_join)
    started = int(time.time() * 1000)
    heartbeat(store, {"groupId": group, "memberId": "m-0", "memberEpoch": first["memberEpoch"]})
    monkeypatch.undo()

    assert landed and landed[0]["memberEpoch"] > 0  # the join went through mid-scan
    item = store.dynamo.get(schema.group_key(group), consistent=True)
    assert item is not None
    # The scan's result, not its claim: the claim mark is gone and the next check is the state
    # refresh away (the group is Reconciling: two heartbeat intervals, 10 s), not the claim's
    # 2 s.
    assert SCAN_ID not in item
    assert int(item["dl"]) >= started + 3 * SCAN_LEASE_MS
