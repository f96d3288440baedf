"""The dashboard in a real browser against `serve`'s /ui (and the standalone `groupcoord
dashboard` server), with live groups of every type: it lists them, shows a member joining and
leaving in the partition grid and the timeline, a streams group's tasks by role as they move,
and is usable from the keyboard. Each page is saved as a screenshot
(tests/browser/screenshots/) for review."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from groupcoord.client import StreamsMember
from groupcoord.dashboard.server import DashboardServer
from tests.support import classic_client
from tests.support.api import Api
from tests.support.classic_client import Consumer, Ownership
from tests.support.consumer import Member, create_topic, settle, unique, until
from tests.support.servers import InProcessCoordinator

from .conftest import SETTINGS, SHOWN_WITHIN_MS, screenshot

expect: Any
try:
    from playwright.sync_api import expect
except ImportError:  # the fixtures skip (or fail in CI) with the reason
    expect = None


pytestmark = pytest.mark.coordinator(SETTINGS, in_process=True)


@pytest.fixture(scope="module")
def live_groups(coordinator: InProcessCoordinator) -> Iterator[dict[str, str]]:
    """A classic group of two heartbeating consumers and a consumer group of two members
    with a committed offset."""
    api = Api(coordinator.url)
    topic = unique("orders")
    create_topic(api, topic, 4)
    classic_group, consumer_group = unique("payments-classic"), unique("billing-consumer")
    ownership = Ownership()
    classic = [
        Consumer(coordinator.url, classic_group, [topic], name=f"classic-{i}", ownership=ownership)
        for i in range(2)
    ]
    for c in classic:
        c.start()
    members = [Member(api, consumer_group, [topic]) for _ in range(2)]
    for m in members:
        m.join()
    settle(members)
    owner = next(m for m in members if m.owned)
    topic_id, partitions = next(iter(owner.owned.items()))
    committed = api.ok(
        "offset-commit",
        {
            "groupId": consumer_group,
            "memberId": owner.member_id,
            "generationIdOrMemberEpoch": owner.epoch,
            "topics": [
                {
                    "topicId": topic_id,
                    "partitions": [{"partitionIndex": min(partitions), "committedOffset": 42}],
                }
            ],
        },
    )
    assert committed["topics"][0]["partitions"][0]["errorCode"] == 0
    classic_client.settle(api, classic_group, classic, timeout_s=30)
    try:
        yield {"topic": topic, "classic": classic_group, "consumer": consumer_group}
    finally:
        for c in classic:
            c.close()
        for m in members:
            m.leave()


def test_the_overview_lists_the_live_groups(
    page: Any, coordinator: InProcessCoordinator, live_groups: dict[str, str]
) -> None:
    page.goto(f"{coordinator.url}/ui/")
    classic_row = page.locator(f"tr[data-group='{live_groups['classic']}']")
    consumer_row = page.locator(f"tr[data-group='{live_groups['consumer']}']")
    expect(classic_row).to_contain_text("classic")
    expect(classic_row).to_contain_text("Stable")
    expect(classic_row.locator("td.num").first).to_have_text("2")
    expect(consumer_row).to_contain_text("consumer")
    expect(consumer_row.locator("td.num").first).to_have_text("2")
    screenshot(page, "overview")

    # The search filters as one types, and the live refresh keeps the filter.
    page.fill("#search", "payments-classic")
    expect(consumer_row).to_be_hidden()
    expect(classic_row).to_be_visible()
    assert "q=payments-classic" in page.url

    # A classic group's page: its members, and the grid from their decoded assignments.
    page.goto(f"{coordinator.url}/ui/groups/{live_groups['classic']}")
    expect(page.locator("table.members tbody tr[data-member]")).to_have_count(2)
    expect(page.locator("li.cell")).to_have_count(4)
    expect(page.locator("li.cell.unowned")).to_have_count(0)
    screenshot(page, "classic-group")


def _owners(page: Any) -> set[str]:
    return set(page.eval_on_selector_all("li.cell", "cells => cells.map(c => c.dataset.owner)"))


def test_a_member_joining_then_leaving_shows_in_the_grid_and_the_timeline(
    page: Any, api: Api, coordinator: InProcessCoordinator
) -> None:
    topic = unique("events")
    create_topic(api, topic, 6)
    group = unique("watched")
    first = Member(api, group, [topic])
    first.join()
    settle([first])
    page.goto(f"{coordinator.url}/ui/groups/{group}")
    expect(page.locator("table.members tbody tr[data-member]")).to_have_count(1)
    expect(page.locator("li.cell[data-owner='M1']")).to_have_count(6)
    # The first member's join came before the page: the coordinator's record shows it.
    expect(page.locator("ol.timeline li.empty")).to_have_count(0)
    expect(page.locator("ol.timeline li")).to_have_count(1)
    expect(page.locator("ol.timeline li").first).to_contain_text("join")

    second = Member(api, group, [topic])
    second.join()
    settle([first, second])
    expect(page.locator("table.members tbody tr[data-member]")).to_have_count(2)
    page.wait_for_function(
        "() => new Set([...document.querySelectorAll('li.cell')].map(c => c.dataset.owner))"
        ".size === 2",
        timeout=SHOWN_WITHIN_MS,
    )
    assert _owners(page) == {"M1", "M2"}
    joined = page.locator("ol.timeline li", has=page.locator(".cause-join"))
    expect(joined).to_have_count(2)
    expect(joined.first).to_contain_text("joined:")
    screenshot(page, "group-after-join")

    second.leave()
    settle([first])
    expect(page.locator("table.members tbody tr[data-member]")).to_have_count(1)
    expect(page.locator("li.cell[data-owner='M1']")).to_have_count(6)
    left = page.locator("ol.timeline li", has=page.locator(".cause-leave"))
    expect(left).to_have_count(1)
    expect(left).to_contain_text("left:")
    # Newest first: the leave above the join.
    expect(page.locator("ol.timeline li").first).to_contain_text("leave")
    screenshot(page, "group-after-leave")
    first.leave()


def test_the_standalone_dashboard_works_from_the_keyboard(
    page: Any, coordinator: InProcessCoordinator, live_groups: dict[str, str]
) -> None:
    dashboard = DashboardServer(coordinator.url, port=0).start()
    try:
        page.goto(f"{dashboard.url}/")
        expect(page.locator(f"tr[data-group='{live_groups['consumer']}']")).to_be_visible()
        # The first Tab reaches the skip link, which moves focus to the content.
        page.keyboard.press("Tab")
        expect(page.locator("a.skip")).to_be_focused()
        page.keyboard.press("Enter")
        expect(page.locator("#main")).to_be_focused()
        # "/" jumps to the search; typing filters; Tab, Tab reaches the first shown group.
        page.keyboard.press("/")
        expect(page.locator("#search")).to_be_focused()
        page.keyboard.type(live_groups["consumer"][:16])
        page.keyboard.press("Tab")  # the Search button
        page.keyboard.press("Tab")
        link = page.locator(f"tr[data-group='{live_groups['consumer']}'] a")
        expect(link).to_be_focused()
        # A refresh that changes the list swaps its HTML (the focused link is replaced) and
        # keeps the focus where it was: a new group that matches the search (listed after the
        # focused one, in id order) shows only once a refresh has swapped the list in.
        focused = link.element_handle()
        newcomer = Member(
            Api(coordinator.url), f"{live_groups['consumer']}-new", [live_groups["topic"]]
        )
        newcomer.join()
        try:
            expect(page.locator(f"tr[data-group='{newcomer.group}']")).to_be_visible()
            assert not focused.evaluate("node => node.isConnected")  # a real swap happened
            expect(link).to_be_focused()
        finally:
            newcomer.leave()
        page.keyboard.press("Enter")
        expect(page).to_have_url(f"{dashboard.url}/groups/{live_groups['consumer']}")
        expect(page.locator("table.members tbody tr[data-member]")).to_have_count(2)
        expect(page.locator("table.offsets tbody")).to_contain_text("42")
        screenshot(page, "consumer-group")
        # The breadcrumb leads back, by keyboard too.
        page.locator("nav.crumbs a").focus()
        page.keyboard.press("Enter")
        expect(page).to_have_url(f"{dashboard.url}/")
    finally:
        dashboard.stop()


def _tasks(tasks: dict[str, frozenset[int]]) -> str:
    """A role's tasks as the page writes them: "subtopology: partitions"."""
    return " · ".join(f"{s}: {', '.join(map(str, sorted(ps)))}" for s, ps in sorted(tasks.items()))


