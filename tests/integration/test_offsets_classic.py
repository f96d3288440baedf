"""Offsets of simple and classic groups over HTTP: commit fencing, fetch, delete."""

from __future__ import annotations

import base64
import threading
import time
import uuid

import pytest

from groupcoord.wire.consumer_protocol import Subscription, encode_subscription
from tests.support.api import Api

SETTINGS = {
    "group.initial.rebalance.delay.ms": "100",
    "group.min.session.timeout.ms": "100",
    "groupcoord.barrier.hold.ms": "300",
    "groupcoord.sweep.interval.ms": "200",
}
SESSION_MS = 10_000


pytestmark = pytest.mark.coordinator(SETTINGS)


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def make_topic(api: Api, partitions: int = 4) -> tuple[str, str]:
    name = unique("t")
    body = api.ok("create-topics", {"topics": [{"name": name, "numPartitions": partitions}]})
    return name, body["topics"][0]["topicId"]


def join(
    api: Api,
    group: str,
    topic: str,
    instance: str | None = None,
    member_id: str = "",
    rebalance_timeout_ms: int = 10_000,
) -> dict:
    """Join until a 200 that is not MEMBER_ID_REQUIRED, polling 202s."""
    metadata = base64.b64encode(encode_subscription(Subscription([topic]))).decode()
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        body = {
            "groupId": group,
            "memberId": member_id,
            "groupInstanceId": instance,
            "sessionTimeoutMs": SESSION_MS,
            # Long enough for a busy CI machine; the zombie test shortens it on purpose.
            "rebalanceTimeoutMs": rebalance_timeout_ms,
            "protocolType": "consumer",
            "protocols": [{"name": "range", "metadata": metadata}],
        }
        answer = api.call("join-group", body)
        if answer.status == 202:
            member_id = answer.body["memberId"]
            time.sleep(answer.body["retryAfterMs"] / 1000)
            continue
        assert answer.status == 200, answer.body
        if answer.body["errorCode"] == 79:
            member_id = answer.body["memberId"]
            continue
        return answer.body
    raise AssertionError("join did not complete")


def sync(api: Api, group: str, joined: dict, assignments: list | None = None) -> dict:
    body = {
        "groupId": group,
        "generationId": joined["generationId"],
        "memberId": joined["memberId"],
        "assignments": assignments or [],
    }
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        answer = api.call("sync-group", body)
        if answer.status == 202:
            time.sleep(answer.body["retryAfterMs"] / 1000)
            continue
        assert answer.status == 200, answer.body
        return answer.body
    raise AssertionError("sync did not complete")


def stable_group(
    api: Api, group: str, topic: str, size: int, rebalance_timeout_ms: int = 10_000
) -> list[dict]:
    """`size` members joined concurrently and synced: the join responses."""
    joined: list[dict] = [{} for _ in range(size)]
    settled: list[int] = [-1] * size  # the generation each member's last heartbeat accepted
    converged = threading.Event()

    def run(i: int) -> None:
        # A client's loop: join, heartbeat, rejoin on 27/22 (a later member started a rebalance).
        joined[i] = join(api, group, topic, rebalance_timeout_ms=rebalance_timeout_ms)
        while not converged.is_set():
            beat = api.ok(
                "heartbeat",
                {
                    "groupId": group,
                    "generationId": joined[i]["generationId"],
                    "memberId": joined[i]["memberId"],
                },
            )["errorCode"]
            if beat == 0:
                settled[i] = joined[i]["generationId"]
            elif beat in (22, 27):
                settled[i] = -1
                joined[i] = join(api, group, topic, member_id=joined[i]["memberId"])
            elif beat == 25:  # removed (too slow to rejoin): join afresh
                settled[i] = -1
                joined[i] = join(api, group, topic)
            time.sleep(0.05)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(size)]
    for thread in threads:
        thread.start()
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if len(set(settled)) == 1 and settled[0] >= 0:
            break
        time.sleep(0.05)
    converged.set()
    for thread in threads:
        thread.join()
    assert len({j["generationId"] for j in joined}) == 1, joined
    leader = next(j for j in joined if j["leader"] == j["memberId"])
    sync(api, group, leader, [{"memberId": j["memberId"], "assignment": ""} for j in joined])
    for member in joined:
        if member is not leader:
            sync(api, group, member)
    return joined


