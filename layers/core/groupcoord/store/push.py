"""The push channel's state and its one AWS call (docs/sessions.md, "Push").

`PushConnections`: a member's WebSocket connection (one item per member, replaced on
reconnect) and, under the connection id, which member it was opened for (`$disconnect` knows
only the id); the member item's push mark (a consumer or streams member's live connection,
which its renewals read); and the disconnect grace, written on the member item and the
group's `dl`.
`ConnectionPoster`: the `@connections` management API (API Gateway's, or `serve`'s loopback
copy of it), through boto3's `apigatewaymanagementapi` client: the only code that posts.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from . import schema
from .codecs.push_mark import PUSH_CONNECTION, PUSH_UNTIL
from .dynamo import Check, ConditionFailed, Dynamo, TransactionCanceled, Update
from .partition_reads import query_partitions

# API Gateway closes a connection after 2 hours at the latest: its items outlive that a
# little, and DynamoDB's TTL removes what no `$disconnect` did (a crashed `serve`, say).
CONNECTION_MAX_S = 2 * 3600
CONNECTION_TTL_S = CONNECTION_MAX_S + 600
# The member items that carry a push mark (store/codecs/push_mark.py): the families whose
# renewals read it (core/session_renewal.py).
MARKED_GROUP_TYPES = ("consumer", "streams")
# A post answered Gone within this long of the connection's `$connect` or its last ping does
# not forget it: its handshake may not have ended yet (API Gateway, like `serve`, delivers only
# to an open connection), and forgetting it would cut the member off until it reconnects.
GONE_SPARED_MS = 10_000


@dataclass(frozen=True)
class PushConnection:
    group_id: str
    member_id: str
    connection_id: str
    principal: str


@dataclass(frozen=True)
class MemberSeen:
    """What `$connect` needs of a member item: that it exists, whose it is, and where."""

    principal: str | None
    shards: int = 8


class PushConnections:
    def __init__(self, dynamo: Dynamo) -> None:
        self.dynamo = dynamo

    def member(self, group_id: str, member_id: str) -> MemberSeen | None:
        """The member, if its group has it (any group type: they share the member key)."""
        group = self.dynamo.get(schema.group_key(group_id), consistent=True)
        if group is None:
            return None
        shards = int(group.get("memberShards", 8))
        item = self.dynamo.get(schema.member_key(group_id, member_id, shards), consistent=True)
        if item is None or item.get("kind") != schema.KIND_MEMBER:
            return None
        return MemberSeen(principal=item.get("principal") or None, shards=shards)

    def open(self, connection: PushConnection, now_ms: int) -> None:
        """Record a new connection: the member's item replaced (an older connection of the
        member is no longer its current one) and the connection's own item."""
        expires = now_ms // 1000 + CONNECTION_TTL_S
        self.dynamo.put(
            {
                **schema.push_socket_key(connection.connection_id),
                "kind": schema.KIND_PUSH_SOCKET,
                "groupId": connection.group_id,
                "memberId": connection.member_id,
                "principal": connection.principal,
                schema.TTL_ATTRIBUTE: expires,
            }
        )
        self._make_current(connection, expires, now_ms)

    def _make_current(self, connection: PushConnection, expires: int, seen_ms: int) -> None:
        self.dynamo.put(
            {
                **schema.push_connection_key(connection.group_id, connection.member_id),
                "kind": schema.KIND_PUSH_CONNECTION,
                "groupId": connection.group_id,
                "memberId": connection.member_id,
                "connectionId": connection.connection_id,
                "principal": connection.principal,
                "seenMs": seen_ms,
                schema.TTL_ATTRIBUTE: expires,
            }
        )

    def reassert(self, connection_id: str) -> bool:
        """A message on an open connection: it is its member's current one again (a
        `$connect` whose client gave up before its handshake ended may have been recorded
        after the retry's). False if the connection is unknown (closed)."""
        socket = self.dynamo.get(schema.push_socket_key(connection_id), consistent=True)
        if socket is None:
            return False
        connection = PushConnection(
            str(socket["groupId"]),
            str(socket["memberId"]),
            connection_id,
            str(socket.get("principal", "")),
        )
        now_ms = self.dynamo.clock.now_ms()
        self._make_current(connection, int(socket[schema.TTL_ATTRIBUTE]), now_ms)
        return True

    def close(self, connection_id: str) -> PushConnection | None:
        """Forget a closed connection. Returns it if it was its member's current connection
        (then the member's item is gone too), None if the member had reconnected since."""
        socket = self.dynamo.delete(schema.push_socket_key(connection_id))
        if socket is None:
            return None
        group_id, member_id = str(socket["groupId"]), str(socket["memberId"])
        return self.forget(group_id, member_id, connection_id)

    def forget(
        self,
        group_id: str,
        member_id: str,
        connection_id: str,
        *,
        unless_seen_since_ms: int | None = None,
    ) -> PushConnection | None:
        """Delete the member's connection item if it is still `connection_id`'s (and, with
        `unless_seen_since_ms`, was not made current since then: a post answered Gone spares a
        connection whose handshake may still be under way, GONE_SPARED_MS; a later post tries
        again)."""
        condition, values = "connectionId = :c", {":c": connection_id}
        if unless_seen_since_ms is not None:
            condition += " AND (attribute_not_exists(seenMs) OR seenMs < :s)"
            values[":s"] = unless_seen_since_ms
        try:
            old = self.dynamo.delete(
                schema.push_connection_key(group_id, member_id),
                condition=condition,
                values=values,
            )
        except ConditionFailed:
            return None
        return _connection(old) if old else None

    def of_members(self, group_id: str, member_ids: Iterable[str]) -> list[PushConnection]:
        keys = [schema.push_connection_key(group_id, m) for m in sorted(set(member_ids))]
        return [_connection(item) for item in self.dynamo.batch_get(keys) if item]

    def of_group(self, group_id: str) -> list[PushConnection]:
        pks = list(schema.push_connection_pks(group_id))
        return [_connection(i) for items in query_partitions(self.dynamo, pks, consistent=False)
                for i in items]  # fmt: skip

    def start_grace(self, group_id: str, member_id: str, until_ms: int) -> bool:
        """Bring the member's session deadline forward to `until_ms`, unless the member
        reconnected meanwhile (its connection item is back), is static, or its session ends
        sooner anyway; the old deadline is kept beside it for a reconnect to restore. Then lower the
        group's `dl` to it, so the next request or sweep past it expires the member. Returns
        whether the grace started."""
        group = self.dynamo.get(schema.group_key(group_id), consistent=True)
        if group is None:
            return False
        shards = int(group.get("memberShards", 8))
        try:
            self.dynamo.transact(
                [
                    Check(
                        schema.push_connection_key(group_id, member_id),
                        "attribute_not_exists(pk)",
                    ),
                    Update(
                        schema.member_key(group_id, member_id, shards),
                        "SET graceFrom = sessionDeadline, sessionDeadline = :until, "
                        "graceUntil = :until",
                        names={"#kind": "kind"},
                        values={":until": until_ms, ":member": schema.KIND_MEMBER, ":no": ""},
                        # A static member is expected back (KIP-345): its session stands.
                        condition="#kind = :member AND sessionDeadline > :until AND "
                        "(attribute_not_exists(instanceId) OR instanceId = :no)",
                    ),
                ]
            )
        except TransactionCanceled:
            return False
        self._check_group_by(group_id, until_ms)
        return True

    def _check_group_by(self, group_id: str, until_ms: int) -> None:
        """The group's next check (`dl`) set to `until_ms`, and its version bumped: a write of
        the group decided on members read before the grace began (an expiry scan's next
        deadline, say) fails its version condition and decides again, and a scan that keeps
        its result on a moved group sees the check moved and keeps this one. A check that was
        due sooner moves by at most the grace (it finds the same members then)."""
        with contextlib.suppress(ConditionFailed):  # the group is gone: nothing to check
            self.dynamo.update(
                Update(
                    schema.group_key(group_id),
                    f"SET {schema.DEADLINE} = :until ADD #version :one",
                    names={"#version": "version"},
                    values={":until": until_ms, ":one": 1},
                    condition="attribute_exists(pk)",
                )
            )

    def mark_connected(self, seen: MemberSeen, connection: PushConnection, now_ms: int) -> bool:
        """Mark the member item with its live connection (until API Gateway closes it at the
        latest), for its renewals to read (core/session_renewal.py). `mver` grows: a member
        write decided on the item as read before fails its condition and decides again, so
        no whole-item put drops the mark. False: the member is gone, or of a family whose
        renewals do not read it (its item would not keep the mark)."""
        consumer, streams = MARKED_GROUP_TYPES
        return self._mark(
            connection,
            seen.shards,
            f"SET {PUSH_CONNECTION} = :c, {PUSH_UNTIL} = :until ADD mver :one",
            "groupType = :consumer OR groupType = :streams",
            {":until": now_ms + CONNECTION_MAX_S * 1000, ":consumer": consumer,
             ":streams": streams},
        )  # fmt: skip

    def clear_connected(self, connection: PushConnection) -> bool:
        """The member's mark removed, if it is still `connection`'s (a reconnect's stays)."""
        group = self.dynamo.get(schema.group_key(connection.group_id), consistent=True)
        if group is None:
            return False
        return self._mark(
            connection,
            int(group.get("memberShards", 8)),
            f"REMOVE {PUSH_CONNECTION}, {PUSH_UNTIL} ADD mver :one",
            f"{PUSH_CONNECTION} = :c",
        )

    def _mark(
        self,
        connection: PushConnection,
        shards: int,
        expression: str,
        condition: str,
        values: dict[str, Any] | None = None,
    ) -> bool:
        """One conditional update of `connection`'s member item; False if the condition
        failed (an absent item fails every condition here: nothing is created)."""
        try:
            self.dynamo.update(
                Update(
                    schema.member_key(connection.group_id, connection.member_id, shards),
                    expression,
                    values={**(values or {}), ":c": connection.connection_id, ":one": 1},
                    condition=condition,
                )
            )
        except ConditionFailed:
            return False
        return True

    def end_grace(self, group_id: str, member_id: str, now_ms: int) -> bool:
        """A reconnect within the grace: the member's session deadline back to what it was
        (only while the grace's deadline is still the member's, and not yet past)."""
        group = self.dynamo.get(schema.group_key(group_id), consistent=True)
        if group is None:
            return False
        shards = int(group.get("memberShards", 8))
        try:
            self.dynamo.update(
                Update(
                    schema.member_key(group_id, member_id, shards),
                    "SET sessionDeadline = graceFrom REMOVE graceFrom, graceUntil",
                    values={":now": now_ms},
                    condition="sessionDeadline = graceUntil AND sessionDeadline >= :now "
                    "AND attribute_exists(graceFrom)",
                )
            )
        except ConditionFailed:
            return False
        return True


