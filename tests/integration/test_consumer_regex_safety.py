"""No request can stall the service: subscribedTopicRegex is evaluated by RE2 on every
path (the heartbeat, create-topics and delete-topics notifying the groups, the sweeper redoing
a notification), so a pattern that makes a backtracking engine run for hours answers at once;
a pattern RE2 refuses is 128 INVALID_REGULAR_EXPRESSION and changes nothing."""

from __future__ import annotations

import time
import uuid
from typing import Any

import pytest

from groupcoord.core.topics import TopicRecord
from groupcoord.runtime import now_ms
from groupcoord.service import sweep as sweeper
from groupcoord.store import schema
from groupcoord.store.store import Store
from groupcoord.store.topics import NOTIFY_GRACE_MS, TOPIC_CHANGES_PK, TopicRegistry
from groupcoord.topic_ids import new_topic_id
from tests.support.api import Api
from tests.support.consumer import Member, describe, settle, unique
from tests.support.servers import IMMEDIATE_INSTALLS

HB = "consumer-group-heartbeat"
# Full match: the topic names that end with "x". Python's `re` takes 2 s on a 14-character
# name and about 3.4 times longer per added character; RE2 takes microseconds.
PATHOLOGICAL = "(.*.*)*x"
# Generous bounds for a busy 2-core machine: a request normally takes tens of
# milliseconds. With backtracking, the 30-character names below would take days.
QUICK_REQUEST_S = 10.0
QUICK_SWEEP_S = 10.0


# A coordinator on a table of this module's own (see test_consumer_heartbeat_api.py).
pytestmark = pytest.mark.coordinator(IMMEDIATE_INSTALLS)


def timed(call: Any, *args: Any) -> tuple[Any, float]:
    start = time.perf_counter()
    result = call(*args)
    return result, time.perf_counter() - start


def name_of(length: int, last: str) -> str:
    """A unique topic name of `length` characters ending with `last`."""
    head = f"rx-{uuid.uuid4().hex}"
    return (head + "a" * length)[: length - 1] + last


def join_body(group: str, regex: str, member_id: str | None = None) -> dict[str, Any]:
    return {
        "groupId": group,
        "memberId": member_id or str(uuid.uuid4()),
        "memberEpoch": 0,
        "rebalanceTimeoutMs": 30000,
        "subscribedTopicRegex": regex,
        "topicPartitions": [],
    }


# --- a pathological (but valid) pattern ---


def test_a_pathological_regex_never_stalls_a_request(api: Api) -> None:
    group = unique("g")
    member = Member(api, group, topics=None, regex=PATHOLOGICAL)
    joined, took = timed(member.join)
    assert joined["errorCode"] == 0, joined  # a valid RE2 pattern
    assert took < QUICK_REQUEST_S, took
    settle([member])

    # create-topics notifies the groups whose regex matches the new name (30 characters).
    matching, other = name_of(30, "x"), name_of(30, "a")
    assert len(matching) == len(other) == 30
    timings: dict[str, float] = {}
    ids: dict[str, str] = {}
    for topic in (matching, other):
        body, took = timed(
            api.ok, "create-topics", {"topics": [{"name": topic, "numPartitions": 2}]}
        )
        timings[f"create {topic}"] = took
        assert body["topics"][0]["errorCode"] == 0, body
        ids[topic] = body["topics"][0]["topicId"]

    # The heartbeat evaluates the member's regex against every topic: it gets `matching` only.
    _, took = timed(settle, [member])
    timings["settle"] = took
    assert member.owned == {ids[matching]: {0, 1}}
    assert describe(api, group)["members"][0]["subscribedTopicRegex"] == PATHOLOGICAL

    for topic in (matching, other):
        body, took = timed(api.ok, "delete-topics", {"topics": [{"name": topic}]})
        timings[f"delete {topic}"] = took
        assert [r["errorCode"] for r in body["responses"]] == [0], body
    _, took = timed(settle, [member])
    timings["settle after delete"] = took
    assert member.owned == {}
    assert all(t < QUICK_REQUEST_S for t in timings.values()), timings


