"""Offsets of consumer groups: KIP-1251 assignment epochs decide which commits are zombies."""

from __future__ import annotations

import threading
import time

import pytest

from groupcoord.store import schema
from groupcoord.store.codecs.consumer import group_from_item
from groupcoord.store.store import Store
from tests.support.api import Api
from tests.support.consumer import Member, create_topic, settle, unique
from tests.support.servers import IMMEDIATE_INSTALLS

pytestmark = pytest.mark.coordinator(IMMEDIATE_INSTALLS, store=True)


@pytest.fixture(scope="module")
def store(deployment: tuple[str, Store]) -> Store:
    """The store the coordinator runs on, to look at (and age) member items directly."""
    return deployment[1]


def commit(api: Api, member: Member, epoch: int, parts: list[tuple[str, int]]) -> list[int]:
    topics: dict[str, list[dict]] = {}
    for topic, partition in parts:
        topics.setdefault(topic, []).append({"partitionIndex": partition, "committedOffset": 7})
    body = api.ok(
        "offset-commit",
        {
            "groupId": member.group,
            "generationIdOrMemberEpoch": epoch,
            "memberId": member.member_id,
            "topics": [{"name": t, "partitions": p} for t, p in topics.items()],
        },
    )
    return [p["errorCode"] for t in body["topics"] for p in t["partitions"]]


@pytest.fixture
def kip1251(api: Api) -> tuple[Member, str, str, dict[str, int]]:
    """Member A at epoch 5 holding p0 (assigned at 1) and p1 (assigned at 3) of topic T;
    topic U is the group's but not A's. Returns (A, T, U, epochs)."""
    group = unique("kip1251")
    t, u = unique("t"), unique("u")
    create_topic(api, t, 2)
    create_topic(api, u, 1)
    a = Member(api, group, topics=[t])
    a.join()  # epoch 1: p0, p1
    assert a.epoch == 1
    b = Member(api, group, topics=[t])
    b.join()  # epoch 2: A must give up p1
    settle([a, b])  # A: epoch 2, p0 (since 1); B: p1 (since 2)
    b.leave()  # epoch 3: A gets p1 back, at 3
    settle([a])
    assert a.epoch == 3 and a.owned
    c = Member(api, group, topics=[u])
    c.join()  # epoch 4: nothing of A's moves
    c.leave()  # epoch 5
    settle([a])
    assert a.epoch == 5
    return a, t, u, {"p0": 1, "p1": 3}


def test_the_kip_1251_matrix(api: Api, kip1251: tuple) -> None:
    a, t, u, _ = kip1251
    assert commit(api, a, 2, [(t, 1)]) == [113]  # older than p1's assignment epoch (3)
    assert commit(api, a, 3, [(t, 1)]) == [0]  # assigned at 3: its epoch may still commit
    assert commit(api, a, 1, [(t, 0)]) == [0]  # p0 assigned at 1
    assert commit(api, a, 4, [(u, 0)]) == [113]  # not A's partition: only the current epoch
    assert commit(api, a, 5, [(u, 0), (t, 0)]) == [0, 0]  # current epoch: anything
    assert commit(api, a, 6, [(t, 0)]) == [113]  # newer than the coordinator knows
    # One bad partition rejects the whole request, nothing written.
    assert commit(api, a, 2, [(t, 0), (t, 1)]) == [113, 113]


def test_a_partition_pending_revocation_keeps_its_assignment_epoch(
    api: Api, kip1251: tuple
) -> None:
    a, t, _, _ = kip1251
    d = Member(api, a.group, topics=[t])
    d.join()  # a new epoch: A must revoke one partition
    response = a.heartbeat(ack=False)  # A keeps reporting both: it has not revoked yet
    assert response["errorCode"] == 0 and response["memberEpoch"] == 5
    # Whichever partition A is revoking, an epoch since its assignment may still commit it.
    assert commit(api, a, 4, [(t, 1)]) == [0]
    assert commit(api, a, 2, [(t, 1)]) == [113]


def test_a_legacy_member_record_reads_as_all_assigned_at_the_member_epoch(
    api: Api, store: Store, kip1251: tuple
) -> None:
    a, t, _, _ = kip1251
    group = group_from_item(store.dynamo.get(schema.group_key(a.group), consistent=True))
    key = schema.member_key(a.group, a.member_id, group.member_shards)
    item = store.dynamo.get(key, consistent=True)
    assert item is not None and item.get("assignedAt"), "assignment epochs are stored"
    legacy = {k: v for k, v in item.items() if k != "assignedAt"}  # written the old way
    store.dynamo.put(legacy)
    assert store.consumer.member(group, a.member_id, consistent=True)
    assert commit(api, a, 3, [(t, 1)]) == [113]  # every partition now "assigned at 5"
    assert commit(api, a, 5, [(t, 1)]) == [0]


