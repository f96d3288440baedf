"""describe-group-activity (groupcoord's monitoring extension) over HTTP on `serve`'s
deployment: what it shows of both group types, its bounds and refusals, that it only reads,
and what a watched group costs in DynamoDB reads (docs/dashboard.md quotes the numbers)."""

from __future__ import annotations

from typing import Any

import pytest

from groupcoord import clock
from groupcoord.models.activity import DescribeGroupActivityRequest
from groupcoord.models.groups import ListGroupsRequest
from groupcoord.service.context import ApiContext
from groupcoord.service.group_activity import describe_group_activity
from groupcoord.service.groups import list_groups
from groupcoord.store import capacity
from tests.support import classic_client
from tests.support.api import Api
from tests.support.classic_client import Consumer, Ownership
from tests.support.consumer import Member, create_topic, settle, unique, until
from tests.support.servers import IMMEDIATE_INSTALLS, InProcessCoordinator
from tests.support.streams import StreamsMember, word_count

SETTINGS = {**IMMEDIATE_INSTALLS, "group.initial.rebalance.delay.ms": "0"}


pytestmark = pytest.mark.coordinator(SETTINGS, in_process=True)


def activity(api: Api, group_id: str, **extra: Any) -> dict[str, Any]:
    body = api.ok("describe-group-activity", {"groupIds": [group_id], "includeMembers": True})
    (group,) = body["groups"]
    assert body["nowMs"] > 0
    return group


def test_a_consumer_group_shows_members_targets_revocations_and_commit_times(api: Api) -> None:
    topic, group_id = unique("t"), unique("g")
    create_topic(api, topic, 4)
    first = Member(api, group_id, [topic])
    first.join()
    settle([first])
    owned_topic = next(iter(first.owned))
    before = clock.now_ms()
    api.ok(
        "offset-commit",
        {
            "groupId": group_id,
            "memberId": first.member_id,
            "generationIdOrMemberEpoch": first.epoch,
            "topics": [{"topicId": owned_topic, "partitions": [
                {"partitionIndex": 0, "committedOffset": 17}
            ]}],
        },
    )  # fmt: skip
    second = Member(api, group_id, [topic])
    second.join()  # the new target moves partitions; first has not revoked them yet
    group = activity(api, group_id)
    assert (group["groupType"], group["memberCount"], group["epoch"]) == ("consumer", 2, 2)
    by_id = {m["memberId"]: m for m in group["members"]}
    assert set(by_id) == {first.member_id, second.member_id}
    for m in group["members"]:
        assert m["lastHeartbeatMs"] <= group_now(api, group_id)
        assert m["sessionDeadlineMs"] > m["lastHeartbeatMs"]
    cells = {c["partitionIndex"]: c for c in group["partitions"]}
    assert sorted(cells) == [0, 1, 2, 3]
    moving = [c for c in cells.values() if c["targetMember"] == second.member_id]
    assert len(moving) == 2 and all(c["owner"] != second.member_id for c in moving)
    assert cells[0]["committedOffset"] == 17 and cells[0]["commitTimestampMs"] >= before

    first.heartbeat(ack=False)  # told to revoke, still reporting them
    group = activity(api, group_id)
    revoking = [c for c in group["partitions"] if c["revokingMember"] == first.member_id]
    assert revoking and all(c["targetMember"] == second.member_id for c in revoking)
    settle([first, second])
    group = activity(api, group_id)
    assert all(c["owner"] == c["targetMember"] for c in group["partitions"])
    assert not any(c["revokingMember"] for c in group["partitions"])


def group_now(api: Api, group_id: str) -> int:
    return api.ok("describe-group-activity", {"groupIds": [group_id]})["nowMs"]


