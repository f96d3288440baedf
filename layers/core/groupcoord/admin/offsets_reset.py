"""`groupcoord offsets reset`: an empty group's committed offsets set to a target (earliest, an
offset, a shift, a Kinesis sequence number), as kafka-consumer-groups.sh --reset-offsets does;
its plan is written and printed by offsets_plan.py, as `offsets import`'s (offsets_transfer.py,
which `--from-file` runs)."""

from __future__ import annotations

import argparse
import datetime
import re
from dataclasses import dataclass
from typing import Any

from ..client.admin import AdminClient
from .common import partitions_of, require_empty
from .offsets_plan import commit_plan, plan_output
from .offsets_transfer import reset_from_file
from .output import CommandError, Output

_ONE_TARGET = (
    "give one of --to-earliest, --to-latest, --to-offset N, --shift-by N, "
    "--to-sequence SEQ[:SUB], --to-datetime WHEN"
)
_SEQUENCE = re.compile(r"^(0|[1-9][0-9]{0,128})(?::([0-9]{1,19}))?$")


@dataclass(frozen=True)
class Shift:
    """--shift-by: each partition's committed offset moved by `by`."""

    by: int

    def applied(self, current: int | None) -> int:
        return max(0, (current or 0) + self.by)


Target = int | Shift | dict[str, Any]


