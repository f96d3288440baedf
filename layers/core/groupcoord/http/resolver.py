"""HTTP plumbing on Powertools' APIGatewayHttpResolver: the error model of the contract, request
parsing with the pydantic models, and per-call metrics. No protocol logic lives here.
"""

from __future__ import annotations

import base64
import contextvars
import json
from typing import Any

from aws_lambda_powertools.event_handler import APIGatewayHttpResolver, Response
from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.metrics.functions import is_metrics_disabled
from pydantic import ValidationError

from .. import clock, deadline, faults, runtime
from ..core.principals import ANONYMOUS, principal_from_header, principal_from_iam
from ..errors import BadRequest, Errors
from ..models.limits import CLIENT_ID_MAX_CHARS
from ..observability import logger, metrics
from ..service.authorization import caller_of
from ..service.context import ApiContext
from ..service.handlers_types import Accepted
from ..store import capacity
from ..store.conversion import ConversionInProgress
from ..store.errors import DeadlinePassed, StoreThrottled
from .apis import API_BY_NAME, APIS

MAX_BODY_BYTES = 1024 * 1024
JSON = "application/json"
_ALL_METHODS = ["GET", "POST", "PUT", "DELETE", "PATCH", "HEAD", "OPTIONS"]
_MAX_LAG_MS = 30_000


class ClientError(Exception):
    """A request the API refuses before it reaches the protocol (400, 404, 405, 413)."""

    def __init__(self, status: int, message: str, headers: dict[str, str] | None = None):
        super().__init__(message)
        self.status = status
        self.message = message
        self.headers = headers or {}


def error_response(
    status: int,
    message: str,
    headers: dict[str, str] | None = None,
    error_code: int = Errors.INVALID_REQUEST,
) -> Response:
    body = {"errorCode": int(error_code), "errorMessage": message}
    return Response(status_code=status, content_type=JSON, body=json.dumps(body), headers=headers)


def _echoed(event: Any, headers: dict[str, str] | None = None) -> dict[str, str]:
    """Response headers with the caller's Kafka-Correlation-Id echoed, as on every answer."""
    result = dict(headers or {})
    correlation = (event.headers or {}).get("kafka-correlation-id")
    if correlation is not None:
        result["Kafka-Correlation-Id"] = correlation
    return result


def describe_validation_error(error: ValidationError) -> str:
    """One line naming the first offending field, e.g. `topics[0].numPartitions: ...`."""
    first = error.errors(include_url=False)[0]
    path = ""
    for part in first["loc"]:
        path += f"[{part}]" if isinstance(part, int) else (f".{part}" if path else str(part))
    message = first["msg"]
    if first["type"] == "json_invalid":
        return f"request body is not valid JSON: {first.get('ctx', {}).get('error', message)}"
    if first["type"] == "model_type" and not path:
        return "request body must be a JSON object"
    return f"{path}: {message}" if path else message


def _read_body(event: Any) -> bytes:
    body = event.body or ""
    raw = base64.b64decode(body) if event.is_base64_encoded else body.encode("utf-8")
    if len(raw) > MAX_BODY_BYTES:
        raise ClientError(413, f"request body is {len(raw)} bytes; the limit is {MAX_BODY_BYTES}")
    return raw


def _endpoint(event: Any, configured: str) -> str:
    if configured:
        return configured.rstrip("/")
    headers = event.headers or {}
    scheme = headers.get("x-forwarded-proto", "https")
    return f"{scheme}://{event.request_context.domain_name}"


_EVENT: contextvars.ContextVar[Any] = contextvars.ContextVar("event")
_API: contextvars.ContextVar[str] = contextvars.ContextVar("api", default="")
_ROUTING: contextvars.ContextVar[dict] = contextvars.ContextVar("routing")
_LAMBDA_CONTEXT: contextvars.ContextVar[Any] = contextvars.ContextVar(
    "lambda_context", default=None
)


