"""`groupcoord offsets import GROUP --from-csv FILE [--dry-run]` and `groupcoord offsets export
GROUP [--to-csv FILE]`: a consumer group's offsets moved from and to Kafka in the CSV of
`kafka-consumer-groups.sh --reset-offsets --export` (offsets_csv.py). The import is an offsets
reset (offsets_reset.py's plan and its admin commit from outside the group), refused while the group
has members as Kafka's reset is; its dry run prints the plan and writes nothing."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterable
from typing import Any

from ..client.admin import AdminClient, Refused, describe_error, error_of
from ..errors import Errors
from .common import require_empty
from .offsets_csv import CsvError, OffsetRow, format_offsets, read_offsets_file
from .offsets_plan import commit_plan, plan_output
from .output import CommandError, Output

# Partitions per offset-commit of an import, and topics per metadata request.
COMMIT_BATCH = 1000
TOPICS_BATCH = 1000


def add_csv_commands(osub: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    """`offsets import` and `offsets export` under `groupcoord offsets`."""
    imported = osub.add_parser(
        "import",
        parents=[common],
        help="set an empty group's offsets from a kafka-consumer-groups.sh CSV",
        description="Set the committed offsets of a group that has no members from the CSV "
        "`kafka-consumer-groups.sh --reset-offsets --export` writes (topic,partition,offset "
        "lines, no header; with a group column first, only GROUP's rows). Every topic must "
        "exist here with the partition named; Kinesis-backed topics take sequence numbers "
        "(offsets reset --to-sequence), not offsets.",
    )
    imported.add_argument("group")
    imported.add_argument("--from-csv", required=True, metavar="FILE", help="the CSV to read")
    imported.add_argument("--dry-run", action="store_true", help="print the plan, change nothing")
    imported.set_defaults(handler=_offsets_import)
    exported = osub.add_parser(
        "export",
        parents=[common],
        help="write a group's offsets as kafka-consumer-groups.sh's CSV",
        description="Write the group's committed offsets as topic,partition,offset lines (no "
        "header), the CSV `kafka-consumer-groups.sh --reset-offsets --from-file` reads; "
        "Kinesis-backed topics are left out (their positions are sequence numbers).",
    )
    exported.add_argument("group")
    exported.add_argument("--to-csv", metavar="FILE", help="write here (default: stdout)")
    exported.set_defaults(handler=_offsets_export)


def _offsets_import(admin: AdminClient, args: argparse.Namespace) -> Output:
    return reset_from_file(admin, args.group, args.from_csv, args.dry_run)


def reset_from_file(
    admin: AdminClient, group: str, path: str, dry_run: bool, export: bool = False
) -> Output:
    """`offsets import --from-csv` and `offsets reset --from-file`: an empty group's offsets
    set from the CSV, every row checked before anything is written, in batches."""
    try:
        rows = read_offsets_file(path, group)
    except CsvError as error:
        raise CommandError(f"{path}: {error}") from None
    except OSError as error:
        raise CommandError(f"{path}: {error.strerror or error}") from None
    require_empty(admin, group)
    _check_partitions(admin, rows, path)
    committed = admin.committed(group)
    plan = [
        {
            "topic": row.topic,
            "partition": row.partition,
            "currentOffset": committed.get((row.topic, row.partition), (None, None))[0],
            "newOffset": row.offset,
        }
        for row in rows
    ]
    if dry_run:
        return plan_output(group, plan, True, "Dry run: nothing changed.", export)
    for start in range(0, len(plan), COMMIT_BATCH):
        try:
            commit_plan(admin, group, plan[start : start + COMMIT_BATCH])
        except Refused as error:
            raise CommandError(f"{error} (imported {start} of {len(plan)} rows)") from None
    note = f"Imported {len(plan)} offset(s) into group {group} from {path}."
    return plan_output(group, plan, False, note, export)


def _metadata(admin: AdminClient, names: Iterable[str]) -> dict[str, dict[str, Any]]:
    """The metadata entry of each topic named (errors included), in batches."""
    wanted = sorted(set(names))
    found: dict[str, dict[str, Any]] = {}
    for start in range(0, len(wanted), TOPICS_BATCH):
        batch = [{"name": n} for n in wanted[start : start + TOPICS_BATCH]]
        for topic in admin.metadata(batch).get("topics", []):
            found[topic["name"]] = topic
    return found


def _check_partitions(admin: AdminClient, rows: list[OffsetRow], path: str) -> None:
    """Every row's topic exists, holds the partition, and takes offsets (not Kinesis')."""
    topics = _metadata(admin, (row.topic for row in rows))
    for row in rows:
        topic = topics.get(row.topic, {"errorCode": Errors.UNKNOWN_TOPIC_OR_PARTITION})
        where = f"{path}: line {row.line}: topic {row.topic}"
        if error_of(topic) != Errors.NONE:
            raise CommandError(f"{where}: {describe_error(topic)}")
        if topic.get("kinesisStreamArn"):
            raise CommandError(
                f"{where} is backed by a Kinesis stream: its positions are sequence numbers "
                "(offsets reset --to-sequence), not offsets"
            )
        count = len(topic.get("partitions", []))
        if row.partition >= count:
            raise CommandError(f"{where} has {count} partition(s); no partition {row.partition}")


def _offsets_export(admin: AdminClient, args: argparse.Namespace) -> Output:
    committed = admin.committed(args.group)
    if not committed:
        raise CommandError(f"group {args.group} has no committed offsets to export")
    topics = _metadata(admin, (topic for topic, _ in committed))
    kinesis = {name for name, t in topics.items() if t.get("kinesisStreamArn")}
    offsets = [(t, p, committed[(t, p)][0]) for t, p in sorted(committed) if t not in kinesis]
    left_out = sorted({t for t, _ in committed if t in kinesis})
    notes = (
        [f"Left out the Kinesis-backed topic(s) {', '.join(left_out)}: sequence numbers."]
        if left_out
        else []
    )
    document = {
        "groupId": args.group,
        "offsets": [{"topic": t, "partition": p, "offset": o} for t, p, o in offsets],
        "leftOut": left_out,
    }
    text = format_offsets(offsets)
    if args.to_csv is None:
        if args.json:
            return Output(document, [], [])
        for note in notes:  # stdout holds the CSV alone
            print(note, file=sys.stderr)
        return Output(document, [], [text.rstrip("\n")] if text else [])
    try:
        with open(args.to_csv, "w", encoding="utf-8", newline="") as file:
            file.write(text)
    except OSError as error:
        raise CommandError(f"{args.to_csv}: {error.strerror or error}") from None
    done = f"Exported {len(offsets)} offset(s) of group {args.group} to {args.to_csv}."
    return Output(document, [], [done, *notes])
