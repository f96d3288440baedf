"""core/kinesis/binders.py: groupcoord.kinesis.stream.binders, parsed and applied."""

from __future__ import annotations

import pytest

from groupcoord.core.kinesis.binders import may_bind, parse_binders
from groupcoord.settings import Settings, SettingsError

STREAMS = "arn:aws:kinesis:us-east-1:123456789012:stream/"
ROLE = "User:arn:aws:iam::123456789012:role/team=a,b"  # IAM names may hold '=' and ','


def test_entries_name_arns_and_prefixes() -> None:
    binders = parse_binders(f" {ROLE}={STREAMS}a-*,{STREAMS}shared ; User:*={STREAMS}public ")
    assert binders == {ROLE: (f"{STREAMS}a-*", f"{STREAMS}shared"), "User:*": (f"{STREAMS}public",)}
    assert may_bind(ROLE, f"{STREAMS}a-orders", binders)
    assert may_bind(ROLE, f"{STREAMS}shared", binders)
    assert not may_bind(ROLE, f"{STREAMS}shared-2", binders)
    assert not may_bind(ROLE, f"{STREAMS}b-orders", binders)
    assert may_bind("User:bob", f"{STREAMS}public", binders)
    assert not may_bind("User:bob", f"{STREAMS}a-orders", binders)
    assert parse_binders("") == {}


@pytest.mark.parametrize(
    "text",
    [
        "User:alice",
        f"alice={STREAMS}a",
        "User:alice=",
        "User:alice=not-an-arn",
        f"User:alice={STREAMS}*a",
        f"User:alice={STREAMS}a b",
    ],
)
def test_anything_else_is_refused_at_start(text: str) -> None:
    with pytest.raises(ValueError):
        parse_binders(text)
    with pytest.raises(SettingsError):
        Settings.from_mapping({"groupcoord.kinesis.stream.binders": text}).check()