def test_a_classic_group_shows_its_generation_and_decoded_assignments(
    api: Api, coordinator: InProcessCoordinator
) -> None:
    topic, group_id = unique("t"), unique("classic")
    create_topic(api, topic, 3)
    ownership = Ownership()
    consumers = [
        Consumer(coordinator.url, group_id, [topic], name=f"c{i}", ownership=ownership)
        for i in range(2)
    ]
    for c in consumers:
        c.start()
    try:
        described = classic_client.settle(api, group_id, consumers, timeout_s=30)
        group = activity(api, group_id)
        assert (group["groupType"], group["groupState"]) == ("classic", "Stable")
        assert group["epoch"] == group["assignmentEpoch"] > 0
        assert group["protocolName"] == described["protocolData"]
        assert {m["memberState"] for m in group["members"]} == {"Stable"}
        assert {m["protocol"] for m in group["members"]} == {"classic"}
        owners = {c["owner"] for c in group["partitions"]}
        assert owners == {m["memberId"] for m in group["members"]}
        assert len(group["partitions"]) == 3
    finally:
        for c in consumers:
            c.close()


def test_summaries_missing_groups_and_bounds(api: Api) -> None:
    topic, group_id = unique("t"), unique("g")
    create_topic(api, topic, 2)
    member = Member(api, group_id, [topic])
    member.join()
    missing = unique("missing")
    body = api.ok("describe-group-activity", {"groupIds": [group_id, missing]})
    found, absent = body["groups"]
    assert (found["memberCount"], found["members"], found["partitions"]) == (1, [], [])
    assert absent["errorCode"] == 69
    # One detailed group per request; at most 100 groups; ids bounded like every group id.
    for bad, field in (
        ({"groupIds": [group_id, missing], "includeMembers": True}, "includeMembers"),
        ({"groupIds": ["g"] * 101}, "groupIds"),
        ({"groupIds": ["g" * 256]}, "groupIds"),
        ({}, "groupIds"),
    ):
        answer = api.call("describe-group-activity", bad)
        assert answer.status == 400 and field in answer.body["errorMessage"], answer.body


def test_it_only_reads(api: Api, coordinator: InProcessCoordinator) -> None:
    topic, group_id = unique("t"), unique("g")
    create_topic(api, topic, 2)
    member = Member(api, group_id, [topic])
    member.join()
    ctx = _ctx(coordinator)
    with capacity.metered() as usage:
        describe_group_activity(
            DescribeGroupActivityRequest(group_ids=[group_id], include_members=True), ctx
        )
    assert usage.write_units == 0
    assert set(usage.by_operation) <= {"get_item", "query", "batch_get_item"}


def _ctx(coordinator: InProcessCoordinator) -> ApiContext:
    store = coordinator.store
    return ApiContext(store.settings, store, clock.now_ms(), coordinator.url)


