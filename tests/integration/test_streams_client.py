"""groupcoord.client.StreamsMember end to end against serve on DynamoDB Local: two processes
share a two-sub-topology topology, the listener hears revocations before assignments, each
stateful task has a standby on the other process, the routing lookup names the endpoint of a
partition's active task, and a member that leaves hands its tasks over; task offsets go at
most once per taskOffsetIntervalMs, and at once when they promote a warm-up; a shutdown
request reaches every member."""

from __future__ import annotations

import time
from typing import Any

import pytest

from groupcoord.client import StreamsMember, StreamsTasks
from groupcoord.client.transport import Reply, Transport
from tests.support.api import Api
from tests.support.classic_client import shared_serve
from tests.support.consumer import create_topic, unique, until
from tests.support.kafka_streams import subtopology
from tests.support.kafka_streams import word_count as kafka_word_count
from tests.support.streams import STREAMS_SETTINGS, streams_serve, word_count

SHUTDOWN_APPLICATION = 4
# Warm-ups by lag with a standby replica, the task offset interval at its default (60 s).
WARMUP_SETTINGS = {
    **STREAMS_SETTINGS,
    "group.streams.num.warmup.replicas": "2",
    "group.streams.acceptable.recovery.lag": "10",
}
INTERVAL_MS = 1000
INTERVAL_SETTINGS = {**STREAMS_SETTINGS, "group.streams.task.offset.interval.ms": str(INTERVAL_MS)}


@pytest.fixture(scope="module")
def url(dynamodb_endpoint: str) -> str:
    return streams_serve(dynamodb_endpoint)


class Sent(Transport):
    """The real transport, keeping the heartbeats it sends (what a test counts)."""

    def __init__(self, url: str) -> None:
        super().__init__(url)
        self.heartbeats: list[dict[str, Any]] = []

    def call(self, api: str, body: dict[str, Any], **kw: Any) -> Reply:
        if api == "streams-group-heartbeat":
            self.heartbeats.append(body)
        return super().call(api, body, **kw)


def counter(words: str) -> dict[str, Any]:
    """One stateful sub-topology: a count per key with a changelog (4 tasks on 4 partitions)."""
    changelog = {"name": f"{unique('app')}-counts-changelog"}
    subtopology = {
        "subtopologyId": "0",
        "sourceTopics": [words],
        "stateChangelogTopics": [changelog],
    }
    return {"epoch": 1, "subtopologies": [subtopology]}


class Recorder:
    def __init__(self) -> None:
        self.events: list[tuple[str, StreamsTasks]] = []

    def on_tasks_revoked(self, tasks: StreamsTasks) -> None:
        self.events.append(("revoked", tasks))

    def on_tasks_assigned(self, tasks: StreamsTasks) -> None:
        self.events.append(("assigned", tasks))


def pairs(tasks: dict) -> set[tuple[str, int]]:
    return {(s, p) for s, ps in tasks.items() for p in ps}


def stable(*members: StreamsMember, tasks: int = 8) -> bool:
    for m in members:
        m.heartbeat()  # now: the test does not wait out the interval
    active = [pairs(m.tasks.active) for m in members]
    return (
        len({m.epoch for m in members}) == 1
        and sum(map(len, active)) == len(set().union(*active)) == tasks
    )


