"""The steady streams heartbeat's DynamoDB cost, on DynamoDB Local: the same as a
consumer-protocol heartbeat's (test_consumer_concurrency.py), whatever the group's size: two
item reads, and on a renewal one member write of at most one write unit."""

from __future__ import annotations

import time
from dataclasses import replace

from groupcoord.core.session_renewal import renewal_slack_ms
from groupcoord.core.topics import TopicRecord
from groupcoord.models.streams import StreamsGroupHeartbeatRequest
from groupcoord.service.context import ApiContext
from groupcoord.service.streams.common import reload
from groupcoord.service.streams.heartbeat import streams_group_heartbeat
from groupcoord.store import capacity
from groupcoord.store.store import Store
from groupcoord.topic_ids import new_topic_id
from tests.support.consumer import unique
from tests.support.registry import assert_reads_ignore_other_topics
from tests.support.streams import as_entries, as_tasks, word_count


def _heartbeat(store: Store, body: dict, now_ms: int) -> dict:
    ctx = ApiContext(settings=store.settings, store=store, now_ms=now_ms, endpoint="http://x")
    request = StreamsGroupHeartbeatRequest.model_validate(body)
    return streams_group_heartbeat(request, ctx).to_json_dict()


def _settled_group(
    store: Store, size: int, now: int, endpoints: bool = False
) -> tuple[str, dict[str, int]]:
    words = unique("words")
    store.topics.create(TopicRecord(words, new_topic_id(), 16), now_ms=0)
    group, topology = unique("g"), word_count(words, unique("app"))
    epochs: dict[str, int] = {}
    owned: dict[str, dict] = {}
    for i in range(size):
        member = f"m-{i}"
        body = {"groupId": group, "memberId": member, "memberEpoch": 0, "processId": f"p{i}",
                "rebalanceTimeoutMs": 30000, "topology": topology, "activeTasks": [],
                "standbyTasks": [], "warmupTasks": []}  # fmt: skip
        if endpoints:
            body["userEndpoint"] = {"host": "127.0.0.1", "port": 7000 + i}
        answer = _heartbeat(store, body, now)
        epochs[member] = answer["memberEpoch"]
        owned[member] = {r: as_tasks(answer[f"{r}Tasks"]) for r in ("active", "standby", "warmup")}
    for _ in range(4):  # reconcile everyone, acknowledging revocations
        for member in epochs:
            tasks = {f"{r}Tasks": as_entries(t) for r, t in owned[member].items()}
            body = {"groupId": group, "memberId": member, "memberEpoch": epochs[member], **tasks}
            answer = _heartbeat(store, body, now)
            assert answer["errorCode"] == 0, answer
            epochs[member] = answer["memberEpoch"]
            if answer["activeTasks"] is not None:
                owned[member] = {
                    r: as_tasks(answer[f"{r}Tasks"]) for r in ("active", "standby", "warmup")
                }
    return group, epochs


def test_a_steady_streams_heartbeat_costs_what_a_consumer_one_does(store: Store) -> None:
    settings = replace(
        store.settings,
        session_renewal_skips=1,
        group_streams_initial_rebalance_delay_ms=0,
        group_streams_assignment_interval_ms=0,
        group_streams_num_standby_replicas=1,
    )
    store = Store(store.dynamo, settings)
    interval = settings.group_streams_heartbeat_interval_ms
    slack = renewal_slack_ms(interval, 1, settings.group_streams_session_timeout_ms)
    costs = {}
    for size in (2, 12):
        now = int(time.time() * 1000)
        group, epochs = _settled_group(store, size, now)
        body = {"groupId": group, "memberId": "m-1", "memberEpoch": epochs["m-1"]}
        with capacity.metered() as usage:
            assert _heartbeat(store, body, now + interval)["errorCode"] == 0
        assert usage.by_operation == {"get_item": 2}, usage.by_operation
        assert usage.read_units <= 1.5
        with capacity.metered() as usage:
            assert _heartbeat(store, body, now + slack + 1)["errorCode"] == 0
        costs[size] = usage
        assert usage.by_operation == {"get_item": 2, "put_item": 1}, usage.by_operation
        assert usage.write_units <= 1.0, usage.write_units
        assert usage.read_units <= 1.5
    assert costs[2].by_operation == costs[12].by_operation


