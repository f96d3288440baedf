"""When and how a consumer group is downgraded to a classic group."""

from __future__ import annotations

from groupcoord.core.classic.model import PREPARING_REBALANCE
from groupcoord.core.consumer.member import ClassicMetadata, ConsumerGroupMember
from groupcoord.core.consumer.reconciliation import MemberAssignment
from groupcoord.core.migration import (
    downgrade_wanted,
    downgraded_group,
)
from groupcoord.wire.consumer_protocol import (
    Subscription,
    decode_assignment,
    encode_subscription,
)


def classic(
    member_id: str, target: dict[str, set[int]], version: int = 1, **kw
) -> ConsumerGroupMember:
    metadata = encode_subscription(Subscription(["a", "b"], version=version))
    return ConsumerGroupMember(
        member_id=member_id,
        rebalance_timeout_ms=kw.pop("rebalance_timeout_ms", 10_000),
        subscribed_topic_names=("a", "b"),
        assignment=MemberAssignment(epoch=7, previous_epoch=6),
        target=target,
        target_epoch=7,
        classic=ClassicMetadata(
            session_timeout_ms=6000,
            protocols=(("cooperative-sticky", metadata), ("range", metadata)),
            heartbeat_interval_ms=2000,
        ),
        **kw,
    )


def consumer(member_id: str) -> ConsumerGroupMember:
    return ConsumerGroupMember(member_id=member_id, subscribed_topic_names=("a",))


def test_only_classic_members_remaining_and_the_policy_allow_a_downgrade() -> None:
    both = [classic("c1", {}), classic("c2", {})]
    assert downgrade_wanted("bidirectional", both, 10)
    assert downgrade_wanted("downgrade", both, 10)
    assert not downgrade_wanted("upgrade", both, 10)
    assert not downgrade_wanted("disabled", both, 10)
    assert not downgrade_wanted("bidirectional", [], 10)  # empty: no downgrade
    assert not downgrade_wanted("bidirectional", [*both, consumer("m")], 10)
    assert not downgrade_wanted("bidirectional", both, 1)  # over group.max.size


def test_the_classic_group_takes_the_target_assignment_and_rebalances() -> None:
    group, members = downgraded_group(
        "g",
        7,
        [classic("c2", {"T2": {1}}, rebalance_timeout_ms=20_000), classic("c1", {"T1": {0, 2}})],
        {"T1": "a", "T2": "b"},
        version=12,
        member_shards=8,
        created_at_ms=5,
        topic_changes=3,
        now_ms=1_000,
    )
    assert group.generation == 7 and group.state == PREPARING_REBALANCE
    assert group.protocol_type == "consumer" and group.protocol_name == "cooperative-sticky"
    assert group.member_count == 2 and group.leader == "c1"
    assert group.rebalance_timeout_ms == 20_000 and group.join_deadline_ms == 21_000
    assert group.topic_changes == group.topic_changes_seen == 3
    assert group.subscribed_topics == ("a", "b") and group.version == 12
    assert group.protocol_counts == {"cooperative-sticky": 2, "range": 2}
    assert [m.member_id for m in members] == ["c1", "c2"]
    c1, c2 = members
    assert decode_assignment(c1.assignment).partitions == {"a": [0, 2]}
    assert decode_assignment(c1.assignment).version == 1
    assert decode_assignment(c2.assignment).partitions == {"b": [1]}
    assert c1.assignment_generation == 7 and not group.awaiting_join(c1)
    assert c1.session_deadline_ms == 7_000 and c1.expiry_ms == 6000
    assert [p.name for p in c1.protocols] == ["cooperative-sticky", "range"]
    # Heartbeat and session deadlines are the group's next check.
    assert group.next_check_ms == 7_000


def test_topics_the_registry_no_longer_knows_are_dropped() -> None:
    _, (m,) = downgraded_group(
        "g", 3, [classic("c", {"T1": {0}, "gone": {1}}, version=0)], {"T1": "a"},
        version=1, member_shards=8, created_at_ms=0, topic_changes=0, now_ms=0,
    )  # fmt: skip
    assignment = decode_assignment(m.assignment)
    assert assignment.partitions == {"a": [0]} and assignment.version == 0
