"""Three typical Kafka Streams applications replayed over HTTP as Kafka Streams' client shapes
its heartbeats (tests/support/kafka_streams.py; docs/streams.md "What Kafka Streams sends"),
on a clock the test jumps: a word count (a repartition and a changelog), a stream-table join
(a co-partition group) and a two-stage aggregation (each stage after the first reads only a
repartition topic), each through two processes with a standby replica, a process killed (its
session expires) and restarted with its state, and a rolling topology upgrade (refused as
Kafka Streams sends it, epoch 0; in place with a higher epoch); besides, a shutdown request.
The answers are those Kafka's coordinator gives, except where the docs name the difference."""

from __future__ import annotations

import copy
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

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
    "group.streams.num.warmup.replicas": "1",  # a moving task past it keeps a standby
    "groupcoord.session.renewal.skips": "0",
}
pytestmark = pytest.mark.coordinator(SETTINGS, jumps=True)

STALE_TOPOLOGY, INCORRECTLY_PARTITIONED, SHUTDOWN_APPLICATION = 0, 2, 4
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
    # The coordinator created the repartition topic and the changelog with 4 partitions;
    # as Kafka, describe shows the ready group's topology with those counts.
    described = describe(api, group)
    assert described["groupState"] == "Stable"
    (_, counting) = described["topology"]["subtopologies"]
    assert counting["sourceTopics"] == []
    rep = counting_topology_rep(app)
    assert [(t["name"], t["partitions"]) for t in counting["repartitionSourceTopics"]] == [(rep, 4)]
    assert [(t["name"], t["partitions"]) for t in counting["stateChangelogTopics"]] == [
        (f"{app}-counts-changelog", 4)
    ]
    # Interactive queries: a task of the counting stage serves its repartition partition.
    a = threads[0]
    a.endpoint_epoch = -1  # as after a restart: the next answer carries the whole map
    served = {
        (e["userEndpoint"]["port"], tp["topic"], p)
        for e in a.heartbeat()["partitionsByUserEndpoint"]
        for tp in e["activePartitions"]
        for p in tp["partitions"]
    }
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
    # Not ready: described as its members sent it (Kafka: the topology, not configured).
    (sub,) = describe(api, broken)["topology"]["subtopologies"]
    assert [t["partitions"] for t in sub["stateChangelogTopics"]] == [0]
    left, right = unique("orders"), unique("customers")
    create_topic(api, left, 3)
    create_topic(api, right, 3)
    threads = start(api, jump_clock, unique("join"), stream_table_join(app + "2", left, right))
    check_shared(threads, {("0", p) for p in range(3)}, stateful={"0"})


@dataclass(frozen=True)
class Application:
    """One of the three applications: its topology on topics it creates, its tasks, and the
    sub-topologies that keep state."""

    topology: dict[str, Any]
    tasks: set[tuple[str, int]]
    stateful: set[str]


def word_count_app(api: Api) -> Application:
    lines = unique("lines")
    create_topic(api, lines, 4)
    return Application(
        word_count(unique("wc"), lines), {(s, p) for s in "01" for p in range(4)}, {"1"}
    )


def join_app(api: Api) -> Application:
    orders, customers = unique("orders"), unique("customers")
    create_topic(api, orders, 3)
    create_topic(api, customers, 3)
    topology = stream_table_join(unique("join"), orders, customers)
    return Application(topology, {("0", p) for p in range(3)}, {"0"})


def aggregation_app(api: Api) -> Application:
    clicks = unique("clicks")
    create_topic(api, clicks, 2)
    topology = two_stage_aggregation(unique("agg"), clicks)
    return Application(topology, {(s, p) for s in "012" for p in range(2)}, {"1", "2"})


def next_version(topology: dict[str, Any], epoch: int) -> tuple[dict[str, Any], str]:
    """The next version of the application: its last sub-topology's store renamed (a changed
    sub-topology, with a new changelog), under `epoch`; and that sub-topology's id."""
    new = copy.deepcopy(topology)
    new["epoch"] = epoch
    last = new["subtopologies"][-1]
    changelog = last["stateChangelogTopics"][0]
    changelog["name"] = changelog["name"].replace("-changelog", "-v2-changelog")
    return new, last["subtopologyId"]


def restored(thread: KafkaStreamsThread, tasks: set[tuple[str, int]], offset: int) -> None:
    """The thread's state directory holds `tasks` restored up to `offset`, the changelogs'
    end: it reports them caught up with its next heartbeat."""
    thread.state.update(dict.fromkeys(tasks, offset))
    thread.end_offsets.update(dict.fromkeys(tasks, offset))


