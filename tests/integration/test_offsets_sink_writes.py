"""offset-commit with `writes` (docs/exactly-once.md): the offsets and the client's DynamoDB
writes on sink tables land in one transaction under the commit's fence, or nothing does; a
retry with the same idempotencyKey never applies them twice; the limits and the refusals are
clear. On both backends: the in-memory store (in process) and DynamoDB Local (`serve`).
"""

from __future__ import annotations

import base64
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from groupcoord.store.dynamo import make_client
from tests.support.acls import ADMIN, GROUP, READ, TOPIC, WRITE, acl, authorizer_on, grant
from tests.support.api import PRINCIPAL_HEADER, Api
from tests.support.classic_client import ClassicClient
from tests.support.consumer import Member, create_topic, unique
from tests.support.servers import running_coordinator, running_serve, unique_table
from tests.support.sink import (
    COUNT_KEY,
    add_one,
    count_of,
    create_sink_table,
    read_item,
    sink_name,
)

INVALID_TXN_STATE = 48
TRANSACTIONAL_ID_AUTHORIZATION_FAILED = 53
TRANSACTIONAL_ID = 5  # Kafka's ACL resource type
SETTINGS = {
    "group.initial.rebalance.delay.ms": "0",
    "group.min.session.timeout.ms": "100",
    "groupcoord.barrier.hold.ms": "300",
    "group.consumer.assignment.interval.ms": "0",
}


@dataclass
class Deployment:
    api: Api
    client: Any  # a low-level DynamoDB client on the coordinator's store
    sink: str
    other_sink: str
    own_table: str


@pytest.fixture(scope="module", params=["memory", "dynamodb-api"])
def deployment(request: pytest.FixtureRequest) -> Iterator[Deployment]:
    sink, other = sink_name(), sink_name()
    table = unique_table()
    settings = {
        **SETTINGS,
        "groupcoord.table.name": table,
        "groupcoord.sink.tables": f"{sink},{other}",
    }
    if request.param == "memory":
        with running_coordinator(settings) as coordinator:
            client = coordinator.store.dynamo.client
            create_sink_table(client, sink)
            create_sink_table(client, other)
            yield Deployment(Api(coordinator.url), client, sink, other, table)
        return
    endpoint = request.getfixturevalue("dynamodb_endpoint")
    client = make_client(endpoint_url=endpoint)
    create_sink_table(client, sink)
    create_sink_table(client, other)
    with running_serve(endpoint, settings=settings, table=table) as url:
        yield Deployment(Api(url), client, sink, other, table)


def commit_body(
    group: str, topic: str, offset: int, writes: list[dict[str, Any]], key: str | None = None
) -> dict[str, Any]:
    return {
        "groupId": group,
        "topics": [
            {"name": topic, "partitions": [{"partitionIndex": 0, "committedOffset": offset}]}
        ],
        "writes": writes,
        "idempotencyKey": key or uuid.uuid4().hex,
    }


def committed(api: Api, group: str, topic: str) -> int:
    body = api.ok(
        "offset-fetch",
        {"groups": [{"groupId": group, "topics": [{"name": topic, "partitionIndexes": [0]}]}]},
    )
    return body["groups"][0]["topics"][0]["partitions"][0]["committedOffset"]


def codes(answer_body: dict[str, Any]) -> set[int]:
    return {p["errorCode"] for t in answer_body["topics"] for p in t["partitions"]}


def test_writes_and_offsets_land_together(deployment: Deployment) -> None:
    api, topic, group, key = deployment.api, unique("t"), unique("g"), unique("k")
    create_topic(api, topic, 2)
    body = api.ok("offset-commit", commit_body(group, topic, 7, [add_one(deployment.sink, key, 3)]))
    assert codes(body) == {0} and body["failedWrite"] is None
    assert count_of(deployment.client, deployment.sink, key) == 3
    assert committed(api, group, topic) == 7


