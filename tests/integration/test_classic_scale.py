"""A classic group too big for one transaction: its barrier still completes atomically enough
(idempotent member writes first, the group flip last); and a big group's rebalance does not
write its group item once per join (no hot key): known members' joins are counted on per-shard
counter items, and the last join closes the barrier."""

from __future__ import annotations

import time
from dataclasses import replace

from groupcoord import runtime
from groupcoord.core.classic.model import (
    COMPLETING_REBALANCE,
    PREPARING_REBALANCE,
    STABLE,
    ClassicGroup,
    ClassicMember,
    Protocol,
)
from groupcoord.core.timer_checks import CLAIM_FROM_MEMBERS
from groupcoord.errors import Errors
from groupcoord.local.seed import write_classic_group
from groupcoord.models.classic import JoinGroupRequest, JoinGroupResponse, LeaveGroupRequest
from groupcoord.service.classic.join import join_group
from groupcoord.service.classic.leave import leave_group
from groupcoord.service.classic_group import load, settle
from groupcoord.service.context import ApiContext
from groupcoord.service.handlers_types import Accepted
from groupcoord.store import capacity, schema
from groupcoord.store.classic.transition import ClassicTransition
from groupcoord.store.codecs.classic import member_items
from groupcoord.store.store import Store

MEMBERS = 250


# Long enough that no member's session or the barrier runs out while a test drives hundreds of
# joins one after another on a slow or busy machine (at 30 s, a full CI run's late, loaded
# endpoint let the 250-member rejoin outlive the sessions).
SESSION_MS = 300_000
REBALANCE_MS = 600_000


def _members(count: int, generation: int, now: int) -> list[ClassicMember]:
    return [
        ClassicMember(
            member_id=f"m-{i:04d}",
            session_timeout_ms=SESSION_MS,
            rebalance_timeout_ms=REBALANCE_MS,
            expiry_ms=SESSION_MS,
            protocol_type="consumer",
            protocols=(Protocol("range", b""),),
            joined_generation=generation,
            member_generation=generation,
            joined_at_ms=now - 1000 + i,
            session_deadline_ms=now + SESSION_MS,
        )
        for i in range(count)
    ]


def _write(store: Store, group: ClassicGroup, members: list[ClassicMember]) -> None:
    """Members as the protocol leaves them: member and payload items."""
    store.dynamo.batch_write(puts=[i for m in members for i in member_items(group, m)])


def _stable_group(
    store: Store,
    group_id: str,
    members: list[ClassicMember],
    next_check_ms: int,
    generation: int = 3,
) -> None:
    """A Stable group with these members, written as the protocol leaves it."""
    write_classic_group(
        store,
        group_id,
        members,
        protocol="range",
        rebalance_timeout_ms=REBALANCE_MS,
        next_check_ms=next_check_ms,
        generation=generation,
    )


def test_a_join_barrier_of_250_members_completes(service_store: Store) -> None:
    now = 1_000_000
    group = ClassicGroup(
        group_id="big",
        state=PREPARING_REBALANCE,
        generation=4,
        protocol_type="consumer",
        member_count=MEMBERS,
        protocol_counts={"range": MEMBERS},
        rebalance_timeout_ms=REBALANCE_MS,
        rebalance_started_ms=now - 10,
        join_deadline_ms=now + REBALANCE_MS,
        member_shards=service_store.settings.member_shards,
        # Due: the timer check lists the members and counts their joins itself (what heals a
        # join count that a crash lost).
        next_check_ms=now,
    )
    members = [replace(m, session_deadline_ms=now + 100) for m in _members(MEMBERS, 5, now)]
    groups = service_store.classic
    groups.commit(ClassicTransition(group=group, expected_version=None))
    _write(service_store, group, members)

    loaded = load(service_store, "big")
    assert loaded is not None
    settled = settle(service_store, loaded, now)

    assert settled.state == COMPLETING_REBALANCE
    assert settled.generation == 5
    assert settled.member_count == MEMBERS
    assert settled.leader == "m-0000"  # the first to join
    after = {m.member_id: m for m in groups.members(settled, payloads=False)}
    assert len(after) == MEMBERS
    # Every member's session restarted with the new generation, beyond one transaction's reach.
    assert all(m.session_deadline_ms == now + SESSION_MS for m in after.values())
    assert all(m.joined_generation == 5 for m in after.values())


def _join(store: Store, member_id: str) -> JoinGroupResponse | Accepted:
    # No hold: a join that does not close the barrier answers 202 at once.
    settings = replace(store.settings, barrier_hold_ms=0)
    ctx = ApiContext(settings=settings, store=store, now_ms=runtime.now_ms(), endpoint="http://x")
    request = JoinGroupRequest.model_validate(
        {
            "groupId": "rejoin",
            "memberId": member_id,
            "sessionTimeoutMs": SESSION_MS,
            "rebalanceTimeoutMs": REBALANCE_MS,
            "protocolType": "consumer",
            # New metadata, as a consumer's Subscription carries its generation and partitions.
            "protocols": [{"name": "range", "metadata": "djI="}],
        }
    )
    return join_group(request, ctx)


