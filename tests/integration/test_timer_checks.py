"""Who pays for a consumer group's due expiry scan (core/timer_checks.py): in a small group the
request that finds it due reads the members and writes the group once; from
CLAIM_FROM_MEMBERS members on it claims the scan first, so that concurrent requests go on
without reading every member. (The classic protocol's check: tests/integration/
test_classic_scale.py.)"""

from __future__ import annotations

from dataclasses import replace

from groupcoord.core.consumer.member import ConsumerGroupMember
from groupcoord.core.consumer.reconciliation import MemberAssignment
from groupcoord.core.timer_checks import CLAIM_FROM_MEMBERS, check_is_claimed
from groupcoord.local.seed import put_consumer_members
from groupcoord.service.consumer.common import reload
from groupcoord.service.consumer.expiry import expire_consumer_group
from groupcoord.store import capacity, schema
from groupcoord.store.codecs.consumer import SCAN_ID
from groupcoord.store.store import Store
from groupcoord.store.stored_group import StoredGroup, stored
from tests.support.consumer import unique

NOW = 1_800_000_000_000
SESSION_MS = 45_000


def _due_group(store: Store, size: int, dead: int) -> str:
    """A consumer group of `size` members holding nothing, `dead` of them past their session,
    whose next check is due at NOW."""
    group_id = unique("g")
    cs = store.consumer
    cs.create_group(group_id, store.settings.member_shards, NOW - 60_000, None)
    group = reload(cs, group_id)
    assert group is not None
    members = [
        ConsumerGroupMember(
            member_id=f"m-{i:04d}",
            rebalance_timeout_ms=30_000,
            subscribed_topic_names=("t",),
            assignment=MemberAssignment(epoch=size),
            session_deadline=NOW - 1 if i < dead else NOW + SESSION_MS - 2_000 + i,
        )
        for i in range(size)
    ]
    put_consumer_members(
        store,
        group,
        members,
        group_epoch=size,
        target_epoch=size,
        member_count=size,
        deadline=NOW - 1,
    )
    return group_id


def found(item: dict) -> StoredGroup:
    """The group item as a read hands it to the services."""
    typed = stored(item)
    assert typed is not None
    return typed


def _group_item(store: Store, group_id: str) -> dict:
    item = store.dynamo.get(schema.group_key(group_id), consistent=True)
    assert item is not None
    return item


def test_a_small_groups_scan_is_one_write_of_its_next_deadline(service_store: Store) -> None:
    assert not check_is_claimed(10)
    group_id = _due_group(service_store, 10, dead=0)
    item = _group_item(service_store, group_id)
    with capacity.metered() as usage:
        expire_consumer_group(service_store, found(item), NOW)
    shards = service_store.settings.member_shards
    assert usage.by_operation == {"query": shards, "update_item": 1}
    after = _group_item(service_store, group_id)
    assert int(after[schema.DEADLINE]) == NOW + SESSION_MS - 2_000  # the earliest session
    assert SCAN_ID not in after and int(after["memberCount"]) == 10


def test_a_small_groups_scan_fences_the_dead_once(service_store: Store) -> None:
    group_id = _due_group(service_store, 10, dead=2)
    item = _group_item(service_store, group_id)
    expire_consumer_group(service_store, found(item), NOW)
    # A request that read the group before the first:
    expire_consumer_group(service_store, found(item), NOW)
    after = _group_item(service_store, group_id)
    assert int(after["memberCount"]) == 8
    assert int(after["groupEpoch"]) == 11  # one bump for the scan that fenced them


def test_a_big_groups_scan_is_claimed_first(service_store: Store) -> None:
    assert check_is_claimed(CLAIM_FROM_MEMBERS)
    group_id = _due_group(service_store, CLAIM_FROM_MEMBERS, dead=0)
    item = _group_item(service_store, group_id)
    with capacity.metered() as usage:
        expire_consumer_group(service_store, found(item), NOW)
    assert usage.by_operation["update_item"] == 2  # the claim, then the scan's result
    after = _group_item(service_store, group_id)
    assert int(after[schema.DEADLINE]) == NOW + SESSION_MS - 2_000
    assert SCAN_ID not in after

    # A request that read the group due, while another one claimed its next scan, goes on
    # without reading the members.
    due_at = NOW + SESSION_MS - 2_000
    seen = _group_item(service_store, group_id)
    group = reload(service_store.consumer, group_id)
    assert group is not None
    service_store.consumer.update_group(
        group, replace(group, deadline=due_at + 2_000, scan_id="other")
    )
    with capacity.metered() as usage:
        expire_consumer_group(service_store, found(seen), due_at)
    assert usage.by_operation == {"get_item": 1}


def test_a_small_groups_scan_from_a_stale_read_leaves_a_newer_scans_result(
    service_store: Store,
) -> None:
    """A request's group read may be eventually consistent: a scan started from a read that
    another scan has since overtaken reads the members, but its write loses and the newer
    result stands."""
    group_id = _due_group(service_store, 10, dead=0)
    stale = _group_item(service_store, group_id)
    expire_consumer_group(service_store, found(stale), NOW)  # the other request's scan
    newer = _group_item(service_store, group_id)
    assert int(newer[schema.DEADLINE]) == NOW + SESSION_MS - 2_000
    # Read again, says the scan.
    assert expire_consumer_group(service_store, found(stale), NOW + 1) is None
    after = _group_item(service_store, group_id)
    assert after[schema.DEADLINE] == newer[schema.DEADLINE]
    assert after["version"] == newer["version"]
