"""The HTTP error model: 400 naming the field (and nothing written), 404, 405, 413, headers."""

from __future__ import annotations

import json
import uuid

import pytest

from groupcoord.http.apis import API_NAMES, DEFAULT_ROUTE_FUNCTION
from groupcoord.http.handler import make_api_handler
from groupcoord.local.events import LambdaContext, http_api_event, route_for
from groupcoord.models.limits import CLIENT_ID_MAX_CHARS
from tests.support.api import Api

# An HTTP-contract test: `serve` on the DynamoDB endpoint.
pytestmark = pytest.mark.http_contract


def missing(api: Api, topic: str) -> bool:
    body = api.ok("metadata", {"topics": [{"name": topic}]})
    return body["topics"][0]["errorCode"] == 3


def test_a_string_where_a_number_belongs_is_a_400_naming_the_field_and_writes_nothing(
    api: Api,
) -> None:
    topic = f"orders-{uuid.uuid4().hex[:8]}"
    answer = api.call("create-topics", {"topics": [{"name": topic, "numPartitions": "12"}]})
    assert answer.status == 400
    assert answer.body["errorCode"] == 42
    assert "topics[0].numPartitions" in answer.body["errorMessage"]
    assert missing(api, topic)


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"topics": [{"name": "t", "numPartitions": 2**31}]}, "topics[0].numPartitions"),
        ({"topics": [{"name": "t", "numPartitions": True}]}, "topics[0].numPartitions"),
        ({"topics": [{"name": 5}]}, "topics[0].name"),
        ({"topics": "all"}, "topics"),
        ({}, "topics"),
        ({"topics": [{"numPartitions": 1}]}, "topics[0].name"),
    ],
)
def test_schema_violations_name_the_field(api: Api, body: dict, field: str) -> None:
    answer = api.call("create-topics", body)
    assert answer.status == 400, answer.body
    assert answer.body["errorCode"] == 42
    assert answer.body["errorMessage"].startswith(field + ":"), answer.body


def test_required_field_of_find_coordinator(api: Api) -> None:
    answer = api.call("find-coordinator", {"keyType": 0})
    assert answer.status == 400
    assert answer.body["errorMessage"].startswith("coordinatorKeys:")


@pytest.mark.parametrize("raw", [b"{not json", b"[1, 2]", b'"text"', b"\xff\xfe"])
def test_unparseable_bodies_are_400(api: Api, raw: bytes) -> None:
    answer = api.call("metadata", raw=raw, headers={"Content-Type": "application/json"})
    assert answer.status == 400
    assert answer.body["errorCode"] == 42
    assert answer.body["errorMessage"]


def test_a_body_over_one_mebibyte_is_413_and_writes_nothing(api: Api) -> None:
    topic = f"big-{uuid.uuid4().hex[:8]}"
    body = {"topics": [{"name": topic, "numPartitions": 1, "configs": []}], "pad": "x" * 2**20}
    answer = api.call("create-topics", raw=json.dumps(body).encode())
    assert answer.status == 413
    assert answer.body["errorCode"] == 42
    assert missing(api, topic)


def test_unknown_api_is_404(api: Api) -> None:
    answer = api.call("no-such-api", {})
    assert answer.status == 404
    assert answer.body["errorCode"] == 42
    assert "no-such-api" in answer.body["errorMessage"]


def test_paths_outside_v1_are_404(api: Api) -> None:
    answer = Api(api.base_url).session.post(f"{api.base_url}/v2/metadata", json={}, timeout=10)
    assert answer.status_code == 404
    assert answer.json()["errorCode"] == 42


@pytest.mark.parametrize("api_name", sorted(API_NAMES))
def test_methods_other_than_post_are_405_on_every_api(api: Api, api_name: str) -> None:
    for method in ("GET", "PUT", "DELETE", "PATCH"):
        answer = api.call(api_name, {}, method=method)
        assert answer.status == 405, (method, answer.status, answer.body)
        assert answer.headers.get("Allow") == "POST"
        assert answer.body["errorCode"] == 42


@pytest.mark.parametrize("api_name", sorted(API_NAMES))
def test_methods_other_than_post_are_405_as_deployed(api_name: str) -> None:
    """API Gateway routes only `POST /v1/<api>` to the API's function: a GET comes by the
    `$default` route to the admin function, which answers 405 for any API's path."""
    route, function = route_for("GET", f"/v1/{api_name}")
    assert (route, function) == ("$default", DEFAULT_ROUTE_FUNCTION)
    event = http_api_event("GET", f"/v1/{api_name}", b"", {})
    answer = make_api_handler(function)(event, LambdaContext(function))
    assert answer["statusCode"] == 405, answer
    assert answer["headers"]["Allow"] == "POST"
    assert json.loads(answer["body"])["errorCode"] == 42


def test_correlation_id_is_echoed_and_throttle_time_is_present(api: Api) -> None:
    answer = api.call("metadata", {}, headers={"Kafka-Correlation-Id": "7"})
    assert answer.status == 200
    assert answer.headers.get("Kafka-Correlation-Id") == "7"
    assert answer.body["throttleTimeMs"] == 0
    assert answer.headers["Content-Type"].startswith("application/json")


@pytest.mark.parametrize("api_name", sorted(API_NAMES))
def test_an_empty_body_is_not_json_on_every_api(api: Api, api_name: str) -> None:
    # Not even the APIs whose fields all have defaults read it as {}.
    for raw in (b"", b"  \n"):
        answer = api.call(api_name, raw=raw)
        assert answer.status == 400, (api_name, answer)
        assert answer.body["errorCode"] == 42
        assert "empty" in answer.body["errorMessage"]
    assert api.call("metadata", {}).status == 200


def test_a_client_id_over_its_limit_is_a_400_naming_the_header(api: Api) -> None:
    long_id = "c" * (CLIENT_ID_MAX_CHARS + 1)
    answer = api.call("join-group", {"groupId": "g"}, headers={"Kafka-Client-Id": long_id})
    assert answer.status == 400 and "Kafka-Client-Id" in answer.body["errorMessage"]
    ok = api.call(
        "find-coordinator",
        {"coordinatorKeys": ["g"]},
        headers={"Kafka-Client-Id": "c" * CLIENT_ID_MAX_CHARS},
    )
    assert ok.status == 200