# --- a pattern RE2 refuses ---


@pytest.mark.parametrize("regex", ["(", "a{100000}", r"(a)\1", "orders-(?=v2)"])
def test_a_join_with_an_invalid_regex_is_128_and_creates_nothing(api: Api, regex: str) -> None:
    group = unique("g")
    body, took = timed(api.ok, HB, join_body(group, regex))
    assert took < QUICK_REQUEST_S
    assert body["errorCode"] == 128, body
    assert body["errorMessage"].startswith(
        f"SubscribedTopicRegex `{regex}` is not a valid regular expression: "
    )
    assert describe(api, group)["errorCode"] == 69  # GROUP_ID_NOT_FOUND: nothing was written


def test_an_invalid_regex_changes_nothing_in_an_existing_group(api: Api) -> None:
    group = unique("g")
    member = Member(api, group, topics=None, regex="orders-.*")
    assert member.join()["errorCode"] == 0
    settle([member])
    before = describe(api, group)

    # A second member joining with a bad regex is not admitted.
    assert api.ok(HB, join_body(group, r"(a)\1"))["errorCode"] == 128
    # The member itself changing to a bad regex keeps its old one.
    answer = member.heartbeat(subscribedTopicRegex="orders-(")
    assert answer["errorCode"] == 128, answer
    after = describe(api, group)
    assert [m["memberId"] for m in after["members"]] == [member.member_id]
    assert after["members"][0]["subscribedTopicRegex"] == "orders-.*"
    assert after["groupEpoch"] == before["groupEpoch"]
    assert member.heartbeat()["errorCode"] == 0


def test_a_regex_over_the_length_limit_is_refused_and_creates_nothing(api: Api) -> None:
    group = unique("g")
    answer = api.call(HB, join_body(group, "a" * 1025))
    # The request model may bound the field first (400, 42 naming it); past it the coordinator
    # answers Kafka's 128 in-band. Either way nothing is stored.
    refused = (answer.status, answer.body["errorCode"])
    assert refused in ((200, 128), (400, 42)), (answer.status, answer.body)
    assert describe(api, group)["errorCode"] == 69
    # 1024 characters are accepted.
    assert api.ok(HB, join_body(group, "a" * 1024))["errorCode"] == 0


# --- the sweeper redoing a notification ---


def test_the_sweeper_evaluates_a_pathological_regex_quickly(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    for group in ("ends-with-x", "prefix"):
        store.dynamo.put({**schema.group_key(group), "kind": schema.KIND_GROUP, "groupId": group})
    store.topics.set_regex("ends-with-x", PATHOLOGICAL)
    store.topics.set_regex("prefix", "orders-.*")

    # The topic transactions commit but their notifications fail: the sweeper redoes them.
    def crash(registry: TopicRegistry, group_ids: Any) -> int:
        raise RuntimeError("Lambda timed out between the two writes")

    monkeypatch.setattr(TopicRegistry, "bump_groups", crash)
    now = now_ms()
    for topic in (name_of(30, "x"), name_of(30, "a")):
        with pytest.raises(RuntimeError):
            store.topics.create(TopicRecord(topic, new_topic_id(), 1), now)
    monkeypatch.undo()
    pending = list(store.dynamo.query("pk = :pk", {":pk": TOPIC_CHANGES_PK}, consistent=True))
    assert len(pending) == 2

    report, took = timed(sweeper.sweep, store, now + NOTIFY_GRACE_MS + 1)
    assert took < QUICK_SWEEP_S, took
    assert report.as_dict() == {
        "overdue": 2,
        "completed": {"topic-change": 2},
        "failed": 0,
        "quarantined": 0,
        "remaining": False,
        "deferred": 0,
    }
    bumps = {
        g: (store.dynamo.get(schema.group_key(g), consistent=True) or {}).get("topicChanges")
        for g in ("ends-with-x", "prefix")
    }
    assert bumps == {"ends-with-x": 1, "prefix": None}
