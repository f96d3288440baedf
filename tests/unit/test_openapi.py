"""docs/openapi.json is the contract's OpenAPI document, generated from the message models."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from groupcoord.http.apis import API_BY_NAME, API_NAMES
from groupcoord.http.openapi import build_openapi, dump_openapi

DOC = Path(__file__).resolve().parents[2] / "docs" / "openapi.json"
REGENERATE = "python -m groupcoord.http.openapi > docs/openapi.json"


@pytest.fixture(scope="module")
def doc() -> dict[str, Any]:
    return build_openapi()


def _resolve(doc: dict[str, Any], ref: str) -> Any:
    assert ref.startswith("#/"), ref
    node: Any = doc
    for part in ref[2:].split("/"):
        assert part in node, f"{ref} does not resolve"
        node = node[part]
    return node


def _refs(node: Any) -> list[str]:
    if isinstance(node, dict):
        own = [node["$ref"]] if isinstance(node.get("$ref"), str) else []
        return own + [ref for value in node.values() for ref in _refs(value)]
    if isinstance(node, list):
        return [ref for value in node for ref in _refs(value)]
    return []


def test_committed_document_matches_the_models():
    assert DOC.read_text() == dump_openapi(), (
        f"docs/openapi.json is out of date with the models; regenerate it with `{REGENERATE}`"
    )


def test_build_is_deterministic():
    assert dump_openapi() == dump_openapi()


def test_every_api_has_a_post_path(doc):
    assert set(doc["paths"]) == {f"/v1/{api}" for api in API_NAMES}
    for api in API_NAMES:
        assert set(doc["paths"][f"/v1/{api}"]) == {"post"}
        assert doc["paths"][f"/v1/{api}"]["post"]["operationId"] == api


@pytest.mark.parametrize("api", API_NAMES)
def test_request_and_response_schemas_resolve_to_the_models(doc, api):
    operation = doc["paths"][f"/v1/{api}"]["post"]
    request = operation["requestBody"]["content"]["application/json"]["schema"]
    assert _resolve(doc, request["$ref"])["title"] == API_BY_NAME[api].request.__name__
    response = operation["responses"]["200"]["content"]["application/json"]["schema"]
    schema = _resolve(doc, response["$ref"])
    assert schema["title"] == API_BY_NAME[api].response.__name__
    assert "throttleTimeMs" in schema["required"]


@pytest.mark.parametrize("api", API_NAMES)
def test_answers_and_headers_of_every_api(doc, api):
    operation = doc["paths"][f"/v1/{api}"]["post"]
    codes = {"200", "400", "413", "429", "503"}
    if API_BY_NAME[api].may_answer_accepted:
        codes.add("202")
    assert set(operation["responses"]) == codes
    headers = {_resolve(doc, p["$ref"])["name"] for p in operation["parameters"]}
    assert headers == {"Kafka-Client-Id", "Kafka-Correlation-Id", "Groupcoord-Timeout-Ms"}


def test_throttled_answer_carries_retry_after(doc):
    assert "Retry-After" in doc["components"]["responses"]["TooManyRequests"]["headers"]


def test_accepted_answer_is_member_id_and_retry_after(doc):
    schema = doc["components"]["schemas"]["AcceptedResponse"]
    assert set(schema["properties"]) == set(schema["required"]) == {"memberId", "retryAfterMs"}


def test_every_ref_resolves(doc):
    for ref in _refs(doc):
        _resolve(doc, ref)


def test_document_is_valid_openapi():
    validator = pytest.importorskip("openapi_spec_validator")
    validator.validate(json.loads(DOC.read_text()))
