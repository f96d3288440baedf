"""A fresh dashboard page shows the rebalances that came before it was opened, from the
coordinator's own record (describe-group-activity's recentRebalances), not "No rebalance"."""

from __future__ import annotations

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


def test_a_fresh_page_shows_the_rebalances_before_it(
    page: Any, coordinator: InProcessCoordinator
) -> None:
    api = Api(coordinator.url)
    topic, group = unique("history"), unique("rebalanced")
    create_topic(api, topic, 4)
    first, second = Member(api, group, [topic]), Member(api, group, [topic])
    first.join()
    second.join()
    settle([first, second])
    second.leave()
    page.goto(f"{coordinator.url}/ui/groups/{group}")
    entries = page.locator("ol.timeline li")
    expect(entries).to_have_count(3)
    expect(entries.nth(0).locator(".epochs")).to_have_text("epoch 2 → 3")
    expect(entries.nth(0).locator(".cause")).to_have_text("leave")
    expect(entries.nth(0).locator(".details")).to_have_text("1 member")
    expect(entries.nth(1).locator(".cause")).to_have_text("join")
    expect(entries.nth(1).locator(".details")).to_have_text("2 members")
    expect(entries.nth(2).locator(".epochs")).to_have_text("epoch 1")
    expect(page.get_by_text("No rebalance")).to_have_count(0)
    screenshot(page, "rebalances-on-a-fresh-page")
    first.leave()
