"""Offsets of streams groups over HTTP on DynamoDB Local: commits fenced per active task's
assignment epoch (the streams form of KIP-1251), fetches with the exact epoch, and the offline
migration of an empty classic group (its offsets kept; a classic group with members is 69)."""

from __future__ import annotations

import pytest

from tests.support.api import Api
from tests.support.classic_client import ClassicClient
from tests.support.consumer import create_topic, unique
from tests.support.streams import StreamsMember, settle, streams_serve


@pytest.fixture(scope="module")
def url(dynamodb_endpoint: str) -> str:
    """The streams tests' shared `serve` on DynamoDB Local (not the in-memory adapter)."""
    return streams_serve(dynamodb_endpoint)


def commit(api: Api, member: StreamsMember, epoch: int, parts: list[tuple[str, int]]) -> list[int]:
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


def stateless(words: str) -> dict:
    return {"epoch": 1, "subtopologies": [{"subtopologyId": "0", "sourceTopics": [words]}]}


def test_an_older_epoch_commits_only_tasks_held_since_then(api: Api) -> None:
    words = unique("words")
    create_topic(api, words, 2)
    group = unique("g")
    a = StreamsMember(api, group, stateless(words))
    a.join()
    first = a.epoch
    assert a.active == {"0": {0, 1}}
    b = StreamsMember(api, group, a.topology)
    b.join()
    settle([a, b])
    assert a.epoch > first and b.epoch == a.epoch
    (kept,) = a.active["0"]
    (moved,) = b.active["0"]
    # The kept task was granted at the first epoch: a commit from then is no zombie's.
    assert commit(api, a, first, [(words, kept)]) == [0]
    # The task that moved to b: refused, and the whole request with it.
    assert commit(api, a, first, [(words, moved)]) == [113]
    assert commit(api, a, first, [(words, kept), (words, moved)]) == [113, 113]
    assert commit(api, b, first, [(words, moved)]) == [113]  # b got it later than that
    # The current epoch commits anything; an epoch the coordinator never gave is 113.
    assert commit(api, b, b.epoch, [(words, moved)]) == [0]
    assert commit(api, a, a.epoch + 1, [(words, kept)]) == [113]
    a.leave()
    assert commit(api, a, first, [(words, kept)]) == [25]


def test_a_members_fetch_needs_its_exact_epoch(api: Api) -> None:
    words = unique("words")
    create_topic(api, words, 1)
    a = StreamsMember(api, unique("g"), stateless(words))
    a.join()
    assert commit(api, a, a.epoch, [(words, 0)]) == [0]

    def fetch(member_id: str | None, epoch: int) -> dict:
        body = {"groupId": a.group, "memberId": member_id, "memberEpoch": epoch, "topics": None}
        return api.ok("offset-fetch", {"groups": [body]})["groups"][0]

    assert fetch(a.member_id, a.epoch)["topics"][0]["partitions"][0]["committedOffset"] == 7
    assert fetch(a.member_id, a.epoch - 1)["errorCode"] == 113
    assert fetch("someone-else", 1)["errorCode"] == 25
    assert fetch(None, -1)["errorCode"] == 0  # an admin fetch


def test_an_empty_classic_group_becomes_a_streams_group_keeping_its_offsets(
    api: Api, url: str
) -> None:
    words, group = unique("words"), unique("g")
    create_topic(api, words, 1)
    classic = ClassicClient(url, group)
    assert classic.join()["errorCode"] == 0
    assert classic.sync({classic.member_id: b""})["errorCode"] == 0
    committed = api.ok(
        "offset-commit",
        {
            "groupId": group,
            "generationIdOrMemberEpoch": classic.generation,
            "memberId": classic.member_id,
            "topics": [
                {"name": words, "partitions": [{"partitionIndex": 0, "committedOffset": 42}]}
            ],
        },
    )
    assert committed["topics"][0]["partitions"][0]["errorCode"] == 0
    streams = StreamsMember(api, group, stateless(words))
    assert streams.join()["errorCode"] == 69  # the classic group still has a member
    classic.leave()
    assert streams.join()["errorCode"] == 0
    assert streams.active == {"0": {0}}
    fetched = api.ok("offset-fetch", {"groups": [{"groupId": group, "topics": None}]})
    assert fetched["groups"][0]["topics"][0]["partitions"][0]["committedOffset"] == 42
    listed = api.ok("list-groups", {"typesFilter": ["streams"]})["groups"]
    assert group in [g["groupId"] for g in listed]
    # The classic protocol cannot join it now.
    refused = ClassicClient(url, group).join_once()
    assert (refused.status, refused.body["errorCode"]) == (200, 69), refused.body
