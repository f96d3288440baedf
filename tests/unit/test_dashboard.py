"""The dashboard without a browser: the timeline's inferred causes, the page shaping, and
the app's guards (read only, own host only, no inline code)."""

from __future__ import annotations

from typing import Any

from werkzeug.test import Client

from groupcoord.dashboard.app import Dashboard
from groupcoord.dashboard.source import GroupDetail, Overview, is_loopback
from groupcoord.dashboard.timeline import (
    EXPIRY,
    JOIN,
    LEAVE,
    OTHER,
    TOPIC_CHANGE,
    Snapshot,
    Timeline,
)
from groupcoord.dashboard.views import duration, group_page


def member(member_id: str, deadline: int = 10_000, client: str = "c") -> dict[str, Any]:
    return {"memberId": member_id, "clientId": client, "sessionDeadlineMs": deadline}


def group(epoch: int, members: list[dict[str, Any]], partitions: int = 4, **extra: Any) -> dict:
    return {
        "groupId": "g",
        "groupType": "consumer",
        "epoch": epoch,
        "members": members,
        "subscribedTopics": ["t"],
        "partitions": [{"topicName": "t", "partitionIndex": p} for p in range(partitions)],
        **extra,
    }


def test_a_new_member_at_a_new_epoch_is_a_join() -> None:
    timeline = Timeline()
    assert timeline.observe(Snapshot.of(group(1, [member("a")]), 1000)) is None
    entry = timeline.observe(Snapshot.of(group(2, [member("a"), member("b")]), 2000))
    assert entry is not None and entry.causes == (JOIN,)
    assert [m.member_id for m in entry.joined] == ["b"]
    assert (entry.from_epoch, entry.to_epoch) == (1, 2)


def test_a_member_gone_before_its_deadline_left_and_after_it_expired() -> None:
    timeline = Timeline()
    timeline.observe(Snapshot.of(group(3, [member("a", 5000), member("b", 9000)]), 1000))
    # a's deadline passed before we noticed it gone; b's had not.
    entry = timeline.observe(Snapshot.of(group(5, []), 6000))
    assert entry is not None and entry.causes == (LEAVE, EXPIRY)
    assert [m.member_id for m in entry.left] == ["b"]
    assert [m.member_id for m in entry.expired] == ["a"]


def test_the_latest_deadline_seen_decides_an_expiry() -> None:
    timeline = Timeline()
    timeline.observe(Snapshot.of(group(1, [member("a", 5000)]), 1000))
    timeline.observe(Snapshot.of(group(1, [member("a", 9000)]), 4000))  # it heartbeated
    entry = timeline.observe(Snapshot.of(group(2, []), 6000))
    assert entry is not None and entry.causes == (LEAVE,)


def test_a_classic_join_registered_before_the_generation_moves_is_still_a_join() -> None:
    timeline = Timeline()
    timeline.observe(Snapshot.of(group(1, [member("a")]), 1000))
    # The joiner shows up a poll before the barrier completes.
    assert timeline.observe(Snapshot.of(group(1, [member("a"), member("b")]), 2000)) is None
    entry = timeline.observe(Snapshot.of(group(2, [member("a"), member("b")]), 3000))
    assert entry is not None and entry.causes == (JOIN,)


def test_a_partition_count_change_is_a_topic_change_and_else_other() -> None:
    timeline = Timeline()
    timeline.observe(Snapshot.of(group(1, [member("a")]), 1000))
    entry = timeline.observe(Snapshot.of(group(2, [member("a")], partitions=8), 2000))
    assert entry is not None and entry.causes == (TOPIC_CHANGE,)
    entry = timeline.observe(Snapshot.of(group(3, [member("a")], partitions=8), 3000))
    assert entry is not None and entry.causes == (OTHER,)


def test_the_timeline_keeps_a_bounded_window() -> None:
    timeline = Timeline(window=3)
    for epoch in range(10):
        timeline.observe(Snapshot.of(group(epoch, [member("a")]), 1000 * epoch))
    assert [e.to_epoch for e in timeline.newest_first()] == [9, 8, 7]


