"""The classic protocol's pure rules: protocol vote, join barrier, leader choice, timers,
member removal (core/classic/rules.py)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from groupcoord.core.classic.model import (
    COMPLETING_REBALANCE,
    EMPTY,
    PREPARING_REBALANCE,
    STABLE,
    ClassicGroup,
    ClassicMember,
    Protocol,
)
from groupcoord.core.classic.rules import (
    barrier_due,
    barrier_ready,
    check_join_request,
    complete_join,
    due_work,
    expire,
    expiry_ms,
    extend_initial_delay,
    heartbeat_interval_ms,
    joined_count,
    may_count_joins,
    needs_members,
    next_check_ms,
    past_initial_delay,
    remove_members,
    settle_due,
    start_rebalance,
    supports_protocols,
    uncounted_joins,
    vote_protocol,
    with_member_protocols,
)
from groupcoord.errors import Errors
from groupcoord.settings import Settings

NOW = 1_000_000


def member(member_id: str, *protocols: str, **kwargs) -> ClassicMember:
    kwargs.setdefault("expiry_ms", 1000)
    kwargs.setdefault("rebalance_timeout_ms", 5000)
    return ClassicMember(
        member_id=member_id,
        protocol_type="consumer",
        protocols=tuple(Protocol(p, p.encode()) for p in protocols or ("range",)),
        **kwargs,
    )


def group(**kwargs) -> ClassicGroup:
    kwargs.setdefault("group_id", "g")
    kwargs.setdefault("rebalance_timeout_ms", 5000)
    return ClassicGroup(**kwargs)


def preparing(generation: int = 3, members: int = 3, **kwargs) -> ClassicGroup:
    return group(
        state=PREPARING_REBALANCE,
        generation=generation,
        member_count=members,
        rebalance_started_ms=NOW - 100,
        join_deadline_ms=NOW + 4900,
        protocol_type="consumer",
        **kwargs,
    )


def joined(m: ClassicMember, generation: int, at: int) -> ClassicMember:
    return replace(m, joined_generation=generation, joined_at_ms=at)


# --- vote_protocol ---


def test_vote_picks_each_members_first_choice_among_the_common_protocols() -> None:
    members = [
        member("a", "sticky", "range", "roundrobin"),
        member("b", "roundrobin", "range"),
        member("c", "roundrobin", "sticky", "range"),
    ]
    # Common: range, roundrobin. Votes: a -> range, b -> roundrobin, c -> roundrobin.
    assert vote_protocol(members) == "roundrobin"


def test_vote_tie_goes_to_the_earliest_members_choice() -> None:
    members = [member("a", "range", "roundrobin"), member("b", "roundrobin", "range")]
    assert vote_protocol(members) == "range"
    assert vote_protocol(list(reversed(members))) == "roundrobin"


def test_vote_without_a_common_protocol_is_an_error() -> None:
    with pytest.raises(ValueError):
        vote_protocol([member("a", "range"), member("b", "sticky")])


# --- supports_protocols and the join request checks ---


def test_an_empty_group_supports_anything() -> None:
    assert supports_protocols(group(), "connect", ["x"])


def test_protocol_type_and_one_protocol_supported_by_every_member() -> None:
    g = group(member_count=2, protocol_type="consumer", protocol_counts={"range": 2, "rr": 1})
    assert supports_protocols(g, "consumer", ["sticky", "range"])
    assert not supports_protocols(g, "consumer", ["rr"])
    assert not supports_protocols(g, "connect", ["range"])
    # A member replacing itself only needs what the others support.
    lone = group(member_count=1, protocol_type="consumer", protocol_counts={"range": 1})
    assert supports_protocols(lone, "consumer", ["sticky"], replacing=1)


def test_with_member_protocols_counts_each_name_once_per_member() -> None:
    counts = with_member_protocols({}, added=["range", "range", "rr"])
    assert counts == {"range": 1, "rr": 1}
    assert with_member_protocols(counts, removed=["rr"]) == {"range": 1}


@pytest.mark.parametrize(
    ("group_id", "session", "names", "error"),
    [
        ("", 10000, ["range"], Errors.INVALID_GROUP_ID),
        ("g", 5999, ["range"], Errors.INVALID_SESSION_TIMEOUT),
        ("g", 1_800_001, ["range"], Errors.INVALID_SESSION_TIMEOUT),
        ("g", 10000, [], Errors.INCONSISTENT_GROUP_PROTOCOL),
        ("g", 6000, ["range"], None),
        ("g", 1_800_000, ["range"], None),
    ],
)
def test_check_join_request(group_id: str, session: int, names: list[str], error) -> None:
    assert check_join_request(group_id, session, "consumer", names, Settings()) == error


def test_heartbeat_interval_and_expiry_from_frequency_and_threshold() -> None:
    assert heartbeat_interval_ms(10000, 3) == 3333
    assert expiry_ms(10000, 3, 3) == 10000  # the defaults: the session timeout
    assert expiry_ms(6000, 20, 1) == 300
    assert expiry_ms(200, 1, 10) == 2000


# --- start_rebalance and the initial delay ---


def test_start_rebalance_arms_the_join_deadline_and_the_initial_delay_only_when_empty() -> None:
    empty = start_rebalance(group(rebalance_timeout_ms=5000), NOW)
    assert (empty.state, empty.join_deadline_ms, empty.initial_delay_until_ms) == (
        PREPARING_REBALANCE,
        NOW + 5000,
        NOW,
    )
    stable = start_rebalance(group(state=STABLE, generation=4), NOW)
    assert stable.initial_delay_until_ms is None
    assert stable.rebalance_started_ms == NOW  # a new barrier: its joins are counted afresh
    assert start_rebalance(empty, NOW + 10) is empty  # already preparing: unchanged


def test_initial_delay_is_extended_by_new_members_but_capped_by_the_rebalance_timeout() -> None:
    settings = Settings(group_initial_rebalance_delay_ms=3000)
    g = extend_initial_delay(start_rebalance(group(rebalance_timeout_ms=5000), NOW), NOW, settings)
    assert g.initial_delay_until_ms == NOW + 3000
    g = extend_initial_delay(g, NOW + 1000, settings)
    assert g.initial_delay_until_ms == NOW + 4000
    g = extend_initial_delay(g, NOW + 4000, settings)
    assert g.initial_delay_until_ms == NOW + 5000  # capped


def test_a_later_members_longer_rebalance_timeout_does_not_move_the_initial_delays_cap() -> None:
    # As Kafka's InitialDelayedJoin: the first member's 1,500 ms bound the delay, whatever
    # newcomers bring.
    settings = Settings(group_initial_rebalance_delay_ms=1000)
    g = extend_initial_delay(start_rebalance(group(rebalance_timeout_ms=1500), NOW), NOW, settings)
    for arrival in range(250, 6000, 250):
        g = replace(g, rebalance_timeout_ms=60_000)  # raised by a newcomer (joining.py)
        g = extend_initial_delay(g, NOW + arrival, settings)
        assert g.initial_delay_until_ms is not None
        assert g.initial_delay_until_ms <= NOW + 1500
    assert g.initial_delay_until_ms == NOW + 1500
    assert barrier_due(g, NOW + 1500)


# --- barrier_ready ---


def test_barrier_is_ready_when_every_member_rejoined() -> None:
    assert barrier_ready(preparing(members=3), NOW, joined=3)
    assert not barrier_ready(preparing(members=3), NOW, joined=2)


def test_barrier_is_ready_at_the_rebalance_timeout_even_if_members_are_missing() -> None:
    g = preparing(members=3)
    assert not barrier_ready(g, NOW + 4899, joined=1)
    assert barrier_ready(g, NOW + 4900, joined=1)
    assert not barrier_due(g, NOW + 4899)
    assert barrier_due(g, NOW + 4900)  # closes whatever the joins: no count needed


def test_barrier_waits_for_the_initial_delay() -> None:
    g = preparing(members=1, initial_delay_until_ms=NOW + 200)
    assert not barrier_ready(g, NOW + 199, joined=1)
    assert not past_initial_delay(g, NOW + 199)
    assert barrier_ready(g, NOW + 200, joined=1)


def test_barrier_is_only_in_preparing_rebalance() -> None:
    for state in (EMPTY, COMPLETING_REBALANCE, STABLE):
        assert not barrier_ready(replace(preparing(), state=state), NOW, joined=3)
        assert not barrier_due(replace(preparing(), state=state, member_count=0), NOW)


def test_a_barrier_with_nobody_left_to_wait_for_is_due_after_the_initial_delay() -> None:
    assert barrier_due(preparing(members=0), NOW)
    assert not barrier_due(preparing(members=0, initial_delay_until_ms=NOW + 1), NOW)
    assert not barrier_due(preparing(members=1), NOW)


def test_joined_count_counts_registered_joins_for_the_pending_generation_only() -> None:
    g = preparing(generation=3)
    members = [
        joined(member("a"), 4, NOW - 10),
        joined(member("b"), 3, NOW - 1000),  # not rejoined yet
        joined(member("c", pending=True), 4, NOW - 5),  # an id handed out, not a member
        joined(member("d"), 4, NOW - 1),
    ]
    assert joined_count(g, members) == 2
    assert joined_count(replace(g, state=STABLE), members) == 0


def test_uncounted_joins_are_the_leavers_that_had_joined_the_open_barrier() -> None:
    g = preparing(generation=3)
    leavers = [joined(member("a"), 4, NOW - 10), joined(member("b"), 3, NOW - 1000)]
    assert uncounted_joins(g, leavers) == ["a"]
    assert uncounted_joins(replace(g, state=STABLE), leavers) == []


# --- complete_join ---


def test_complete_join_keeps_the_old_leader_if_it_rejoined() -> None:
    g = preparing(generation=3, leader="b")
    members = [joined(member("a"), 4, NOW - 50), joined(member("b"), 4, NOW - 10)]
    done = complete_join(g, members, NOW)
    assert done.group.leader == "b"
    assert done.group.generation == 4
    assert done.group.state == COMPLETING_REBALANCE
    assert done.group.sync_deadline_ms == NOW + 5000


def test_complete_join_picks_the_first_member_to_rejoin_when_the_leader_did_not() -> None:
    g = preparing(generation=3, leader="gone", members=3)
    members = [
        joined(member("late"), 4, NOW - 10),
        joined(member("early"), 4, NOW - 90),
        joined(member("gone"), 3, NOW - 1000),  # dynamic, did not rejoin
    ]
    done = complete_join(g, members, NOW)
    assert done.group.leader == "early"
    assert [m.member_id for m in done.removed] == ["gone"]
    assert [m.member_id for m in done.members] == ["early", "late"]
    assert done.group.member_count == 2


def test_complete_join_keeps_static_members_that_did_not_rejoin_and_never_leads_them() -> None:
    g = preparing(generation=3, leader="s", members=2)
    members = [
        joined(member("s", instance_id="i-1"), 3, NOW - 1000),
        joined(member("d"), 4, NOW - 10),
    ]
    done = complete_join(g, members, NOW)
    assert done.removed == []
    assert done.group.leader == "d"
    assert {m.member_id: m.joined_generation for m in done.members} == {"d": 4, "s": 4}


def test_complete_join_votes_the_protocol_and_counts_the_survivors_protocols() -> None:
    g = preparing(generation=0, members=2)
    members = [
        joined(member("a", "sticky", "range"), 1, NOW - 20),
        joined(member("b", "range", "sticky"), 1, NOW - 10),
    ]
    done = complete_join(g, members, NOW)
    assert done.group.protocol_name == "sticky"  # tie: the earliest member's choice
    assert done.group.protocol_counts == {"sticky": 2, "range": 2}


def test_complete_join_renews_every_survivors_session() -> None:
    g = preparing(generation=1, members=1)
    stale = joined(member("a", expiry_ms=700, session_deadline_ms=NOW - 5), 2, NOW - 900)
    done = complete_join(g, [stale], NOW)
    assert done.members[0].session_deadline_ms == NOW + 700


def test_complete_join_with_nobody_left_empties_the_group_at_the_next_generation() -> None:
    g = preparing(generation=5, members=1, leader="a")
    done = complete_join(g, [joined(member("a"), 5, NOW - 10_000)], NOW)
    assert done.group.state == EMPTY
    assert done.group.generation == 6
    assert (done.group.leader, done.group.protocol_name, done.group.protocol_type) == (
        None,
        None,
        None,
    )
    assert done.group.empty_since_ms == NOW


def test_complete_join_ignores_pending_members() -> None:
    g = preparing(generation=0, members=1)
    pending = member("p", pending=True)
    done = complete_join(g, [joined(member("a"), 1, NOW - 10), pending], NOW)
    assert [m.member_id for m in done.members] == ["a"]
    assert done.removed == []


# --- expire ---


def test_expire_removes_members_whose_session_ran_out_and_rebalances() -> None:
    g = group(state=STABLE, generation=2, member_count=2, leader="a", protocol_type="consumer")
    alive = replace(member("a"), session_deadline_ms=NOW + 1, joined_generation=2)
    dead = replace(member("b"), session_deadline_ms=NOW, joined_generation=2)
    result = expire(g, [alive, dead], NOW)
    assert [m.member_id for m in result.removed] == ["b"]
    assert result.group.state == PREPARING_REBALANCE
    assert result.group.member_count == 1
    assert result.group.leader == "a"


def test_expire_keeps_members_waiting_at_a_barrier() -> None:
    g = preparing(generation=2, members=1)
    waiting = replace(member("a"), session_deadline_ms=NOW - 1, joined_generation=3)
    assert expire(g, [waiting], NOW).removed == []
    completing = group(state=COMPLETING_REBALANCE, generation=3, member_count=1)
    synced = replace(waiting, synced_generation=3)
    assert expire(completing, [synced], NOW).removed == []
    unsynced = replace(waiting, synced_generation=2)
    assert [m.member_id for m in expire(completing, [unsynced], NOW).removed] == ["a"]


def test_expire_removes_members_that_did_not_sync_by_the_sync_deadline() -> None:
    g = group(
        state=COMPLETING_REBALANCE,
        generation=3,
        member_count=2,
        leader="a",
        sync_deadline_ms=NOW,
        protocol_type="consumer",
    )
    leader = replace(member("a"), session_deadline_ms=NOW + 10_000, synced_generation=2)
    follower = replace(member("b"), session_deadline_ms=NOW + 10_000, synced_generation=3)
    result = expire(g, [leader, follower], NOW)
    assert [m.member_id for m in result.removed] == ["a"]
    assert result.group.state == PREPARING_REBALANCE
    assert result.group.leader is None


def test_a_passed_sync_deadline_with_everyone_synced_is_just_cleared() -> None:
    g = group(state=STABLE, generation=3, member_count=1, sync_deadline_ms=NOW)
    synced = replace(member("a"), session_deadline_ms=NOW + 10_000, synced_generation=3)
    result = expire(g, [synced], NOW)
    assert result.removed == []
    assert result.group.sync_deadline_ms is None
    assert result.group.state == STABLE


def test_expire_drops_pending_member_ids_after_their_session_timeout() -> None:
    g = group(state=EMPTY)
    old = member("p", pending=True, session_deadline_ms=NOW)
    fresh = member("q", pending=True, session_deadline_ms=NOW + 1)
    result = expire(g, [old, fresh], NOW)
    assert [m.member_id for m in result.removed_pending] == ["p"]
    assert result.removed == []
    assert result.group == g


# --- remove_members ---


def test_removing_members_from_a_stable_group_starts_a_rebalance() -> None:
    g = group(
        state=STABLE,
        generation=4,
        member_count=3,
        leader="a",
        protocol_counts={"range": 3},
        protocol_type="consumer",
    )
    shrunk = remove_members(g, [member("a"), member("b")], NOW)
    assert shrunk.state == PREPARING_REBALANCE
    assert shrunk.member_count == 1
    assert shrunk.leader is None
    assert shrunk.protocol_counts == {"range": 1}
    assert shrunk.join_deadline_ms == NOW + 5000


def test_removing_the_last_member_empties_the_group_and_bumps_the_generation() -> None:
    g = group(state=STABLE, generation=4, member_count=1, leader="a", protocol_type="consumer")
    emptied = remove_members(g, [member("a")], NOW)
    assert emptied.state == EMPTY
    assert emptied.generation == 5
    assert emptied.protocol_type is None
    assert emptied.empty_since_ms == NOW


def test_removing_a_member_that_had_rejoined_during_preparing_rebalance() -> None:
    g = preparing(generation=4, members=3)
    rejoined = joined(member("a"), 5, NOW - 10)
    not_rejoined = joined(member("b"), 4, NOW - 1000)
    remaining = joined(member("c"), 5, NOW - 20)
    shrunk = remove_members(g, [rejoined, not_rejoined], NOW)
    assert (shrunk.state, shrunk.member_count) == (PREPARING_REBALANCE, 1)
    assert uncounted_joins(g, [rejoined, not_rejoined]) == ["a"]
    # the remaining member had rejoined: complete
    assert barrier_ready(shrunk, NOW, joined=joined_count(shrunk, [remaining]))


# --- next_check_ms ---


def test_next_check_is_the_earliest_timer() -> None:
    g = preparing(generation=1, members=2, initial_delay_until_ms=NOW + 50)
    waiting = replace(member("a", session_deadline_ms=NOW + 10), joined_generation=2)
    idle = replace(member("b", session_deadline_ms=NOW + 300), joined_generation=1)
    pending = member("p", pending=True, session_deadline_ms=NOW + 100)
    # A member waiting at the barrier has no session timer running.
    assert next_check_ms(g, [waiting, idle, pending], NOW) == NOW + 50
    assert next_check_ms(g, [waiting, idle, pending], NOW + 60) == NOW + 100
    assert next_check_ms(group(), [], NOW) is None


def test_a_members_protocols_digest_tells_new_metadata_without_the_payload() -> None:
    """The member item keeps a digest of the protocols' metadata (the metadata is on the
    payload item): a join compares digests, so any change of a name, a metadata byte or the
    order counts, and a member read without its payload answers with the stored digest."""
    full = ClassicMember("m", protocols=(Protocol("range", b"\x00\x01"), Protocol("rr", b"")))
    same = replace(full, protocols=(Protocol("range", b"\x00\x01"), Protocol("rr", b"")))
    assert full.protocols_digest == same.protocols_digest
    for other in (
        (Protocol("range", b"\x00\x02"), Protocol("rr", b"")),
        (Protocol("rr", b""), Protocol("range", b"\x00\x01")),
        (Protocol("range", b"\x00"), Protocol("\x01rr", b"")),
    ):
        assert replace(full, protocols=other).protocols_digest != full.protocols_digest
    light = ClassicMember(
        "m",
        protocols=(Protocol("range", b""), Protocol("rr", b"")),
        payload_loaded=False,
        stored_digest=full.protocols_digest,
    )
    assert light.protocols_digest == full.protocols_digest
    with pytest.raises(AssertionError):
        light.metadata_for("range")


# --- settle: what is due when a group is read ---


def test_nothing_is_due_on_a_quiet_stable_group() -> None:
    g = group(state=STABLE, generation=2, member_count=1, next_check_ms=NOW + 10)
    work = due_work(g, NOW)
    assert not work.any
    assert not needs_members(g, work, counted=False)


def test_a_due_timer_check_reads_the_members_and_expires_the_dead_ones() -> None:
    g = group(state=STABLE, generation=2, member_count=2, leader="a", next_check_ms=NOW)
    alive = replace(member("a"), session_deadline_ms=NOW + 500, joined_generation=2)
    dead = replace(member("b", instance_id="i-b"), session_deadline_ms=NOW, joined_generation=2)
    work = due_work(g, NOW)
    assert work.timers and needs_members(g, work, counted=False)
    settled = settle_due(g, [alive, dead], work, False, NOW)
    assert settled is not None
    assert [m.member_id for m in settled.removed] == ["b"]
    assert settled.group.state == PREPARING_REBALANCE and settled.group.member_count == 1
    assert settled.completion is None
    # The next check is the earliest timer left: the barrier's deadline or a's session.
    assert settled.group.next_check_ms == next_check_ms(settled.group, [alive], NOW)


def test_a_topic_change_rebalances_a_stable_group_without_reading_members() -> None:
    g = group(state=STABLE, generation=2, member_count=2, topic_changes=1)
    work = due_work(g, NOW)
    assert work.topic_change and not needs_members(g, work, counted=False)
    settled = settle_due(g, None, work, False, NOW)
    assert settled is not None and settled.group.state == PREPARING_REBALANCE
    assert settled.group.join_deadline_ms is not None
    assert settled.group.next_check_ms == settled.group.join_deadline_ms


def test_a_topic_change_during_a_rebalance_is_only_marked_seen() -> None:
    g = preparing(topic_changes=3, topic_changes_seen=2)
    settled = settle_due(g, None, due_work(g, NOW), False, NOW)
    assert settled is not None
    assert settled.group.topic_changes_seen == 3 and settled.group.state == PREPARING_REBALANCE


def test_counted_joins_close_the_barrier_when_every_member_is_on_its_item() -> None:
    g = preparing(generation=3, members=2)
    a, b = (joined(member(x), 4, NOW - 50) for x in "ab")
    work = due_work(g, NOW)
    assert not work.any and may_count_joins(g, work, NOW)
    assert needs_members(g, work, counted=True)
    settled = settle_due(g, [a, b], work, True, NOW)
    assert settled is not None and settled.completion is not None
    assert settled.group.generation == 4 and settled.group.state == COMPLETING_REBALANCE
    assert {m.member_id for m in settled.completion.members} == {"a", "b"}


def test_a_counted_join_not_yet_on_the_member_items_writes_nothing() -> None:
    g = preparing(generation=3, members=2)
    a = joined(member("a"), 4, NOW - 50)
    b = member("b", joined_generation=3)  # its counted join has not landed on its item
    assert settle_due(g, [a, b], due_work(g, NOW), True, NOW) is None


def test_the_barrier_closes_at_its_deadline_without_the_silent_member() -> None:
    g = replace(preparing(generation=3, members=2), join_deadline_ms=NOW)
    a = replace(joined(member("a"), 4, NOW - 50), session_deadline_ms=NOW + 1000)
    silent = replace(member("b", joined_generation=3), session_deadline_ms=NOW + 1000)
    work = due_work(g, NOW)
    assert work.barrier and needs_members(g, work, counted=False)
    settled = settle_due(g, [a, silent], work, False, NOW)
    assert settled is not None and settled.completion is not None
    assert [m.member_id for m in settled.removed] == ["b"]
    assert settled.group.generation == 4 and settled.group.member_count == 1