def test_two_processes_share_the_tasks_with_standbys_and_routes(url: str) -> None:
    words, prefix = unique("words"), unique("app")
    create_topic(Api(url), words, 4)
    group, topology = unique("g"), word_count(words, prefix)
    heard = Recorder()
    a = StreamsMember(url, group, topology, endpoint=("127.0.0.1", 7101), listener=heard)
    a.poll()
    assert pairs(a.tasks.active) == {(s, p) for s in "01" for p in range(4)}
    assert heard.events == [("assigned", a.tasks)]
    b = StreamsMember(url, group, topology, endpoint=("127.0.0.1", 7102),
                      client_tags={"zone": "b"})  # fmt: skip
    b.poll()
    until(lambda: stable(a, b), timeout_s=20)
    assert not pairs(a.tasks.active) & pairs(b.tasks.active)
    assert [kind for kind, _ in heard.events][:2] == ["assigned", "revoked"]
    # Every stateful task (sub-topology 1) has its standby on the other process.
    assert pairs(a.tasks.standby) == {t for t in pairs(b.tasks.active) if t[0] == "1"}
    assert pairs(b.tasks.standby) == {t for t in pairs(a.tasks.active) if t[0] == "1"}
    # Routing: partition p of `words` is read by task 0_p.
    until(lambda: stable(a, b) and a.route(words, 0) is not None)
    for p in range(4):
        owner = a if ("0", p) in pairs(a.tasks.active) else b
        assert a.route(words, p) == owner.endpoint
    rep = f"{prefix}-rep"
    for p in range(4):
        standby = b if ("1", p) in pairs(b.tasks.standby) else a
        assert a.standby_routes(rep, p) == [standby.endpoint]
    b.close()
    until(lambda: (a.poll() and len(pairs(a.tasks.active)) == 8) or stable(a))
    assert len(pairs(a.tasks.active)) == 8


def each(tasks: set[tuple[str, int]], value: int) -> dict[tuple[str, int], int]:
    return dict.fromkeys(tasks, value)


def test_task_offsets_go_with_the_join_then_once_per_interval(dynamodb_endpoint: str) -> None:
    url = shared_serve(dynamodb_endpoint, INTERVAL_SETTINGS)
    words = unique("words")
    create_topic(Api(url), words, 4)
    sent = Sent(url)
    member = StreamsMember(url, unique("g"), counter(words), transport=sent)
    tasks = {("0", p) for p in range(4)}
    member.report_offsets(each(tasks, 0), each(tasks, 1000))
    member.heartbeat()
    assert member.reports.interval_ms == INTERVAL_MS  # from the answer
    assert sent.heartbeats[0]["taskOffsets"][0]["offset"] == 0  # the join carries the report
    # A member that restores state reports at every step and heartbeats often: its reports
    # go once per interval, each with the latest values, the unchanged end offsets not again.
    started, step = time.monotonic(), 0
    while time.monotonic() - started < 4 * INTERVAL_MS / 1000 or step < 30:
        step += 1
        member.report_offsets(each(tasks, step))
        member.heartbeat()
        time.sleep(0.05)
    elapsed_s = time.monotonic() - started
    after_join = sent.heartbeats[1:]
    carried = [(n, b) for n, b in enumerate(after_join, start=1) if "taskOffsets" in b]
    assert 2 <= len(carried) <= elapsed_s * 1000 / INTERVAL_MS + 2, (len(carried), elapsed_s)
    for n, body in carried:
        assert {o["offset"] for o in body["taskOffsets"]} == {n}  # that step's values
        assert "taskEndOffsets" not in body
    member.close()


def test_a_warm_up_reported_caught_up_is_promoted_at_once(dynamodb_endpoint: str) -> None:
    url = shared_serve(dynamodb_endpoint, WARMUP_SETTINGS)
    words = unique("words")
    create_topic(Api(url), words, 4)
    group, topology = unique("g"), counter(words)
    a = StreamsMember(url, group, topology)
    a.heartbeat()
    everything = pairs(a.tasks.active)
    assert len(everything) == 4
    a.report_offsets(each(everything, 100), each(everything, 100))
    heard, sent = Recorder(), Sent(url)
    b = StreamsMember(url, group, topology, listener=heard, transport=sent)
    b.heartbeat()
    # b has no state: a keeps every task active, b warms up the two it is meant to take
    # (and keeps standbys of a's other two).
    until(lambda: stable(a, b, tasks=4) and len(pairs(b.tasks.warmup)) == 2)
    warming = pairs(b.tasks.warmup)
    assert pairs(a.tasks.active) == everything and not b.tasks.active
    assert pairs(b.tasks.standby) == everything - warming
    b.report_offsets(each(warming, 50) | each(everything - warming, 100), each(everything, 100))
    for _ in range(3):
        assert stable(a, b, tasks=4)  # 50 behind: no promotion
    assert pairs(b.tasks.warmup) == warming and not b.tasks.active
    # Caught up (5 behind, the bound is 10): the report goes at once, not at the interval's
    # end (60 s) nor the next heartbeat's (5 s).
    beats = len(sent.heartbeats)
    b.report_offsets(each(everything, 95))
    b.poll()
    assert len(sent.heartbeats) == beats + 1
    assert {o["offset"] for o in sent.heartbeats[-1]["taskOffsets"]} == {95}
    until(lambda: stable(a, b, tasks=4) and pairs(b.tasks.active) == warming)
    assert not b.tasks.warmup and pairs(a.tasks.active) == everything - warming
    assert ("assigned", warming) in [(kind, pairs(t.active)) for kind, t in heard.events]
    for m in (a, b):
        m.close()


