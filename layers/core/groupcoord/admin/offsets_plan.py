"""A reset's plan (offsets reset, offsets import): written as an admin's commit from outside
the group, and printed as a table, a document, or, with --export, the CSV
kafka-consumer-groups.sh --reset-offsets --export prints."""

from __future__ import annotations

import sys
from typing import Any

from ..client.admin import AdminClient, by_topic, raise_for
from .kinesis_shards import time_position_text
from .offsets_csv import format_offsets
from .output import CommandError, Output


def commit_plan(admin: AdminClient, group: str, plan: list[dict[str, Any]]) -> None:
    """Write a reset plan's offsets (and Kinesis positions) as an admin's commit from outside
    the group, which the coordinator admits only while the group is empty; a partition
    refused raises."""
    entries = []
    for step in plan:
        entry = {"partitionIndex": step["partition"], "committedOffset": step["newOffset"]}
        if "newKinesisPosition" in step:
            entry["kinesisPosition"] = step["newKinesisPosition"]
        entries.append((step["topic"], entry))
    body = admin.admin_commit(group, by_topic(entries))
    for topic in body.get("topics", []):
        for p in topic.get("partitions", []):
            raise_for(p, f"{topic.get('name')}-{p['partitionIndex']}")


def plan_output(
    group: str, plan: list[dict[str, Any]], dry_run: bool, note: str, export: bool = False
) -> Output:
    """The plan as a table (GROUP TOPIC PARTITION CURRENT-OFFSET NEW-OFFSET, as Kafka's), or
    with `export` as topic,partition,offset lines alone (the note goes to stderr: stdout
    holds the CSV that --from-file reads back)."""
    document = {"groupId": group, "dryRun": dry_run, "plan": plan}
    if export:
        if any("newKinesisPosition" in s for s in plan):
            raise CommandError(
                "--export writes offsets: a Kinesis topic's plan holds positions (sequence "
                "numbers, times), not offsets; leave --export out"
            )
        text = format_offsets((s["topic"], s["partition"], s["newOffset"]) for s in plan)
        print(note, file=sys.stderr)
        return Output(document, [], [text.rstrip("\n")] if text else [])
    rows = [[group, s["topic"], s["partition"], s["currentOffset"], _shown_target(s)] for s in plan]
    return Output(
        document,
        [(["GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "NEW-OFFSET"], rows)],
        [note],
    )


def _shown_target(step: dict[str, Any]) -> Any:
    position = step.get("newKinesisPosition")
    if position is None:
        return step["newOffset"]
    if "atTimestampMs" in position:
        return time_position_text(position["atTimestampMs"])
    return f"{position['sequenceNumber']}:{position['subSequenceNumber']}"
