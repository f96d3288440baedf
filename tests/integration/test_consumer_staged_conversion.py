"""A protocol conversion too large for one transaction is staged, then flipped
(store/conversion.py), and a crash in the middle leaves a group that the next request rolls back
or completes. Over HTTP: the request that converts runs on a coordinator whose
`groupcoord.fault.crash.at` makes it die at the named point (a 500, as a Lambda timeout leaves
things); a second one on the same table answers everything else, as another Lambda would.
"""

from __future__ import annotations

import base64
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from groupcoord.store import schema
from groupcoord.store.conversion import MARKER, STAGING_SHARDS
from groupcoord.store.dynamo import Dynamo
from groupcoord.store.schema import staged_pk
from groupcoord.store.store import Store
from groupcoord.wire.consumer_protocol import Subscription, encode_subscription
from tests.integration.test_consumer_upgrade import (
    STAGED,
    Tracked,
    commit,
    converge,
    group_type,
    start_classic_group,
)
from tests.support.api import Api
from tests.support.classic_client import FAST_SETTINGS, Consumer, Ownership, describe, settle
from tests.support.consumer import Member, unique
from tests.support.servers import running_beside

# Long enough that the checks a test makes while a stage is held (heartbeats, a commit) fit in
# it on a busy machine (at 1 s they did not, and a request rolled the stage back under them);
# the tests wait for its end by polling the marker, not by sleeping.
LEASE_MS = 4000
DEFAULT_LIMIT = {**FAST_SETTINGS, "groupcoord.conversion.lease.ms": str(LEASE_MS)}
SETTINGS = {**DEFAULT_LIMIT, **STAGED}


pytestmark = pytest.mark.coordinator(SETTINGS, store=True)


@pytest.fixture(scope="module")
def store(deployment: tuple[str, Store]) -> Store:
    return deployment[1]


@pytest.fixture(scope="module")
def dynamo(store: Store) -> Dynamo:
    """The table as it stands, to look at the items a crash left."""
    return store.dynamo


def crashing(endpoint: str | None, store: Store, point: str, settings: dict[str, str] = SETTINGS):
    """A deployment beside the test's, on its table, that dies at `point`."""
    return running_beside(endpoint, store, {**settings, "groupcoord.fault.crash.at": point})


def group_item(dynamo: Dynamo, group: str) -> dict[str, Any]:
    item = dynamo.get(schema.group_key(group), consistent=True)
    assert item is not None
    return item


def staged_items(dynamo: Dynamo, group: str, token: str) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []
    for shard in range(STAGING_SHARDS):
        pk = staged_pk(group, token, shard)
        found += dynamo.query("pk = :pk", {":pk": pk}, consistent=True)
    return found


def member_types(dynamo: Dynamo, group: str, consumers: list[Consumer]) -> set[str]:
    """The protocol each member item is written in (consumer member items say so)."""
    shards = int(group_item(dynamo, group)["memberShards"])
    kinds = set()
    for c in consumers:
        item = dynamo.get(schema.member_key(group, c.member_id, shards), consistent=True)
        assert item is not None, c.name
        kinds.add(item.get("groupType", "classic"))
    return kinds


def payload_items(dynamo: Dynamo, group: str) -> list[dict[str, Any]]:
    """Classic member payload items (`G#<group>#P<shard>`) left in the table."""
    return items_under(dynamo, f"G#{group}#P")


def items_under(dynamo: Dynamo, prefix: str) -> list[dict[str, Any]]:
    """Every item whose partition key starts with `prefix` (a scan: the table is small)."""
    return [item for item in dynamo.scan() if item["pk"].startswith(prefix)]


