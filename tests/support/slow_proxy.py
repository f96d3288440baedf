"""A loopback proxy in front of `groupcoord serve` that holds some answers back, as a slow
network or a busy coordinator would: it forwards every request (find-coordinator's answer
naming the proxy as the coordinator, so that the member's later requests come through it too)
and holds back `hold_s` the answers to the requests that `held(api, body)` picks. It records
when it sent each answer."""

from __future__ import annotations

import http.client
import json
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

Held = Callable[[str, dict[str, Any]], bool]  # (API name, request body): hold its answer?


class SlowProxy:
    def __init__(self, upstream: str, hold_s: float) -> None:
        self.upstream = urlsplit(upstream)
        self.hold_s = hold_s
        self.held: Held = lambda _api, _body: False
        # (API name, monotonic time the request came), in that order.
        self.asked: list[tuple[str, float]] = []
        # (API name, request body, monotonic time its answer was sent), in that order.
        self.answered: list[tuple[str, dict[str, Any], float]] = []
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
        api = request.path.rstrip("/").rsplit("/", 1)[-1]
        self.asked.append((api, time.monotonic()))
        connection = http.client.HTTPConnection(self.upstream.netloc, timeout=30)
        try:
            connection.request(request.command, request.path, body, dict(request.headers))
            answer = connection.getresponse()
            payload = answer.read()
        finally:
            connection.close()
        if api == "find-coordinator":
            upstream = f"http://{self.upstream.netloc}".encode()
            payload = payload.replace(upstream, self.base.encode())
        fields = json.loads(body) if body else {}
        if self.held(api, fields):
            time.sleep(self.hold_s)
        request.send_response(answer.status)
        for name, value in answer.getheaders():
            if name.lower() not in ("transfer-encoding", "connection", "content-length"):
                request.send_header(name, value)
        request.send_header("Content-Length", str(len(payload)))
        request.end_headers()
        request.wfile.write(payload)
        self.answered.append((api, fields, time.monotonic()))

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
