"""Who the caller is, as Kafka names it (pure): a KafkaPrincipal string "Type:name", the
principal the ACLs of core/acls.py name.

In AWS the caller is the IAM identity API Gateway verified (IAM auth): its ARN becomes
`User:<arn>`. An assumed-role session ARN, `arn:aws:sts::123456789012:assumed-role/Role/session`,
becomes the role's ARN, `arn:aws:iam::123456789012:role/Role`, so that one ACL covers every
session of a role. The session ARN does not carry the role's path, so the role ARN is written
without it: an ACL for a role created under a path (`role/team/Role`, or the
`aws-reserved/sso.amazonaws.com/` roles of IAM Identity Center) must name
`User:arn:aws:iam::<account>:role/Role`. An IAM user's ARN (path included), the account root
and federated users are kept as they are. Cognito identity-pool callers arrive as sessions of
the pool's role: they are that role's principal (no per-identity ACLs).

A request without an identity is KafkaPrincipal.ANONYMOUS (`User:ANONYMOUS`). An identity that
is present but malformed (not an ARN, control characters, over the length bounds) raises
ValueError: the caller refuses the request rather than serve it as ANONYMOUS, whose ACLs (or
`allow.everyone.if.no.acl.found`) might let it through.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from ..models.limits import PRINCIPAL_MAX_CHARS

USER_TYPE = "User"  # KafkaPrincipal.USER_TYPE
ANONYMOUS = "User:ANONYMOUS"  # KafkaPrincipal.ANONYMOUS
# IAM's longest ARN; longer input is refused before any parsing.
ARN_MAX_CHARS = 2048

# arn:partition:service:region:account:resource. Partitions: aws, aws-cn, aws-us-gov, and the
# isolated ones (aws-iso, aws-iso-b, ...). Printable ASCII only, no spaces.
_ARN = re.compile(
    r"arn:(?P<partition>aws(?:-[a-z]+)*):(?P<service>[a-z0-9-]+):(?P<region>[a-z0-9-]*):"
    r"(?P<account>\d{12})?:(?P<resource>[\x21-\x7e]+)",
    re.ASCII,
)
# The resource of an STS assumed-role session: assumed-role/RoleName/RoleSessionName, with
# IAM's character sets for role names (1-64) and session names (2-64; SSO and federation
# sessions use '@' and '.').
_ASSUMED_ROLE = re.compile(r"assumed-role/(?P<role>[\w+=,.@-]{1,64})/[\w+=,.@-]{1,64}", re.ASCII)
# A principal given as is: "Type:name", printable ASCII without spaces; the type has no ':'.
_PRINCIPAL = re.compile(r"[\x21-\x39\x3b-\x7e]+:[\x21-\x7e]+", re.ASCII)


def principal_from_iam(identity: Mapping[str, Any] | None) -> str:
    """The principal of an API Gateway IAM caller: `identity` is HTTP API (payload 2.0)
    `requestContext.authorizer.iam` or REST API `requestContext.identity`; both carry
    `userArn`. None, or no `userArn`, is ANONYMOUS; a malformed one raises ValueError."""
    if identity is None:
        return ANONYMOUS
    if not isinstance(identity, Mapping):
        raise ValueError("the IAM identity is not an object")
    arn = identity.get("userArn")
    if arn is None or arn == "":
        return ANONYMOUS
    if not isinstance(arn, str):
        raise ValueError("userArn is not a string")
    if len(arn) > ARN_MAX_CHARS:
        raise ValueError(f"userArn is longer than {ARN_MAX_CHARS} characters")
    match = _ARN.fullmatch(arn)
    if match is None:
        raise ValueError("userArn is not an ARN")
    if match["service"] == "sts" and match["resource"].startswith("assumed-role/"):
        session = _ASSUMED_ROLE.fullmatch(match["resource"])
        if session is None:
            raise ValueError("userArn is not an assumed-role session ARN")
        arn = f"arn:{match['partition']}:iam::{match['account']}:role/{session['role']}"
    principal = f"{USER_TYPE}:{arn}"
    if len(principal) > PRINCIPAL_MAX_CHARS:
        raise ValueError(f"the principal is longer than {PRINCIPAL_MAX_CHARS} characters")
    return principal


def principal_from_header(value: str | None) -> str:
    """The principal a local test names in a header (`groupcoord serve` only, never in AWS:
    anyone could claim any principal): "Type:name" taken as is, at most PRINCIPAL_MAX_CHARS
    printable ASCII characters without spaces. No header is ANONYMOUS; anything else (an
    empty value included) raises ValueError."""
    if value is None:
        return ANONYMOUS
    if len(value) > PRINCIPAL_MAX_CHARS:
        raise ValueError(f"the principal is longer than {PRINCIPAL_MAX_CHARS} characters")
    if _PRINCIPAL.fullmatch(value) is None:
        raise ValueError(
            "the principal must be Type:name in printable ASCII without spaces, e.g. User:alice"
        )
    return value
