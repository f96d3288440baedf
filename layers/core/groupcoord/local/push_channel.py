"""`serve`'s push channel: the WebSocket API's routes on loopback (the `websockets` library),
handed to the same handler as in AWS (http/websocket.py) as API Gateway's WebSocket events,
and a loopback `@connections` endpoint (WSGI, mounted on serve's HTTP server) that the store's
poster (store/push.py, boto3's apigatewaymanagementapi client) posts to as it does to API
Gateway's."""

from __future__ import annotations

import base64
import json
import secrets
import threading
import time
from collections.abc import Callable
from http import HTTPStatus
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from websockets.exceptions import ConnectionClosed
from websockets.sync.server import Server, ServerConnection, serve

from .. import runtime
from ..http.websocket import CONNECT, DISCONNECT, KEEPALIVE, make_push_handler
from ..settings import Settings
from ..store.store import Store
from .events import LOCAL_ACCOUNT, LambdaContext

CONNECTIONS_PATH = "/@connections"
# API Gateway's WebSocket frame limit (a notice is far smaller).
MAX_FRAME_BYTES = 128 * 1024


def new_connection_id() -> str:
    """An id shaped as API Gateway's: 12 random bytes in standard base64 (`/` and `+` among
    its characters, first or last too)."""
    return base64.b64encode(secrets.token_bytes(12)).decode()


def _event(route: str, connection_id: str, remote: str, **extra: Any) -> dict[str, Any]:
    now = time.time()
    return {
        "requestContext": {
            "routeKey": route,
            "eventType": {CONNECT: "CONNECT", DISCONNECT: "DISCONNECT"}.get(route, "MESSAGE"),
            "connectionId": connection_id,
            "requestTimeEpoch": int(now * 1000),
            "identity": {"sourceIp": remote},
            "accountId": LOCAL_ACCOUNT,
            "stage": "local",
            "apiId": "local",
        },
        "isBase64Encoded": False,
        **extra,
    }


class LocalPushChannel:
    """The WebSocket routes on `host` (a free port), each connection on a thread of its own.
    `connection_ids` makes each connection's id (a test may choose them)."""

    def __init__(self, host: str, principal_header: str | None = None) -> None:
        self.principal_header = principal_header.lower() if principal_header else None
        self.handler = make_push_handler()
        self.settings: Settings | None = None
        self.store: Store | None = None
        self.connection_ids: Callable[[], str] = new_connection_id
        self._sockets: dict[str, ServerConnection] = {}
        self._lock = threading.Lock()
        self.server: Server = serve(
            self._session,
            host,
            0,
            process_request=self._connect,
            max_size=MAX_FRAME_BYTES,
        )
        bound_host, bound_port = self.server.socket.getsockname()[:2]
        self.url = f"ws://{bound_host}:{bound_port}"
        self._thread: threading.Thread | None = None

    def attach(self, settings: Settings, store: Store) -> None:
        self.settings, self.store = settings, store

    def _invoke(self, event: dict[str, Any]) -> dict[str, Any]:
        assert self.settings is not None and self.store is not None
        with runtime.scoped(self.settings, self.store):
            return self.handler(event, LambdaContext("push"))

    def _connect(self, connection: ServerConnection, request: Any) -> Any:
        """`$connect` at the handshake: API Gateway refuses a connection its route refused."""
        connection_id = self.connection_ids()
        remote = str(connection.remote_address[0])
        parts = urlsplit(request.path)
        event = _event(
            CONNECT,
            connection_id,
            remote,
            queryStringParameters=dict(parse_qsl(parts.query)) or None,
            headers={k.lower(): v for k, v in request.headers.raw_items()},
        )
        if self.principal_header is not None:
            principal = request.headers.get(self.principal_header)
            if principal is not None:
                event["requestContext"]["authorizer"] = {"principal": principal}
        result = self._invoke(event)
        status = int(result.get("statusCode", 500))
        if status != 200:
            return connection.respond(HTTPStatus(status), str(result.get("body") or ""))
        connection.connection_id = connection_id  # type: ignore[attr-defined]
        connection.remote = remote  # type: ignore[attr-defined]
        return None

    def _session(self, connection: ServerConnection) -> None:
        # Nothing here may fail before the `finally` that runs `$disconnect`: a socket the
        # peer closed right after the handshake has no address any more.
        connection_id: str = connection.connection_id  # type: ignore[attr-defined]
        remote: str = connection.remote  # type: ignore[attr-defined]
        with self._lock:
            self._sockets[connection_id] = connection
        try:
            for message in connection:
                self._message(connection, connection_id, remote, message)
        except ConnectionClosed:
            pass
        finally:
            with self._lock:
                self._sockets.pop(connection_id, None)
            # As API Gateway tells it: the close frame's code, 1006 for none (a dead peer).
            code = connection.close_code if connection.close_code is not None else 1006
            event = _event(DISCONNECT, connection_id, remote)
            event["requestContext"]["disconnectStatusCode"] = code
            self._invoke(event)

    def _message(
        self, connection: ServerConnection, connection_id: str, remote: str, message: Any
    ) -> None:
        text = message.decode() if isinstance(message, bytes) else message
        try:
            action = json.loads(text).get("action")
        except (ValueError, AttributeError):
            action = None
        route = action if isinstance(action, str) and action else "$default"
        if route == KEEPALIVE:  # API Gateway's one-way MOCK route: no function, no answer
            return
        result = self._invoke(_event(route, connection_id, remote, body=text))
        if result.get("body"):  # a two-way route's answer
            connection.send(str(result["body"]))

    # --- the @connections endpoint (WSGI) ---

    def connections_app(self, environ: dict[str, Any], start_response: Any) -> Any:
        method = environ["REQUEST_METHOD"]
        # `/<id>`, the id percent-decoded once already: only the separator comes off (an id
        # may begin or end with `/`).
        connection_id = environ.get("PATH_INFO", "").removeprefix("/")
        with self._lock:
            connection = self._sockets.get(connection_id)
        if connection is None:
            return _reply(start_response, "410 Gone", {"message": "GoneException"})
        try:
            if method == "POST":
                length = int(environ.get("CONTENT_LENGTH") or 0)
                if length > MAX_FRAME_BYTES:
                    return _reply(start_response, "413 Payload Too Large", {"message": "too big"})
                connection.send(environ["wsgi.input"].read(length).decode())
            elif method == "DELETE":
                connection.close()
            elif method != "GET":
                return _reply(start_response, "405 Method Not Allowed", {"message": method})
        except ConnectionClosed:
            return _reply(start_response, "410 Gone", {"message": "GoneException"})
        return _reply(start_response, "200 OK", {})

    def start(self) -> LocalPushChannel:
        self._thread = threading.Thread(target=self.server.serve_forever, name="push", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self.server.shutdown()


def _reply(start_response: Any, status: str, body: dict[str, Any]) -> list[bytes]:
    payload = json.dumps(body).encode()
    headers = [("Content-Type", "application/json"), ("Content-Length", str(len(payload)))]
    if status.startswith("410"):
        headers.append(("x-amzn-ErrorType", "GoneException"))
    start_response(status, headers)
    return [payload]
