"""Exactly-once counting under faults (docs/exactly-once.md), with examples/exactly_once_counts.py
as the workers, each its own process, against `serve` on the DynamoDB endpoint.

Every record of a known source adds 1 to its key's counter with DynamoDB's ADD, in the same
transaction as the batch's offset commit. Meanwhile one worker dies (SIGKILL) between
processing a batch and committing it, one freezes (SIGSTOP) there past its session timeout and
then wakes to commit as a zombie, one joins late and one leaves. At the end every counter is
exact: no loss, no duplicate. The twin runs the same faults with the writes made before a plain
commit (at-least-once) and finds the duplicates, which shows the check can fail.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from groupcoord.client.transport import Transport
from groupcoord.store.dynamo import make_client
from tests.e2e.helpers import (
    CLASSIC_HEARTBEAT_MS,
    CLASSIC_SESSION_MS,
    CONSUMER_SESSION_MS,
    SETTINGS,
    unique,
)
from tests.support.servers import running_serve

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "exactly_once_counts.py"
sys.path.insert(0, str(EXAMPLE.parent))
from exactly_once_counts import (  # noqa: E402 - the example is a script, not a package
    KEY,
    expected_counts,
)
from exactly_once_counts import table_counts as counts  # noqa: E402

PARTITIONS, RECORDS, KEYS, BATCH = 4, 120, 20, 10
DEADLINE_S = 120.0  # a generous bound for 2 busy cores; a run takes about 30 s


def wait_until(condition: Any, timeout_s: float, what: str, interval_s: float = 0.1) -> None:
    started = time.monotonic()
    deadline = started + timeout_s
    while time.monotonic() < deadline:
        if condition():
            print(f"{time.monotonic() - started:6.1f} s: {what}")
            return
        time.sleep(interval_s)
    raise AssertionError(f"timed out after {timeout_s:.0f} s waiting for {what}")


class Workers:
    """The example's worker processes of one run, and their logs."""

    def __init__(self, tmp: Path, common: list[str]) -> None:
        self.tmp = tmp
        self.common = common
        self.processes: dict[str, subprocess.Popen[bytes]] = {}

    def start(self, name: str, *extra: str) -> subprocess.Popen[bytes]:
        log = (self.tmp / f"{name}.log").open("wb")
        command = [sys.executable, str(EXAMPLE), *self.common, "--name", name, *extra]
        process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
        self.processes[name] = process
        return process

    def log(self, name: str) -> str:
        return (self.tmp / f"{name}.log").read_text(errors="replace")

    def stop_all(self) -> None:
        for process in self.processes.values():
            if process.poll() is None:
                process.send_signal(signal.SIGCONT)
                process.send_signal(signal.SIGTERM)
        for process in self.processes.values():
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        print("\n".join(f"--- {n}\n{self.log(n)}" for n in self.processes))  # on failure