def crashed_upgrade(
    endpoint: str | None, store: Store, url: str, point: str, hold: bool
) -> tuple[str, str, Ownership, list[Consumer], Tracked]:
    """Three classic members settle; one leaves to restart on the consumer protocol, and its
    first consumer-group-heartbeat (the upgrade) dies at `point` on a crashing serve. With
    `hold`, the two classic members' loops are stopped before."""
    api = Api(url)
    # Sessions long enough that members held (not heartbeating) through the crash and the
    # checks after it are still in the group on a busy machine (at the 6 s default, the
    # converted group's members expired before its describe beside two CPU hogs), with a
    # heartbeat every 500 ms: the members see each rebalance at once, not a third of the
    # session later.
    group, topic, topic_id, ownership, consumers = start_classic_group(
        url, api, True, session_timeout_ms=60_000, heartbeat_frequency=120,
        failed_heartbeat_threshold=120,
    )  # fmt: skip
    consumers.pop().close()
    settle(api, group, consumers, 60)
    if hold:
        for c in consumers:
            c.stop()
    m = Tracked(api, group, topic, topic_id, ownership)
    with crashing(endpoint, store, point) as crash_url:
        crashed_join(crash_url, m)
    return group, topic, ownership, consumers, m


def join_body(m: Member) -> dict[str, Any]:
    return {
        "groupId": m.group,
        "memberId": m.member_id,
        "memberEpoch": 0,
        "rebalanceTimeoutMs": m.rebalance_timeout_ms,
        "topicPartitions": [],
        "subscribedTopicNames": m.topics,
    }


def crashed_join(crash_url: str, m: Member) -> None:
    """m's first consumer-group-heartbeat (the upgrade) dies on the crashing serve."""
    answer = Api(crash_url).call("consumer-group-heartbeat", join_body(m))
    assert answer.status == 500, answer.body


def until_lease_ends(dynamo: Dynamo, group: str) -> None:
    marker = group_item(dynamo, group)[MARKER]
    while time.time_ns() // 1_000_000 <= int(marker["until"]):
        time.sleep(0.05)


def test_a_crash_between_staging_and_flip_is_rolled_back_by_the_next_request(
    service_endpoint: str | None, store: Store, url: str, dynamo: Dynamo
) -> None:
    api = Api(url)
    group, topic, ownership, consumers, m = crashed_upgrade(
        service_endpoint, store, url, "conversion.staged", hold=False
    )
    try:
        generation = consumers[0].generation
        # Staged, not flipped: the classic group stands, marked, with its staged writes.
        item = group_item(dynamo, group)
        assert item["groupType"] == "classic" and item["generation"] == generation
        token = item[MARKER]["token"]
        assert item[MARKER]["phase"] == "staging"
        # The two member items, and the deletions of the two classic payload items.
        assert len(staged_items(dynamo, group, token)) == 4
        assert member_types(dynamo, group, consumers) == {"classic"}
        # The classic members go on meanwhile: the old group is the group.
        for c in consumers:
            c.check()
            assert c.heartbeat() == 0
        assert commit(api, group, topic, generation, consumers[0].member_id, 0) == 0

        # Once the lease is over, the next request rolls the stage back.
        until_lease_ends(dynamo, group)
        assert consumers[1].heartbeat() == 0
        item = group_item(dynamo, group)
        assert MARKER not in item and item["groupType"] == "classic"
        # The marker goes first (so a late flip fails), then the staged items: a classic
        # member's own heartbeat may be the request that is still deleting them.
        deadline = time.monotonic() + 10
        while staged_items(dynamo, group, token):
            assert time.monotonic() < deadline, "the staged items were not deleted"
            time.sleep(0.05)
        assert group_type(api, group) == "classic"
        assert ownership.violations == []

        # And the upgrade, asked again, goes through.
        assert m.join()["errorCode"] == 0, m.last
        assert group_type(api, group) == "consumer"
        converge(api, group, consumers, [m])
        assert ownership.violations == []
        assert MARKER not in group_item(dynamo, group)
    finally:
        for c in consumers:
            c.stop()


