"""What a hostile tenant must not learn (issue 34), over HTTP with the authorizer on: alice runs
groups `a-*` on topics `ta-*`, bob `b-*` on `tb-*`, and nothing bob or an anonymous caller does
reveals a name of alice's or changes anything of hers.

- list-groups' cursor holds no group id the caller may not describe;
- a classic join whose ConsumerProtocol subscription names a topic the member may not describe
  is refused (29), into a consumer group and into a classic group alike;
- a change to a topic that a regex matches but the member may not describe bumps nothing;
- a refused commit says so whatever it carries (a writes-only commit included);
- the sink tables' names are not probed past the authorization check.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from groupcoord.store.store import Store
from tests.support.acls import (
    ADMIN,
    GROUP,
    GROUP_DENIED,
    PREFIXED,
    READ,
    TOPIC,
    TOPIC_DENIED,
    WRITE,
    acl,
    authorizer_on,
    grant,
)
from tests.support.api import PRINCIPAL_HEADER, Api
from tests.support.classic_client import FAST_SETTINGS, ClassicClient, encode_subscription
from tests.support.consumer import Member, create_topic, unique
from tests.support.servers import IMMEDIATE_INSTALLS, running_service_and_store
from tests.support.sink import COUNT_KEY, add_one, count_of, create_sink_table, sink_name

ALICE, BOB, ANONYMOUS = "User:alice", "User:bob", "User:ANONYMOUS"
TRANSACTIONAL_ID = 5  # Kafka's ACL resource type
TRANSACTIONAL_ID_DENIED = 53
SINK = sink_name()


@dataclass
class Tenants:
    url: str
    store: Store
    admin: Api
    alice: Api
    bob: Api
    anonymous: Api


@pytest.fixture(scope="module")
def tenants(service_endpoint: str | None) -> Iterator[Tenants]:
    settings = {
        **FAST_SETTINGS,
        **IMMEDIATE_INSTALLS,
        **authorizer_on(ADMIN),
        "groupcoord.sink.tables": SINK,
    }
    with running_service_and_store(service_endpoint, settings, PRINCIPAL_HEADER) as (url, store):
        create_sink_table(store.dynamo.client, SINK)
        admin = Api(url, principal=ADMIN)
        grant(
            admin,
            acl(GROUP, "a-", ALICE, READ, pattern=PREFIXED),
            acl(TOPIC, "ta-", ALICE, READ, pattern=PREFIXED),
            acl(GROUP, "b-", BOB, READ, pattern=PREFIXED),
            acl(TOPIC, "tb-", BOB, READ, pattern=PREFIXED),
            acl(TRANSACTIONAL_ID, SINK, ALICE, WRITE),
        )
        yield Tenants(
            url,
            store,
            admin,
            Api(url, principal=ALICE),
            Api(url, principal=BOB),
            Api(url, principal=ANONYMOUS),
        )


def _cursor_texts(cursor: str) -> set[str]:
    """Every string a cursor spells out: itself and whatever its dot-separated parts decode to
    (base64url, with or without a one-letter tag)."""
    texts = {cursor}
    for part in cursor.split("."):
        for code in (part, part[1:]):
            with contextlib.suppress(binascii.Error, UnicodeDecodeError, ValueError):
                texts.add(base64.urlsafe_b64decode(code + "=" * (-len(code) % 4)).decode())
    return texts


def _page_through(api: Api, limit: int) -> tuple[list[str], list[str]]:
    """Every group id list-groups answers `api`'s caller, and every cursor it handed out."""
    listed: list[str] = []
    cursors: list[str] = []
    body: dict[str, Any] = {"limit": limit}
    for _ in range(1000):
        page = api.ok("list-groups", body)
        listed += [g["groupId"] for g in page["groups"]]
        if page.get("nextCursor") is None:
            return listed, cursors
        cursors.append(page["nextCursor"])
        body = {"limit": limit, "cursor": page["nextCursor"]}
    raise AssertionError("list-groups never ended")


