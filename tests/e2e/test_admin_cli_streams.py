"""`groupcoord groups describe|list` on streams groups against a live serve, as Kafka 4.2's
kafka-streams-groups.sh shows them (members, processes, tasks by role, topology, lag), and a
describe of several groups that goes on past one group's error, as kafka-consumer-groups.sh."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from tests.e2e.helpers import unique, wait_until
from tests.support.admin_cli import cli_fixture
from tests.support.api import Api
from tests.support.consumer import create_topic
from tests.support.streams import StreamsMember, counter

cli = cli_fixture("coordinator")


@pytest.fixture(scope="module")
def streams_group(coordinator: str) -> Iterator[tuple[str, list[StreamsMember], str]]:
    """Two processes of a counter over a 2-partition topic, settled: each task active on
    one process and standby on the other; one member reports a task's offsets."""
    api = Api(coordinator)
    words, group = unique("words"), unique("counter")
    create_topic(api, words, 2)
    members = [StreamsMember(api, group, counter(words, group)) for _ in range(2)]
    for m in members:
        m.join()

    def settled() -> bool:
        for m in members:
            m.heartbeat()
        owned = [p for m in members for ps in m.active.values() for p in ps]
        standby = [p for m in members for ps in m.standby.values() for p in ps]
        return sorted(owned) == [0, 1] and sorted(standby) == [0, 1]

    wait_until(settled, 30, "both tasks active and standby")
    first = members[0]
    (task,) = sorted(first.active["0"])[:1]
    report = [{"subtopologyId": "0", "partition": task, "offset": 40}]
    first.heartbeat(taskOffsets=report, taskEndOffsets=[{**report[0], "offset": 100}])
    try:
        yield group, members, words
    finally:
        for m in members:
            m.leave()


def test_describe_shows_a_streams_groups_members_tasks_topology_and_lag(
    cli: Any, streams_group: tuple[str, list[StreamsMember], str]
) -> None:
    group, members, words = streams_group
    ran = cli("groups", "describe", group)
    assert ran.code == 0, ran
    blocks = ran.out.split("\n\n")
    header, row = blocks[0].splitlines()
    assert header.split() == [
        "GROUP", "TYPE", "STATE", "GROUP-EPOCH", "TARGET-ASSIGNMENT-EPOCH", "TOPOLOGY-EPOCH",
        "MEMBERS", "PROCESSES",
    ]  # fmt: skip
    assert row.split()[:3] == [group, "streams", "Stable"] and row.split()[-2:] == ["2", "2"]
    member_lines = blocks[1].splitlines()
    assert member_lines[0].split()[-3:] == ["ACTIVE", "STANDBY", "WARMUP"]
    for m in members:
        (line,) = [x for x in member_lines if x.startswith(m.member_id)]
        active = f"0:[{','.join(map(str, sorted(m.active['0'])))}]"
        standby = f"0:[{','.join(map(str, sorted(m.standby['0'])))}]"
        assert m.process_id in line and line.split()[-3:] == [active, standby, "-"], line
    assert blocks[2].splitlines()[1].split() == ["0", words, "-", f"{group}-counts-changelog"]
    lag = blocks[3].splitlines()
    assert lag[0].split() == ["MEMBER-ID", "TASK", "OFFSET", "END-OFFSET", "LAG"]
    assert lag[1].split()[0] == members[0].member_id and lag[1].split()[2:] == ["40", "100", "60"]

    document = cli("groups", "describe", group, "--json").json()["groups"][0]
    assert document["type"] == "streams" and document["processes"] == 2
    by_id = {m["memberId"]: m for m in document["members"]}
    for m in members:
        assert by_id[m.member_id]["tasks"]["active"] == {
            s: sorted(ps) for s, ps in m.active.items()
        }
        assert by_id[m.member_id]["assignment"] == {words: sorted(m.active["0"])}


def test_one_groups_error_is_printed_and_the_others_go_on(
    cli: Any, streams_group: tuple[str, list[StreamsMember], str]
) -> None:
    group, _members, _words = streams_group
    missing = unique("missing")
    ran = cli("groups", "describe", missing, group)
    assert ran.code == 1
    assert ran.out.splitlines()[1].split()[:2] == [group, "streams"]  # described all the same
    (line,) = ran.err.strip().splitlines()
    assert missing in line and "GROUP_ID_NOT_FOUND" in line
    document = cli("groups", "describe", missing, group, "--json")
    assert document.code == 1
    shown = json.loads(document.out)
    assert [g["groupId"] for g in shown["groups"]] == [group] and missing in shown["errors"][0]


def test_list_takes_type_streams(
    cli: Any, streams_group: tuple[str, list[StreamsMember], str]
) -> None:
    group = streams_group[0]
    listed = cli("groups", "list", "--type", "streams", "--json").json()["groups"]
    assert {"groupId": group, "type": "streams"}.items() <= next(
        g for g in listed if g["groupId"] == group
    ).items()
    assert all(g["type"] == "streams" for g in listed)