class ConcurrentHttpResolver(APIGatewayHttpResolver):
    """Powertools' resolver, safe for requests on concurrent threads. Powertools keeps the
    request being resolved in shared state: the event in a class attribute
    (`BaseRouter.current_event`), the route's arguments in the resolver's `context` dict, cleared
    after each request. One Lambda invocation at a time never notices, but `groupcoord serve`
    answers on threads, and there a request could be routed with another's event or lose its
    route arguments to another's clear. Here both live in context variables (one per thread), and
    so does the Lambda context (for its remaining time)."""

    def resolve(self, event: Any, context: Any) -> dict[str, Any]:
        _LAMBDA_CONTEXT.set(context)
        return super().resolve(event, context)

    def _to_proxy_event(self, event: dict) -> Any:
        proxy = super()._to_proxy_event(event)
        _EVENT.set(proxy)
        return proxy

    @property  # type: ignore[override]
    def current_event(self) -> Any:
        return _EVENT.get()

    @current_event.setter
    def current_event(self, value: Any) -> None:
        _EVENT.set(value)

    @property  # type: ignore[override]
    def context(self) -> dict:
        routing = _ROUTING.get(None)
        if routing is None:
            routing = {}
            _ROUTING.set(routing)
        return routing

    @context.setter
    def context(self, value: dict) -> None:
        _ROUTING.set(value)


def _principal(event: dict[str, Any]) -> str:
    """The caller as a Kafka principal: API Gateway's IAM identity (`User:<role or user ARN>`),
    or the `principal` a Lambda authorizer put in its context (`serve --principal-header`
    does so); `User:ANONYMOUS` without either. API Gateway writes the request context: a
    client cannot."""
    authorizer = (event.get("requestContext") or {}).get("authorizer") or {}
    try:
        if authorizer.get("iam"):
            return principal_from_iam(authorizer["iam"])
        lambda_context = authorizer.get("lambda") or {}
        if "principal" in lambda_context:
            return principal_from_header(str(lambda_context["principal"]))
    except ValueError as error:
        raise ClientError(403, f"the caller's identity cannot be a principal: {error}") from None
    return ANONYMOUS


def _write_deadline(event: Any, now_ms: int) -> int | None:
    """The request's write deadline (groupcoord/deadline.py): the earlier of the client's
    budget (Groupcoord-Timeout-Ms, relative to receipt: the client's clock need not agree) and
    the function's remaining time less the write margin."""
    try:
        timeout_ms = deadline.parse_timeout_ms((event.headers or {}).get(deadline.HEADER.lower()))
    except ValueError as error:
        raise ClientError(400, f"{deadline.HEADER} header: {error}") from None
    remaining = getattr(_LAMBDA_CONTEXT.get(), "get_remaining_time_in_millis", None)
    remaining_ms = int(remaining()) if callable(remaining) else None
    # Receipt is when API Gateway took the request (requestContext.timeEpoch), not now: a cold
    # start or a slow hop to the function must not stretch the client's budget. The lag is
    # measured on the system clock, as API Gateway's is, and taken off the server's clock (a
    # test's controlled clock included); at most API Gateway's 30 s integration timeout.
    # The lag counts against the client's budget only: the function's remaining time is
    # measured from now.
    received = (event.raw_event.get("requestContext") or {}).get("timeEpoch")
    lag_ms = 0
    if isinstance(received, int) and not isinstance(received, bool):
        lag_ms = min(_MAX_LAG_MS, max(0, clock.system_ms() - received))
    return deadline.request_deadline(now_ms, timeout_ms, remaining_ms, lag_ms)


