"""Large consumer groups built through the store's own code, for the scale test and
bench/scale.py (both run the real install code over the in-memory DynamoDB stand-in)."""

from __future__ import annotations

from groupcoord import runtime
from groupcoord.core.consumer.member import ConsumerGroupMember
from groupcoord.core.consumer.reconciliation import MemberAssignment
from groupcoord.service.consumer.common import reload
from groupcoord.store import capacity, schema
from groupcoord.store.consumer_groups import member_to_item
from groupcoord.store.store import Store


def largest_items(store: Store, group_id: str) -> tuple[int, int]:
    """The largest member item and the group item of a group, in bytes (DynamoDB's rules)."""
    group = reload(store.consumer, group_id)
    assert group is not None
    largest = 0
    for pk in schema.member_pks(group_id, group.member_shards):
        for item in store.dynamo.query("pk = :pk", {":pk": pk}):
            largest = max(largest, capacity.item_size(item))
    return largest, capacity.item_size(group.raw)


def add_joined_members(
    store: Store,
    group_id: str,
    count: int,
    topics: list[str],
    *,
    session_ms: int,
    rebalance_timeout_ms: int,
) -> list[str]:
    """`count` members that joined (epoch bumped, member written) while no install ran yet:
    what a burst of joins leaves for the next install."""
    cs = store.consumer
    group = reload(cs, group_id)
    assert group is not None
    now = runtime.now_ms()
    ids = [f"joined-{i:06d}" for i in range(count)]
    members = [
        ConsumerGroupMember(
            member_id=mid,
            rebalance_timeout_ms=rebalance_timeout_ms,
            subscribed_topic_names=tuple(topics),
            assignment=MemberAssignment(epoch=group.target_epoch),
            session_deadline=now + session_ms,
        )
        for mid in ids
    ]
    store.dynamo.batch_write(
        puts=[member_to_item(group_id, group.member_shards, m) for m in members]
    )
    cs.update_group(
        group,
        {"groupEpoch": group.group_epoch + count, "memberCount": group.member_count + count},
    )
    return ids
