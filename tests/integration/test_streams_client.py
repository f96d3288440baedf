"""groupcoord.client.StreamsMember end to end against serve on DynamoDB Local: two processes
share a two-sub-topology topology, the listener hears revocations before assignments, each
stateful task has a standby on the other process, the routing lookup names the endpoint of a
partition's active task, and a member that leaves hands its tasks over."""

from __future__ import annotations

import pytest

from groupcoord.client import StreamsMember, StreamsTasks
from tests.support.api import Api
from tests.support.consumer import create_topic, unique, until
from tests.support.streams import streams_serve, word_count


@pytest.fixture(scope="module")
def url(dynamodb_endpoint: str) -> str:
    return streams_serve(dynamodb_endpoint)


class Recorder:
    def __init__(self) -> None:
        self.events: list[tuple[str, StreamsTasks]] = []

    def on_tasks_revoked(self, tasks: StreamsTasks) -> None:
        self.events.append(("revoked", tasks))

    def on_tasks_assigned(self, tasks: StreamsTasks) -> None:
        self.events.append(("assigned", tasks))


def pairs(tasks: dict) -> set[tuple[str, int]]:
    return {(s, p) for s, ps in tasks.items() for p in ps}


def stable(*members: StreamsMember) -> bool:
    for m in members:
        m.heartbeat()  # now: the test does not wait out the interval
    active = [pairs(m.tasks.active) for m in members]
    return (
        len({m.epoch for m in members}) == 1
        and sum(map(len, active)) == len(set().union(*active)) == 8
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
