"""Bounded answers: metadata and list-groups answer a page at a time (groupcoord's paging
extension; metadata after Kafka's DescribeTopicPartitions, KIP-966), and the client follows
the pages. The server is shared with other tests: names are unique, and listings are checked
for what these tests created, wherever other tests' topics and groups fall."""

from __future__ import annotations

import base64
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from groupcoord.client.paging import list_groups_all_pages, metadata_all_pages
from groupcoord.core.topics import TopicRecord
from groupcoord.models.topics import MetadataRequest
from groupcoord.service.context import ApiContext
from groupcoord.service.topics import metadata
from groupcoord.store import capacity, schema
from groupcoord.store.groups import ListingCursor, listing_attributes
from groupcoord.store.store import Store
from groupcoord.topic_ids import new_topic_id
from tests.support.api import Api

# An HTTP-contract test: `serve` on the DynamoDB endpoint.
pytestmark = pytest.mark.http_contract


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:10]}"


@pytest.fixture
def create(api: Api) -> Iterator[Callable[[Api, str, int], str]]:
    """Creates topics, deleted after the test: the big ones would fill the pages of the other
    tests that list every topic on the shared server."""
    created: list[str] = []

    def create_topic(api: Api, topic: str, partitions: int) -> str:
        body = api.ok("create-topics", {"topics": [{"name": topic, "numPartitions": partitions}]})
        assert body["topics"][0]["errorCode"] == 0, body
        created.append(topic)
        return body["topics"][0]["topicId"]

    yield create_topic
    if created:
        api.ok("delete-topics", {"topics": [{"name": n} for n in created]})


def indexes(topic: dict[str, Any]) -> list[int]:
    return [p["partitionIndex"] for p in topic["partitions"]]


def shape(body: dict[str, Any]) -> list[tuple[str | None, int, list[int]]]:
    return [(t["name"], t["errorCode"], indexes(t)) for t in body["topics"]]


def metadata_pages(api: Api, request: dict[str, Any]) -> list[dict[str, Any]]:
    pages = [api.ok("metadata", request)]
    while pages[-1]["nextCursor"] is not None:
        pages.append(api.ok("metadata", {**request, "cursor": pages[-1]["nextCursor"]}))
    return pages


def group_pages(api: Api, request: dict[str, Any]) -> list[list[dict[str, Any]]]:
    pages = []
    answer = api.ok("list-groups", request)
    while True:
        pages.append(answer["groups"])
        if answer["nextCursor"] is None:
            return pages
        answer = api.ok("list-groups", {**request, "cursor": answer["nextCursor"]})


def assert_400_naming(answer: Any, field: str) -> None:
    assert answer.status == 400, (answer.status, answer.body)
    assert answer.body["errorCode"] == 42
    assert answer.body["errorMessage"].startswith(field), answer.body


# --- metadata ---


def test_a_topic_of_5000_partitions_is_answered_in_three_pages_of_2000(
    api: Api, create: Callable[[Api, str, int], str]
) -> None:
    topic = unique("paged")
    create(api, topic, 5000)
    request = {"topics": [{"name": topic}]}
    pages = metadata_pages(api, request)
    assert [shape(p) for p in pages] == [
        [(topic, 0, list(range(0, 2000)))],
        [(topic, 0, list(range(2000, 4000)))],
        [(topic, 0, list(range(4000, 5000)))],
    ]
    assert [p["nextCursor"] for p in pages] == [
        {"topicName": topic, "partitionIndex": 2000},
        {"topicName": topic, "partitionIndex": 4000},
        None,
    ]
    # The client joins the pages into one topic.
    whole = metadata_all_pages(lambda name, body: api.ok(name, body), [{"name": topic}])
    assert shape(whole) == [(topic, 0, list(range(5000)))]


