"""Upgrading a table written before names were escaped in keys (docs/table-layout.md,
"Upgrading from the unescaped layout").

Before, a group id went into its partition keys as it was (`G#<group id>...`, `O#<group id>#n`).
Now `%` and `#` in it are escaped (schema.escaped), so only the items of groups whose id holds
one of them have new keys; every other item is where it was. This moves those items:

    python -m groupcoord.store.rekey --table <name> [--endpoint-url <url>] [--dry-run]

Run it once after deploying the escaping, before traffic reaches the groups it names (or with
the functions' concurrency at 0). Each item is put under its new key before the old one is
deleted, so a run that dies midway is completed by running it again.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass, field

from . import schema
from .dynamo import Dynamo, Item, make_client

_OLD_PREFIXES = ("G#", "O#")
_INSTANCE_KIND = "instance"  # classic static instance items carry no groupId


@dataclass
class RekeyReport:
    groups: set[str] = field(default_factory=set)
    moved: list[tuple[str, str, str]] = field(default_factory=list)  # (old pk, new pk, sk)


def _needs_escaping(group_id: str) -> bool:
    return schema.escaped(group_id) != group_id


def new_partition_key(old_pk: str, group_id: str) -> str | None:
    """The escaped form of an old-layout partition key of `group_id`, or None if `old_pk` is
    not one of that group's keys."""
    for prefix in _OLD_PREFIXES:
        old_start = prefix + group_id
        if old_pk == old_start or old_pk.startswith(old_start + "#"):
            return prefix + schema.escaped(group_id) + old_pk[len(old_start) :]
    return None


def rekey(dynamo: Dynamo, *, dry_run: bool = False) -> RekeyReport:
    report = RekeyReport()
    moves: list[tuple[Item, str]] = []
    for item in dynamo.scan():
        group_id = item.get("groupId")
        if not isinstance(group_id, str) or not _needs_escaping(group_id):
            continue
        new_pk = new_partition_key(item[schema.PK], group_id)
        if new_pk is not None:
            report.groups.add(group_id)
            moves.append((item, new_pk))
    for group_id in sorted(report.groups):
        old_pk = "G#" + group_id + "#I"
        for item in dynamo.query("pk = :pk", {":pk": old_pk}, consistent=True):
            if item.get("kind") == _INSTANCE_KIND:
                moves.append((item, schema.instance_pk(group_id)))
    for item, new_pk in moves:
        report.moved.append((item[schema.PK], new_pk, item[schema.SK]))
        if dry_run:
            continue
        dynamo.put({**item, schema.PK: new_pk})
        dynamo.delete({schema.PK: item[schema.PK], schema.SK: item[schema.SK]})
    return report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m groupcoord.store.rekey", description=__doc__)
    parser.add_argument("--table", required=True, help="the coordinator's table name")
    parser.add_argument("--endpoint-url", help="a DynamoDB endpoint other than AWS's")
    parser.add_argument("--region")
    parser.add_argument("--dry-run", action="store_true", help="list the moves, change nothing")
    args = parser.parse_args(argv)
    dynamo = Dynamo(make_client(endpoint_url=args.endpoint_url, region=args.region), args.table)
    report = rekey(dynamo, dry_run=args.dry_run)
    verb = "would move" if args.dry_run else "moved"
    for old_pk, new_pk, sk in report.moved:
        print(f"{verb} {old_pk} / {sk} -> {new_pk}")
    print(f"{len(report.groups)} group(s), {len(report.moved)} item(s) {verb}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
