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
from tests.support.sink import count_of, sink_name

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
SETUP_TABLE = sink_name()  # the one kinesis_counts.py --setup makes
streams = streams_fixture()


@pytest.fixture(scope="module")
def deployed(dynamodb_endpoint: str, kinesis_endpoint: str) -> Iterator[Api]:
    settings = {**FAST_LOOP_SETTINGS, "groupcoord.sink.tables": SETUP_TABLE}
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


def until(condition: Any, process: subprocess.Popen[bytes], timeout_s: float = 60.0) -> bool:
    deadline = time.monotonic() + timeout_s
    while not condition():
        if process.poll() is not None or time.monotonic() > deadline:
            return False
        time.sleep(0.1)
    return True


def test_the_kinesis_walk_through_sets_up_puts_and_counts_saying_what_it_does(
    deployed: Api, dynamodb_endpoint: str, kinesis_endpoint: str, tmp_path: Path
) -> None:
    """kinesis_counts.py's own steps: --setup (twice: what exists is kept), --put, a worker
    that prints its shards and checkpoints; every record counted once."""
    topic, stream = f"t-{uuid.uuid4().hex[:8]}", f"s-{uuid.uuid4().hex[:8]}"
    common = ["--url", deployed.base_url, "--topic", topic, "--table", SETUP_TABLE]
    common += ["--stream", stream]
    env = bare_environment(tmp_path, AWS_ENDPOINT_URL_KINESIS=kinesis_endpoint)

    def example(*args: str) -> subprocess.CompletedProcess[str]:
        command = [sys.executable, str(EXAMPLES / "kinesis_counts.py"), *common, *args]
        ran = subprocess.run(command, env=env, capture_output=True, text=True, timeout=120)
        no_traceback(ran.stderr)
        assert ran.returncode == 0, ran
        return ran

    setup = ["--setup", "--shards", "2", "--dynamodb-endpoint", dynamodb_endpoint]
    first = example(*setup).stdout
    assert f"creating stream {stream} (2 shards)" in first
    assert f"created table {SETUP_TABLE} (key k)" in first
    assert f"bound topic {topic} to arn:aws:kinesis:" in first and "(2 shards)" in first
    again = example(*setup).stdout
    assert f"stream {stream} exists" in again and f"topic {topic} exists" in again
    assert "put 40 records" in example("--put", "40").stdout

    command = [sys.executable, str(EXAMPLES / "kinesis_counts.py"), *common, "--name", "a"]
    command += ["--commit-interval", "0.5"]
    process = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    client = make_client(endpoint_url=dynamodb_endpoint)
    keys = [f"key-{n}" for n in range(10)]
    try:
        counted = until(lambda: sum(count_of(client, SETUP_TABLE, k) for k in keys) == 40, process)
    finally:
        process.send_signal(signal.SIGTERM)
        out, err = (text.decode() for text in process.communicate(timeout=30))
    no_traceback(err)
    assert counted and process.returncode == 0, (out, err)
    assert [count_of(client, SETUP_TABLE, k) for k in keys] == [4] * 10
    for shard in ("shardId-000000000000 (partition 0)", "shardId-000000000001 (partition 1)"):
        assert f"[a] reading {shard} from TRIM_HORIZON" in out, out
        assert f"[a] checkpoint {shard} at " in out, out
    assert f"[a] kinesis at {kinesis_endpoint} (loopback): dummy credentials" in out
    assert "[a] joining group kinesis-counts on topic " + topic in out
    assert "[a] assigned " in out and "owns partitions [0, 1]" in out


def test_serve_binds_a_loopback_kinesis_stream_without_aws_configuration(
    kinesis_endpoint: str, streams: Streams, tmp_path: Path
) -> None:
    """serve's own Kinesis client (a topic's binding reads the stream) gets the dummy
    credentials a loopback kinesis-local takes, and its banner says so."""
    url_file = tmp_path / "url"
    env = bare_environment(tmp_path, AWS_ENDPOINT_URL_KINESIS=kinesis_endpoint)
    command = [sys.executable, "-m", "groupcoord.cli", "serve", "--port", "0",
               "--url-file", str(url_file)]  # fmt: skip
    process = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        assert until(lambda: url_file.exists() and url_file.read_text().strip(), process, 30)
        api = Api(url_file.read_text().strip())
        configs = [{"name": "groupcoord.kinesis.stream.arn", "value": streams.create(1)}]
        created = api.ok("create-topics", {"topics": [{"name": "bound", "configs": configs}]})
        assert created["topics"][0]["errorCode"] == 0, created
    finally:
        process.kill()  # its graceful stop is serve's own business (test_serve.py)
        out, err = (text.decode() for text in process.communicate(timeout=30))
    no_traceback(err)
    assert "dummy AWS credentials for the loopback engines" in out
