"""`groupcoord acls add|list|remove`: the authorizer's ACLs, as kafka-acls.sh manages them
(acl_model.py: the ACLs by name, and which ones the options select)."""

from __future__ import annotations

import argparse
from collections.abc import Iterable, Sequence
from typing import Any

from ..client.admin import AdminClient, error_of
from ..errors import Errors
from .acl_model import (
    ACL_COLUMNS,
    ACL_OPERATIONS,
    CLUSTER_NAME,
    Acl,
    acl_operation,
    named_resources,
    pascal,
    selected_acls,
)
from .output import CommandError, Output, cell


def add_acl_commands(sub: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    acls = sub.add_parser(
        "acls",
        help="add, list and remove ACLs",
        description="The authorizer's ACLs, as kafka-acls.sh manages them. They need the "
        "coordinator's authorizer (groupcoord.authorizer.enabled=true) and a caller allowed "
        "ALTER on the cluster (DESCRIBE to list), or one of its super.users.",
    )
    asub = acls.add_subparsers(dest="action", required=True, metavar="ACTION")
    resources, entries = _resource_options(), _entry_options()
    filters = ("any", "match", "literal", "prefixed")

    add = asub.add_parser(
        "add",
        parents=[common, resources, entries],
        help="add ACLs",
        description="Add an ACL for every resource, --operation and principal given: each "
        "--allow-principal from each --allow-host (default *: anywhere), each --deny-principal "
        "from each --deny-host. A DENY wins over any ALLOW.",
    )
    add.add_argument(
        "--resource-pattern-type",
        type=str.lower,
        choices=("literal", "prefixed"),
        default="literal",
        help="literal (default; the name * is every resource of the type) or prefixed (every "
        "name that starts with the one given)",
    )
    alist = asub.add_parser(
        "list", parents=[common, resources], help="list ACLs (every ACL without a resource)"
    )
    alist.add_argument(
        "--principal", action="append", default=[], metavar="P", help="only P's; repeatable"
    )
    alist.add_argument(
        "--resource-pattern-type",
        type=str.lower,
        choices=filters,
        help="default: literal for a named resource, else any; match: every ACL that applies "
        "to the named resource (its literal name, *, the prefixes of its name)",
    )
    remove = asub.add_parser(
        "remove",
        parents=[common, resources, entries],
        help="remove the ACLs that match",
        description="Remove the ACLs of the named resources that match the options given; "
        "what is not given matches anything (any principal, host, operation). Prints what it "
        "removed.",
    )
    remove.add_argument(
        "--resource-pattern-type", type=str.lower, choices=filters, default="literal"
    )
    add.set_defaults(handler=_acls_add)
    alist.set_defaults(handler=_acls_list)
    remove.set_defaults(handler=_acls_remove)


def _resource_options() -> argparse.ArgumentParser:
    """The resources an ACL command names: --topic, --group, --transactional-id, --cluster."""
    resources = argparse.ArgumentParser(add_help=False)
    resources.add_argument(
        "--topic", action="append", default=[], metavar="T", help="a topic (or prefix); repeatable"
    )
    resources.add_argument(
        "--group", action="append", default=[], metavar="G", help="a group (or prefix); repeatable"
    )
    resources.add_argument(
        "--transactional-id",
        action="append",
        default=[],
        metavar="T",
        help="a sink table's name (or prefix), for commits with writes "
        "(docs/exactly-once.md); repeatable",
    )
    resources.add_argument(
        "--cluster", action="store_true", help=f"the cluster ({CLUSTER_NAME}): admin rights"
    )
    return resources


def _entry_options() -> argparse.ArgumentParser:
    """Who and what an ACL command grants or matches: principals, hosts, operations."""
    entries = argparse.ArgumentParser(add_help=False)
    for kind, example in (
        ("allow", " (Type:name: User:arn:aws:iam::<account>:role/<role>; User:* is everyone)"),
        ("deny", ""),
    ):
        entries.add_argument(
            f"--{kind}-principal",
            action="append",
            default=[],
            metavar="P",
            help=f"{kind} principal P{example}; repeatable",
        )
        entries.add_argument(
            f"--{kind}-host",
            action="append",
            default=[],
            metavar="H",
            help=f"only from address H, for the --{kind}-principal ones; repeatable",
        )
    entries.add_argument(
        "--operation",
        action="append",
        default=[],
        type=acl_operation,
        metavar="OP",
        help=f"one of {', '.join(pascal(o) for o in ACL_OPERATIONS)}; repeatable",
    )
    entries.add_argument(
        "--consumer",
        action="store_true",
        help="with --topic and --group: READ and DESCRIBE on the topics, READ on the groups",
    )
    return entries


def _caller(admin: AdminClient, args: argparse.Namespace) -> str:
    if args.as_principal:
        # A serve without the same --principal-header does not read it.
        return (
            f"{args.as_principal} (or User:ANONYMOUS, if the coordinator does not read "
            f"{args.principal_header})"
        )
    if admin.transport.sign:
        return "your IAM identity (User:<role ARN without its path> for an assumed role)"
    return "User:ANONYMOUS (the request named no principal: see --as-principal)"


def _raise_for_acl_apis(
    entries: Sequence[dict[str, Any]], admin: AdminClient, args: argparse.Namespace
) -> None:
    """Raise for what refuses the whole request (every entry carries it): 54 without the
    authorizer, 31 for a caller not allowed to manage ACLs."""
    for entry in entries:
        error = error_of(entry)
        if error == Errors.SECURITY_DISABLED:
            raise CommandError(
                "SECURITY_DISABLED: the coordinator's authorizer is off (so it keeps no ACLs, "
                "and everyone may do everything); turn it on with the setting "
                "groupcoord.authorizer.enabled=true: `groupcoord serve -c "
                "groupcoord.authorizer.enabled=true`, or GROUPCOORD_AUTHORIZER_ENABLED=true in "
                "a deployment's function environment"
            )
        if error == Errors.CLUSTER_AUTHORIZATION_FAILED:
            need = "DESCRIBE (or ALTER)" if args.action == "list" else "ALTER"
            doing = "list" if args.action == "list" else "change"
            raise CommandError(
                f"CLUSTER_AUTHORIZATION_FAILED: {_caller(admin, args)} may not {doing} ACLs: "
                f"that needs an ACL allowing it {need} on the cluster (acls add --cluster "
                f"--operation {'Describe' if args.action == 'list' else 'Alter'}), or to be "
                "one of the coordinator's super.users"
            )


def _acl_error_text(entry: dict[str, Any]) -> str:
    """Kafka's name and message (create-acls' messages say what is wrong with the ACL)."""
    error = error_of(entry)
    name = error.name if isinstance(error, Errors) else f"error {error}"
    return f"{name}: {entry['errorMessage']}" if entry.get("errorMessage") else name


def _acl_output(acls: Iterable[Acl], key: str, notes: list[str]) -> Output:
    shown = sorted(acls, key=lambda a: [cell(v) for v in a.row()])
    return Output(
        {key: [a.document() for a in shown]}, [(ACL_COLUMNS, [a.row() for a in shown])], notes
    )


def _acls_add(admin: AdminClient, args: argparse.Namespace) -> Output:
    acls = selected_acls(args, adding=True)
    results = admin.create_acls([a.creation() for a in acls])
    _raise_for_acl_apis(results, admin, args)
    added = [a for a, r in zip(acls, results, strict=True) if error_of(r) == Errors.NONE]
    failures = [
        f"{a}: {_acl_error_text(r)}"
        for a, r in zip(acls, results, strict=True)
        if error_of(r) != Errors.NONE
    ]
    if failures:
        done = f" (added the other {len(added)})" if added else ""
        raise CommandError("; ".join(failures) + done)
    return _acl_output(added, "added", [f"Added {len(added)} ACL(s)."])


def _acls_list(admin: AdminClient, args: argparse.Namespace) -> Output:
    resources: list[tuple[str, str | None]] = [*named_resources(args)]
    pattern = args.resource_pattern_type or ("literal" if resources else "any")
    found: dict[Acl, None] = {}
    for rtype, name in resources or [("ANY", None)]:
        for principal in args.principal or [None]:
            wanted = Acl(rtype, name, pattern.upper(), principal, None, "ANY", "ANY")
            body = admin.describe_acls(wanted.filter())
            _raise_for_acl_apis([body], admin, args)
            if error_of(body) != Errors.NONE:
                raise CommandError(f"describe-acls: {_acl_error_text(body)}")
            for resource in body.get("resources", []):
                found.update(dict.fromkeys(Acl.of(resource, a) for a in resource["acls"]))
    return _acl_output(found, "acls", [] if found else ["No ACLs."])


def _acls_remove(admin: AdminClient, args: argparse.Namespace) -> Output:
    filters = selected_acls(args, adding=False)
    results = admin.delete_acls([f.filter() for f in filters])
    _raise_for_acl_apis(results, admin, args)
    removed: dict[Acl, None] = {}
    failures = []
    for result in results:
        if error_of(result) != Errors.NONE:
            failures.append(_acl_error_text(result))
        for matched in result.get("matchingAcls", []):
            if error_of(matched) == Errors.NONE:
                removed[Acl.of(matched, matched)] = None
            else:
                failures.append(f"{Acl.of(matched, matched)}: {_acl_error_text(matched)}")
    if failures:
        done = f" (removed {len(removed)})" if removed else ""
        raise CommandError("; ".join(failures) + done)
    note = f"Removed {len(removed)} ACL(s)." if removed else "No ACL matched: nothing removed."
    return _acl_output(removed, "removed", [note])
