"""The clients on the push channel (docs/client.md, "Push") against `groupcoord serve` on
DynamoDB Local and kinesis-local: a KinesisConsumer takes a leaver's shard, and a
StreamsMember's joiner gets its tasks, within today's 5 s heartbeat interval and far within
the coordinator's 15 s (a notice makes the member that must act heartbeat at once); a member
whose socket the coordinator closes or drops keeps its partitions, heartbeats meanwhile and
reconnects; a member of a coordinator without push says once that it polls; the socket sends
a keepalive at its interval, and pings only after an uncertain handshake; a member's socket
opens as soon as its join is answered (a StreamsMember's, with find-coordinator's answer held
back by a loopback proxy).

Each timed step starts right after the member that must act heartbeated, so without push it
would wait its whole interval: the bound (HANDED_OVER_S) is missed without push.
"""

from __future__ import annotations

import contextlib
import logging
import re
import threading
import time
from collections.abc import Iterator
from http import HTTPStatus
from typing import Any

import pytest
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials
from websockets.exceptions import ConnectionClosed
from websockets.sync.server import ServerConnection
from websockets.sync.server import serve as serve_websocket

from groupcoord.client import GroupMember, StreamsMember
from groupcoord.client.push import PushChannel
from groupcoord.client.transport import Transport
from groupcoord.settings import Settings
from groupcoord.store.store import Store
from tests.e2e.helpers import Polled, Recorder
from tests.support.api import Api
from tests.support.consumer import create_topic, unique, until
from tests.support.kinesis import Streams, new_topic, streams_fixture
from tests.support.kinesis_loop import Running, group_name
from tests.support.servers import InProcessCoordinator, running_serve, unique_table
from tests.support.slow_proxy import SlowProxy
from tests.support.streams import word_count

# The coordinator's heartbeat interval: the most it allows, which is what a member with a push
# socket beats at anyway; without push, what the member that must act waits.
INTERVAL_S = 15.0
SETTINGS = {
    "group.consumer.heartbeat.interval.ms": str(int(INTERVAL_S * 1000)),
    "group.streams.heartbeat.interval.ms": str(int(INTERVAL_S * 1000)),
    # Installs at once and no initial delay: the timed step is the notice's alone.
    "group.consumer.assignment.interval.ms": "0",
    "group.streams.assignment.interval.ms": "0",
    "group.initial.rebalance.delay.ms": "0",
    "group.streams.initial.rebalance.delay.ms": "0",
    "groupcoord.kinesis.shard.sync.interval.ms": "60000",
}
# Today's default interval: push does it in a few round trips (0.2 s measured idle, 2-3 s at
# a load average of 17 on 2 cores), so the bound is generous (without push: the interval).
HANDED_OVER_S = 5.0

streams = streams_fixture()


@pytest.fixture(scope="module")
def served(dynamodb_endpoint: str, kinesis_endpoint: str) -> Iterator[tuple[str, Store]]:
    """serve with its push channel (kinesis-local reached through AWS_ENDPOINT_URL_KINESIS,
    which the kinesis_endpoint fixture set), and a store on its table (to read the members'
    connections)."""
    table = unique_table()
    with running_serve(dynamodb_endpoint, SETTINGS, table=table, push=True) as url:
        mapping = {"groupcoord.table.name": table}
        yield url, Store.connect(Settings.from_mapping(mapping), endpoint_url=dynamodb_endpoint)


def test_a_kinesis_consumer_takes_a_leavers_shard_well_within_a_heartbeat(
    served: tuple[str, Store], streams: Streams, kinesis_endpoint: str
) -> None:
    url, _ = served
    api = Api(url)
    topic = new_topic(api, streams.create(2))
    group = group_name()
    leaving = Running(api, group, topic, kinesis_endpoint)
    leaving.until(lambda: len(leaving.owned()) == 2, "the first consumer owns both shards")
    staying = Running(api, group, topic, kinesis_endpoint)
    try:
        # The joiner's share came in a heartbeat answer, acknowledged at once: its next
        # heartbeat without push is an interval away.
        staying.until(lambda: len(staying.owned()) == 1, "a shard each")
        # Its share may come in the beat right after its join, before its socket opened.
        staying.until(lambda: staying.consumer.member.push_connected, "its socket", 10)
        started = time.monotonic()
        leaving.close()  # commits and leaves
        staying.until(lambda: len(staying.owned()) == 2, "the leaver's shard", INTERVAL_S * 2)
        took = time.monotonic() - started
    finally:
        leaving.close()
        staying.close()
    assert took < HANDED_OVER_S, took


