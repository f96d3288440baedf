"""`groupcoord serve`: the Lambda handlers behind a local HTTP endpoint, as API Gateway (or,
with front_door FunctionUrl, the router's function URL) would call them, plus the sweeper on
a timer, as the EventBridge schedule would run it."""

from __future__ import annotations

import base64
import logging
import os
import threading
import warnings
from pathlib import Path
from typing import Any

from werkzeug.middleware.dispatcher import DispatcherMiddleware
from werkzeug.serving import make_server
from werkzeug.wrappers import Request, Response

from .. import runtime
from ..client.local_aws import endpoint_from_environment, ensure_local_defaults, is_loopback
from ..http.apis import FUNCTION_APIS, ROUTER
from ..http.handler import LambdaHandler, make_api_handler, make_sweeper_handler
from ..observability import logger
from ..settings import Settings
from ..store.store import Store
from .dynamodb_local import DynamoDBLocal
from .events import (
    FRONT_DOORS,
    FUNCTION_URL,
    HTTP_API,
    LambdaContext,
    function_url_event,
    http_api_event,
    route_for,
    scheduled_event,
)
from .memory import memory_store
from .push_channel import CONNECTIONS_PATH, LocalPushChannel


class LocalGateway:
    """A WSGI app that turns HTTP requests into the events of the stack's front door for the
    handlers: API Gateway v2 events to the function each route names (HttpApi), or function
    URL events to the router (FunctionUrl)."""

    def __init__(
        self,
        domain_name: str,
        settings: Settings,
        store: Store,
        principal_header: str | None = None,
        front_door: str = HTTP_API,
    ) -> None:
        if front_door not in FRONT_DOORS:
            raise ValueError(f"front door {front_door!r} is not one of {', '.join(FRONT_DOORS)}")
        self.domain_name = domain_name
        self.settings = settings
        self.store = store
        self.principal_header = principal_header.lower() if principal_header else None
        self.front_door = front_door
        functions = (ROUTER,) if front_door == FUNCTION_URL else tuple(FUNCTION_APIS)
        self.handlers: dict[str, LambdaHandler] = {
            name: make_api_handler(name) for name in functions
        }

    def __call__(self, environ: dict[str, Any], start_response: Any) -> Any:
        request = Request(environ)
        if self.front_door == FUNCTION_URL:
            function, make_event = ROUTER, function_url_event
        else:
            function, make_event = route_for(request.method, request.path)[1], http_api_event
        event = make_event(
            request.method,
            request.path,
            request.get_data(cache=False),
            dict(request.headers),
            source_ip=request.remote_addr or "127.0.0.1",
            domain_name=self.domain_name,
            query_string=request.query_string.decode("latin-1"),
        )
        event["headers"].setdefault("x-forwarded-proto", "http")
        if self.principal_header is not None:
            principal = event["headers"].pop(self.principal_header, None)
            if principal is not None:
                # Where a Lambda authorizer puts what it found (http/resolver.py reads it).
                event["requestContext"]["authorizer"] = {"lambda": {"principal": principal}}
        with runtime.scoped(self.settings, self.store):
            result = self.handlers[function](event, LambdaContext(function))
        body = result.get("body") or ""
        payload = base64.b64decode(body) if result.get("isBase64Encoded") else body.encode()
        response = Response(payload, status=result["statusCode"])
        for name, value in (result.get("headers") or {}).items():
            response.headers[name] = value
        return response(environ, start_response)


def _dashboard(url: str, host: str, port: int) -> Any:
    """`groupcoord dashboard` for this coordinator, answering only for the served host name
    (and localhost on a loopback address), as the standalone one does."""
    from ..dashboard.app import Dashboard
    from ..dashboard.source import CoordinatorSource

    allowed = {host, f"localhost:{port}"} if is_loopback(url) else None
    source = CoordinatorSource.connect(url, sign=False, detail_ttl_s=1.8, overview_ttl_s=4.5)
    return Dashboard(source, allowed_hosts=allowed)


def _quiet_logs(access_log: bool) -> None:
    # Metrics as EMF lines would flood the terminal; opt back in with the variable.
    os.environ.setdefault("POWERTOOLS_METRICS_DISABLED", "true")
    os.environ.setdefault("POWERTOOLS_TRACE_DISABLED", "true")
    logger.setLevel(os.environ.get("POWERTOOLS_LOG_LEVEL", "WARNING"))
    if not access_log:
        logging.getLogger("werkzeug").setLevel(logging.WARNING)
    # Requests run concurrently on threads sharing the Metrics singleton; with metrics off,
    # its bookkeeping warnings mean nothing here.
    warnings.filterwarnings("ignore", module="aws_lambda_powertools")


class Sweeper(threading.Thread):
    """Runs the sweeper handler every `interval_ms` until stopped, each sweep on a fixed
    budget: a backlog is worked off over several sweeps, as in AWS."""

    BUDGET_MS = 10_000

    def __init__(self, settings: Settings, store: Store) -> None:
        super().__init__(name="sweeper", daemon=True)
        self.interval_s = settings.sweep_interval_ms / 1000
        self.settings = settings
        self.store = store
        self.handler = make_sweeper_handler(budget_ms=self.BUDGET_MS)
        self._stop_event = threading.Event()

    def run(self) -> None:
        while not self._stop_event.wait(self.interval_s):
            try:
                with runtime.scoped(self.settings, self.store):
                    self.handler(scheduled_event(), LambdaContext("sweeper", timeout_ms=60000))
            except Exception as error:  # keep sweeping; the handler logged the details
                print(f"sweeper: {error}", flush=True)

    def stop(self) -> None:
        """Stop, and wait for a sweep under way to end (within its budget): a stopped
        coordinator runs no handler after `stop` returns."""
        self._stop_event.set()
        if self.is_alive() and threading.current_thread() is not self:
            self.join(timeout=2 * self.BUDGET_MS / 1000)