def test_a_crash_after_the_flip_is_completed_by_the_next_request(
    service_endpoint: str | None, store: Store, url: str, dynamo: Dynamo
) -> None:
    api = Api(url)
    # The classic loops are held: the first request after the crash is ours.
    group, topic, ownership, consumers, m = crashed_upgrade(
        service_endpoint, store, url, "conversion.flipped", hold=True
    )
    try:
        generation = consumers[0].generation
        # Flipped, not applied: the group item is the consumer group; the members' items are
        # still classic ones, which nobody may read until the conversion is applied.
        item = group_item(dynamo, group)
        assert item["groupType"] == "consumer" and item["groupEpoch"] == generation
        token = item[MARKER]["token"]
        assert item[MARKER]["phase"] == "flipped"
        assert member_types(dynamo, group, consumers) == {"classic"}

        # The next request (a classic member's commit) finishes the conversion first, and is
        # then decided on the consumer group: the strict rule admits the generation.
        assert commit(api, group, topic, generation, consumers[0].member_id, 0) == 0
        item = group_item(dynamo, group)
        assert MARKER not in item
        assert staged_items(dynamo, group, token) == []
        assert member_types(dynamo, group, consumers) == {"consumer"}
        assert payload_items(dynamo, group) == []  # the classic members' went with them
        described = api.ok("consumer-group-describe", {"groupIds": [group]})["groups"][0]
        assert {x["memberId"] for x in described["members"]} == {c.member_id for c in consumers}
        assert {x["memberEpoch"] for x in described["members"]} == {generation}

        # The interrupted join, sent again, joins the converted group; everyone converges.
        assert m.join()["errorCode"] == 0, m.last
        for c in consumers:
            c.resume(rejoin=True)
        converge(api, group, consumers, [m])
        assert ownership.violations == []
    finally:
        for c in consumers:
            c.stop()


@pytest.fixture(scope="module")
def default_url(service_endpoint: str | None, store: Store) -> Iterator[str]:
    with running_beside(service_endpoint, store, DEFAULT_LIMIT) as base:
        yield base


@pytest.mark.parametrize("crash", [False, True], ids=["whole", "crash-while-applying"])
def test_a_group_of_60_static_members_is_upgraded_in_one_step(
    service_endpoint: str | None, store: Store, default_url: str, dynamo: Dynamo, crash: bool
) -> None:
    """With DynamoDB's own limit (100 items a transaction): 60 static classic members are 60
    member items, 60 new instance claims, 60 old ones and 60 payload items to delete, so the
    conversion is staged and applied in three transactions; a crash after the first is
    completed by the next request. Afterwards nothing staged is left, nor any payload."""
    api = Api(default_url)
    group = unique("g")
    metadata = base64.b64encode(encode_subscription(Subscription(["t"]))).decode()

    def join(i: int) -> int:
        body = {
            "groupId": group,
            "memberId": "",
            "groupInstanceId": f"i-{i}",
            "sessionTimeoutMs": 30000,
            "rebalanceTimeoutMs": 30000,
            "protocolType": "consumer",
            "protocols": [{"name": "range", "metadata": metadata}],
        }
        deadline = time.monotonic() + 30
        while True:  # joins racing at once may be told to retry (27): as a client would
            answer = api.call("join-group", body)
            if answer.status == 202 or answer.body.get("errorCode") == 0:
                return answer.status
            assert time.monotonic() < deadline, answer.body
            time.sleep(0.05)

    with ThreadPoolExecutor(max_workers=6) as pool:
        assert set(pool.map(join, range(60))) <= {200, 202}
    assert len(describe(api, group)["members"]) == 60
    m = Member(api, group, ["t"])
    if crash:
        point = "conversion.partly-applied"
        with crashing(service_endpoint, store, point, DEFAULT_LIMIT) as crash_url:
            m.api = Api(crash_url)
            assert m.api.call("consumer-group-heartbeat", join_body(m)).status == 500
        assert group_item(dynamo, group)[MARKER]["phase"] == "flipped"
        m.api = api
    assert m.join()["errorCode"] == 0, m.last
    assert group_type(api, group) == "consumer"
    described = api.ok("consumer-group-describe", {"groupIds": [group]})["groups"][0]
    assert len(described["members"]) == 61
    assert {x.get("instanceId") for x in described["members"]} == {
        None,
        *(f"i-{i}" for i in range(60)),
    }
    assert MARKER not in group_item(dynamo, group)
    assert payload_items(dynamo, group) == []
    assert items_under(dynamo, f"G#{group}#C") == []
