"""The FunctionUrl front door (template.yaml, FrontDoor=FunctionUrl): the router function answers
the whole `/v1/<api>` contract from function URL events (the samples of events/function-url/),
takes the caller from the URL's IAM context, measures a request's deadline from the event's
time, hands out its own URL in find-coordinator, and answers 404/405 as the HTTP API's
$default route does; `serve --front-door FunctionUrl` stands in for it for the client."""

from __future__ import annotations

import copy
import json
import re
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import replace
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from groupcoord import runtime
from groupcoord.client.transport import Transport
from groupcoord.core.acls import AclBinding, AclOperation, PatternType, PermissionType, ResourceType
from groupcoord.errors import Errors
from groupcoord.http.apis import API_BY_NAME, API_NAMES, ROUTER
from groupcoord.http.handler import LambdaHandler, make_api_handler
from groupcoord.local.events import LambdaContext, function_url_event
from groupcoord.store.store import Store
from tests.support.consumer import unique
from tests.support.servers import running_coordinator

EVENTS = Path(__file__).resolve().parents[2] / "events" / "function-url"
URL_HOST = re.compile(r"(?P<id>[a-z0-9]{32})\.lambda-url\.us-east-1\.on\.aws")
ROLE = "arn:aws:iam::000000000000:role/orders-service"

pytestmark = pytest.mark.filterwarnings("ignore:Dimension 'api' has already been added")


def url_event(api: str) -> dict[str, Any]:
    return json.loads((EVENTS / f"{api}.json").read_text())


@cache
def router() -> LambdaHandler:
    return make_api_handler(ROUTER)


def invoke(event: dict[str, Any]) -> tuple[int, dict[str, Any], dict[str, str]]:
    """(status, body, lower-cased headers) of the router's answer."""
    result = router()(event, LambdaContext(ROUTER))
    headers = {k.lower(): v for k, v in (result.get("headers") or {}).items()}
    return result["statusCode"], json.loads(result["body"]), headers


# --- the sample events ---


def test_every_api_has_a_function_url_event_and_nothing_else_is_there() -> None:
    assert {p.stem for p in EVENTS.glob("*.json")} == set(API_NAMES)


@pytest.mark.parametrize("api", API_NAMES)
def test_the_event_has_the_function_urls_shape(api: str) -> None:
    """Not the HTTP API's: no routes (routeKey `$default` whatever the path), the URL's own
    host and id, the owner's account; the caller's IAM identity where API Gateway puts it."""
    event = url_event(api)
    assert (event["version"], event["rawPath"]) == ("2.0", f"/v1/{api}")
    context = event["requestContext"]
    assert event["routeKey"] == context["routeKey"] == "$default"
    assert context["stage"] == "$default"
    host = URL_HOST.fullmatch(context["domainName"])
    assert host is not None, context["domainName"]
    assert context["apiId"] == context["domainPrefix"] == host["id"]
    assert event["headers"]["host"] == context["domainName"]
    assert re.fullmatch(r"\d{12}", context["accountId"])
    assert (context["http"]["method"], context["http"]["path"]) == ("POST", event["rawPath"])
    assert isinstance(context["timeEpoch"], int)
    assert context["authorizer"]["iam"]["userArn"].startswith("arn:aws:sts::")


@pytest.mark.parametrize("api", API_NAMES)
def test_each_event_through_the_router(api: str, configured: Store) -> None:
    status, body, headers = invoke(url_event(api))
    assert status == 200, body
    API_BY_NAME[api].response.model_validate(body)
    assert headers["content-type"].startswith("application/json")
    assert headers["kafka-correlation-id"] == url_event(api)["headers"]["kafka-correlation-id"]


def test_find_coordinator_hands_out_the_function_url(configured: Store) -> None:
    status, body, _ = invoke(url_event("find-coordinator"))
    assert status == 200, body
    domain = url_event("find-coordinator")["requestContext"]["domainName"]
    (coordinator,) = body["coordinators"]
    assert coordinator["endpoint"] == f"https://{domain}"
    assert (coordinator["host"], coordinator["port"]) == (domain, 443)


@pytest.mark.parametrize(
    ("method", "path", "status"),
    [("GET", "/v1/heartbeat", 405), ("PUT", "/v1/find-coordinator", 405),
     ("POST", "/v1/no-such-api", 404), ("POST", "/", 404), ("GET", "/favicon.ico", 404)],
)  # fmt: skip
def test_other_methods_and_paths_as_the_http_apis_default_route(
    method: str, path: str, status: int, configured: Store
) -> None:
    event = url_event("heartbeat")
    event["rawPath"] = event["requestContext"]["http"]["path"] = path
    event["requestContext"]["http"]["method"] = method
    answered, body, headers = invoke(event)
    assert answered == status, body
    assert body["errorCode"] == Errors.INVALID_REQUEST
    if status == 405:
        assert headers["allow"] == "POST"


# --- the caller and the deadline, from the function URL's request context ---