def test_the_endpoints_map_after_a_bump_costs_one_read_however_many_members(store: Store) -> None:
    """After an endpoint-epoch bump the first member behind it builds the map (reading every
    member) and writes it; another function instance's answer reads that one item, and the
    instance that built or read it answers from its copy: the same requests for a group of 3
    as of 12 (not a read of every member each)."""
    settings = replace(
        store.settings,
        session_renewal_skips=1,
        group_streams_initial_rebalance_delay_ms=0,
        group_streams_assignment_interval_ms=0,
        group_streams_num_standby_replicas=1,
    )
    store = Store(store.dynamo, settings)
    other = Store(store.dynamo, settings)  # another function instance: no copy of any map
    interval = settings.group_streams_heartbeat_interval_ms
    costs, answers = {}, {}
    for size in (3, 12):
        now = int(time.time() * 1000)
        group, epochs = _settled_group(store, size, now, endpoints=True)
        read = reload(store.streams, group)
        assert read is not None
        epoch = read.endpoint_epoch
        store.streams.update_group(read, read.with_endpoints_changed())
        later = now + interval
        body = {"endpointInformationEpoch": epoch, "groupId": group}
        first = _heartbeat(store, {**body, "memberId": "m-0", "memberEpoch": epochs["m-0"]},
                           later)  # fmt: skip
        assert first["endpointInformationEpoch"] == epoch + 1
        for member, instance in (("m-1", other), ("m-2", store)):
            beat = {**body, "memberId": member, "memberEpoch": epochs[member]}
            with capacity.metered() as usage:
                answer = _heartbeat(instance, beat, later)
            assert answer["errorCode"] == 0, answer
            costs[(size, member)] = dict(usage.by_operation)
        answers[size] = answer["partitionsByUserEndpoint"]
        # The map read is the map built: every endpoint, each with its active partitions.
        assert answers[size] == first["partitionsByUserEndpoint"]
        assert len(answers[size]) == size
        active = [
            (t["topic"], p)
            for e in answers[size]
            for t in e["activePartitions"]
            for p in t["partitions"]
        ]
        assert sorted(active) == sorted(set(active)) and active
    # The group's item, the member's, the endpoints map's: 3 GetItems, at 3 members as at 12;
    # from the instance's copy, a steady heartbeat's 2.
    assert costs[(3, "m-1")] == costs[(12, "m-1")] == {"get_item": 3}, costs
    assert costs[(3, "m-2")] == costs[(12, "m-2")] == {"get_item": 2}, costs


def test_a_join_reads_the_topics_it_names_not_the_whole_registry(store: Store) -> None:
    """One tenant's topics must not make another's joins dearer: a streams join configures its
    topology on the topics it names (a batch of item reads), not on a listing of the registry."""
    # No initial delay: the join configures the topology, creates its internal topics and
    # installs the first target, each on the topics it names.
    store = Store(store.dynamo, replace(store.settings, group_streams_initial_rebalance_delay_ms=0))
    words = unique("words")
    store.topics.create(TopicRecord(words, new_topic_id(), 4), now_ms=0)

    def first_join_reads() -> float:
        body = {"groupId": unique("g"), "memberId": "m-0", "memberEpoch": 0, "processId": "p0",
                "rebalanceTimeoutMs": 30000, "topology": word_count(words, unique("app")),
                "activeTasks": [], "standbyTasks": [], "warmupTasks": []}  # fmt: skip
        with capacity.metered() as usage:  # dated now: creating 300 topics takes a while
            answer = _heartbeat(store, body, int(time.time() * 1000))
        assert answer["errorCode"] == 0 and answer["activeTasks"], answer
        return usage.read_units

    assert_reads_ignore_other_topics(store, first_join_reads)


def _report(end: int) -> dict:
    """A report of task 1_0..1_3, far behind `end` (no warm-up is promoted by it)."""
    tasks = range(4)
    return {
        "taskOffsets": [{"subtopologyId": "1", "partition": p, "offset": 0} for p in tasks],
        "taskEndOffsets": [{"subtopologyId": "1", "partition": p, "offset": end} for p in tasks],
    }