class LocalCoordinator:
    """The whole local deployment: store, table, HTTP endpoint, sweeper. Its requests run on
    its own settings and store (runtime.scoped): several can share one process, and `store`
    lets one share another's table (as two Lambda functions with different settings would)."""

    def __init__(
        self,
        settings: Settings,
        *,
        host: str = "127.0.0.1",
        port: int = 8080,
        dynamodb_endpoint: str | None = None,
        embedded: str = "memory",
        data_dir: Path | None = None,
        access_log: bool = False,
        store: Store | None = None,
        principal_header: str | None = None,
        front_door: str = HTTP_API,
        push: bool = True,
    ) -> None:
        """`embedded` is the store without an endpoint or a shared `store`: "memory" (the
        in-memory adapter) or "dynamodb-local" (DynamoDB Local as a child process, its data in
        `data_dir` if given, stopped with the coordinator)."""
        self.dynamodb_local: DynamoDBLocal | None = None
        endpoint = dynamodb_endpoint or os.environ.get("AWS_ENDPOINT_URL") or None
        if endpoint is None and store is None and embedded == "dynamodb-local":
            self.dynamodb_local = DynamoDBLocal(data_dir).start()
            endpoint = self.dynamodb_local.url
        try:
            self._build(
                settings, host, port, endpoint, store, access_log, principal_header, front_door,
                push,
            )  # fmt: skip
        except BaseException:
            if self.dynamodb_local is not None:
                self.dynamodb_local.stop()  # never left running
            raise

    def _build(
        self,
        settings: Settings,
        host: str,
        port: int,
        endpoint: str | None,
        store: Store | None,
        access_log: bool,
        principal_header: str | None,
        front_door: str,
        push: bool,
    ) -> None:
        # A local engine accepts any credentials; boto3 only needs some to sign with.
        engines = (endpoint, endpoint_from_environment("kinesis"))
        self.dummy_aws = bool(any(is_loopback(e) for e in engines) and ensure_local_defaults())
        self.dynamodb_endpoint = endpoint
        _quiet_logs(access_log)
        self.http = make_server(host, port, lambda environ, start: [], threaded=True)
        bound_host, bound_port = self.http.server_address[:2]
        self.url = f"http://{bound_host}:{bound_port}"
        if not settings.endpoint:
            settings = Settings.from_mapping({"groupcoord.endpoint": self.url}, base=settings)
        # The push channel: its WebSocket routes on a port of their own, its `@connections`
        # endpoint on this one (the store's poster posts to it as to API Gateway's).
        self.push = LocalPushChannel(host, principal_header) if push else None
        if self.push is not None:
            # boto3 signs its posts to the loopback `@connections`: any credentials will do.
            self.dummy_aws = bool(ensure_local_defaults()) or self.dummy_aws
            settings = Settings.from_mapping(
                {
                    "groupcoord.push.url": settings.push_url or self.push.url,
                    "groupcoord.push.connections.endpoint": (
                        settings.push_connections_endpoint or self.url
                    ),
                },
                base=settings,
            )
        self.settings = settings
        if store is not None:
            self.store = Store(store.dynamo, settings)
        elif endpoint is None:
            self.store = memory_store(settings)
        else:
            self.store = Store.connect(settings, endpoint_url=endpoint)
        self.store.ensure_table()
        mounts: dict[str, Any] = {
            "/ui": _dashboard(self.url, f"{bound_host}:{bound_port}", bound_port)
        }
        if self.push is not None:
            self.push.attach(settings, self.store)
            mounts[CONNECTIONS_PATH] = self.push.connections_app
        gateway = LocalGateway(
            f"{bound_host}:{bound_port}", settings, self.store, principal_header, front_door
        )
        self.front_door = front_door
        # The dashboard at /ui, reading this coordinator over its own HTTP API (unsigned).
        self.http.app = DispatcherMiddleware(gateway, mounts)
        self.sweeper = Sweeper(settings, self.store)
        self._http_thread: threading.Thread | None = None

    def banner(self) -> str:
        store = self.dynamodb_endpoint or "the in-memory adapter"
        if self.dynamodb_local is not None:
            kept = self.dynamodb_local.data_dir
            where = f"data in {kept}" if kept is not None else "in memory"
            store = f"DynamoDB Local at {store}, {where}"
        dummy = "; dummy AWS credentials for the loopback engines" if self.dummy_aws else ""
        push = f"push at {self.push.url}" if self.push is not None else "no push"
        return (
            f"groupcoord serving {self.url}/v1 behind a local {self.front_door} (DynamoDB: "
            f"{store}, table {self.settings.table_name}{dummy}; {push}); Ctrl-C stops"
        )

    def start(self) -> LocalCoordinator:
        """Serve in background threads (tests)."""
        self.sweeper.start()
        if self.push is not None:
            self.push.start()
        self._http_thread = threading.Thread(
            target=self.http.serve_forever, name="http", daemon=True
        )
        self._http_thread.start()
        return self

    def serve_forever(self) -> None:
        self.sweeper.start()
        if self.push is not None:
            self.push.start()
        self.http.serve_forever()

    def stop(self) -> None:
        self.sweeper.stop()
        if self.push is not None:
            self.push.stop()
        self.http.shutdown()
        self.http.server_close()
        if self.dynamodb_local is not None:
            self.dynamodb_local.stop()