@pytest.fixture
def authorized(service_store: Store) -> Iterator[Store]:
    settings = replace(service_store.settings, authorizer_enabled=True)
    store = Store(service_store.dynamo, settings)
    saved = (runtime._settings, runtime._store)
    runtime.configure(settings, store)
    try:
        yield store
    finally:
        runtime._settings, runtime._store = saved


def _as_session(event: dict[str, Any], role: str) -> dict[str, Any]:
    event = copy.deepcopy(event)
    session = f"arn:aws:sts::000000000000:assumed-role/{role}/{unique('s')}"
    event["requestContext"]["authorizer"]["iam"]["userArn"] = session
    return event


def test_the_caller_is_the_role_of_the_urls_iam_identity(authorized: Store) -> None:
    """With the authorizer on, the ACLs see the role whose session signed the request: the
    role allowed to DESCRIBE the group finds its coordinator, another role is refused (30)."""
    group = unique("g")
    authorized.acls.create(
        [
            AclBinding(
                resource_type=ResourceType.GROUP,
                resource_name=group,
                pattern_type=PatternType.LITERAL,
                principal=f"User:{ROLE}",
                host="*",
                operation=AclOperation.DESCRIBE,
                permission=PermissionType.ALLOW,
            )
        ]
    )
    event = url_event("find-coordinator")
    event["body"] = json.dumps({"keyType": 0, "coordinatorKeys": [group]})
    for role, expected in (("orders-service", 0), ("billing-service", 30)):
        status, body, _ = invoke(_as_session(event, role))
        assert status == 200, body
        assert body["coordinators"][0]["errorCode"] == expected, role


def _join_event(received_ms_ago: int, budget_ms: int) -> dict[str, Any]:
    event = url_event("consumer-group-heartbeat")
    request = json.loads(event["body"])
    event["body"] = json.dumps({**request, "groupId": unique("g"), "memberId": unique("m")})
    event["headers"]["groupcoord-timeout-ms"] = str(budget_ms)
    event["requestContext"]["timeEpoch"] = int(time.time() * 1000) - received_ms_ago
    return event


def test_the_deadline_runs_from_the_time_the_function_url_took_the_request(
    configured: Store,
) -> None:
    """A join whose budget ran out between the URL taking it (timeEpoch) and the function
    starting writes nothing and answers 503 REQUEST_TIMED_OUT; the same join taken just now
    joins."""
    status, body, headers = invoke(_join_event(received_ms_ago=8_000, budget_ms=5_000))
    assert status == 503, body
    assert body["errorCode"] == Errors.REQUEST_TIMED_OUT
    assert headers["retry-after"] == "0"
    status, body, _ = invoke(_join_event(received_ms_ago=0, budget_ms=5_000))
    assert (status, body["errorCode"]) == (200, 0), body


def test_a_body_the_url_hands_over_base64_encoded_is_read() -> None:
    """A function URL base64-encodes a body whose content type is not text."""
    event = function_url_event("POST", "/v1/metadata", b"{}", {"content-type": "application/x"})
    assert event["isBase64Encoded"] is True
    with running_coordinator() as coordinator:
        runtime_store = coordinator.store
        with runtime.scoped(runtime_store.settings, runtime_store):
            status, body, _ = invoke(event)
    assert status == 200, body


# --- the client against a local stand-in (`serve --front-door FunctionUrl`) ---


def test_the_client_reaches_a_function_url_stack() -> None:
    with running_coordinator(front_door="FunctionUrl") as coordinator:
        # The stack's ApiUrl output of a function URL ends in "/".
        transport = Transport(coordinator.url + "/", sign=False)
        found = transport.call("find-coordinator", {"coordinatorKeys": ["g"]}).body
        assert found["coordinators"][0]["endpoint"] == coordinator.url
        created = transport.call(
            "create-topics", {"topics": [{"name": "orders", "numPartitions": 3}]}
        ).body
        assert created["topics"][0]["errorCode"] == 0
        joined = transport.call(
            "consumer-group-heartbeat",
            {"groupId": "g", "memberId": "m1", "memberEpoch": 0, "rebalanceTimeoutMs": 30000,
             "subscribedTopicNames": ["orders"], "topicPartitions": []},
        ).body  # fmt: skip
        assert joined["errorCode"] == 0 and joined["memberEpoch"] >= 1, joined
        committed = transport.call(
            "offset-commit",
            {"groupId": "g", "generationIdOrMemberEpoch": joined["memberEpoch"],
             "memberId": "m1",
             "topics": [{"name": "orders", "partitions": [
                 {"partitionIndex": 0, "committedOffset": 7}]}]},
        ).body  # fmt: skip
        assert committed["topics"][0]["partitions"][0]["errorCode"] == 0, committed
        request = urllib.request.Request(f"{coordinator.url}/v1/heartbeat", method="GET")
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(request, timeout=10)
        assert refused.value.code == 405
        assert refused.value.headers["Allow"] == "POST"