def test_a_shutdown_request_reaches_every_member(url: str) -> None:
    words = unique("words")
    create_topic(Api(url), words, 4)
    group, topology = unique("g"), counter(words)
    a, b = StreamsMember(url, group, topology), StreamsMember(url, group, topology)
    for m in (a, b):
        m.heartbeat()
    until(lambda: stable(a, b, tasks=4))
    assert not a.shutdown_requested and not b.shutdown_requested
    a.request_shutdown()
    a.poll()  # at once
    b.heartbeat()
    for m in (a, b):
        assert SHUTDOWN_APPLICATION in [code for code, _ in m.statuses]
        assert m.shutdown_requested
    for m in (a, b):
        m.close()


def test_requests_have_the_fields_kafka_streams_sends(url: str) -> None:
    lines = unique("lines")
    create_topic(Api(url), lines, 2)
    sent = Sent(url)
    member = StreamsMember(url, unique("g"), kafka_word_count(unique("app"), lines),
                           transport=sent)  # fmt: skip
    base = {"groupId", "memberId", "memberEpoch", "endpointInformationEpoch",
            "shutdownApplication"}  # fmt: skip
    member.heartbeat()
    join = sent.heartbeats[0]
    assert set(join) == base | {"topology", "rebalanceTimeoutMs", "processId", "clientTags",
                                "activeTasks", "standbyTasks", "warmupTasks", "taskOffsets",
                                "taskEndOffsets"}  # fmt: skip
    assert join["endpointInformationEpoch"] == -1 and join["shutdownApplication"] is False
    assert join["taskOffsets"] == join["taskEndOffsets"] == join["clientTags"] == []
    assert len(pairs(member.tasks.active)) == 4
    member.heartbeat()  # acknowledges the assignment: the three lists, nothing else
    assert set(sent.heartbeats[1]) == base | {"activeTasks", "standbyTasks", "warmupTasks"}
    member.heartbeat()  # steady: nothing changed, no lists
    assert set(sent.heartbeats[2]) == base
    member.close()
    assert set(sent.heartbeats[3]) == base and sent.heartbeats[3]["memberEpoch"] == -1


def test_the_heartbeat_after_a_join_carries_the_task_lists_even_when_it_got_none(
    url: str,
) -> None:
    # Kafka Streams' client records no assignment as sent with its join: the next heartbeat
    # carries the three lists whatever they hold (empty here: the other member holds both).
    lines = unique("lines")
    create_topic(Api(url), lines, 2)
    stateless = {"epoch": 0, "subtopologies": [subtopology("0", sourceTopics=[lines])]}
    group = unique("g")
    holder = StreamsMember(url, group, stateless)
    holder.heartbeat()
    holder.heartbeat()
    sent = Sent(url)
    late = StreamsMember(url, group, stateless, transport=sent)
    late.heartbeat()
    assert late.tasks == StreamsTasks()
    late.heartbeat()
    lists = ("activeTasks", "standbyTasks", "warmupTasks")
    assert [sent.heartbeats[1].get(k) for k in lists] == [[], [], []]
    for m in (late, holder):
        m.close()
