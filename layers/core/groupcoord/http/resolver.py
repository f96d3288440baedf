"""HTTP plumbing of an API function: routing, the error model of the contract, request parsing
with the pydantic models, and per-call metrics. No protocol logic lives here.

The routing is this module's own, not Powertools' event handler: a function has one route
(`/v1/<api>`), and Powertools' resolver costs a sixth of a cold start to import
(docs/performance.md, "Cold start"). It answers as APIGatewayHttpResolver did, for the HTTP
API's payload 2.0: the same matching of the path (the stage's prefix removed unless it is
`$default`), 404 through the `not_found` answer for any other path or method, exception
answers looked up along the exception's MRO, and the same response dict (`headers` and
`cookies`). Each request's state is in local variables, so requests on concurrent threads
(`groupcoord serve`) never see each other's.
"""

from __future__ import annotations

import base64
import contextvars
import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.metrics.functions import is_metrics_disabled

from .. import clock, deadline, faults, runtime
from ..core.principals import ANONYMOUS, principal_from_header, principal_from_iam
from ..errors import BadRequest, Errors
from ..models.limits import CLIENT_ID_MAX_CHARS
from ..observability import logger, metrics
from ..store import capacity
from ..store.errors import ConversionInProgress, DeadlinePassed, StoreThrottled
from .apis import API_BY_NAME, APIS, serves

if TYPE_CHECKING:
    from pydantic import ValidationError

MAX_BODY_BYTES = 1024 * 1024
JSON = "application/json"
_ALL_METHODS = frozenset(["GET", "POST", "PUT", "DELETE", "PATCH", "HEAD", "OPTIONS"])
_MAX_LAG_MS = 30_000
# `/v1/<name>` as Powertools matches a dynamic route: one segment of unreserved, reserved and
# the characters API Gateway decodes, anchored at both ends.
_ROUTE = re.compile(r"^/v1/(?P<name>[-._~()'!*:@,;=+&$%<> \[\]{}|^\w]+)$")


# The API being answered, for the answers that log it (one context per thread in `serve`).
_API: contextvars.ContextVar[str] = contextvars.ContextVar("api", default="")


class ClientError(Exception):
    """A request the API refuses before it reaches the protocol (400, 404, 405, 413)."""

    def __init__(self, status: int, message: str, headers: dict[str, str] | None = None):
        super().__init__(message)
        self.status = status
        self.message = message
        self.headers = headers or {}


class _NotFound(Exception):
    """No route for the request's method and path."""


@dataclass
class Response:
    """An HTTP answer, as Powertools' Response: the content type is added to the headers
    unless they name one."""

    status_code: int
    content_type: str | None = None
    body: str = ""
    headers: dict[str, str] | None = None

    def as_result(self) -> dict[str, Any]:
        """The function's result for an HTTP API, payload format 2.0."""
        headers = dict(self.headers or {})
        if self.content_type:
            headers.setdefault("Content-Type", self.content_type)
        return {
            "statusCode": self.status_code,
            "body": self.body,
            "isBase64Encoded": False,
            "headers": headers,
            "cookies": [],
        }


def error_response(
    status: int,
    message: str,
    headers: dict[str, str] | None = None,
    error_code: int = Errors.INVALID_REQUEST,
) -> Response:
    body = {"errorCode": int(error_code), "errorMessage": message}
    return Response(status_code=status, content_type=JSON, body=json.dumps(body), headers=headers)


class HttpEvent:
    """What the resolver reads of an HTTP API (payload 2.0) event, or of a function URL's,
    which has the same shape (routeKey and stage `$default`, the URL's own domainName, the
    caller's IAM identity in requestContext.authorizer.iam). Header names are matched without
    regard to case, as Powertools' event did (both send them lower case)."""

    def __init__(self, raw_event: dict[str, Any]) -> None:
        self.raw_event = raw_event
        self.headers: dict[str, str] = {
            str(name).lower(): value for name, value in (raw_event.get("headers") or {}).items()
        }
        self.body: str | None = raw_event.get("body")
        self.is_base64_encoded = bool(raw_event.get("isBase64Encoded"))
        self.raw_path: str = raw_event["rawPath"]
        context = raw_event["requestContext"]
        self.method: str = context["http"]["method"].upper()
        self.source_ip: str = context["http"]["sourceIp"]
        self.domain_name: str = context["domainName"]
        stage = context.get("stage", "$default")
        # The path the route sees: the stage's own prefix removed (none on `$default`).
        self.path = self.raw_path if stage == "$default" else self.raw_path[len("/" + stage) :]


def _echoed(event: HttpEvent, headers: dict[str, str] | None = None) -> dict[str, str]:
    """Response headers with the caller's Kafka-Correlation-Id echoed, as on every answer."""
    result = dict(headers or {})
    correlation = event.headers.get("kafka-correlation-id")
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