def test_what_a_watched_group_costs(api: Api, coordinator: InProcessCoordinator) -> None:
    """The dashboard's reads per minute: a group page refreshes every 2 s (one detailed
    describe-group-activity), the overview every 5 s (list-groups and one summary request).
    Measured with the store's own accounting (store/capacity.py) on a 3-member group of one
    12-partition topic, every partition committed."""
    topic, group_id = unique("t"), unique("watched")
    create_topic(api, topic, 12)
    members = [Member(api, group_id, [topic]) for _ in range(3)]
    for m in members:
        m.join()
    settle(members)
    for m in members:
        for topic_id, partitions in m.owned.items():
            api.ok(
                "offset-commit",
                {
                    "groupId": group_id,
                    "memberId": m.member_id,
                    "generationIdOrMemberEpoch": m.epoch,
                    "topics": [{"topicId": topic_id, "partitions": [
                        {"partitionIndex": p, "committedOffset": 1} for p in partitions
                    ]}],
                },
            )  # fmt: skip
    ctx = _ctx(coordinator)
    with capacity.metered() as detail:
        describe_group_activity(
            DescribeGroupActivityRequest(group_ids=[group_id], include_members=True), ctx
        )
    with capacity.metered() as overview:
        listed = list_groups(ListGroupsRequest(), ctx).groups
        ids = [g.group_id for g in listed][:100]
        describe_group_activity(DescribeGroupActivityRequest(group_ids=ids), ctx)
    with capacity.metered() as summary:
        describe_group_activity(DescribeGroupActivityRequest(group_ids=[group_id]), ctx)
    per_minute = {
        "group page (30 refreshes)": (30 * detail.requests, 30 * detail.read_units),
        "overview, this group's share (12 refreshes)": (
            12 * summary.requests,
            12 * summary.read_units,
        ),
    }
    print(f"\ndetail: {detail.requests} requests {detail.read_units} RCU {detail.by_operation}")
    print(f"summary of one group: {summary.requests} requests {summary.read_units} RCU")
    print(f"overview of {len(ids)} groups: {overview.requests} requests {overview.read_units} RCU")
    print(f"per minute: {per_minute}")
    # 1 group item + the member shards (8 Queries) + 1 topic + 1 BatchGetItem of 12 offsets.
    shards = coordinator.store.settings.member_shards
    assert detail.requests == 1 + shards + 1 + 1
    assert detail.read_units <= 0.5 + shards + 0.5 + 12
    assert (summary.requests, summary.read_units) == (1, 0.5)
    assert detail.write_units == summary.write_units == overview.write_units == 0


def rebalances(api: Api, group_id: str) -> list[tuple[int, str, int]]:
    """The group's recorded epoch moves, from a summary read (the group item alone)."""
    body = api.ok("describe-group-activity", {"groupIds": [group_id]})
    (group,) = body["groups"]
    for entry in group["recentRebalances"]:
        assert group["createdAtMs"] <= entry["atMs"] <= body["nowMs"]
    return [(r["epoch"], r["cause"], r["memberCount"]) for r in group["recentRebalances"]]


def test_a_consumer_group_records_its_epoch_moves_for_a_monitor_that_comes_later(
    api: Api,
) -> None:
    topic, group_id = unique("t"), unique("g")
    create_topic(api, topic, 2)
    first, second = Member(api, group_id, [topic]), Member(api, group_id, [topic])
    first.join()
    second.join()
    settle([first, second])
    second.leave()
    assert rebalances(api, group_id) == [(1, "join", 1), (2, "join", 2), (3, "leave", 1)]


def test_a_streams_group_records_its_epoch_moves(api: Api) -> None:
    words, group_id = unique("st-words"), unique("sg")
    create_topic(api, words, 2)
    a = StreamsMember(api, group_id, word_count(words, unique("st-app")))
    b = StreamsMember(api, group_id, a.topology)
    a.join()
    b.join()
    b.leave()
    # A streams group's first join moves it to epoch 2 (its first target comes after the
    # joiner's epoch 1: core/streams/heartbeat_rules.py).
    assert rebalances(api, group_id) == [(2, "join", 1), (3, "join", 2), (4, "leave", 1)]


def test_a_classic_group_records_its_generations(
    api: Api, coordinator: InProcessCoordinator
) -> None:
    topic, group_id = unique("t"), unique("classic")
    create_topic(api, topic, 2)
    ownership = Ownership()
    consumers = [
        Consumer(coordinator.url, group_id, [topic], name=f"c{i}", ownership=ownership)
        for i in range(2)
    ]
    for c in consumers:
        c.start()
    try:
        classic_client.settle(api, group_id, consumers, timeout_s=30)
        generation = activity(api, group_id)["epoch"]
        recorded = rebalances(api, group_id)
        assert recorded[-1] == (generation, recorded[-1][1], 2)
        assert [e for e, _, _ in recorded] == list(range(generation - len(recorded) + 1,
                                                          generation + 1))  # fmt: skip
        assert recorded[0][1] == "join"
    finally:
        consumers[1].close()
    until(lambda: rebalances(api, group_id)[-1][1:] == ("leave", 1), timeout_s=30)
    consumers[0].close()
