"""When a classic group with members may be upgraded to a consumer group (issue 6)."""

from __future__ import annotations

import pytest

from groupcoord.core.migration import downgrade_enabled, upgrade_enabled, validate_online_upgrade


@pytest.mark.parametrize(
    ("policy", "up", "down"),
    [
        ("bidirectional", True, True),
        ("upgrade", True, False),
        ("downgrade", False, True),
        ("disabled", False, False),
    ],
)
def test_policies_enable_directions(policy: str, up: bool, down: bool) -> None:
    assert (upgrade_enabled(policy), downgrade_enabled(policy)) == (up, down)


def test_the_policy_is_checked_first() -> None:
    why = validate_online_upgrade("g", "disabled", "connect", 9, 1)
    assert (
        why
        == "Cannot upgrade classic group g to consumer group because online upgrade is disabled."
    )


def test_protocol_type_must_be_consumer() -> None:
    why = validate_online_upgrade("g", "upgrade", "connect", 1, 10)
    assert why is not None and why.endswith("does not use the consumer embedded protocol.")
    assert validate_online_upgrade("g", "upgrade", None, 1, 10) == why


def test_size_limit_is_inclusive() -> None:
    assert validate_online_upgrade("g", "bidirectional", "consumer", 3, 3) is None
    why = validate_online_upgrade("g", "bidirectional", "consumer", 4, 3)
    assert why is not None and why.endswith("exceeds the consumer group maximum size.")
