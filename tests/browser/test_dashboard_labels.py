"""A member's label on the dashboard is kept for its life: one that joins while the page is
open gets the next label, and nobody is renumbered (M2 does not become M3 while you watch)."""

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


def test_a_joining_member_renumbers_nobody(page: Any, coordinator: InProcessCoordinator) -> None:
    api = Api(coordinator.url)
    topic, group = unique("labels"), unique("labelled")
    create_topic(api, topic, 4)
    first = Member(api, group, [topic])
    first.member_id = "ffffffff-" + first.member_id[9:]  # sorts after any newcomer
    first.join()
    settle([first])
    page.goto(f"{coordinator.url}/ui/groups/{group}")
    row = page.locator(f"tr[data-member='{first.member_id}'] .label")
    expect(row).to_have_text("M1")
    second = Member(api, group, [topic])
    second.member_id = "00000000-" + second.member_id[9:]  # sorts before it
    second.join()
    try:
        settle([first, second])
        newcomer = page.locator(f"tr[data-member='{second.member_id}'] .label")
        expect(newcomer).to_have_text("M2")
        expect(row).to_have_text("M1")
        expect(page.locator("table.members tbody tr[data-member]").first).to_have_attribute(
            "data-member", first.member_id
        )
        screenshot(page, "labels-kept")
    finally:
        second.leave()
        first.leave()