def build_resolver(function: str) -> APIGatewayHttpResolver:
    """The resolver of one Lambda function: it answers its own APIs (http/apis.py) and 404
    for any other path, as API Gateway's routes would."""
    app = ConcurrentHttpResolver()
    served = {api.name: api for api in APIS if api.function == function}
    # Imported here, at the function's start (Lambda's init phase), not by its first request.
    handlers = {name: api.handler() for name, api in served.items()}

    @app.route("/v1/<name>", method=_ALL_METHODS)
    def dispatch(name: str) -> Response:
        event = app.current_event
        api = served.get(name)
        if api is None:
            where = (
                ""
                if name not in API_BY_NAME
                else f" (the {API_BY_NAME[name].function} function serves it)"
            )
            raise ClientError(404, f"unknown API {name!r}{where}; APIs are POST /v1/<api>")
        method = event.request_context.http.method.upper()
        if method != "POST":
            raise ClientError(405, f"{method} is not allowed: use POST", {"Allow": "POST"})
        raw = _read_body(event)
        request_model, handler = api.request, handlers[name]
        if not raw.strip():
            # An empty body is not JSON: every API takes at least `{}`.
            raise ClientError(400, "request body is empty: send a JSON object ({} for defaults)")
        try:
            request = request_model.model_validate_json(raw)
        except ValidationError as error:
            raise ClientError(400, describe_validation_error(error)) from None
        settings, store = runtime.current()
        headers = event.headers or {}
        client_id = headers.get("kafka-client-id", "")
        if len(client_id) > CLIENT_ID_MAX_CHARS:
            # It becomes part of classic member ids, which are sort keys (models/limits.py).
            raise ClientError(
                400, f"Kafka-Client-Id header: at most {CLIENT_ID_MAX_CHARS} characters"
            )
        _API.set(name)
        now = runtime.now_ms()
        write_deadline = _write_deadline(event, now)
        host = event.request_context.http.source_ip
        principal = _principal(event.raw_event)
        # The request's own write count, for its deployment's `write.<n>.*` crash points.
        with (
            capacity.metered() as usage,
            deadline.scoped(write_deadline),
            faults.request_scope(settings),
        ):
            # Inside the meter: a due check of the ACLs is the request's cost too.
            caller = caller_of(settings, store, principal, host, now)
            ctx = ApiContext(
                settings=settings,
                store=store,
                now_ms=now,
                caller=caller,
                endpoint=_endpoint(event, settings.endpoint),
                client_id=client_id,
                client_host=host,
                correlation_id=headers.get("kafka-correlation-id"),
            )
            result = handler(request, ctx)
        _record_usage(name, usage)
        response_headers = _echoed(event)
        if isinstance(result, Accepted):
            body = {"memberId": result.member_id, "retryAfterMs": result.retry_after_ms}
            return Response(202, JSON, json.dumps(body), response_headers)
        return Response(200, JSON, json.dumps(result.to_json_dict()), response_headers)

    @app.not_found
    def not_found(_: Exception) -> Response:
        event = app.current_event
        message = f"no such path {event.raw_path}; APIs are POST /v1/<api>"
        return error_response(404, message, _echoed(event))

    @app.exception_handler(ClientError)
    def client_error(error: ClientError) -> Response:
        return error_response(
            error.status, error.message, _echoed(app.current_event, error.headers)
        )

    @app.exception_handler(BadRequest)
    def bad_request(error: BadRequest) -> Response:
        return error_response(400, str(error), _echoed(app.current_event))

    @app.exception_handler(StoreThrottled)
    def throttled(error: StoreThrottled) -> Response:
        logger.warning("store throttled", extra={"reason": str(error)})
        headers = _echoed(app.current_event, {"Retry-After": str(error.retry_after_s)})
        return error_response(429, "the store is throttled; retry later", headers)

    @app.exception_handler(DeadlinePassed)
    def timed_out(error: DeadlinePassed) -> Response:
        # Like throttling, nothing was sent after the deadline (writes before it may have
        # landed, as on any failure); the client has given up on this request or is about to,
        # so a retry need not wait: Retry-After 0.
        logger.warning("request deadline passed", extra={"api": _API.get(), "reason": str(error)})
        headers = _echoed(app.current_event, {"Retry-After": "0"})
        return error_response(
            503,
            "the request's deadline passed before it could write; retry",
            headers,
            Errors.REQUEST_TIMED_OUT,
        )

    @app.exception_handler(ConversionInProgress)
    def converting(error: ConversionInProgress) -> Response:
        # Like throttling: the group is briefly unavailable while another request finishes
        # converting it between the protocols (store/conversion.py); a retry succeeds.
        headers = _echoed(app.current_event, {"Retry-After": str(error.retry_after_s)})
        return error_response(429, str(error), headers)

    @app.exception_handler(Exception)
    def server_error(error: Exception) -> Response:
        # A bug of ours, never a client's mistake: log it whole with the API it served (a
        # DynamoDB ValidationException lands here too: the models must have let through
        # something the table cannot hold), answer Kafka's -1.
        logger.exception("unhandled error", extra={"api": _API.get()})
        return error_response(
            500, "internal error", _echoed(app.current_event), Errors.UNKNOWN_SERVER_ERROR
        )

    return app


def _record_usage(api: str, usage: capacity.Usage) -> None:
    if is_metrics_disabled():
        # Powertools never flushes a disabled Metrics, so adding would only pile up.
        return
    metrics.add_dimension(name="api", value=api)
    metrics.add_metric(name="DynamoDBRequests", unit=MetricUnit.Count, value=usage.requests)
    metrics.add_metric(name="ReadUnits", unit=MetricUnit.Count, value=usage.read_units)
    metrics.add_metric(name="WriteUnits", unit=MetricUnit.Count, value=usage.write_units)
    logger.debug(
        "api call usage",
        extra={
            "api": api,
            "ddb_requests": usage.requests,
            "read_units": usage.read_units,
            "write_units": usage.write_units,
            "operations": usage.by_operation,
        },
    )
