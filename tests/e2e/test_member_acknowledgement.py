"""GroupMember hands a new assignment over without waiting for its acknowledgement: with
nothing to revoke, poll() returns the new partitions as soon as the listener has them, and the
heartbeat thread carries the acknowledgement (a revocation is still acknowledged in poll(),
since the partitions' next owner waits on it). The coordinator is reached through a loopback
proxy that holds heartbeat answers back, as a slow network or a busy coordinator would."""

from __future__ import annotations

import http.client
import json
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

import pytest

from groupcoord.client import GroupMember
from tests.e2e.helpers import SETTINGS
from tests.support.api import Api
from tests.support.consumer import create_topic, unique, until
from tests.support.servers import running_serve

HELD_S = 2.5  # how long the proxy holds back the answers it is told to
# A session well over a held heartbeat (the heartbeat thread sends one at a time).
SLOW_SETTINGS = {**SETTINGS, "group.consumer.session.timeout.ms": "15000"}


Held = Callable[[dict[str, Any]], bool]  # which heartbeats' answers to hold back


class SlowProxy:
    """Forwards every request to `upstream` (find-coordinator's answer naming the proxy as
    the coordinator), holding back HELD_S the answers to the `consumer-group-heartbeat`
    requests that `held` picks."""

    def __init__(self, upstream: str) -> None:
        self.upstream = urlsplit(upstream)
        self.held: Held = lambda _: False
        # (when, API, "asked" or "answered") of every request; "held" for an answer held back.
        self.events: list[tuple[float, str, str]] = []
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                proxy.forward(self)

            do_GET = do_POST

            def log_message(self, *_: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.base = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.url = f"{self.base}{self.upstream.path}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def forward(self, request: BaseHTTPRequestHandler) -> None:
        body = request.rfile.read(int(request.headers.get("Content-Length") or 0))
        api = request.path.rsplit("/", 1)[-1]
        self.events.append((time.monotonic(), api, "asked"))
        connection = http.client.HTTPConnection(self.upstream.netloc, timeout=30)
        try:
            connection.request(request.command, request.path, body, dict(request.headers))
            answer = connection.getresponse()
            payload = answer.read()
        finally:
            connection.close()
        if request.path.endswith("find-coordinator"):
            upstream = f"http://{self.upstream.netloc}".encode()
            payload = payload.replace(upstream, self.base.encode())
        answered = "answered"
        if request.path.endswith("consumer-group-heartbeat") and self.held(json.loads(body)):
            time.sleep(HELD_S)
            answered = "held"
        request.send_response(answer.status)
        for name, value in answer.getheaders():
            if name.lower() not in ("transfer-encoding", "connection", "content-length"):
                request.send_header(name, value)
        request.send_header("Content-Length", str(len(payload)))
        request.end_headers()
        request.wfile.write(payload)
        self.events.append((time.monotonic(), api, answered))

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def acknowledges_two(heartbeat: dict[str, Any]) -> bool:
    owned = heartbeat.get("topicPartitions") or []
    return sum(len(t["partitions"]) for t in owned) == 2


@pytest.fixture
def served(dynamodb_endpoint: str) -> Iterator[tuple[str, SlowProxy]]:
    with running_serve(dynamodb_endpoint, SLOW_SETTINGS) as url:
        proxy = SlowProxy(url)
        try:
            yield url, proxy
        finally:
            proxy.close()


def test_a_new_assignment_is_handed_over_before_its_acknowledgement_is_answered(
    served: tuple[str, SlowProxy],
) -> None:
    url, proxy = served
    topic, group = unique("ack-topic"), unique("ack-group")
    create_topic(Api(url), topic, 2)
    staying = GroupMember(proxy.url, group, topics=[topic])
    leaving = GroupMember(url, group, topics=[topic])
    try:
        until(lambda: (len(staying.poll(0.05)), len(leaving.poll(0.05))) == (1, 1), 60)
        proxy.held = acknowledges_two  # `staying`'s acknowledgement of the partition it gets
        leaving.close()  # its partition goes to `staying`: nothing for it to revoke
        deadline, owned = time.monotonic() + 60, set()
        while len(owned) < 2:  # the poll() that takes the leaver's partition, timed
            assert time.monotonic() < deadline, "the leaver's partition assigned"
            staying.wait_for_work(1.0)
            started = time.monotonic()
            owned = staying.poll(0.0)
            took = time.monotonic() - started
    finally:
        proxy.held = lambda _: False
        leaving.close()
        staying.close()
    # In poll(), the acknowledgement's answer would have taken HELD_S at least.
    assert took < HELD_S / 2, took


def test_the_topics_are_looked_up_while_the_join_is_answered(
    served: tuple[str, SlowProxy],
) -> None:
    """The join's answer names the partitions by topic id: the member asks for its topics'
    ids beside the join, not after its answer (a round trip more before the first poll()
    hands the partitions over)."""
    url, proxy = served
    topic, group = unique("ids-topic"), unique("ids-group")
    create_topic(Api(url), topic, 2)
    proxy.held = lambda heartbeat: heartbeat.get("memberEpoch") == 0
    member = GroupMember(proxy.url, group, topics=[topic])
    try:
        until(lambda: len(member.poll(0.05)) == 2, 60)
    finally:
        proxy.held = lambda _: False
        member.close()
    join_answered = next(t for t, api, what in proxy.events if what == "held")
    asked = [t for t, api, what in proxy.events if api == "metadata" and what == "asked"]
    assert asked and asked[0] < join_answered - HELD_S / 2, (asked, join_answered)
