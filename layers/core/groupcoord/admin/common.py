"""What the admin commands share: the options every command takes (--url, --json, ...), the
client they build from them, TOPIC[:P,P...] specs, and the empty-group check of a reset."""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable, Sequence
from typing import Any
from urllib.parse import urlsplit

from ..client.admin import AdminClient, Refused
from ..client.transport import Transport
from .output import CommandError, Output

DEFAULT_URL = "http://127.0.0.1:8080"
Handler = Callable[[AdminClient, argparse.Namespace], Output]


def common_options() -> argparse.ArgumentParser:
    """The parent parser of every admin command: where the coordinator is, how to print."""
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
    return common


def transport_of(args: argparse.Namespace) -> Transport:
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


def parse_topic_spec(spec: str) -> tuple[str, list[int] | None]:
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


def partitions_of(admin: AdminClient, specs: Sequence[str]) -> list[tuple[str, int]]:
    """Expand TOPIC[:P,...] specs against the topic registry (unknown ones are refused)."""
    parsed = [parse_topic_spec(s) for s in specs]
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


def require_empty(admin: AdminClient, group: str) -> None:
    """Refuse to set a group's offsets while it has members (an unknown group is empty)."""
    try:
        described = admin.describe_group(group)
    except Refused as error:
        if "GROUP_ID_NOT_FOUND" in str(error):
            return  # nothing there yet: offsets may be set before the first member starts
        raise
    if described["members"]:
        raise CommandError(
            f"group {group} has {len(described['members'])} member(s) (state "
            f"{described['state']}): offsets can only be reset while it is empty; stop its "
            "consumers first"
        )