def test_every_topic_pages_in_name_order_each_partition_once(
    api: Api, create: Callable[[Api, str, int], str]
) -> None:
    topic = unique("every")
    topic_id = create(api, topic, 5000)
    seen: list[tuple[str, int]] = []
    for page in metadata_pages(api, {"topics": None}):
        assert sum(len(t["partitions"]) for t in page["topics"]) <= 2000
        seen += [(t["name"], p) for t in page["topics"] for p in indexes(t)]
    assert seen == sorted(seen)  # names in order, each topic's partitions in order
    assert len(seen) == len(set(seen))
    assert [p for name, p in seen if name == topic] == list(range(5000))
    # A cursor may start anywhere: here at partition 3000 of the topic.
    page = api.ok("metadata", {"cursor": {"topicName": topic, "partitionIndex": 3000}})
    assert shape(page)[0] == (topic, 0, list(range(3000, 5000)))
    assert page["topics"][0]["topicId"] == topic_id
    assert len(page["topics"]) == 1  # the page is full
    whole = metadata_all_pages(lambda name, body: api.ok(name, body))
    listed = {t["name"]: indexes(t) for t in whole["topics"]}
    assert len(listed) == len(whole["topics"]) and listed[topic] == list(range(5000))


def test_several_topics_across_pages_listed_and_all(
    api: Api, create: Callable[[Api, str, int], str]
) -> None:
    prefix = unique("multi")
    a, b, c = f"{prefix}-a", f"{prefix}-b", f"{prefix}-c"
    a_id = create(api, a, 1500)
    create(api, b, 1000)
    create(api, c, 3)
    # Listed in any order, by name or by id, twice: answered once each, in name order.
    listed = {"topics": [{"name": c}, {"topicId": a_id}, {"name": b}, {"name": b}]}
    pages = metadata_pages(api, listed)
    assert [shape(p) for p in pages] == [
        [(a, 0, list(range(1500))), (b, 0, list(range(500)))],
        [(b, 0, list(range(500, 1000))), (c, 0, [0, 1, 2])],
    ]
    assert pages[0]["nextCursor"] == {"topicName": b, "partitionIndex": 500}
    # A page that ends with a topic continues at the next one.
    full = metadata_pages(api, {**listed, "responsePartitionLimit": 1500})
    assert [shape(p) for p in full] == [
        [(a, 0, list(range(1500)))],
        [(b, 0, list(range(1000))), (c, 0, [0, 1, 2])],
    ]
    assert full[0]["nextCursor"] == {"topicName": b, "partitionIndex": 0}
    # The all-topics form, from a cursor at the first of them: the same cut.
    first = api.ok("metadata", {"cursor": {"topicName": a, "partitionIndex": 0}})
    assert shape(first) == [(a, 0, list(range(1500))), (b, 0, list(range(500)))]
    second = api.ok("metadata", {"cursor": first["nextCursor"]})
    assert shape(second)[:2] == [(b, 0, list(range(500, 1000))), (c, 0, [0, 1, 2])]


def test_listed_topics_that_name_no_topic_are_answered_on_the_first_page(
    api: Api, create: Callable[[Api, str, int], str]
) -> None:
    prefix = unique("errs")
    big, missing = f"{prefix}-big", f"{prefix}-0missing"
    create(api, big, 1500)
    request = {
        "topics": [
            {"name": big},
            {"topicId": "AAAAAAAAAAAAAAAAAAAAAQ"},
            {"name": missing},
            {"name": "not a topic name"},
        ],
        "responsePartitionLimit": 1000,
    }
    pages = metadata_pages(api, request)
    assert [shape(p) for p in pages] == [
        [
            (None, 100, []),  # UNKNOWN_TOPIC_ID
            ("not a topic name", 3, []),
            (missing, 3, []),  # in name order among the named
            (big, 0, list(range(1000))),
        ],
        [(big, 0, list(range(1000, 1500)))],
    ]


