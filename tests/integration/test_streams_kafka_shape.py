"""Three typical Kafka Streams applications replayed over HTTP as Kafka Streams' client shapes
its heartbeats (tests/support/kafka_streams.py; docs/streams.md "What Kafka Streams sends"),
on a clock the test jumps: two processes with a standby replica, a process killed (its session
expires), a rolling restart that gives each process its state back, a changed topology, and a
shutdown request. The answers are those Kafka's coordinator gives, except where the docs name
the difference."""

from __future__ import annotations

import uuid

import pytest

from tests.support.api import Api
from tests.support.clock import JumpClock
from tests.support.consumer import create_topic, unique
from tests.support.kafka_streams import (
    KafkaStreamsThread,
    stream_table_join,
    two_stage_aggregation,
    word_count,
)
from tests.support.streams import Tasks, describe, settle

SESSION_MS = 60_000
DELAY_MS = 3_000  # Kafka's group.streams.initial.rebalance.delay.ms
SETTINGS = {
    "group.streams.min.session.timeout.ms": "100",
    "group.streams.session.timeout.ms": str(SESSION_MS),
    "group.streams.initial.rebalance.delay.ms": str(DELAY_MS),
    "group.streams.assignment.interval.ms": "0",
    "group.streams.num.standby.replicas": "1",
    "group.streams.num.warmup.replicas": "2",
    "groupcoord.session.renewal.skips": "0",
}
pytestmark = pytest.mark.coordinator(SETTINGS, jumps=True)

MISSING_SOURCE_TOPICS, INCORRECTLY_PARTITIONED, SHUTDOWN_APPLICATION = 1, 2, 4
INVALID_TOPOLOGY_EPOCH = 131


def counting_topology_rep(app: str) -> str:
    return word_count(app, "lines")["subtopologies"][1]["repartitionSourceTopics"][0]["name"]


def pairs(tasks: Tasks) -> set[tuple[str, int]]:
    return {(s, p) for s, ps in tasks.items() for p in ps}


def start(
    api: Api, clock: JumpClock, group: str, topology: dict, processes: int = 2
) -> list[KafkaStreamsThread]:
    """Processes of one thread each (with an application.server endpoint), started together:
    they join within the initial delay, then share the first target."""
    threads = [
        KafkaStreamsThread(
            api, group, topology, str(uuid.uuid4()), endpoint=("127.0.0.1", 7000 + i)
        )
        for i in range(processes)
    ]
    for t in threads:
        answer = t.join()
        assert answer["errorCode"] == 0 and answer["memberEpoch"] == 1, answer
        assert t.statuses() == [5]  # ASSIGNMENT_DELAYED
    clock.jump(DELAY_MS + 1)
    settle(threads, rounds=10)
    return threads


def check_shared(threads: list[KafkaStreamsThread], tasks: set, stateful: set[str]) -> None:
    """Disjoint actives covering every task, and each stateful task's one standby on the other
    process; none for a stateless sub-topology; no warm-ups."""
    actives = [pairs(t.active) for t in threads]
    assert set().union(*actives) == tasks
    assert sum(len(a) for a in actives) == len(tasks)
    a, b = threads
    assert pairs(a.standby) == {t for t in pairs(b.active) if t[0] in stateful}
    assert pairs(b.standby) == {t for t in pairs(a.active) if t[0] in stateful}
    assert not a.warmup and not b.warmup
    assert abs(len(actives[0]) - len(actives[1])) <= 1


