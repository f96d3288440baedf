"""The topic registry over HTTP: create-topics, create-partitions, delete-topics, metadata."""

from __future__ import annotations

import re
import uuid

import pytest

from tests.support.api import Api

# An HTTP-contract test: `serve` on the DynamoDB endpoint.
pytestmark = pytest.mark.http_contract


TOPIC_ID = re.compile(r"^[A-Za-z0-9_-]{22}$")
ZERO_ID = "AAAAAAAAAAAAAAAAAAAAAA"


def name(prefix: str = "t") -> str:
    return f"{prefix}-{uuid.uuid4().hex[:10]}"


def create(api: Api, topic: str, partitions: int = 3) -> dict:
    body = api.ok("create-topics", {"topics": [{"name": topic, "numPartitions": partitions}]})
    return body["topics"][0]


def metadata_of(api: Api, topic: str) -> dict:
    body = api.ok("metadata", {"topics": [{"name": topic}]})
    return body["topics"][0]


def test_created_topic_shows_in_metadata_with_kafka_topic_id_and_partitions(api: Api) -> None:
    topic = name("orders")
    created = create(api, topic, 12)
    assert created["errorCode"] == 0
    assert TOPIC_ID.match(created["topicId"]) and created["topicId"] != ZERO_ID
    assert created["numPartitions"] == 12

    shown = metadata_of(api, topic)
    assert shown["errorCode"] == 0
    assert shown["topicId"] == created["topicId"]
    assert [p["partitionIndex"] for p in shown["partitions"]] == list(range(12))


def test_metadata_with_empty_null_or_absent_topics_lists_every_topic(api: Api) -> None:
    topics = {name() for _ in range(3)}
    for topic in topics:
        create(api, topic, 2)
    for body in ({"topics": []}, {"topics": None}, {}):
        # Every page (an answer holds at most 2,000 partitions; the server is shared).
        listed: dict[str, list] = {}
        answer = api.ok("metadata", body)
        while True:
            for t in answer["topics"]:
                listed.setdefault(t["name"], []).extend(t["partitions"])
            if answer["nextCursor"] is None:
                break
            answer = api.ok("metadata", {**body, "cursor": answer["nextCursor"]})
        assert topics <= set(listed)
        assert all(len(listed[t]) == 2 for t in topics)


def test_metadata_by_topic_id_and_unknown_topics(api: Api) -> None:
    topic = name()
    topic_id = create(api, topic)["topicId"]
    by_id = api.ok("metadata", {"topics": [{"topicId": topic_id}]})["topics"][0]
    assert (by_id["name"], by_id["errorCode"]) == (topic, 0)

    unknown = api.ok("metadata", {"topics": [{"name": name("missing")}]})["topics"][0]
    assert unknown["errorCode"] == 3  # UNKNOWN_TOPIC_OR_PARTITION
    unknown_id = api.ok("metadata", {"topics": [{"topicId": "AAAAAAAAAAAAAAAAAAAAAQ"}]})
    assert unknown_id["topics"][0]["errorCode"] == 100  # UNKNOWN_TOPIC_ID


def test_metadata_names_this_coordinator_as_the_only_broker(api: Api) -> None:
    body = api.ok("metadata", {"topics": []})
    host, port = api.base_url.removeprefix("http://").split(":")
    assert body["brokers"] == [{"nodeId": 0, "host": host, "port": int(port), "rack": None}]
    assert body["controllerId"] == 0


def test_creating_an_existing_topic_answers_topic_already_exists(api: Api) -> None:
    topic = name()
    first_id = create(api, topic)["topicId"]
    again = create(api, topic, 5)
    assert again["errorCode"] == 36
    assert metadata_of(api, topic)["topicId"] == first_id
    assert len(metadata_of(api, topic)["partitions"]) == 3


def test_create_topics_refusals_per_topic(api: Api) -> None:
    ok, dup = name(), name()
    body = api.ok(
        "create-topics",
        {
            "topics": [
                {"name": ok, "numPartitions": 1},
                {"name": "bad name!", "numPartitions": 1},
                {"name": name(), "numPartitions": 0},
                {"name": name(), "numPartitions": 2, "replicationFactor": 0},
                {"name": dup, "numPartitions": 1},
                {"name": dup, "numPartitions": 1},
                {"name": "x" * 250, "numPartitions": 1},
            ]
        },
    )
    codes = [t["errorCode"] for t in body["topics"]]
    assert codes == [0, 17, 37, 38, 42, 42, 17]
    assert all(t["errorMessage"] for t in body["topics"][1:])
    assert metadata_of(api, dup)["errorCode"] == 3  # nothing was created for the duplicate


def test_create_topics_defaults_and_validate_only(api: Api) -> None:
    default_topic, dry_run = name(), name()
    created = api.ok("create-topics", {"topics": [{"name": default_topic}]})["topics"][0]
    assert (created["errorCode"], created["numPartitions"]) == (0, 1)  # num.partitions

    checked = api.ok(
        "create-topics",
        {"topics": [{"name": dry_run, "numPartitions": 4}], "validateOnly": True},
    )["topics"][0]
    assert (checked["errorCode"], checked["numPartitions"]) == (0, 4)
    assert metadata_of(api, dry_run)["errorCode"] == 3


def test_partition_counts_only_grow(api: Api) -> None:
    topic = name()
    create(api, topic, 3)
    grown = api.ok("create-partitions", {"topics": [{"name": topic, "count": 8}]})
    assert grown["results"] == [{"name": topic, "errorCode": 0, "errorMessage": None}]
    assert len(metadata_of(api, topic)["partitions"]) == 8

    for count in (8, 2):
        refused = api.ok("create-partitions", {"topics": [{"name": topic, "count": count}]})
        result = refused["results"][0]
        assert result["errorCode"] == 37, result  # INVALID_PARTITIONS
        assert "8 partitions" in result["errorMessage"]
    assert len(metadata_of(api, topic)["partitions"]) == 8

    missing = api.ok("create-partitions", {"topics": [{"name": name(), "count": 2}]})
    assert missing["results"][0]["errorCode"] == 3


def test_create_partitions_validate_only_changes_nothing(api: Api) -> None:
    topic = name()
    create(api, topic, 2)
    body = {"topics": [{"name": topic, "count": 6}], "validateOnly": True}
    assert api.ok("create-partitions", body)["results"][0]["errorCode"] == 0
    assert len(metadata_of(api, topic)["partitions"]) == 2


def test_delete_topics_by_name_and_by_id(api: Api) -> None:
    by_name, by_id = name(), name()
    create(api, by_name)
    topic_id = create(api, by_id)["topicId"]
    body = api.ok("delete-topics", {"topics": [{"name": by_name}, {"topicId": topic_id}]})
    results = body["responses"]
    assert [r["errorCode"] for r in results] == [0, 0]
    assert results[1]["name"] == by_id
    assert metadata_of(api, by_name)["errorCode"] == 3
    assert metadata_of(api, by_id)["errorCode"] == 3

    recreated = create(api, by_id)
    assert recreated["errorCode"] == 0 and recreated["topicId"] != topic_id


def test_delete_topics_refusals(api: Api) -> None:
    topic = name()
    topic_id = create(api, topic)["topicId"]
    body = api.ok(
        "delete-topics",
        {
            "topics": [
                {"name": name("missing")},
                {"topicId": "AAAAAAAAAAAAAAAAAAAAAQ"},
                {"name": topic, "topicId": topic_id},
                {},
            ]
        },
    )
    assert [r["errorCode"] for r in body["responses"]] == [3, 100, 42, 42]
    assert metadata_of(api, topic)["errorCode"] == 0