def test_known_members_rejoining_a_250_member_group_never_write_its_group_item(
    service_store: Store,
) -> None:
    now = runtime.now_ms()
    _stable_group(
        service_store, "rejoin", _members(MEMBERS, 4, now), now + SESSION_MS, generation=4
    )
    groups = service_store.classic
    group_key = schema.group_key("rejoin")[schema.PK]
    ids = [f"m-{i:04d}" for i in range(MEMBERS)]

    # The first rejoin (new metadata) starts the rebalance: that writes the group item.
    first = _join(service_store, ids[0])
    assert isinstance(first, Accepted)
    started = load(service_store, "rejoin")
    assert started is not None and started.state == PREPARING_REBALANCE

    # Every other known member's join registers without writing the group item.
    for member_id in ids[1:-1]:
        with capacity.metered() as usage:
            answer = _join(service_store, member_id)
        assert isinstance(answer, Accepted), answer
        assert group_key not in usage.writes_by_key, usage.writes_by_key
        # Its payload item (new metadata), its member item and its shard's join counter: one
        # write each.
        assert sum(usage.writes_by_key.values()) == 3, usage.writes_by_key
    # A re-sent join (after the 202) is registered already: it writes no group item either.
    with capacity.metered() as usage:
        assert isinstance(_join(service_store, ids[1]), Accepted)
    assert group_key not in usage.writes_by_key
    waiting = load(service_store, "rejoin")
    assert waiting is not None
    assert (waiting.state, waiting.version) == (PREPARING_REBALANCE, started.version)

    # The last one closes the barrier at once (not at the rebalance timeout) and is answered.
    last = _join(service_store, ids[-1])
    assert isinstance(last, JoinGroupResponse) and last.error_code == Errors.NONE
    assert last.generation_id == 5
    closed = load(service_store, "rejoin")
    assert closed is not None
    assert (closed.state, closed.generation, closed.member_count) == (
        COMPLETING_REBALANCE,
        5,
        MEMBERS,
    )
    assert all(m.joined_generation == 5 for m in groups.members(closed, payloads=False))
    # The others, re-sending, get the new generation; the old leader leads again.
    again = _join(service_store, ids[0])
    assert isinstance(again, JoinGroupResponse) and again.generation_id == 5
    assert again.leader == ids[0] and len(again.members) == MEMBERS


def test_a_leave_during_the_barrier_uncounts_its_join(service_store: Store) -> None:
    """Three members: b joins and leaves again; the barrier must then wait for c (a count
    that kept b's join would close it without c), and close when c joins."""
    now = runtime.now_ms()
    _stable_group(service_store, "rejoin", _members(3, 4, now), now + SESSION_MS, generation=4)
    groups = service_store.classic
    a, b, c = "m-0000", "m-0001", "m-0002"
    assert isinstance(_join(service_store, a), Accepted)  # starts the rebalance
    assert isinstance(_join(service_store, b), Accepted)

    ctx = ApiContext(
        settings=service_store.settings,
        store=service_store,
        now_ms=runtime.now_ms(),
        endpoint="http://x",
    )
    request = LeaveGroupRequest.model_validate({"groupId": "rejoin", "members": [{"memberId": b}]})
    left = leave_group(request, ctx)
    assert left.members[0].error_code == Errors.NONE
    after_leave = load(service_store, "rejoin")
    assert after_leave is not None
    assert (after_leave.state, after_leave.member_count) == (PREPARING_REBALANCE, 2)
    assert groups.join_count(after_leave) == 1  # a's join only

    answer = _join(service_store, c)
    assert isinstance(answer, JoinGroupResponse) and answer.generation_id == 5
    closed = load(service_store, "rejoin")
    assert closed is not None and closed.state == COMPLETING_REBALANCE
    assert sorted(m.member_id for m in groups.members(closed, payloads=False)) == [a, c]


def test_a_lost_join_count_is_healed_by_the_next_timer_check(service_store: Store) -> None:
    """A crash between a member's join and its count (crash recovery): every member has joined
    but the counters are one short; the group's next timer check lists the members and closes
    the barrier, well before the rebalance timeout."""
    now = runtime.now_ms()
    group = ClassicGroup(
        group_id="lost",
        state=PREPARING_REBALANCE,
        generation=4,
        protocol_type="consumer",
        member_count=2,
        protocol_counts={"range": 2},
        rebalance_timeout_ms=600_000,
        rebalance_started_ms=now - 10,
        join_deadline_ms=now + 600_000,
        member_shards=service_store.settings.member_shards,
        next_check_ms=now + 300,
    )
    groups = service_store.classic
    groups.commit(ClassicTransition(group=group, expected_version=None))
    members = _members(2, 5, now)  # both joined for generation 5 ...
    _write(service_store, group, members)
    loaded = load(service_store, "lost")
    assert loaded is not None
    assert groups.join_count(loaded) == 0  # ... but neither join was counted
    assert settle(service_store, loaded, now, count_joins=True).state == PREPARING_REBALANCE

    deadline = time.monotonic() + 10
    while True:
        current = load(service_store, "lost")
        assert current is not None
        current = settle(service_store, current, runtime.now_ms())
        if current.state == COMPLETING_REBALANCE:
            break
        assert time.monotonic() < deadline, "the timer check did not close the barrier"
        time.sleep(0.05)
    assert current.generation == 5 and current.member_count == 2


