"""Offset retention with a short retention (groupcoord.offsets.retention.ms)."""

from __future__ import annotations

import threading
import time

import pytest

from tests.integration.test_offsets_classic import commit, fetched, stable_group
from tests.support.api import Api
from tests.support.consumer import Member, create_topic, unique, until

RETENTION_MS = 1500
SETTINGS = {
    "groupcoord.offsets.retention.ms": str(RETENTION_MS),
    "groupcoord.sweep.interval.ms": "200",
    "group.initial.rebalance.delay.ms": "100",
    "group.min.session.timeout.ms": "100",
    "groupcoord.barrier.hold.ms": "300",
}


pytestmark = pytest.mark.coordinator(SETTINGS)


def listed(api: Api, group: str) -> bool:
    return any(g["groupId"] == group for g in api.ok("list-groups", {})["groups"])


def test_an_empty_groups_offsets_expire_and_the_group_is_deleted(api: Api) -> None:
    topic, group = unique("t"), unique("simple")
    create_topic(api, topic, 2)
    started = time.monotonic()
    assert commit(api, group, topic, {0: 5, 1: 6}) == [0, 0]
    if time.monotonic() - started < RETENTION_MS / 1000:  # too slow a machine to see it
        assert fetched(api, group, topic, [0]) == {0: 5}
    # Hidden from reads as soon as they expire...
    until(lambda: fetched(api, group, topic, [0, 1]) == {0: -1, 1: -1}, timeout_s=20)
    # ...and the sweeper deletes the group once nothing is left in it.
    until(lambda: not listed(api, group), timeout_s=20)


def test_a_classic_groups_offsets_live_while_it_has_members(api: Api) -> None:
    topic, group = unique("t"), unique("classic")
    create_topic(api, topic, 1)
    (member,) = stable_group(api, group, topic, 1)
    gen, member_id = member["generationId"], member["memberId"]
    assert commit(api, group, topic, {0: 9}, gen, member_id) == [0]
    stop = threading.Event()

    def heartbeats() -> None:
        while not stop.wait(0.2):
            body = {"groupId": group, "generationId": gen, "memberId": member_id}
            api.call("heartbeat", body)

    beating = threading.Thread(target=heartbeats)
    beating.start()
    try:
        time.sleep(2 * RETENTION_MS / 1000)  # a fixed wait: the point is that nothing happens
        assert fetched(api, group, topic, [0]) == {0: 9}
    finally:
        stop.set()
        beating.join()
    api.ok("leave-group", {"groupId": group, "members": [{"memberId": member_id}]})
    until(lambda: fetched(api, group, topic, [0]) == {0: -1}, timeout_s=20)
    until(lambda: not listed(api, group), timeout_s=20)


def test_a_consumer_group_keeps_subscribed_topics_and_expires_the_others(api: Api) -> None:
    subscribed, other, group = unique("t"), unique("u"), unique("consumer")
    create_topic(api, subscribed, 1)
    create_topic(api, other, 1)
    member = Member(api, group, topics=[subscribed])
    member.join()
    body = {
        "groupId": group,
        "generationIdOrMemberEpoch": member.epoch,
        "memberId": member.member_id,
        "topics": [
            {"name": subscribed, "partitions": [{"partitionIndex": 0, "committedOffset": 3}]},
            {"name": other, "partitions": [{"partitionIndex": 0, "committedOffset": 4}]},
        ],
    }
    codes = [
        p["errorCode"] for t in api.ok("offset-commit", body)["topics"] for p in t["partitions"]
    ]
    assert codes == [0, 0]
    # The member's session (45 s) outlives the test: no heartbeats needed meanwhile.
    until(lambda: fetched(api, group, other, [0]) == {0: -1}, timeout_s=20)
    assert fetched(api, group, subscribed, [0]) == {0: 3}
