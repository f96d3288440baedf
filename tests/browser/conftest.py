"""Browser tests of `groupcoord dashboard`: Debian's Chromium, headless, driven by Playwright
(never `playwright install`: its browser download is not used). Without Chromium or Playwright
the tests skip with the reason, except in CI (CI=true), where that is a failure: .ci/run
installs Chromium."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.servers import IMMEDIATE_INSTALLS

CHROMIUM = Path(os.environ.get("GROUPCOORD_CHROMIUM", "/usr/bin/chromium"))
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
# A laptop screen.
VIEWPORT = {"width": 1366, "height": 768}
# Saved for review by every run (git-ignored); docs/images/ holds a copy for the README.
SCREENSHOTS = Path(__file__).resolve().parent / "screenshots"
# How long the page may take to show a change: a few of its 2 s refreshes.
SHOWN_WITHIN_MS = 20_000

SETTINGS = {
    **IMMEDIATE_INSTALLS,
    "group.initial.rebalance.delay.ms": "0",
    "groupcoord.sweep.interval.ms": "200",
    # Streams groups: tasks at once, one standby replica (warm-ups as Kafka's defaults).
    "group.streams.initial.rebalance.delay.ms": "0",
    "group.streams.assignment.interval.ms": "0",
    "group.streams.num.standby.replicas": "1",
}


def _unavailable(reason: str) -> None:
    if os.environ.get("CI") == "true":
        pytest.fail(f"{reason} (CI must run the browser tests: .ci/run installs chromium)")
    pytest.skip(reason)


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """A Chromium context with a fresh profile, for the module."""
    try:
        from playwright.sync_api import expect, sync_playwright
    except ImportError:
        _unavailable("playwright is not installed (pip install -e '.[dev]')")
    if not CHROMIUM.exists():
        _unavailable(f"no Chromium at {CHROMIUM} (apt-get install chromium)")
    profile = tmp_path_factory.mktemp("chromium-profile")
    with sync_playwright() as playwright:
        context = playwright.chromium.launch_persistent_context(
            str(profile),
            executable_path=str(CHROMIUM),
            headless=True,
            args=CHROMIUM_ARGS,
            viewport=VIEWPORT,
        )
        context.set_default_timeout(SHOWN_WITHIN_MS)
        # expect()'s own default is 5 s, about two refreshes: too short on busy cores (a run
        # under load missed a new group's row by it), so assertions wait as long as actions.
        expect.set_options(timeout=SHOWN_WITHIN_MS)
        try:
            yield context
        finally:
            context.close()


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    page = browser.new_page()
    try:
        yield page
    finally:
        page.close()


def screenshot(page: Any, name: str) -> Path:
    SCREENSHOTS.mkdir(exist_ok=True)
    path = SCREENSHOTS / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)
    return path
