"""Real servers for the tests: the DynamoDB endpoint and `groupcoord serve` as a process."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

STARTUP_DEADLINE_S = 60

# Consumer-protocol targets installed at once instead of batched in time (KIP-1263's
# group.consumer.assignment.interval.ms): for tests that drive the protocol step by step.
IMMEDIATE_INSTALLS = {"group.consumer.assignment.interval.ms": "0"}


def unique_table() -> str:
    return f"gc-test-{uuid.uuid4().hex[:12]}"


def _wait_for_file(path: Path, process: subprocess.Popen, what: str) -> str:
    deadline = time.monotonic() + STARTUP_DEADLINE_S
    while time.monotonic() < deadline:
        if path.exists() and path.read_text().strip():
            return path.read_text().strip()
        if process.poll() is not None:
            raise RuntimeError(f"{what} exited early with {process.returncode}")
        time.sleep(0.05)
    raise RuntimeError(f"{what} did not start within {STARTUP_DEADLINE_S}s")


@contextmanager
def running_dynamodb() -> Iterator[str]:
    """The serialized moto DynamoDB endpoint as a process; yields its URL."""
    with tempfile.TemporaryDirectory() as tmp:
        url_file = Path(tmp) / "url"
        args = [sys.executable, "-m", "groupcoord.local.dynamodb", "--url-file", str(url_file)]
        process = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            yield _wait_for_file(url_file, process, "moto DynamoDB")
        finally:
            process.terminate()
            process.wait(timeout=10)


@contextmanager
def running_serve(
    dynamodb_endpoint: str | None,
    settings: dict[str, str] | None = None,
    table: str | None = None,
    extra_args: Sequence[str] = (),
) -> Iterator[str]:
    """`groupcoord serve` on a free loopback port; yields its base URL (without /v1). On the
    DynamoDB endpoint given, else on the store's in-memory adapter (`--store memory`)."""
    settings = {"groupcoord.table.name": table or unique_table(), **(settings or {})}
    with tempfile.TemporaryDirectory() as tmp:
        url_file = Path(tmp) / "url"
        log = open(Path(tmp) / "serve.log", "w+")  # noqa: SIM115 - read back on failure
        args = [
            sys.executable,
            "-m",
            "groupcoord.cli",
            "serve",
            "--port",
            "0",
            "--url-file",
            str(url_file),
            *(
                ["--dynamodb-endpoint", dynamodb_endpoint]
                if dynamodb_endpoint
                else ["--store", "memory"]
            ),
            *extra_args,
        ]
        for name, value in settings.items():
            args += ["-c", f"{name}={value}"]
        env = {**os.environ, "AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing"}
        env.setdefault("AWS_DEFAULT_REGION", "us-east-1")
        process = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT, env=env)
        try:
            url = _wait_for_file(url_file, process, "groupcoord serve")
            yield url
        except Exception:
            log.seek(0)
            sys.stderr.write(log.read())
            raise
        finally:
            process.terminate()
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
            # A 500 is always a bug of ours: show its traceback with the test's output.
            log.seek(0)
            for line in log:
                if '"unhandled error"' in line:
                    sys.stderr.write(line)
            log.close()
