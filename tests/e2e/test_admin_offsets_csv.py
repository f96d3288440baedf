"""`groupcoord offsets import|export` against a live `groupcoord serve`: a consumer group's
offsets moved in and out in the CSV of `kafka-consumer-groups.sh --reset-offsets --export`
(topic,partition,offset lines, no header), the import refused while the group has members and
for a bad row (named by its line), its dry run changing nothing."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.e2e import test_admin_cli
from tests.e2e.helpers import CONVERGE_S, all_partitions, start_member, unique, wait_until

cli = test_admin_cli.cli  # the fixture: main() against the shared `groupcoord serve`


def _offsets(cli: Any, group: str) -> dict[tuple[str, int], int]:
    rows = cli("offsets", "show", group, "--json").json()["offsets"]
    return {(r["topic"], r["partition"]): r["offset"] for r in rows if r["offset"] is not None}


def test_import_a_kafka_export_then_export_it_back(cli: Any, tmp_path: Path) -> None:
    orders, audit, group = unique("csv-orders"), unique("csv-audit"), unique("csv-g")
    assert cli("topics", "create", orders, "--partitions", "3").code == 0
    assert cli("topics", "create", audit, "--partitions", "1").code == 0
    exported = tmp_path / "offsets.csv"  # as kafka-consumer-groups.sh --export writes it
    exported.write_text(f"{orders},0,100\n{orders},1,101\n{orders},2,102\n{audit},0,7\n")

    plan = cli("offsets", "import", group, "--from-csv", str(exported), "--dry-run", "--json")
    assert plan.json()["dryRun"] is True
    assert [(s["topic"], s["partition"], s["newOffset"]) for s in plan.json()["plan"]] == [
        (orders, 0, 100),
        (orders, 1, 101),
        (orders, 2, 102),
        (audit, 0, 7),
    ]
    table = cli("offsets", "import", group, "--from-csv", str(exported), "--dry-run").out
    assert "NEW-OFFSET" in table and "Dry run: nothing changed." in table
    assert cli("offsets", "show", group, "--json").code == 1  # nothing written: no group

    done = cli("offsets", "import", group, "--from-csv", str(exported))
    assert done.code == 0 and "Imported 4 offset(s)" in done.out, done.err
    expected = {(orders, 0): 100, (orders, 1): 101, (orders, 2): 102, (audit, 0): 7}
    assert _offsets(cli, group) == expected

    # export: the same lines (sorted by topic, partition), to stdout or to a file
    out = cli("offsets", "export", group)
    assert out.code == 0
    lines = sorted(exported.read_text().splitlines())
    assert sorted(out.out.splitlines()) == lines
    copy = tmp_path / "copy.csv"
    assert cli("offsets", "export", group, "--to-csv", str(copy)).code == 0
    assert sorted(copy.read_text().splitlines()) == lines
    # ...which imports into another group as it came
    other = unique("csv-other")
    assert cli("offsets", "import", other, "--from-csv", str(copy)).code == 0
    assert _offsets(cli, other) == expected
    cli("offsets", "export", unique("csv-none")).refused("no committed offsets")


def test_import_refused_while_the_group_has_members(
    cli: Any, coordinator: str, tmp_path: Path
) -> None:
    topic, group = unique("csv-live"), unique("csv-live-g")
    assert cli("topics", "create", topic, "--partitions", "2").code == 0
    member = start_member(coordinator, group, [topic], "consumer")
    try:
        wait_until(lambda: member.owned == all_partitions(topic, 2), CONVERGE_S, "member assigned")
        member.member.commit({tp: 5 for tp in member.owned})
        csv = tmp_path / "offsets.csv"
        csv.write_text(f"{topic},0,50\n{topic},1,51\n")
        for dry in ([], ["--dry-run"]):  # as Kafka's reset, its dry run too
            cli("offsets", "import", group, "--from-csv", str(csv), *dry).refused(
                group, "member", "empty"
            )
        assert _offsets(cli, group) == {(topic, 0): 5, (topic, 1): 5}
    finally:
        member.close()


def test_import_names_the_line_of_a_bad_row_and_writes_nothing(cli: Any, tmp_path: Path) -> None:
    topic, group = unique("csv-bad"), unique("csv-bad-g")
    assert cli("topics", "create", topic, "--partitions", "2").code == 0
    csv = tmp_path / "offsets.csv"
    cases = {
        f"{topic},0,1\n{topic},x,2\n": ("line 2", "partition"),
        f"{topic},0,1\n\n{topic},1,-3\n": ("line 3", "offset"),
        f"{topic},0,1\n{topic},0,2\n": ("line 2", "already on line 1"),
        f"{topic},0\n": ("line 1", "found 2 field(s)"),
        "bad topic!,0,1\n": ("line 1", "not a topic name"),
        f"{topic},0,1\n{topic},2,1\n": ("line 2", "no partition 2"),
        f"{topic},0,1\n{unique('nope')},0,1\n": ("line 2", "UNKNOWN_TOPIC_OR_PARTITION"),
        f"other-group,{topic},0,1\n": ("no row for group", "other groups"),
    }
    for text, words in cases.items():
        csv.write_text(text)
        cli("offsets", "import", group, "--from-csv", str(csv)).refused(str(csv), *words)
    cli("offsets", "import", group, "--from-csv", str(tmp_path / "missing.csv")).refused(
        "missing.csv"
    )
    cli("offsets", "show", group).refused(group)  # nothing was written
    # Kafka's export of several groups (group,topic,partition,offset): GROUP's rows only
    csv.write_text(f"{group},{topic},1,9\nsomeone-else,{topic},0,4\n")
    assert cli("offsets", "import", group, "--from-csv", str(csv)).code == 0
    assert _offsets(cli, group) == {(topic, 1): 9}
