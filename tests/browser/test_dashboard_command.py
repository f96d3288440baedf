"""`groupcoord dashboard` as a user starts it: the coordinator named as every other command
names it (GROUPCOORD_URL, or --url), never a silent read of port 8080; the old --endpoint
still works, with a note."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from tests.support.api import Api
from tests.support.consumer import Member, create_topic, settle, unique
from tests.support.servers import InProcessCoordinator

from .conftest import SETTINGS, screenshot

expect: Any
try:
    from playwright.sync_api import expect
except ImportError:  # the fixtures skip (or fail in CI) with the reason
    expect = None

pytestmark = pytest.mark.coordinator(SETTINGS, in_process=True)


@contextmanager
def dashboard_command(tmp_path: Path, *args: str, **env: str) -> Iterator[tuple[str, Any]]:
    """`groupcoord dashboard --port 0` in a process with `env` (no GROUPCOORD_* of this
    one's); yields its URL and the process."""
    url_file = tmp_path / "dashboard-url"
    url_file.unlink(missing_ok=True)
    clean = {k: v for k, v in os.environ.items() if not k.startswith("GROUPCOORD_")}
    command = [sys.executable, "-m", "groupcoord.cli", "dashboard", "--port", "0"]
    process = subprocess.Popen(
        [*command, "--url-file", str(url_file), *args],
        env={**clean, **env},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 30
        while not (url_file.exists() and url_file.read_text().strip()):
            assert process.poll() is None, process.communicate()
            assert time.monotonic() < deadline, "the dashboard did not start"
            time.sleep(0.1)
        yield url_file.read_text().strip(), process
    finally:
        process.terminate()
        process.wait(timeout=10)


@pytest.fixture(scope="module")
def watched(coordinator: InProcessCoordinator) -> Iterator[str]:
    api = Api(coordinator.url)
    topic = unique("urls")
    create_topic(api, topic, 2)
    member = Member(api, unique("by-url"), [topic])
    member.join()
    settle([member])
    try:
        yield member.group
    finally:
        member.leave()


def test_the_dashboard_reads_the_coordinator_groupcoord_url_names(
    page: Any, coordinator: InProcessCoordinator, watched: str, tmp_path: Path
) -> None:
    with dashboard_command(tmp_path, GROUPCOORD_URL=coordinator.url) as (url, _process):
        page.goto(f"{url}/")
        expect(page.locator(f"tr[data-group='{watched}']")).to_contain_text("consumer")
        screenshot(page, "dashboard-by-groupcoord-url")


def test_url_and_the_deprecated_endpoint_name_the_coordinator(
    page: Any, coordinator: InProcessCoordinator, watched: str, tmp_path: Path
) -> None:
    with dashboard_command(tmp_path, "--url", coordinator.url) as (url, _process):
        page.goto(f"{url}/")
        expect(page.locator(f"tr[data-group='{watched}']")).to_be_visible()
    with dashboard_command(tmp_path, "--endpoint", coordinator.url) as (url, process):
        page.goto(f"{url}/")
        expect(page.locator(f"tr[data-group='{watched}']")).to_be_visible()
    _out, err = process.communicate(timeout=10)
    assert "--endpoint is deprecated: use --url" in err
