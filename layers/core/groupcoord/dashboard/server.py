"""`groupcoord dashboard`: the dashboard app on 127.0.0.1, against any coordinator."""

from __future__ import annotations

import logging
import threading
from typing import Any

from werkzeug.serving import make_server

from .app import Dashboard
from .source import CoordinatorSource

# Loopback only: the process signs with the user's credentials, so nobody else may ask it.
HOST = "127.0.0.1"


class DashboardServer:
    def __init__(
        self,
        endpoint: str,
        *,
        port: int = 0,
        sign: bool | None = None,
        region: str | None = None,
        detail_poll_ms: int = 2000,
        overview_poll_ms: int = 5000,
    ) -> None:
        self.source = CoordinatorSource.connect(
            endpoint,
            sign=sign,
            region=region,
            # Answers live as long as the pages' pace: tabs share them.
            detail_ttl_s=detail_poll_ms / 1000 * 0.9,
            overview_ttl_s=overview_poll_ms / 1000 * 0.9,
        )
        logging.getLogger("werkzeug").setLevel(logging.WARNING)  # no access log per refresh
        self.http = make_server(HOST, port, _unset, threaded=True)
        bound_port = self.http.server_address[1]
        self.url = f"http://{HOST}:{bound_port}"
        self.http.app = Dashboard(
            self.source,
            allowed_hosts={f"{HOST}:{bound_port}", f"localhost:{bound_port}"},
            detail_poll_ms=detail_poll_ms,
            overview_poll_ms=overview_poll_ms,
        )
        self._thread: threading.Thread | None = None

    def start(self) -> DashboardServer:
        """Serve on a background thread (tests)."""
        self._thread = threading.Thread(
            target=self.http.serve_forever, name="dashboard", daemon=True
        )
        self._thread.start()
        return self

    def serve_forever(self) -> None:
        self.http.serve_forever()

    def stop(self) -> None:
        self.http.shutdown()
        self.http.server_close()


def _unset(environ: dict[str, Any], start_response: Any) -> list[bytes]:
    return []  # replaced once the port is known