def active(member: StreamsMember) -> int:
    return sum(len(partitions) for partitions in member.tasks.active.values())


def test_a_streams_joiner_gets_its_tasks_well_within_a_heartbeat(
    served: tuple[str, Store],
) -> None:
    url, _ = served
    words = unique("words")
    create_topic(Api(url), words, 4)
    group, topology = unique("g"), word_count(words, unique("app"))
    first = StreamsMember(url, group, topology)
    joiner = StreamsMember(url, group, topology)
    try:
        first.poll()
        until(lambda: first.poll(0.05) is not None and first.push_connected, timeout_s=10)
        assert active(first) == 8
        first.heartbeat()  # its next one without push: an interval away
        started = time.monotonic()
        joiner.poll()  # the join: half the tasks are the joiner's once the first gives them up
        deadline = started + INTERVAL_S * 2
        while active(joiner) == 0 and time.monotonic() < deadline:
            first.poll(0.02)
            joiner.poll(0.02)
        took = time.monotonic() - started
    finally:
        joiner.close()
        first.close()
    assert took < HANDED_OVER_S, took


# How long the proxy holds find-coordinator's answer back: a socket opened only once that answer
# came (find-coordinator asked after the join) opens at least that long after the join's answer.
FIND_HELD_S = 4.0


def test_a_streams_members_socket_opens_as_soon_as_its_join_is_answered(
    served: tuple[str, Store],
) -> None:
    """A joiner's socket opens when its join is answered, not a find-coordinator round trip
    later: notices posted to it before its socket is open (its peers' releases) are lost.
    find-coordinator's answer comes FIND_HELD_S late (a slow network), so a member that asked
    for it only after its join would open its socket at least that much after the answer."""
    url, _ = served
    words = unique("words")
    create_topic(Api(url), words, 2)
    proxy = SlowProxy(url, FIND_HELD_S)
    proxy.held = lambda api, _: api == "find-coordinator"
    member = StreamsMember(proxy.url, unique("g"), word_count(words, unique("app")))
    try:
        member.poll()  # find-coordinator and the join
        until(lambda: member.push_connected, timeout_s=FIND_HELD_S * 3, interval_s=0.01)
        connected = time.monotonic()
    finally:
        member.close()
        proxy.close()
    joins = [at for api, body, at in proxy.answered if api == "streams-group-heartbeat"]
    assert connected - joins[0] < FIND_HELD_S, connected - joins[0]


def connection_of(store: Store, group: str, member_id: str) -> str | None:
    found = store.push.of_members(group, [member_id])
    return found[0].connection_id if found else None


def test_a_member_whose_socket_is_closed_keeps_its_partitions_and_reconnects(
    served: tuple[str, Store],
) -> None:
    """API Gateway closes a connection after 2 hours (and `@connections` DELETE closes one
    at once, as here): the member heartbeats at its interval meanwhile, reconnects after a
    jittered pause, and nothing is rebalanced."""
    url, store = served
    topic, group = unique("push-topic"), unique("push-group")
    create_topic(Api(url), topic, 2)
    heard = Recorder()
    member = Polled(GroupMember(url, group, topics=[topic]), heard)
    try:
        until(lambda: len(member.owned) == 2 and member.member.push_connected, timeout_s=30)
        first = connection_of(store, group, member.member.member_id)
        assert first is not None
        since = time.monotonic()
        closed = Api(url).session.delete(f"{url}/@connections/{first}", timeout=10)
        assert closed.status_code == 200, closed.text

        def reconnected() -> Any:
            again = connection_of(store, group, member.member.member_id)
            return member.member.push_connected and again not in (None, first)

        until(reconnected, timeout_s=10)
        time.sleep(1.5)  # the beats after the drop and the reconnect are answered
        assert len(member.owned) == 2
        assert heard.since(since) == []  # nothing revoked, lost or assigned
    finally:
        member.close()