def test_a_streams_group_shows_its_tasks_by_role(
    page: Any, api: Api, coordinator: InProcessCoordinator
) -> None:
    words = unique("clicks")
    create_topic(api, words, 4)
    counts = {"subtopologyId": "0", "sourceTopics": [words],
              "stateChangelogTopics": [{"name": f"{unique('app')}-counts-changelog"}]}  # fmt: skip
    group, topology = unique("sessions-streams"), {"epoch": 1, "subtopologies": [counts]}
    a = StreamsMember(coordinator.url, group, topology, process_id="process-a")
    b = StreamsMember(coordinator.url, group, topology, process_id="process-b")
    try:
        a.heartbeat()
        b.heartbeat()
        # b has no state yet: a keeps every task active, b warms up two of them and keeps a
        # standby of the other two (one standby replica).
        until(lambda: [m.heartbeat() for m in (a, b)] and b.tasks.warmup and b.tasks.standby)
        assert a.tasks.active == {"0": frozenset(range(4))} and not b.tasks.active
        page.goto(f"{coordinator.url}/ui/groups/{group}")
        expect(page.locator("table.tasks thead")).to_contain_text("ActiveStandbyWarm-up")
        rows = {m: page.locator("table.tasks tbody tr", has_text=m.process_id) for m in (a, b)}
        for m in (a, b):
            expect(rows[m].locator("td.active")).to_have_text(_tasks(m.tasks.active) or "-")
            expect(rows[m].locator("td.standby")).to_have_text(_tasks(m.tasks.standby) or "-")
            expect(rows[m].locator("td.warmup")).to_have_text(_tasks(m.tasks.warmup) or "-")
        # The grid: each source partition owned by the member whose active task reads it.
        expect(page.locator("li.cell")).to_have_count(4)
        screenshot(page, "streams-group-warming-up")

        # b reports its warm-ups caught up: they become its active tasks, live on the page.
        warming = b.tasks.warmup
        b.report_offsets({("0", p): 100 for p in range(4)}, {("0", p): 100 for p in range(4)})
        until(lambda: [m.heartbeat() for m in (a, b)] and b.tasks.active == warming)
        until(lambda: [m.heartbeat() for m in (a, b)] and len({a.epoch, b.epoch}) == 1)
        expect(rows[b].locator("td.active")).to_have_text(_tasks(warming))
        expect(rows[b].locator("td.warmup")).to_have_text("-")
        expect(rows[a].locator("td.standby")).to_have_text(_tasks(warming))
        expect(rows[a].locator("td.active")).to_have_text(_tasks(a.tasks.active))
        screenshot(page, "streams-group")
    finally:
        a.close()
        b.close()
