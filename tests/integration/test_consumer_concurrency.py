"""Many members heartbeating at once over HTTP: no partition is ever held by two members, and
the group converges to one Stable target. Also the steady heartbeat's DynamoDB cost."""

from __future__ import annotations

import random
import threading
import time
from dataclasses import replace

from groupcoord.core.session_renewal import renewal_slack_ms
from groupcoord.core.topics import TopicRecord
from groupcoord.models.consumer import ConsumerGroupHeartbeatRequest
from groupcoord.service.consumer.heartbeat import consumer_group_heartbeat
from groupcoord.service.context import ApiContext
from groupcoord.store import capacity
from groupcoord.store.store import Store
from groupcoord.topic_ids import new_topic_id
from tests.support.api import Api
from tests.support.consumer import (
    Member,
    as_owned,
    assert_no_partition_held_twice,
    create_topic,
    describe,
    settle,
    unique,
)
from tests.support.registry import assert_reads_ignore_other_topics


def test_concurrent_heartbeats_never_give_a_partition_to_two_members(api: Api) -> None:
    group, topic = unique("g"), unique("t")
    tid = create_topic(api, topic, 24)
    owner: dict[int, str] = {}
    lock = threading.Lock()
    violations: list[str] = []
    members = [Member(Api(api.base_url), group, [topic]) for _ in range(8)]

    def record(m: Member, response: dict) -> None:
        if response["errorCode"] != 0 or response.get("assignment") is None:
            return
        now = as_owned(response["assignment"]).get(tid, set())
        with lock:
            for p in [p for p, o in owner.items() if o == m.member_id and p not in now]:
                del owner[p]
            for p in now:
                if owner.get(p, m.member_id) != m.member_id:
                    violations.append(f"partition {p}: {owner[p]} and {m.member_id}")
                owner[p] = m.member_id

    stop = time.monotonic() + 4.0

    def run(m: Member, delay: float) -> None:
        time.sleep(delay)
        record(m, m.join())
        while time.monotonic() < stop:
            record(m, m.heartbeat(ack=random.random() < 0.7))
            time.sleep(random.uniform(0, 0.02))

    threads = [threading.Thread(target=run, args=(m, i * 0.2)) for i, m in enumerate(members)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not violations, violations[:5]
    settle(members)
    assert_no_partition_held_twice(members)
    described = describe(api, group)
    assert described["groupState"] == "Stable"
    assert described["groupEpoch"] == described["assignmentEpoch"]
    held = sorted(p for m in members for p in m.owned.get(tid, set()))
    assert held == list(range(24))


def _heartbeat(store: Store, body: dict, now_ms: int) -> dict:
    ctx = ApiContext(settings=store.settings, store=store, now_ms=now_ms, endpoint="http://x")
    request = ConsumerGroupHeartbeatRequest.model_validate(body)
    return consumer_group_heartbeat(request, ctx).to_json_dict()


def test_a_steady_heartbeat_reads_two_items_and_writes_one_on_every_other_beat(
    service_store: Store,
) -> None:
    # At skips 1 the renewal falls due before the reconciling group's next scan (2 intervals).
    store = Store(service_store.dynamo, replace(service_store.settings, session_renewal_skips=1))
    topic = unique("t")
    store.topics.create(TopicRecord(topic, new_topic_id(), 64), now_ms=0)
    costs = {}
    for size in (2, 12):
        group = unique("g")
        now = int(time.time() * 1000)
        epochs = {}
        for i in range(size):
            member = f"m-{i}"
            body = {"groupId": group, "memberId": member, "memberEpoch": 0,
                    "rebalanceTimeoutMs": 30000, "subscribedTopicNames": [topic],
                    "topicPartitions": []}  # fmt: skip
            epochs[member] = _heartbeat(store, body, now)["memberEpoch"]
        # Reconcile everyone (acknowledging revocations) until nothing changes.
        owned: dict[str, list] = {m: [] for m in epochs}
        for _ in range(4):
            for member in epochs:
                body = {"groupId": group, "memberId": member, "memberEpoch": epochs[member],
                        "topicPartitions": owned[member]}  # fmt: skip
                answer = _heartbeat(store, body, now)
                epochs[member] = answer["memberEpoch"]
                if answer["assignment"] is not None:
                    owned[member] = answer["assignment"]["topicPartitions"]
        body = {"groupId": group, "memberId": "m-1", "memberEpoch": epochs["m-1"]}
        # The reconciling heartbeats just renewed the session: the next heartbeat, an
        # interval later, finds it a whole session ahead and writes nothing.
        interval = store.settings.group_consumer_heartbeat_interval_ms
        with capacity.metered() as usage:
            assert _heartbeat(store, body, now + interval)["errorCode"] == 0
        assert usage.by_operation == {"get_item": 2}, usage.by_operation
        assert usage.read_units <= 1.5  # the group eventually consistent, the member not
        # Past the renewal slack the session is less than a session away: renewed. (Before
        # two intervals, when a group still reconciling would have its members scanned.)
        slack = renewal_slack_ms(
            interval,
            store.settings.session_renewal_skips,
            store.settings.group_consumer_session_timeout_ms,
        )
        with capacity.metered() as usage:
            assert _heartbeat(store, body, now + slack + 1)["errorCode"] == 0
        costs[size] = usage
        assert usage.by_operation == {"get_item": 2, "put_item": 1}, usage.by_operation
        assert usage.write_units <= 1.0
        assert usage.read_units <= 1.5
    assert costs[2].by_operation == costs[12].by_operation


def test_an_install_reads_the_topics_subscribed_not_the_whole_registry(
    service_store: Store,
) -> None:
    """One tenant's topics must not make another's rebalances dearer: a group subscribed by
    name computes its target on the topics it names (item reads), not on the registry."""
    topic = unique("t")
    service_store.topics.create(TopicRecord(topic, new_topic_id(), 8), now_ms=0)
    now = int(time.time() * 1000)

    def first_join_reads() -> float:
        body = {"groupId": unique("g"), "memberId": "m-0", "memberEpoch": 0,
                "rebalanceTimeoutMs": 30000, "subscribedTopicNames": [topic],
                "topicPartitions": []}  # fmt: skip
        with capacity.metered() as usage:
            answer = _heartbeat(service_store, body, now)
        assert answer["errorCode"] == 0 and answer["assignment"]["topicPartitions"], answer
        return usage.read_units

    assert_reads_ignore_other_topics(service_store, first_join_reads)