def test_a_member_whose_socket_drops_keeps_its_partitions_and_reconnects() -> None:
    """The socket lost without a close frame (a proxy, a network blip): the coordinator starts
    the disconnect grace (1 s), the member heartbeats at once, which renews its session, and
    reconnects; its partitions stay. serve's WebSocket side in this process, to drop the
    connection from the server's end."""
    coordinator = InProcessCoordinator(SETTINGS, push=True)
    heard = Recorder()
    member: Polled | None = None
    try:
        url, store = coordinator.url, coordinator.store
        topic, group = unique("push-topic"), unique("push-group")
        create_topic(Api(url), topic, 2)
        member = Polled(GroupMember(url, group, topics=[topic]), heard)
        until(lambda: len(member.owned) == 2 and member.member.push_connected, timeout_s=30)
        first = connection_of(store, group, member.member.member_id)
        channel = coordinator.coordinator.push
        assert first is not None and channel is not None
        since = time.monotonic()
        channel._sockets[first].close_socket()  # the server's end of it, no close frame
        until(lambda: connection_of(store, group, member.member.member_id) not in (None, first))
        time.sleep(3)  # past the grace and a sweep
        assert member.member.push_connected
        assert len(member.owned) == 2
        assert heard.since(since) == []  # nothing revoked, lost or assigned
    finally:
        if member is not None:
            member.close()
        coordinator.stop()


def test_members_of_a_coordinator_without_push_say_once_that_they_poll(
    caplog: pytest.LogCaptureFixture,
) -> None:
    coordinator = InProcessCoordinator(SETTINGS, push=False)
    try:
        url = coordinator.url
        topic = unique("push-topic")
        create_topic(Api(url), topic, 2)
        group = unique("push-group")
        caplog.set_level(logging.INFO, logger="groupcoord.client.push")
        streams_member = StreamsMember(url, unique("g"), word_count(topic, unique("app")))
        with GroupMember(url, group, topics=[topic]) as member:
            until(lambda: len(member.poll(0.05)) == 2, timeout_s=20)
            streams_member.poll()
            streams_member.heartbeat()
            assert not member.push_connected and not streams_member.push_connected
        streams_member.close()
    finally:
        coordinator.stop()
    said = [r for r in caplog.records if "polls at the heartbeat interval" in r.getMessage()]
    assert [r.levelname for r in said] == ["INFO", "INFO"], [r.getMessage() for r in said]


PING = '{"action": "ping"}'
KEEPALIVE = '{"action": "keepalive"}'


class RecordingServer:
    """A WebSocket server the test runs, as API Gateway's side (which closes a connection idle
    for 10 minutes): it records each socket's messages and close code, and answers the first
    handshakes as `first_answers` says (an HTTP status, or "drop": the TCP connection closed
    mid-handshake), then opens the others."""

    def __init__(self, first_answers: list[int | str] | None = None) -> None:
        self.sockets: list[list[str]] = []  # each opened socket's messages
        self.closed: list[int | None] = []
        self.handshakes = 0
        self._answers = list(first_answers or [])
        self._server = serve_websocket(
            self._session, "127.0.0.1", 0, process_request=self._handshake
        )
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        self.url = f"ws://127.0.0.1:{self._server.socket.getsockname()[1]}"

    def _handshake(self, connection: ServerConnection, request: Any) -> Any:
        self.handshakes += 1
        if not self._answers:
            return None
        answer = self._answers.pop(0)
        if answer == "drop":
            connection.socket.close()
            return None
        return connection.respond(HTTPStatus(int(answer)), "")

    def _session(self, connection: ServerConnection) -> None:
        messages: list[str] = []
        self.sockets.append(messages)
        with contextlib.suppress(ConnectionClosed):
            for message in connection:
                messages.append(str(message))
        self.closed.append(connection.close_code)

    def shutdown(self) -> None:
        self._server.shutdown()


def test_the_socket_keeps_alive_at_its_interval_and_closes_in_order() -> None:
    """A keepalive per interval (a one-way message API Gateway answers itself) and no ping on a
    clean connect (nothing to reassert); stop() closes in order (1000: the coordinator starts
    no grace)."""
    server = RecordingServer()
    channel = PushChannel(server.url, "g", lambda: "m-1", lambda _: None,
                          ping_interval_s=0.2).start()  # fmt: skip
    try:
        until(lambda: server.sockets and len(server.sockets[0]) >= 3, timeout_s=10)
    finally:
        channel.stop()
    until(lambda: server.closed == [1000], timeout_s=10)
    server.shutdown()
    assert set(server.sockets[0]) == {KEEPALIVE}