def test_a_retry_with_the_same_key_applies_nothing_twice(deployment: Deployment) -> None:
    api, topic, group, key = deployment.api, unique("t"), unique("g"), unique("k")
    create_topic(api, topic, 1)
    request = commit_body(group, topic, 5, [add_one(deployment.sink, key)], key="retry-1")
    for _ in range(3):  # as a client that timed out and sent it again
        assert codes(api.ok("offset-commit", request)) == {0}
    assert count_of(deployment.client, deployment.sink, key) == 1
    # The key names this commit: another commit under it is refused, and changes nothing.
    other = commit_body(group, topic, 9, [add_one(deployment.sink, key)], key="retry-1")
    answer = api.call("offset-commit", other)
    assert answer.status == 400 and "idempotencyKey" in answer.body["errorMessage"]
    assert count_of(deployment.client, deployment.sink, key) == 1
    assert committed(api, group, topic) == 5


def test_a_failed_write_condition_refuses_the_whole_commit(deployment: Deployment) -> None:
    api, topic, group = deployment.api, unique("t"), unique("g")
    first, second = unique("k"), unique("k")
    create_topic(api, topic, 1)
    api.ok("offset-commit", commit_body(group, topic, 1, [add_one(deployment.sink, first)]))
    writes = [
        add_one(deployment.sink, first),
        add_one(deployment.other_sink, second, condition="attribute_exists(#n)"),  # absent
    ]
    body = api.ok("offset-commit", commit_body(group, topic, 2, writes))
    assert codes(body) == {INVALID_TXN_STATE}
    assert body["failedWrite"] == {"index": 1, "reason": "ConditionalCheckFailed"}
    assert count_of(deployment.client, deployment.sink, first) == 1  # the first write too
    assert read_item(deployment.client, deployment.other_sink, second) is None
    assert committed(api, group, topic) == 1


def test_a_refused_partition_refuses_the_writes(deployment: Deployment) -> None:
    api, topic, group, key = deployment.api, unique("t"), unique("g"), unique("k")
    create_topic(api, topic, 1)
    request = commit_body(group, topic, 3, [add_one(deployment.sink, key)])
    request["topics"][0]["partitions"].append({"partitionIndex": 5, "committedOffset": 3})
    body = api.ok("offset-commit", request)
    by_partition = {p["partitionIndex"]: p["errorCode"] for p in body["topics"][0]["partitions"]}
    assert by_partition == {0: INVALID_TXN_STATE, 5: 3}  # 3 UNKNOWN_TOPIC_OR_PARTITION
    assert count_of(deployment.client, deployment.sink, key) == 0
    assert committed(api, group, topic) == -1


def test_only_the_deployments_sink_tables_are_written(deployment: Deployment) -> None:
    api, topic, group, key = deployment.api, unique("t"), unique("g"), unique("k")
    create_topic(api, topic, 1)
    for table in ("not-a-sink", deployment.own_table):
        answer = api.call("offset-commit", commit_body(group, topic, 1, [add_one(table, key)]))
        assert answer.status == 400, answer.body
        assert "writes[0].Update.TableName" in answer.body["errorMessage"]
    # Nor can a write reach the coordinator's table by an ARN or another spelling.
    arn = f"arn:aws:dynamodb:us-east-1:000000000000:table/{deployment.own_table}"
    answer = api.call("offset-commit", commit_body(group, topic, 1, [add_one(arn, key)]))
    assert answer.status == 400
    assert committed(api, group, topic) == -1


def test_a_commit_with_writes_fits_one_transaction(deployment: Deployment) -> None:
    api, topic, group = deployment.api, unique("t"), unique("g")
    create_topic(api, topic, 60)
    partitions = [{"partitionIndex": p, "committedOffset": 1} for p in range(60)]
    writes = [add_one(deployment.sink, f"{group}-{i}") for i in range(39)]  # 2 + 60 + 39 = 101
    request = {
        "groupId": group,
        "topics": [{"name": topic, "partitions": partitions}],
        "writes": writes,
        "idempotencyKey": "fits",
    }
    answer = api.call("offset-commit", request)
    assert answer.status == 400 and "at most 100 items" in answer.body["errorMessage"]
    request["writes"] = writes[:38]  # 100: fits
    assert codes(api.ok("offset-commit", request)) == {0}
    assert count_of(deployment.client, deployment.sink, f"{group}-37") == 1
    too_many = {**request, "topics": [], "writes": [add_one(deployment.sink, "x")] * 99}
    answer = api.call("offset-commit", too_many)
    assert answer.status == 400 and answer.body["errorMessage"].startswith("writes")


