"""kafka-consumer-groups.sh parity of the admin CLI against a live serve: `describe
--all-groups`, `--members`, `--state`; offsets show's column names (CURRENT-OFFSET) and the
lag its owners reported (LAG-MS); a classic group's generation as the dashboard shows it."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.e2e.helpers import unique
from tests.support import classic_client
from tests.support.admin_cli import cli_fixture
from tests.support.api import Api
from tests.support.classic_client import Consumer, Ownership
from tests.support.consumer import Member, create_topic, settle

cli = cli_fixture("coordinator")


@pytest.fixture(scope="module")
def lagging(coordinator: str) -> Iterator[tuple[str, str, Member]]:
    """A consumer group of one member, 7.5 s behind on partition 1 of its topic."""
    api = Api(coordinator)
    topic, group = unique("parity"), unique("parity-group")
    create_topic(api, topic, 2)
    member = Member(api, group, [topic])
    member.join()
    settle([member])
    (topic_id,) = member.owned
    lags = [{"topicId": topic_id, "partitions": [{"partition": 1, "lagMs": 7500}]}]
    assert member.heartbeat(partitionLags=lags)["errorCode"] == 0
    try:
        yield group, topic, member
    finally:
        member.leave()


def test_offsets_show_has_kafkas_columns_and_the_reported_lag(
    cli: Any, lagging: tuple[str, str, Member]
) -> None:
    group, _topic, member = lagging
    lines = cli("offsets", "show", group).out.splitlines()
    assert lines[0].split() == [
        "TOPIC", "PARTITION", "CURRENT-OFFSET", "METADATA", "MEMBER-ID", "CLIENT-ID", "HOST",
        "LAG-MS",
    ]  # fmt: skip
    assert [line.split()[-1] for line in lines[1:]] == ["-", "7500"]
    offsets = cli("offsets", "show", group, "--json").json()["offsets"]
    assert [(o["partition"], o["lagMs"], o["memberId"]) for o in offsets] == [
        (0, None, member.member_id),
        (1, 7500, member.member_id),
    ]


def test_describe_all_groups_members_and_state(cli: Any, lagging: tuple[str, str, Member]) -> None:
    group, _topic, member = lagging
    every = cli("groups", "describe", "--all-groups", "--json").json()["groups"]
    assert group in [g["groupId"] for g in every]
    state = cli("groups", "describe", group, "--state").out.strip().splitlines()
    assert state[0].split()[:3] == ["GROUP", "TYPE", "STATE"] and len(state) == 2
    members = cli("groups", "describe", group, "--members").out.strip().splitlines()
    assert members[0].split()[0] == "MEMBER-ID" and members[1].split()[0] == member.member_id
    cli("groups", "describe").refused("--all-groups")


def test_a_classic_groups_generation_is_the_dashboards(cli: Any, coordinator: str) -> None:
    api = Api(coordinator)
    topic, group = unique("gen"), unique("classic-gen")
    create_topic(api, topic, 2)
    consumers = [
        Consumer(coordinator, group, [topic], name=f"c{i}", ownership=Ownership()) for i in range(2)
    ]
    for c in consumers:
        c.start()
    try:
        classic_client.settle(api, group, consumers, timeout_s=30)
        activity = api.ok("describe-group-activity", {"groupIds": [group]})["groups"][0]
        described = cli("groups", "describe", group, "--json").json()["groups"][0]
        assert described["type"] == "classic"
        assert described["epoch"] == activity["epoch"] >= 1
    finally:
        for c in consumers:
            c.close()


def test_offsets_reset_shift_by(cli: Any, coordinator: str) -> None:
    api = Api(coordinator)
    topic, group = unique("shift"), unique("shifted")
    create_topic(api, topic, 2)
    member = Member(api, group, [topic])
    member.join()
    settle([member])
    (topic_id,) = member.owned
    committed = api.ok(
        "offset-commit",
        {
            "groupId": group, "memberId": member.member_id,
            "generationIdOrMemberEpoch": member.epoch,
            "topics": [{"topicId": topic_id,
                        "partitions": [{"partitionIndex": 0, "committedOffset": 10}]}],
        },
    )  # fmt: skip
    assert committed["topics"][0]["partitions"][0]["errorCode"] == 0
    member.leave()
    args = ["offsets", "reset", group, "--topic", topic, "--shift-by", "-3"]
    plan = cli(*args, "--dry-run", "--json").json()["plan"]
    assert [(s["partition"], s["currentOffset"], s["newOffset"]) for s in plan] == [
        (0, 10, 7),
        (1, None, 0),  # nothing committed: from 0, never below it
    ]
    assert cli(*args).code == 0
    shown = cli("offsets", "show", group, "--json").json()["offsets"]
    assert [(o["partition"], o["offset"]) for o in shown] == [(0, 7), (1, 0)]
    cli(*args, "--to-earliest").refused("--shift-by N")


def test_offsets_reset_to_datetime_says_why_it_cannot(cli: Any) -> None:
    args = ["offsets", "reset", unique("g"), "--all-topics", "--to-datetime", "2026-12-01T00:00"]
    cli(*args).refused("keeps no log", "--to-offset N", "--to-sequence")
