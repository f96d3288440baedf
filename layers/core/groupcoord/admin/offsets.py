"""`groupcoord offsets show|reset|delete|import|export`: a group's committed offsets, as
kafka-consumer-groups.sh shows and changes them (reset: offsets_reset.py; import and export:
offsets_transfer.py)."""

from __future__ import annotations

import argparse
import functools
from typing import Any

from ..client.admin import AdminClient, Refused, by_topic, describe_error, error_of, raise_for
from ..errors import Errors
from .common import partitions_of
from .kinesis_shards import COLUMNS as KINESIS_COLUMNS
from .kinesis_shards import fetch_lags, kinesis_row, kinesis_shards
from .offsets_reset import add_reset_command
from .offsets_transfer import add_csv_commands
from .output import CommandError, Output

# kafka-consumer-groups.sh --describe's columns, in its order: the coordinator keeps no log,
# so LOG-END-OFFSET and LAG are "-" as Kafka prints what it does not know; then LAG-MS, how
# far behind the owner said it was (a Kinesis consumer's MillisBehindLatest, any member's
# partitionLags), where one reported it, and the commit's METADATA.
OFFSET_COLUMNS = [
    *("GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG"),
    *("CONSUMER-ID", "HOST", "CLIENT-ID", "LAG-MS", "METADATA"),
]
Key = tuple[str, int]


def add_offset_commands(sub: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    offsets = sub.add_parser("offsets", help="show, reset, delete, import and export offsets")
    osub = offsets.add_subparsers(dest="action", required=True, metavar="ACTION")
    show = osub.add_parser("show", parents=[common], help="committed offsets and owners")
    show.add_argument("group")
    show.add_argument("--topic", action="append", default=[], help="only this topic")
    show.set_defaults(handler=_offsets_show)
    add_reset_command(osub, common)
    odelete = osub.add_parser("delete", parents=[common], help="delete committed offsets")
    odelete.add_argument("group")
    odelete.add_argument(
        "--topic", action="append", required=True, metavar="TOPIC[:P,P...]", help="repeatable"
    )
    odelete.set_defaults(handler=_offsets_delete)
    add_csv_commands(osub, common)


def _owners(group: dict[str, Any]) -> dict[Key, dict[str, Any]]:
    return {(t, p): m for m in group["members"] for t, ps in m["assignment"].items() for p in ps}


def _offsets_show(admin: AdminClient, args: argparse.Namespace) -> Output:
    committed = admin.committed(args.group, args.topic)
    try:
        group = admin.describe_group(args.group)
    except Refused:
        group = {"groupId": args.group, "state": "", "members": []}
    owners = _owners(group)
    keys = set(committed) | {k for k in owners if not args.topic or k[0] in args.topic}
    if not keys:
        raise CommandError(f"group {args.group}: no committed offsets and no members")
    # Kinesis-backed topics: every shard, as a lease table lists them (admin/kinesis_shards.py).
    group_call = functools.partial(admin.group_call, args.group)
    lags = fetch_lags(group_call, args.group)  # what the owners last reported (ms)
    shards = kinesis_shards(admin.call, group_call, args.group, {t for t, _ in keys}, lags)
    rows, kinesis_rows, document = [], [], []
    for key in sorted(keys | set(shards)):
        offset, metadata = committed.get(key, (None, None))
        owner, shard, lag = owners.get(key, {}), shards.get(key), lags.get(key)
        document.append(_shown_offset(key, offset, metadata, owner, shard, lag))
        if shard:
            kinesis_rows.append(kinesis_row(args.group, key, shard, owner))
            continue
        owned = [owner.get("memberId"), owner.get("host"), owner.get("clientId")]
        rows.append([args.group, *key, offset, None, None, *owned, lag, metadata])
    return Output(
        {"groupId": args.group, "state": group.get("state", ""), "offsets": document},
        [
            (OFFSET_COLUMNS, rows),
            (KINESIS_COLUMNS, kinesis_rows),
        ],
        [],
    )


def _shown_offset(
    key: Key,
    offset: int | None,
    metadata: str | None,
    owner: dict[str, Any],
    shard: dict[str, Any] | None,
    lag: int | None,
) -> dict[str, Any]:
    """One partition of `offsets show --json`: a Kinesis shard's has its view, no offset."""
    return {
        "topic": key[0],
        "partition": key[1],
        "offset": None if shard else offset,
        "metadata": metadata,
        "memberId": owner.get("memberId"),
        "clientId": owner.get("clientId"),
        "host": owner.get("host"),
        "lagMs": lag,
        **({"kinesis": shard} if shard else {}),
    }


def _offsets_delete(admin: AdminClient, args: argparse.Namespace) -> Output:
    partitions = partitions_of(admin, args.topic)
    body = admin.delete_offsets(
        args.group, by_topic((t, {"partitionIndex": p}) for t, p in partitions)
    )
    raise_for(body, f"group {args.group}")
    failures = [
        f"{t.get('name')}-{p['partitionIndex']}: {describe_error(p)}"
        for t in body.get("topics", [])
        for p in t.get("partitions", [])
        if error_of(p) != Errors.NONE
    ]
    if failures:
        shown = "; ".join(failures[:3]) + (
            f" (+{len(failures) - 3} more)" if len(failures) > 3 else ""
        )
        raise CommandError(f"group {args.group}: {shown}")
    deleted = [{"topic": t, "partition": p} for t, p in partitions]
    return Output(
        {"groupId": args.group, "deleted": deleted},
        [],
        [f"Deleted the committed offsets of {len(deleted)} partition(s) of group {args.group}."],
    )
