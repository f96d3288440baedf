"""A classic member's protocol metadata and assignment live on a payload item of their own
(store/classic/): the member item that every heartbeat and commit fence rewrites stays
small whatever the member owns (one write unit per heartbeat), the payload is read where it is
used, and it goes whenever its member goes."""

from __future__ import annotations

from typing import Any

from groupcoord import runtime
from groupcoord.core.classic.model import STABLE, ClassicMember, Protocol
from groupcoord.core.topics import TopicRecord
from groupcoord.errors import Errors
from groupcoord.local.seed import write_classic_group
from groupcoord.models.classic import HeartbeatRequest, LeaveGroupRequest, SyncGroupRequest
from groupcoord.models.groups import DeleteGroupsRequest, DescribeGroupsRequest
from groupcoord.models.offsets import OffsetCommitRequest
from groupcoord.service.classic.describe import describe_groups
from groupcoord.service.classic.heartbeat import heartbeat
from groupcoord.service.classic.leave import leave_group
from groupcoord.service.classic.sync import sync_group
from groupcoord.service.classic_group import load, settle
from groupcoord.service.context import ApiContext
from groupcoord.service.group_admin import delete_groups
from groupcoord.service.offsets import offset_commit
from groupcoord.store import capacity, schema
from groupcoord.store.store import Store
from groupcoord.topic_ids import new_topic_id
from groupcoord.wire.consumer_protocol import (
    Assignment,
    Subscription,
    decode_assignment,
    encode_assignment,
    encode_subscription,
)
from tests.support.consumer import unique

PROTOCOL = "cooperative-sticky"
SESSION_MS = 30_000


def _ctx(store: Store, now: int | None = None) -> ApiContext:
    now = runtime.now_ms() if now is None else now
    return ApiContext(settings=store.settings, store=store, now_ms=now, endpoint="http://x")


def _stable_group(store: Store, size: int, per_member: int) -> tuple[str, str, list[str]]:
    """A Stable classic group of cooperative members, each owning `per_member` partitions (its
    Subscription lists them, its assignment holds them), as the protocol leaves it."""
    topic, group_id = unique("t"), unique("g")
    store.topics.create(TopicRecord(topic, new_topic_id(), size * per_member), now_ms=0)
    now = runtime.now_ms()
    ids = [f"m-{i:03d}" for i in range(size)]
    members = []
    for i, member_id in enumerate(ids):
        owned = {topic: list(range(i * per_member, (i + 1) * per_member))}
        metadata = encode_subscription(Subscription([topic], owned_partitions=owned, version=1))
        members.append(
            ClassicMember(
                member_id=member_id,
                session_timeout_ms=SESSION_MS,
                rebalance_timeout_ms=SESSION_MS,
                expiry_ms=SESSION_MS,
                heartbeat_interval_ms=SESSION_MS // 3,
                protocol_type="consumer",
                protocols=(Protocol(PROTOCOL, metadata),),
                joined_generation=1,
                member_generation=1,
                joined_at_ms=now + i,
                synced_generation=1,
                assignment=encode_assignment(Assignment(owned, version=1)),
                assignment_generation=1,
                session_deadline_ms=now + SESSION_MS,
            )
        )
    write_classic_group(
        store,
        group_id,
        members,
        protocol=PROTOCOL,
        rebalance_timeout_ms=SESSION_MS,
        next_check_ms=now + SESSION_MS,
        subscribed_topics=(topic,),
        created_at_ms=now,
    )
    return group_id, topic, ids


def _items(store: Store, pks: list[str]) -> list[dict[str, Any]]:
    return [i for pk in pks for i in store.dynamo.query("pk = :pk", {":pk": pk}, consistent=True)]


def _payloads(store: Store, group_id: str) -> list[dict[str, Any]]:
    return _items(store, schema.payload_pks(group_id, store.settings.member_shards))


def test_at_500_partitions_per_member_a_heartbeat_and_a_commit_fence_write_a_small_item(
    service_store: Store,
) -> None:
    group_id, topic, ids = _stable_group(service_store, 10, 500)
    shards = service_store.settings.member_shards
    member = ids[3]
    member_item = service_store.dynamo.get(
        schema.member_key(group_id, member, shards), consistent=True
    )
    payload = service_store.dynamo.get(
        schema.payload_key(group_id, member, shards), consistent=True
    )
    assert member_item is not None and payload is not None
    # What the member item used to carry, and what it carries now.
    assert capacity.item_size(payload) > 4 * 1024
    assert capacity.item_size(member_item) <= 1024

    beat = HeartbeatRequest(group_id=group_id, generation_id=1, member_id=member)
    with capacity.metered() as usage:
        assert heartbeat(beat, _ctx(service_store)).error_code == Errors.NONE
    # One write unit (the session a sync started is renewed), on the member's key; two reads,
    # of the group item (eventually consistent) and the member item (no payload read).
    assert usage.write_units == 1.0
    assert usage.writes_by_key == {schema.member_key(group_id, member, shards)[schema.PK]: 1}
    assert usage.read_units == 1.5

    commit = OffsetCommitRequest.model_validate(
        {
            "groupId": group_id,
            "generationIdOrMemberEpoch": 1,
            "memberId": member,
            "topics": [
                {"name": topic, "partitions": [{"partitionIndex": 1500, "committedOffset": 7}]}
            ],
        }
    )
    # The group's first commit also creates its offset retention check: measure the next.
    offset_commit(commit, _ctx(service_store))
    with capacity.metered() as usage:
        answer = offset_commit(commit, _ctx(service_store))
    assert [p.error_code for t in answer.topics for p in t.partitions] == [Errors.NONE]
    # One transaction of two items of at most 1 KB (the fence's update of the member item,
    # the offset), each billed twice; the member item read for the fence is one read unit.
    assert usage.write_units == 4.0
    assert usage.read_units <= 2.5
    fenced = service_store.dynamo.get(schema.member_key(group_id, member, shards), consistent=True)
    assert fenced is not None and capacity.item_size(fenced) <= 1024


