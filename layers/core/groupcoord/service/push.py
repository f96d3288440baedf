"""The push channel: a hint beside the protocol, never part of its correctness
(docs/sessions.md, "Push").

Members open a WebSocket (`$connect` with their group and member id, as the principal that
created the member); whenever a request or the sweeper changes what a member should do, the
coordinator posts `{"type": "heartbeat", "groupId": ...}` to the affected members'
connections, after the state write committed, and the client heartbeats at once. A lost
notice costs latency only: the member's next heartbeat brings the same answer. Every error
here is logged and swallowed; a gone connection's item is deleted.

`$disconnect` of a member's current connection, closed as a dead process's socket is (no close
frame), starts a short grace: its session deadline is
brought forward to now + grace (and the group's `dl` with it), and two of the other members
with a connection are told to heartbeat as the grace ends (`afterMs`: what is left of it);
the first request past it expires the member as at its session's end, and the install that
follows tells the members whose target changed. A reconnect or a heartbeat within the grace
restores the session. No Lambda sleeps.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

from ..core.acls import AclOperation
from ..core.principals import ANONYMOUS
from ..core.push import grace_notice_after_ms, grace_watchers, topic_change_notice_due
from ..models.limits import GROUP_ID_MAX_CHARS, MEMBER_ID_MAX_CHARS
from ..observability import logger
from ..store.push import GONE_SPARED_MS, ConnectionGone, PushConnection
from ..store.topics import BumpedGroup
from ..thread_pools import LazyPool
from .authorization import caller_of

if TYPE_CHECKING:
    from ..store.store import Store

# Posts run side by side (a rebalance notice reaches every member of a group): each is a
# short HTTPS call to API Gateway.
POST_WORKERS = 8
_posters = LazyPool(POST_WORKERS, "push")


def notice(group_id: str, after_ms: int = 0) -> bytes:
    body: dict[str, object] = {"type": "heartbeat", "groupId": group_id}
    if after_ms:
        body["afterMs"] = after_ms  # heartbeat no sooner: a grace is running
    return json.dumps(body, separators=(",", ":")).encode()


def notify_members(
    store: Store,
    group_id: str,
    member_ids: Iterable[str] | None,
    *,
    after_ms: int = 0,
    skip: str | None = None,
) -> int:
    """Post a heartbeat notice to the connections of `member_ids` (None: every member of the
    group with a connection), but `skip`'s. Returns how many were posted. Nothing is read or
    posted without a push channel; nothing raises."""
    wanted = None if member_ids is None else set(member_ids) - {skip}

    def connections() -> list[PushConnection]:
        if wanted is None:
            return [c for c in store.push.of_group(group_id) if c.member_id != skip]
        return store.push.of_members(group_id, wanted) if wanted else []

    return _notify(store, group_id, connections, after_ms)


def notify_grace_watchers(store: Store, group_id: str, crashed: str, after_ms: int) -> int:
    """A crashed member's disconnect grace told to a few of the others with a connection
    (core/push.grace_watchers), to heartbeat `after_ms` later. Returns how many were posted;
    as notify_members, nothing without a push channel and nothing raises."""

    def connections() -> list[PushConnection]:
        found = store.push.of_group(group_id)
        chosen = set(grace_watchers((c.member_id for c in found), crashed))
        return [c for c in found if c.member_id in chosen]

    return _notify(store, group_id, connections, after_ms)


def _notify(
    store: Store,
    group_id: str,
    connections: Callable[[], list[PushConnection]],
    after_ms: int,
) -> int:
    """Post a notice to the `connections()` found, side by side; how many were delivered."""
    if store.push_poster is None:
        return 0
    try:
        found = connections()
        data = notice(group_id, after_ms)
        return sum(_posters.get().map(lambda c: _post(store, c, data), found))
    except Exception as error:  # a hint: never the request's failure
        logger.warning("push notice failed", extra={"groupId": group_id, "error": repr(error)})
        return 0


def notify_waiting(
    store: Store, group_id: str, waiting: Callable[[], Iterable[str]], *, skip: str
) -> int:
    """A release told to the members `waiting()` finds waiting on it (a read of the group: the
    family's rule), or to every member if they cannot be read. Returns how many were posted;
    nothing is read without a push channel, and nothing raises."""
    if store.push_poster is None:
        return 0
    found: list[str] | None
    try:
        found = list(waiting())
    except Exception as error:  # a hint: never the request's failure
        logger.warning("push: waiters not read", extra={"groupId": group_id, "error": repr(error)})
        found = None
    return notify_members(store, group_id, found, skip=skip)


def notify_topic_change(store: Store, bumped: Iterable[BumpedGroup]) -> int:
    """After a topic change was told to its groups (`topicChanges` bumped: a topic created,
    grown, deleted or resharded, a Kinesis shard's end committed): every member of each group
    whose next request will move it (core/push.topic_change_notice_due). Returns how many
    notices were posted."""
    if store.push_poster is None:
        return 0
    due = (g for g in bumped if topic_change_notice_due(g.group_type, g.state, g.member_count))
    return sum(notify_members(store, g.group_id, None) for g in due)


def _post(store: Store, connection: PushConnection, data: bytes) -> bool:
    assert store.push_poster is not None
    try:
        store.push_poster.post(connection.connection_id, data)
        return True
    except ConnectionGone:
        store.push.forget(
            connection.group_id,
            connection.member_id,
            connection.connection_id,
            unless_seen_since_ms=store.clock.now_ms() - GONE_SPARED_MS,
        )
    except Exception as error:
        logger.warning(
            "push post failed",
            extra={"groupId": connection.group_id, "memberId": connection.member_id,
                   "error": repr(error)},
        )  # fmt: skip
    return False


class Refused(Exception):
    """A `$connect` refused: `status` is the HTTP status the handshake gets."""

    def __init__(self, status: int, reason: str) -> None:
        super().__init__(reason)
        self.status = status


def open_connection(
    store: Store,
    connection_id: str,
    group_id: str | None,
    member_id: str | None,
    principal: str,
    host: str,
    now_ms: int,
) -> None:
    """`$connect`: only for a member that exists in that group and that the caller may act
    as, checked as its heartbeats are: READ on the group first (a caller without it learns
    nothing of the group's members), then the member's owner. The member item is marked
    connected (core/session_renewal.py). A reconnect within a disconnect grace ends it."""
    if not group_id or len(group_id) > GROUP_ID_MAX_CHARS:
        raise Refused(400, f"groupId: 1 to {GROUP_ID_MAX_CHARS} characters")
    if not member_id or len(member_id) > MEMBER_ID_MAX_CHARS:
        raise Refused(400, f"memberId: 1 to {MEMBER_ID_MAX_CHARS} characters")
    caller = caller_of(store.settings, store, principal or ANONYMOUS, host, now_ms)
    if not caller.may_on_group(AclOperation.READ, group_id):
        raise Refused(403, "the caller may not read that group")
    member = store.push.member(group_id, member_id)
    if member is None:
        raise Refused(404, "no such member in that group")
    if not caller.may_act_as(member.principal):
        raise Refused(403, "the caller may not act as that member")
    connection = PushConnection(group_id, member_id, connection_id, principal)
    store.push.open(connection, now_ms)
    store.push.mark_connected(member, connection, now_ms)  # its renewals may skip more
    store.push.end_grace(group_id, member_id, now_ms)


def close_connection(store: Store, connection_id: str, now_ms: int, *, crashed: bool) -> None:
    """`$disconnect`: forget the connection; if it was its member's current one, clear the
    member item's mark, and if it `crashed` (closed without a close frame, as a dead
    process's socket), start the disconnect grace and tell two others to look after it."""
    closed = store.push.close(connection_id)
    if closed is None:
        return
    store.push.clear_connected(closed)  # its renewals back to an unconnected member's
    if not crashed:
        return
    until_ms = now_ms + store.settings.push_disconnect_grace_ms
    started = store.push.start_grace(closed.group_id, closed.member_id, until_ms)
    logger.info(
        "push disconnect grace " + ("started" if started else "not started"),
        extra={"groupId": closed.group_id, "memberId": closed.member_id},
    )
    if started:
        after_ms = grace_notice_after_ms(until_ms, store.clock.now_ms())
        notify_grace_watchers(store, closed.group_id, closed.member_id, after_ms)
