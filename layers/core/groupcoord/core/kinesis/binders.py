"""Who may bind a topic to a Kinesis stream (pure), when the authorizer is on: a topic bound to
a stream gives whoever may describe it the stream's shards, hash ranges and sequence numbers,
and lets groups checkpoint on it, so binding needs a right over the stream itself, not only
CREATE on the topic's name. The right is the deployment's setting
`groupcoord.kinesis.stream.binders`: principals, each with the stream ARNs (or ARN prefixes,
ending in `*`) it may bind. Super users may bind any stream; with the authorizer off anyone
may (as before). The same rule holds for any other source a topic may be bound to."""

from __future__ import annotations

import re
from collections.abc import Mapping

SETTING = "groupcoord.kinesis.stream.binders"
EVERYONE = "User:*"
# A principal as the ACLs name it (core/principals.py), and an ARN or an ARN prefix and `*`.
_PRINCIPAL = re.compile(r"[\x21-\x39\x3b-\x7e]+:[\x21-\x3a\x3c-\x7e]+", re.ASCII)
_PATTERN = re.compile(r"arn:[a-z0-9-]*(:[a-zA-Z0-9/_.*-]*){0,5}", re.ASCII)
PATTERN_MAX_CHARS = 2048

Binders = Mapping[str, tuple[str, ...]]


def parse_binders(text: str) -> dict[str, tuple[str, ...]]:
    """`PRINCIPAL=ARN[,ARN...]` entries separated by `;` (an ARN may end in `*`: every ARN
    it starts); ValueError for anything else."""
    found: dict[str, tuple[str, ...]] = {}
    for entry in (e.strip() for e in text.split(";")):
        if not entry:
            continue
        principal, equals, patterns = entry.rpartition("=")
        arns = tuple(p.strip() for p in patterns.split(",") if p.strip())
        if not equals or not _PRINCIPAL.fullmatch(principal) or not arns:
            raise ValueError(f"{SETTING}: {entry!r} is not PRINCIPAL=ARN[,ARN...]")
        for arn in arns:
            star = arn.find("*")
            if (
                len(arn) > PATTERN_MAX_CHARS
                or not _PATTERN.fullmatch(arn)
                or star not in (-1, len(arn) - 1)
            ):
                raise ValueError(f"{SETTING}: {arn!r} is not an ARN or an ARN prefix and '*'")
        found[principal] = found.get(principal, ()) + arns
    return found


def _matches(pattern: str, arn: str) -> bool:
    return arn.startswith(pattern[:-1]) if pattern.endswith("*") else arn == pattern


def may_bind(principal: str, arn: str, binders: Binders) -> bool:
    """Whether `principal` may bind a topic to stream `arn` (its own entry or `User:*`'s)."""
    return any(
        _matches(pattern, arn) for who in (principal, EVERYONE) for pattern in binders.get(who, ())
    )
