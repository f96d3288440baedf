"""The caller's Kafka principal (core/principals.py): IAM identities from API Gateway, and the
local test header."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from groupcoord.core.principals import (
    ANONYMOUS,
    ARN_MAX_CHARS,
    principal_from_header,
    principal_from_iam,
)
from groupcoord.models.acls import PRINCIPAL_MAX_CHARS


def http_api_iam(user_arn: object) -> dict[str, object]:
    """requestContext.authorizer.iam of an HTTP API (payload 2.0) event."""
    return {
        "accessKey": "ASIAEXAMPLE",
        "accountId": "123456789012",
        "callerId": "AROAEXAMPLE:session",
        "cognitoIdentity": None,
        "principalOrgId": "o-example",
        "userArn": user_arn,
        "userId": "AROAEXAMPLE:session",
    }


def rest_api_identity(user_arn: object) -> dict[str, object]:
    """requestContext.identity of a REST API event."""
    return {
        "accountId": "123456789012",
        "caller": "AROAEXAMPLE:session",
        "sourceIp": "10.0.0.1",
        "user": "AROAEXAMPLE:session",
        "userArn": user_arn,
        "userAgent": "test",
    }


@pytest.mark.parametrize("shape", [http_api_iam, rest_api_identity])
@pytest.mark.parametrize(
    ("user_arn", "principal"),
    [
        # A role's sessions are the role, written without its path.
        (
            "arn:aws:sts::123456789012:assumed-role/team-a/i-0abc",
            "User:arn:aws:iam::123456789012:role/team-a",
        ),
        (
            "arn:aws:sts::123456789012:assumed-role/Role+=,.@-_9/botocore-session-1700000000",
            "User:arn:aws:iam::123456789012:role/Role+=,.@-_9",
        ),
        (
            "arn:aws:sts::123456789012:assumed-role/AWSReservedSSO_Admin_0123abcd/jane@example.com",
            "User:arn:aws:iam::123456789012:role/AWSReservedSSO_Admin_0123abcd",
        ),
        (
            "arn:aws-us-gov:sts::123456789012:assumed-role/team-a/s",
            "User:arn:aws-us-gov:iam::123456789012:role/team-a",
        ),
        (
            "arn:aws-cn:sts::123456789012:assumed-role/team-a/s1",
            "User:arn:aws-cn:iam::123456789012:role/team-a",
        ),
        # Users (path included), the root and federated users stay as they are.
        ("arn:aws:iam::123456789012:user/alice", "User:arn:aws:iam::123456789012:user/alice"),
        (
            "arn:aws:iam::123456789012:user/division/team/alice",
            "User:arn:aws:iam::123456789012:user/division/team/alice",
        ),
        ("arn:aws:iam::123456789012:root", "User:arn:aws:iam::123456789012:root"),
        (
            "arn:aws:sts::123456789012:federated-user/bob",
            "User:arn:aws:sts::123456789012:federated-user/bob",
        ),
    ],
)
def test_iam_callers(shape: object, user_arn: str, principal: str) -> None:
    assert principal_from_iam(shape(user_arn)) == principal  # type: ignore[operator]


@pytest.mark.parametrize("identity", [None, {}, http_api_iam(None), rest_api_identity("")])
def test_no_identity_is_anonymous(identity: dict[str, object] | None) -> None:
    assert principal_from_iam(identity) == ANONYMOUS == "User:ANONYMOUS"


@pytest.mark.parametrize(
    "user_arn",
    [
        "arn:aws:iam::123456789012:user/alice\n",
        "arn:aws:iam::123456789012:user/al\x00ice",
        "arn:aws:iam::123456789012:user/al ice",
        "arn:aws:iam::123456789012:user/alicé",
        "arn:aws:iam::123456789012:user/\u202ealice",
        "alice",
        "User:alice",
        "arn:aws:iam::12345:user/alice",  # not a 12-digit account
        "arn:AWS:iam::123456789012:user/alice",
        "arn:aws:sts::123456789012:assumed-role/team-a",  # no session
        "arn:aws:sts::123456789012:assumed-role/path/team-a/s",  # a role name has no '/'
        "arn:aws:sts::123456789012:assumed-role//s",
        "arn:aws:sts::123456789012:assumed-role/" + "r" * 65 + "/s",
        "arn:aws:iam::123456789012:user/" + "a" * ARN_MAX_CHARS,
        # A valid ARN whose principal would not fit an ACL.
        "arn:aws:iam::123456789012:user/" + "p/" * 240 + "alice",
    ],
)
def test_a_malformed_identity_is_refused(user_arn: str) -> None:
    with pytest.raises(ValueError):
        principal_from_iam(http_api_iam(user_arn))


@pytest.mark.parametrize("identity", [http_api_iam(42), http_api_iam(["arn"]), "arn:aws:iam"])
def test_an_identity_of_the_wrong_type_is_refused(identity: object) -> None:
    with pytest.raises(ValueError):
        principal_from_iam(identity)  # type: ignore[arg-type]


@given(st.text(max_size=300))
def test_any_user_arn_gives_a_bounded_printable_principal_or_value_error(user_arn: str) -> None:
    try:
        principal = principal_from_iam({"userArn": user_arn})
    except ValueError:
        return
    assert principal.startswith("User:")
    assert len(principal) <= PRINCIPAL_MAX_CHARS
    assert principal.isascii() and principal.isprintable() and " " not in principal


# --- the local test header ---


@pytest.mark.parametrize(
    "value", ["User:alice", "User:*", "Group:ops", "User:arn:aws:iam::123456789012:role/r"]
)
def test_a_valid_header_is_taken_as_is(value: str) -> None:
    assert principal_from_header(value) == value


def test_no_header_is_anonymous() -> None:
    assert principal_from_header(None) == ANONYMOUS


@pytest.mark.parametrize(
    "value",
    [
        "",
        "alice",
        ":alice",
        "User:",
        "User: alice",
        "User:alice\r\nX-Injected: 1",
        "User:al\x00ice",
        "User:alicé",
        "User:" + "x" * (PRINCIPAL_MAX_CHARS - 4),
    ],
)
def test_an_invalid_header_is_refused(value: str) -> None:
    with pytest.raises(ValueError):
        principal_from_header(value)