def _read_body(event: HttpEvent) -> bytes:
    body = event.body or ""
    raw = base64.b64decode(body) if event.is_base64_encoded else body.encode("utf-8")
    if len(raw) > MAX_BODY_BYTES:
        raise ClientError(413, f"request body is {len(raw)} bytes; the limit is {MAX_BODY_BYTES}")
    return raw


def _endpoint(event: HttpEvent, configured: str) -> str:
    if configured:
        return configured.rstrip("/")
    scheme = event.headers.get("x-forwarded-proto", "https")
    return f"{scheme}://{event.domain_name}"


def _principal(event: dict[str, Any]) -> str:
    """The caller as a Kafka principal: the IAM identity API Gateway or a function URL
    verified (`requestContext.authorizer.iam`, the same object in both: `User:<role or user
    ARN>`), or the `principal` a Lambda authorizer put in its context (`serve
    --principal-header` does so); `User:ANONYMOUS` without either. API Gateway or Lambda's
    URL service writes the request context: a client cannot."""
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


def _write_deadline(event: HttpEvent, lambda_context: Any, now_ms: int, lag_ms: int) -> int | None:
    """The request's write deadline (groupcoord/deadline.py): the earlier of the client's
    budget (Groupcoord-Timeout-Ms, relative to receipt, `lag_ms` before `now_ms`: the client's
    clock need not agree) and the function's remaining time less the write margin."""
    try:
        timeout_ms = deadline.parse_timeout_ms(event.headers.get(deadline.HEADER.lower()))
    except ValueError as error:
        raise ClientError(400, f"{deadline.HEADER} header: {error}") from None
    remaining = getattr(lambda_context, "get_remaining_time_in_millis", None)
    remaining_ms = int(remaining()) if callable(remaining) else None
    # The lag counts against the client's budget only: the function's remaining time is
    # measured from now.
    return deadline.request_deadline(now_ms, timeout_ms, remaining_ms, lag_ms)


def _lag_ms(event: HttpEvent) -> int:
    """How long ago API Gateway or the function URL took the request (requestContext.timeEpoch,
    in both events): a cold start or a slow hop to the function must not stretch the client's
    budget. Measured on the system clock, as theirs is, and taken off the server's clock (a
    test's controlled clock included), which is read after it (a lag read later would cut
    the budget by the time between the reads); at most 30 s (API Gateway's integration
    timeout; a function URL waits at most the function's 29 s timeout)."""
    received = (event.raw_event.get("requestContext") or {}).get("timeEpoch")
    if isinstance(received, int) and not isinstance(received, bool):
        return min(_MAX_LAG_MS, max(0, clock.system_ms() - received))
    return 0


ExceptionAnswer = Callable[[HttpEvent, Any], Response]


def _client_error(event: HttpEvent, error: ClientError) -> Response:
    return error_response(error.status, error.message, _echoed(event, error.headers))


def _bad_request(event: HttpEvent, error: BadRequest) -> Response:
    return error_response(400, str(error), _echoed(event))


def _throttled(event: HttpEvent, error: StoreThrottled) -> Response:
    logger.warning("store throttled", extra={"reason": str(error)})
    headers = _echoed(event, {"Retry-After": str(error.retry_after_s)})
    return error_response(429, "the store is throttled; retry later", headers)


def _timed_out(event: HttpEvent, error: DeadlinePassed) -> Response:
    # Like throttling, nothing was sent after the deadline (writes before it may have landed,
    # as on any failure); the client has given up on this request or is about to, so a retry
    # need not wait: Retry-After 0.
    logger.warning("request deadline passed", extra={"api": _API.get(), "reason": str(error)})
    headers = _echoed(event, {"Retry-After": "0"})
    return error_response(
        503,
        f"the request's deadline passed {error.doing()}; retry",
        headers,
        Errors.REQUEST_TIMED_OUT,
    )


def _converting(event: HttpEvent, error: ConversionInProgress) -> Response:
    # Like throttling: the group is briefly unavailable while another request finishes
    # converting it between the protocols (store/conversion.py); a retry succeeds.
    headers = _echoed(event, {"Retry-After": str(error.retry_after_s)})
    return error_response(429, str(error), headers)


def _server_error(event: HttpEvent, error: Exception) -> Response:
    # A bug of ours, never a client's mistake: log it whole with the API it served (a DynamoDB
    # ValidationException lands here too: the models must have let through something the
    # table cannot hold), answer Kafka's -1.
    logger.exception("unhandled error", extra={"api": _API.get()})
    return error_response(500, "internal error", _echoed(event), Errors.UNKNOWN_SERVER_ERROR)


# Exception type -> its answer; the most specific along the exception's MRO is used.
ANSWERS: dict[type[BaseException], ExceptionAnswer] = {
    ClientError: _client_error,
    BadRequest: _bad_request,
    StoreThrottled: _throttled,
    DeadlinePassed: _timed_out,
    ConversionInProgress: _converting,
    Exception: _server_error,
}


def _answer_for(kind: type[BaseException]) -> ExceptionAnswer | None:
    for cls in kind.__mro__:
        if cls in ANSWERS:
            return ANSWERS[cls]
    return None