@pytest.mark.parametrize(
    ("mutate", "field"),
    [
        (lambda w: w.pop("idempotencyKey"), "idempotencyKey"),
        (lambda w: w.update(idempotencyKey="has spaces"), "idempotencyKey"),
        (lambda w: w["writes"][0]["Update"].update(ReturnValues="ALL_NEW"), "writes"),
        (lambda w: w["writes"][0].update(Put={"TableName": "x"}), "writes"),
        (lambda w: w["writes"][0]["Update"]["Key"].update(k={"N": "one"}), "writes"),
        (lambda w: w["writes"][0]["Update"]["Key"].update(k={"Q": "x"}), "writes"),
        (lambda w: w["writes"][0]["Update"].update(UpdateExpression="x" * 4097), "writes"),
    ],
)
def test_malformed_writes_are_a_400_naming_the_field(
    deployment: Deployment, mutate: Any, field: str
) -> None:
    api, topic, group, key = deployment.api, unique("t"), unique("g"), unique("k")
    create_topic(api, topic, 1)
    request = commit_body(group, topic, 1, [add_one(deployment.sink, key)])
    mutate(request)
    answer = api.call("offset-commit", request)
    assert answer.status == 400, answer.body
    assert answer.body["errorMessage"].startswith(field), answer.body
    assert count_of(deployment.client, deployment.sink, key) == 0


def test_writes_dynamodb_refuses_are_a_400_and_change_nothing(deployment: Deployment) -> None:
    api, topic, group, key = deployment.api, unique("t"), unique("g"), unique("k")
    create_topic(api, topic, 1)
    bad_syntax = add_one(deployment.sink, key)
    bad_syntax["Update"]["UpdateExpression"] = "ADD ((("
    wrong_key = add_one(deployment.sink, key)
    wrong_key["Update"]["Key"] = {"other": {"S": key}}
    for write in (bad_syntax, wrong_key):
        answer = api.call(
            "offset-commit", commit_body(group, topic, 1, [add_one(deployment.sink, key), write])
        )
        assert answer.status == 400, answer.body
        assert answer.body["errorMessage"].startswith("writes"), answer.body
    assert count_of(deployment.client, deployment.sink, key) == 0
    assert committed(api, group, topic) == -1


def test_put_delete_and_binary_values(deployment: Deployment) -> None:
    api, topic, group = deployment.api, unique("t"), unique("g")
    create_topic(api, topic, 1)
    blob = base64.b64encode(b"\x00\x01payload").decode()
    key = unique("k")
    put = {
        "Put": {
            "TableName": deployment.sink,
            "Item": {COUNT_KEY: {"S": key}, "blob": {"B": blob}, "tags": {"SS": ["a", "b"]}},
            "ConditionExpression": "attribute_not_exists(#k)",
            "ExpressionAttributeNames": {"#k": COUNT_KEY},
        }
    }
    assert codes(api.ok("offset-commit", commit_body(group, topic, 1, [put]))) == {0}
    item = read_item(deployment.client, deployment.sink, key)
    assert item is not None and bytes(item["blob"]["B"]) == b"\x00\x01payload"
    delete = {"Delete": {"TableName": deployment.sink, "Key": {COUNT_KEY: {"S": key}}}}
    check = {
        "ConditionCheck": {
            "TableName": deployment.other_sink,
            "Key": {COUNT_KEY: {"S": "absent"}},
            "ConditionExpression": "attribute_not_exists(#k)",
            "ExpressionAttributeNames": {"#k": COUNT_KEY},
        }
    }
    assert codes(api.ok("offset-commit", commit_body(group, topic, 2, [delete, check]))) == {0}
    assert read_item(deployment.client, deployment.sink, key) is None
    assert committed(api, group, topic) == 2


