"""The Lambda handlers answered on concurrent threads, as `groupcoord serve` runs them: every
answer belongs to its own request (its route, its body, its correlation id), including the
error answers built after the request's work."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from groupcoord.http.apis import API_FUNCTION
from groupcoord.http.handler import make_api_handler
from groupcoord.local.events import LambdaContext, http_api_event
from groupcoord.store.store import Store

pytestmark = pytest.mark.filterwarnings("ignore:Dimension 'api' has already been added")

REQUESTS = 1_200
THREADS = 12


@pytest.fixture
def fast_thread_switches() -> Iterator[None]:
    """Switch threads every 10 us instead of 5 ms, so that requests interleave at every step."""
    saved = sys.getswitchinterval()
    sys.setswitchinterval(1e-5)
    try:
        yield
    finally:
        sys.setswitchinterval(saved)


def request(index: int) -> tuple[str, dict[str, Any], str]:
    """(api, body, expected) for request `index`: metadata of a topic that exists, of one that
    does not, a body the API refuses (400), or a path that does not exist (404)."""
    kind = index % 4
    if kind == 0:
        return "metadata", {"topics": [{"name": "present"}]}, "present:0"
    if kind == 1:
        return "metadata", {"topics": [{"name": f"absent-{index}"}]}, f"absent-{index}:3"
    if kind == 2:
        return "metadata", {"topics": "not a list"}, "400"
    return f"no-such-api-{index}", {}, "404"


def test_concurrent_requests_each_get_their_own_answer(
    configured: Store, fast_thread_switches: None
) -> None:
    handlers = {name: make_api_handler(name) for name in set(API_FUNCTION.values())}
    created = handlers[API_FUNCTION["create-topics"]](
        http_api_event(
            "POST",
            "/v1/create-topics",
            json.dumps({"topics": [{"name": "present", "numPartitions": 2}]}).encode(),
            {"content-type": "application/json"},
        ),
        LambdaContext("admin"),
    )
    assert created["statusCode"] == 200

    def call(index: int) -> tuple[str, str, str]:
        api, body, expected = request(index)
        event = http_api_event(
            "POST",
            f"/v1/{api}",
            json.dumps(body).encode(),
            {"content-type": "application/json", "kafka-correlation-id": str(index)},
        )
        # Every function's resolver routes any /v1/<api>: the 404s go through metadata's.
        function = API_FUNCTION.get(api, API_FUNCTION["metadata"])
        answer = handlers[function](event, LambdaContext(function))
        payload = json.loads(answer["body"])
        if answer["statusCode"] == 200:
            topic = payload["topics"][0]
            got = f"{topic['name']}:{topic['errorCode']}"
        else:
            got = str(answer["statusCode"])
        return expected, got, (answer.get("headers") or {}).get("Kafka-Correlation-Id", "")

    with ThreadPoolExecutor(THREADS) as pool:
        answers = list(pool.map(call, range(REQUESTS)))

    mismatched = [
        (i, expected, got, correlation)
        for i, (expected, got, correlation) in enumerate(answers)
        if got != expected or correlation != str(i)
    ]
    assert mismatched == []