def test_a_cursor_at_a_topic_that_is_gone_continues_with_the_next(
    api: Api, create: Callable[[Api, str, int], str]
) -> None:
    prefix = unique("gone")
    create(api, f"{prefix}-b", 2)
    page = api.ok(
        "metadata",
        {"cursor": {"topicName": f"{prefix}-a", "partitionIndex": 7}, "responsePartitionLimit": 2},
    )
    assert shape(page) == [(f"{prefix}-b", 0, [0, 1])]


@pytest.mark.parametrize(
    ("fields", "named"),
    [
        ({"responsePartitionLimit": 0}, "responsePartitionLimit"),
        ({"responsePartitionLimit": 5000}, "responsePartitionLimit"),
        ({"responsePartitionLimit": "10"}, "responsePartitionLimit"),
        ({"cursor": "abc"}, "cursor"),
        ({"cursor": {"topicName": "a b", "partitionIndex": 0}}, "cursor.topicName"),
        ({"cursor": {"topicName": "", "partitionIndex": 0}}, "cursor.topicName"),
        ({"cursor": {"topicName": "x" * 250, "partitionIndex": 0}}, "cursor.topicName"),
        ({"cursor": {"topicName": "a", "partitionIndex": -1}}, "cursor.partitionIndex"),
        ({"cursor": {"topicName": "a"}}, "cursor.partitionIndex"),
    ],
)
def test_metadata_paging_fields_out_of_bounds_are_400(
    api: Api, fields: dict[str, Any], named: str
) -> None:
    assert_400_naming(api.call("metadata", {"topics": None, **fields}), named)


def test_a_metadata_page_reads_what_it_answers_and_at_most_a_batch_more(store: Store) -> None:
    names = [f"t{i:03d}" for i in range(120)]
    ids = {name: new_topic_id() for name in names}
    for name in names:
        store.topics.create(TopicRecord(name=name, topic_id=ids[name], partitions=1), 0)
    ctx = ApiContext(settings=store.settings, store=store, now_ms=0, endpoint="http://x")

    def page(**fields: Any) -> tuple[Any, dict[str, int]]:
        with capacity.metered() as usage:
            answer = metadata(MetadataRequest.model_validate(fields), ctx)
        return answer, usage.by_operation

    answer, reads = page(responsePartitionLimit=10)
    assert [t.name for t in answer.topics] == names[:10]
    assert answer.next_cursor is not None
    assert (answer.next_cursor.topic_name, answer.next_cursor.partition_index) == (names[10], 0)
    assert reads == {"query": 1}  # 11 topics: the page and the next one's name
    answer, reads = page(responsePartitionLimit=2000)
    assert [t.name for t in answer.topics] == names and answer.next_cursor is None
    assert reads == {"query": 2}  # 100 a Query
    # Listed: one GetItem a topic the page answers, one batch read of the ids' pointers.
    listed = [{"name": n} for n in reversed(names[:50])] + [{"topicId": ids[names[60]]}]
    answer, reads = page(topics=listed, responsePartitionLimit=3)
    assert [t.name for t in answer.topics] == names[:3]
    assert reads == {"batch_get_item": 1, "get_item": 3}
    answer, reads = page(
        topics=listed, responsePartitionLimit=3, cursor=answer.next_cursor.to_json_dict()
    )
    assert [t.name for t in answer.topics] == names[3:6]


def test_listing_pages_merge_the_shards_exactly(store: Store) -> None:
    """In a table of its own: every page but the last is full, each reads at most `limit`
    index entries a shard (one Query each), and the pages are the whole listing in id order."""
    ids = [f"g{i:02d}" for i in range(23)] + ["ü-1", "日本", "z😀", "a#b", "%23"]
    for group_id in ids:
        store.dynamo.put(
            {
                **schema.group_key(group_id),
                **listing_attributes(group_id),
                "kind": schema.KIND_GROUP,
                "groupType": "consumer",
                "groupState": "Empty",
            }
        )
    for limit in (1, 2, 3, 5, len(ids), 1000):
        pages: list[list[str]] = []
        cursor: ListingCursor | None = ListingCursor.start()
        while cursor is not None:
            with capacity.metered() as usage:
                listed, cursor = store.groups.page(cursor, limit)
            assert usage.by_operation["query"] <= schema.GROUP_LISTING_SHARDS
            pages.append([g.group_id for g in listed])
            if cursor is not None:
                cursor = ListingCursor.decode(cursor.encode())
        assert [g for page in pages for g in page] == sorted(ids), limit
        assert all(len(page) == limit for page in pages[:-1]), (limit, pages)