def test_a_classic_zombie_writes_nothing(deployment: Deployment) -> None:
    api, topic, group, key = deployment.api, unique("t"), unique("g"), unique("k")
    create_topic(api, topic, 1)
    member = ClassicClient(api.base_url, group, session_timeout_ms=30_000)
    member.join()
    member.sync({member.member_id: b""})
    request = commit_body(group, topic, 4, [add_one(deployment.sink, key)])
    stale = {
        **request,
        "memberId": member.member_id,
        "generationIdOrMemberEpoch": member.generation - 1,
    }
    assert codes(api.ok("offset-commit", stale)) == {22}  # ILLEGAL_GENERATION
    unknown = {
        **request,
        "memberId": "someone-else",
        "generationIdOrMemberEpoch": member.generation,
    }
    assert codes(api.ok("offset-commit", unknown)) == {25}  # UNKNOWN_MEMBER_ID
    assert count_of(deployment.client, deployment.sink, key) == 0
    # The fence is answered before a failing condition of the writes: a zombie learns it is one.
    failing = commit_body(
        group, topic, 4, [add_one(deployment.sink, key, condition="attribute_exists(#n)")]
    )
    failing.update(memberId=member.member_id, generationIdOrMemberEpoch=member.generation - 1)
    body = api.ok("offset-commit", failing)
    assert codes(body) == {22} and body["failedWrite"] is None
    live = {**request, "memberId": member.member_id, "generationIdOrMemberEpoch": member.generation}
    assert codes(api.ok("offset-commit", live)) == {0}
    assert count_of(deployment.client, deployment.sink, key) == 1
    assert committed(api, group, topic) == 4


def test_a_consumer_protocol_member_fenced_writes_nothing(deployment: Deployment) -> None:
    api, topic, group, key = deployment.api, unique("t"), unique("g"), unique("k")
    topic_id = create_topic(api, topic, 1)
    member = Member(api, group, topics=[topic])
    member.join()
    member.heartbeat()
    assert member.owned == {topic_id: {0}}, member.last
    request = commit_body(group, topic, 6, [add_one(deployment.sink, key)])
    ahead = {**request, "memberId": member.member_id, "generationIdOrMemberEpoch": member.epoch + 1}
    assert codes(api.ok("offset-commit", ahead)) == {113}  # STALE_MEMBER_EPOCH
    assert count_of(deployment.client, deployment.sink, key) == 0
    live = {**request, "memberId": member.member_id, "generationIdOrMemberEpoch": member.epoch}
    assert codes(api.ok("offset-commit", live)) == {0}
    assert count_of(deployment.client, deployment.sink, key) == 1
    assert committed(api, group, topic) == 6


def test_with_the_authorizer_on_a_table_needs_write_on_its_transactional_id() -> None:
    sink = sink_name()
    settings = {**SETTINGS, **authorizer_on(), "groupcoord.sink.tables": sink}
    with running_coordinator(settings, principal_header=PRINCIPAL_HEADER) as coordinator:
        client = coordinator.store.dynamo.client
        create_sink_table(client, sink)
        admin = Api(coordinator.url, principal=ADMIN)
        user = "User:etl"
        api = Api(coordinator.url, principal=user)
        topic, group, key = unique("t"), unique("g"), unique("k")
        create_topic(admin, topic, 1)
        grant(admin, acl(GROUP, group, user, READ), acl(TOPIC, topic, user, READ))
        request = commit_body(group, topic, 1, [add_one(sink, key)])
        assert codes(api.ok("offset-commit", request)) == {TRANSACTIONAL_ID_AUTHORIZATION_FAILED}
        assert count_of(client, sink, key) == 0
        grant(admin, acl(TRANSACTIONAL_ID, sink, user, WRITE))
        assert codes(api.ok("offset-commit", request)) == {0}
        assert count_of(client, sink, key) == 1
        # A plain commit needs no such ACL.
        plain = {"groupId": group, "topics": request["topics"]}
        assert codes(api.ok("offset-commit", plain)) == {0}