def test_sync_answers_and_describe_read_the_payloads(service_store: Store) -> None:
    group_id, topic, ids = _stable_group(service_store, 3, 500)
    sync = SyncGroupRequest(group_id=group_id, generation_id=1, member_id=ids[2])
    answer = sync_group(sync, _ctx(service_store))
    assert decode_assignment(answer.assignment).partitions == {topic: list(range(1000, 1500))}

    described = describe_groups(
        DescribeGroupsRequest(groups=[group_id]), _ctx(service_store)
    ).groups[0]
    assert described.group_state == STABLE and len(described.members) == 3
    shown = {m.member_id: m for m in described.members}
    owned = decode_assignment(shown[ids[1]].member_assignment).partitions
    assert owned == {topic: list(range(500, 1000))}
    assert len(shown[ids[1]].member_metadata) > 2000  # the Subscription with its owned list


def test_leave_expiry_and_delete_groups_leave_no_payload_behind(service_store: Store) -> None:
    # 60 members: expiring the 59 left is 118 deletions, more than one transaction holds, so
    # some are written ahead of the group's flip.
    group_id, _, ids = _stable_group(service_store, 60, 2)
    assert len(_payloads(service_store, group_id)) == 60

    leave = LeaveGroupRequest.model_validate(
        {"groupId": group_id, "members": [{"memberId": ids[5]}]}
    )
    assert leave_group(leave, _ctx(service_store)).members[0].error_code == Errors.NONE
    assert ids[5] not in {p[schema.SK] for p in _payloads(service_store, group_id)}
    assert len(_payloads(service_store, group_id)) == 59

    later = runtime.now_ms() + 10 * SESSION_MS
    group = load(service_store, group_id)
    assert group is not None
    emptied = settle(service_store, group, later)
    assert emptied.member_count == 0
    assert _payloads(service_store, group_id) == []

    # A payload a crash left behind (its member item gone) is never read, and delete-groups
    # removes it with the group.
    stray = {
        **schema.payload_key(group_id, "gone", service_store.settings.member_shards),
        "kind": "x",
    }
    service_store.dynamo.put(stray)
    deleted = delete_groups(
        DeleteGroupsRequest(groups_names=[group_id]), _ctx(service_store, later)
    )
    assert deleted.results[0].error_code == Errors.NONE
    shards = service_store.settings.member_shards
    pks = [*schema.member_pks(group_id, shards), *schema.payload_pks(group_id, shards)]
    assert _items(service_store, pks) == []


def test_stray_payloads_go_and_the_members_stay(service_store: Store) -> None:
    group_id, _, ids = _stable_group(service_store, 4, 2)
    shards = service_store.settings.member_shards
    service_store.dynamo.put({**schema.payload_key(group_id, "gone", shards), "kind": "x"})
    service_store.classic.delete_stray_payloads(group_id, shards)
    assert sorted(p[schema.SK] for p in _payloads(service_store, group_id)) == ids


def test_a_member_that_leaves_between_the_two_reads_is_not_listed_without_its_metadata(
    service_store: Store,
) -> None:
    # The leader's join answer, the barrier's subscribed topics and the upgrade read the member
    # items, then their payloads. A leave landing in between deletes both: the member is gone,
    # and must not reach the leader as a member with empty metadata (its assignor cannot
    # decode that: the leader's rebalance failed on it, under load).
    group_id, _, ids = _stable_group(service_store, 3, 2)
    group = load(service_store, group_id)
    assert group is not None
    listed = service_store.classic.members(group, payloads=False)
    leave = LeaveGroupRequest.model_validate(
        {"groupId": group_id, "members": [{"memberId": ids[1]}]}
    )
    assert leave_group(leave, _ctx(service_store)).members[0].error_code == Errors.NONE

    read = service_store.classic.with_payloads(group, listed)
    assert sorted(m.member_id for m in read) == [ids[0], ids[2]]
    assert all(len(m.metadata_for(PROTOCOL)) > 0 for m in read)
