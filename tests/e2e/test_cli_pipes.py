"""`groupcoord ... | head`: a reader that goes away ends the command quietly (no
BrokenPipeError traceback), with SIGPIPE's status as a Unix tool's."""

from __future__ import annotations

import signal
import subprocess
import sys


def test_a_closed_pipe_ends_the_command_without_a_traceback(coordinator: str) -> None:
    process = subprocess.Popen(
        [sys.executable, "-m", "groupcoord.cli", "topics", "list", "--json", "--url", coordinator],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None
    process.stdout.close()  # as `head` does once it has read enough: before anything is written
    _, err = process.communicate(timeout=60)
    assert "Traceback" not in err and "BrokenPipeError" not in err, err
    assert process.returncode == 128 + signal.SIGPIPE
