"""GroupMember hands a new assignment over without waiting for its acknowledgement: with
nothing to revoke, poll() returns the new partitions as soon as the listener has them, and the
heartbeat thread carries the acknowledgement (a revocation is still acknowledged in poll(),
since the partitions' next owner waits on it). The coordinator is reached through a loopback
proxy that holds heartbeat answers back, as a slow network or a busy coordinator would."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest

from groupcoord.client import GroupMember
from tests.e2e.helpers import SETTINGS
from tests.support.api import Api
from tests.support.consumer import create_topic, unique, until
from tests.support.servers import running_serve
from tests.support.slow_proxy import SlowProxy

HELD_S = 2.5  # how long the proxy holds back the answers it is told to
# A session well over a held heartbeat (the heartbeat thread sends one at a time).
SLOW_SETTINGS = {**SETTINGS, "group.consumer.session.timeout.ms": "15000"}


def acknowledges_two(api: str, heartbeat: dict[str, Any]) -> bool:
    if api != "consumer-group-heartbeat":
        return False
    owned = heartbeat.get("topicPartitions") or []
    return sum(len(t["partitions"]) for t in owned) == 2


@pytest.fixture
def served(dynamodb_endpoint: str) -> Iterator[tuple[str, SlowProxy]]:
    with running_serve(dynamodb_endpoint, SLOW_SETTINGS) as url:
        proxy = SlowProxy(url, HELD_S)
        try:
            yield url, proxy
        finally:
            proxy.close()


def test_a_new_assignment_is_handed_over_before_its_acknowledgement_is_answered(
    served: tuple[str, SlowProxy],
) -> None:
    url, proxy = served
    topic, group = unique("ack-topic"), unique("ack-group")
    create_topic(Api(url), topic, 2)
    staying = GroupMember(proxy.url, group, topics=[topic])
    leaving = GroupMember(url, group, topics=[topic])
    try:
        until(lambda: (len(staying.poll(0.05)), len(leaving.poll(0.05))) == (1, 1), 60)
        proxy.held = acknowledges_two  # `staying`'s acknowledgement of the partition it gets
        leaving.close()  # its partition goes to `staying`: nothing for it to revoke
        deadline, owned = time.monotonic() + 60, set()
        while len(owned) < 2:  # the poll() that takes the leaver's partition, timed
            assert time.monotonic() < deadline, "the leaver's partition assigned"
            staying.wait_for_work(1.0)
            started = time.monotonic()
            owned = staying.poll(0.0)
            took = time.monotonic() - started
    finally:
        proxy.held = lambda _api, _body: False
        leaving.close()
        staying.close()
    # In poll(), the acknowledgement's answer would have taken HELD_S at least.
    assert took < HELD_S / 2, took


def test_the_topics_are_looked_up_while_the_join_is_answered(
    served: tuple[str, SlowProxy],
) -> None:
    """The join's answer names the partitions by topic id: the member asks for its topics'
    ids beside the join, not after its answer (a round trip more before the first poll()
    hands the partitions over)."""
    url, proxy = served
    topic, group = unique("ids-topic"), unique("ids-group")
    create_topic(Api(url), topic, 2)

    def the_join(api: str, body: dict[str, Any]) -> bool:
        return api == "consumer-group-heartbeat" and body.get("memberEpoch") == 0

    proxy.held = the_join
    member = GroupMember(proxy.url, group, topics=[topic])
    try:
        until(lambda: len(member.poll(0.05)) == 2, 60)
    finally:
        proxy.held = lambda _api, _body: False
        member.close()
    join_answered = next(t for api, body, t in proxy.answered if the_join(api, body))
    asked = [t for api, t in proxy.asked if api == "metadata"]
    assert asked and asked[0] < join_answered - HELD_S / 2, (asked, join_answered)
