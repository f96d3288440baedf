"""The admin commands of `groupcoord`, in the spirit of Kafka's kafka-topics.sh,
kafka-consumer-groups.sh and kafka-acls.sh:

    groupcoord topics  create|list|describe|alter|delete
    groupcoord groups  list|describe|delete
    groupcoord offsets show|reset|delete|import|export
    groupcoord acls    add|list|remove
    groupcoord kinesis import-kcl|export-kcl   (admin/kcl/commands.py)

Every command takes `--url` (default $GROUPCOORD_URL, else http://127.0.0.1:8080) and `--json`
(a JSON document instead of a table). A refusal or an unreachable coordinator is one line on
stderr and exit status 1; a usage error exit status 2. Requests go through the client's
Transport: retries, timeouts, and SigV4 signing for an https (deployed) URL. A local test aid,
`--as-principal P --principal-header NAME`, names the caller to a `groupcoord serve
--principal-header NAME`.
"""

from __future__ import annotations

import argparse
import base64
import binascii
import functools
import json
import os
import re
import sys
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from .admin.kinesis_shards import COLUMNS as KINESIS_COLUMNS
from .admin.kinesis_shards import fetch_lags, kinesis_row, kinesis_shards
from .admin.streams_groups import streams_group, streams_tables
from .client.errors import GroupcoordError
from .client.paging import list_groups_all_pages, metadata_all_pages
from .client.transport import Transport
from .errors import Errors
from .wire.consumer_protocol import ConsumerProtocolError, decode_assignment

DEFAULT_URL = "http://127.0.0.1:8080"
COMMANDS = ("topics", "groups", "offsets", "acls", "kinesis")

# What an error code means to someone running the tool (Kafka's names stay in the message).
EXPLAIN: dict[Errors, str] = {
    Errors.UNKNOWN_TOPIC_OR_PARTITION: "no such topic or partition",
    Errors.TOPIC_ALREADY_EXISTS: "the topic already exists",
    Errors.INVALID_PARTITIONS: "invalid partition count",
    Errors.NON_EMPTY_GROUP: "the group still has members; stop them first",
    Errors.GROUP_ID_NOT_FOUND: "no such group",
    Errors.GROUP_SUBSCRIBED_TO_TOPIC: "the group still subscribes to the topic",
    Errors.COORDINATOR_NOT_AVAILABLE: "the coordinator is not available; retry",
    Errors.NOT_COORDINATOR: "the coordinator moved; retry",
    Errors.COORDINATOR_LOAD_IN_PROGRESS: "the coordinator is busy; retry",
    Errors.GROUP_AUTHORIZATION_FAILED: "not authorized for this group",
    Errors.TOPIC_AUTHORIZATION_FAILED: "not authorized for this topic",
    Errors.INVALID_REQUEST: "invalid request",
}


class CommandError(Exception):
    """A refusal to report as one line on stderr (exit status 1)."""


@dataclass
class Output:
    """What a command prints: a table for people, a document for --json."""

    document: Any
    tables: list[tuple[list[str], list[list[Any]]]]
    notes: list[str]
    # One line each, on stderr after the output, exit status 1: what failed while the rest
    # went on (one group of several, as kafka-consumer-groups.sh does).
    failures: list[str] = field(default_factory=list)


# --- parsers ---


