"""Standbys and the changelog reports members send with their join, over HTTP on DynamoDB
Local: a join's `taskOffsets` / `taskEndOffsets` are kept and used as a later heartbeat's, so
processes that restart with their state get balanced active tasks and one standby per stateful
task on the other process, not warm-ups."""

from __future__ import annotations

import pytest

from tests.support.api import Api
from tests.support.consumer import create_topic, unique
from tests.support.kafka_streams import word_count as kafka_word_count
from tests.support.streams import StreamsMember, counter, describe, offsets, settle

SETTINGS = {
    "group.streams.initial.rebalance.delay.ms": "0",
    "group.streams.assignment.interval.ms": "0",
    "group.streams.acceptable.recovery.lag": "10",
    "group.streams.num.standby.replicas": "1",
    "group.streams.num.warmup.replicas": "2",
}
pytestmark = pytest.mark.coordinator(SETTINGS)

ALL = {0, 1, 2, 3, 4}


def count(tasks: dict[str, set[int]]) -> int:
    return sum(len(ps) for ps in tasks.values())


def test_a_join_report_is_kept_and_caught_up_processes_balance_with_standbys(api: Api) -> None:
    words = unique("words")
    create_topic(api, words, len(ALL))
    group = unique("g")
    caught_up = {"taskOffsets": offsets(ALL, 100), "taskEndOffsets": offsets(ALL, 100)}
    a = StreamsMember(api, group, counter(words, unique("app")))
    a.join(**caught_up)
    b = StreamsMember(api, group, a.topology)
    b.join(**caught_up)
    described = {m["memberId"]: m for m in describe(api, group)["members"]}
    assert len(described[b.member_id]["taskOffsets"]) == len(ALL)
    assert len(described[b.member_id]["taskEndOffsets"]) == len(ALL)
    settle([a, b])
    assert sorted([count(a.active), count(b.active)]) == [2, 3]
    assert not a.warmup and not b.warmup
    # Disjoint actives covering every task; each task's standby on the other process.
    assert a.active["0"] | b.active["0"] == ALL and not a.active["0"] & b.active["0"]
    assert a.standby == b.active and b.standby == a.active


def test_standbys_only_for_stateful_tasks_never_beside_their_active(api: Api) -> None:
    # Kafka Streams' word count: sub-topology 0 is stateless, 1 reads only the repartition
    # topic and keeps a store. Three processes, the first with two threads (members).
    lines = unique("lines")
    create_topic(api, lines, 4)
    group = unique("g")
    topology = kafka_word_count(unique("app"), lines)
    tasks = {("1", p) for p in range(4)}
    caught_up = {
        "taskOffsets": [{"subtopologyId": s, "partition": p, "offset": 7} for s, p in tasks],
        "taskEndOffsets": [{"subtopologyId": s, "partition": p, "offset": 7} for s, p in tasks],
    }
    members = [StreamsMember(api, group, topology, process_id=p) for p in ("p1", "p1", "p2", "p3")]
    for m in members:
        m.join(**caught_up)
    settle(members)
    where: dict[tuple[str, int], list[str]] = {}
    for m in members:
        assert not m.warmup and set(m.standby) <= {"1"}  # no copy of a stateless task
        for s, ps in (*m.active.items(), *m.standby.items()):
            for p in ps:
                where.setdefault((s, p), []).append(m.process_id)
    for task, processes in where.items():
        assert len(processes) == len(set(processes)), task  # never two copies on a process
        assert len(processes) == (2 if task[0] == "1" else 1), task  # one standby if stateful
    counts = [count(m.active) for m in members]
    assert sum(counts) == 8 and max(counts) - min(counts) <= 1