def test_list_groups_cursor_names_no_group_the_caller_may_not_describe(
    tenants: Tenants,
) -> None:
    suffix = uuid.uuid4().hex[:8]
    topic = f"ta-list-{suffix}"
    create_topic(tenants.admin, topic, 1)
    secret_groups = [f"a-secret-{suffix}-{i}" for i in range(6)]
    for group in secret_groups:
        assert Member(tenants.alice, group, topics=[topic]).join()["errorCode"] == 0
    bob_topic = f"tb-list-{suffix}"
    create_topic(tenants.admin, bob_topic, 1)
    bob_groups = {f"b-own-{suffix}-{i}" for i in range(2)}
    for bob_group in bob_groups:
        assert Member(tenants.bob, bob_group, topics=[bob_topic]).join()["errorCode"] == 0

    for caller, visible in ((tenants.anonymous, set()), (tenants.bob, bob_groups)):
        listed, cursors = _page_through(caller, limit=1)
        # Pages follow what the caller sees (one group each), not the table.
        assert bool(cursors) == bool(visible)
        assert set(listed) & set(secret_groups) == set()
        assert visible <= set(listed)
        spelled = set().union(*(_cursor_texts(c) for c in cursors))
        for group in secret_groups:
            assert not any(group in text for text in spelled), (group, cursors)

    # A caller who may describe every group still pages through all of them exactly once.
    listed, _ = _page_through(tenants.admin, limit=1)
    assert {*secret_groups, *bob_groups} <= set(listed)
    assert len(listed) == len(set(listed))


def test_a_sealed_cursor_is_its_callers_own(tenants: Tenants) -> None:
    suffix = uuid.uuid4().hex[:8]
    topic = f"ta-seal-{suffix}"
    create_topic(tenants.admin, topic, 1)
    for i in range(3):
        Member(tenants.alice, f"a-seal-{suffix}-{i}", topics=[topic]).join()
    own = f"tb-seal-{suffix}"
    create_topic(tenants.admin, own, 1)
    for i in range(2):  # bob's listing is two pages long
        Member(tenants.bob, f"b-seal-{suffix}-{i}", topics=[own]).join()
    page = tenants.bob.ok("list-groups", {"limit": 1})
    cursor = page["nextCursor"]
    assert cursor is not None
    stolen = tenants.anonymous.call("list-groups", {"limit": 1, "cursor": cursor})
    assert stolen.status == 400 and "cursor" in stolen.body["errorMessage"], stolen.body
    forged = tenants.bob.call("list-groups", {"limit": 1, "cursor": cursor[:-2] + "AA"})
    assert forged.status == 400, forged.body


def _classic_join(url: str, principal: str, group: str, topics: list[str]) -> dict[str, Any]:
    client = ClassicClient(
        url, group, protocols=[("range", encode_subscription(topics))], session_timeout_ms=6000
    )
    client.api.session.headers[PRINCIPAL_HEADER] = principal
    return client.join()


def test_a_classic_join_naming_another_teams_topic_is_refused(tenants: Tenants) -> None:
    suffix = uuid.uuid4().hex[:8]
    secret, own = f"ta-secret-{suffix}", f"tb-own-{suffix}"
    create_topic(tenants.admin, secret, 3)
    create_topic(tenants.admin, own, 1)

    # Into bob's consumer group (the coordinator assigns): refused as the consumer heartbeat is.
    consumer_group = f"b-consumer-{suffix}"
    bobs = Member(tenants.bob, consumer_group, topics=[own])
    assert bobs.join()["errorCode"] == 0
    assert Member(tenants.bob, consumer_group, topics=[secret]).join()["errorCode"] == (
        TOPIC_DENIED
    )
    refused = _classic_join(tenants.url, BOB, consumer_group, [own, secret])
    assert refused["errorCode"] == TOPIC_DENIED, refused
    described = tenants.admin.ok("consumer-group-describe", {"groupIds": [consumer_group]})
    assert [m["memberId"] for m in described["groups"][0]["members"]] == [bobs.member_id]

    # Into a classic group of bob's: refused too (its subscription would register the group
    # for alice's topic's changes).
    classic_group = f"b-classic-{suffix}"
    assert _classic_join(tenants.url, BOB, classic_group, [secret])["errorCode"] == TOPIC_DENIED
    assert _classic_join(tenants.url, BOB, classic_group, [own])["errorCode"] == 0


def _settled_epoch(member: Member) -> int:
    for _ in range(5):
        member.heartbeat()
    return member.epoch