# --- list-groups ---


def join_consumer_group(api: Api, group: str) -> str:
    member = str(uuid.uuid4())
    body = {
        "groupId": group,
        "memberId": member,
        "memberEpoch": 0,
        "rebalanceTimeoutMs": 30000,
        "subscribedTopicNames": [],
        "topicPartitions": [],
    }
    assert api.ok("consumer-group-heartbeat", body)["errorCode"] == 0
    return member


def leave_consumer_group(api: Api, group: str, member: str) -> None:
    body = {"groupId": group, "memberId": member, "memberEpoch": -1}
    assert api.ok("consumer-group-heartbeat", body)["errorCode"] == 0


def start_classic_group(api: Api, group: str) -> None:
    """The first step of a classic join (79 MEMBER_ID_REQUIRED) makes an Empty classic group."""
    body = {
        "groupId": group,
        "sessionTimeoutMs": 30000,
        "memberId": "",
        "protocolType": "consumer",
        "protocols": [{"name": "range", "metadata": ""}],
    }
    assert api.ok("join-group", body)["errorCode"] == 79


@pytest.fixture(scope="module")
def groups(served_on_dynamodb: str) -> dict[str, set[str]]:
    """Ten groups: four consumer groups with a member, three emptied ones, three classic."""
    api = Api(served_on_dynamodb)
    prefix = unique("paging")
    made: dict[str, set[str]] = {"live": set(), "emptied": set(), "classic": set()}
    for i in range(4):
        group = f"{prefix}-live-{i}"
        join_consumer_group(api, group)
        made["live"].add(group)
    for i in range(3):
        group = f"{prefix}-emptied-{i}"
        leave_consumer_group(api, group, join_consumer_group(api, group))
        made["emptied"].add(group)
    for i in range(3):
        group = f"{prefix}-classic-{i}"
        start_classic_group(api, group)
        made["classic"].add(group)
    return made


def listed_ids(pages: list[list[dict[str, Any]]]) -> list[str]:
    return [g["groupId"] for page in pages for g in page]


def test_list_groups_by_three_answers_every_group_once_in_id_order(
    api: Api, groups: dict[str, set[str]]
) -> None:
    mine = set().union(*groups.values())
    pages = group_pages(api, {"limit": 3})
    assert all(len(page) <= 3 for page in pages)
    assert all(len(page) == 3 for page in pages[:-1])  # full pages until the listing ends
    ids = listed_ids(pages)
    assert len(ids) == len(set(ids)) and ids == sorted(ids)
    assert mine <= set(ids)
    # The client helper follows the pages (with limit 3 forced on every request).
    whole = list_groups_all_pages(lambda name, body: api.ok(name, {**body, "limit": 3}))
    assert whole["nextCursor"] is None
    assert mine <= {g["groupId"] for g in whole["groups"]}


