"""When a classic group with members may be upgraded to a consumer group."""

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


# --- the upgrade's conversion of classic members (core/migration.upgraded_members) ---


def _classic_member(member_id: str, assigned: dict[str, list[int]], topics: list[str], **kw):
    from groupcoord.core.classic.model import ClassicMember, Protocol
    from groupcoord.wire.consumer_protocol import (
        Assignment,
        Subscription,
        encode_assignment,
        encode_subscription,
    )

    return ClassicMember(
        member_id=member_id,
        protocols=(Protocol("range", encode_subscription(Subscription(topics, version=3,
                                                                       rack_id="r1"))),),
        assignment=encode_assignment(Assignment(assigned)),
        session_timeout_ms=10_000,
        expiry_ms=12_000,
        rebalance_timeout_ms=30_000,
        heartbeat_interval_ms=3_000,
        **kw,
    )  # fmt: skip


def test_classic_members_become_members_at_the_generation_with_their_assignment() -> None:
    from groupcoord.core.classic.model import ClassicGroup
    from groupcoord.core.consumer.reconciliation import MemberState
    from groupcoord.core.migration import upgraded_members

    group = ClassicGroup(group_id="g", generation=7, protocol_name="range", member_count=3)
    members = [
        _classic_member("b", {"t": [2, 3], "gone": [0]}, ["t"]),
        _classic_member("a", {"t": [0, 1]}, ["t", "u"], instance_id="i-a"),
        _classic_member("p", {}, ["t"], pending=True),
    ]
    converted = upgraded_members(group, members, {"t": "T", "u": "U"}, now_ms=1_000)
    assert [m.member_id for m in converted] == ["a", "b"]  # pending ids are not members
    a, b = converted
    assert a.assignment.epoch == a.assignment.previous_epoch == a.target_epoch == 7
    assert a.assignment.state is MemberState.STABLE
    assert a.assignment.assigned == a.target == {"T": frozenset({0, 1})}
    assert a.assignment.assigned_at == {7: {"T": frozenset({0, 1})}}
    # Unknown topics are dropped, as Kafka drops topics missing from its metadata.
    assert b.assignment.assigned == {"T": frozenset({2, 3})}
    assert a.subscribed_topic_names == ("t", "u") and a.rack_id == "r1"
    assert a.instance_id == "i-a" and a.rebalance_timeout_ms == 30_000
    assert a.session_deadline == 1_000 + 12_000
    assert a.classic is not None and a.classic.session_timeout_ms == 12_000
    assert a.classic.protocol_name == "range"


def test_a_partition_in_two_stored_assignments_is_held_once() -> None:
    from groupcoord.core.classic.model import ClassicGroup
    from groupcoord.core.migration import upgraded_members

    group = ClassicGroup(group_id="g", generation=2, protocol_name="range", member_count=2)
    members = [_classic_member("a", {"t": [0, 1]}, ["t"]), _classic_member("b", {"t": [1]}, ["t"])]
    a, b = upgraded_members(group, members, {"t": "T"}, now_ms=0)
    assert a.assignment.assigned == {"T": frozenset({0, 1})}
    assert b.assignment.assigned == {} and b.assignment.assigned_at == {}


def test_malformed_metadata_is_refused() -> None:
    from groupcoord.core.classic.model import ClassicGroup, ClassicMember, Protocol
    from groupcoord.core.migration import upgraded_members
    from groupcoord.wire.consumer_protocol import ConsumerProtocolError

    group = ClassicGroup(group_id="g", generation=1, protocol_name="range", member_count=1)
    bad = ClassicMember(member_id="a", protocols=(Protocol("range", b""),))
    with pytest.raises(ConsumerProtocolError):
        upgraded_members(group, [bad], {}, now_ms=0)


def test_common_protocols_of_classic_members() -> None:
    from groupcoord.core.migration import (
        common_protocols,
        narrowed_protocols,
        supports_classic_protocols,
    )

    assert common_protocols([]) is None
    assert common_protocols([["range", "sticky"], ["sticky", "range"], ["sticky"]]) == {"sticky"}
    assert supports_classic_protocols(["anything"], None)  # no classic members yet
    assert supports_classic_protocols(["range", "x"], {"range"})
    assert not supports_classic_protocols(["x"], {"range"})
    assert not supports_classic_protocols(["x"], set())
    # Joins only narrow what the group item knows.
    assert narrowed_protocols(None, ["b", "a"]) == ["a", "b"]
    assert narrowed_protocols(["a", "b"], ["b", "c"]) == ["b"]