def test_a_regex_bumps_nothing_for_topics_the_member_may_not_describe(tenants: Tenants) -> None:
    suffix = uuid.uuid4().hex[:8]
    own = f"tb-rx-{suffix}-own"
    create_topic(tenants.admin, own, 1)
    member = Member(tenants.bob, f"b-regex-{suffix}", regex=f"t[ab]-rx-{suffix}-.*")
    assert member.join()["errorCode"] == 0
    epoch = _settled_epoch(member)

    # alice's topics: created, grown, deleted. bob's group hears of none of it.
    secret = f"ta-rx-{suffix}-secret"
    create_topic(tenants.admin, secret, 1)
    assert _settled_epoch(member) == epoch
    grown = tenants.admin.ok("create-partitions", {"topics": [{"name": secret, "count": 4}]})
    assert grown["results"][0]["errorCode"] == 0
    assert _settled_epoch(member) == epoch
    deleted = tenants.admin.ok("delete-topics", {"topics": [{"name": secret}]})
    assert deleted["responses"][0]["errorCode"] == 0
    assert _settled_epoch(member) == epoch

    # A topic of bob's that the regex matches does move the group on.
    create_topic(tenants.admin, f"tb-rx-{suffix}-two", 2)
    assert _settled_epoch(member) > epoch


def _writes_only(group: str, key: str) -> dict[str, Any]:
    return {
        "groupId": group,
        "generationIdOrMemberEpoch": -1,
        "topics": [],
        "writes": [add_one(SINK, key)],
        "idempotencyKey": uuid.uuid4().hex,
    }


def test_a_refused_writes_only_commit_says_it_was_refused(tenants: Tenants) -> None:
    suffix = uuid.uuid4().hex[:8]
    key = f"k-{suffix}"
    client = tenants.store.dynamo.client

    # bob on alice's group: 30, and nothing written.
    answer = tenants.bob.ok("offset-commit", _writes_only(f"a-sink-{suffix}", key))
    assert answer["errorCode"] == GROUP_DENIED, answer
    # bob on his own group, without WRITE on the sink table: 53.
    answer = tenants.bob.ok("offset-commit", _writes_only(f"b-sink-{suffix}", key))
    assert answer["errorCode"] == TRANSACTIONAL_ID_DENIED, answer
    assert count_of(client, SINK, key) == 0

    # alice on her own group, allowed: applied, and the answer says so.
    answer = tenants.alice.ok("offset-commit", _writes_only(f"a-sink-{suffix}", key))
    assert answer["errorCode"] == 0 and answer["failedWrite"] is None, answer
    assert count_of(client, SINK, key) == 1

    # A write whose condition fails: refused, and said so without any partition to carry it.
    failing = _writes_only(f"a-sink-{suffix}", key)
    failing["writes"] = [add_one(SINK, key, condition=f"attribute_not_exists({COUNT_KEY})")]
    answer = tenants.alice.ok("offset-commit", failing)
    assert answer["errorCode"] == 48 and answer["failedWrite"]["index"] == 0, answer
    assert count_of(client, SINK, key) == 1


def test_sink_table_names_are_not_probed_past_authorization(tenants: Tenants) -> None:
    suffix = uuid.uuid4().hex[:8]
    group = f"b-probe-{suffix}"
    answers = []
    for table in (SINK, f"not-a-sink-{suffix}"):
        body = _writes_only(group, "k")
        body["writes"] = [add_one(table, "k")]
        answer = tenants.bob.call("offset-commit", body)
        answers.append((answer.status, answer.body["errorCode"]))
    # The same refusal whether or not the table is a sink: nothing tells them apart.
    assert answers == [(200, TRANSACTIONAL_ID_DENIED)] * 2, answers

    # Someone allowed to write the table still hears that it is not a sink.
    not_sink = f"ta-not-a-sink-{suffix}"
    grant(tenants.admin, acl(TRANSACTIONAL_ID, not_sink, ALICE, WRITE))
    body = _writes_only(f"a-probe-{suffix}", "k")
    body["writes"] = [add_one(not_sink, "k")]
    answer = tenants.alice.call("offset-commit", body)
    assert answer.status == 400 and "not a sink table" in answer.body["errorMessage"]


def test_a_refused_commit_of_partitions_carries_the_code_at_the_top_too(
    tenants: Tenants,
) -> None:
    suffix = uuid.uuid4().hex[:8]
    topic = unique("ta-top")
    create_topic(tenants.admin, topic, 1)
    body = {
        "groupId": f"a-top-{suffix}",
        "topics": [{"name": topic, "partitions": [{"partitionIndex": 0, "committedOffset": 5}]}],
    }
    refused = tenants.bob.ok("offset-commit", body)
    assert refused["errorCode"] == GROUP_DENIED
    assert refused["topics"][0]["partitions"][0]["errorCode"] == GROUP_DENIED
    applied = tenants.alice.ok("offset-commit", body)
    assert applied["errorCode"] == 0