def test_a_repeated_task_offsets_report_costs_what_a_steady_heartbeat_does(store: Store) -> None:
    """Members report every taskOffsetIntervalMs; a report equal to the stored one writes
    nothing (the member item keeps its digest), a changed one one write more than the
    heartbeat would have written anyway: on a beat that renews the session, the report's
    put; on another, the member write it brings renews the session, so the next renewal
    comes a beat later and a run of heartbeats writes the member as often as without."""
    settings = replace(
        store.settings,
        session_renewal_skips=1,
        group_streams_heartbeat_interval_ms=2000,  # the whole test within one rebalance timeout
        group_streams_initial_rebalance_delay_ms=0,
        group_streams_assignment_interval_ms=0,
        group_streams_num_standby_replicas=1,
    )
    store = Store(store.dynamo, settings)
    interval = settings.group_streams_heartbeat_interval_ms
    slack = renewal_slack_ms(interval, 1, settings.group_streams_session_timeout_ms)
    assert slack < 2 * interval  # a steady member writes every second heartbeat
    now = int(time.time() * 1000)
    group, epochs = _settled_group(store, 5, now)

    def cost(member: str, at: int, **fields: object) -> dict[str, int]:
        body = {"groupId": group, "memberId": member, "memberEpoch": epochs[member], **fields}
        with capacity.metered() as usage:
            assert _heartbeat(store, body, at)["errorCode"] == 0
        assert usage.write_units <= 2.0 and usage.read_units <= 1.5, usage
        return dict(usage.by_operation)

    first = now + interval  # no renewal due
    for member in ("m-0", "m-1", "m-2"):
        cost(member, first, **_report(10**6))
    assert cost("m-0", first) == cost("m-1", first, **_report(10**6)) == {"get_item": 2}
    renewal = first + slack + 1
    steady = cost("m-0", renewal)
    assert steady == {"get_item": 2, "put_item": 1}
    assert cost("m-1", renewal, **_report(10**6)) == steady
    assert cost("m-2", renewal, **_report(2 * 10**6)) == {"get_item": 2, "put_item": 2}

    # Seven heartbeats, both members renewing on the first: a new report on the second (not
    # a renewal) is one write more in all.
    writes = {}
    for member, report_at in (("m-3", None), ("m-4", 1)):
        puts = []
        for beat in range(7):
            fields = _report(3 * 10**6) if beat == report_at else {}
            puts.append(cost(member, renewal + beat * interval, **fields).get("put_item", 0))
        writes[member] = puts
    assert writes["m-3"] == [1, 0, 1, 0, 1, 0, 1], writes
    assert writes["m-4"] == [1, 2, 0, 1, 0, 1, 0], writes


def test_a_join_reads_its_topics_eventually_consistently(store: Store) -> None:
    """Every join reads the topics its topology names, all on the registry's one partition
    key: a burst of 5,000 joins is that key's load, so the reads are eventually consistent,
    half a read unit a topic. A join in the initial delay (the burst's every join but the
    first) with four more source topics reads four halves more."""
    store = Store(
        store.dynamo, replace(store.settings, group_streams_initial_rebalance_delay_ms=60_000)
    )
    topics = [unique("t") for _ in range(5)]
    for name in topics:
        store.topics.create(TopicRecord(name, new_topic_id(), 4), now_ms=0)

    def second_join_reads(sources: list[str]) -> float:
        group, now = unique("g"), int(time.time() * 1000)
        topology = {"epoch": 1, "subtopologies": [{"subtopologyId": "0", "sourceTopics": sources}]}
        for member in ("m-0", "m-1"):
            body = {"groupId": group, "memberId": member, "memberEpoch": 0, "processId": member,
                    "rebalanceTimeoutMs": 30000, "topology": topology, "activeTasks": [],
                    "standbyTasks": [], "warmupTasks": []}  # fmt: skip
            with capacity.metered() as usage:
                answer = _heartbeat(store, body, now)
            assert answer["errorCode"] == 0 and answer["status"][-1]["statusCode"] == 5, answer
        return usage.read_units

    assert second_join_reads(topics) - second_join_reads(topics[:1]) == 4 * 0.5
