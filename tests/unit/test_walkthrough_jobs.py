"""The shell walk-throughs kill the process their comments say: in each `sh` block of the
examples' README and the docs, `kill ... %N` is the N-th command the block sent to the
background, and the worker or counter its comment names is that command's."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", ROOT / "examples" / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
BLOCK = re.compile(r"```sh\n(.*?)```", re.S)
KILL = re.compile(r"\bkill\b[^#%]*%(\d+)[^#]*#\s*(.*)")
NAMED = re.compile(r"\b(?:worker|counter) (\w+)")


def _commands(block: str) -> list[str]:
    """The block's commands, continuation lines joined."""
    return block.replace("\\\n", " ").splitlines()


def _kills() -> list[tuple[str, list[str], int, str]]:
    found = []
    for page in PAGES:
        for block in BLOCK.findall(page.read_text()):
            jobs: list[str] = []
            for command in _commands(block):
                code = command.split("#", 1)[0].rstrip()
                if code.endswith("&") and not code.endswith("&&"):
                    jobs.append(code)
                killed = KILL.search(command)
                if killed:
                    found.append((page.name, list(jobs), int(killed[1]), killed[2]))
    return found


def test_each_kill_by_job_number_hits_the_process_its_comment_names() -> None:
    kills = _kills()
    assert kills, "no walk-through kills a job: the check sees nothing"
    for page, jobs, number, comment in kills:
        assert 1 <= number <= len(jobs), (page, number, jobs)
        named = NAMED.search(comment)
        assert named, f"{page}: `kill %{number}`'s comment names no worker or counter: {comment}"
        name = named[1]
        job = jobs[number - 1]
        assert re.search(rf"--name {name}\b|-{name}\b", job), (page, comment, job)