def commit(
    api: Api,
    group: str,
    topic: str,
    offsets: dict[int, int],
    generation: int = -1,
    member_id: str = "",
    metadata: str | None = None,
) -> list[int]:
    body = api.ok(
        "offset-commit",
        {
            "groupId": group,
            "generationIdOrMemberEpoch": generation,
            "memberId": member_id,
            "topics": [
                {
                    "name": topic,
                    "partitions": [
                        {"partitionIndex": p, "committedOffset": o, "committedMetadata": metadata}
                        for p, o in offsets.items()
                    ],
                }
            ],
        },
    )
    return [p["errorCode"] for p in body["topics"][0]["partitions"]]


def fetched(api: Api, group: str, topic: str, partitions: list[int]) -> dict[int, int]:
    body = api.ok(
        "offset-fetch",
        {
            "groups": [
                {"groupId": group, "topics": [{"name": topic, "partitionIndexes": partitions}]}
            ]
        },
    )
    return {
        p["partitionIndex"]: p["committedOffset"]
        for p in body["groups"][0]["topics"][0]["partitions"]
    }


def test_a_commit_from_outside_any_group_creates_a_simple_group(api: Api) -> None:
    topic, topic_id = make_topic(api)
    group = unique("simple")
    assert commit(api, group, topic, {0: 10, 1: 11}) == [0, 0]
    assert fetched(api, group, topic, [0, 1, 2]) == {0: 10, 1: 11, 2: -1}
    listed = {g["groupId"]: g for g in api.ok("list-groups", {})["groups"]}
    assert listed[group]["groupState"] == "Empty"
    assert listed[group]["groupType"] == "classic"
    # Responses name the topic both ways.
    body = api.ok(
        "offset-commit",
        {
            "groupId": group,
            "topics": [
                {"topicId": topic_id, "partitions": [{"partitionIndex": 3, "committedOffset": 5}]}
            ],
        },
    )
    assert (body["topics"][0]["name"], body["topics"][0]["topicId"]) == (topic, topic_id)


def test_a_member_commit_to_a_missing_group_is_group_id_not_found(api: Api) -> None:
    topic, _ = make_topic(api)
    group = unique("missing")
    assert commit(api, group, topic, {0: 1, 1: 2}, generation=3, member_id="m") == [69, 69]
    assert fetched(api, group, topic, [0, 1]) == {0: -1, 1: -1}


def test_classic_members_of_the_current_generation_commit(api: Api) -> None:
    topic, _ = make_topic(api)
    group = unique("classic")
    first, _second = stable_group(api, group, topic, 2)
    gen = first["generationId"]
    assert commit(api, group, topic, {0: 100}, gen, first["memberId"]) == [0]
    assert fetched(api, group, topic, [0]) == {0: 100}


def test_a_stale_generation_is_rejected_whole_with_illegal_generation(api: Api) -> None:
    topic, _ = make_topic(api)
    group = unique("stale")
    first, _ = stable_group(api, group, topic, 2)
    codes = commit(api, group, topic, {0: 5, 1: 6}, first["generationId"] - 1, first["memberId"])
    assert codes == [22, 22]
    assert fetched(api, group, topic, [0, 1]) == {0: -1, 1: -1}


def test_an_unknown_member_is_rejected_with_unknown_member_id(api: Api) -> None:
    topic, _ = make_topic(api)
    group = unique("unknown")
    first, _ = stable_group(api, group, topic, 2)
    assert commit(api, group, topic, {0: 5}, first["generationId"], "nobody") == [25]


def test_an_admin_commit_to_a_non_empty_group_is_unknown_member_id(api: Api) -> None:
    topic, _ = make_topic(api)
    group = unique("admin")
    stable_group(api, group, topic, 1)
    assert commit(api, group, topic, {0: 5}) == [25]


def test_a_commit_while_the_group_awaits_the_leaders_assignment_is_rebalance_in_progress(
    api: Api,
) -> None:
    topic, _ = make_topic(api)
    group = unique("completing")
    joined = join(api, group, topic)  # alone: the barrier closes at once, no sync yet
    assert joined["leader"] == joined["memberId"]
    assert commit(api, group, topic, {0: 5}, joined["generationId"], joined["memberId"]) == [27]


def test_a_static_member_with_another_instance_id_is_fenced(api: Api) -> None:
    topic, _ = make_topic(api)
    group = unique("static")
    joined = join(api, group, topic, instance="i-1")
    sync(api, group, joined, [{"memberId": joined["memberId"], "assignment": ""}])
    body = api.ok(
        "offset-commit",
        {
            "groupId": group,
            "generationIdOrMemberEpoch": joined["generationId"],
            "memberId": joined["memberId"],
            "groupInstanceId": "i-2",
            "topics": [
                {"name": topic, "partitions": [{"partitionIndex": 0, "committedOffset": 1}]}
            ],
        },
    )
    assert body["topics"][0]["partitions"][0]["errorCode"] == 82


