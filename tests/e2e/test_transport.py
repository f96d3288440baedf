"""The client's HTTP layer against a real coordinator: a throttled store's 429 is waited out
for its Retry-After, and a coordinator that is not there is reported, not hung on."""

from __future__ import annotations

import time

import pytest

from groupcoord.client import CoordinatorUnavailable, GroupMember, InvalidRequest, TopicPartition
from groupcoord.client.transport import Transport
from tests.e2e.helpers import SETTINGS, create_topic, free_port, unique
from tests.support.servers import running_serve
from tests.support.throttling_proxy import ThrottlingProxy

OPERATIONS = ("GetItem", "Query", "Scan", "PutItem", "UpdateItem", "TransactWriteItems")


def test_a_429_is_retried_after_its_retry_after(dynamodb_endpoint: str) -> None:
    with ThrottlingProxy(dynamodb_endpoint) as proxy:
        # One DynamoDB attempt per request: a throttled store call becomes a 429 at once. No
        # periodic sweep: the one throttled call must be the request's, not a sweep's.
        settings = {
            **SETTINGS,
            "groupcoord.store.max.attempts": "1",
            "groupcoord.sweep.interval.ms": "3600000",
        }
        with running_serve(proxy.url, settings=settings) as url:
            topic = unique("throttled")
            create_topic(url, topic, 2)
            thrown: list[int] = []

            def once(n: int) -> bool:  # the next store call, whatever it is, is throttled
                thrown.append(n)
                return len(thrown) == 1

            proxy.fail(*OPERATIONS, when=once)
            started = time.monotonic()
            reply = Transport(url).call("metadata", {"topics": [{"name": topic}]})
            took = time.monotonic() - started
            assert reply.status == 200
            assert [t["name"] for t in reply.body["topics"]] == [topic]
            assert sum(proxy.failed.values()) == 1
            assert took >= 1.0, f"retried after {took:.2f}s, before Retry-After: 1"


def test_an_unreachable_coordinator_fails_fast_and_clearly() -> None:
    dead = f"http://127.0.0.1:{free_port()}"
    started = time.monotonic()
    with pytest.raises(CoordinatorUnavailable, match="did not answer"):
        Transport(dead, timeout_s=1, retries=2).call("metadata", {})
    assert time.monotonic() - started < 5
    member = GroupMember(dead, unique("g"), topics=["t"], request_timeout_s=1)
    try:
        assert member.poll(timeout_s=0.5) == set()  # keeps trying; does not raise
        with pytest.raises(CoordinatorUnavailable):
            member.commit({TopicPartition("t", 0): 1})
    finally:
        member.close()


def test_a_malformed_request_is_an_invalid_request(coordinator: str) -> None:
    with pytest.raises(InvalidRequest, match="numPartitions"):
        Transport(coordinator).call(
            "create-topics", {"topics": [{"name": "x", "numPartitions": "twelve"}]}
        )
