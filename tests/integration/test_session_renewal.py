"""Session renewal without a write on every heartbeat (core/session_renewal.py): a steady
heartbeat writes the member's session deadline only when it is less than a session away, so
that with `groupcoord.session.renewal.skips` 2 (the default) two of every three heartbeats
only read. A silent member is never removed earlier than one session after its last
heartbeat, and at most the renewal slack later (never more than a third of its session: a
short session skips fewer); skips 0 writes on every heartbeat (Kafka's exact timing).

Driven on a clock the test controls (`now_ms` of each call), through the service functions
on the service tests' store.
"""

from __future__ import annotations

import uuid
from dataclasses import replace
from typing import Any

from groupcoord.core.classic.model import ClassicMember, Protocol
from groupcoord.core.session_renewal import effective_skips, renewal_slack_ms
from groupcoord.core.topics import TopicRecord
from groupcoord.errors import Errors
from groupcoord.local.seed import write_classic_group
from groupcoord.models.classic import HeartbeatRequest
from groupcoord.models.consumer import ConsumerGroupHeartbeatRequest
from groupcoord.service.classic.heartbeat import heartbeat
from groupcoord.service.classic_group import load, settle
from groupcoord.service.consumer.common import reload
from groupcoord.service.consumer.heartbeat import consumer_group_heartbeat
from groupcoord.service.context import ApiContext
from groupcoord.service.sweep import sweep
from groupcoord.store import capacity
from groupcoord.store.store import Store
from groupcoord.topic_ids import new_topic_id

NOW = 1_000_000_000
# Classic members: heartbeats every second, dead after 9 s of silence (the ratio of 5 s
# heartbeats to a 45 s session: the slack may be up to 3 s, so 2 skips fit).
INTERVAL_MS = 1000
EXPIRY_MS = 9000


def _unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def _with_skips(store: Store, skips: int) -> Store:
    """The same table, under settings with another `groupcoord.session.renewal.skips`."""
    return Store(store.dynamo, replace(store.settings, session_renewal_skips=skips))


def _ctx(store: Store, now_ms: int) -> ApiContext:
    return ApiContext(settings=store.settings, store=store, now_ms=now_ms, endpoint="http://x")


# --- classic ---


def _classic_group(store: Store, count: int, next_check_ms: int = NOW + EXPIRY_MS) -> str:
    group_id = _unique("classic")
    members = [
        ClassicMember(
            member_id=f"m-{i}",
            session_timeout_ms=EXPIRY_MS,
            rebalance_timeout_ms=30_000,
            expiry_ms=EXPIRY_MS,
            heartbeat_interval_ms=INTERVAL_MS,
            protocol_type="consumer",
            protocols=(Protocol("range", b""),),
            joined_generation=1,
            member_generation=1,
            joined_at_ms=NOW,
            session_deadline_ms=NOW + EXPIRY_MS,  # as a sync leaves it: exactly one session
        )
        for i in range(count)
    ]
    write_classic_group(
        store, group_id, members, protocol="range", rebalance_timeout_ms=30_000,
        next_check_ms=next_check_ms,
    )  # fmt: skip
    return group_id


def _classic_beat(
    store: Store, group_id: str, member_id: str, now_ms: int, **extra: Any
) -> capacity.Usage:
    request = HeartbeatRequest.model_validate(
        {"groupId": group_id, "generationId": 1, "memberId": member_id, **extra}
    )
    with capacity.metered() as usage:
        answer = heartbeat(request, _ctx(store, now_ms))
    assert answer.error_code == Errors.NONE, answer
    return usage


def _classic_members(store: Store, group_id: str, now_ms: int) -> set[str]:
    """The members left after the group's timers ran at `now_ms`."""
    group = load(store, group_id)
    assert group is not None
    group = settle(store, group, now_ms)
    return {m.member_id for m in store.classic.members(group, payloads=False)}