def test_a_due_timer_check_is_claimed_by_one_request(service_store: Store) -> None:
    """Requests that find a group's timer check due do not all list its members (no hot
    key): the first claims the check; one that read the group before the claim goes on without
    scanning; a claimant that died leaves the check due again once its claim ends."""
    from groupcoord.service.classic_group import CHECK_CLAIM_MS

    now = runtime.now_ms()
    count = CLAIM_FROM_MEMBERS
    members = _members(count, 3, now)
    members[-1] = replace(members[-1], session_deadline_ms=now - 5)  # dead
    members[-2] = replace(members[-2], session_deadline_ms=now + 100)  # dies in 100 ms
    _stable_group(service_store, "claimed", members, next_check_ms=now - 5)
    groups = service_store.classic

    first, second = load(service_store, "claimed"), load(service_store, "claimed")
    assert first is not None and second is not None
    with capacity.metered() as usage:
        settled = settle(service_store, first, now)
    assert settled.state == PREPARING_REBALANCE and settled.member_count == count - 1
    assert usage.by_operation.get("query", 0) >= 1  # it listed the members
    with capacity.metered() as usage:
        settle(service_store, second, now)  # read before the claim: no second listing
    assert usage.by_operation.get("query", 0) == 0

    # A claimant that dies: the check is due again only once its claim has run out.
    later = now + 200
    fresh = load(service_store, "claimed")
    assert fresh is not None and fresh.next_check_ms is not None
    assert fresh.next_check_ms <= later
    assert groups.claim_check(fresh, later + CHECK_CLAIM_MS)  # then it crashes
    claimed = load(service_store, "claimed")
    assert claimed is not None
    assert settle(service_store, claimed, later).member_count == count - 1  # not due yet
    expired = settle(service_store, claimed, later + CHECK_CLAIM_MS)
    assert expired.member_count == count - 2


def test_a_small_groups_timer_check_is_one_write_and_applied_once(service_store: Store) -> None:
    """Below CLAIM_FROM_MEMBERS a due check is not claimed: it lists the members and writes the
    group once (one conditional UpdateItem when nobody expired, no transaction). A request that
    read the group before it lists them too, but its write loses to the first one's and the
    check's result is applied once."""
    now = runtime.now_ms()
    count = 10
    members = _members(count, 3, now)
    _stable_group(service_store, "small", members, next_check_ms=now - 5)
    first, second = load(service_store, "small"), load(service_store, "small")
    assert first is not None and second is not None
    with capacity.metered() as usage:
        settled = settle(service_store, first, now)
    assert settled.state == STABLE and settled.member_count == count
    assert settled.next_check_ms is not None and settled.next_check_ms > now
    assert usage.by_operation == {"query": service_store.settings.member_shards, "update_item": 1}
    with capacity.metered() as usage:
        again = settle(service_store, second, now)  # read before the first check's write
    assert usage.by_operation.get("update_item", 0) == 1  # its one write, refused
    assert again.version == settled.version and again.next_check_ms == settled.next_check_ms

    # A member found dead: removed once, whichever of two requests that read the group first
    # gets there.
    later = now + SESSION_MS + 1_000
    for member in members[1:]:
        service_store.classic.renew_session(settled, member.member_id, later + SESSION_MS)
    stale, other = load(service_store, "small"), load(service_store, "small")
    assert stale is not None and other is not None
    expired = settle(service_store, stale, later)
    assert expired.state == PREPARING_REBALANCE and expired.member_count == count - 1
    assert settle(service_store, other, later).member_count == count - 1
    final = load(service_store, "small")
    assert final is not None and final.member_count == count - 1
    assert final.version == expired.version


def test_a_leave_does_not_list_the_members(service_store: Store) -> None:
    """A leave from a Stable group writes the group on a bound of its next timer check instead
    of reading every member (no hot key); the check then fires no later than any remaining
    member's session deadline."""
    now = runtime.now_ms()
    count = 40
    members = _members(count, 3, now)
    _stable_group(service_store, "leaving", members, next_check_ms=now + SESSION_MS)
    ctx = ApiContext(
        settings=service_store.settings, store=service_store, now_ms=now, endpoint="http://x"
    )
    request = LeaveGroupRequest.model_validate(
        {"groupId": "leaving", "members": [{"memberId": "m-0007"}]}
    )
    with capacity.metered() as usage:
        left = leave_group(request, ctx)
    assert left.members[0].error_code == Errors.NONE
    assert usage.by_operation.get("query", 0) == 0
    after = load(service_store, "leaving")
    assert after is not None
    assert (after.state, after.member_count) == (PREPARING_REBALANCE, count - 1)
    assert after.next_check_ms is not None
    assert after.next_check_ms <= min(m.session_deadline_ms for m in members)
