"""The streams heartbeat's planners (core/streams/heartbeat_rules.py): the group a heartbeat
acts on, a join's topology, a new member and the initial delay, the request applied, and the
answer's statuses."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from groupcoord.core.modern.access import GroupAccess
from groupcoord.core.modern.access import plan_group_access as access
from groupcoord.core.modern.refusal import Refusal
from groupcoord.core.streams.configuration import StatusCode
from groupcoord.core.streams.group import ASSIGNING, StreamsGroup
from groupcoord.core.streams.heartbeat_rules import (
    CONVERSION,
    NewMember,
    TopologyStep,
    apply_request,
    plan_new_member,
    plan_reconcile,
    plan_topology,
    statuses,
)
from groupcoord.core.streams.member import StreamsGroupMember
from groupcoord.core.streams.reconciliation import Holdings, MemberState, MemberTasks
from groupcoord.core.streams.tasks import EMPTY, TasksTuple
from groupcoord.core.streams.topology import Subtopology, Topology
from groupcoord.errors import Errors
from groupcoord.models.streams import StreamsGroupHeartbeatRequest

NOW = 1_000_000
TOPOLOGY = Topology(3, (Subtopology("0", source_topics=("in",)),))


def plan_group_access(*found: Any) -> GroupAccess | Refusal:
    return access(*found, CONVERSION)


def test_group_access_creates_only_on_a_join_and_refuses_other_types() -> None:
    assert plan_group_access("g", None, 0, 0) is GroupAccess.CREATE
    assert plan_group_access("g", "streams", 2, 5) is GroupAccess.USE
    for found in (plan_group_access("g", None, 0, 3), plan_group_access("g", "consumer", 1, 0)):
        assert isinstance(found, Refusal) and found.error == Errors.GROUP_ID_NOT_FOUND


def test_a_joins_topology_initializes_matches_goes_stale_updates_or_is_refused() -> None:
    empty = StreamsGroup("g")
    assert plan_topology(empty, TOPOLOGY) is TopologyStep.INITIALIZE
    kept = StreamsGroup("g", topology_epoch=3, topology_digest=TOPOLOGY.digest())
    assert plan_topology(kept, TOPOLOGY) is TopologyStep.SAME
    assert plan_topology(kept, replace(TOPOLOGY, epoch=2)) is TopologyStep.STALE
    changed = Topology(3, (Subtopology("0", source_topics=("other",)),))
    refused = plan_topology(kept, changed)
    assert isinstance(refused, Refusal) and refused.error == Errors.STREAMS_INVALID_TOPOLOGY_EPOCH
    assert plan_topology(kept, replace(changed, epoch=4)) is TopologyStep.UPDATE


def test_the_first_member_starts_the_delay_and_the_first_target_comes_after_epoch_1() -> None:
    plan = plan_new_member(
        StreamsGroup("g"),
        StreamsGroupMember("m"),
        max_size=10,
        now=NOW,
        session_ms=45_000,
        initial_delay_ms=3_000,
    )
    assert isinstance(plan, NewMember)
    assert plan.group.delay_until == NOW + 3_000 and plan.group.deadline == NOW + 3_000
    assert plan.group.group_epoch == 2 and plan.group.state == ASSIGNING
    assert plan.member.session_deadline == NOW + 45_000
    # A second member joins during the delay: it does not restart it.
    second = plan_new_member(
        plan.group,
        StreamsGroupMember("n"),
        max_size=10,
        now=NOW + 1_000,
        session_ms=45_000,
        initial_delay_ms=3_000,
    )
    assert isinstance(second, NewMember) and second.group.delay_until == NOW + 3_000


def test_a_full_group_refuses_a_new_member_with_81() -> None:
    full = plan_new_member(
        StreamsGroup("g", member_count=2),
        StreamsGroupMember("m"),
        max_size=2,
        now=NOW,
        session_ms=1,
        initial_delay_ms=0,
    )
    assert isinstance(full, Refusal) and full.error == Errors.GROUP_MAX_SIZE_REACHED


def heartbeat(**fields: object) -> StreamsGroupHeartbeatRequest:
    body = {"groupId": "g", "memberId": "m", "memberEpoch": 4, **fields}
    return StreamsGroupHeartbeatRequest.model_validate(body)


def test_the_request_applied_and_what_bumps_the_group_epoch() -> None:
    member = StreamsGroupMember("m", process_id="p1", rebalance_timeout_ms=30_000)
    same, changed = apply_request(member, heartbeat(), "c", "h")
    assert not changed and same.rebalance_timeout_ms == 30_000
    moved, changed = apply_request(member, heartbeat(processId="p2"), "c", "h")
    assert changed and moved.process_id == "p2"
    tagged, changed = apply_request(
        member, heartbeat(clientTags=[{"key": "zone", "value": "b"}]), "c", "h"
    )
    assert changed and tagged.client_tags == (("zone", "b"),)
    endpoint, changed = apply_request(
        member, heartbeat(userEndpoint={"host": "127.0.0.1", "port": 1}), "c", "h"
    )
    assert not changed and endpoint.user_endpoint is not None


def test_statuses_in_kafkas_order() -> None:
    group = StreamsGroup("g", topology_epoch=2, shutdown_requested_by="x", delay_until=NOW + 1)
    member = StreamsGroupMember("m", topology_epoch=1)
    found = statuses(group, member, (StatusCode.MISSING_SOURCE_TOPICS, "missing"), NOW)
    assert [code for code, _ in found] == [0, 1, 4, 5]
    assert statuses(replace(group, shutdown_requested_by=None, delay_until=0),
                    replace(member, topology_epoch=2), None, NOW) == []  # fmt: skip


def test_an_empty_classic_group_is_replaced_by_a_join_only() -> None:
    assert plan_group_access("g", "classic", 0, 0) is GroupAccess.REPLACE
    for found in (plan_group_access("g", "classic", 1, 0), plan_group_access("g", "classic", 0, 2)):
        assert isinstance(found, Refusal) and found.error == Errors.GROUP_ID_NOT_FOUND


def test_a_static_leave_keeps_the_tasks_with_their_epochs_reset() -> None:
    from groupcoord.core.streams.heartbeat_rules import plan_static_takeover, static_leave
    from groupcoord.core.streams.reconciliation import MemberTasks
    from groupcoord.core.streams.tasks import TasksTuple

    held = MemberTasks(
        epoch=5,
        assigned=TasksTuple.of(active={"0": {0}}),
        revoking=TasksTuple.of(active={"0": {1}}),
        active_epochs={("0", 0): 2, ("0", 1): 3},
    )
    member = StreamsGroupMember("m", instance_id="i", tasks=held, report_digest="d")
    left = static_leave(member)
    assert left.epoch == -2 and left.tasks.revoking.is_empty()
    assert left.tasks.active_epochs == {("0", 0): 0}
    back = plan_static_takeover(left, "m2", "i", NOW, 45_000)
    assert isinstance(back, StreamsGroupMember)
    assert (back.member_id, back.epoch, back.tasks.assigned) == ("m2", 0, left.tasks.assigned)
    assert back.report_digest == ""  # the report went with the old member id
    busy = plan_static_takeover(StreamsGroupMember("m", tasks=held), "m2", "i", NOW, 1)
    assert isinstance(busy, Refusal) and busy.error == Errors.UNRELEASED_INSTANCE_ID


def test_an_update_keeps_since_for_the_unchanged_subtopologies_only() -> None:
    one = Topology(1, (Subtopology("0", source_topics=("a",)), Subtopology("1", ("b",))))
    two = one.updated_to(Topology(2, (one.subtopologies[0], Subtopology("1", ("c",)))))
    assert dict(two.since) == {"0": 1, "1": 2}
    assert two.runs("0", 1) and not two.runs("1", 1) and two.runs("1", 2)
    three = two.updated_to(replace(two, epoch=3, since=()))
    assert dict(three.since) == {"0": 1, "1": 2}


def test_a_revocation_done_while_an_install_is_unfinished_is_not_lost() -> None:
    # Asked to revoke task 0_1 (for the target of epoch 4), the member did; its heartbeat
    # saying so comes while the next install (epoch 5) has written its target but not flipped
    # yet. The revocation is recorded (the task released for whoever waits on it); the member
    # keeps its epoch and its tasks until that target is in force.
    tasks = MemberTasks(
        epoch=3,
        previous_epoch=2,
        state=MemberState.UNREVOKED_TASKS,
        assigned=TasksTuple.of({"0": [0]}),
        revoking=TasksTuple.of({"0": [1]}),
        active_epochs={("0", 0): 2, ("0", 1): 3},
    )
    member = StreamsGroupMember(
        "m", process_id="p", tasks=tasks, target=TasksTuple.of({"0": [2]}), target_epoch=5
    )
    unfinished = StreamsGroup("g", group_epoch=5, target_epoch=4)

    def owning(*partitions: int) -> StreamsGroupHeartbeatRequest:
        entries = [{"subtopologyId": "0", "partitions": list(partitions)}]
        return heartbeat(memberEpoch=3, activeTasks=entries, standbyTasks=[], warmupTasks=[])

    def reconciled(group: StreamsGroup, m: StreamsGroupMember, request: Any) -> MemberTasks:
        plan = plan_reconcile(group, m, m, request, Holdings(), now=NOW, session_ms=45_000)
        return plan.after

    done = plan_reconcile(
        unfinished, member, member, owning(0), Holdings(), now=NOW, session_ms=45_000
    )
    assert done.after == replace(
        tasks, state=MemberState.STABLE, revoking=EMPTY, active_epochs={("0", 0): 2}
    )
    assert done.writes and not done.sends_tasks
    assert reconciled(unfinished, member, owning(0, 1)) is tasks  # still owning it
    # Its next heartbeats report no change (null tasks); once the target is in force they
    # move it on (before, it waited on the revocation for ever).
    later = reconciled(
        StreamsGroup("g", group_epoch=5, target_epoch=5), done.member, heartbeat(memberEpoch=3)
    )
    assert (later.state, later.revoking) == (MemberState.UNREVOKED_TASKS, TasksTuple.of({"0": [0]}))