def _connection(item: dict[str, Any]) -> PushConnection:
    return PushConnection(
        group_id=str(item["groupId"]),
        member_id=str(item["memberId"]),
        connection_id=str(item["connectionId"]),
        principal=str(item.get("principal", "")),
    )


class ConnectionGone(Exception):
    """The connection is closed (API Gateway's GoneException)."""


class ConnectionPoster:
    """The `@connections` API at `endpoint_url`: post a message to a connection, or close it.
    boto3's client, made at first use; short timeouts (a notice is a hint: a slow post must
    not hold up the request that sends it)."""

    def __init__(self, endpoint_url: str, client_factory: Callable[[str], Any] | None = None):
        self.endpoint_url = endpoint_url.rstrip("/")
        self._client_factory = client_factory or _management_client
        self._client: Any = None
        self._lock = threading.Lock()

    def _get_client(self) -> Any:
        with self._lock:
            if self._client is None:
                self._client = self._client_factory(self.endpoint_url)
            return self._client

    def post(self, connection_id: str, data: bytes) -> None:
        """Raises ConnectionGone for a closed connection, another exception on any other
        failure."""
        self._call("post_to_connection", ConnectionId=connection_id, Data=data)

    def delete(self, connection_id: str) -> None:
        self._call("delete_connection", ConnectionId=connection_id)

    def _call(self, operation: str, **args: Any) -> None:
        from botocore.exceptions import ClientError

        try:
            getattr(self._get_client(), operation)(**args)
        except ClientError as error:
            code = error.response.get("Error", {}).get("Code", "")
            status = error.response.get("ResponseMetadata", {}).get("HTTPStatusCode")
            if code == "GoneException" or status == 410:
                raise ConnectionGone(args["ConnectionId"]) from None
            raise


def _region(endpoint_url: str) -> str:
    # https://<api id>.execute-api.<region>.amazonaws.com/<stage>; anything else (serve's
    # loopback endpoint) signs for the configured region.
    host = urlsplit(endpoint_url).hostname or ""
    parts = host.split(".")
    if len(parts) > 3 and parts[1] == "execute-api":
        return parts[2]
    return os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION") or "us-east-1"


def _management_client(endpoint_url: str) -> Any:
    import boto3
    from botocore.config import Config

    config = Config(
        retries={"total_max_attempts": 2, "mode": "standard"},
        connect_timeout=1,
        read_timeout=2,
    )
    return boto3.session.Session().client(
        "apigatewaymanagementapi",
        endpoint_url=endpoint_url,
        region_name=_region(endpoint_url),
        config=config,
    )
