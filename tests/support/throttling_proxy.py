"""A DynamoDB endpoint in front of the test endpoint that fails the operations it is told to.

It forwards every request to the real endpoint unchanged, except calls of the operations
given a rule (by the `X-Amz-Target` header, e.g. `DynamoDB_20120810.TransactWriteItems`):
those the rule picks are answered the way DynamoDB answers a throttled request (HTTP 400,
`ThrottlingException`), or with another fault. Loopback only.

    with ThrottlingProxy(dynamodb_endpoint) as proxy:
        proxy.fail("GetItem")                    # every call
        proxy.fail("Query", when=first_attempts)  # the 1st, 3rd, 5th... call
        ... Store.connect(settings, endpoint_url=proxy.url) ...
        proxy.calls["GetItem"], proxy.failed["GetItem"]
"""

from __future__ import annotations

import json
import threading
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import urllib3
from werkzeug.serving import WSGIRequestHandler, make_server
from werkzeug.wrappers import Request, Response

TARGET_PREFIX = "DynamoDB_20120810."
AMZ_JSON = "application/x-amz-json-1.0"
# Not forwarded either way: they describe one hop, not the message.
_HOP_HEADERS = {"connection", "keep-alive", "transfer-encoding", "host", "content-length"}

# n is the 1-based count of calls of the operation, this one included.
Rule = Callable[[int], bool]


def always(n: int) -> bool:
    return True


def first_attempts(n: int) -> bool:
    """Every other call, starting with the first: with retries on, each retry gets through."""
    return n % 2 == 1


@dataclass(frozen=True)
class Fault:
    """An error answer as DynamoDB's JSON protocol writes it."""

    type_name: str = "ThrottlingException"
    message: str = "Rate exceeded"
    status: int = 400
    extra: dict[str, Any] = field(default_factory=dict)

    def body(self) -> bytes:
        payload = {
            "__type": f"com.amazonaws.dynamodb.v20120810#{self.type_name}",
            "message": self.message,
            **self.extra,
        }
        return json.dumps(payload).encode()


THROTTLING = Fault()


def transaction_conflict(items: int) -> Fault:
    """TransactWriteItems cancelled by a conflict on its first item."""
    reasons = [{"Code": "TransactionConflict", "Message": "Transaction is ongoing for the item"}]
    reasons += [{"Code": "None"}] * (items - 1)
    codes = ", ".join(r["Code"] for r in reasons)
    return Fault(
        "TransactionCanceledException",
        f"Transaction cancelled, please refer cancellation reasons for specific reasons [{codes}]",
        extra={"CancellationReasons": reasons},
    )


class _QuietHandler(WSGIRequestHandler):
    def log_request(self, *args: object, **kwargs: object) -> None:
        pass


class ThrottlingProxy:
    def __init__(self, upstream: str, host: str = "127.0.0.1") -> None:
        self.upstream = upstream.rstrip("/")
        self._pool = urllib3.PoolManager(maxsize=16)
        self._lock = threading.Lock()
        self._rules: dict[str, tuple[Rule, Fault]] = {}
        self.calls: Counter[str] = Counter()
        self.failed: Counter[str] = Counter()
        self._server = make_server(host, 0, self._app, threaded=True, request_handler=_QuietHandler)
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    # --- rules ---

    def fail(self, *operations: str, when: Rule = always, fault: Fault = THROTTLING) -> None:
        """Answer calls of `operations` (e.g. "GetItem") that `when` picks with `fault`."""
        with self._lock:
            for operation in operations:
                self._rules[operation] = (when, fault)

    def reset(self) -> None:
        """Forward everything again and forget the counts."""
        with self._lock:
            self._rules.clear()
            self.calls.clear()
            self.failed.clear()

    # --- serving ---

    def _decide(self, operation: str) -> Fault | None:
        with self._lock:
            self.calls[operation] += 1
            rule = self._rules.get(operation)
            if rule is None or not rule[0](self.calls[operation]):
                return None
            self.failed[operation] += 1
            return rule[1]

    def _app(self, environ: dict[str, Any], start_response: Any) -> Any:
        request = Request(environ)
        target = request.headers.get("X-Amz-Target", "")
        operation = target.removeprefix(TARGET_PREFIX)
        fault = self._decide(operation) if operation else None
        if fault is not None:
            response = Response(fault.body(), status=fault.status, content_type=AMZ_JSON)
            response.headers["x-amzn-RequestId"] = "throttling-proxy"
            return response(environ, start_response)
        upstream = self._pool.request(
            request.method,
            self.upstream + request.full_path.rstrip("?"),
            body=request.get_data(),
            headers={k: v for k, v in request.headers.items() if k.lower() not in _HOP_HEADERS},
            preload_content=True,
            decode_content=False,
            retries=False,
            redirect=False,
            timeout=urllib3.Timeout(connect=5, read=30),
        )
        response = Response(upstream.data, status=upstream.status)
        for name, value in upstream.headers.items():
            if name.lower() not in _HOP_HEADERS:
                response.headers[name] = value
        return response(environ, start_response)

    def start(self) -> ThrottlingProxy:
        self._thread = threading.Thread(
            target=self._server.serve_forever, name="throttling-proxy", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._pool.clear()

    def __enter__(self) -> ThrottlingProxy:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
