"""API Gateway HTTP API (payload 2.0), Lambda function URL and EventBridge events, as AWS
builds them, so that `groupcoord serve` and the tests run the Lambda handlers on the events
they get in AWS."""

from __future__ import annotations

import base64
import time
import uuid
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from .. import clock
from ..http.apis import API_FUNCTION, DEFAULT_ROUTE_FUNCTION

LOCAL_ACCOUNT = "000000000000"
LOCAL_REGION = "us-east-1"
# The front doors of template.yaml (its FrontDoor parameter).
HTTP_API, FUNCTION_URL = "HttpApi", "FunctionUrl"
FRONT_DOORS = (HTTP_API, FUNCTION_URL)


def route_for(method: str, path: str) -> tuple[str, str]:
    """(routeKey, function) as the HTTP API's routes pick them: `POST /v1/<api>` or $default."""
    api = path[len("/v1/") :] if path.startswith("/v1/") else None
    if method.upper() == "POST" and api in API_FUNCTION:
        return f"POST {path}", API_FUNCTION[api]
    return "$default", DEFAULT_ROUTE_FUNCTION


def http_api_event(
    method: str,
    path: str,
    body: bytes,
    headers: Mapping[str, str],
    *,
    source_ip: str = "127.0.0.1",
    domain_name: str = "127.0.0.1:8080",
    query_string: str = "",
) -> dict[str, Any]:
    route_key, _ = route_for(method, path)
    lowered = {k.lower(): v for k, v in headers.items()}
    return _payload_v2(method, path, body, lowered, route_key, source_ip, domain_name, query_string)


def function_url_event(
    method: str,
    path: str,
    body: bytes,
    headers: Mapping[str, str],
    *,
    source_ip: str = "127.0.0.1",
    domain_name: str = "127.0.0.1:8080",
    query_string: str = "",
    account_id: str = LOCAL_ACCOUNT,
) -> dict[str, Any]:
    """A function URL's event: the HTTP API's payload 2.0 shape, but a URL has no routes
    (routeKey `$default` whatever the path) and its requestContext names the account that
    owns the function (`anonymous` without IAM auth); the caller's IAM identity, with
    AuthType AWS_IAM, is in requestContext.authorizer.iam as API Gateway puts it."""
    lowered = {k.lower(): v for k, v in headers.items()}
    event = _payload_v2(
        method, path, body, lowered, "$default", source_ip, domain_name, query_string
    )
    event["requestContext"]["accountId"] = account_id
    event["requestContext"]["apiId"] = domain_name.split(".")[0]
    content_type = lowered.get("content-type", "").split(";")[0].strip().lower()
    if body and not event["isBase64Encoded"] and not _is_text(content_type):
        # A function URL hands over any body whose type is not text base64 encoded.
        event["body"], event["isBase64Encoded"] = base64.b64encode(body).decode("ascii"), True
    return event


def _is_text(content_type: str) -> bool:
    return content_type.startswith("text/") or content_type in _TEXT_TYPES


_TEXT_TYPES = frozenset(
    ["application/json", "application/javascript", "application/xml", "application/yaml"]
)


def _payload_v2(
    method: str,
    path: str,
    body: bytes,
    lowered: dict[str, str],
    route_key: str,
    source_ip: str,
    domain_name: str,
    query_string: str,
) -> dict[str, Any]:
    # Whole ms from the clock's own integer source: int(time.time() * 1000) can round a ms
    # down and date the receipt before the client's send (a deadline test saw 1 ms short).
    received_ms = clock.system_ms()
    now = received_ms / 1000
    try:
        text: str | None = body.decode("utf-8")
        is_base64 = False
    except UnicodeDecodeError:
        text, is_base64 = base64.b64encode(body).decode("ascii"), True
    return {
        "version": "2.0",
        "routeKey": route_key,
        "rawPath": path,
        "rawQueryString": query_string,
        "headers": lowered,
        "requestContext": {
            "accountId": LOCAL_ACCOUNT,
            "apiId": "local",
            "domainName": domain_name,
            "domainPrefix": domain_name.split(".")[0],
            "http": {
                "method": method.upper(),
                "path": path,
                "protocol": "HTTP/1.1",
                "sourceIp": source_ip,
                "userAgent": lowered.get("user-agent", ""),
            },
            "requestId": uuid.uuid4().hex,
            "routeKey": route_key,
            "stage": "$default",
            "time": datetime.fromtimestamp(now, UTC).strftime("%d/%b/%Y:%H:%M:%S +0000"),
            "timeEpoch": received_ms,
        },
        "body": text if body else None,
        "isBase64Encoded": is_base64,
    }


def scheduled_event() -> dict[str, Any]:
    return {
        "version": "0",
        "id": str(uuid.uuid4()),
        "detail-type": "Scheduled Event",
        "source": "aws.events",
        "account": LOCAL_ACCOUNT,
        "time": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "region": LOCAL_REGION,
        "resources": [f"arn:aws:events:{LOCAL_REGION}:{LOCAL_ACCOUNT}:rule/groupcoord-sweeper"],
        "detail": {},
    }


class LambdaContext:
    """The attributes of Lambda's context object that Powertools reads."""

    def __init__(self, function_name: str, timeout_ms: int = 29000) -> None:
        self.function_name = f"groupcoord-{function_name}"
        self.function_version = "$LATEST"
        self.invoked_function_arn = (
            f"arn:aws:lambda:{LOCAL_REGION}:{LOCAL_ACCOUNT}:function:{self.function_name}"
        )
        self.memory_limit_in_mb = 512
        self.aws_request_id = str(uuid.uuid4())
        self.log_group_name = f"/aws/lambda/{self.function_name}"
        self.log_stream_name = "local"
        self._deadline = time.monotonic() + timeout_ms / 1000

    def get_remaining_time_in_millis(self) -> int:
        return max(0, int((self._deadline - time.monotonic()) * 1000))
