"""The examples on a machine with no AWS configuration (no AWS_* variables, an empty HOME),
against the local engines: they run without a traceback, and say that they use dummy
credentials and a default region for the loopback endpoints."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from groupcoord.store.dynamo import make_client
from tests.support.api import Api
from tests.support.kinesis import FAST_LOOP_SETTINGS, Streams, kinesis_deployment, streams_fixture
from tests.support.sink import count_of, create_sink_table, sink_name

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
TABLE = sink_name()
streams = streams_fixture()


@pytest.fixture(scope="module")
def deployed(dynamodb_endpoint: str, kinesis_endpoint: str) -> Iterator[Api]:
    settings = {**FAST_LOOP_SETTINGS, "groupcoord.sink.tables": TABLE}
    with kinesis_deployment(dynamodb_endpoint, settings) as (api, _store):
        yield api


def bare_environment(home: Path, **extra: str) -> dict[str, str]:
    """This process's environment without any AWS_* variable, HOME an empty folder."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    return {**env, "HOME": str(home), **extra}


def no_traceback(output: str) -> None:
    assert "Traceback" not in output and "Error:" not in output, output


def test_exactly_once_setup_runs_without_aws_configuration(
    deployed: Api, dynamodb_endpoint: str, tmp_path: Path
) -> None:
    table, topic = sink_name(), f"t-{uuid.uuid4().hex[:8]}"
    command = [
        sys.executable, str(EXAMPLES / "exactly_once_counts.py"), "--setup",
        "--url", deployed.base_url, "--dynamodb-endpoint", dynamodb_endpoint,
        "--table", table, "--topic", topic,
    ]  # fmt: skip
    ran = subprocess.run(command, env=bare_environment(tmp_path), capture_output=True, text=True)
    no_traceback(ran.stderr)
    assert ran.returncode == 0
    assert "(loopback): dummy credentials and region us-east-1" in ran.stdout
    assert f"created table {table} and topic {topic}" in ran.stdout
    described = make_client(endpoint_url=dynamodb_endpoint).describe_table(TableName=table)
    assert described["Table"]["TableStatus"] == "ACTIVE"


def test_kinesis_example_runs_without_aws_configuration(
    deployed: Api, dynamodb_endpoint: str, kinesis_endpoint: str, streams: Streams, tmp_path: Path
) -> None:
    arn = streams.create(1)
    topic = f"t-{uuid.uuid4().hex[:8]}"
    configs = [{"name": "groupcoord.kinesis.stream.arn", "value": arn}]
    deployed.ok("create-topics", {"topics": [{"name": topic, "configs": configs}]})
    client = make_client(endpoint_url=dynamodb_endpoint)
    create_sink_table(client, TABLE)
    key = f"k-{uuid.uuid4().hex[:8]}"
    streams.client.put_records(
        StreamARN=arn, Records=[{"PartitionKey": key, "Data": b"x"} for _ in range(3)]
    )
    command = [
        sys.executable, str(EXAMPLES / "kinesis_counts.py"), "--url", deployed.base_url,
        "--topic", topic, "--table", TABLE, "--commit-interval", "0.5",
    ]  # fmt: skip
    env = bare_environment(tmp_path, AWS_ENDPOINT_URL_KINESIS=kinesis_endpoint)
    process = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        counted = until(lambda: count_of(client, TABLE, key) == 3, process)
    finally:
        process.send_signal(signal.SIGTERM)
        out, err = (text.decode() for text in process.communicate(timeout=30))
    no_traceback(err)
    assert counted and process.returncode == 0, (out, err)
    assert "kinesis at " + kinesis_endpoint + " (loopback): dummy credentials" in out + err


def until(condition: Any, process: subprocess.Popen[bytes], timeout_s: float = 60.0) -> bool:
    deadline = time.monotonic() + timeout_s
    while not condition():
        if process.poll() is not None or time.monotonic() > deadline:
            return False
        time.sleep(0.1)
    return True
