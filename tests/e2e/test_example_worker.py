"""examples/file_worker.py as a user runs it: two workers in their own processes share a
folder of partition files; every line is processed and its offset committed."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path

from groupcoord.client.transport import Transport
from tests.e2e.helpers import CONSUMER_SESSION_MS, unique, wait_until

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "file_worker.py"
PARTITIONS, LINES = 4, 30


def _committed(url: str, group: str, topic: str) -> dict[int, int]:
    body = Transport(url).call("offset-fetch", {"groups": [{"groupId": group}]}).body
    return {
        p["partitionIndex"]: p["committedOffset"]
        for t in body["groups"][0]["topics"]
        if t["name"] == topic
        for p in t["partitions"]
    }


def test_two_file_workers_process_and_commit_every_line(coordinator: str, tmp_path: Path) -> None:
    source = tmp_path / unique("lines")
    source.mkdir()
    expected = set()
    for p in range(PARTITIONS):
        lines = [f"record {p}/{n}" for n in range(LINES)]
        (source / f"{p}.txt").write_text("".join(line + "\n" for line in lines))
        expected |= {(p, n, line) for n, line in enumerate(lines)}
    group = unique("workers")

    workers = []
    for name in ("a", "b"):
        log = (tmp_path / f"{name}.log").open("w")
        command = [
            sys.executable, str(EXAMPLE), str(source), "--url", coordinator, "--group", group,
            "--name", name, "--delay", "0.02", "--batch", "5",
            "--output", str(tmp_path / f"{name}.jsonl"),
            "--session-timeout-ms", str(CONSUMER_SESSION_MS),
        ]  # fmt: skip
        workers.append((subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT), log))
    try:
        done = {p: LINES for p in range(PARTITIONS)}
        wait_until(
            lambda: _committed(coordinator, group, source.name) == done,
            60,
            "every line committed",
            interval_s=0.2,
        )
    finally:
        for process, _ in workers:
            process.send_signal(signal.SIGTERM)
        for process, log in workers:
            process.wait(timeout=30)
            log.close()
        logs = {name: (tmp_path / f"{name}.log").read_text() for name in ("a", "b")}
        print("\n".join(logs.values()))  # shown when the test fails
    for (process, _), (name, text) in zip(workers, logs.items(), strict=True):
        assert process.returncode == 0, text
        assert "Traceback" not in text, text
        assert f"[{name}] closed" in text, text
    processed = set()
    for name in ("a", "b"):
        path = tmp_path / f"{name}.jsonl"
        for row in path.read_text().splitlines() if path.exists() else []:
            record = json.loads(row)
            processed.add((record["partition"], record["offset"], record["line"]))
    assert processed == expected  # every line, at least once
    assert _committed(coordinator, group, source.name) == done