@pytest.mark.parametrize(
    ("first_answers", "pings"),
    [
        ([500], 2),  # API Gateway's answer when $connect's function timed out: it may run on
        (["drop"], 2),  # lost mid-handshake: its $connect may have run, or run still
        ([403, 429], 0),  # refusals: no $connect recorded, nothing to reassert
        ([403, 500, 403], 2),  # an uncertain attempt among refusals
    ],
)
def test_a_socket_after_an_uncertain_handshake_pings_at_open_and_at_its_first_interval(
    first_answers: list[int | str], pings: int
) -> None:
    """A handshake attempt that failed without a clear refusal may have its `$connect`
    recorded after the retry's, taking the member's connection over: the socket that opens
    next pings (the coordinator makes it the member's current one again) at once and, the
    stale `$connect` surely finished by then (29 s at most), once more at its first interval;
    then keepalives. After refusals only (4xx), no ping at all."""
    server = RecordingServer(first_answers)
    channel = PushChannel(server.url, "g", lambda: "m-1", lambda _: None,
                          ping_interval_s=0.3).start()  # fmt: skip
    try:
        until(lambda: server.sockets and len(server.sockets[0]) >= pings + 2, timeout_s=20)
    finally:
        channel.stop()
        server.shutdown()
    assert server.handshakes == len(first_answers) + 1
    opened = server.sockets[0]
    assert opened[: pings + 2] == [PING] * pings + [KEEPALIVE, KEEPALIVE], opened


def test_the_socket_opens_as_soon_as_the_member_has_its_id() -> None:
    """A joiner's socket opens when its join answers (wake()), not at the idle thread's next
    look: notices posted to it before the socket is open are lost (the joiner's share came
    only at its second look). The look here is 60 s, so only the wake opens it in time."""
    handshakes: list[float] = []

    def session(connection: ServerConnection) -> None:
        handshakes.append(time.monotonic())
        with contextlib.suppress(ConnectionClosed):
            for _ in connection:
                pass

    member_id = ""
    with serve_websocket(session, "127.0.0.1", 0) as server:
        threading.Thread(target=server.serve_forever, daemon=True).start()
        port = server.socket.getsockname()[1]
        channel = PushChannel(f"ws://127.0.0.1:{port}", "g", lambda: member_id, lambda _: None,
                              look_s=60.0).start()  # fmt: skip
        try:
            time.sleep(0.2)  # the idle thread is in its 60 s look
            member_id = "m-1"
            channel.wake()
            until(lambda: bool(handshakes), timeout_s=20)
        finally:
            channel.stop()
            server.shutdown()


SIGNING_ENVIRONMENT = {
    "AWS_ACCESS_KEY_ID": "AKIDEXAMPLE",
    "AWS_SECRET_ACCESS_KEY": "secret",
    "AWS_SESSION_TOKEN": "token",
    "AWS_DEFAULT_REGION": "eu-west-1",
}


def test_a_signed_members_handshake_carries_a_sigv4_signature_of_what_it_sent(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A WebSocket API with IAM auth (`$connect` AWS_IAM) verifies the handshake's SigV4
    signature: the member signs the GET it sends, query and Host as they go on the wire.
    Checked by signing the request the server received again, with botocore."""
    for name, value in SIGNING_ENVIRONMENT.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    received: list[Any] = []

    def handshake(connection: ServerConnection, request: Any) -> None:
        received.append(request)

    transport = Transport("https://abc123.execute-api.eu-west-1.amazonaws.com")
    with serve_websocket(lambda c: c.recv(), "127.0.0.1", 0, process_request=handshake) as server:
        threading.Thread(target=server.serve_forever, daemon=True).start()
        port = server.socket.getsockname()[1]
        member = "m 1/é"  # encoded as SigV4 encodes a query
        channel = PushChannel(f"ws://127.0.0.1:{port}/push", "g+1", lambda: member,
                              lambda _: None, transport.handshake_headers).start()  # fmt: skip
        try:
            until(lambda: received, timeout_s=10)
        finally:
            channel.stop()
            server.shutdown()
    request = received[0]
    assert request.path == "/push?groupId=g%2B1&memberId=m%201%2F%C3%A9"
    headers = {k.lower(): v for k, v in request.headers.raw_items()}
    signed, signature = re.fullmatch(
        r"AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/\d{8}/eu-west-1/execute-api/aws4_request, "
        r"SignedHeaders=([^,]+), Signature=([0-9a-f]{64})",
        headers["authorization"],
    ).groups()  # type: ignore[union-attr]
    assert headers["x-amz-security-token"] == "token"
    again = AWSRequest(method="GET", url=f"http://{headers['host']}{request.path}",
                       headers={n: headers[n] for n in signed.split(";")})  # fmt: skip
    again.context["timestamp"] = headers["x-amz-date"]
    auth = SigV4Auth(Credentials("AKIDEXAMPLE", "secret", "token"), "execute-api", "eu-west-1")
    assert auth.signature(auth.string_to_sign(again, auth.canonical_request(again)), again) == (
        signature
    )
