"""kinesis-local as a child process: found, started on a free loopback port, stopped.

kinesis-local is kinesis-mock (the engine under LocalStack's Kinesis) built for Node.js: it
implements split, merge, UpdateShardCount, ShardFilter, null iterators at a closed shard's end
and ChildShards, which the Kinesis tests need (moto's Kinesis routes writes into closed parents
after a split). It comes from the npm package `kinesis-local`, found as every npm engine is
(npm_engines.py): GROUPCOORD_KINESIS_LOCAL_HOME (a folder where `npm ci` ran:
tools/kinesis-local, relative or absolute), then the working directory and its parents and
their `tools/kinesis-local`. It serves plain
HTTP on the port asked (its TLS port on another free one); boto3 reaches it through
`endpoint_url` or AWS_ENDPOINT_URL_KINESIS. The child dies with its parent on Linux, as
DynamoDB Local's does. Standard library only.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from .loopback_child import LoopbackChild, free_port
from .npm_engines import Missing, NpmEngine

NPM_PACKAGE = "kinesis-local@0.6.2"
HOME_ENV = "GROUPCOORD_KINESIS_LOCAL_HOME"
# Resharding and stream changes take this long to finish (kinesis-mock's default is 500 ms):
# short, so that the tests wait little, and not zero, so that UPDATING is seen as on AWS.
OPERATION_DURATION = "100ms"
_DURATIONS = (
    "CREATE_STREAM_DURATION",
    "DELETE_STREAM_DURATION",
    "MERGE_SHARDS_DURATION",
    "SPLIT_SHARD_DURATION",
    "UPDATE_SHARD_COUNT_DURATION",
)


ENGINE = NpmEngine("kinesis-local", "kinesis-local", NPM_PACKAGE, HOME_ENV, "tools/kinesis-local")


def _main_in(package: Path) -> Path | None:
    main = package / "main.js"
    return main if main.is_file() else None


def find_main() -> Path:
    """kinesis-local's main.js (absolute), or Missing."""
    return ENGINE.find(_main_in)


def find_node() -> str:
    found = shutil.which("node")
    if found is None:
        raise Missing("kinesis-local runs on Node.js (20 or later): there is no `node` on PATH")
    return found


class KinesisLocal(LoopbackChild):
    """One kinesis-local process on a loopback port (0: a free one), in memory."""

    name = "kinesis-local"

    def __init__(self, port: int = 0) -> None:
        self.main = find_main()
        self.node = find_node()
        super().__init__(port)

    def cwd(self) -> Path:
        return self.main.parent

    def command(self) -> list[str]:
        return [self.node, str(self.main)]

    def env(self) -> dict[str, str]:
        env = {
            **os.environ,
            "KINESIS_MOCK_PLAIN_PORT": str(self.port),
            "KINESIS_MOCK_TLS_PORT": str(free_port()),
            "LOG_LEVEL": "WARN",
            "SHARD_LIMIT": "20000",
        }
        env.update(dict.fromkeys(_DURATIONS, OPERATION_DURATION))
        return env


@contextmanager
def running_kinesis_local(port: int = 0) -> Iterator[str]:
    """kinesis-local for the block; yields its URL."""
    local = KinesisLocal(port).start()
    try:
        yield local.url
    finally:
        local.stop()