def test_word_count_shares_tasks_and_crosses_standbys(api: Api, jump_clock: JumpClock) -> None:
    lines, app = unique("lines"), unique("wc")
    create_topic(api, lines, 4)
    group = unique("wc")
    threads = start(api, jump_clock, group, word_count(app, lines))
    tasks = {(s, p) for s in "01" for p in range(4)}
    check_shared(threads, tasks, stateful={"1"})
    assert all(t.statuses() == [] for t in threads)
    # The coordinator created the repartition topic and the changelog with 4 partitions.
    described = describe(api, group)
    assert described["groupState"] == "Stable"
    (_, counting) = described["topology"]["subtopologies"]
    assert counting["sourceTopics"] == []
    assert [t["name"] for t in counting["repartitionSourceTopics"]] == [counting_topology_rep(app)]
    # Interactive queries: a task of the counting stage serves its repartition partition.
    a = threads[0]
    a.endpoint_epoch = -1  # as after a restart: the next answer carries the whole map
    served = {
        (e["userEndpoint"]["port"], tp["topic"], p)
        for e in a.heartbeat()["partitionsByUserEndpoint"]
        for tp in e["activePartitions"]
        for p in tp["partitions"]
    }
    rep = counting_topology_rep(app)
    for t in threads:
        port = t.endpoint[1] if t.endpoint else 0
        assert {(p, rep) for s, p in pairs(t.active) if s == "1"} == {
            (p, topic) for port_, topic, p in served if port_ == port and topic == rep
        }
    metadata = api.ok("metadata", {"topics": None})["topics"]
    created = {t["name"]: len(t["partitions"]) for t in metadata if t["name"].startswith(app)}
    assert set(created.values()) == {4} and len(created) == 2


def test_a_stream_table_join_needs_copartitioned_sources(api: Api, jump_clock: JumpClock) -> None:
    orders, customers, app = unique("orders"), unique("customers"), unique("join")
    create_topic(api, orders, 3)
    create_topic(api, customers, 2)
    broken = unique("join")
    (alone,) = start(api, jump_clock, broken, stream_table_join(app, orders, customers), 1)
    assert alone.statuses() == [INCORRECTLY_PARTITIONED] and not alone.active
    (status,) = alone.last["status"]
    assert status["statusDetail"] == (
        "Following topics do not have the same number of partitions: "
        f"[{{{customers}=2, {orders}=3}}]"
    )
    left, right = unique("orders"), unique("customers")
    create_topic(api, left, 3)
    create_topic(api, right, 3)
    threads = start(api, jump_clock, unique("join"), stream_table_join(app + "2", left, right))
    check_shared(threads, {("0", p) for p in range(3)}, stateful={"0"})


