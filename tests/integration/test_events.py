"""The sample events of events/ (for `sam local invoke`): one per API, each a valid request
that the Lambda handler of the function serving it answers, in-process, on a fresh table."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from groupcoord.http.apis import API_BY_NAME, API_FUNCTION, API_NAMES, FUNCTION_APIS
from groupcoord.http.handler import make_api_handler, make_sweeper_handler
from groupcoord.local.events import LambdaContext
from groupcoord.store.store import Store

EVENTS = Path(__file__).resolve().parents[2] / "events"
SWEEPER_EVENT = EVENTS / "sweeper-schedule.json"

# The handlers share Powertools' Metrics singleton; with metrics disabled (conftest) nothing
# flushes it between invocations, so the per-call `api` dimension is "overwritten".
pytestmark = pytest.mark.filterwarnings("ignore:Dimension 'api' has already been added")


def load(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text())


def api_event(api: str) -> dict[str, Any]:
    return load(EVENTS / f"{api}.json")


def generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("events_generate", EVENTS / "generate.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# --- the files themselves ---


def test_every_api_has_an_event_file_and_nothing_else_is_there() -> None:
    stems = {p.stem for p in EVENTS.glob("*.json")}
    assert stems == {*API_NAMES, SWEEPER_EVENT.stem}


@pytest.mark.parametrize("api", API_NAMES)
def test_event_routes_to_its_api(api: str) -> None:
    event = api_event(api)
    assert event["version"] == "2.0"
    assert event["routeKey"] == f"POST /v1/{api}"
    assert event["rawPath"] == f"/v1/{api}"
    context = event["requestContext"]
    assert context["routeKey"] == event["routeKey"]
    assert context["http"]["method"] == "POST"
    assert context["http"]["path"] == event["rawPath"]
    headers = event["headers"]
    assert headers["kafka-client-id"]
    assert headers["x-forwarded-proto"] == "https"
    assert headers["content-type"] == "application/json"
    assert all(name == name.lower() for name in headers)  # as API Gateway delivers them
    assert event["isBase64Encoded"] is False


@pytest.mark.parametrize("api", API_NAMES)
def test_event_body_is_a_valid_request_without_unknown_fields(api: str) -> None:
    body = json.loads(api_event(api)["body"])
    request = API_BY_NAME[api].request.model_validate_json(api_event(api)["body"])
    # Models ignore unknown fields; a misspelt field would vanish here.
    assert request.model_dump(by_alias=True, mode="json", exclude_unset=True) == body


def test_join_group_sample_is_a_consumer_join_with_base64_metadata() -> None:
    body = json.loads(api_event("join-group")["body"])
    assert body["protocolType"] == "consumer"
    assert body["memberId"] == ""
    request = API_BY_NAME["join-group"].request.model_validate_json(json.dumps(body))
    metadata = request.protocols[0].metadata  # type: ignore[attr-defined]
    # ConsumerProtocolSubscription v0: version 0, one topic "orders", null userData.
    assert metadata[:2] == b"\x00\x00" and b"orders" in metadata


def test_sweeper_event_is_an_eventbridge_scheduled_event() -> None:
    event = load(SWEEPER_EVENT)
    assert event["source"] == "aws.events"
    assert event["detail-type"] == "Scheduled Event"
    assert event["resources"] and event["resources"][0].startswith("arn:aws:events:")


def test_regenerating_gives_the_same_files(tmp_path: Path) -> None:
    """The HTTP API's events here, the function URL's in function-url/ (test_function_url.py)."""
    generator().main(["--out", str(tmp_path)])
    written = sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*.json"))
    assert written == sorted(str(p.relative_to(EVENTS)) for p in EVENTS.rglob("*.json"))
    assert any(name.startswith("function-url/") for name in written)
    for name in written:
        assert (tmp_path / name).read_text() == (EVENTS / name).read_text(), name


# --- through the Lambda handlers ---


def invoke(api: str) -> dict[str, Any]:
    function = API_FUNCTION[api]
    return make_api_handler(function)(api_event(api), LambdaContext(function))


@pytest.mark.parametrize("api", API_NAMES)
def test_event_through_its_lambda_handler(api: str, configured: Store) -> None:
    result = invoke(api)
    body = json.loads(result["body"])
    assert result["statusCode"] == 200, body
    API_BY_NAME[api].response.model_validate_json(result["body"])
    assert body["throttleTimeMs"] == 0
    # Every answer is JSON and echoes the sample's Kafka-Correlation-Id.
    headers = {k.lower(): v for k, v in (result.get("headers") or {}).items()}
    assert headers["content-type"].startswith("application/json")
    assert headers["kafka-correlation-id"] == api_event(api)["headers"]["kafka-correlation-id"]


def test_every_api_is_served_by_exactly_one_function() -> None:
    served = [api for apis in FUNCTION_APIS.values() for api in apis]
    assert sorted(served) == sorted(API_NAMES)


def test_find_coordinator_event_names_the_gateway_endpoint(configured: Store) -> None:
    body = json.loads(invoke("find-coordinator")["body"])
    domain = api_event("find-coordinator")["requestContext"]["domainName"]
    (coordinator,) = body["coordinators"]
    assert coordinator["endpoint"] == f"https://{domain}"
    assert (coordinator["host"], coordinator["port"]) == (domain, 443)


def test_topic_events_in_sequence_create_grow_and_delete(configured: Store) -> None:
    created = json.loads(invoke("create-topics")["body"])["topics"][0]
    assert created["errorCode"] == 0, created
    grown = json.loads(invoke("create-partitions")["body"])["results"][0]
    assert grown["errorCode"] == 0, grown
    (topic,) = json.loads(invoke("metadata")["body"])["topics"]
    assert (topic["name"], topic["topicId"]) == (created["name"], created["topicId"])
    assert len(topic["partitions"]) == 12
    deleted = json.loads(invoke("delete-topics")["body"])["responses"][0]
    assert deleted["errorCode"] == 0, deleted
    assert configured.topics.get(created["name"]) is None


def test_sweeper_event_through_the_sweeper_handler(configured: Store) -> None:
    report = make_sweeper_handler()(load(SWEEPER_EVENT), LambdaContext("sweeper", 60000))
    assert report == {
        "overdue": 0,
        "completed": {},
        "failed": 0,
        "quarantined": 0,
        "remaining": False,
        "deferred": 0,
    }


@pytest.mark.parametrize("api", API_NAMES)
def test_each_event_carries_the_iam_identity_of_a_role_session(api: str) -> None:
    """API Gateway's IAM authorization puts the caller in the request context; every session
    of a role is that role's principal (the ACLs name roles, not sessions)."""
    from groupcoord.http.resolver import _principal

    event = api_event(api)
    assert event["requestContext"]["authorizer"]["iam"]["userArn"].startswith(
        "arn:aws:sts::000000000000:assumed-role/orders-service/"
    )
    assert _principal(event) == "User:arn:aws:iam::000000000000:role/orders-service"
