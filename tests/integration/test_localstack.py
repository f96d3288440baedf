"""Opt-in: the contract against LocalStack's DynamoDB, the way a user points serve at it.

Set LOCALSTACK_ENDPOINT (e.g. http://127.0.0.1:4566) to run it; then the fixtures of the whole
integration suite use LocalStack too (tests/conftest.py). `groupcoord localstack` starts one
without Docker, and `.ci/localstack.sh` runs this file with the contract suites on it. Skipped
when unset.
"""

from __future__ import annotations

import os
import uuid

import pytest
import requests

from tests.support.servers import running_serve

LOCALSTACK = os.environ.get("LOCALSTACK_ENDPOINT")
pytestmark = [
    pytest.mark.localstack,
    pytest.mark.skipif(not LOCALSTACK, reason="LOCALSTACK_ENDPOINT is not set"),
]


def test_localstack_dynamodb_is_reachable_with_localstack_client() -> None:
    from urllib.parse import urlsplit

    import localstack_client.session

    parts = urlsplit(LOCALSTACK or "")
    os.environ.setdefault("LOCALSTACK_HOST", f"{parts.hostname}:{parts.port}")
    client = localstack_client.session.Session().client("dynamodb")
    assert "TableNames" in client.list_tables()


def test_serve_against_localstack_creates_its_table_and_serves_topics() -> None:
    assert LOCALSTACK
    with running_serve(LOCALSTACK) as url:
        topic = f"ls-{uuid.uuid4().hex[:8]}"
        body = {"topics": [{"name": topic, "numPartitions": 4}]}
        created = requests.post(f"{url}/v1/create-topics", json=body, timeout=30).json()
        assert created["topics"][0]["errorCode"] == 0
        shown = requests.post(
            f"{url}/v1/metadata", json={"topics": [{"name": topic}]}, timeout=30
        ).json()
        assert len(shown["topics"][0]["partitions"]) == 4
