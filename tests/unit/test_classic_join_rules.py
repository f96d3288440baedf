"""join-group's decisions (core/classic/joining.py): what a join does given what was read."""

from __future__ import annotations

from dataclasses import replace

from groupcoord.core.classic.joining import (
    HandOutMemberId,
    Joiner,
    JoinFacts,
    JoinOpenBarrier,
    JoinPlan,
    Refuse,
    Renew,
    WriteJoin,
    leads_a_rebalance,
    member_template,
    needs_instance_owner,
    needs_voters,
    plan_join,
    reads_member,
    replaced_member_id,
    with_resumed_timers,
)
from groupcoord.core.classic.model import (
    COMPLETING_REBALANCE,
    PREPARING_REBALANCE,
    STABLE,
    ClassicGroup,
    ClassicMember,
    Protocol,
    protocols_digest,
)
from groupcoord.errors import Errors
from groupcoord.models.classic import JoinGroupRequest, JoinGroupRequestProtocol
from groupcoord.settings import Settings

NOW = 1_000_000
SESSION = 9_000  # expiry 9,000 ms and heartbeat interval 3,000 ms with the defaults
NEW_ID = "client-new"
SETTINGS = Settings(group_initial_rebalance_delay_ms=3000, group_max_size=10)


def join_request(
    member_id: str = "",
    instance: str | None = None,
    protocols: tuple[tuple[str, bytes], ...] = (("range", b"sub"),),
    **kwargs: object,
) -> JoinGroupRequest:
    return JoinGroupRequest(
        group_id="g",
        session_timeout_ms=SESSION,
        member_id=member_id,
        group_instance_id=instance,
        protocol_type="consumer",
        protocols=[JoinGroupRequestProtocol(name=n, metadata=m) for n, m in protocols],
        **kwargs,
    )


def joiner(request: JoinGroupRequest) -> Joiner:
    return Joiner(request, client_id="client", client_host="/10.0.0.1")


def stored(
    member_id: str,
    protocols: tuple[tuple[str, bytes], ...] = (("range", b"sub"),),
    **kwargs: object,
) -> ClassicMember:
    """A member as its member item has it: protocol names and the digest of their metadata."""
    full = tuple(Protocol(n, m) for n, m in protocols)
    defaults: dict[str, object] = {
        "expiry_ms": SESSION,
        "session_timeout_ms": SESSION,
        "rebalance_timeout_ms": SESSION,
        "protocol_type": "consumer",
        "session_deadline_ms": NOW + 5_000,
    }
    return ClassicMember(
        member_id=member_id,
        protocols=tuple(Protocol(p.name, b"") for p in full),
        payload_loaded=False,
        stored_digest=protocols_digest(full),
        **{**defaults, **kwargs},  # type: ignore[arg-type]
    )


def in_generation(m: ClassicMember, generation: int) -> ClassicMember:
    return replace(
        m,
        joined_generation=generation,
        member_generation=generation,
        synced_generation=generation,
        joined_at_ms=NOW - 60_000,
    )


def new_group() -> ClassicGroup:
    return ClassicGroup(group_id="g", member_shards=8, created_at_ms=NOW, empty_since_ms=NOW)


def group(state: str = STABLE, members: int = 3, **kwargs: object) -> ClassicGroup:
    defaults: dict[str, object] = {
        "group_id": "g",
        "state": state,
        "generation": 3,
        "protocol_type": "consumer",
        "protocol_name": "range",
        "leader": "m1",
        "version": 7,
        "member_count": members,
        "protocol_counts": {"range": members},
        "rebalance_timeout_ms": SESSION,
        "next_check_ms": NOW + 20_000,
    }
    return ClassicGroup(**{**defaults, **kwargs})  # type: ignore[arg-type]


def preparing(**kwargs: object) -> ClassicGroup:
    barrier: dict[str, object] = {
        "rebalance_started_ms": NOW - 100,
        "join_deadline_ms": NOW + SESSION - 100,
    }
    return group(PREPARING_REBALANCE, **{**barrier, **kwargs})