def frozen(process: subprocess.Popen[bytes]) -> bool:
    """Whether the process is stopped (SIGSTOP): state T in /proc/<pid>/stat."""
    try:
        stat = Path(f"/proc/{process.pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] in ("T", "t")


def members(url: str, group: str, protocol: str) -> set[str]:
    """The client ids of the group's members, as the coordinator sees them."""
    transport = Transport(url)
    if protocol == "consumer":
        body = transport.call("consumer-group-describe", {"groupIds": [group]}).body
        return {m["clientId"] for m in body["groups"][0].get("members", [])}
    body = transport.call("describe-groups", {"groups": [group]}).body
    return {m["clientId"] for m in body["groups"][0].get("members", [])}


def committed(url: str, group: str, topic: str) -> dict[int, int]:
    body = (
        Transport(url)
        .call(
            "offset-fetch",
            {
                "groups": [
                    {
                        "groupId": group,
                        "topics": [{"name": topic, "partitionIndexes": list(range(PARTITIONS))}],
                    }
                ]
            },
        )
        .body
    )
    parts = body["groups"][0]["topics"][0]["partitions"]
    return {p["partitionIndex"]: p["committedOffset"] for p in parts}


@pytest.fixture(scope="module")
def sink_table() -> str:
    return unique("counts")


@pytest.fixture(scope="module")
def deployment(dynamodb_endpoint: str, sink_table: str) -> Iterator[tuple[str, Any]]:
    client = make_client(endpoint_url=dynamodb_endpoint)
    client.create_table(
        TableName=sink_table,
        KeySchema=[{"AttributeName": KEY, "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": KEY, "AttributeType": "S"}],
        BillingMode="PAY_PER_REQUEST",
    )
    settings = {**SETTINGS, "groupcoord.sink.tables": sink_table}
    with running_serve(dynamodb_endpoint, settings=settings) as url:
        yield url, client


def run_with_faults(
    url: str, client: Any, table: str, dynamodb_endpoint: str, tmp: Path, protocol: str, mode: str
) -> tuple[Counter[str], Counter[str]]:
    """One run of the faults; returns (counted, expected)."""
    group, topic, run_table = unique("counters"), unique("records"), table
    Transport(url).call("create-topics", {"topics": [{"name": topic, "numPartitions": PARTITIONS}]})
    # Each run counts into keys of its own (the key prefix), in the module's sink table.
    session_ms = CLASSIC_SESSION_MS if protocol == "classic" else CONSUMER_SESSION_MS
    common = [
        "--url", url, "--group", group, "--topic", topic, "--table", run_table,
        "--partitions", str(PARTITIONS), "--records", str(RECORDS), "--keys", str(KEYS),
        "--batch", str(BATCH), "--protocol", protocol,
        "--session-timeout-ms", str(session_ms),
        "--heartbeat-interval-ms", str(CLASSIC_HEARTBEAT_MS),
    ]  # fmt: skip
    if mode == "at-least-once":
        common += ["--at-least-once", "--dynamodb-endpoint", dynamodb_endpoint]
    before = counts(client, table)
    workers = Workers(tmp, common)
    try:
        # One at a time, so that each fault happens whatever the machine's speed: the crasher
        # owns every partition when it dies at its third batch, the zombie (alone once the
        # crasher's session ended) freezes at its fourth, and only then does another start.
        crasher = workers.start("crasher", "--crash-after-batches", "3")
        wait_until(lambda: crasher.poll() is not None, DEADLINE_S, "the crasher to die")
        assert crasher.returncode == -signal.SIGKILL, workers.log("crasher")
        zombie = workers.start("zombie", "--freeze-before-commit", "4")
        wait_until(lambda: frozen(zombie), DEADLINE_S, "the zombie to freeze")
        workers.start("steady")
        # The coordinator expels both (no leave: their sessions time out) and the others
        # take their partitions over.
        wait_until(
            lambda: not members(url, group, protocol) & {"crasher", "zombie"},
            DEADLINE_S,
            "the crasher and the zombie to be expelled",
        )
        latecomer = workers.start("latecomer")
        wait_until(lambda: "latecomer" in members(url, group, protocol), DEADLINE_S, "a join")
        zombie.send_signal(signal.SIGCONT)  # it commits the batch it froze on: a zombie commit
        wait_until(lambda: "thawed" in workers.log("zombie"), DEADLINE_S, "the zombie to wake")
        # Its commit of the batch it froze on is refused (in the twin, after its writes).
        wait_until(lambda: "fenced" in workers.log("zombie"), DEADLINE_S, "the zombie fenced")
        workers.processes["steady"].send_signal(signal.SIGTERM)  # leaves the group
        wait_until(
            lambda: committed(url, group, topic) == dict.fromkeys(range(PARTITIONS), RECORDS),
            DEADLINE_S,
            "every record committed",
            interval_s=0.3,
        )
        assert latecomer.poll() is None, workers.log("latecomer")
    finally:
        workers.stop_all()
    counted = counts(client, table) - before
    return counted, expected_counts(PARTITIONS, RECORDS, KEYS)


@pytest.mark.parametrize("protocol", ["consumer", "classic"])
def test_every_record_is_counted_exactly_once(
    deployment: tuple[str, Any],
    sink_table: str,
    dynamodb_endpoint: str,
    tmp_path: Path,
    protocol: str,
) -> None:
    url, client = deployment
    counted, expected = run_with_faults(
        url, client, sink_table, dynamodb_endpoint, tmp_path, protocol, "exactly-once"
    )
    assert counted == expected


def test_without_the_transaction_the_same_faults_count_twice(
    deployment: tuple[str, Any], sink_table: str, dynamodb_endpoint: str, tmp_path: Path
) -> None:
    url, client = deployment
    counted, expected = run_with_faults(
        url, client, sink_table, dynamodb_endpoint, tmp_path, "consumer", "at-least-once"
    )
    assert all(counted[k] >= expected[k] for k in expected)  # at least once: nothing lost
    duplicated = sum(counted.values()) - sum(expected.values())
    # The crasher's batch was written and never committed: its next owner counts it again.
    assert duplicated >= 1, (counted, expected)


def test_the_walk_through_sets_up_counts_and_verifies(
    dynamodb_endpoint: str, tmp_path: Path
) -> None:
    """examples/README.md's commands: --setup, a worker, --verify."""
    table, topic, group = unique("walk"), unique("records"), unique("counters")
    settings = {**SETTINGS, "groupcoord.sink.tables": table}
    with running_serve(dynamodb_endpoint, settings=settings) as url:
        common = [
            sys.executable, str(EXAMPLE), "--url", url, "--table", table, "--topic", topic,
            "--group", group, "--records", "40", "--partitions", str(PARTITIONS),
            "--dynamodb-endpoint", dynamodb_endpoint,
        ]  # fmt: skip
        setup = subprocess.run([*common, "--setup"], capture_output=True, text=True, timeout=60)
        assert setup.returncode == 0, setup.stdout + setup.stderr
        workers = Workers(tmp_path, common[2:])
        try:
            workers.start("solo")
            wait_until(
                lambda: committed(url, group, topic) == dict.fromkeys(range(PARTITIONS), 40),
                DEADLINE_S,
                "every record committed",
                interval_s=0.3,
            )
        finally:
            workers.stop_all()
        verify = subprocess.run([*common, "--verify"], capture_output=True, text=True, timeout=60)
        assert verify.returncode == 0, verify.stdout + verify.stderr
        assert "every counter is exact" in verify.stdout
