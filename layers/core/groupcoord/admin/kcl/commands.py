"""`groupcoord kinesis import-kcl` and `export-kcl`: a KCL application's lease table turned
into a consumer group's positions in a Kinesis-backed topic, and back. The coordinator is
reached over HTTP as by every admin command; the lease table with boto3 (lease_table.py).
The mapping itself is pure (leases.py)."""

from __future__ import annotations

import argparse
import time
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from ...client.admin import AdminClient, raise_for
from ..common import require_empty
from ..output import CommandError, Output
from .lease_table import LeaseTable, LeaseTableError
from .leases import (
    ImportStep,
    Item,
    Lease,
    LeaseFormatError,
    Position,
    Shard,
    export_items,
    leases_of_stream,
    moved_leases,
    parse_leases,
    plan_import,
    unknown_leases,
    written_already,
)

Handler = Callable[[AdminClient, argparse.Namespace], Output]
FAILOVER_MS_DEFAULT = 10_000  # KCL's failoverTimeMillis
FAILOVER_MS_MAX = 600_000
_CHUNK = 1000  # partitions per offset-commit / offset-delete


def add_kinesis_commands(sub: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    """`groupcoord kinesis import-kcl|export-kcl`."""
    kinesis = sub.add_parser("kinesis", help="move a KCL application's checkpoints in and out")
    ksub = kinesis.add_subparsers(dest="action", required=True, metavar="ACTION")
    options = argparse.ArgumentParser(add_help=False)
    options.add_argument(
        "--lease-table",
        required=True,
        metavar="NAME",
        help="the KCL application's lease table (its application name)",
    )
    options.add_argument("--topic", required=True, help="the topic bound to the stream")
    options.add_argument("--group", required=True, help="the consumer group")
    options.add_argument("--dry-run", action="store_true", help="print the plan, change nothing")
    options.add_argument(
        "--dynamodb-endpoint",
        metavar="URL",
        help="the lease table's DynamoDB endpoint (default: boto3's, e.g. "
        "$AWS_ENDPOINT_URL_DYNAMODB)",
    )
    options.add_argument("--region", help="the lease table's region (default: boto3's)")
    options.add_argument(
        "--failover-time-ms",
        type=int,
        default=FAILOVER_MS_DEFAULT,
        metavar="MS",
        help="the application's failoverTimeMillis: the lease table is read twice this far "
        "apart, and refused if a leaseCounter moved (default: %(default)s)",
    )
    ksub.add_parser(
        "import-kcl",
        parents=[common, options],
        help="a KCL lease table's checkpoints into the group's positions",
        description="Set the positions of an empty consumer group on a Kinesis-backed topic "
        "from a stopped KCL application's lease table (KCL 1.x, 2.x or 3.x, single- or "
        "multi-stream): the group resumes right after each checkpoint.",
    ).set_defaults(handler=import_kcl)
    ksub.add_parser(
        "export-kcl",
        parents=[common, options],
        help="the group's positions into a KCL lease table",
        description="Write one lease per shard from an empty group's positions, creating the "
        "lease table if missing, for a KCL application to resume from (the way back).",
    ).set_defaults(handler=export_kcl)


# --- what both commands read ---


@dataclass
class Topic:
    name: str
    arn: str
    shards: list[Shard]

    def by_id(self) -> dict[str, Shard]:
        return {shard.shard_id: shard for shard in self.shards}


def _topic(admin: AdminClient, name: str, group: str | None = None) -> Topic:
    """The topic's shards (only those assignable to `group`, if given)."""
    found = admin.metadata([{"name": name}], group)["topics"]
    if not found:
        raise CommandError(f"topic {name}: UNKNOWN_TOPIC_OR_PARTITION: no such topic")
    raise_for(found[0], f"topic {name}")
    arn = found[0].get("kinesisStreamArn")
    if not arn:
        raise CommandError(f"topic {name} is not backed by a Kinesis stream")
    shards = []
    for p in found[0].get("partitions", []):
        kinesis = p.get("kinesisShard") or {}
        hashes = kinesis.get("hashKeyRange") or {}
        shards.append(
            Shard(
                partition=p["partitionIndex"],
                shard_id=kinesis["shardId"],
                parents=tuple(kinesis.get("parentShardIds") or ()),
                closed=bool(kinesis.get("closed")),
                hash_key_range=(hashes["startingHashKey"], hashes["endingHashKey"])
                if hashes
                else None,
            )
        )
    return Topic(name, arn, shards)


def _positions(admin: AdminClient, group: str, topic: Topic) -> dict[str, Position]:
    """The group's positions by shard id (offset-fetch)."""
    indexes = [shard.partition for shard in topic.shards]
    fetched = admin.fetch_offsets(group, [{"name": topic.name, "partitionIndexes": indexes}])
    by_partition = {shard.partition: shard.shard_id for shard in topic.shards}
    found = {}
    for entry in fetched.get("topics", []):
        for p in entry.get("partitions", []):
            raise_for(p, f"{topic.name}-{p['partitionIndex']}")
            position = Position.from_api(p.get("kinesisPosition"))
            if position is not None and p["partitionIndex"] in by_partition:
                found[by_partition[p["partitionIndex"]]] = position
    return found


def _table(args: argparse.Namespace) -> LeaseTable:
    if not 0 <= args.failover_time_ms <= FAILOVER_MS_MAX:
        raise CommandError(f"--failover-time-ms: from 0 to {FAILOVER_MS_MAX}")
    return LeaseTable(args.lease_table, args.dynamodb_endpoint, args.region)


def _stopped_leases(
    table: LeaseTable, failover_ms: int, sleep: Callable[[float], None] = time.sleep
) -> list[Lease]:
    """The table's leases, read twice `failover_ms` apart; refused if a leaseCounter moved
    in between (a live worker renews its leases well within the failover time)."""
    before = _read_leases(table)
    sleep(failover_ms / 1000)
    after = _read_leases(table)
    moved = moved_leases(before, after)
    if moved:
        owners = sorted({lease.owner for lease in moved if lease.owner})
        raise CommandError(
            f"KCL application {table.name} is running: {len(moved)} lease(s) renewed or taken "
            f"within {failover_ms} ms (owners: {', '.join(owners) or 'none'}); stop or drain "
            "it first"
        )
    return after


def _opened(admin: AdminClient, args: argparse.Namespace) -> tuple[LeaseTable, Topic]:
    """What both commands start from: the lease table (not read yet), the topic's shards,
    and the group checked to have no members."""
    table = _table(args)
    topic = _topic(admin, args.topic)
    require_empty(admin, args.group)
    return table, topic


def _about(args: argparse.Namespace, table: LeaseTable, topic: Topic) -> dict[str, Any]:
    """The head of both commands' documents."""
    return {
        "leaseTable": table.name,
        "topic": topic.name,
        "groupId": args.group,
        "dryRun": args.dry_run,
    }


def _lease_table_errors(command: Handler) -> Handler:
    """A command whose DynamoDB refusals (lease_table.LeaseTableError) are its one line."""

    def run(admin: AdminClient, args: argparse.Namespace) -> Output:
        try:
            return command(admin, args)
        except LeaseTableError as error:
            raise CommandError(str(error)) from None

    return run


def _read_leases(table: LeaseTable) -> list[Lease]:
    """The table's leases; its other entities (KCL 3.5's single table) are not read."""
    try:
        return parse_leases(table.scan())
    except LeaseFormatError as error:
        raise CommandError(f"lease table {table.name}: {error}") from None


# --- import ---


@_lease_table_errors
def import_kcl(admin: AdminClient, args: argparse.Namespace) -> Output:
    table, topic = _opened(admin, args)
    if not table.exists():
        raise CommandError(f"lease table {table.name}: no such table")
    leases = _of_stream(_stopped_leases(table, args.failover_time_ms), topic, table.name)
    steps = plan_import(topic.shards, leases)
    before = _positions(admin, args.group, topic)
    if not args.dry_run:
        _apply(admin, args.group, topic, steps, before)
        if unknown_leases(topic.shards, leases):
            # A shard end naming children the coordinator did not list makes it sync the
            # topic at once: the leases of those children are the group's now.
            synced = _topic(admin, args.topic)
            if len(synced.shards) > len(topic.shards):
                topic, steps = synced, plan_import(synced.shards, leases)
                _apply(admin, args.group, topic, steps, _positions(admin, args.group, topic))
    document = [
        {
            "shardId": step.shard.shard_id,
            "partition": step.shard.partition,
            "lease": step.why,
            "current": _text(before.get(step.shard.shard_id)),
            "new": _text(step.target),
            "action": _action(step, before.get(step.shard.shard_id)),
        }
        for step in steps
    ]
    notes = [
        f"Lease {lease.key}: not a shard of topic {topic.name}, skipped: expired before the "
        "topic was bound, or a reshard the coordinator has not synced yet (run again then)"
        for lease in unknown_leases(topic.shards, leases)
    ]
    counts = Counter(entry["action"] for entry in document)
    summary = ", ".join(f"{counts[a]} {a}" for a in ("write", "delete", "unchanged", "none"))
    notes.append(f"{'Dry run, nothing changed' if args.dry_run else 'Done'}: {summary}.")
    return Output(
        {**_about(args, table, topic), "shards": document},
        [(["SHARD", "PARTITION", "FROM", "CURRENT", "NEW", "ACTION"], _rows(document))],
        notes,
    )


def _rows(document: list[dict[str, Any]]) -> list[list[Any]]:
    keys = ("shardId", "partition", "lease", "current", "new", "action")
    return [[entry[key] for key in keys] for entry in document]


def _apply(
    admin: AdminClient,
    group: str,
    topic: Topic,
    steps: list[ImportStep],
    current: dict[str, Position],
) -> None:
    """The steps' positions written where they differ from `current`, removed where the
    lease table has none."""
    actions = [(step, _action(step, current.get(step.shard.shard_id))) for step in steps]
    _commit(admin, group, topic, [step for step, action in actions if action == "write"])
    deletes = [step.shard.partition for step, action in actions if action == "delete"]
    _delete(admin, group, topic.name, deletes)


def _of_stream(leases: list[Lease], topic: Topic, table: str) -> list[Lease]:
    try:
        mine, _ = leases_of_stream(leases, topic.arn)
    except ValueError as error:
        raise CommandError(f"lease table {table}: {error}") from None
    if not mine:
        raise CommandError(f"lease table {table} holds no lease of {topic.arn}")
    known = {shard.shard_id for shard in topic.shards}
    if not any(lease.shard_id in known or known & set(lease.parents) for lease in mine):
        raise CommandError(
            f"lease table {table}: none of its leases is a shard of topic {topic.name}'s "
            "stream (another stream's application?)"
        )
    return mine


def _action(step: ImportStep, before: Position | None) -> str:
    if step.target == before:
        return "unchanged" if before is not None else "none"
    return "delete" if step.target is None else "write"


def _text(position: Position | None) -> str:
    return "-" if position is None else position.text()


def _commit(admin: AdminClient, group: str, topic: Topic, steps: list[ImportStep]) -> None:
    """The positions, committed from outside the group (an admin's reset)."""
    entries = []
    for step in steps:
        assert step.target is not None
        position = step.target.to_api(step.children)
        entries.append(
            {
                "partitionIndex": step.shard.partition,
                "committedOffset": 0,
                "kinesisPosition": position,
            }
        )
    for chunk in _chunks(entries):
        body = admin.admin_commit(group, [{"name": topic.name, "partitions": chunk}])
        _raise_for_partitions(body, f"group {group}")


def _delete(admin: AdminClient, group: str, topic: str, partitions: list[int]) -> None:
    for chunk in _chunks([{"partitionIndex": p} for p in partitions]):
        body = admin.delete_offsets(group, [{"name": topic, "partitions": chunk}])
        raise_for(body, f"group {group}")
        _raise_for_partitions(body, f"group {group}")


def _raise_for_partitions(body: dict[str, Any], what: str) -> None:
    for topic in body.get("topics", []):
        for p in topic.get("partitions", []):
            raise_for(p, f"{what}: {topic.get('name')}-{p['partitionIndex']}")


def _chunks(entries: list[dict[str, Any]]) -> Iterable[list[dict[str, Any]]]:
    return (entries[i : i + _CHUNK] for i in range(0, len(entries), _CHUNK))


# --- export ---


@_lease_table_errors
def export_kcl(admin: AdminClient, args: argparse.Namespace) -> Output:
    table, topic = _opened(admin, args)
    positions = _positions(admin, args.group, topic)
    timed = sorted(s for s, at in positions.items() if at.timestamp_ms is not None)
    if timed:
        raise CommandError(
            f"group {args.group}: shard(s) {', '.join(timed)} hold a reset to a time (offsets "
            "reset --to-datetime), which no KCL checkpoint holds: let the group read past it "
            "first, or reset them by --to-sequence"
        )
    assignable = [s.shard_id for s in _topic(admin, args.topic, args.group).shards]
    exists = table.exists()
    mine: list[Lease] = []
    # A table holding anything must be this stream's application's, stopped.
    if exists and table.scan():
        mine = _of_stream(_stopped_leases(table, args.failover_time_ms), topic, table.name)
    stream = next((lease.stream for lease in mine), None)
    existing = {lease.shard_id: lease for lease in mine}
    items = export_items(topic.shards, positions, assignable, existing, stream)
    rows = _export_rows(items, topic, positions, existing)
    changed = [item for item, row in zip(items, rows, strict=True) if row[-1] == "write"]
    if not args.dry_run:
        if not exists:
            table.create()
        table.put(changed)
    unchanged = f", {len(items) - len(changed)} unchanged" if len(changed) < len(items) else ""
    note = (
        "Dry run: nothing changed."
        if args.dry_run
        else f"Wrote {len(changed)} lease(s) into {table.name}{unchanged}"
        + ("" if exists else " (created, on-demand)")
        + "."
    )
    columns = ["shardId", "partition", "position", "leaseKey", "checkpoint", "action"]
    return Output(
        {
            **_about(args, table, topic),
            "created": not exists and not args.dry_run,
            "leases": [dict(zip(columns, row, strict=True)) for row in rows],
        },
        [(["SHARD", "PARTITION", "POSITION", "LEASE-KEY", "CHECKPOINT", "ACTION"], rows)],
        [note],
    )


def _export_rows(
    items: list[Item], topic: Topic, positions: dict[str, Position], existing: dict[str, Lease]
) -> list[list[Any]]:
    """A row per lease: its shard, the group's position, the lease written, and whether it is
    written or already in the table as it would be (written_already)."""
    by_id = topic.by_id()
    rows = []
    for item in items:
        shard = by_id[item.get("shardId", item["leaseKey"])["S"].rsplit(":", 1)[-1]]
        checkpoint = item["checkpoint"]["S"]
        sub = item["checkpointSubSequenceNumber"]["N"]
        same = written_already(item, existing.get(shard.shard_id))
        rows.append(
            [
                shard.shard_id,
                shard.partition,
                _text(positions.get(shard.shard_id)),
                item["leaseKey"]["S"],
                checkpoint if sub == "0" else f"{checkpoint}:{sub}",
                "unchanged" if same else "write",
            ]
        )
    return rows
