"""A connected member's renewals (core/session_renewal.py, docs/sessions.md "Push"): `$connect`
marks the member item, and its heartbeats (consumer protocol and streams), 15 s apart at the
coordinator's 5 s interval and a 45 s session, write its session deadline only every third
time; a member without a connection, or whose connection closed, writes on every such
heartbeat, as before. Writes are counted as the cost tests count them (the store's capacity
meter).

Driven on a clock the test controls (`now_ms` of each call), through the service functions
($connect and $disconnect as service/push.py runs them) on the service tests' store (the
streams test on DynamoDB Local).
"""

from __future__ import annotations

from dataclasses import replace

from groupcoord.core.session_renewal import member_renewal_slack_ms
from groupcoord.service.push import close_connection, open_connection
from groupcoord.store import capacity
from groupcoord.store.store import Store
from tests.integration.test_session_renewal import (
    NOW,
    _consumer_group,
    _consumer_members,
    _ConsumerMember,
)
from tests.integration.test_streams_cost import _heartbeat, _settled_group

CONNECTED_INTERVAL_MS = 15_000


def _connect(store: Store, member: _ConsumerMember, now_ms: int) -> str:
    connection_id = f"c-{member.member_id}="
    open_connection(store, connection_id, member.group_id, member.member_id, "", "h", now_ms)
    return connection_id


def _writes(members: list[_ConsumerMember], start_ms: int, beats: int) -> list[list[int]]:
    """Per member, its item's writes (a renewal is a conditional put) in `beats` heartbeats
    a little over 15 s apart from `start_ms`, the members beating side by side."""
    found: list[list[int]] = [[] for _ in members]
    for i in range(1, beats + 1):
        for member, writes in zip(members, found, strict=True):
            answer, usage = member.beat(start_ms + i * (CONNECTED_INTERVAL_MS + 50))
            assert answer["errorCode"] == 0, answer
            writes.append(usage.by_operation.get("put_item", 0))
    return found


def test_a_connected_member_renews_every_third_heartbeat_and_one_without_every_time(
    service_store: Store,
) -> None:
    connected, alone = _consumer_group(service_store, NOW, 2)
    _connect(service_store, connected, NOW)
    # The first renews (its deadline was written before it connected), then 1 of every 3.
    assert _writes([connected, alone], NOW, 7) == [[1, 0, 0, 1, 0, 0, 1], [1] * 7]


def test_a_closed_connection_brings_back_the_renewal_on_every_heartbeat(
    service_store: Store,
) -> None:
    (member,) = _consumer_group(service_store, NOW, 1)
    connection_id = _connect(service_store, member, NOW)
    assert _writes([member], NOW, 3) == [[1, 0, 0]]
    later = NOW + 3 * (CONNECTED_INTERVAL_MS + 50)
    close_connection(service_store, connection_id, later, crashed=False)  # an orderly close
    # Its last renewal's deadline still covers the next beats; then each beat writes.
    (writes,) = _writes([member], later, 5)
    assert writes[-3:] == [1, 1, 1]


def test_a_silent_connected_member_is_removed_between_a_session_and_the_slack_later(
    service_store: Store,
) -> None:
    settings = service_store.settings
    session = settings.group_consumer_session_timeout_ms
    slack = member_renewal_slack_ms(
        settings.group_consumer_heartbeat_interval_ms,
        settings.session_renewal_skips,
        session,
        connected=True,
    )
    assert slack == 37_500  # 2.5 connected intervals
    (member,) = _consumer_group(service_store, NOW, 1)
    _connect(service_store, member, NOW)
    renewed = NOW + CONNECTED_INTERVAL_MS
    answer, usage = member.beat(renewed)  # renews with the connected slack, then host lost
    assert answer["errorCode"] == 0 and usage.write_units == 1, usage.by_operation
    alive = {member.member_id}
    assert _consumer_members(service_store, member.group_id, renewed + session + slack - 1) == alive
    assert _consumer_members(service_store, member.group_id, renewed + session + slack) == set()


def test_a_connected_streams_member_renews_every_third_heartbeat(store: Store) -> None:
    settings = replace(
        store.settings,
        group_streams_initial_rebalance_delay_ms=0,
        group_streams_assignment_interval_ms=0,
    )
    store = Store(store.dynamo, settings)
    assert settings.group_streams_heartbeat_interval_ms * 3 == CONNECTED_INTERVAL_MS
    group, epochs = _settled_group(store, 2, NOW)
    open_connection(store, "c-streams=", group, "m-0", "", "h", NOW)
    writes: dict[str, list[int]] = {"m-0": [], "m-1": []}  # m-1 has no connection
    for i in range(1, 7):
        for member, found in writes.items():
            body = {"groupId": group, "memberId": member, "memberEpoch": epochs[member]}
            with capacity.metered() as usage:
                answer = _heartbeat(store, body, NOW + i * (CONNECTED_INTERVAL_MS + 50))
            assert answer["errorCode"] == 0, answer
            found.append(usage.by_operation.get("put_item", 0))
    assert writes == {"m-0": [1, 0, 0, 1, 0, 0], "m-1": [1] * 6}
