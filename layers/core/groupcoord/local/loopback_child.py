"""A local engine as a child process on a loopback port (DynamoDB Local, kinesis-local):
started on a free port (another one if that was taken meanwhile), waited for until it answers
HTTP, stopped with its parent. Standard library only.
"""

from __future__ import annotations

import ctypes
import functools
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Self

LOOPBACK = "127.0.0.1"
STARTUP_DEADLINE_S = 60.0
STOP_DEADLINE_S = 10.0
_PR_SET_PDEATHSIG = 1


def die_with_parent(signal_number: int = signal.SIGKILL) -> None:
    """In the child, before exec: be sent this signal when the parent dies (Linux)."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(_PR_SET_PDEATHSIG, int(signal_number), 0, 0, 0)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind((LOOPBACK, 0))
        return probe.getsockname()[1]


def answers(port: int) -> bool:
    """Whether an HTTP server answers on the port (any status: the engine is up)."""
    try:
        with socket.create_connection((LOOPBACK, port), timeout=1) as conn:
            conn.sendall(b"GET / HTTP/1.0\r\nHost: localhost\r\n\r\n")
            return conn.recv(16).startswith(b"HTTP/")
    except OSError:
        return False


class LoopbackChild:
    """One engine process on a loopback port (0: a free one). A subclass names the engine
    and says how to run it on `self.port`."""

    name = "the engine"
    # What the engine prints when its port was taken between our probe and its bind.
    port_taken = "in use"
    # What it is sent when its parent dies: SIGKILL, unless it has children of its own to stop.
    death_signal = signal.SIGKILL

    def __init__(self, port: int = 0) -> None:
        self.asked_port = port
        self.port = port
        self.process: subprocess.Popen | None = None
        self._log = tempfile.TemporaryFile()  # noqa: SIM115 - closed by stop()

    @property
    def url(self) -> str:
        return f"http://{LOOPBACK}:{self.port}"

    def command(self) -> list[str]:
        raise NotImplementedError

    def cwd(self) -> Path:
        raise NotImplementedError

    def env(self) -> dict[str, str] | None:
        return None  # the parent's

    def start(self) -> Self:
        """Start it and wait until it answers (a free port taken meanwhile: another one)."""
        for _ in range(3 if self.asked_port == 0 else 1):
            self.port = self.asked_port or free_port()
            self.process = subprocess.Popen(
                self.command(),
                cwd=self.cwd(),
                env=self.env(),
                stdin=subprocess.DEVNULL,
                stdout=self._log,
                stderr=subprocess.STDOUT,
                preexec_fn=functools.partial(die_with_parent, self.death_signal)
                if sys.platform == "linux"
                else None,
            )
            if self._wait_until_up():
                return self
        raise RuntimeError(f"{self.name} did not start: {self._output()}")

    def _wait_until_up(self) -> bool:
        assert self.process is not None
        deadline = time.monotonic() + STARTUP_DEADLINE_S
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                output = self._output()
                if self.port_taken in output and self.asked_port == 0:
                    return False
                raise RuntimeError(f"{self.name} exited with {self.process.returncode}: {output}")
            if answers(self.port):
                return True
            time.sleep(0.1)
        self.stop()
        raise RuntimeError(f"{self.name} did not answer within {STARTUP_DEADLINE_S:.0f} s")

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
