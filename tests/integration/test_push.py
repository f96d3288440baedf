"""The push channel (docs/sessions.md, "Push") over real sockets: `groupcoord serve` on the
DynamoDB endpoint with its WebSocket routes, members over HTTP and WebSocket (the raw protocol,
and the Python client's GroupMember, in this process and in a child process that is killed).

Real-time bounds are generous (2 busy cores), and each is far below what the same test takes
without push: a heartbeat interval of 15 s, a session of 45 s.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from websockets.exceptions import InvalidStatus
from websockets.sync.client import ClientConnection, connect

from groupcoord import runtime
from groupcoord.client.member import GroupMember
from groupcoord.http.websocket import make_push_handler
from groupcoord.local.events import LambdaContext
from groupcoord.settings import Settings
from groupcoord.store import schema
from groupcoord.store.store import Store
from tests.e2e.helpers import Polled, Recorder
from tests.support.api import PRINCIPAL_HEADER, Api
from tests.support.consumer import Member, create_topic, describe, unique, until
from tests.support.push_sockets import (
    PUSHED_S,
    current_socket,
    next_notice,
    open_socket,
    push_url,
)
from tests.support.servers import running_serve, unique_table

ROOT = Path(__file__).resolve().parents[2]
# The coordinator's heartbeat interval: what a member without push waits for a change.
HEARTBEAT_MS = 15_000
SETTINGS = {
    "group.consumer.heartbeat.interval.ms": str(HEARTBEAT_MS),
    "group.consumer.session.timeout.ms": "45000",
    # Members belong to their creator (core/ownership.py) only with the authorizer on.
    "groupcoord.authorizer.enabled": "true",
    "allow.everyone.if.no.acl.found": "true",
    "groupcoord.push.disconnect.grace.ms": "2000",
}
GRACE_S = 2.0
TABLE = unique_table()


@pytest.fixture(scope="module")
def serve(dynamodb_endpoint: str) -> Iterator[str]:
    with running_serve(
        dynamodb_endpoint,
        SETTINGS,
        table=TABLE,
        extra_args=["--principal-header", PRINCIPAL_HEADER],
        push=True,
    ) as url:
        yield url


@pytest.fixture(scope="module")
def store(dynamodb_endpoint: str) -> Store:
    """serve's table, to read the connection items."""
    settings = Settings.from_mapping({"groupcoord.table.name": TABLE})
    return Store.connect(settings, endpoint_url=dynamodb_endpoint)


def held(member: Member) -> int:
    return sum(len(partitions) for partitions in member.owned.values())


def heartbeat_until(member: Member, count: int, timeout_s: float) -> None:
    def holds_count() -> bool:
        member.heartbeat()
        return held(member) == count

    until(holds_count, timeout_s=timeout_s)


def test_a_notice_arrives_after_a_target_change(serve: str) -> None:
    api = Api(serve, principal="User:alice")
    topic, group = unique("push-topic"), unique("push-group")
    create_topic(api, topic, 4)
    first = Member(api, group, topics=[topic])
    first.join()
    heartbeat_until(first, 4, timeout_s=20)
    url = push_url(api, group)
    assert url is not None and url.startswith("ws://127.0.0.1:")
    with open_socket(url, group, first.member_id, "User:alice") as socket:
        socket.send(json.dumps({"action": "ping"}))
        assert next_notice(socket, 5) == {"type": "pong"}
        second = Member(api, group, topics=[topic])
        second.join()  # the first member's target loses two partitions
        notice = next_notice(socket, PUSHED_S)
        assert notice["type"] == "heartbeat" and notice["groupId"] == group
        time.sleep(notice.get("afterMs", 0) / 1000)
        # Heartbeating as told, the first member is asked to give two partitions up.
        heartbeat_until(first, 2, timeout_s=PUSHED_S)


def test_connect_is_refused_for_another_principals_member(serve: str) -> None:
    api = Api(serve, principal="User:alice")
    topic, group = unique("push-topic"), unique("push-group")
    create_topic(api, topic, 1)
    member = Member(api, group, topics=[topic])
    member.join()
    url = push_url(api, group)
    assert url is not None
    for principal, status in [("User:bob", 403), (None, 403)]:
        with pytest.raises(InvalidStatus) as refused:
            open_socket(url, group, member.member_id, principal)
        assert refused.value.response.status_code == status
    with pytest.raises(InvalidStatus) as unknown:
        open_socket(url, group, "no-such-member", "User:alice")
    assert unknown.value.response.status_code == 404
    with pytest.raises(InvalidStatus) as malformed:
        connect(f"{url}?groupId={group}", additional_headers={PRINCIPAL_HEADER: "User:alice"})
    assert malformed.value.response.status_code == 400
    with open_socket(url, group, member.member_id, "User:alice") as socket:
        socket.send(json.dumps({"action": "ping"}))
        assert next_notice(socket, 5) == {"type": "pong"}


