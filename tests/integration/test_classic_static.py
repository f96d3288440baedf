"""Static membership (groupInstanceId): a bounce without a rebalance, fencing of the old id."""

from __future__ import annotations

import pytest

from tests.support.api import Api
from tests.support.classic_client import (
    FAST_SETTINGS,
    ClassicClient,
    Consumer,
    Ownership,
    assignments_of,
    converged,
    decode_assignment,
    describe,
    unb64,
    unique,
    wait_until,
)

pytestmark = pytest.mark.coordinator(FAST_SETTINGS, shared=True)


def static_consumer(url: str, group_id: str, topics: list[str], instance: str) -> Consumer:
    return Consumer(
        url,
        group_id,
        topics,
        name=f"{instance}-{group_id}",
        ownership=Ownership(),
        instance_id=instance,
        session_timeout_ms=10000,
        rebalance_timeout_ms=10000,
    )


@pytest.fixture
def stable_static_group(api: Api, url: str, consumers) -> tuple[str, list[str], list[Consumer]]:
    """Three static range consumers, settled, their loops paused (their sessions are 10 s)."""
    topic = unique("t")
    api.ok("create-topics", {"topics": [{"name": topic, "numPartitions": 6}]})
    group_id = unique("static")
    members = [static_consumer(url, group_id, [topic], f"i-{n}") for n in range(3)]
    consumers.extend(members)
    for member in members:
        member.start()
    wait_until(lambda: converged(api, group_id, members), 20, "three static members")
    for member in members:
        member.stop()
    return group_id, [topic], members


def bounce(url: str, old: Consumer) -> tuple[Consumer, dict]:
    """The same instance restarts: no member id, the same subscription."""
    new = static_consumer(url, old.group_id, old.topics, old.instance_id or "")
    joined = new.join()
    return new, joined


def test_static_leader_bounce_keeps_the_generation_and_skips_the_assignment(
    api: Api, url: str, stable_static_group
) -> None:
    group_id, _, members = stable_static_group
    before = assignments_of(describe(api, group_id))
    generation = members[0].generation
    old_leader = next(m for m in members if m.is_leader)
    followers = [m for m in members if m is not old_leader]

    new_leader, joined = bounce(url, old_leader)
    assert joined["errorCode"] == 0
    assert joined["generationId"] == generation
    assert joined["memberId"] != old_leader.member_id
    assert joined["leader"] == joined["memberId"]
    assert joined["skipAssignment"] is True

    # No rebalance: the group stays Stable, the followers' heartbeats answer 0.
    group = describe(api, group_id)
    assert group["groupState"] == "Stable"
    assert {m["memberId"] for m in group["members"]} == {
        new_leader.member_id,
        *(f.member_id for f in followers),
    }
    assert all(f.heartbeat() == 0 for f in followers)
    # The new id gets the old id's assignment without a new one being computed.
    synced = new_leader.sync()
    assert synced["errorCode"] == 0
    assert decode_assignment(unb64(synced["assignment"])) == before[old_leader.member_id]
    after = assignments_of(describe(api, group_id))
    assert after[new_leader.member_id] == before[old_leader.member_id]
    assert new_leader.heartbeat() == 0

    # The old id is fenced everywhere.
    assert old_leader.heartbeat() == 82
    assert old_leader.sync_once().body["errorCode"] == 82
    assert old_leader.join_once().body["errorCode"] == 82
    assert [m["errorCode"] for m in old_leader.leave()["members"]] == [82]
    assert describe(api, group_id)["groupState"] == "Stable"


def test_static_follower_bounce_gets_its_assignment_back_without_a_rebalance(
    api: Api, url: str, stable_static_group
) -> None:
    group_id, _, members = stable_static_group
    before = assignments_of(describe(api, group_id))
    generation = members[0].generation
    old = next(m for m in members if not m.is_leader)

    new, joined = bounce(url, old)
    assert joined["errorCode"] == 0
    assert (joined["generationId"], joined["leader"]) == (generation, old.leader)
    assert joined["skipAssignment"] is False
    assert joined["members"] == []  # only the leader is told the members
    synced = new.sync()
    assert synced["errorCode"] == 0
    assert synced["protocolName"] == "range"
    assert decode_assignment(unb64(synced["assignment"])) == before[old.member_id]
    assert describe(api, group_id)["groupState"] == "Stable"
    assert all(m.heartbeat() == 0 for m in members if m is not old)
    assert old.heartbeat() == 82


def test_static_rejoin_with_new_metadata_for_the_same_protocol_does_not_rebalance(
    api: Api, url: str, stable_static_group
) -> None:
    """Kafka rebalances a Stable group on a static rejoin only if the protocol it would select
    changes; new metadata (here a subscription with one more topic) is just recorded."""
    group_id, topics, members = stable_static_group
    old = members[0]
    changed = static_consumer(url, group_id, [*topics, unique("other")], old.instance_id or "")
    joined = changed.join()
    assert joined["errorCode"] == 0
    assert joined["generationId"] == old.generation
    group = describe(api, group_id)
    assert group["groupState"] == "Stable"
    shown = next(m for m in group["members"] if m["memberId"] == changed.member_id)
    assert unb64(shown["memberMetadata"]) == changed.protocols[0][1]
    assert all(m.heartbeat() == 0 for m in members[1:])
    assert old.heartbeat() == 82


def test_static_rejoin_that_changes_the_selected_protocol_rebalances(api: Api, url: str) -> None:
    group_id = unique("static")
    first = ClassicClient(
        url,
        group_id,
        instance_id="i-0",
        protocols=[("range", b"r"), ("roundrobin", b"rr")],
        rebalance_timeout_ms=10000,
    )
    assert first.join()["protocolName"] == "range"
    assert first.sync({first.member_id: b"a"})["errorCode"] == 0
    # The same instance comes back preferring roundrobin: the vote changes, so it rebalances
    # (alone in the group, its own join completes the barrier at the next generation).
    again = ClassicClient(
        url,
        group_id,
        instance_id="i-0",
        protocols=[("roundrobin", b"rr"), ("range", b"r")],
        rebalance_timeout_ms=10000,
    )
    joined = again.join()
    assert joined["errorCode"] == 0
    assert joined["generationId"] == first.generation + 1
    assert joined["protocolName"] == "roundrobin"
    assert joined["skipAssignment"] is False
    assert first.heartbeat() == 82
