"""The push channel's raw WebSocket protocol from a test (docs/sessions.md, "Push"): the URL
find-coordinator tells, a member's socket opened as `serve --principal-header` names the
caller, and the notices read off it."""

from __future__ import annotations

import json
from typing import Any

from websockets.sync.client import ClientConnection, connect

from tests.support.api import PRINCIPAL_HEADER, Api

# A generous bound for what push does within about a second (2 busy cores).
PUSHED_S = 8.0


def push_url(api: Api, group: str) -> str | None:
    body = api.ok("find-coordinator", {"keyType": 0, "coordinatorKeys": [group]})
    return body["coordinators"][0]["pushUrl"]


def open_socket(
    url: str, group: str, member_id: str, principal: str | None = None
) -> ClientConnection:
    headers = {PRINCIPAL_HEADER: principal} if principal else None
    return connect(f"{url}?groupId={group}&memberId={member_id}", additional_headers=headers)


def next_notice(socket: ClientConnection, timeout_s: float) -> dict[str, Any]:
    return json.loads(socket.recv(timeout=timeout_s))


def current_socket(
    url: str, group: str, member_id: str, principal: str | None = None
) -> ClientConnection:
    """A socket the coordinator holds as the member's current one: pinged and answered, as the
    client does right after it connects following an uncertain handshake (a socket dropped
    before its `$connect` is recorded is no crash the coordinator can see: the session covers
    it)."""
    socket = open_socket(url, group, member_id, principal)
    socket.send(json.dumps({"action": "ping"}))
    assert next_notice(socket, 5) == {"type": "pong"}
    return socket


def member_socket(api: Api, group: str, member_id: str) -> ClientConnection:
    """The member's current socket, at the push URL the coordinator tells (as `api`'s caller)."""
    url = push_url(api, group)
    assert url is not None, "the coordinator offers no push channel"
    principal = api.session.headers.get(PRINCIPAL_HEADER)
    return current_socket(url, group, member_id, str(principal) if principal else None)


def told(socket: ClientConnection, group: str) -> dict[str, Any]:
    """The next notice on the socket, within PUSHED_S: a heartbeat notice of `group`."""
    notice = next_notice(socket, PUSHED_S)
    assert notice["type"] == "heartbeat" and notice["groupId"] == group, notice
    return notice