def test_durations_read_short() -> None:
    assert duration(850) == "850 ms"
    assert duration(4200) == "4.2 s"
    assert duration(185_000) == "3 min 5 s"
    assert duration(2 * 3_600_000 + 240_000) == "2 h 4 min"


def test_the_group_page_labels_members_and_marks_moving_and_revoked_partitions() -> None:
    detail = group(2, [member("b", 500), member("a", 9000)], partitions=0)
    detail["partitions"] = [
        {"topicName": "t", "partitionIndex": 0, "owner": "a", "targetMember": "a",
         "lagMs": 65_000},
        {"topicName": "t", "partitionIndex": 1, "owner": "a", "revokingMember": "a",
         "targetMember": "b", "committedOffset": 7, "commitTimestampMs": 1000},
        {"topicName": "t", "partitionIndex": 2},
    ]  # fmt: skip
    page = group_page(GroupDetail(detail, now_ms=1000, timeline=Timeline()))
    assert [(r.label, r.member["memberId"], r.overdue) for r in page.members] == [
        ("M1", "a", False),
        ("M2", "b", True),
    ]
    cells = page.topics[0].cells
    assert (cells[0].owner, cells[0].moving) == ("M1", False)
    assert cells[0].behind == "1 min 5 s behind" and "1 min 5 s behind" in cells[0].title
    assert cells[1].behind is None
    assert (cells[1].revoking, cells[1].target, cells[1].moving) == ("M1", "M2", True)
    assert cells[2].owner is None
    assert [(o.partition, o.offset) for o in page.offsets] == [(1, 7)]


def test_loopback_endpoints_are_not_signed_by_default() -> None:
    assert is_loopback("http://127.0.0.1:8080") and is_loopback("http://localhost:1")
    assert is_loopback("http://[::1]:8080")
    assert not is_loopback("https://abc.execute-api.eu-west-1.amazonaws.com")


class FakeSource:
    endpoint = "http://127.0.0.1:1"

    def overview(self, search: str = "") -> Overview:
        groups = [{"groupId": "<b>x</b>", "groupType": "classic", "groupState": "Empty"}]
        return Overview(groups=groups, total=1, now_ms=1)

    def group(self, group_id: str) -> GroupDetail:
        return GroupDetail(group(1, [member("a")]), now_ms=1, timeline=Timeline())


def client() -> Client:
    return Client(Dashboard(FakeSource(), allowed_hosts={"127.0.0.1:9"}))  # type: ignore[arg-type]


def test_pages_escape_what_the_coordinator_says_and_allow_no_inline_code() -> None:
    answer = client().get("/", headers={"Host": "127.0.0.1:9"})
    assert answer.status_code == 200
    html = answer.get_data(as_text=True)
    assert "<b>x</b>" not in html and "&lt;b&gt;x&lt;/b&gt;" in html
    assert "script-src 'self'" in answer.headers["Content-Security-Policy"]
    assert "<script>" not in html  # the one script is a file


def test_only_the_served_host_name_is_answered() -> None:
    assert client().get("/", headers={"Host": "evil.example:9"}).status_code == 421


def test_nothing_but_reads() -> None:
    assert client().post("/", headers={"Host": "127.0.0.1:9"}).status_code == 405


def test_static_files_are_the_shipped_ones_only() -> None:
    ok = client().get("/static/dashboard.js", headers={"Host": "127.0.0.1:9"})
    assert ok.status_code == 200 and ok.mimetype == "text/javascript"
    assert client().get("/static/..%2fapp.py", headers={"Host": "127.0.0.1:9"}).status_code == 404