def _not_found(event: HttpEvent) -> Response:
    message = f"no such path {event.raw_path}; APIs are POST /v1/<api>"
    return error_response(404, message, _echoed(event))


class Resolver:
    """One Lambda function's resolver: a registry of the APIs it answers (http/apis.py; the
    router behind a function URL answers all), each API's messages and service imported by its
    first request (Python's import lock makes a concurrent first request wait), never those
    of another function's APIs: the function's init is only the plumbing every API shares
    (docs/performance.md, "Cold start"). `resolve(event, context)` is its handler's body."""

    def __init__(self, function: str) -> None:
        self.served = {api.name: api for api in APIS if serves(function, api)}
        self._loaded: dict[str, tuple[Any, Callable[[Any, Any], Any]]] = {}

    def load(self, name: str) -> tuple[Any, Callable[[Any, Any], Any]]:
        """API `name`'s request model and service function, imported at its first use."""
        found = self._loaded.get(name)
        if found is None:
            api = self.served[name]
            found = self._loaded[name] = (api.request, api.handler())
        return found

    def load_all(self) -> None:
        """Import every API's messages and service now rather than at its first request."""
        for name in self.served:
            self.load(name)

    def resolve(self, raw_event: dict[str, Any], lambda_context: Any) -> dict[str, Any]:
        event = HttpEvent(raw_event)
        try:
            match = _ROUTE.match(event.path) if event.method in _ALL_METHODS else None
            if match is None:
                raise _NotFound(event.path)
            response = self.dispatch(event, lambda_context, match["name"])
        except _NotFound:
            response = _not_found(event)
        except Exception as error:
            answer = _answer_for(type(error))
            if answer is None:
                raise
            response = answer(event, error)
        return response.as_result()

    def dispatch(self, event: HttpEvent, lambda_context: Any, name: str) -> Response:
        """The answer of API `name`: the request checked and parsed, the service run."""
        method = event.method
        # Any other method on an API's path is 405, whichever function it reached (API
        # Gateway routes only POST /v1/<api> to the API's own: the rest comes by $default).
        if method != "POST" and name in API_BY_NAME:
            raise ClientError(405, f"{method} is not allowed: use POST", {"Allow": "POST"})
        if name not in self.served:
            where = (
                ""
                if name not in API_BY_NAME
                else f" (the {API_BY_NAME[name].function} function serves it)"
            )
            raise ClientError(404, f"unknown API {name!r}{where}; APIs are POST /v1/<api>")
        raw = _read_body(event)
        request_model, handler = self.load(name)
        request = _parsed(request_model, raw)
        from ..service.handlers_types import Accepted

        result, usage = _run(name, handler, request, event, lambda_context)
        _record_usage(name, usage)
        response_headers = _echoed(event)
        if isinstance(result, Accepted):
            body = {"memberId": result.member_id, "retryAfterMs": result.retry_after_ms}
            return Response(202, JSON, json.dumps(body), response_headers)
        return Response(200, JSON, json.dumps(result.to_json_dict()), response_headers)


def _parsed(request_model: Any, raw: bytes) -> Any:
    """The request message, or 400 naming the field."""
    if not raw.strip():
        # An empty body is not JSON: every API takes at least `{}`.
        raise ClientError(400, "request body is empty: send a JSON object ({} for defaults)")
    # pydantic with the first request, as the models: not at init (docs/performance.md).
    from pydantic import ValidationError

    try:
        return request_model.model_validate_json(raw)
    except ValidationError as error:
        raise ClientError(400, describe_validation_error(error)) from None


def _run(
    name: str,
    handler: Callable[[Any, Any], Any],
    request: Any,
    event: HttpEvent,
    lambda_context: Any,
) -> tuple[Any, capacity.Usage]:
    """The service function on the request, in the request's context (settings, store and its
    clock, caller, deadline, crash points, usage meter)."""
    # The request's caller (its ACL types) and context with the first request, not at init.
    from ..service.authorization import caller_of
    from ..service.context import ApiContext

    settings, store = runtime.current()
    headers = event.headers
    client_id = headers.get("kafka-client-id", "")
    if len(client_id) > CLIENT_ID_MAX_CHARS:
        # It becomes part of classic member ids, which are sort keys (models/limits.py).
        raise ClientError(400, f"Kafka-Client-Id header: at most {CLIENT_ID_MAX_CHARS} characters")
    _API.set(name)
    lag_ms = _lag_ms(event)
    now = store.clock.now_ms()
    write_deadline = _write_deadline(event, lambda_context, now, lag_ms)
    host = event.source_ip
    principal = _principal(event.raw_event)
    # The request's own write count, for its deployment's `write.<n>.*` crash points.
    with (
        capacity.metered() as usage,
        deadline.scoped(write_deadline, store.clock),
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
    return result, usage


def build_resolver(function: str) -> Resolver:
    """The resolver of one Lambda function (404 for any path it does not serve, as API
    Gateway's routes would)."""
    return Resolver(function)


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
