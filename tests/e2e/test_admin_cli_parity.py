"""kafka-consumer-groups.sh parity of the admin CLI against a live serve: `describe
--all-groups`, `--members`, `--state` with its column names; offsets show's (CURRENT-OFFSET,
LOG-END-OFFSET, LAG, CONSUMER-ID, HOST, CLIENT-ID) and the lag its owners reported (LAG-MS);
the group and target epochs (a classic group's generation) as the dashboard shows them;
`offsets reset --shift-by`, `--export` and `--from-file`."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
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
        "GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG", "CONSUMER-ID",
        "HOST", "CLIENT-ID", "LAG-MS", "METADATA",
    ]  # fmt: skip
    rows = [line.split() for line in lines[1:]]
    assert [(r[0], r[2], r[6], r[7], r[8], r[9]) for r in rows] == [
        (group, "0", member.member_id, "127.0.0.1", "test-client", "-"),
        (group, "1", member.member_id, "127.0.0.1", "test-client", "7500"),
    ]
    offsets = cli("offsets", "show", group, "--json").json()["offsets"]
    assert [(o["partition"], o["lagMs"], o["memberId"]) for o in offsets] == [
        (0, None, member.member_id),
        (1, 7500, member.member_id),
    ]


def test_describe_all_groups_members_and_state(
    cli: Any, coordinator: str, lagging: tuple[str, str, Member]
) -> None:
    group, _topic, member = lagging
    every = cli("groups", "describe", "--all-groups", "--json").json()["groups"]
    assert group in [g["groupId"] for g in every]
    state = cli("groups", "describe", group, "--state").out.strip().splitlines()
    assert state[0].split() == [
        "GROUP", "TYPE", "ASSIGNMENT-STRATEGY", "STATE", "GROUP-EPOCH",
        "TARGET-ASSIGNMENT-EPOCH", "#MEMBERS",
    ]  # fmt: skip
    activity = Api(coordinator).ok("describe-group-activity", {"groupIds": [group]})["groups"][0]
    epochs = [str(activity["epoch"]), str(activity["assignmentEpoch"])]  # the dashboard's
    assert state[1].split() == [group, "consumer", "uniform", "Stable", *epochs, "1"]
    members = cli("groups", "describe", group, "--members").out.strip().splitlines()
    assert members[0].split() == [
        "GROUP", "CONSUMER-ID", "GROUP-INSTANCE-ID", "HOST", "CLIENT-ID", "#PARTITIONS",
        "CURRENT-EPOCH", "ASSIGNMENT",
    ]  # fmt: skip
    assert members[1].split()[:6] == [group, member.member_id, "-", "127.0.0.1", "test-client", "2"]
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
        assert described["epoch"] == described["assignmentEpoch"] == activity["epoch"] >= 1
        state = cli("groups", "describe", group, "--state").out.strip().splitlines()
        assert state[1].split()[4:6] == [str(activity["epoch"])] * 2
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


def test_offsets_reset_to_datetime_says_why_it_cannot(cli: Any, coordinator: str) -> None:
    topic = unique("no-log")
    create_topic(Api(coordinator), topic, 1)
    args = ["offsets", "reset", unique("g"), "--topic", topic, "--to-datetime", "2026-12-01T00:00"]
    cli(*args).refused("not Kinesis-backed", "keeps no log", "--to-offset N")


def test_offsets_reset_export_then_from_file(cli: Any, coordinator: str, tmp_path: Path) -> None:
    """As kafka-consumer-groups.sh: a dry run's --export is the CSV --from-file applies."""
    topic, group, other = unique("exported"), unique("source"), unique("target")
    create_topic(Api(coordinator), topic, 2)
    plan = cli("offsets", "reset", group, "--topic", topic, "--to-offset", "42", "--dry-run",
               "--export")  # fmt: skip
    assert plan.code == 0 and plan.out.splitlines() == [f"{topic},0,42", f"{topic},1,42"]
    assert "Dry run" in plan.err
    csv = tmp_path / "plan.csv"
    csv.write_text(plan.out)
    from_file = ["offsets", "reset", other, "--from-file", str(csv)]
    dry = cli(*from_file, "--dry-run", "--json").json()
    assert [(s["partition"], s["newOffset"]) for s in dry["plan"]] == [(0, 42), (1, 42)]
    assert cli("offsets", "show", other).code == 1  # a dry run writes nothing
    assert cli(*from_file).code == 0
    shown = cli("offsets", "show", other, "--json").json()["offsets"]
    assert [(o["partition"], o["offset"]) for o in shown] == [(0, 42), (1, 42)]
    cli(*from_file, "--to-earliest").refused("--from-file gives the offsets")
    usage = cli("offsets", "reset", other, "--topic", topic, "--from-file", str(csv))
    assert usage.code == 2 and "not allowed with" in usage.err