def test_oversized_metadata_fails_only_its_partition(api: Api) -> None:
    topic, _ = make_topic(api)
    group = unique("meta")
    body = api.ok(
        "offset-commit",
        {
            "groupId": group,
            "topics": [
                {
                    "name": topic,
                    "partitions": [
                        {
                            "partitionIndex": 0,
                            "committedOffset": 1,
                            "committedMetadata": "x" * 4097,
                        },
                        {"partitionIndex": 1, "committedOffset": 2, "committedMetadata": "ok"},
                    ],
                }
            ],
        },
    )
    assert [p["errorCode"] for p in body["topics"][0]["partitions"]] == [12, 0]
    fetch = api.ok(
        "offset-fetch",
        {"groups": [{"groupId": group, "topics": [{"name": topic, "partitionIndexes": [0, 1]}]}]},
    )
    parts = fetch["groups"][0]["topics"][0]["partitions"]
    assert [(p["committedOffset"], p["metadata"]) for p in parts] == [(-1, None), (2, "ok")]


def test_unknown_topics_and_partitions_are_answered_per_partition(api: Api) -> None:
    topic, _ = make_topic(api, partitions=2)
    group = unique("unknown-topic")
    body = api.ok(
        "offset-commit",
        {
            "groupId": group,
            "topics": [
                {
                    "name": topic,
                    "partitions": [
                        {"partitionIndex": 1, "committedOffset": 1},
                        {"partitionIndex": 2, "committedOffset": 1},
                    ],
                },
                {
                    "name": unique("nope"),
                    "partitions": [{"partitionIndex": 0, "committedOffset": 1}],
                },
                {
                    "topicId": "AAAAAAAAAAAAAAAAAAAAAQ",
                    "partitions": [{"partitionIndex": 0, "committedOffset": 1}],
                },
            ],
        },
    )
    codes = [[p["errorCode"] for p in t["partitions"]] for t in body["topics"]]
    assert codes == [[0, 3], [3], [100]]


def test_a_topic_name_and_id_that_disagree_are_a_400_naming_the_topic(api: Api) -> None:
    topic, _ = make_topic(api)
    _, other_id = make_topic(api)
    group = unique("disagree")
    answer = api.call(
        "offset-commit",
        {
            "groupId": group,
            "topics": [
                {
                    "name": topic,
                    "topicId": other_id,
                    "partitions": [{"partitionIndex": 0, "committedOffset": 1}],
                }
            ],
        },
    )
    assert answer.status == 400
    assert answer.body["errorMessage"].startswith("topics[0]")
    assert fetched(api, group, topic, [0]) == {0: -1}


def test_fetch_of_every_topic_and_of_a_missing_group(api: Api) -> None:
    topic_a, _ = make_topic(api)
    topic_b, _ = make_topic(api)
    group = unique("fetch")
    commit(api, group, topic_a, {0: 1, 2: 3})
    commit(api, group, topic_b, {1: 7})
    body = api.ok("offset-fetch", {"groups": [{"groupId": group, "topics": None}]})
    got = {
        (t["name"], p["partitionIndex"]): p["committedOffset"]
        for t in body["groups"][0]["topics"]
        for p in t["partitions"]
    }
    assert got == {(topic_a, 0): 1, (topic_a, 2): 3, (topic_b, 1): 7}
    missing = api.ok("offset-fetch", {"groups": [{"groupId": unique("none"), "topics": None}]})
    assert missing["groups"][0]["topics"] == []
    assert fetched(api, unique("none"), topic_a, [0]) == {0: -1}


def test_offset_delete_rules(api: Api) -> None:
    topic, _ = make_topic(api)
    other, _ = make_topic(api)
    missing = api.ok(
        "offset-delete",
        {
            "groupId": unique("none"),
            "topics": [{"name": topic, "partitions": [{"partitionIndex": 0}]}],
        },
    )
    assert missing["errorCode"] == 69

    group = unique("delete")
    stable_group(api, group, topic, 1)
    joined_group_commit = api.ok("describe-groups", {"groups": [group]})["groups"][0]
    assert joined_group_commit["groupState"] == "Stable"
    body = api.ok(
        "offset-delete",
        {
            "groupId": group,
            "topics": [
                {"name": topic, "partitions": [{"partitionIndex": 0}]},
                {"name": other, "partitions": [{"partitionIndex": 0}]},
            ],
        },
    )
    assert body["errorCode"] == 0
    assert [t["partitions"][0]["errorCode"] for t in body["topics"]] == [86, 0]

    simple = unique("simple-delete")
    commit(api, simple, topic, {0: 4, 1: 5})
    body = api.ok(
        "offset-delete",
        {"groupId": simple, "topics": [{"name": topic, "partitions": [{"partitionIndex": 0}]}]},
    )
    assert body["topics"][0]["partitions"][0]["errorCode"] == 0
    assert fetched(api, simple, topic, [0, 1]) == {0: -1, 1: 5}


