"""A commit the client gave up on never lands after the client's next, newer commit: the client
sends its budget (Groupcoord-Timeout-Ms), the server starts no write after it.

The in-process coordinator runs the real handlers over HTTP; one commit is held on the server
after its fence read and before its write (store.offsets.commit, wrapped) until a condition
the test controls, and then until the clock is past that request's own deadline: late by
construction, not by a race."""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import pytest
import requests

from groupcoord import clock, deadline
from groupcoord.client.errors import CoordinatorUnavailable
from groupcoord.client.transport import TIMEOUT_HEADER, Transport
from groupcoord.core.offsets import CommittedOffset
from groupcoord.store.errors import DeadlinePassed
from tests.support.servers import InProcessCoordinator, running_coordinator

OLDER, NEWER = 5, 10
WAIT_S = 10.0  # the most any step may take; none waits this long unless something is broken


@pytest.fixture
def coordinator() -> Iterator[InProcessCoordinator]:
    with running_coordinator() as running:
        yield running


@dataclass
class Held:
    """The commit of OLDER offsets, held on the server: `reached` when it is held (its fence
    read done, its write not yet started), released by `release`, `finished` with `outcome`
    (the store's exception, or None when it wrote). `late`: after its release, it also waits
    until past its deadline."""

    release: threading.Event = field(default_factory=threading.Event)
    reached: threading.Event = field(default_factory=threading.Event)
    finished: threading.Event = field(default_factory=threading.Event)
    outcome: list[BaseException | None] = field(default_factory=list)
    deadlines: list[int | None] = field(default_factory=list)
    late: bool = True


@pytest.fixture
def held(coordinator: InProcessCoordinator, monkeypatch: pytest.MonkeyPatch) -> Held:
    state = Held()
    offsets = coordinator.store.offsets
    original: Callable[..., None] = offsets.commit

    def commit(
        group_id: str,
        committed: Sequence[CommittedOffset],
        guard: Any,
        sink: Any = None,
        **options: Any,
    ) -> None:
        if not any(o.offset == OLDER for o in committed):
            return original(group_id, committed, guard, sink, **options)
        at = deadline.current()
        state.deadlines.append(at)
        state.reached.set()
        try:
            assert state.release.wait(WAIT_S), "never released"
            if state.late and at is not None:
                while clock.now_ms() <= at:  # past this request's deadline, whatever the load
                    time.sleep(0.005)
            original(group_id, committed, guard, sink, **options)
        except BaseException as error:
            state.outcome.append(error)
            raise
        else:
            state.outcome.append(None)
        finally:
            state.finished.set()

    monkeypatch.setattr(offsets, "commit", commit)
    return state


def commit_body(group: str, topic: str, offset: int) -> dict[str, Any]:
    partitions = [{"partitionIndex": 0, "committedOffset": offset}]
    return {"groupId": group, "topics": [{"name": topic, "partitions": partitions}]}


def committed(transport: Transport, group: str, topic: str) -> int:
    topics = [{"name": topic, "partitionIndexes": [0]}]
    body = {"groups": [{"groupId": group, "topics": topics}]}
    reply = transport.call("offset-fetch", body)
    return reply.body["groups"][0]["topics"][0]["partitions"][0]["committedOffset"]


def setup(url: str) -> tuple[Transport, str, str]:
    transport = Transport(url, sign=False)
    topic, group = f"t-{uuid.uuid4().hex[:8]}", f"g-{uuid.uuid4().hex[:8]}"
    created = transport.call("create-topics", {"topics": [{"name": topic, "numPartitions": 1}]})
    assert created.body["topics"][0]["errorCode"] == 0, created.body
    return transport, group, topic


def commit_ok(transport: Transport, group: str, topic: str, offset: int) -> None:
    reply = transport.call("offset-commit", commit_body(group, topic, offset))
    assert reply.body["topics"][0]["partitions"][0]["errorCode"] == 0, reply.body


def test_a_commit_the_client_gave_up_on_never_lands_after_a_newer_one(
    coordinator: InProcessCoordinator, held: Held
) -> None:
    transport, group, topic = setup(coordinator.url)
    commit_ok(transport, group, topic, 1)
    # 4 s per attempt: a budget of 2 s (the server keeps 2 s of margin), which the commit's
    # fence read fits in however busy the machine. The client gives up on the held commit...
    impatient = Transport(coordinator.url, sign=False, timeout_s=4.0, retries=0)
    sent_ms = clock.now_ms()
    with pytest.raises(CoordinatorUnavailable):
        impatient.call("offset-commit", commit_body(group, topic, OLDER))
    gave_up_ms = clock.now_ms()
    assert held.reached.is_set()
    # Its deadline: receipt + 2 s, before the client gave up.
    at = held.deadlines[0]
    assert at is not None and sent_ms + 2_000 <= at <= gave_up_ms
    # ... and commits newer offsets, while the older commit is still pending on the server.
    commit_ok(transport, group, topic, NEWER)
    held.release.set()
    assert held.finished.wait(WAIT_S)
    assert isinstance(held.outcome[0], DeadlinePassed)
    assert committed(transport, group, topic) == NEWER


def test_the_answer_past_the_deadline(coordinator: InProcessCoordinator, held: Held) -> None:
    transport, group, topic = setup(coordinator.url)
    commit_ok(transport, group, topic, 1)
    held.release.set()  # held only until past its deadline
    answer = requests.post(
        f"{coordinator.url}/v1/offset-commit",
        json=commit_body(group, topic, OLDER),
        headers={TIMEOUT_HEADER: "50", "Kafka-Correlation-Id": "c-1"},
        timeout=WAIT_S,
    )
    assert answer.status_code == 503, answer.text
    assert answer.headers["Retry-After"] == "0"
    assert answer.headers["Kafka-Correlation-Id"] == "c-1"
    assert answer.json()["errorCode"] == 7  # REQUEST_TIMED_OUT
    # The commit had only read (its fence) when its deadline passed: the answer says so.
    assert answer.json()["errorMessage"] == (
        "the request's deadline passed while it was reading, before it wrote anything: "
        "nothing was written; retry"
    )
    assert isinstance(held.outcome[0], DeadlinePassed)
    assert committed(transport, group, topic) == 1


def test_without_the_header_the_held_commit_lands(
    coordinator: InProcessCoordinator, held: Held
) -> None:
    """The control: no client deadline, only the function's (29 s less the margin), which the
    held commit does not wait for: it writes, as before."""
    transport, group, topic = setup(coordinator.url)
    held.late = False
    held.release.set()
    answer = requests.post(
        f"{coordinator.url}/v1/offset-commit",
        json=commit_body(group, topic, OLDER),
        timeout=WAIT_S,
    )
    assert answer.status_code == 200, answer.text
    assert held.outcome == [None]
    assert held.deadlines[0] is not None  # the function's own remaining time
    assert committed(transport, group, topic) == OLDER


@pytest.mark.parametrize("value", ["abc", "0", "900001", "-1", "1.5"])
def test_a_malformed_header_is_refused(coordinator: InProcessCoordinator, value: str) -> None:
    transport, group, topic = setup(coordinator.url)
    answer = requests.post(
        f"{coordinator.url}/v1/offset-commit",
        json=commit_body(group, topic, 3),
        headers={TIMEOUT_HEADER: value},
        timeout=WAIT_S,
    )
    assert answer.status_code == 400, answer.text
    assert answer.json()["errorCode"] == 42
    assert TIMEOUT_HEADER in answer.json()["errorMessage"]
    assert committed(transport, group, topic) == -1