def test_a_classic_heartbeat_writes_only_when_the_session_is_less_than_a_session_away(
    service_store: Store,
) -> None:
    group_id = _classic_group(service_store, 1, next_check_ms=NOW + 60_000)  # no timer check due
    slack = renewal_slack_ms(INTERVAL_MS, service_store.settings.session_renewal_skips, EXPIRY_MS)
    assert slack == 2500  # skips 2 (the default): two and a half intervals
    # The sync left the deadline exactly one session ahead: the first heartbeat renews it.
    first = _classic_beat(service_store, group_id, "m-0", NOW + 1000)
    assert first.by_operation == {"get_item": 2, "update_item": 1}, first.by_operation
    assert first.write_units == 1
    assert first.read_units == 1.5  # the group eventually consistent, the member not
    # A little over one and two intervals later: the deadline (NOW + 1000 + 9000 + 2500) is
    # still a whole session ahead. Reads only.
    for t in (NOW + 2100, NOW + 3200):
        quiet = _classic_beat(service_store, group_id, "m-0", t)
        assert quiet.by_operation == {"get_item": 2}, quiet.by_operation
        assert quiet.write_units == 0
    # Three intervals after the renewal: renewed again.
    fourth = _classic_beat(service_store, group_id, "m-0", NOW + 4300)
    assert fourth.by_operation == {"get_item": 2, "update_item": 1}, fourth.by_operation


def test_a_short_classic_session_skips_fewer_heartbeats(service_store: Store) -> None:
    """The slack is at most a third of the session: 3 intervals leave room for no skip."""
    group_id = _unique("short")
    member = ClassicMember(
        member_id="m-0", session_timeout_ms=3000, rebalance_timeout_ms=30_000, expiry_ms=3000,
        heartbeat_interval_ms=INTERVAL_MS, protocol_type="consumer",
        protocols=(Protocol("range", b""),), joined_generation=1, member_generation=1,
        joined_at_ms=NOW, session_deadline_ms=NOW + 3000,
    )  # fmt: skip
    write_classic_group(
        service_store, group_id, [member], protocol="range", rebalance_timeout_ms=30_000,
        next_check_ms=NOW + 60_000,
    )  # fmt: skip
    assert effective_skips(INTERVAL_MS, service_store.settings.session_renewal_skips, 3000) == 0
    assert renewal_slack_ms(INTERVAL_MS, service_store.settings.session_renewal_skips, 3000) == 0
    for t in (NOW + 1000, NOW + 2100, NOW + 3200):
        usage = _classic_beat(service_store, group_id, "m-0", t)
        assert usage.by_operation == {"get_item": 2, "update_item": 1}, usage.by_operation


def test_a_silent_classic_member_is_removed_no_earlier_than_a_session_after_its_last_beat(
    service_store: Store,
) -> None:
    group_id = _classic_group(service_store, 2)
    slack = renewal_slack_ms(INTERVAL_MS, service_store.settings.session_renewal_skips, EXPIRY_MS)
    # m-0 last beats with a renewal, m-1 last beats without one (its deadline, written at
    # NOW + 1000, is still a session away at NOW + 2100).
    _classic_beat(service_store, group_id, "m-0", NOW + 1000)
    _classic_beat(service_store, group_id, "m-1", NOW + 1000)
    skipped = _classic_beat(service_store, group_id, "m-1", NOW + 2100)
    assert "update_item" not in skipped.by_operation, skipped.by_operation
    # Never earlier than one session after the last heartbeat ...
    assert _classic_members(service_store, group_id, NOW + 1000 + EXPIRY_MS - 1) == {"m-0", "m-1"}
    assert _classic_members(service_store, group_id, NOW + 2100 + EXPIRY_MS - 1) == {"m-0", "m-1"}
    # ... and no later than the slack after one session from the last write.
    assert _classic_members(service_store, group_id, NOW + 1000 + EXPIRY_MS + slack) == set()


