"""A standalone ZooKeeper for bench/push.py's side-by-side: a child process on 127.0.0.1 with a
temporary dataDir and a generated zoo.cfg (its defaults: tickTime 2000 ms), no system service.
It runs Debian's package (`apt-get install zookeeper`: the jars in /usr/share/java, each
naming its dependencies in its manifest), or the jar `GROUPCOORD_BENCH_ZOOKEEPER_JAR` names;
its members use kazoo (`pip install -e ".[bench]"`)."""

from __future__ import annotations

import functools
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

from groupcoord.local.loopback_child import LOOPBACK, die_with_parent, free_port

JAR_ENV = "GROUPCOORD_BENCH_ZOOKEEPER_JAR"
DEBIAN_JAR = Path("/usr/share/java/zookeeper.jar")
INSTALL = (
    "ZooKeeper's side-by-side needs Java, ZooKeeper (Debian: `apt-get install zookeeper`, or "
    f"${JAR_ENV} naming a zookeeper jar with its dependencies beside it) and kazoo "
    '(`pip install -e ".[bench]"`)'
)
STARTUP_S = 60.0


def missing() -> str | None:
    """Why ZooKeeper's side cannot run here (None: it can)."""
    problems = []
    if shutil.which("java") is None:
        problems.append("no java")
    if not _jar().exists():
        problems.append(f"no {_jar()}")
    try:
        import kazoo  # noqa: F401
    except ImportError:
        problems.append("no kazoo")
    return f"{', '.join(problems)}. {INSTALL}" if problems else None


def _jar() -> Path:
    return Path(os.environ.get(JAR_ENV) or DEBIAN_JAR)


def _answers(port: int) -> bool:
    """ZooKeeper's `srvr` four-letter word (allowed by default) answered."""
    try:
        with socket.create_connection((LOOPBACK, port), timeout=1) as conn:
            conn.sendall(b"srvr")
            return b"Zookeeper version" in conn.recv(256)
    except OSError:
        return False


@contextmanager
def running_zookeeper() -> Iterator[str]:
    """ZooKeeper for the block; yields its connection string (host:port)."""
    with tempfile.TemporaryDirectory(prefix="bench-zk-") as tmp:
        port = free_port()
        config = Path(tmp) / "zoo.cfg"
        config.write_text(
            f"tickTime=2000\ndataDir={tmp}/data\nclientPort={port}\n"
            f"clientPortAddress={LOOPBACK}\nadmin.enableServer=false\n"
        )
        log = open(Path(tmp) / "zookeeper.log", "w+")  # noqa: SIM115 - read back on failure
        command = ["java", "-cp", str(_jar()),
                   "org.apache.zookeeper.server.quorum.QuorumPeerMain", str(config)]  # fmt: skip
        process = subprocess.Popen(
            command,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            preexec_fn=functools.partial(die_with_parent) if sys.platform == "linux" else None,
        )
        try:
            deadline = time.monotonic() + STARTUP_S
            while not _answers(port):
                if process.poll() is not None or time.monotonic() > deadline:
                    log.seek(0)
                    raise RuntimeError(f"ZooKeeper did not start: {log.read()[-2000:]}")
                time.sleep(0.1)
            yield f"{LOOPBACK}:{port}"
        finally:
            process.terminate()
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
            log.close()
