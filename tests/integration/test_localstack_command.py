"""`groupcoord localstack` starts LocalStack's runtime on loopback with no Docker: its DynamoDB
(on the project's DynamoDB Local) and its Kinesis (on the project's kinesis-local) answer, and
nothing of it outlives the command, stopped or killed. The first run on a machine installs the
runtime into its cache folder (about 2 minutes); later ones start in about 10 s.

It runs in the LocalStack run (.ci/localstack.sh, LOCALSTACK_ENDPOINT set), which CI runs beside
the main suite: a second LocalStack there, not a third JVM on the main suite's path."""

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

import boto3
import pytest

from groupcoord.local.localstack import find_python
from groupcoord.local.npm_engines import Missing

# A first run installs LocalStack's runtime with pip: generous, for a busy machine.
STARTUP_DEADLINE_S = 600.0
GONE_DEADLINE_S = 60.0


def _python_313_missing() -> str | None:
    try:
        find_python()
    except Missing as missing:
        return str(missing)
    return None


MISSING = _python_313_missing()
pytestmark = [
    pytest.mark.localstack,
    pytest.mark.skipif(
        not os.environ.get("LOCALSTACK_ENDPOINT"),
        reason="the LocalStack run's (LOCALSTACK_ENDPOINT)",
    ),
    pytest.mark.skipif(MISSING is not None, reason=f"no Python 3.13: {MISSING}"),
]


def _descendants(pid: int) -> set[int]:
    """Every process under `pid` (Linux: /proc)."""
    parents: dict[int, int] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        parents[int(stat.parent.name)] = int(fields[1])
    found, frontier = set(), {pid}
    while frontier:
        frontier = {child for child, parent in parents.items() if parent in frontier}
        found |= frontier
    return found


def _alive(pids: set[int]) -> set[int]:
    return {pid for pid in pids if Path(f"/proc/{pid}").exists()}


@pytest.fixture
def localstack(tmp_path: Path) -> Iterator[tuple[subprocess.Popen, str]]:
    url_file = tmp_path / "url"
    command = ["localstack", "--port", "0", "--url-file", str(url_file)]
    process = subprocess.Popen(
        [sys.executable, "-m", "groupcoord.cli", *command],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    deadline = time.monotonic() + STARTUP_DEADLINE_S
    while not (url_file.exists() and url_file.read_text().strip()):
        assert process.poll() is None, process.stdout.read() if process.stdout else ""
        assert time.monotonic() < deadline, "groupcoord localstack did not start"
        time.sleep(0.2)
    try:
        yield process, url_file.read_text().strip()
    finally:
        if process.poll() is None:
            process.kill()
        process.communicate()


def _client(service: str, url: str) -> Any:
    return boto3.client(
        service,
        endpoint_url=url,
        region_name="us-east-1",
        aws_access_key_id="test",
        aws_secret_access_key="test",
    )


def test_localstack_answers_dynamodb_and_kinesis_and_dies_with_the_command(
    localstack: tuple[subprocess.Popen, str],
) -> None:
    process, url = localstack
    assert url.startswith("http://127.0.0.1:")
    dynamodb, kinesis = _client("dynamodb", url), _client("kinesis", url)
    table = f"ls-{uuid.uuid4().hex[:8]}"
    dynamodb.create_table(
        TableName=table,
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
        BillingMode="PAY_PER_REQUEST",
    )
    dynamodb.put_item(TableName=table, Item={"pk": {"S": "a"}, "v": {"N": "1"}})
    assert dynamodb.get_item(TableName=table, Key={"pk": {"S": "a"}})["Item"]["v"] == {"N": "1"}
    stream = f"ls-{uuid.uuid4().hex[:8]}"
    kinesis.create_stream(StreamName=stream, ShardCount=1)
    kinesis.get_waiter("stream_exists").wait(
        StreamName=stream, WaiterConfig={"Delay": 0.2, "MaxAttempts": 300}
    )
    kinesis.put_record(StreamName=stream, PartitionKey="k", Data=b"hello")
    shard = kinesis.list_shards(StreamName=stream)["Shards"][0]["ShardId"]
    opened = kinesis.get_shard_iterator(
        StreamName=stream, ShardId=shard, ShardIteratorType="TRIM_HORIZON"
    )
    records = kinesis.get_records(ShardIterator=opened["ShardIterator"])["Records"]
    assert [r["Data"] for r in records] == [b"hello"]
    engines = _descendants(process.pid)
    assert len(engines) >= 3  # LocalStack, DynamoDB Local, kinesis-local
    os.kill(process.pid, signal.SIGKILL)
    deadline = time.monotonic() + GONE_DEADLINE_S
    while _alive(engines) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not _alive(engines), "LocalStack or an engine of it outlived the command"