def test_with_no_skips_every_classic_heartbeat_writes_and_expiry_is_exact(
    service_store: Store,
) -> None:
    exact = _with_skips(service_store, 0)
    group_id = _classic_group(exact, 2)
    for t in (NOW + 1000, NOW + 1100, NOW + 1200):
        usage = _classic_beat(exact, group_id, "m-0", t)
        assert usage.by_operation == {"get_item": 2, "update_item": 1}, usage.by_operation
    _classic_beat(exact, group_id, "m-1", NOW + 1200)
    assert _classic_members(exact, group_id, NOW + 1200 + EXPIRY_MS - 1) == {"m-0", "m-1"}
    assert _classic_members(exact, group_id, NOW + 1200 + EXPIRY_MS) == set()


# --- consumer protocol ---


def _consumer_beat(store: Store, body: dict, now_ms: int) -> tuple[dict, capacity.Usage]:
    request = ConsumerGroupHeartbeatRequest.model_validate(body)
    with capacity.metered() as usage:
        answer = consumer_group_heartbeat(request, _ctx(store, now_ms)).to_json_dict()
    return answer, usage


class _ConsumerMember:
    """A member that joins and acknowledges its assignment, on the test's clock."""

    def __init__(
        self, store: Store, group_id: str, topic: str, now_ms: int, member_id: str | None = None
    ) -> None:
        self.store, self.group_id = store, group_id
        self.member_id = member_id or _unique("m")
        body = {"groupId": group_id, "memberId": self.member_id, "memberEpoch": 0,
                "rebalanceTimeoutMs": 30000, "subscribedTopicNames": [topic],
                "topicPartitions": []}  # fmt: skip
        answer, _ = _consumer_beat(store, body, now_ms)
        assert answer["errorCode"] == 0, answer
        self.epoch = answer["memberEpoch"]
        self.owned = (answer["assignment"] or {}).get("topicPartitions", [])

    def beat(self, now_ms: int, **extra: Any) -> tuple[dict, capacity.Usage]:
        body = {"groupId": self.group_id, "memberId": self.member_id,
                "memberEpoch": self.epoch, "topicPartitions": self.owned, **extra}  # fmt: skip
        answer, usage = _consumer_beat(self.store, body, now_ms)
        if answer["errorCode"] == 0:
            self.epoch = answer["memberEpoch"]
            if answer["assignment"] is not None:
                self.owned = answer["assignment"]["topicPartitions"]
        return answer, usage


def _consumer_group(store: Store, now_ms: int, count: int) -> list[_ConsumerMember]:
    topic = _unique("t")
    store.topics.create(TopicRecord(topic, new_topic_id(), 6), now_ms=0)
    group_id = _unique("consumer")
    members = [_ConsumerMember(store, group_id, topic, now_ms) for _ in range(count)]
    for _ in range(3):  # acknowledge the assignments until nothing moves
        for m in members:
            answer, _ = m.beat(now_ms)
            assert answer["errorCode"] == 0, answer
    return members


def _consumer_members(store: Store, group_id: str, now_ms: int) -> set[str]:
    """The members left after the sweeper ran at `now_ms`."""
    sweep(store, now_ms)
    group = reload(store.consumer, group_id)
    assert group is not None
    return {m.member_id for m in store.consumer.members(group)}


def test_a_consumer_heartbeat_writes_on_every_third_beat_and_answers_from_reads_between(
    service_store: Store,
) -> None:
    interval = service_store.settings.group_consumer_heartbeat_interval_ms
    (member,) = _consumer_group(service_store, NOW, 1)  # its last beat, at NOW, renewed the session
    writes = []
    for i in range(1, 7):  # beats a little over an interval apart
        answer, usage = member.beat(NOW + i * (interval + 50))
        assert answer["errorCode"] == 0, answer
        assert usage.by_operation.get("get_item") == 2, usage.by_operation
        writes.append(usage.by_operation.get("put_item", 0))
    assert writes == [0, 0, 1, 0, 0, 1]  # skips 2, the default, fit a 45 s session


