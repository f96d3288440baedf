"""The admin CLI (`groupcoord topics|groups|offsets ...`) against a live coordinator and live
groups: tables by default, --json documents, refusals as one line on stderr with exit 1."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from groupcoord.cli import main
from tests.e2e.helpers import (
    CONVERGE_S,
    Polled,
    all_partitions,
    balanced,
    free_port,
    start_member,
    unique,
    wait_until,
)


@dataclass
class Ran:
    code: int
    out: str
    err: str

    def json(self) -> Any:
        assert self.code == 0, self.err
        return json.loads(self.out)

    def refused(self, *words: str) -> str:
        """Exit 1 with one line on stderr that says `words`."""
        assert self.code == 1, (self.code, self.out, self.err)
        lines = self.err.strip().splitlines()
        assert len(lines) == 1, self.err
        for word in words:
            assert word in lines[0], lines[0]
        return lines[0]


@pytest.fixture
def cli(coordinator: str, capsys: pytest.CaptureFixture[str]) -> Iterator[Any]:
    def run(*args: str) -> Ran:
        capsys.readouterr()
        try:
            code = main([*args, "--url", coordinator])
        except SystemExit as exit_:  # argparse usage errors
            code = int(exit_.code or 0)
        out, err = capsys.readouterr()
        return Ran(code, out, err)

    yield run


def test_topics_create_list_describe_alter_delete(cli: Any) -> None:
    topic = unique("cli-topic")
    made = cli("topics", "create", topic, "--partitions", "3")
    assert made.code == 0 and f"Created topic {topic} (3 partitions" in made.out
    cli("topics", "create", topic, "--partitions", "3").refused(topic, "TOPIC_ALREADY_EXISTS")
    again = cli("topics", "create", topic, "--if-not-exists", "--json").json()
    assert again["created"] is False and again["topic"]["partitions"] == 3

    listed = cli("topics", "list", "--json").json()["topics"]
    assert {"name": topic, "partitions": 3} in [
        {"name": t["name"], "partitions": t["partitions"]} for t in listed
    ]
    table = cli("topics", "describe", topic).out.splitlines()
    assert table[0].split() == ["TOPIC", "TOPIC-ID", "PARTITIONS"]
    assert table[1].split()[0::2] == [topic, "3"]

    assert cli("topics", "alter", topic, "--partitions", "5").code == 0
    assert cli("topics", "describe", topic, "--json").json()["topics"][0]["partitions"] == 5
    cli("topics", "alter", topic, "--partitions", "2").refused(topic, "INVALID_PARTITIONS")

    assert cli("topics", "delete", topic).out.strip() == f"Deleted topic {topic}."
    cli("topics", "describe", topic).refused(topic, "UNKNOWN_TOPIC_OR_PARTITION")
    cli("topics", "delete", topic).refused(topic, "UNKNOWN_TOPIC_OR_PARTITION")


def test_groups_and_offsets_of_live_groups_then_reset_and_delete_once_empty(
    cli: Any, coordinator: str
) -> None:
    topic, group, classic_group = unique("cli-orders"), unique("cli-g"), unique("cli-classic")
    assert cli("topics", "create", topic, "--partitions", "6").code == 0
    everything = all_partitions(topic, 6)
    members: list[Polled] = [
        start_member(coordinator, group, [topic], "consumer", client_id="billing-1"),
        start_member(coordinator, group, [topic], "consumer", client_id="billing-2"),
    ]
    lone = start_member(coordinator, classic_group, [topic], "classic", client_id="audit")
    try:
        wait_until(lambda: balanced(members, everything), CONVERGE_S, "consumer group balanced")
        wait_until(lambda: lone.owned == everything, CONVERGE_S, "classic member assigned")
        for m in members:
            m.member.commit({tp: 100 + tp.partition for tp in m.owned}, metadata="cli-test")
        _assert_groups_listed_and_described(cli, group, classic_group, topic, everything)
        _assert_offsets_shown(cli, group)
        # refused while the group has members
        cli("offsets", "reset", group, "--topic", topic, "--to-earliest").refused(
            group, "member", "empty"
        )
        cli("groups", "delete", group).refused(group, "NON_EMPTY_GROUP")
        cli("offsets", "delete", group, "--topic", topic).refused(
            group, "GROUP_SUBSCRIBED_TO_TOPIC"
        )
    finally:
        for m in [*members, lone]:
            m.close()
    wait_until(
        lambda: not cli("groups", "describe", group, "--json").json()["groups"][0]["members"],
        CONVERGE_S,
        "the group is empty",
    )
    _reset_then_delete_once_empty(cli, group, topic)


def _assert_groups_listed_and_described(
    cli: Any, group: str, classic_group: str, topic: str, everything: set[Any]
) -> None:
    """groups list / describe, both group types."""
    listed = {g["groupId"]: g for g in cli("groups", "list", "--json").json()["groups"]}
    assert listed[group]["type"] == "consumer"
    assert listed[classic_group]["type"] == "classic"
    assert listed[classic_group]["state"] == "Stable"
    assert group in cli("groups", "list", "--type", "consumer").out
    assert classic_group not in cli("groups", "list", "--type", "consumer").out

    described = cli("groups", "describe", group, classic_group, "--json").json()["groups"]
    consumer, classic = described
    assert consumer["type"] == "consumer" and len(consumer["members"]) == 2
    assert {m["clientId"] for m in consumer["members"]} == {"billing-1", "billing-2"}
    owned = {(t, p) for m in consumer["members"] for t, ps in m["assignment"].items()
             for p in ps}  # fmt: skip
    assert owned == {(tp.topic, tp.partition) for tp in everything}
    assert classic["type"] == "classic" and classic["protocol"] == "range"
    assert classic["members"][0]["assignment"] == {topic: list(range(6))}
    table = cli("groups", "describe", group).out
    assert "CONSUMER-ID" in table and "billing-1" in table and f"{topic}:" in table


def _assert_offsets_shown(cli: Any, group: str) -> None:
    """offsets show: committed offsets and who owns each partition."""
    shown = cli("offsets", "show", group, "--json").json()
    rows = {r["partition"]: r for r in shown["offsets"]}
    assert sorted(rows) == list(range(6))
    assert {r["offset"] for r in rows.values()} == {100 + p for p in range(6)}
    assert all(r["metadata"] == "cli-test" and r["memberId"] for r in rows.values())
    assert "OFFSET" in cli("offsets", "show", group).out


def _reset_then_delete_once_empty(cli: Any, group: str, topic: str) -> None:
    """Once empty: reset (latest needs a known offset; dry run first), delete."""
    cli("offsets", "reset", group, "--topic", topic, "--to-latest").refused("--to-offset")
    plan = cli(
        "offsets", "reset", group, "--topic", f"{topic}:0,1", "--to-offset", "7", "--dry-run",
        "--json",
    ).json()  # fmt: skip
    assert plan["dryRun"] is True
    assert [(s["partition"], s["currentOffset"], s["newOffset"]) for s in plan["plan"]] == [
        (0, 100, 7),
        (1, 101, 7),
    ]
    assert _offsets(cli, group) == {p: 100 + p for p in range(6)}  # nothing changed
    done = cli("offsets", "reset", group, "--topic", f"{topic}:0,1", "--to-offset", "7")
    assert done.code == 0 and "Reset 2 partition(s)." in done.out
    assert _offsets(cli, group) == {0: 7, 1: 7, **{p: 100 + p for p in range(2, 6)}}
    assert cli("offsets", "reset", group, "--all-topics", "--to-earliest").code == 0
    assert _offsets(cli, group) == {p: 0 for p in range(6)}
    cli("offsets", "reset", group, "--topic", f"{topic}:9", "--to-earliest").refused(
        "no partition 9"
    )

    assert cli("offsets", "delete", group, "--topic", f"{topic}:5").code == 0
    assert _offsets(cli, group) == {p: 0 for p in range(5)}
    assert cli("groups", "delete", group).code == 0
    cli("groups", "describe", group).refused(group, "GROUP_ID_NOT_FOUND")
    cli("offsets", "show", group).refused(group)


def _offsets(cli: Any, group: str) -> dict[int, int]:
    rows = cli("offsets", "show", group, "--json").json()["offsets"]
    return {r["partition"]: r["offset"] for r in rows}


def test_the_command_line_entry_point_reports_one_line_and_honours_groupcoord_url(
    coordinator: str,
) -> None:
    dead = f"http://127.0.0.1:{free_port()}"
    command = [sys.executable, "-m", "groupcoord.cli"]
    env = {**os.environ, "GROUPCOORD_URL": coordinator}
    listed = subprocess.run(
        [*command, "topics", "list", "--json"], env=env, capture_output=True, text=True
    )
    assert listed.returncode == 0, listed.stderr
    assert "topics" in json.loads(listed.stdout)
    down = subprocess.run(
        [*command, "groups", "list", "--url", dead, "--timeout", "1"],
        capture_output=True,
        text=True,
    )
    assert down.returncode == 1
    assert down.stdout == ""
    lines = down.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("groupcoord groups list: "), down.stderr
    assert dead in lines[0]
    usage = subprocess.run([*command, "offsets", "reset"], capture_output=True, text=True)
    assert usage.returncode == 2