def add_reset_command(osub: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    reset = osub.add_parser(
        "reset",
        parents=[common],
        help="reset offsets of an empty group",
        description="Reset the committed offsets of a group that has no members. The "
        "coordinator is not a broker: it knows partitions but not where they end, so the "
        "latest offset must be given with --to-offset.",
    )
    reset.add_argument("group")
    scope = reset.add_mutually_exclusive_group(required=True)
    scope.add_argument(
        "--topic",
        action="append",
        metavar="TOPIC[:P,P...]",
        help="a topic (all its partitions) or some of its partitions; repeatable",
    )
    scope.add_argument(
        "--all-topics", action="store_true", help="every topic with a committed offset"
    )
    scope.add_argument(
        "--from-file",
        metavar="FILE",
        help="the partitions and their offsets from a CSV (topic,partition,offset lines, as "
        "--export writes them and kafka-consumer-groups.sh reads them): no other target",
    )
    reset.add_argument("--to-earliest", action="store_true", help="offset 0")
    reset.add_argument(
        "--to-latest", action="store_true", help="the end (needs --to-offset: see above)"
    )
    reset.add_argument("--to-offset", type=int, metavar="N", help="this offset")
    reset.add_argument(
        "--to-datetime",
        metavar="WHEN",
        help="a Kinesis-backed topic's shards from their first record at or after WHEN "
        "(AT_TIMESTAMP), as kafka-consumer-groups.sh's: YYYY-MM-DDTHH:mm:SS[.sss] with an "
        "optional zone (Z, +01:00; none: this machine's local time); refused for other "
        "topics, whose log the coordinator does not keep",
    )
    reset.add_argument(
        "--shift-by",
        type=int,
        metavar="N",
        help="each partition's committed offset moved by N (negative: back; none: from 0), "
        "at least 0, as kafka-consumer-groups.sh's",
    )
    reset.add_argument(
        "--to-sequence",
        metavar="SEQ[:SUB]",
        help="a Kinesis-backed topic's position: after the record of this sequence number "
        "(and sub-sequence number); 0 starts its shards from their first records",
    )
    reset.add_argument("--dry-run", action="store_true", help="print the plan, change nothing")
    reset.add_argument(
        "--export",
        action="store_true",
        help="print the plan as topic,partition,offset lines (the CSV --from-file reads), "
        "as kafka-consumer-groups.sh's --export",
    )
    reset.set_defaults(handler=_offsets_reset)


def _reset_target(args: argparse.Namespace) -> Target:
    """The offset to reset to, a shift, or a Kinesis position (kinesisPosition's JSON)."""
    given = [args.to_earliest, args.to_latest, args.to_offset is not None, args.to_sequence]
    if args.to_datetime is not None:
        if any(given) or args.shift_by is not None:
            raise CommandError(_ONE_TARGET)
        return {"atTimestampMs": datetime_ms(args.to_datetime)}
    if args.shift_by is not None:
        if any(given):
            raise CommandError(_ONE_TARGET)
        return Shift(args.shift_by)
    if args.to_sequence is not None:
        if sum(map(bool, given)) > 1:
            raise CommandError(_ONE_TARGET)
        return _sequence_target(args.to_sequence)
    if args.to_earliest and (args.to_latest or args.to_offset is not None):
        raise CommandError(_ONE_TARGET)
    if args.to_earliest:
        return 0
    if args.to_latest and args.to_offset is None:
        raise CommandError(
            "the coordinator does not know where a partition ends (it keeps no log): "
            "give the latest offset with --to-offset N"
        )
    if args.to_offset is None:
        raise CommandError(_ONE_TARGET)
    if args.to_offset < 0:
        raise CommandError("--to-offset must be >= 0")
    return args.to_offset


def datetime_ms(text: str) -> int:
    """--to-datetime's WHEN as ms since the epoch: ISO 8601 as kafka-consumer-groups.sh takes
    it, a time without a zone read in this machine's zone (as Kafka's tool reads it)."""
    try:
        when = datetime.datetime.fromisoformat(text)
    except ValueError:
        raise CommandError(
            f"--to-datetime {text!r}: not a date and time: give YYYY-MM-DDTHH:mm:SS[.sss], "
            "with an optional zone (Z, +01:00)"
        ) from None
    if when.tzinfo is None:
        when = when.astimezone()
    at_ms = round(when.timestamp() * 1000)
    if at_ms < 0:  # datetime itself stops at year 9999, as the coordinator's bound does
        raise CommandError(f"--to-datetime {text!r}: before 1970")
    return at_ms


def _sequence_target(text: str) -> dict[str, Any]:
    found = _SEQUENCE.fullmatch(text)
    if found is None or int(found.group(2) or 0) >= 2**63:
        raise CommandError("--to-sequence: a sequence number of up to 129 digits[:SUB]")
    return {"sequenceNumber": found.group(1), "subSequenceNumber": int(found.group(2) or 0)}


def _offsets_reset(admin: AdminClient, args: argparse.Namespace) -> Output:
    if args.from_file is not None:
        given = [args.to_earliest, args.to_latest, args.to_offset is not None, args.to_sequence]
        given += [args.shift_by is not None, args.to_datetime is not None]
        if any(given):
            raise CommandError("--from-file gives the offsets: no --to-* or --shift-by with it")
        return reset_from_file(admin, args.group, args.from_file, args.dry_run, args.export)
    target = _reset_target(args)
    require_empty(admin, args.group)
    committed = admin.committed(args.group)
    if args.all_topics:
        partitions = sorted(committed)
        if not partitions:
            raise CommandError(f"group {args.group} has no committed offsets to reset")
    else:
        partitions = partitions_of(admin, args.topic)
    _check_target_kinds(admin, sorted({t for t, _ in partitions}), target)
    plan = [
        {
            "topic": t,
            "partition": p,
            "currentOffset": committed.get((t, p), (None, None))[0],
            "newOffset": _new_offset(target, committed.get((t, p), (None, None))[0]),
            **({"newKinesisPosition": target} if isinstance(target, dict) else {}),
        }
        for t, p in partitions
    ]
    if not args.dry_run:
        commit_plan(admin, args.group, plan)
    note = "Dry run: nothing changed." if args.dry_run else f"Reset {len(plan)} partition(s)."
    return plan_output(args.group, plan, args.dry_run, note, args.export)


def _new_offset(target: Target, current: int | None) -> int:
    if isinstance(target, Shift):
        return target.applied(current)
    return target if isinstance(target, int) else 0  # a Kinesis position: beside offset 0


def _check_target_kinds(admin: AdminClient, topics: list[str], target: Target) -> None:
    """Refuse, dry run or not, what the coordinator would refuse (42): an offset for a
    Kinesis-backed topic (its partitions are shards, checkpointed by sequence number), a
    sequence number or a time for any other."""
    streams = {t["name"] for t in admin.topics(topics) if t.get("kinesisStreamArn")}
    for topic in topics:
        if not isinstance(target, dict) and topic in streams:
            raise CommandError(
                f"topic {topic} is backed by a Kinesis stream: its partitions are shards, "
                "reset by sequence number: --to-sequence SEQ[:SUB] (--to-sequence 0: each "
                "shard from its start, TRIM_HORIZON), or by time: --to-datetime WHEN"
            )
        if isinstance(target, dict) and topic not in streams:
            if "atTimestampMs" in target:
                raise CommandError(
                    f"topic {topic} is not Kinesis-backed: the coordinator keeps no log, so it "
                    "cannot find an offset by time (kafka-consumer-groups.sh asks the brokers' "
                    "time index): give --to-offset N"
                )
            raise CommandError(
                f"topic {topic} is not Kinesis-backed: --to-sequence applies to Kinesis "
                "topics; give --to-earliest or --to-offset N"
            )
