"""`groupcoord groups list|describe|delete`: consumer groups of every type, as
kafka-consumer-groups.sh (and kafka-streams-groups.sh for streams groups) shows them."""

from __future__ import annotations

import argparse
from typing import Any

from ..client.admin import AdminClient, describe_error, error_of
from ..client.errors import GroupcoordError
from ..errors import Errors
from .output import CommandError, Output, Table
from .streams_groups import streams_tables


def add_group_commands(sub: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    groups = sub.add_parser("groups", help="list, describe and delete consumer groups")
    gsub = groups.add_subparsers(dest="action", required=True, metavar="ACTION")
    glist = gsub.add_parser("list", parents=[common], help="list groups")
    glist.add_argument("--state", action="append", default=[], help="only groups in STATE")
    glist.add_argument(
        "--type", action="append", default=[], choices=["classic", "consumer", "streams"]
    )
    glist.set_defaults(handler=_groups_list)
    gdescribe = gsub.add_parser("describe", parents=[common], help="members and assignments")
    gdescribe.add_argument("groups", nargs="*", metavar="group")
    gdescribe.add_argument("--all-groups", action="store_true", help="every group listed")
    shown = gdescribe.add_mutually_exclusive_group()
    shown.add_argument("--members", action="store_true", help="only the members (and tasks)")
    shown.add_argument("--state", action="store_true", help="only the groups' state")
    gdescribe.set_defaults(handler=_groups_describe)
    gdelete = gsub.add_parser("delete", parents=[common], help="delete empty groups")
    gdelete.add_argument("groups", nargs="+", metavar="group")
    gdelete.set_defaults(handler=_groups_delete)


def _groups_list(admin: AdminClient, args: argparse.Namespace) -> Output:
    body = admin.list_groups(args.state, args.type)
    groups = sorted(
        (
            {
                "groupId": g["groupId"],
                "type": g.get("groupType", ""),
                "state": g.get("groupState", ""),
                "protocolType": g.get("protocolType", ""),
            }
            for g in body.get("groups", [])
        ),
        key=lambda g: g["groupId"],
    )
    rows = [[g["groupId"], g["type"], g["state"], g["protocolType"]] for g in groups]
    return Output(
        {"groups": groups},
        [(["GROUP", "TYPE", "STATE", "PROTOCOL-TYPE"], rows)],
        [] if groups else ["No groups."],
    )


def _assignment_text(assignment: dict[str, list[int]]) -> str:
    return " ".join(f"{t}:{','.join(map(str, ps))}" for t, ps in sorted(assignment.items()) if ps)


def _groups_describe(admin: AdminClient, args: argparse.Namespace) -> Output:
    if bool(args.groups) == args.all_groups:
        raise CommandError("name the groups to describe, or give --all-groups")
    groups = args.groups
    if args.all_groups:
        groups = sorted(g["groupId"] for g in admin.list_groups([], []).get("groups", []))
    described, failures = [], []
    for group in groups:
        try:
            described.append(admin.describe_group(group))
        except (CommandError, GroupcoordError) as error:  # the others go on
            failures.append(
                str(error) if str(error).startswith("group ") else f"group {group}: {error}"
            )
    tables = []
    for g in described:
        found = streams_tables(g) if g["type"] == "streams" else _group_tables(g)
        # As kafka-consumer-groups.sh's --state and --members: the group's line, its members.
        tables += found[:1] if args.state else found[1:2] if args.members else found
    document: dict[str, Any] = {"groups": described}
    if failures:
        document["errors"] = failures
    return Output(document, tables, [], failures)


# kafka-consumer-groups.sh --describe --state --verbose's columns (no COORDINATOR: the
# coordinator is this service), with the group's type; a classic group's epochs are its
# generation, as the dashboard shows it.
STATE_COLUMNS = [
    *("GROUP", "TYPE", "ASSIGNMENT-STRATEGY", "STATE"),
    *("GROUP-EPOCH", "TARGET-ASSIGNMENT-EPOCH", "#MEMBERS"),
]
# ... --members --verbose's (CURRENT-EPOCH: the member epoch; a classic member has none).
MEMBER_COLUMNS = [
    *("GROUP", "CONSUMER-ID", "GROUP-INSTANCE-ID", "HOST", "CLIENT-ID"),
    *("#PARTITIONS", "CURRENT-EPOCH", "ASSIGNMENT"),
]


def _group_tables(g: dict[str, Any]) -> list[Table]:
    state = [g["groupId"], g["type"], g["protocol"], g["state"]]
    state += [g["epoch"], g.get("assignmentEpoch"), len(g["members"])]
    return [
        (STATE_COLUMNS, [state]),
        (
            MEMBER_COLUMNS,
            [
                [
                    g["groupId"],
                    m["memberId"],
                    m["instanceId"],
                    m["host"],
                    m["clientId"],
                    sum(len(ps) for ps in m["assignment"].values()),
                    m["epoch"],
                    _assignment_text(m["assignment"]),
                ]
                for m in sorted(g["members"], key=lambda m: m["memberId"])
            ],
        ),
    ]


def _groups_delete(admin: AdminClient, args: argparse.Namespace) -> Output:
    deleted, failures = [], []
    for group in args.groups:
        result = admin.delete_group(group)
        if error_of(result) == Errors.NONE:
            deleted.append(group)
        else:
            failures.append(f"group {group}: {describe_error(result)}")
    if failures:
        done = f" (deleted: {', '.join(deleted)})" if deleted else ""
        raise CommandError("; ".join(failures) + done)
    return Output(
        {"deleted": deleted}, [], [f"Deleted group {g} and its offsets." for g in deleted]
    )