def test_a_silent_consumer_member_is_removed_between_one_session_and_the_slack_later(
    service_store: Store,
) -> None:
    settings = service_store.settings
    session = settings.group_consumer_session_timeout_ms
    interval = settings.group_consumer_heartbeat_interval_ms
    slack = renewal_slack_ms(interval, settings.session_renewal_skips, session)
    renewing, skipping = _consumer_group(service_store, NOW, 2)
    group_id = renewing.group_id
    both = {renewing.member_id, skipping.member_id}
    # Both renewed at NOW; `skipping` beats once more, an interval later, without a write.
    answer, usage = skipping.beat(NOW + interval)
    assert answer["errorCode"] == 0 and "put_item" not in usage.by_operation, usage.by_operation
    # Never earlier than one session after the last heartbeat ...
    assert _consumer_members(service_store, group_id, NOW + session - 1) == both
    assert _consumer_members(service_store, group_id, NOW + interval + session - 1) == both
    # ... and no later than the slack after one session from the last write.
    assert _consumer_members(service_store, group_id, NOW + session + slack) == set()


def test_a_member_that_left_hears_so_on_its_next_heartbeat_even_between_renewals(
    service_store: Store,
) -> None:
    (member,) = _consumer_group(service_store, NOW, 1)
    left, _ = _consumer_beat(
        service_store,
        {"groupId": member.group_id, "memberId": member.member_id, "memberEpoch": -1},
        NOW + 10,
    )
    assert left["errorCode"] == 0, left
    answer, _ = member.beat(NOW + 20)  # its session is far ahead: no write would be due
    assert answer["errorCode"] == Errors.UNKNOWN_MEMBER_ID, answer


def test_with_no_skips_every_consumer_heartbeat_writes(service_store: Store) -> None:
    exact = _with_skips(service_store, 0)
    (member,) = _consumer_group(exact, NOW, 1)
    for i in range(1, 4):
        answer, usage = member.beat(NOW + i)
        assert answer["errorCode"] == 0, answer
        assert usage.by_operation.get("put_item") == 1, usage.by_operation


class _Lagging:
    """The store's DynamoDB whose eventually consistent reads have not yet seen anything (a
    read within DynamoDB's propagation window of the writes it misses)."""

    def __init__(self, inner: object) -> None:
        self._inner = inner

    def get(self, key: dict, consistent: bool = False) -> dict | None:
        return self._inner.get(key, consistent=True) if consistent else None  # type: ignore[attr-defined]

    def __getattr__(self, name: str) -> object:
        return getattr(self._inner, name)


def test_an_error_seen_on_a_lagging_read_is_confirmed_before_it_is_answered(
    service_store: Store,
) -> None:
    (member,) = _consumer_group(service_store, NOW, 1)
    member.store = Store(_Lagging(service_store.dynamo), service_store.settings)  # type: ignore[arg-type]
    # The group item's eventually consistent read finds nothing: not "group not found" (69),
    # nor, for a member, "unknown member" (25): the consistent reads see both.
    answer, _ = member.beat(NOW + 10)
    assert answer["errorCode"] == 0, answer


def test_a_classic_heartbeat_on_a_lagging_read_is_confirmed_before_an_error(
    service_store: Store,
) -> None:
    group_id = _classic_group(service_store, 1, next_check_ms=NOW + 60_000)
    lagging = Store(_Lagging(service_store.dynamo), service_store.settings)  # type: ignore[arg-type]
    # The group item's eventually consistent read finds nothing: not "unknown member" (25).
    usage = _classic_beat(lagging, group_id, "m-0", NOW + 1000)
    # Decided again on consistent reads (the lagging read itself reaches no table).
    assert usage.by_operation == {"get_item": 2, "update_item": 1}, usage.by_operation
    assert usage.read_units == 2.0