def test_a_static_member_that_comes_back_may_commit_its_kept_partitions(api: Api) -> None:
    group, t = unique("static"), unique("t")
    create_topic(api, t, 2)
    first = Member(api, group, topics=[t], instance_id="i-1")
    first.join()
    settle([first])
    epoch = first.epoch
    assert first.leave(epoch=-2)["memberEpoch"] == -2
    # Away (epoch -2), its old epoch is newer than the coordinator's: fenced.
    assert commit(api, first, epoch, [(t, 0)]) == [113]
    second = Member(api, group, topics=[t], instance_id="i-1")
    second.join()
    assert second.epoch == epoch and second.owned
    # Replaced, the old member id is unknown.
    assert commit(api, first, epoch, [(t, 0)]) == [25]
    # Assignment epochs were reset to 0 on the temporary leave: any epoch may commit them.
    assert commit(api, second, 0, [(t, 0), (t, 1)]) == [0, 0]


def test_offset_fetch_is_strict_for_members_and_open_from_outside(api: Api) -> None:
    group, t = unique("fetch"), unique("t")
    create_topic(api, t, 1)
    a = Member(api, group, topics=[t])
    a.join()
    assert commit(api, a, a.epoch, [(t, 0)]) == [0]

    def fetch(member_id: str | None, epoch: int) -> dict:
        body = {"groupId": group, "memberId": member_id, "memberEpoch": epoch, "topics": None}
        return api.ok("offset-fetch", {"groups": [body]})["groups"][0]

    assert fetch(a.member_id, a.epoch)["topics"][0]["partitions"][0]["committedOffset"] == 7
    assert fetch(a.member_id, a.epoch + 1)["errorCode"] == 113
    assert fetch("someone-else", 1)["errorCode"] == 25
    assert fetch(None, -1)["errorCode"] == 0  # an admin fetch


def test_an_admin_commit_to_a_consumer_group_with_members_is_unknown_member(api: Api) -> None:
    group, t = unique("admin"), unique("t")
    create_topic(api, t, 1)
    Member(api, group, topics=[t]).join()
    body = api.ok(
        "offset-commit",
        {
            "groupId": group,
            "topics": [{"name": t, "partitions": [{"partitionIndex": 0, "committedOffset": 1}]}],
        },
    )
    assert body["topics"][0]["partitions"][0]["errorCode"] == 25


def test_a_zombie_racing_the_reassignment_never_overwrites_the_new_owner(api: Api) -> None:
    """Threads keep committing partition 0 with A's old epoch while it moves to B: no zombie
    commit sent after A's leave was answered is ever accepted, and B's offset is the one that
    stays. (Each commit is timed when it is sent: one sent before the leave may be accepted,
    and its answer may reach a thread that runs late, after B's commit.)"""
    group, t = unique("race"), unique("t")
    create_topic(api, t, 1)
    a = Member(api, group, topics=[t])
    a.join()
    old_epoch = a.epoch
    stop = threading.Event()
    accepted: list[float] = []

    def zombie() -> None:
        while not stop.is_set():
            sent = time.monotonic()
            if commit(api, a, old_epoch, [(t, 0)]) == [0]:
                accepted.append(sent)

    zombies = [threading.Thread(target=zombie) for _ in range(3)]
    for thread in zombies:
        thread.start()
    try:
        a.leave()  # A is gone (as a zombie would be after its session expired)
        left_at = time.monotonic()
        b = Member(api, group, topics=[t])
        b.join()
        settle([b])
        body = {
            "groupId": group,
            "generationIdOrMemberEpoch": b.epoch,
            "memberId": b.member_id,
            "topics": [{"name": t, "partitions": [{"partitionIndex": 0, "committedOffset": 999}]}],
        }
        assert api.ok("offset-commit", body)["topics"][0]["partitions"][0]["errorCode"] == 0
        time.sleep(0.3)  # the zombies keep trying against the new owner
    finally:
        stop.set()
        for thread in zombies:
            thread.join()
    assert all(sent < left_at for sent in accepted)
    fetch = api.ok(
        "offset-fetch",
        {"groups": [{"groupId": group, "topics": [{"name": t, "partitionIndexes": [0]}]}]},
    )
    assert fetch["groups"][0]["topics"][0]["partitions"][0]["committedOffset"] == 999