def test_list_groups_filters_hold_across_pages(api: Api, groups: dict[str, set[str]]) -> None:
    mine = set().union(*groups.values())
    empty = group_pages(api, {"limit": 3, "statesFilter": ["EMPTY"]})
    assert all(len(page) <= 3 for page in empty)
    ids = listed_ids(empty)
    assert len(ids) == len(set(ids))
    assert {g["groupState"] for page in empty for g in page} == {"Empty"}
    # (A live group's member may have timed out by now: only the others are certain.)
    assert (set(ids) & mine) - groups["live"] == groups["emptied"] | groups["classic"]

    classic = group_pages(api, {"limit": 3, "typesFilter": ["classic"]})
    ids = listed_ids(classic)
    assert len(ids) == len(set(ids))
    assert {g["groupType"] for page in classic for g in page} == {"classic"}
    assert set(ids) & mine == groups["classic"]

    both = group_pages(api, {"limit": 2, "statesFilter": ["Empty"], "typesFilter": ["consumer"]})
    assert (set(listed_ids(both)) & mine) - groups["live"] == groups["emptied"]
    helper = list_groups_all_pages(
        lambda name, body: api.ok(name, {**body, "limit": 2}), ["empty"], ["consumer"]
    )
    assert ({g["groupId"] for g in helper["groups"]} & mine) - groups["live"] == groups["emptied"]


def _b64_bytes(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii")


def _b64(text: str) -> str:
    return _b64_bytes(text.encode("utf-8"))


def _id_of_shard(shard: int, wrong: bool = False) -> str:
    """A group id whose listing shard is `shard` (or, with `wrong`, any other one)."""
    for i in range(1000):
        candidate = f"g{i}"
        in_shard = schema.group_listing_pk(candidate) == schema.group_listing_shard_pk(shard)
        if in_shard != wrong:
            return candidate
    raise AssertionError("no such id")


def _forged_cursors() -> list[Any]:
    rest = ".s" * (schema.GROUP_LISTING_SHARDS - 1)
    return [
        "garbage",
        "L1" + ".s" * schema.GROUP_LISTING_SHARDS + ".s",  # one shard too many
        "L1" + rest,  # one too few
        "L2" + ".s" * schema.GROUP_LISTING_SHARDS,  # another layout
        "L1.x" + rest,
        "L1.a" + rest,  # no id
        "L1.a!!" + rest,  # not base64url
        "L1.aZ" + rest,  # not whole bytes
        "L1.aZ2=" + rest,  # padding
        "L1.aZ3" + rest,  # not canonical (stray bits)
        "L1.a" + _b64_bytes(b"\xff\xfe") + rest,  # not UTF-8
        "L1.a" + _b64_bytes(b"\xed\xa0\x80") + rest,  # a lone surrogate
        "L1.a" + _b64(_id_of_shard(0, wrong=True)) + rest,  # an id of another shard
        "L1.a" + _b64("x" * 1025) + rest,  # longer than any key
        base64.urlsafe_b64encode(b'{"pk": "G#victim", "sk": "GROUP"}').decode(),
    ]


@pytest.mark.parametrize("cursor", _forged_cursors())
def test_a_forged_or_garbled_list_groups_cursor_is_400_naming_cursor(api: Api, cursor: str) -> None:
    assert_400_naming(api.call("list-groups", {"cursor": cursor}), "cursor")


def test_a_well_formed_cursor_of_the_right_shards_is_a_position(api: Api) -> None:
    """A hand-made cursor that passes the checks can only start the listing somewhere."""
    cursor = "L1" + "".join(
        f".a{_b64(_id_of_shard(s))}" for s in range(schema.GROUP_LISTING_SHARDS)
    )
    answer = api.call("list-groups", {"cursor": cursor, "limit": 1})
    assert answer.status == 200, answer.body


@pytest.mark.parametrize(
    ("fields", "named"),
    [
        ({"limit": 0}, "limit"),
        ({"limit": 1001}, "limit"),
        ({"limit": True}, "limit"),
        ({"cursor": 5}, "cursor"),
        ({"cursor": ""}, "cursor"),
        ({"cursor": "L1" + "x" * 9000}, "cursor"),
    ],
)
def test_list_groups_paging_fields_out_of_bounds_are_400(
    api: Api, fields: dict[str, Any], named: str
) -> None:
    assert_400_naming(api.call("list-groups", fields), named)
