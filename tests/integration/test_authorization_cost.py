"""What authorization costs a request: nothing in DynamoDB while the instance's copy of the ACLs
is fresh (a steady heartbeat stays at 1 write and 2 reads), one small read of the ACLs' version
when it is due for a check, the whole set only when the version moved."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import pytest

from groupcoord import clock, runtime
from groupcoord.core.acls import (
    AclBinding,
    AclOperation,
    PatternType,
    PermissionType,
    ResourceType,
)
from groupcoord.core.topics import TopicRecord
from groupcoord.http.apis import API_FUNCTION
from groupcoord.http.handler import make_api_handler
from groupcoord.local.events import LambdaContext, http_api_event
from groupcoord.service.authorization import acl_cache, authorizer_config
from groupcoord.store import capacity
from groupcoord.store.store import Store
from groupcoord.topic_ids import new_topic_id
from tests.support.consumer import unique

ROLE = "arn:aws:iam::000000000000:role/orders-service"
# Shorter than any timer of the group (its state refresh is due 10 s after a heartbeat):
# a heartbeat just past it does no other work.
CACHE_MS = 3_000


@pytest.fixture
def authorized(service_store: Store) -> Iterator[Store]:
    settings = replace(service_store.settings, authorizer_enabled=True, acl_cache_ms=CACHE_MS)
    store = Store(service_store.dynamo, settings)
    saved = (runtime._settings, runtime._store)
    runtime.configure(settings, store)
    try:
        yield store
    finally:
        runtime._settings, runtime._store = saved


def heartbeat(body: dict[str, Any]) -> dict[str, Any]:
    """One consumer-group-heartbeat through its Lambda handler, as the role's session."""
    api = "consumer-group-heartbeat"
    event = http_api_event(
        "POST", f"/v1/{api}", json.dumps(body).encode(), {"content-type": "application/json"}
    )
    session = f"arn:aws:sts::000000000000:assumed-role/orders-service/{unique('s')}"
    event["requestContext"]["authorizer"] = {"iam": {"userArn": session}}
    answer = make_api_handler(API_FUNCTION[api])(event, LambdaContext(API_FUNCTION[api]))
    assert answer["statusCode"] == 200, answer
    return json.loads(answer["body"])


def allow(store: Store, group: str, topic: str) -> None:
    store.acls.create(bindings(group, topic))


def bindings(group: str, topic: str) -> list[AclBinding]:
    principal = f"User:{ROLE}"
    return [
        AclBinding(
            resource_type=resource_type,
            resource_name=name,
            pattern_type=PatternType.LITERAL,
            principal=principal,
            host="*",
            operation=operation,
            permission=PermissionType.ALLOW,
        )
        for resource_type, name, operation in (
            (ResourceType.GROUP, group, AclOperation.READ),
            (ResourceType.TOPIC, topic, AclOperation.DESCRIBE),
        )
    ]


def test_a_steady_heartbeat_reads_no_acl_while_the_copy_is_fresh(authorized: Store) -> None:
    store = authorized
    topic, group = unique("t"), unique("g")
    store.topics.create(TopicRecord(topic, new_topic_id(), 8), now_ms=0)
    allow(store, group, topic)
    now = clock.now_ms()
    with clock.use(lambda: now):
        joined = heartbeat(
            {"groupId": group, "memberId": "m-1", "memberEpoch": 0,
             "rebalanceTimeoutMs": 30000, "subscribedTopicNames": [topic],
             "topicPartitions": []}
        )  # fmt: skip
        assert joined["errorCode"] == 0, joined
        owned = joined["assignment"]["topicPartitions"]
        settled = heartbeat(
            {"groupId": group, "memberId": "m-1", "memberEpoch": joined["memberEpoch"],
             "topicPartitions": owned}
        )  # fmt: skip
        steady = {"groupId": group, "memberId": "m-1", "memberEpoch": settled["memberEpoch"]}
        with capacity.metered() as usage:
            assert heartbeat(steady)["errorCode"] == 0
        # The group and the member; no renewal is due (docs/sessions.md), and no ACL read.
        assert usage.by_operation == {"get_item": 2}, usage.by_operation

    # Past the copy's staleness bound: one eventually consistent read of the version item.
    with clock.use(lambda: now + CACHE_MS + 1):
        with capacity.metered() as usage:
            assert heartbeat(steady)["errorCode"] == 0
        assert usage.by_operation == {"get_item": 3}, usage.by_operation
        assert usage.read_units <= 2.0  # the member's read is consistent


def test_a_revoked_acl_takes_effect_within_the_cache_bound(authorized: Store) -> None:
    store = authorized
    topic, group = unique("t"), unique("g")
    store.topics.create(TopicRecord(topic, new_topic_id(), 8), now_ms=0)
    allow(store, group, topic)
    now = clock.now_ms()
    join = {"groupId": group, "memberId": "m-1", "memberEpoch": 0, "rebalanceTimeoutMs": 30000,
            "subscribedTopicNames": [topic], "topicPartitions": []}  # fmt: skip
    with clock.use(lambda: now):
        joined = heartbeat(join)
        assert joined["errorCode"] == 0, joined
        store.acls.delete(bindings(group, topic))
        # Within the bound, this instance's copy still allows it...
        steady = {"groupId": group, "memberId": "m-1", "memberEpoch": joined["memberEpoch"]}
        assert heartbeat(steady)["errorCode"] == 0
    # ... and past it, the revocation holds: 30, and no new member gets in either.
    with clock.use(lambda: now + CACHE_MS + 1):
        assert heartbeat(steady)["errorCode"] == 30
        assert heartbeat({**join, "memberId": "m-2"})["errorCode"] == 30


def test_an_instance_sees_its_own_acl_change_even_through_a_stale_version_read(
    authorized: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """After create-acls on this instance, its next request reloads the ACLs although the
    eventually consistent read of their version may still show the old one."""
    store = authorized
    cache = acl_cache(store)
    config = authorizer_config(store.settings)
    before = cache.authorizer(store, config, now_ms=0)
    stale = store.acls.version()
    store.acls.create(bindings("g", "t"))
    monkeypatch.setattr(store.acls, "version", lambda: stale)  # a read that lags
    cache.invalidate()
    after = cache.authorizer(store, config, now_ms=1)
    assert len(after.bindings) == len(before.bindings) + 2
