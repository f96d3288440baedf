"""Whom a consumer member's release tells, and what finding them costs (docs/sessions.md,
"Push"): the members waiting on the released partitions are found from the releaser's own
item (the waiters the last install recorded there), not by reading every member of the group,
so the push channel adds no group-wide read to a releasing heartbeat. Through the service
functions on the service tests' store, a `@connections` client that records the posts.
"""

from __future__ import annotations

from typing import Any

from groupcoord.core.topics import TopicRecord
from groupcoord.service.consumer.common import reload
from groupcoord.service.push import open_connection
from groupcoord.store.push import ConnectionPoster
from groupcoord.store.store import Store
from groupcoord.topic_ids import new_topic_id
from tests.integration.test_session_renewal import NOW, _ConsumerMember, _unique


class _Posts:
    """`@connections` as boto3's client: each post recorded, by connection id."""

    def __init__(self) -> None:
        self.to: list[str] = []

    def post_to_connection(self, ConnectionId: str, Data: bytes) -> None:
        self.to.append(ConnectionId)


def _with_push(store: Store) -> _Posts:
    posts = _Posts()
    store.push_poster = ConnectionPoster("http://127.0.0.1:9", lambda _: posts)
    return posts


def _connect(store: Store, member: _ConsumerMember) -> None:
    open_connection(store, member.member_id, member.group_id, member.member_id, "", "h", NOW)


def _held(member: _ConsumerMember) -> int:
    return sum(len(tp["partitions"]) for tp in member.owned)


def _release(holder: _ConsumerMember) -> Any:
    """The holder hears its revocation, then acknowledges it (releases): that heartbeat's
    usage."""
    before = _held(holder)
    holder.beat(NOW)
    assert _held(holder) < before, "no revocation"
    answer, usage = holder.beat(NOW)
    assert answer["errorCode"] == 0, answer
    return usage


def _holder_and_joiner(store: Store) -> tuple[_ConsumerMember, _ConsumerMember]:
    """A member holding a 4-partition topic, and a joiner whose target takes half of it
    (the holder's id sorts first: the uniform assignor's ties go its way)."""
    topic = _unique("t")
    store.topics.create(TopicRecord(topic, new_topic_id(), 4), now_ms=0)
    group_id = _unique("release")
    holder = _ConsumerMember(store, group_id, topic, NOW, _unique("a"))
    holder.beat(NOW)
    assert _held(holder) == 4
    return holder, _ConsumerMember(store, group_id, topic, NOW, _unique("b"))


def test_with_push_a_releasing_heartbeat_reads_no_more_of_the_group_than_without(
    service_store: Store,
) -> None:
    holder, _ = _holder_and_joiner(service_store)
    without = _release(holder)
    holder, joiner = _holder_and_joiner(service_store)
    posts = _with_push(service_store)
    _connect(service_store, joiner)
    posts.to.clear()
    with_push = _release(holder)
    assert posts.to == [joiner.member_id]
    # A group this small has its listed state settled from a read of every member either way
    # (core/consumer/group.may_settle); the push channel must not read them all again.
    queries = without.by_operation.get("query", 0)
    assert with_push.by_operation.get("query", 0) == queries, with_push.by_operation


def test_a_member_waiting_on_a_holder_whose_target_did_not_change_is_told(
    service_store: Store,
) -> None:
    """The second joiner's target takes a partition the holder still holds from the first
    joiner's share, and the holder's own target stays what it was after the first join (a tie
    the holder's id wins): the install records the new waiter on the holder all the same, and
    the release tells both waiters."""
    posts = _with_push(service_store)
    holder, first = _holder_and_joiner(service_store)
    group = reload(service_store.consumer, holder.group_id)
    assert group is not None
    target = service_store.consumer.member(group, holder.member_id, consistent=True).target
    topic = _topic(service_store, holder)
    second = _ConsumerMember(service_store, holder.group_id, topic, NOW, _unique("c"))
    group = reload(service_store.consumer, holder.group_id)
    assert group is not None
    held = service_store.consumer.member(group, holder.member_id, consistent=True)
    assert held.target == target, "the holder's target moved: not the case under test"
    for member in (first, second):
        _connect(service_store, member)
    posts.to.clear()
    _release(holder)
    assert sorted(posts.to) == sorted([first.member_id, second.member_id])


def _topic(store: Store, member: _ConsumerMember) -> str:
    group = reload(store.consumer, member.group_id)
    assert group is not None
    return group.subscribed_topics[0]