def add_commands(sub: argparse._SubParsersAction) -> None:
    """Add `topics`, `groups`, `offsets` and `acls` to the `groupcoord` parser."""
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument(
        "--url",
        default=os.environ.get("GROUPCOORD_URL") or DEFAULT_URL,
        help="the coordinator's base URL (default: $GROUPCOORD_URL, else %(default)s)",
    )
    common.add_argument("--json", action="store_true", help="print JSON instead of a table")
    common.add_argument(
        "--timeout", type=float, default=10.0, metavar="S", help="per-request timeout"
    )
    common.add_argument(
        "--as-principal",
        metavar="P",
        default=os.environ.get("GROUPCOORD_AS_PRINCIPAL") or None,
        help="a local test aid: claim to be principal P (e.g. User:alice) to a `groupcoord "
        "serve --principal-header NAME` (default: $GROUPCOORD_AS_PRINCIPAL); refused for an "
        "https URL: a deployment knows the caller by its IAM identity",
    )
    common.add_argument(
        "--principal-header",
        metavar="NAME",
        default=os.environ.get("GROUPCOORD_PRINCIPAL_HEADER") or None,
        help="the header --as-principal is sent in: the serve's --principal-header (default: "
        "$GROUPCOORD_PRINCIPAL_HEADER)",
    )

    topics = sub.add_parser("topics", help="manage the topic registry")
    tsub = topics.add_subparsers(dest="action", required=True, metavar="ACTION")
    create = tsub.add_parser("create", parents=[common], help="create a topic")
    create.add_argument("topic")
    create.add_argument(
        "--partitions", type=int, default=-1, help="default: the coordinator's num.partitions"
    )
    create.add_argument("--if-not-exists", action="store_true")
    create.add_argument(
        "--config",
        action="append",
        default=[],
        type=_config_pair,
        metavar="NAME=VALUE",
        help="a topic config, repeatable (as kafka-topics.sh's), e.g. "
        "groupcoord.kinesis.stream.arn=ARN to back the topic by a Kinesis stream",
    )
    tsub.add_parser("list", parents=[common], help="list every topic")
    describe = tsub.add_parser("describe", parents=[common], help="describe topics")
    describe.add_argument("topics", nargs="+", metavar="topic")
    alter = tsub.add_parser("alter", parents=[common], help="grow a topic's partition count")
    alter.add_argument("topic")
    alter.add_argument("--partitions", type=int, required=True, help="the new (larger) count")
    delete = tsub.add_parser("delete", parents=[common], help="delete topics")
    delete.add_argument("topics", nargs="+", metavar="topic")

    groups = sub.add_parser("groups", help="list, describe and delete consumer groups")
    gsub = groups.add_subparsers(dest="action", required=True, metavar="ACTION")
    glist = gsub.add_parser("list", parents=[common], help="list groups")
    glist.add_argument("--state", action="append", default=[], help="only groups in STATE")
    glist.add_argument(
        "--type", action="append", default=[], choices=["classic", "consumer", "streams"]
    )
    gdescribe = gsub.add_parser("describe", parents=[common], help="members and assignments")
    gdescribe.add_argument("groups", nargs="*", metavar="group")
    gdescribe.add_argument("--all-groups", action="store_true", help="every group listed")
    shown = gdescribe.add_mutually_exclusive_group()
    shown.add_argument("--members", action="store_true", help="only the members (and tasks)")
    shown.add_argument("--state", action="store_true", help="only the groups' state")
    gdelete = gsub.add_parser("delete", parents=[common], help="delete empty groups")
    gdelete.add_argument("groups", nargs="+", metavar="group")

    offsets = sub.add_parser("offsets", help="show, reset, delete, import and export offsets")
    osub = offsets.add_subparsers(dest="action", required=True, metavar="ACTION")
    show = osub.add_parser("show", parents=[common], help="committed offsets and owners")
    show.add_argument("group")
    show.add_argument("--topic", action="append", default=[], help="only this topic")
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
    reset.add_argument("--to-earliest", action="store_true", help="offset 0")
    reset.add_argument(
        "--to-latest", action="store_true", help="the end (needs --to-offset: see above)"
    )
    reset.add_argument("--to-offset", type=int, metavar="N", help="this offset")
    reset.add_argument(
        "--to-datetime",
        metavar="WHEN",
        help="refused with the reason: the coordinator keeps no log to find offsets by time",
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
    odelete = osub.add_parser("delete", parents=[common], help="delete committed offsets")
    odelete.add_argument("group")
    odelete.add_argument(
        "--topic", action="append", required=True, metavar="TOPIC[:P,P...]", help="repeatable"
    )
    from .admin.offsets_transfer import add_csv_commands  # it uses this module's Admin

    add_csv_commands(osub, common)

    _add_acl_commands(sub, common)
    from .admin.kcl.commands import add_kinesis_commands  # it uses this module's Admin

    add_kinesis_commands(sub, common)


def _add_acl_commands(sub: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    acls = sub.add_parser(
        "acls",
        help="add, list and remove ACLs",
        description="The authorizer's ACLs, as kafka-acls.sh manages them. They need the "
        "coordinator's authorizer (groupcoord.authorizer.enabled=true) and a caller allowed "
        "ALTER on the cluster (DESCRIBE to list), or one of its super.users.",
    )
    asub = acls.add_subparsers(dest="action", required=True, metavar="ACTION")
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
        type=_acl_operation,
        metavar="OP",
        help=f"one of {', '.join(_pascal(o) for o in ACL_OPERATIONS)}; repeatable",
    )
    entries.add_argument(
        "--consumer",
        action="store_true",
        help="with --topic and --group: READ and DESCRIBE on the topics, READ on the groups",
    )
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


def run(args: argparse.Namespace) -> int:
    """Run a parsed admin command; print its output; return the exit status."""
    prog = f"groupcoord {args.command} {args.action}"
    try:
        admin = Admin(_transport(args))
        command = getattr(args, "handler", None) or COMMAND_TABLE[(args.command, args.action)]
        output = command(admin, args)
    except ValueError as error:  # a malformed --url, a misused --as-principal
        print(f"{prog}: {error}", file=sys.stderr)
        return 2
    except (CommandError, GroupcoordError) as error:
        print(f"{prog}: {_one_line(str(error))}", file=sys.stderr)
        return 1
    _print(output, args.json)
    for failure in output.failures:
        print(f"{prog}: {_one_line(failure)}", file=sys.stderr)
    return 1 if output.failures else 0


# --- talking to the coordinator ---


def _transport(args: argparse.Namespace) -> Transport:
    """The client's Transport; one that names the caller in a header with --as-principal.
    ValueError (a usage error) for a malformed --url or a misused --as-principal."""
    options: dict[str, Any] = {"client_id": "groupcoord-cli", "timeout_s": args.timeout}
    if args.as_principal is None:
        return Transport(args.url, **options)
    if not args.principal_header:
        raise ValueError(
            "--as-principal needs --principal-header NAME: the header the coordinator was "
            "started with (groupcoord serve --principal-header NAME)"
        )
    if urlsplit(args.url).scheme == "https":
        raise ValueError(
            "--as-principal is a local test aid (groupcoord serve --principal-header); a "
            "deployed coordinator knows the caller by its IAM identity (SigV4), which no "
            "header can replace"
        )
    # A local test aid: every request names its principal in the header `groupcoord serve
    # --principal-header NAME` takes it from (as a Lambda authorizer would). Never signed: a
    # deployment does not read such a header.
    headers = {args.principal_header: args.as_principal}
    return Transport(args.url, sign=False, headers=headers, **options)


class Admin:
    def __init__(self, transport: Transport) -> None:
        self.transport = transport
        self._coordinators: dict[str, Transport] = {}

    def call(self, api: str, body: dict[str, Any]) -> dict[str, Any]:
        return self.transport.call(api, body).body

    def group_call(self, group: str, api: str, body: dict[str, Any]) -> dict[str, Any]:
        """A group API goes to the group's coordinator (find-coordinator), as Kafka's tools
        do; for `serve` and a deployed API that is the same endpoint."""
        if group not in self._coordinators:
            reply = self.call("find-coordinator", {"keyType": 0, "coordinatorKeys": [group]})
            entry = (reply.get("coordinators") or [{}])[0]
            _raise_for(entry, f"find-coordinator {group}")
            endpoint = entry.get("endpoint") or self.transport.base_url
            self._coordinators[group] = self.transport.with_base_url(endpoint)
        return self._coordinators[group].call(api, body).body

    def topics(self, names: Iterable[str] | None = None) -> list[dict[str, Any]]:
        """Topics as {name, topicId, partitions}; every topic when `names` is None."""
        wanted = None if names is None else [{"name": n} for n in names]
        body = metadata_all_pages(self.call, wanted)
        found = []
        for topic in body.get("topics", []):
            _raise_for(topic, f"topic {topic.get('name')}")
            found.append(
                {
                    "name": topic["name"],
                    "topicId": topic.get("topicId"),
                    "partitions": len(topic.get("partitions", [])),
                    **_stream_of(topic),
                }
            )
        return sorted(found, key=lambda t: t["name"])

    def describe_group(self, group: str) -> dict[str, Any]:
        """One shape for both group types: {groupId, type, state, protocol, epoch, members:
        [{memberId, instanceId, clientId, host, epoch, assignment: {topic: [p...]}}]}."""
        body = self.group_call(group, "consumer-group-describe", {"groupIds": [group]})
        described = body["groups"][0]
        if described.get("errorCode", 0) == 0:
            return {
                "groupId": group,
                "type": "consumer",
                "state": described.get("groupState", ""),
                "protocol": described.get("assignorName", ""),
                "epoch": described.get("groupEpoch"),
                "members": [
                    {
                        "memberId": m["memberId"],
                        "instanceId": m.get("instanceId"),
                        "clientId": m.get("clientId", ""),
                        "host": m.get("clientHost", ""),
                        "epoch": m.get("memberEpoch"),
                        "assignment": {
                            tp.get("topicName") or tp["topicId"]: sorted(tp["partitions"])
                            for tp in m.get("assignment", {}).get("topicPartitions", [])
                        },
                    }
                    for m in described.get("members", [])
                ],
            }
        if described.get("errorCode") != Errors.GROUP_ID_NOT_FOUND:
            _raise_for(described, f"group {group}")
        body = self.group_call(group, "streams-group-describe", {"groupIds": [group]})
        described = body["groups"][0]
        if described.get("errorCode", 0) == 0:
            return streams_group(described)
        if described.get("errorCode") != Errors.GROUP_ID_NOT_FOUND:
            _raise_for(described, f"group {group}")
        body = self.group_call(group, "describe-groups", {"groups": [group]})
        described = body["groups"][0]
        _raise_for(described, f"group {group}")
        if described.get("groupState") == "Dead":
            raise CommandError(f"group {group}: GROUP_ID_NOT_FOUND: no such group")
        consumer = described.get("protocolType") == "consumer"
        return {
            "groupId": group,
            "type": "classic",
            "state": described.get("groupState", ""),
            "protocol": described.get("protocolData", ""),
            "epoch": self.generation(group),
            "members": [
                {
                    "memberId": m["memberId"],
                    "instanceId": m.get("groupInstanceId"),
                    "clientId": m.get("clientId", ""),
                    "host": m.get("clientHost", ""),
                    "epoch": None,
                    "assignment": _classic_assignment(m.get("memberAssignment"), consumer),
                }
                for m in described.get("members", [])
            ],
        }

    def generation(self, group: str) -> int | None:
        """A classic group's generation, which describe-groups does not tell: from
        describe-group-activity's summary, as the dashboard shows it (None if refused)."""
        try:
            body = self.group_call(group, "describe-group-activity", {"groupIds": [group]})
        except GroupcoordError:
            return None
        found = (body.get("groups") or [{}])[0]
        return found.get("epoch") if found.get("errorCode", 0) == 0 else None

    def committed(self, group: str, topics: Sequence[str] | None = None) -> dict:
        """{(topic, partition): (offset, metadata)} of what the group committed."""
        wanted = None if not topics else [{"name": t} for t in topics]
        body = self.group_call(
            group, "offset-fetch", {"groups": [{"groupId": group, "topics": wanted}]}
        )
        fetched = body["groups"][0]
        _raise_for(fetched, f"group {group}")
        result = {}
        for topic in fetched.get("topics", []):
            for p in topic.get("partitions", []):
                _raise_for(p, f"{topic['name']}-{p['partitionIndex']}")
                if p["committedOffset"] >= 0:
                    result[(topic["name"], p["partitionIndex"])] = (
                        p["committedOffset"],
                        p.get("metadata"),
                    )
        return result


def _stream_of(topic: dict[str, Any]) -> dict[str, str]:
    arn = topic.get("kinesisStreamArn")
    return {"kinesisStreamArn": arn} if arn else {}


def _classic_assignment(raw: str | None, consumer: bool) -> dict[str, list[int]]:
    if not raw or not consumer:
        return {}
    try:
        return {
            t: sorted(ps) for t, ps in decode_assignment(base64.b64decode(raw)).partitions.items()
        }
    except (ConsumerProtocolError, binascii.Error, ValueError):
        return {}


def _error_of(entry: dict[str, Any]) -> Errors | int:
    code = entry.get("errorCode", 0) or 0
    try:
        return Errors(code)
    except ValueError:
        return code


def _describe_error(entry: dict[str, Any]) -> str:
    error = _error_of(entry)
    name = error.name if isinstance(error, Errors) else f"error {error}"
    explained = EXPLAIN.get(error) if isinstance(error, Errors) else None
    message = entry.get("errorMessage")  # the server's own words first
    return ": ".join(part for part in (name, message or explained) if part)


def _raise_for(entry: dict[str, Any], what: str) -> None:
    if _error_of(entry) != Errors.NONE:
        raise CommandError(f"{what}: {_describe_error(entry)}")


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _parse_topic_spec(spec: str) -> tuple[str, list[int] | None]:
    """`orders` (every partition) or `orders:0,2,5`."""
    name, sep, parts = spec.partition(":")
    if not name:
        raise CommandError(f"bad --topic {spec!r}: expected TOPIC or TOPIC:P,P")
    if not sep:
        return name, None
    try:
        partitions = sorted({int(p) for p in parts.split(",") if p.strip()})
    except ValueError:
        raise CommandError(f"bad --topic {spec!r}: partitions must be integers") from None
    if not partitions or partitions[0] < 0:
        raise CommandError(f"bad --topic {spec!r}: expected TOPIC:P,P with P >= 0")
    return name, partitions


def _partitions_of(admin: Admin, specs: Sequence[str]) -> list[tuple[str, int]]:
    """Expand TOPIC[:P,...] specs against the topic registry (unknown ones are refused)."""
    parsed = [_parse_topic_spec(s) for s in specs]
    counts = {t["name"]: t["partitions"] for t in admin.topics(sorted({n for n, _ in parsed}))}
    result: set[tuple[str, int]] = set()
    for name, partitions in parsed:
        count = counts[name]
        if partitions is None:
            result.update((name, p) for p in range(count))
            continue
        missing = [p for p in partitions if p >= count]
        if missing:
            raise CommandError(f"topic {name} has {count} partitions; no partition {missing[0]}")
        result.update((name, p) for p in partitions)
    return sorted(result)


# --- topics ---


def _config_pair(text: str) -> tuple[str, str]:
    name, equals, value = text.partition("=")
    if not equals or not name.strip():
        raise argparse.ArgumentTypeError(f"expected NAME=VALUE, not {text!r}")
    return name.strip(), value


def _topics_create(admin: Admin, args: argparse.Namespace) -> Output:
    asked: dict[str, Any] = {"name": args.topic, "numPartitions": args.partitions}
    if args.config:
        asked["configs"] = [{"name": n, "value": v} for n, v in args.config]
    body = admin.call("create-topics", {"topics": [asked]})
    topic = body["topics"][0]
    exists = _error_of(topic) == Errors.TOPIC_ALREADY_EXISTS
    if exists and args.if_not_exists:
        shown = admin.topics([args.topic])[0]
        return Output({"topic": shown, "created": False}, [], [f"Topic {args.topic} exists."])
    _raise_for(topic, f"topic {args.topic}")
    shown = {
        "name": topic["name"],
        "topicId": topic.get("topicId"),
        "partitions": topic.get("numPartitions"),
        **({"configs": dict(args.config)} if args.config else {}),
    }
    note = f"Created topic {args.topic} ({shown['partitions']} partitions, id {shown['topicId']})."
    return Output({"topic": shown, "created": True}, [], [note])


def _topic_rows(topics: list[dict[str, Any]]) -> list[list[Any]]:
    return [[t["name"], t["topicId"], t["partitions"]] for t in topics]


def _topics_list(admin: Admin, args: argparse.Namespace) -> Output:
    topics = admin.topics()
    return Output(
        {"topics": topics},
        [(["TOPIC", "TOPIC-ID", "PARTITIONS"], _topic_rows(topics))],
        [] if topics else ["No topics."],
    )


def _topics_describe(admin: Admin, args: argparse.Namespace) -> Output:
    topics = admin.topics(args.topics)
    return Output(
        {"topics": topics}, [(["TOPIC", "TOPIC-ID", "PARTITIONS"], _topic_rows(topics))], []
    )


def _topics_alter(admin: Admin, args: argparse.Namespace) -> Output:
    body = admin.call(
        "create-partitions", {"topics": [{"name": args.topic, "count": args.partitions}]}
    )
    _raise_for(body["results"][0], f"topic {args.topic}")
    shown = admin.topics([args.topic])[0]
    return Output(
        {"topic": shown}, [], [f"Topic {args.topic} now has {shown['partitions']} partitions."]
    )


def _topics_delete(admin: Admin, args: argparse.Namespace) -> Output:
    body = admin.call("delete-topics", {"topics": [{"name": n} for n in args.topics]})
    failures = [r for r in body.get("responses", []) if _error_of(r) != Errors.NONE]
    if failures:
        raise CommandError(
            "; ".join(f"topic {r.get('name')}: {_describe_error(r)}" for r in failures)
        )
    return Output({"deleted": list(args.topics)}, [], [f"Deleted topic {n}." for n in args.topics])


# --- groups ---


def _groups_list(admin: Admin, args: argparse.Namespace) -> Output:
    body = list_groups_all_pages(admin.call, args.state, args.type)
    _raise_for(body, "list-groups")
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


def _groups_describe(admin: Admin, args: argparse.Namespace) -> Output:
    if bool(args.groups) == args.all_groups:
        raise CommandError("name the groups to describe, or give --all-groups")
    groups = args.groups
    if args.all_groups:
        listed = list_groups_all_pages(admin.call, [], [])
        _raise_for(listed, "list-groups")
        groups = sorted(g["groupId"] for g in listed.get("groups", []))
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


def _group_tables(g: dict[str, Any]) -> list[tuple[list[str], list[list[Any]]]]:
    return [
        (
            ["GROUP", "TYPE", "STATE", "ASSIGNOR", "EPOCH", "MEMBERS"],
            [[g["groupId"], g["type"], g["state"], g["protocol"], g["epoch"], len(g["members"])]],
        ),
        (
            ["MEMBER-ID", "INSTANCE-ID", "CLIENT-ID", "HOST", "EPOCH", "ASSIGNMENT"],
            [
                [
                    m["memberId"],
                    m["instanceId"],
                    m["clientId"],
                    m["host"],
                    m["epoch"],
                    _assignment_text(m["assignment"]),
                ]
                for m in sorted(g["members"], key=lambda m: m["memberId"])
            ],
        ),
    ]


def _groups_delete(admin: Admin, args: argparse.Namespace) -> Output:
    deleted, failures = [], []
    for group in args.groups:
        body = admin.group_call(group, "delete-groups", {"groupsNames": [group]})
        result = body["results"][0]
        if _error_of(result) == Errors.NONE:
            deleted.append(group)
        else:
            failures.append(f"group {group}: {_describe_error(result)}")
    if failures:
        done = f" (deleted: {', '.join(deleted)})" if deleted else ""
        raise CommandError("; ".join(failures) + done)
    return Output(
        {"deleted": deleted}, [], [f"Deleted group {g} and its offsets." for g in deleted]
    )


# --- offsets ---


def _owners(group: dict[str, Any]) -> dict[tuple[str, int], dict[str, Any]]:
    return {(t, p): m for m in group["members"] for t, ps in m["assignment"].items() for p in ps}


# kafka-consumer-groups.sh's names; LAG-MS: how far behind the owner said it was (a Kinesis
# consumer's MillisBehindLatest, any member's partitionLags), where one reported it.
OFFSET_COLUMNS = [
    *("TOPIC", "PARTITION", "CURRENT-OFFSET", "METADATA", "MEMBER-ID", "CLIENT-ID", "HOST"),
    "LAG-MS",
]


def _offsets_show(admin: Admin, args: argparse.Namespace) -> Output:
    committed = admin.committed(args.group, args.topic)
    try:
        group = admin.describe_group(args.group)
    except CommandError:
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
    for topic, partition in sorted(keys | set(shards)):
        offset, metadata = committed.get((topic, partition), (None, None))
        owner = owners.get((topic, partition), {})
        shard = shards.get((topic, partition))
        document.append(
            {
                "topic": topic,
                "partition": partition,
                "offset": None if shard else offset,
                "metadata": metadata,
                "memberId": owner.get("memberId"),
                "clientId": owner.get("clientId"),
                "host": owner.get("host"),
                "lagMs": lags.get((topic, partition)),
                **({"kinesis": shard} if shard else {}),
            }
        )
        if shard:
            kinesis_rows.append(kinesis_row((topic, partition), shard, owner))
            continue
        rows.append(
            [
                topic,
                partition,
                offset,
                metadata,
                owner.get("memberId"),
                owner.get("clientId"),
                owner.get("host"),
                lags.get((topic, partition), "-"),
            ]
        )
    return Output(
        {"groupId": args.group, "state": group.get("state", ""), "offsets": document},
        [
            (OFFSET_COLUMNS, rows),
            (KINESIS_COLUMNS, kinesis_rows),
        ],
        [],
    )


_ONE_TARGET = (
    "give one of --to-earliest, --to-latest, --to-offset N, --shift-by N, --to-sequence SEQ[:SUB]"
)


@dataclass(frozen=True)
class Shift:
    """--shift-by: each partition's committed offset moved by `by`."""

    by: int

    def applied(self, current: int | None) -> int:
        return max(0, (current or 0) + self.by)


_SEQUENCE = re.compile(r"^(0|[1-9][0-9]{0,128})(?::([0-9]{1,19}))?$")


def _reset_target(args: argparse.Namespace) -> int | Shift | dict[str, Any]:
    """The offset to reset to, a shift, or a Kinesis position (kinesisPosition's JSON)."""
    given = [args.to_earliest, args.to_latest, args.to_offset is not None, args.to_sequence]
    if args.to_datetime is not None:
        raise CommandError(
            "--to-datetime: the coordinator keeps no log, so it cannot find an offset by time "
            "(kafka-consumer-groups.sh asks the brokers' time index): give --to-offset N, or "
            "for a Kinesis topic --to-sequence SEQ of the first record to read again"
        )
    if args.shift_by is not None:
        if any(given):
            raise CommandError(_ONE_TARGET)
        return Shift(args.shift_by)
    if args.to_sequence is not None:
        if sum(map(bool, given)) > 1:
            raise CommandError(_ONE_TARGET)
        found = _SEQUENCE.fullmatch(args.to_sequence)
        if found is None or int(found.group(2) or 0) >= 2**63:
            raise CommandError("--to-sequence: a sequence number of up to 129 digits[:SUB]")
        return {"sequenceNumber": found.group(1), "subSequenceNumber": int(found.group(2) or 0)}
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


def _require_empty(admin: Admin, group: str) -> None:
    try:
        described = admin.describe_group(group)
    except CommandError as error:
        if "GROUP_ID_NOT_FOUND" in str(error):
            return  # nothing there yet: offsets may be set before the first member starts
        raise
    if described["members"]:
        raise CommandError(
            f"group {group} has {len(described['members'])} member(s) (state "
            f"{described['state']}): offsets can only be reset while it is empty; stop its "
            "consumers first"
        )


def _offsets_reset(admin: Admin, args: argparse.Namespace) -> Output:
    target = _reset_target(args)
    _require_empty(admin, args.group)
    committed = admin.committed(args.group)
    if args.all_topics:
        partitions = sorted(committed)
        if not partitions:
            raise CommandError(f"group {args.group} has no committed offsets to reset")
    else:
        partitions = _partitions_of(admin, args.topic)
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
    return plan_output(args.group, plan, args.dry_run, note)


def commit_plan(admin: Admin, group: str, plan: list[dict[str, Any]]) -> None:
    """Write a reset plan's offsets (and Kinesis positions) as an admin's commit from outside
    the group (generation -1, no member id), which the coordinator admits only while the
    group is empty; a partition refused raises."""
    by_topic: dict[str, list[dict[str, Any]]] = {}
    for step in plan:
        entry = {"partitionIndex": step["partition"], "committedOffset": step["newOffset"]}
        if "newKinesisPosition" in step:
            entry["kinesisPosition"] = step["newKinesisPosition"]
        by_topic.setdefault(step["topic"], []).append(entry)
    body = admin.group_call(
        group,
        "offset-commit",
        {
            "groupId": group,
            "generationIdOrMemberEpoch": -1,
            "memberId": "",
            "topics": [{"name": t, "partitions": ps} for t, ps in by_topic.items()],
        },
    )
    for topic in body.get("topics", []):
        for p in topic.get("partitions", []):
            _raise_for(p, f"{topic.get('name')}-{p['partitionIndex']}")


def plan_output(group: str, plan: list[dict[str, Any]], dry_run: bool, note: str) -> Output:
    rows = [[s["topic"], s["partition"], s["currentOffset"], _shown_target(s)] for s in plan]
    return Output(
        {"groupId": group, "dryRun": dry_run, "plan": plan},
        [(["TOPIC", "PARTITION", "CURRENT-OFFSET", "NEW-OFFSET"], rows)],
        [note],
    )


def _new_offset(target: int | Shift | dict[str, Any], current: int | None) -> int:
    if isinstance(target, Shift):
        return target.applied(current)
    return target if isinstance(target, int) else 0  # a Kinesis position: beside offset 0


def _check_target_kinds(
    admin: Admin, topics: list[str], target: int | Shift | dict[str, Any]
) -> None:
    """Refuse, dry run or not, what the coordinator would refuse (42): an offset for a
    Kinesis-backed topic (its partitions are shards, checkpointed by sequence number), a
    sequence number for any other."""
    streams = {t["name"] for t in admin.topics(topics) if t.get("kinesisStreamArn")}
    for topic in topics:
        if not isinstance(target, dict) and topic in streams:
            raise CommandError(
                f"topic {topic} is backed by a Kinesis stream: its partitions are shards, "
                "reset by sequence number: --to-sequence SEQ[:SUB] (--to-sequence 0: each "
                "shard from its start, TRIM_HORIZON)"
            )
        if isinstance(target, dict) and topic not in streams:
            raise CommandError(
                f"topic {topic} is not Kinesis-backed: --to-sequence applies to Kinesis "
                "topics; give --to-earliest or --to-offset N"
            )


def _shown_target(step: dict[str, Any]) -> Any:
    position = step.get("newKinesisPosition")
    if position is None:
        return step["newOffset"]
    return f"{position['sequenceNumber']}:{position['subSequenceNumber']}"


def _offsets_delete(admin: Admin, args: argparse.Namespace) -> Output:
    partitions = _partitions_of(admin, args.topic)
    by_topic: dict[str, list[dict[str, int]]] = {}
    for t, p in partitions:
        by_topic.setdefault(t, []).append({"partitionIndex": p})
    body = admin.group_call(
        args.group,
        "offset-delete",
        {
            "groupId": args.group,
            "topics": [{"name": t, "partitions": ps} for t, ps in by_topic.items()],
        },
    )
    _raise_for(body, f"group {args.group}")
    failures = [
        f"{t.get('name')}-{p['partitionIndex']}: {_describe_error(p)}"
        for t in body.get("topics", [])
        for p in t.get("partitions", [])
        if _error_of(p) != Errors.NONE
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


# --- acls ---

# Kafka's codes, by position: ResourceType, PatternType, AclOperation, AclPermissionType.
# core/acls.py has them as enums, but it imports the server's models (pydantic).
RESOURCE_TYPES = (
    "UNKNOWN", "ANY", "TOPIC", "GROUP", "CLUSTER", "TRANSACTIONAL_ID", "DELEGATION_TOKEN", "USER",
)  # fmt: skip
PATTERN_TYPES = ("UNKNOWN", "ANY", "MATCH", "LITERAL", "PREFIXED")
OPERATIONS = (
    "UNKNOWN", "ANY", "ALL", "READ", "WRITE", "CREATE", "DELETE", "ALTER", "DESCRIBE",
    "CLUSTER_ACTION", "DESCRIBE_CONFIGS", "ALTER_CONFIGS", "IDEMPOTENT_WRITE", "CREATE_TOKENS",
    "DESCRIBE_TOKENS",
)  # fmt: skip
PERMISSION_TYPES = ("UNKNOWN", "ANY", "DENY", "ALLOW")
ACL_OPERATIONS = OPERATIONS[2:]  # what an ACL may name: not UNKNOWN, not the filter's ANY
CLUSTER_NAME = "kafka-cluster"  # the one name of the CLUSTER resource
WILDCARD_HOST = "*"
# AclEntry.supportedOperations of the types the CLI names: kafka-acls.sh refuses to add an ACL
# (other than ALL) that no check of its resource type would ever read.
SUPPORTED_OPERATIONS: dict[str, frozenset[str]] = {
    "TOPIC": frozenset(
        {"READ", "WRITE", "CREATE", "DESCRIBE", "DELETE", "ALTER"}
        | {"DESCRIBE_CONFIGS", "ALTER_CONFIGS"}
    ),
    "GROUP": frozenset({"READ", "DESCRIBE", "DELETE", "DESCRIBE_CONFIGS", "ALTER_CONFIGS"}),
    "TRANSACTIONAL_ID": frozenset({"DESCRIBE", "WRITE"}),
    "CLUSTER": frozenset(
        {"CREATE", "CLUSTER_ACTION", "DESCRIBE_CONFIGS", "ALTER_CONFIGS", "IDEMPOTENT_WRITE"}
        | {"ALTER", "DESCRIBE"}
    ),
}
# kafka-acls.sh --consumer.
CONSUMER_OPERATIONS = {"TOPIC": ("READ", "DESCRIBE"), "GROUP": ("READ",)}
ACL_COLUMNS = [
    "RESOURCE-TYPE", "RESOURCE-NAME", "PATTERN-TYPE", "PRINCIPAL", "HOST", "OPERATION",
    "PERMISSION",
]  # fmt: skip


def _pascal(name: str) -> str:
    """kafka-acls.sh's spelling of an operation: DESCRIBE_CONFIGS is DescribeConfigs."""
    return "".join(word.capitalize() for word in name.split("_"))


def _acl_operation(text: str) -> str:
    """An --operation as kafka-acls.sh takes it (Read, DescribeConfigs, any case) or as the
    enum names it (DESCRIBE_CONFIGS)."""
    key = text.strip().upper().replace("_", "").replace("-", "")
    for name in ACL_OPERATIONS:
        if name.replace("_", "") == key:
            return name
    raise argparse.ArgumentTypeError(
        f"unknown operation {text!r}: one of {', '.join(_pascal(o) for o in ACL_OPERATIONS)}"
    )


def _code_name(names: tuple[str, ...], code: int) -> str:
    return names[code] if 0 <= code < len(names) else str(code)


@dataclass(frozen=True)
class Acl:
    """An ACL by Kafka's names (TOPIC, LITERAL, READ, ALLOW); as a filter (acls remove, list),
    None and ANY match anything."""

    resource_type: str
    resource_name: str | None
    pattern_type: str
    principal: str | None
    host: str | None
    operation: str
    permission: str

    @classmethod
    def of(cls, resource: dict[str, Any], acl: dict[str, Any]) -> Acl:
        """From describe-acls' resource and one of its ACLs, or delete-acls' matching ACL
        (both)."""
        return cls(
            _code_name(RESOURCE_TYPES, resource["resourceType"]),
            resource["resourceName"],
            _code_name(PATTERN_TYPES, resource.get("patternType", 3)),
            acl["principal"],
            acl["host"],
            _code_name(OPERATIONS, acl["operation"]),
            _code_name(PERMISSION_TYPES, acl["permissionType"]),
        )

    def creation(self) -> dict[str, Any]:
        return {
            "resourceType": RESOURCE_TYPES.index(self.resource_type),
            "resourceName": self.resource_name,
            "resourcePatternType": PATTERN_TYPES.index(self.pattern_type),
            "principal": self.principal,
            "host": self.host,
            "operation": OPERATIONS.index(self.operation),
            "permissionType": PERMISSION_TYPES.index(self.permission),
        }

    def filter(self) -> dict[str, Any]:
        return {
            "resourceTypeFilter": RESOURCE_TYPES.index(self.resource_type),
            "resourceNameFilter": self.resource_name,
            "patternTypeFilter": PATTERN_TYPES.index(self.pattern_type),
            "principalFilter": self.principal,
            "hostFilter": self.host,
            "operation": OPERATIONS.index(self.operation),
            "permissionType": PERMISSION_TYPES.index(self.permission),
        }

    def row(self) -> list[Any]:
        return [
            self.resource_type,
            self.resource_name,
            self.pattern_type,
            self.principal,
            self.host,
            self.operation,
            self.permission,
        ]

    def document(self) -> dict[str, Any]:
        return {
            "resourceType": self.resource_type,
            "resourceName": self.resource_name,
            "patternType": self.pattern_type,
            "principal": self.principal,
            "host": self.host,
            "operation": self.operation,
            "permissionType": self.permission,
        }

    def __str__(self) -> str:
        return (
            f"{self.permission} {self.principal} {self.operation} on {self.resource_type} "
            f"{self.resource_name} ({self.pattern_type}, host {self.host})"
        )


def _named_resources(args: argparse.Namespace) -> list[tuple[str, str]]:
    cluster = [("CLUSTER", CLUSTER_NAME)] if args.cluster else []
    transactional = [("TRANSACTIONAL_ID", t) for t in args.transactional_id]
    named = [("TOPIC", t) for t in args.topic] + [("GROUP", g) for g in args.group]
    return named + transactional + cluster


def _selected_acls(args: argparse.Namespace, *, adding: bool) -> list[Acl]:
    """What `acls add` creates, or the filters `acls remove` deletes with, as kafka-acls.sh
    pairs its options: each resource with each operation and each (principal, host). Removing,
    what is not given matches anything."""
    resources = _named_resources(args)
    if not resources:
        raise CommandError(
            "name the resource: --topic T, --group G, --transactional-id T or --cluster"
        )
    for kind in ("allow", "deny"):
        if getattr(args, f"{kind}_host") and not getattr(args, f"{kind}_principal"):
            raise CommandError(f"--{kind}-host needs --{kind}-principal")
    default_host = WILDCARD_HOST if adding else None
    entries: list[tuple[str | None, str | None, str]] = [
        (principal, host, permission)
        for principals, hosts, permission in (
            (args.allow_principal, args.allow_host, "ALLOW"),
            (args.deny_principal, args.deny_host, "DENY"),
        )
        for principal in principals
        for host in hosts or [default_host]
    ]
    if not entries:
        if adding:
            raise CommandError("name who: --allow-principal P or --deny-principal P")
        entries = [(None, None, "ANY")]
    if args.consumer:
        misfits = args.operation or args.cluster or args.deny_principal
        if misfits or not (args.topic and args.group):
            raise CommandError(
                "--consumer takes --topic and --group, and no --operation, --cluster or "
                "--deny-principal"
            )
        operations: dict[str, Sequence[str]] = CONSUMER_OPERATIONS
    elif args.operation:
        operations = {rtype: args.operation for rtype, _ in resources}
    elif adding:
        raise CommandError("name the operations: --operation OP (repeatable), e.g. Read")
    else:
        operations = {rtype: ["ANY"] for rtype, _ in resources}
    if adding:
        for rtype, _ in resources:
            unsupported = sorted(set(operations[rtype]) - SUPPORTED_OPERATIONS[rtype] - {"ALL"})
            if unsupported:
                raise CommandError(
                    f"a {rtype} ACL cannot grant {', '.join(unsupported)}: it takes "
                    + ", ".join(sorted(SUPPORTED_OPERATIONS[rtype] | {"ALL"}))
                )
    pattern = args.resource_pattern_type.upper()
    return list(
        dict.fromkeys(
            Acl(rtype, name, pattern, principal, host, operation, permission)
            for rtype, name in resources
            for operation in operations[rtype]
            for principal, host, permission in entries
        )
    )


def _caller(admin: Admin, args: argparse.Namespace) -> str:
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
    entries: Sequence[dict[str, Any]], admin: Admin, args: argparse.Namespace
) -> None:
    """Raise for what refuses the whole request (every entry carries it): 54 without the
    authorizer, 31 for a caller not allowed to manage ACLs."""
    for entry in entries:
        error = _error_of(entry)
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
    error = _error_of(entry)
    name = error.name if isinstance(error, Errors) else f"error {error}"
    return f"{name}: {entry['errorMessage']}" if entry.get("errorMessage") else name


def _acl_output(acls: Iterable[Acl], key: str, notes: list[str]) -> Output:
    shown = sorted(acls, key=lambda a: [_cell(v) for v in a.row()])
    return Output(
        {key: [a.document() for a in shown]}, [(ACL_COLUMNS, [a.row() for a in shown])], notes
    )


def _acls_add(admin: Admin, args: argparse.Namespace) -> Output:
    acls = _selected_acls(args, adding=True)
    body = admin.call("create-acls", {"creations": [a.creation() for a in acls]})
    results = body.get("results", [])
    _raise_for_acl_apis(results, admin, args)
    added = [a for a, r in zip(acls, results, strict=True) if _error_of(r) == Errors.NONE]
    failures = [
        f"{a}: {_acl_error_text(r)}"
        for a, r in zip(acls, results, strict=True)
        if _error_of(r) != Errors.NONE
    ]
    if failures:
        done = f" (added the other {len(added)})" if added else ""
        raise CommandError("; ".join(failures) + done)
    return _acl_output(added, "added", [f"Added {len(added)} ACL(s)."])


def _acls_list(admin: Admin, args: argparse.Namespace) -> Output:
    resources: list[tuple[str, str | None]] = [*_named_resources(args)]
    pattern = args.resource_pattern_type or ("literal" if resources else "any")
    found: dict[Acl, None] = {}
    for rtype, name in resources or [("ANY", None)]:
        for principal in args.principal or [None]:
            wanted = Acl(rtype, name, pattern.upper(), principal, None, "ANY", "ANY")
            body = admin.call("describe-acls", wanted.filter())
            _raise_for_acl_apis([body], admin, args)
            if _error_of(body) != Errors.NONE:
                raise CommandError(f"describe-acls: {_acl_error_text(body)}")
            for resource in body.get("resources", []):
                found.update(dict.fromkeys(Acl.of(resource, a) for a in resource["acls"]))
    return _acl_output(found, "acls", [] if found else ["No ACLs."])


def _acls_remove(admin: Admin, args: argparse.Namespace) -> Output:
    filters = _selected_acls(args, adding=False)
    body = admin.call("delete-acls", {"filters": [f.filter() for f in filters]})
    results = body.get("filterResults", [])
    _raise_for_acl_apis(results, admin, args)
    removed: dict[Acl, None] = {}
    failures = []
    for result in results:
        if _error_of(result) != Errors.NONE:
            failures.append(_acl_error_text(result))
        for matched in result.get("matchingAcls", []):
            if _error_of(matched) == Errors.NONE:
                removed[Acl.of(matched, matched)] = None
            else:
                failures.append(f"{Acl.of(matched, matched)}: {_acl_error_text(matched)}")
    if failures:
        done = f" (removed {len(removed)})" if removed else ""
        raise CommandError("; ".join(failures) + done)
    note = f"Removed {len(removed)} ACL(s)." if removed else "No ACL matched: nothing removed."
    return _acl_output(removed, "removed", [note])


COMMAND_TABLE: dict[tuple[str, str], Callable[[Admin, argparse.Namespace], Output]] = {
    ("topics", "create"): _topics_create,
    ("topics", "list"): _topics_list,
    ("topics", "describe"): _topics_describe,
    ("topics", "alter"): _topics_alter,
    ("topics", "delete"): _topics_delete,
    ("groups", "list"): _groups_list,
    ("groups", "describe"): _groups_describe,
    ("groups", "delete"): _groups_delete,
    ("offsets", "show"): _offsets_show,
    ("offsets", "reset"): _offsets_reset,
    ("offsets", "delete"): _offsets_delete,
    ("acls", "add"): _acls_add,
    ("acls", "list"): _acls_list,
    ("acls", "remove"): _acls_remove,
}


# --- printing ---


def _cell(value: Any) -> str:
    return "-" if value is None or value == "" else str(value)


def format_table(header: list[str], rows: list[list[Any]]) -> str:
    cells = [header] + [[_cell(v) for v in row] for row in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(header))]
    return "\n".join(
        "  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in cells
    )


def _print(output: Output, as_json: bool) -> None:
    if as_json:
        print(json.dumps(output.document, indent=2, sort_keys=True))
        return
    blocks = [format_table(h, rows) for h, rows in output.tables if rows]
    blocks += output.notes
    print("\n\n".join(blocks))