def plan(request: JoinGroupRequest, facts: JoinFacts, settings: Settings = SETTINGS) -> JoinPlan:
    return plan_join(joiner(request), facts, NOW, settings, NEW_ID)


# --- the member template ---


def test_the_template_takes_the_requests_timeouts_protocols_and_client() -> None:
    request = join_request(
        instance="i1", heartbeat_frequency=4, failed_heartbeat_threshold=2, rebalance_timeout_ms=-1
    )
    m = member_template(joiner(request), "m1", NOW)
    assert (m.member_id, m.instance_id, m.client_id, m.client_host) == (
        "m1",
        "i1",
        "client",
        "/10.0.0.1",
    )
    assert m.rebalance_timeout_ms == SESSION  # -1: the session timeout, as in Kafka
    assert (m.expiry_ms, m.heartbeat_interval_ms) == (2 * SESSION // 4, SESSION // 4)
    assert m.session_deadline_ms == NOW + 2 * SESSION // 4
    assert m.protocols == (Protocol("range", b"sub"),)
    assert (m.joined_generation, m.pending) == (-1, False)


# --- which reads a join needs ---


def test_the_member_named_is_read_only_in_a_group_that_exists() -> None:
    assert reads_member(join_request("m1"), exists=True)
    assert not reads_member(join_request("m1"), exists=False)
    assert not reads_member(join_request(), exists=True)


def test_the_instance_owner_is_read_for_an_unknown_static_member_or_a_static_first_join() -> None:
    known = stored("m1", instance_id="i1")
    assert not needs_instance_owner(join_request("m1"), True, None, NOW)  # dynamic
    assert not needs_instance_owner(join_request("m1", "i1"), True, known, NOW)
    assert needs_instance_owner(join_request("m1", "i1"), True, None, NOW)
    expired = stored("m1", pending=True, session_deadline_ms=NOW)
    assert needs_instance_owner(join_request("m1", "i1"), True, expired, NOW)
    assert needs_instance_owner(join_request("", "i1"), True, None, NOW)
    assert not needs_instance_owner(join_request("", "i1"), False, None, NOW)  # a new group


def test_only_a_static_join_without_a_member_id_replaces_the_instance_owner() -> None:
    assert replaced_member_id(join_request("", "i1"), "m1") == "m1"
    assert replaced_member_id(join_request("", "i1"), None) is None
    assert replaced_member_id(join_request("m2", "i1"), "m1") is None  # fenced, not replaced


def test_voters_are_read_only_for_a_static_replacement_in_stable_that_passes_the_protocols() -> (
    None
):
    old = stored("m1", instance_id="i1")
    assert needs_voters(join_request("", "i1"), group(), old)
    assert not needs_voters(join_request("", "i1"), group(), None)
    assert not needs_voters(join_request("", "i1"), group(COMPLETING_REBALANCE), old)
    other = join_request("", "i1", protocols=(("roundrobin", b""),))
    assert not needs_voters(other, group(), old)  # refused with 23 first


# --- refusals ---


def test_an_unknown_member_is_refused_with_25() -> None:
    facts = JoinFacts(group(), exists=True, existing=None)
    assert plan(join_request("m9"), facts) == Refuse(Errors.UNKNOWN_MEMBER_ID, "m9")


def test_a_member_id_for_a_group_not_in_the_table_is_unknown() -> None:
    facts = JoinFacts(new_group(), exists=False)
    assert plan(join_request("m9", "i1"), facts) == Refuse(Errors.UNKNOWN_MEMBER_ID, "m9")


def test_a_static_instance_owned_by_another_member_id_is_fenced_with_82() -> None:
    facts = JoinFacts(group(), exists=True, existing=None, instance_owner="m2")
    assert plan(join_request("m9", "i1"), facts) == Refuse(Errors.FENCED_INSTANCE_ID, "m9")
    # Its own instance, its member item gone: unknown.
    facts = JoinFacts(group(), exists=True, existing=None, instance_owner="m9")
    assert plan(join_request("m9", "i1"), facts) == Refuse(Errors.UNKNOWN_MEMBER_ID, "m9")


def test_a_known_member_joining_with_another_instance_id_is_fenced() -> None:
    facts = JoinFacts(group(), exists=True, existing=stored("m1", instance_id="i1"))
    assert plan(join_request("m1", "i2"), facts) == Refuse(Errors.FENCED_INSTANCE_ID, "m1")


def test_a_pending_member_id_past_its_deadline_is_unknown() -> None:
    expired = stored("p1", pending=True, session_deadline_ms=NOW)
    facts = JoinFacts(group(), exists=True, existing=expired)
    assert plan(join_request("p1"), facts) == Refuse(Errors.UNKNOWN_MEMBER_ID, "p1")


def test_protocols_the_other_members_do_not_all_support_are_refused_with_23() -> None:
    facts = JoinFacts(group(), exists=True)
    other = join_request(protocols=(("roundrobin", b""),))
    assert plan(other, facts) == Refuse(Errors.INCONSISTENT_GROUP_PROTOCOL, "")
    connect = join_request().model_copy(update={"protocol_type": "connect"})
    assert plan(connect, facts) == Refuse(Errors.INCONSISTENT_GROUP_PROTOCOL, "")


def test_a_full_group_refuses_new_members_with_81() -> None:
    full = JoinFacts(group(members=10), exists=True)
    assert plan(join_request(), full) == Refuse(Errors.GROUP_MAX_SIZE_REACHED, "")
    assert plan(join_request("", "i1"), full) == Refuse(Errors.GROUP_MAX_SIZE_REACHED, "")
    pending = stored("p1", pending=True, session_deadline_ms=NOW + 1)
    second = JoinFacts(group(members=10), exists=True, existing=pending)
    assert plan(join_request("p1"), second) == Refuse(Errors.GROUP_MAX_SIZE_REACHED, "p1")


# --- the two-step join ---


def test_a_dynamic_first_join_gets_a_pending_member_id_for_its_session_timeout() -> None:
    request = join_request(failed_heartbeat_threshold=2)  # expiry 6,000 ms: not what counts
    result = plan(request, JoinFacts(group(next_check_ms=NOW + 60_000), exists=True))
    assert isinstance(result, HandOutMemberId)
    assert (result.member.member_id, result.member.pending) == (NEW_ID, True)
    assert result.member.session_deadline_ms == NOW + SESSION
    assert result.group.next_check_ms == NOW + SESSION  # the pending id's deadline is checked
    assert result.group.member_count == 3  # a pending id is no member yet
    assert result.group.state == STABLE


def test_a_pending_member_id_keeps_an_earlier_next_check() -> None:
    result = plan(join_request(), JoinFacts(group(next_check_ms=NOW + 10), exists=True))
    assert isinstance(result, HandOutMemberId)
    assert result.group.next_check_ms == NOW + 10


# --- a known member re-sending an unchanged join ---


def test_an_unchanged_rejoin_after_the_barrier_closed_renews_the_session() -> None:
    member = in_generation(stored("m2"), 3)
    for state in (COMPLETING_REBALANCE, STABLE):  # m2 follows: m1 leads
        facts = JoinFacts(group(state), exists=True, existing=member)
        assert plan(join_request("m2"), facts) == Renew("m2", 3, NOW + SESSION)


def test_an_unchanged_rejoin_while_the_barrier_is_still_open_renews_the_session() -> None:
    member = replace(stored("m2"), joined_generation=4, joined_at_ms=NOW - 10)
    facts = JoinFacts(preparing(), exists=True, existing=member)
    assert plan(join_request("m2"), facts) == Renew("m2", 4, NOW + SESSION)


def test_the_leader_rejoining_in_stable_starts_a_rebalance() -> None:
    facts = JoinFacts(group(), exists=True, existing=in_generation(stored("m1"), 3))
    result = plan(join_request("m1"), facts)
    assert isinstance(result, WriteJoin)
    assert result.group.state == PREPARING_REBALANCE
    assert result.join_counts == (("m1", 1),)
    assert result.put_payloads == ()  # its metadata did not change


# --- joins of the open barrier ---


def test_a_known_member_joins_the_open_barrier_without_writing_the_group_item() -> None:
    facts = JoinFacts(preparing(), exists=True, existing=in_generation(stored("m2"), 3))
    result = plan(join_request("m2"), facts)
    assert isinstance(result, JoinOpenBarrier)
    assert (result.generation, result.new_metadata) == (4, False)
    assert (result.member.joined_generation, result.member.joined_at_ms) == (4, NOW)
    assert result.member.member_generation == 3  # carried over from its item


def test_new_metadata_under_the_same_protocol_names_still_skips_the_group_item() -> None:
    facts = JoinFacts(preparing(), exists=True, existing=in_generation(stored("m2"), 3))
    result = plan(join_request("m2", protocols=(("range", b"owned 0,1"),)), facts)
    assert isinstance(result, JoinOpenBarrier)
    assert result.new_metadata


def test_a_join_that_changes_what_the_group_item_counts_writes_it() -> None:
    member = in_generation(stored("m2"), 3)
    facts = JoinFacts(preparing(), exists=True, existing=member)
    both = join_request("m2", protocols=(("range", b"sub"), ("sticky", b"")))
    result = plan(both, facts)
    assert isinstance(result, WriteJoin)
    assert result.group.protocol_counts == {"range": 3, "sticky": 1}
    longer = join_request("m2", rebalance_timeout_ms=2 * SESSION)
    result = plan(longer, facts)
    assert isinstance(result, WriteJoin)
    assert result.group.rebalance_timeout_ms == 2 * SESSION


def test_a_join_during_the_initial_delay_writes_the_group_item_and_extends_the_delay() -> None:
    delayed = preparing(initial_delay_until_ms=NOW + 1000, join_deadline_ms=NOW + 50_000)
    facts = JoinFacts(delayed, exists=True, existing=in_generation(stored("m2"), 3))
    result = plan(join_request("m2"), facts)
    assert isinstance(result, WriteJoin)
    assert result.group.initial_delay_until_ms == NOW + 3000
    assert result.settle_after  # the barrier was open already


# --- new members start a rebalance ---


def test_the_first_member_of_an_empty_group_starts_it_with_the_initial_delay() -> None:
    pending = stored("p1", pending=True, session_deadline_ms=NOW + 100)
    empty = replace(new_group(), version=1)
    facts = JoinFacts(empty, exists=True, existing=pending)
    result = plan(join_request("p1", rebalance_timeout_ms=20_000), facts)
    assert isinstance(result, WriteJoin)
    g = result.group
    assert (g.state, g.member_count, g.protocol_type) == (PREPARING_REBALANCE, 1, "consumer")
    assert (g.protocol_counts, g.rebalance_timeout_ms) == ({"range": 1}, 20_000)
    assert (g.join_deadline_ms, g.initial_delay_until_ms) == (NOW + 20_000, NOW + 3000)
    assert g.next_check_ms == NOW + 3000
    assert g.empty_since_ms is None
    assert result.member_id == "p1"
    assert (result.member.pending, result.member.joined_generation) == (False, 1)
    assert result.generation == 1
    assert result.join_counts == (("p1", 1),)
    assert result.put_payloads == (result.member,)  # its first payload item
    assert result.settle_after  # one member is all the barrier waits for
    assert not result.resumes_timers and not result.respond_now


def test_a_static_member_creating_the_group_claims_its_instance() -> None:
    result = plan(join_request("", "i1"), JoinFacts(new_group(), exists=False))
    assert isinstance(result, WriteJoin)
    assert result.member_id == NEW_ID
    assert result.put_instances == {"i1": NEW_ID}
    assert result.group.member_count == 1
    assert result.delete_members == ()


def test_a_static_member_whose_instance_owner_is_gone_joins_as_a_new_member() -> None:
    facts = JoinFacts(group(), exists=True, instance_owner="m9")  # old member item not found
    result = plan(join_request("", "i1"), facts)
    assert isinstance(result, WriteJoin)
    assert result.put_instances == {"i1": NEW_ID}
    assert result.group.member_count == 4


def test_a_new_member_of_a_stable_group_starts_a_rebalance() -> None:
    pending = stored("p1", pending=True, session_deadline_ms=NOW + 100)
    facts = JoinFacts(group(), exists=True, existing=pending)
    result = plan(join_request("p1"), facts)
    assert isinstance(result, WriteJoin)
    g = result.group
    assert (g.state, g.generation, g.member_count) == (PREPARING_REBALANCE, 3, 4)
    assert (g.rebalance_started_ms, g.join_deadline_ms) == (NOW, NOW + SESSION)
    assert g.initial_delay_until_ms is None
    assert g.next_check_ms == NOW + SESSION
    assert result.generation == 4
    assert result.join_counts == (("p1", 1),)
    assert not result.settle_after  # it started the barrier: its only counted join
    assert not result.resumes_timers


def test_a_new_member_during_completing_rebalance_resumes_the_waiting_members_timers() -> None:
    completing = group(COMPLETING_REBALANCE, sync_deadline_ms=NOW + 30_000, next_check_ms=None)
    pending = stored("p1", pending=True, session_deadline_ms=NOW + 100)
    facts = JoinFacts(completing, exists=True, existing=pending)
    result = plan(join_request("p1"), facts)
    assert isinstance(result, WriteJoin)
    assert result.resumes_timers
    assert result.group.sync_deadline_ms is None
    # The members waiting for the leader's sync restart their sessions: m2's (NOW + 500)
    # now comes first. The joiner's own item (as read before) is skipped.
    members = [
        in_generation(stored("m1", session_deadline_ms=NOW + 40_000), 3),
        replace(stored("m2", session_deadline_ms=NOW + 500), joined_generation=3),
        stored("p1", pending=True, session_deadline_ms=NOW + 1),
    ]
    assert with_resumed_timers(result, members, NOW).next_check_ms == NOW + 500
    assert with_resumed_timers(result, members[:1], NOW).next_check_ms == NOW + SESSION


# --- changed metadata ---


def test_a_known_member_with_new_metadata_in_stable_rebalances_and_writes_its_payload() -> None:
    member = in_generation(stored("m2"), 3)
    facts = JoinFacts(group(), exists=True, existing=member)
    result = plan(join_request("m2", protocols=(("range", b"new"),)), facts)
    assert isinstance(result, WriteJoin)
    assert result.group.state == PREPARING_REBALANCE
    assert result.group.member_count == 3  # not a new member
    assert result.put_payloads == (result.member,)
    assert result.put_instances == {}
    assert result.join_counts == (("m2", 1),)
    assert (result.member.member_generation, result.member.synced_generation) == (3, 3)
    assert (result.member.joined_generation, result.member.joined_at_ms) == (4, NOW)


def test_new_metadata_after_joining_the_open_barrier_is_rewritten_without_a_second_count() -> None:
    member = replace(stored("m2"), joined_generation=4, joined_at_ms=NOW - 10)
    facts = JoinFacts(preparing(), exists=True, existing=member)
    result = plan(join_request("m2", protocols=(("range", b"new"),)), facts)
    assert isinstance(result, WriteJoin)
    assert result.join_counts == ()
    assert result.member.joined_at_ms == NOW - 10  # still its first join's place
    assert result.put_payloads == (result.member,)
    assert result.settle_after


# --- a static member rejoining with a new member id ---


def static_facts(g: ClassicGroup, old: ClassicMember, *others: ClassicMember) -> JoinFacts:
    voters = (old, *others) if g.state == STABLE else None
    return JoinFacts(
        g,
        exists=True,
        instance_owner=old.member_id,
        old_static=old,
        inherited_assignment=b"assigned",
        inherited_assignment_generation=3,
        voters=voters,
    )


def test_a_static_leader_replaced_in_stable_with_the_same_protocol_skips_assignment() -> None:
    old = in_generation(stored("m1", instance_id="i1"), 3)
    facts = static_facts(group(), old, in_generation(stored("m2"), 3))
    result = plan(join_request("", "i1", protocols=(("range", b"new"),)), facts)
    assert isinstance(result, WriteJoin)
    assert result.respond_now and result.skip_assignment
    assert result.group.state == STABLE  # no rebalance
    assert (result.group.leader, result.group.generation, result.generation) == (NEW_ID, 3, 3)
    assert result.group.protocol_counts == {"range": 3}
    assert result.delete_members == (old,)
    assert result.put_instances == {"i1": NEW_ID}
    assert (result.member.assignment, result.member.assignment_generation) == (b"assigned", 3)
    assert (result.member.joined_generation, result.member.synced_generation) == (3, 3)
    assert result.put_payloads == (result.member,)
    assert result.join_counts == ()
    assert result.group.next_check_ms == NOW + SESSION  # the new member id's session
    assert not result.settle_after and not result.resumes_timers


def test_a_static_follower_replaced_in_stable_is_answered_at_once_keeping_the_leader() -> None:
    old = in_generation(stored("m2", instance_id="i2"), 3)
    facts = static_facts(group(), old, in_generation(stored("m1"), 3))
    result = plan(join_request("", "i2"), facts)
    assert isinstance(result, WriteJoin)
    assert result.respond_now and not result.skip_assignment
    assert result.group.leader == "m1"


def test_a_static_replacement_that_changes_the_selected_protocol_rebalances() -> None:
    old = in_generation(stored("m1", instance_id="i1"), 3)
    facts = static_facts(group(members=1), old)
    result = plan(join_request("", "i1", protocols=(("sticky", b""), ("range", b""))), facts)
    assert isinstance(result, WriteJoin)
    assert not result.respond_now
    assert result.group.state == PREPARING_REBALANCE
    assert result.group.protocol_counts == {"range": 1, "sticky": 1}
    assert result.generation == 4
    assert result.join_counts == ((NEW_ID, 1),)  # the old one had not joined this barrier
    assert (result.member.joined_generation, result.member.joined_at_ms) == (4, NOW)
    assert result.put_payloads[0].assignment == b"assigned"
    assert result.delete_members == (old,)
    assert result.settle_after  # one member is all the barrier waits for


def test_a_static_replacement_in_an_open_barrier_moves_the_old_members_join_count() -> None:
    old = replace(stored("m2", instance_id="i2"), joined_generation=4, joined_at_ms=NOW - 10)
    result = plan(join_request("", "i2"), static_facts(preparing(), old))
    assert isinstance(result, WriteJoin)
    assert result.join_counts == (("m2", -1), (NEW_ID, 1))
    assert result.group.member_count == 3
    assert result.settle_after


def test_a_static_replacement_in_completing_rebalance_resumes_timers_without_the_old_one() -> None:
    completing = group(COMPLETING_REBALANCE, sync_deadline_ms=NOW + 30_000)
    old = in_generation(stored("m2", instance_id="i2", session_deadline_ms=NOW + 1), 3)
    result = plan(join_request("", "i2"), static_facts(completing, old))
    assert isinstance(result, WriteJoin)
    assert result.resumes_timers and not result.settle_after
    assert with_resumed_timers(result, [old], NOW).next_check_ms == result.group.next_check_ms


def test_a_static_replacement_is_refused_protocols_the_others_do_not_support() -> None:
    old = in_generation(stored("m2", instance_id="i2"), 3)
    result = plan(join_request("", "i2", protocols=(("sticky", b""),)), static_facts(group(), old))
    assert result == Refuse(Errors.INCONSISTENT_GROUP_PROTOCOL, "")


# --- members belong to their creator (core/ownership.py) ---


# --- which join syncs the group's Kinesis-backed topics lazily ---


def test_the_leader_joining_a_rebalance_or_the_first_member_leads_it() -> None:
    def leads(g: ClassicGroup, member: ClassicMember, request: JoinGroupRequest) -> bool:
        return leads_a_rebalance(g, plan(request, JoinFacts(g, exists=True, existing=member)))

    leader, follower = in_generation(stored("m1"), 3), in_generation(stored("m2"), 3)
    assert leads(group(), leader, join_request("m1"))  # rejoining in Stable
    assert leads(preparing(), leader, join_request("m1"))  # into the open barrier
    assert not leads(preparing(), follower, join_request("m2"))
    assert not leads(group(), follower, join_request("m2"))  # answered as it is (Renew)
    pending = stored("p1", pending=True, session_deadline_ms=NOW + 100)
    assert leads(replace(new_group(), version=1), pending, join_request("p1"))
    # A static leader replaced in Stable is answered at once and does not assign.
    old = in_generation(stored("m1", instance_id="i1"), 3)
    facts = static_facts(group(), old, follower)
    assert not leads_a_rebalance(group(), plan(join_request("", "i1"), facts))


def bound(request: JoinGroupRequest, principal: str) -> Joiner:
    return replace(joiner(request), principal=principal, owners_enforced=True)


def test_only_a_members_creator_may_join_as_it_when_owners_are_enforced() -> None:
    mine = in_generation(stored("m1", principal="User:alice"), 3)
    facts = JoinFacts(group(), exists=True, existing=mine)
    request = join_request("m1")
    refused = plan_join(bound(request, "User:mallory"), facts, NOW, SETTINGS, NEW_ID)
    assert refused == Refuse(Errors.GROUP_AUTHORIZATION_FAILED, "m1")
    allowed = plan_join(bound(request, "User:alice"), facts, NOW, SETTINGS, NEW_ID)
    assert not isinstance(allowed, Refuse)
    # Not enforced (the authorizer is off), or a member of unknown creator: anyone's.
    assert not isinstance(plan(request, facts), Refuse)
    unknown = JoinFacts(group(), exists=True, existing=replace(mine, principal=None))
    assert not isinstance(
        plan_join(bound(request, "User:mallory"), unknown, NOW, SETTINGS, NEW_ID), Refuse
    )


def test_another_principal_may_not_take_over_a_static_instance() -> None:
    old = in_generation(stored("m1", instance_id="i1", principal="User:alice"), 3)
    facts = static_facts(group(), old, in_generation(stored("m2"), 3))
    request = join_request("", "i1")
    refused = plan_join(bound(request, "User:mallory"), facts, NOW, SETTINGS, NEW_ID)
    assert refused == Refuse(Errors.GROUP_AUTHORIZATION_FAILED, "")
    taken = plan_join(bound(request, "User:alice"), facts, NOW, SETTINGS, NEW_ID)
    assert isinstance(taken, WriteJoin) and taken.member.principal == "User:alice"


def test_a_member_records_its_creator_and_keeps_it_on_rejoin() -> None:
    handed = plan_join(bound(join_request(), "User:alice"), JoinFacts(new_group(), exists=False),
                       NOW, SETTINGS, NEW_ID)  # fmt: skip
    assert isinstance(handed, HandOutMemberId) and handed.member.principal == "User:alice"
    # Not enforced: a rejoin from another principal does not rewrite the creator.
    mine = in_generation(stored("m1", principal="User:alice"), 3)
    facts = JoinFacts(group(), exists=True, existing=mine)
    request = join_request("m1", protocols=(("range", b"changed"),))
    rejoined = plan_join(replace(joiner(request), principal="User:bob"), facts, NOW, SETTINGS,
                         NEW_ID)  # fmt: skip
    assert isinstance(rejoined, WriteJoin) and rejoined.member.principal == "User:alice"