def grace_case(serve: str) -> tuple[Member, str]:
    """A member of a group of its own that holds its partition, and the push URL."""
    api = Api(serve, principal="User:alice")
    topic, group = unique("push-topic"), unique("push-group")
    create_topic(api, topic, 1)
    member = Member(api, group, topics=[topic])
    member.join()
    heartbeat_until(member, 1, timeout_s=20)
    url = push_url(api, group)
    assert url is not None
    return member, url


def drop(socket: ClientConnection) -> None:
    """The connection lost without a close frame, as a killed process's is."""
    socket.close_socket()


def connection_item(store: Store, group: str, member_id: str) -> dict[str, Any] | None:
    return store.dynamo.get(schema.push_connection_key(group, member_id), consistent=True)


def test_a_keepalive_is_answered_by_nothing_and_changes_nothing(serve: str, store: Store) -> None:
    """`keepalive` keeps an idle socket open as API Gateway's one-way MOCK route does: no
    function runs (the member's connection item is untouched: a ping would make it current
    again, with a new seenMs) and nothing comes back; a ping after it is answered as ever."""
    member, url = grace_case(serve)
    with current_socket(url, member.group, member.member_id, "User:alice") as socket:
        before = connection_item(store, member.group, member.member_id)
        assert before is not None
        time.sleep(0.05)  # a ping now would record a later seenMs
        socket.send(json.dumps({"action": "keepalive"}))
        with pytest.raises(TimeoutError):
            socket.recv(timeout=1.0)
        assert connection_item(store, member.group, member.member_id) == before
        socket.send(json.dumps({"action": "ping"}))
        assert next_notice(socket, 5) == {"type": "pong"}
        after = connection_item(store, member.group, member.member_id)
        assert after is not None and after["seenMs"] > before["seenMs"]


def message_event(action: str) -> dict[str, Any]:
    """A message on a connection, as API Gateway hands it to the push function."""
    body = json.dumps({"action": action})
    context = {"routeKey": action, "eventType": "MESSAGE", "connectionId": "c-old-template="}
    return {"requestContext": context, "body": body, "isBase64Encoded": False}


def test_a_keepalive_routed_to_the_function_is_answered_with_nothing(store: Store) -> None:
    """A stack deployed from a template without the MOCK route sends `keepalive` to the push
    function ($default): a 200 with no body (nothing goes back), not the 400 of an unknown
    message."""
    handler = make_push_handler()
    with runtime.scoped(store.settings, store):
        assert handler(message_event("keepalive"), LambdaContext("push")) == {
            "statusCode": 200,
            "body": "",
        }
        assert handler(message_event("hello"), LambdaContext("push"))["statusCode"] == 400


def test_a_reconnect_within_the_grace_keeps_the_member(serve: str) -> None:
    member, url = grace_case(serve)
    drop(current_socket(url, member.group, member.member_id, "User:alice"))
    time.sleep(GRACE_S / 4)  # its `$disconnect` has run: the grace is on
    with open_socket(url, member.group, member.member_id, "User:alice"):
        time.sleep(GRACE_S + 2)  # past the grace, and a sweep (every second)
        assert member.heartbeat()["errorCode"] == 0


def test_a_heartbeat_within_the_grace_keeps_the_member(serve: str) -> None:
    member, url = grace_case(serve)
    drop(current_socket(url, member.group, member.member_id, "User:alice"))
    time.sleep(GRACE_S / 4)
    assert member.heartbeat()["errorCode"] == 0
    time.sleep(GRACE_S + 2)
    assert member.heartbeat()["errorCode"] == 0


def test_a_dropped_socket_expires_the_member_after_the_grace(serve: str) -> None:
    member, url = grace_case(serve)
    drop(current_socket(url, member.group, member.member_id, "User:alice"))
    started = time.monotonic()

    def expired() -> bool:  # looked at without a heartbeat, which would renew the session
        found = describe(member.api, member.group)["members"]
        return all(m["memberId"] != member.member_id for m in found)

    until(expired, timeout_s=20)  # the session is 45 s
    assert time.monotonic() - started >= GRACE_S - 0.5
    assert member.heartbeat()["errorCode"] == 25  # UNKNOWN_MEMBER_ID: expired