def test_a_two_stage_aggregation_survives_a_kill_and_a_rolling_restart(
    api: Api, jump_clock: JumpClock
) -> None:
    clicks, app = unique("clicks"), unique("agg")
    create_topic(api, clicks, 2)
    group = unique("agg")
    a, b = start(api, jump_clock, group, two_stage_aggregation(app, clicks))
    tasks = {(s, p) for s in "012" for p in range(2)}
    check_shared([a, b], tasks, stateful={"1", "2"})
    # b is killed: after its session the survivor runs every task (its standbys first).
    a.state.update(dict.fromkeys(pairs(a.standby), 500))
    a.end_offsets.update(dict.fromkeys(pairs(a.standby), 500))
    b_state = dict.fromkeys(pairs(b.active) | pairs(b.standby), 500)
    for _ in range(2):  # a heartbeats through b's session; b is silent
        jump_clock.jump(SESSION_MS // 2 + 1)
        assert a.heartbeat()["errorCode"] == 0
    settle([a], rounds=10)
    assert pairs(a.active) == tasks and not a.standby and not a.warmup
    # b's process restarts: a new member id, the same process id, its state directory
    # reported with its join (the end offsets come once it restores).
    b2 = KafkaStreamsThread(api, group, a.topology, b.process_id, state=b_state)
    assert b2.join()["errorCode"] == 0
    settle([a, b2], rounds=10)
    # Its stateful tasks wait for its state to catch up (warm-ups), the stateless move now.
    moving = pairs(b2.warmup)
    assert moving and all(s in "12" for s, _ in moving)
    assert {s for s, _ in pairs(b2.active)} == {"0"}
    b2.end_offsets.update(dict.fromkeys(b_state, 500))
    b2.heartbeat(offset_interval_passed=True)
    settle([a, b2], rounds=10)
    check_shared([a, b2], tasks, stateful={"1", "2"})


def test_a_changed_topology_under_the_same_epoch_is_refused(
    api: Api, jump_clock: JumpClock
) -> None:
    # Kafka Streams always sends topology epoch 0: an upgraded process with a new topology
    # cannot join the running application's group (Kafka: 42 "Topology updates are not
    # supported yet."; groupcoord: 131), and the running process is not disturbed.
    clicks, app = unique("clicks"), unique("agg")
    create_topic(api, clicks, 2)
    group = unique("agg")
    (running,) = start(api, jump_clock, group, two_stage_aggregation(app, clicks), 1)
    upgraded = KafkaStreamsThread(api, group, word_count(app, clicks), str(uuid.uuid4()))
    answer = upgraded.join()
    assert answer["errorCode"] == INVALID_TOPOLOGY_EPOCH
    assert running.heartbeat()["errorCode"] == 0 and len(pairs(running.active)) == 6
    # Stopped, deleted, started again with the new topology: accepted.
    assert running.leave()["memberEpoch"] == -1
    deleted = api.ok("delete-groups", {"groupsNames": [group]})["results"][0]
    assert deleted["errorCode"] == 0
    assert upgraded.join()["errorCode"] == 0


def test_a_shutdown_request_reaches_every_process(api: Api, jump_clock: JumpClock) -> None:
    lines, app = unique("lines"), unique("wc")
    create_topic(api, lines, 2)
    group = unique("wc")
    a, b = start(api, jump_clock, group, word_count(app, lines))
    a.shutdown = True  # StreamsRebalanceData.requestShutdown: sent on every heartbeat after
    a.heartbeat()
    assert a.statuses() == [SHUTDOWN_APPLICATION]
    b.heartbeat()
    assert b.statuses() == [SHUTDOWN_APPLICATION]
    assert a.leave()["memberEpoch"] == -1 and b.leave()["memberEpoch"] == -1
    assert describe(api, group)["groupState"] == "Empty"


def test_a_rolling_upgrade_with_a_new_topology_epoch(api: Api, jump_clock: JumpClock) -> None:
    # Beyond Kafka (whose client always sends epoch 0): a client that gives its new topology a
    # higher epoch upgrades in place. The second stage's store changes; stages 0 and 1 stay.
    clicks, app = unique("clicks"), unique("agg")
    create_topic(api, clicks, 2)
    group = unique("agg")
    old = two_stage_aggregation(app, clicks)
    new = two_stage_aggregation(app, clicks)
    new["epoch"] = 1
    new["subtopologies"][2]["stateChangelogTopics"][0]["name"] = f"{app}-per-region-v2-changelog"
    a, b = start(api, jump_clock, group, old)
    assert b.leave()["memberEpoch"] == -1  # b's process stops, restarts upgraded
    b2 = KafkaStreamsThread(api, group, new, b.process_id)
    assert b2.join()["errorCode"] == 0
    settle([a, b2], rounds=10)
    assert a.statuses() == [0]  # STALE_TOPOLOGY: a runs only what both epochs share
    assert {s for s, _ in pairs(a.active) | pairs(a.standby)} <= {"0", "1"}
    assert {t for t in pairs(b2.active) if t[0] == "2"} == {("2", 0), ("2", 1)}
    assert a.leave()["memberEpoch"] == -1  # then a's process
    a2 = KafkaStreamsThread(api, group, new, a.process_id)
    assert a2.join()["errorCode"] == 0
    settle([a2, b2], rounds=10)
    for t in (a2, b2):  # a2 restores what it warms up, and reports it
        t.state.update(dict.fromkeys(pairs(t.warmup) | pairs(t.standby), 9))
        t.end_offsets.update(dict.fromkeys(pairs(t.warmup) | pairs(t.standby), 9))
        t.heartbeat(offset_interval_passed=True)
    settle([a2, b2], rounds=10)
    assert a2.statuses() == b2.statuses() == []
    check_shared([a2, b2], {(s, p) for s in "012" for p in range(2)}, stateful={"1", "2"})