def test_delete_groups_deletes_the_committed_offsets(api: Api) -> None:
    topic, _ = make_topic(api)
    group = unique("gone")
    commit(api, group, topic, {0: 9})
    result = api.ok("delete-groups", {"groupsNames": [group]})["results"][0]
    assert result["errorCode"] == 0
    assert fetched(api, group, topic, [0]) == {0: -1}
    # Re-created by a new commit, it starts from nothing.
    assert commit(api, group, topic, {1: 1}) == [0]
    assert fetched(api, group, topic, [0, 1]) == {0: -1, 1: 1}


def test_a_zombie_commit_never_overwrites_the_new_generations_commit(api: Api) -> None:
    """The old generation's member commits in a loop while a rebalance moves the group on;
    once the new generation has committed, no commit of the old one is ever accepted."""
    topic, _ = make_topic(api, partitions=1)
    group = unique("zombie")
    # A short rebalance timeout: the barrier below waits it out for the zombie.
    (zombie,) = stable_group(api, group, topic, 1, rebalance_timeout_ms=1500)
    stop = threading.Event()
    accepted: list[tuple[float, int]] = []

    def zombie_loop() -> None:
        value = 0
        while not stop.is_set():
            value += 1
            codes = commit(
                api, group, topic, {0: value}, zombie["generationId"], zombie["memberId"]
            )
            if codes == [0]:
                accepted.append((time.monotonic(), value))

    thread = threading.Thread(target=zombie_loop)
    thread.start()
    try:
        # Forces a rebalance; the zombie never rejoins and is dropped at the rebalance timeout.
        # As a client does, the newcomer rejoins until its sync succeeds: on a busy machine
        # its sync can miss the sync deadline (the group's rebalance timeout) and answer 25/27.
        deadline = time.monotonic() + 60
        synced: dict = {"errorCode": -1}
        member_id = ""
        while synced["errorCode"] != 0:
            assert time.monotonic() < deadline, synced
            newcomer = join(api, group, topic, member_id=member_id, rebalance_timeout_ms=3000)
            if newcomer["errorCode"] != 0:
                member_id = "" if newcomer["errorCode"] == 25 else member_id
                continue
            member_id = newcomer["memberId"]
            assignment = [{"memberId": member_id, "assignment": ""}]
            synced = sync(api, group, newcomer, assignment)
            if synced["errorCode"] == 25:
                member_id = ""
        new_codes = commit(
            api, group, topic, {0: 1_000_000}, newcomer["generationId"], newcomer["memberId"]
        )
        assert new_codes == [0]
        first_new_commit = time.monotonic()
        time.sleep(0.3)  # let the zombie keep trying against the new generation
    finally:
        stop.set()
        thread.join()
    assert all(at < first_new_commit for at, _ in accepted)
    assert fetched(api, group, topic, [0]) == {0: 1_000_000}


def test_commits_of_the_current_generation_are_accepted_during_a_rebalance_not_after(
    api: Api,
) -> None:
    """Kafka admits a commit of generation g while the group rebalances towards g+1 (a
    cooperative member keeps committing what it keeps); once g+1 formed, g is 22."""
    topic, _ = make_topic(api)
    group = unique("rebalancing")
    (first,) = stable_group(api, group, topic, 1)
    gen, member_id = first["generationId"], first["memberId"]
    # A second member arrives: the group is PreparingRebalance until the first rejoins.
    newcomer = threading.Thread(target=join, args=(api, group, topic))
    newcomer.start()
    try:
        wait = time.monotonic() + 20
        while api.ok("describe-groups", {"groups": [group]})["groups"][0]["groupState"] != (
            "PreparingRebalance"
        ):
            assert time.monotonic() < wait
            time.sleep(0.05)
        assert commit(api, group, topic, {0: 11}, gen, member_id) == [0]
        rejoined = join(api, group, topic, member_id=member_id)
        assert rejoined["generationId"] == gen + 1
    finally:
        newcomer.join()
    assert commit(api, group, topic, {0: 12}, gen, member_id) == [22]
    assert fetched(api, group, topic, [0]) == {0: 11}