def test_the_others_are_told_to_heartbeat_as_the_grace_ends(serve: str) -> None:
    """Not a whole grace after the notice: `$disconnect`'s own writes (several DynamoDB calls)
    took some of it, and a survivor that waited the whole grace again would come that much
    after the expiry is due."""
    member, url = grace_case(serve)
    survivor = Member(member.api, member.group, topics=[member.topics[0]])
    survivor.join()
    with open_socket(url, member.group, survivor.member_id, "User:alice") as socket:
        socket.send(json.dumps({"action": "ping"}))
        assert next_notice(socket, 5) == {"type": "pong"}
        drop(current_socket(url, member.group, member.member_id, "User:alice"))
        notice = next_notice(socket, PUSHED_S)
        while "afterMs" not in notice:  # the join's notices first
            notice = next_notice(socket, PUSHED_S)
    assert 0 < notice["afterMs"] < GRACE_S * 1000, notice


def test_an_orderly_close_starts_no_grace(serve: str) -> None:
    """A client that closes its socket (1000) has left, or moved its socket: no crash."""
    member, url = grace_case(serve)
    open_socket(url, member.group, member.member_id, "User:alice").close()
    time.sleep(GRACE_S + 2)
    assert member.heartbeat()["errorCode"] == 0


def polled(serve: str, group: str, topic: str, protocol: str) -> Polled:
    """A GroupMember at its defaults, polled on a thread of its own (a classic join waits in
    poll() for the others' joins)."""
    return Polled(GroupMember(serve, group, topics=[topic], protocol=protocol), Recorder())


def counts(members: list[Polled]) -> list[int]:
    return [len(m.owned) for m in members]


@pytest.mark.parametrize("protocol", ["consumer", "classic"])
def test_a_leave_hands_its_partitions_over_well_within_a_heartbeat(
    serve: str, protocol: str
) -> None:
    """Consumer protocol: the coordinator's 15 s interval; classic: the client's default, a
    third of its 45 s session. A classic leave starts a rebalance: the notice has the other
    member rejoin at once."""
    api = Api(serve)
    topic, group = unique("push-topic"), unique("push-group")
    create_topic(api, topic, 4)
    staying = polled(serve, group, topic, protocol)
    leaving = polled(serve, group, topic, protocol)
    try:
        until(lambda: counts([staying, leaving]) == [2, 2], timeout_s=60)
        push = staying.member._push
        until(lambda: push is not None and push.connected, timeout_s=10)
        started = time.monotonic()
        leaving.close()
        until(lambda: counts([staying]) == [4], timeout_s=HEARTBEAT_MS / 1000)
        took = time.monotonic() - started
    finally:
        staying.close()
        leaving.close()
    # Without push the staying member hears of it at its next heartbeat, 15 s after the one
    # that balanced the group.
    assert took < PUSHED_S, took


MEMBER_PROCESS = """
import sys, time
from groupcoord import runtime
from groupcoord.client.member import GroupMember
from groupcoord.http.websocket import make_push_handler
from groupcoord.local.events import LambdaContext
member = GroupMember(sys.argv[1], sys.argv[2], topics=[sys.argv[3]])
while True:
    print(len(member.poll(0.2)), member._push is not None and member._push.connected, flush=True)
"""


def test_a_killed_member_is_expired_after_the_grace(serve: str, tmp_path: Path) -> None:
    api = Api(serve)
    topic, group = unique("push-topic"), unique("push-group")
    create_topic(api, topic, 4)
    survivor = GroupMember(serve, group, topics=[topic])
    log = open(tmp_path / "member.log", "w+")  # noqa: SIM115 - read back below
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    child = subprocess.Popen(
        [sys.executable, "-c", MEMBER_PROCESS, serve, group, topic],
        stdout=log,
        stderr=subprocess.STDOUT,
        env=env,
    )
    try:

        def child_holds_two_on_a_socket() -> bool:
            log.seek(0)
            lines = log.read().splitlines()
            return bool(lines) and lines[-1] == "2 True"

        until(lambda: len(survivor.poll(0.05)) == 2 and child_holds_two_on_a_socket(), 60)
        # Past the beats that follow its last notices: a heartbeat of a process that died
        # with it in flight would renew the session (docs/sessions.md).
        time.sleep(2)
        started = time.monotonic()
        child.send_signal(signal.SIGKILL)
        child.wait(timeout=10)
        until(lambda: len(survivor.poll(0.05)) == 4, timeout_s=40)
        took = time.monotonic() - started
    finally:
        if child.poll() is None:
            child.kill()
        survivor.close()
        log.close()
    # Without push the killed member keeps its partitions for its 45 s session.
    assert took < 25, took


def test_without_push_nothing_is_offered(dynamodb_endpoint: str) -> None:
    with running_serve(dynamodb_endpoint, push=False) as url:
        assert push_url(Api(url), unique("push-group")) is None
