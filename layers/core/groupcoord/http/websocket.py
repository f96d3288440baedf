"""The push channel's routes, as an API Gateway WebSocket API calls them (and `serve`'s
loopback copy, local/push_channel.py): `$connect`, `$disconnect` and `ping`, to
service/push.py. The route is `requestContext.routeKey`; a message's route is its `action`
(the API's route selection expression `$request.body.action`). `keepalive` reaches no
function: the API answers it itself (a one-way MOCK route), only to keep an idle socket open."""

from __future__ import annotations

import json
from typing import Any

from .. import clock, runtime
from ..core.principals import ANONYMOUS, principal_from_header, principal_from_iam
from ..observability import logger
from .handler import LambdaHandler

CONNECT, DISCONNECT, PING = "$connect", "$disconnect", "ping"
# The periodic message of an idle socket: API Gateway closes one idle for 10 minutes (a
# WebSocket ping frame does not count), and this route costs that one message, nothing else.
KEEPALIVE = "keepalive"
PONG = json.dumps({"type": "pong"})


def websocket_principal(request_context: dict[str, Any]) -> str:
    """The caller as a Kafka principal: the IAM identity API Gateway verified
    (`requestContext.identity.userArn`), or the `principal` a Lambda authorizer put in its
    context (`serve --principal-header`); ANONYMOUS without either. ValueError if
    malformed."""
    identity = request_context.get("identity") or {}
    if identity.get("userArn"):
        return principal_from_iam(identity)
    authorizer = request_context.get("authorizer") or {}
    if "principal" in authorizer:
        return principal_from_header(str(authorizer["principal"]))
    return ANONYMOUS


def _answer(status: int, body: str = "") -> dict[str, Any]:
    return {"statusCode": status, "body": body}


def _connect(event: dict[str, Any], request_context: dict[str, Any]) -> dict[str, Any]:
    from ..service.push import Refused, open_connection

    _, store = runtime.current()
    query = event.get("queryStringParameters") or {}
    try:
        principal = websocket_principal(request_context)
        open_connection(
            store,
            str(request_context["connectionId"]),
            query.get("groupId"),
            query.get("memberId"),
            principal,
            str((request_context.get("identity") or {}).get("sourceIp", "")),
            store.clock.now_ms(),
        )
    except ValueError as error:
        return _answer(403, f"the caller's identity cannot be a principal: {error}")
    except Refused as refused:
        return _answer(refused.status, str(refused))
    return _answer(200)


# Closes that are no crash: the client's own (1000: it left, or moved its socket) and API
# Gateway's or serve's (1001, going away: the 2-hour limit, a shutdown). A process that dies
# sends no close frame (1006).
ORDERLY_CLOSES = frozenset({1000, 1001})


def _disconnect(request_context: dict[str, Any]) -> dict[str, Any]:
    from ..service.push import close_connection

    _, store = runtime.current()
    status = request_context.get("disconnectStatusCode")
    close_connection(
        store,
        str(request_context["connectionId"]),
        store.clock.now_ms(),
        crashed=status not in ORDERLY_CLOSES,
    )
    return _answer(200)


def make_push_handler() -> LambdaHandler:
    """The handler of the push function (the WebSocket API's routes)."""

    @logger.inject_lambda_context
    def lambda_handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
        request_context = event.get("requestContext") or {}
        route = request_context.get("routeKey")
        settings, _ = runtime.current()
        try:
            with clock.shifted(settings.fault_clock_offset_ms):
                if route == CONNECT:
                    return _connect(event, request_context)
                if route == DISCONNECT:
                    return _disconnect(request_context)
                if route == PING:
                    _, store = runtime.current()
                    store.push.reassert(str(request_context["connectionId"]))
                    return _answer(200, PONG)
                if route == KEEPALIVE:  # routed here only by a template without its MOCK
                    return _answer(200)
                return _answer(400, 'unknown route: send {"action": "ping"}')
        except Exception:
            logger.exception("push route failed", extra={"route": route})
            return _answer(500, "internal error")

    return lambda_handler
