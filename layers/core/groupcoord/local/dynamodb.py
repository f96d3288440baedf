"""A moto DynamoDB endpoint that serializes its requests.

moto's stock server is threaded and its check-then-write is not guarded, so concurrent
conditional writes can be lost (seen: 134 of 1,600 compare-and-set updates). Served from one
thread (werkzeug `threaded=False`), every request is atomic, as DynamoDB's are. Used as the
embedded store of `groupcoord serve` and, as a process, by `.ci/run` for the tests.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import threading
from pathlib import Path

from . import moto_transactions

LOOPBACK = "127.0.0.1"


def _ensure_fake_credentials() -> None:
    # moto accepts any credentials; boto3 only needs some to sign with.
    os.environ.setdefault("AWS_ACCESS_KEY_ID", "testing")
    os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "testing")
    os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")


class SerializedMotoServer:
    """moto's DynamoDB (and friends) on a loopback port, one request at a time."""

    def __init__(self, host: str = LOOPBACK, port: int = 0) -> None:
        from moto.moto_server.werkzeug_app import (
            DomainDispatcherApplication,
            MotoRequestHandler,
            create_backend_app,
        )
        from werkzeug.serving import make_server

        class QuietHandler(MotoRequestHandler):
            def log_request(self, *args: object, **kwargs: object) -> None:
                pass  # one line per DynamoDB call drowns everything else

        _ensure_fake_credentials()
        moto_transactions.install()
        app = DomainDispatcherApplication(create_backend_app)
        self._server = make_server(host, port, app, threaded=False, request_handler=QuietHandler)
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def start(self) -> SerializedMotoServer:
        self._thread = threading.Thread(
            target=self._server.serve_forever, name="embedded-dynamodb", daemon=True
        )
        self._thread.start()
        return self

    def serve_forever(self) -> None:
        self._server.serve_forever()

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="groupcoord dynamodb",
        description="Run a serialized moto DynamoDB endpoint on loopback (for tests).",
    )
    parser.add_argument("--port", type=int, default=0, help="0 picks a free port")
    parser.add_argument("--url-file", type=Path, help="write the endpoint URL here when ready")
    args = parser.parse_args(argv)
    server = SerializedMotoServer(port=args.port)
    if args.url_file:
        args.url_file.write_text(server.url + "\n")
    print(f"moto DynamoDB (serialized) on {server.url}", flush=True)
    with contextlib.suppress(KeyboardInterrupt):
        server.serve_forever()


if __name__ == "__main__":
    main()