def test_a_streams_group_page_shows_tasks_by_role() -> None:
    streams = member("a") | {
        "processId": "p1",
        "activeTasks": [{"subtopologyId": "0", "partitions": [0, 1]}],
        "standbyTasks": [{"subtopologyId": "1", "partitions": [2]}],
        "warmupTasks": [],
    }
    detail = group(3, [streams, member("b")], partitions=0, groupType="streams")
    page = group_page(GroupDetail(detail, now_ms=1000, timeline=Timeline()))
    assert [(t.label, t.process, t.active, t.standby, t.warmup) for t in page.tasks] == [
        ("M1", "p1", "0: 0, 1", "1: 2", "-")
    ]


class StreamsSource(FakeSource):
    def group(self, group_id: str) -> GroupDetail:
        streams = member("a") | {
            "processId": "p1",
            "activeTasks": [{"subtopologyId": "0", "partitions": [3]}],
            "standbyTasks": [],
            "warmupTasks": [{"subtopologyId": "0", "partitions": [1]}],
        }
        detail = group(1, [streams], groupType="streams", errorCode=0)
        return GroupDetail(detail, now_ms=1, timeline=Timeline())


def test_the_streams_group_page_renders_its_tasks_table() -> None:
    dashboard = Dashboard(StreamsSource(), allowed_hosts={"127.0.0.1:9"})  # type: ignore[arg-type]
    answer = Client(dashboard).get("/groups/g", headers={"Host": "127.0.0.1:9"})
    html = answer.get_data(as_text=True)
    assert answer.status_code == 200 and 'id="tasks-h"' in html
    assert "0: 3" in html and "0: 1" in html


def test_a_members_label_is_kept_for_its_life_whoever_joins() -> None:
    timeline = Timeline()
    timeline.observe(Snapshot.of(group(1, [member("m"), member("n")]), 1000))
    # "a" sorts before both: it must not take their labels.
    joined = group(2, [member("m"), member("n"), member("a")])
    timeline.observe(Snapshot.of(joined, 2000))
    page = group_page(GroupDetail(joined, now_ms=2000, timeline=timeline))
    assert [(r.label, r.member["memberId"]) for r in page.members] == [
        ("M1", "m"),
        ("M2", "n"),
        ("M3", "a"),
    ]
    # "m" leaves: nobody is renumbered, and its label is not given again.
    timeline.observe(Snapshot.of(group(3, [member("n"), member("a"), member("b")]), 3000))
    assert timeline.labels_for(["n", "a", "b"]) == {
        "m": "M1",  # still named by the timeline's entry of its leave
        "n": "M2",
        "a": "M3",
        "b": "M4",
    }


def test_the_rebalances_shown_are_the_coordinators_record_with_the_members_seen() -> None:
    """A fresh page shows the coordinator's record; a move the dashboard saw too names its
    members; what the dashboard saw before the record's oldest follows."""
    timeline = Timeline()
    timeline.observe(Snapshot.of(group(1, [member("a")]), 100))
    timeline.observe(Snapshot.of(group(2, [member("a")]), 200))  # before the record's oldest
    timeline.observe(Snapshot.of(group(3, [member("a"), member("b")]), 300))
    recorded = [
        {"epoch": 3, "atMs": 290_000, "cause": "join", "memberCount": 2},
        {"epoch": 4, "atMs": 400_000, "cause": "leave", "memberCount": 1},
    ]
    fresh = group_page(GroupDetail(group(4, [member("a")], recentRebalances=recorded),
                                   now_ms=500_000, timeline=Timeline()))  # fmt: skip
    assert [(t.epochs, t.causes, t.details) for t in fresh.timeline] == [
        ("3 → 4", ("leave",), "1 member"),
        ("3", ("join",), "2 members"),
    ]
    now = group(3, [member("a"), member("b")], recentRebalances=recorded)
    watched = group_page(GroupDetail(now, now_ms=500_000, timeline=timeline))
    assert [(t.epochs, t.causes, t.details) for t in watched.timeline] == [
        ("3 → 4", ("leave",), "1 member"),
        ("3", ("join",), "2 members; joined: M2 (c)"),
        ("1 → 2", (OTHER,), ""),
    ]