def kill_and_restart(
    api: Api, clock: JumpClock, group: str, app: Application
) -> list[KafkaStreamsThread]:
    """Two processes; one is killed (its session expires), then restarts with its state."""
    a, b = start(api, clock, group, app.topology)
    check_shared([a, b], app.tasks, app.stateful)
    restored(a, pairs(a.standby), 500)
    b_state = {t for t in pairs(b.active) | pairs(b.standby) if t[0] in app.stateful}
    for _ in range(2):  # a heartbeats through b's session; b is silent
        clock.jump(SESSION_MS // 2 + 1)
        assert a.heartbeat()["errorCode"] == 0
    settle([a], rounds=10)
    # Kafka: the survivor runs every task (its standbys become active); no copies.
    assert pairs(a.active) == app.tasks and not a.standby and not a.warmup
    # b's process restarts: a new member id, the same process id, its state directory
    # reported with its join (the end offsets come once it restores), a dormant task of no
    # sub-topology of this version among it.
    dormant = {("9", 0): 7}
    b2 = KafkaStreamsThread(
        api, group, app.topology, b.process_id, state=dict.fromkeys(b_state, 500) | dormant
    )
    assert b2.join()["errorCode"] == 0
    settle([a, b2], rounds=10)
    # Beyond Kafka: its stateful tasks wait for its state (warm-ups); the stateless move now;
    # every stateful task keeps a copy on b2's process.
    stateful = {t for t in app.tasks if t[0] in app.stateful}
    assert pairs(b2.warmup) and pairs(b2.warmup) <= stateful
    assert pairs(b2.active) <= app.tasks - stateful
    assert pairs(b2.warmup) | pairs(b2.standby) == stateful
    restored(b2, b_state, 500)
    b2.heartbeat(offset_interval_passed=True)
    settle([a, b2], rounds=10)
    check_shared([a, b2], app.tasks, app.stateful)
    return [a, b2]


def rolling_upgrade(
    api: Api, group: str, app: Application, a: KafkaStreamsThread, b: KafkaStreamsThread
) -> None:
    """b's process stops and restarts on the next version, then a's."""
    assert b.leave()["memberEpoch"] == -1
    settle([a], rounds=10)
    assert pairs(a.active) == app.tasks  # Kafka: a leaver's tasks move at once
    # As Kafka Streams sends it (topology epoch 0): refused (Kafka: 42, groupcoord: 131);
    # the running process is not disturbed.
    same_epoch, _ = next_version(app.topology, 0)
    refused = KafkaStreamsThread(api, group, same_epoch, b.process_id).join()
    assert refused["errorCode"] == INVALID_TOPOLOGY_EPOCH
    assert a.heartbeat()["errorCode"] == 0 and pairs(a.active) == app.tasks
    assert a.statuses() == []
    # Beyond Kafka: with a higher topology epoch, in place. a (epoch 0) hears status 0 and
    # keeps only the sub-topologies both versions share; the changed one goes to b2.
    new, changed = next_version(app.topology, 1)
    b2 = KafkaStreamsThread(api, group, new, b.process_id)
    assert b2.join()["errorCode"] == 0
    settle([a, b2], rounds=10)
    assert a.statuses() == [STALE_TOPOLOGY]
    assert all(s != changed for s, _ in pairs(a.active) | pairs(a.standby))
    assert {t for t in pairs(b2.active) if t[0] == changed} == {
        t for t in app.tasks if t[0] == changed
    }
    assert a.leave()["memberEpoch"] == -1  # then a's process
    a2 = KafkaStreamsThread(api, group, new, a.process_id)
    assert a2.join()["errorCode"] == 0
    settle([a2, b2], rounds=10)
    for t in (a2, b2):  # each restores what it warms up or keeps as standby, and reports it
        restored(t, pairs(t.warmup) | pairs(t.standby), 9)
        t.heartbeat(offset_interval_passed=True)
    settle([a2, b2], rounds=10)
    assert a2.statuses() == b2.statuses() == []
    check_shared([a2, b2], app.tasks, app.stateful)


@pytest.mark.parametrize(
    "build", [word_count_app, join_app, aggregation_app], ids=["word-count", "join", "aggregation"]
)
def test_two_processes_with_standbys_a_kill_and_a_rolling_upgrade(
    api: Api, jump_clock: JumpClock, build: Callable[[Api], Application]
) -> None:
    app, group = build(api), unique("app")
    a, b = kill_and_restart(api, jump_clock, group, app)
    rolling_upgrade(api, group, app, a, b)


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
