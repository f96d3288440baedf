"""The streams sticky task assignor held to cases of Kafka's group-coordinator
StickyTaskAssignorTest (its cold-start cases are in test_streams_assignor.py): balance over
members and over processes by their member count (capacity), stickiness of actives to their
member and process, previous standbys first, and standbys never beside their active. Where
Kafka accepts several answers, so do these tests."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from groupcoord.core.streams.assignor import AssignorMember, assign
from groupcoord.core.streams.tasks import TasksTuple, task_ids

S = "test-subtopology"


def member(
    member_id: str,
    process: str,
    active: Iterable[int] = (),
    standby: Iterable[int] = (),
) -> AssignorMember:
    previous = TasksTuple.of(active={S: set(active)}, standby={S: set(standby)})
    return AssignorMember(member_id, process, previous)


def active(result: Mapping[str, TasksTuple], *members: str) -> set[tuple[str, int]]:
    return {t for m in members for t in task_ids(result[m].active)}


def ids(result: Mapping[str, TasksTuple], member_id: str, standby: bool = False) -> set[int]:
    tasks = result[member_id].standby if standby else result[member_id].active
    return {p for _, p in task_ids(tasks)}


def test_one_task_each_when_there_are_as_many_processes() -> None:
    """shouldAssignOneActiveTaskToEachProcessWhenTaskCountSameAsProcessCount."""
    members = [member(f"member{i}", f"process{i}") for i in (1, 2, 3)]
    result = assign(members, {S: 3}, stateful=(), num_standby=0)
    assert [len(ids(result, m.member_id)) for m in members] == [1, 1, 1]
    assert active(result, *result) == {(S, p) for p in range(3)}


def test_sub_topologies_spread_evenly_over_members_of_shared_processes() -> None:
    """shouldAssignTopicGroupIdEvenlyAcrossClientsWith{No,}StandByTasks: two members on each
    of three processes, two sub-topologies of three tasks: one active each."""
    members = [member(f"member{p}_{i}", f"process{p}") for p in (1, 2, 3) for i in (1, 2)]
    counts = {"test-subtopology1": 3, "test-subtopology2": 3}
    for stateful, standbys in (((), 0), (set(counts), 1)):
        result = assign(members, counts, stateful=stateful, num_standby=standbys)
        assert [len(list(task_ids(result[m.member_id].active))) for m in members] == [1] * 6
        assert active(result, *result) == {(s, p) for s in counts for p in range(3)}


def test_an_active_task_stays_on_its_process() -> None:
    """shouldNotMigrateActiveTaskToOtherProcess: member1 (process1) had 0, member2 (process2)
    had 1; then member1 is gone and member3, on process1, had 2."""
    result = assign(
        [member("member1", "process1", [0]), member("member2", "process2", [1])], {S: 3}, (), 0
    )
    assert 0 in ids(result, "member1") and 1 in ids(result, "member2")
    assert len(ids(result, "member1")) + len(ids(result, "member2")) == 3
    members = [member("member2", "process2", [1]), member("member3", "process1", [2])]
    result = assign(members, {S: 3}, (), 0)
    assert 1 in ids(result, "member2") and 2 in ids(result, "member3")


def test_a_new_process_takes_one_task_without_reshuffling_the_rest() -> None:
    """shouldMigrateActiveTasksToNewProcessWithoutChangingAllAssignments."""
    members = [
        member("member1", "process1", [0, 2]),
        member("member2", "process2", [1]),
        member("member3", "process3"),
    ]
    result = assign(members, {S: 3}, (), 0)
    assert ids(result, "member2") == {1}
    assert {len(ids(result, "member1")), len(ids(result, "member3"))} == {1}
    assert ids(result, "member1") | ids(result, "member3") == {0, 2}


def test_a_process_with_two_members_takes_two_tasks() -> None:
    """shouldAssignBasedOnCapacity (and ...WhenMultipleClientHaveStandbyTasks: member1 keeps 0,
    member2_1 keeps 2, the previous standbys' task 1 goes to process2's idle member)."""
    members = [
        member("member1", "process1"),
        member("m2_1", "process2"),
        member("m2_2", "process2"),
    ]
    result = assign(members, {S: 3}, (), 0)
    assert [len(ids(result, m.member_id)) for m in members] == [1, 1, 1]
    members = [
        member("member1", "process1", [0], [1]),
        member("m2_1", "process2", [2], [1]),
        member("m2_2", "process2"),
    ]
    result = assign(members, {S: 3}, (), 0)
    assert (ids(result, "member1"), ids(result, "m2_1"), ids(result, "m2_2")) == ({0}, {2}, {1})


def test_unequal_sub_topologies_split_four_and_three() -> None:
    """shouldAssignTasksEvenlyWithUnequalTopicGroupSizes: member1 had all seven tasks (six of
    one sub-topology, one of another); a second process joins: 4 and 3, every task once."""
    previous = TasksTuple.of(active={"s1": set(range(6)), "s2": {0}})
    members = [AssignorMember("member1", "process1", previous), member("member2", "process2")]
    result = assign(members, {"s1": 6, "s2": 1}, (), 0)
    assert len(list(task_ids(result["member1"].active))) == 4
    assert len(list(task_ids(result["member2"].active))) == 3
    assert active(result, *result) == {*(("s1", p) for p in range(6)), ("s2", 0)}


def test_with_more_members_than_tasks_the_owners_keep_theirs() -> None:
    """shouldKeepActiveTaskStickinessWhenMoreClientThanActiveTasks, both rounds."""
    for owners in (
        {"member1": 0, "member2": 2, "member3": 1},
        {"member2": 0, "member4": 2, "member5": 1},
    ):
        members = [
            member(
                f"member{i}",
                f"process{i}",
                [owners[f"member{i}"]] if f"member{i}" in owners else [],
            )
            for i in range(1, 6)
        ]
        result = assign(members, {S: 3}, (), 0)
        for m in members:
            expected = {owners[m.member_id]} if m.member_id in owners else set()
            assert ids(result, m.member_id) == expected, m.member_id


def test_previous_standbys_become_the_actives() -> None:
    """shouldAssignTasksToClientWithPreviousStandbyTasks."""
    members = [
        member("member1", "process1", standby=[2]),
        member("member2", "process2", standby=[1]),
    ]
    members.append(member("member3", "process3", standby=[0]))
    result = assign(members, {S: 3}, (), 0)
    assert [ids(result, m.member_id) for m in members] == [{2}, {1}, {0}]


def test_each_standby_goes_to_another_process_than_its_active() -> None:
    """shouldNotAssignStandbyTasksToClientWithPreviousStandbyTasksAndCurrentActiveTasks,
    shouldAssignStandbyTasksToDifferentClientThanCorrespondingActiveTaskIsAssignedTo,
    shouldAssignMultipleReplicasOfStandbyTask."""
    members = [
        member("member1", "process1", standby=[0]),
        member("member2", "process2", standby=[1]),
    ]
    result = assign(members, {S: 2}, {S}, 1)
    assert (ids(result, "member1"), ids(result, "member1", standby=True)) == ({0}, {1})
    assert (ids(result, "member2"), ids(result, "member2", standby=True)) == ({1}, {0})
    members = [member(f"member{i}", f"process{i}", [i - 1]) for i in range(1, 5)]
    result = assign(members, {S: 4}, {S}, 1)
    standbys = [ids(result, m.member_id, standby=True) for m in members]
    assert all(i not in s and len(s) <= 2 for i, s in enumerate(standbys))
    assert sum(1 for s in standbys if s) >= 3 and set().union(*standbys) == {0, 1, 2, 3}
    members = [member(f"member{i}", f"process{i}", [i - 1]) for i in range(1, 4)]
    result = assign(members, {S: 3}, {S}, 2)
    assert [ids(result, m.member_id, standby=True) for m in members] == [{1, 2}, {0, 2}, {0, 1}]


def test_a_lone_process_gets_no_standby_and_three_get_one_of_each() -> None:
    """shouldNotAssignStandbyTaskReplicasWhenNoClientAvailableWithoutHavingTheTaskAssigned and
    shouldAssignActiveAndStandbyTasks."""
    result = assign([member("member1", "process1")], {S: 1}, {S}, 1)
    assert not list(task_ids(result["member1"].standby))
    members = [member(f"member{i}", f"process{i}") for i in (1, 2, 3)]
    result = assign(members, {S: 3}, {S}, 1)
    assert {p for m in result for p in ids(result, m)} == {0, 1, 2}
    assert {p for m in result for p in ids(result, m, standby=True)} == {0, 1, 2}


def test_every_process_gets_a_task_when_it_can() -> None:
    """shouldAssignAtLeastOneTaskToEachClientIfPossible and
    shouldAssignEachActiveTaskToOneClientWhenMoreClientsThanTasks."""
    members = [member(f"member1_{i}", "process1") for i in (1, 2, 3)]
    members += [member("member2", "process2"), member("member3", "process3")]
    result = assign(members, {S: 3}, (), 0)
    assert len(active(result, "member1_1", "member1_2", "member1_3")) == 1
    assert len(active(result, "member2")) == len(active(result, "member3")) == 1
    members = [member(f"member{i}", f"process{i}") for i in range(1, 7)]
    result = assign(members, {S: 3}, (), 0)
    assert active(result, *result) == {(S, p) for p in range(3)}


def test_a_process_with_two_members_takes_twice_the_tasks() -> None:
    """shouldAssignMoreTasksToClientWithMoreCapacity and
    shouldRebalanceTasksToClientsBasedOnCapacity."""
    members = [
        member("member1", "process1"),
        member("m2_1", "process2"),
        member("m2_2", "process2"),
    ]
    counts = {f"test-subtopology{i}": 3 for i in range(4)}
    result = assign(members, counts, (), 0)
    assert (len(active(result, "member1")), len(active(result, "m2_1", "m2_2"))) == (4, 8)
    members = [member("member2", "process2", [0, 3, 2]), member("m3_1", "process3")]
    members.append(member("m3_2", "process3"))
    result = assign(members, {S: 3}, (), 0)
    assert (len(active(result, "member2")), len(active(result, "m3_1", "m3_2"))) == (1, 2)


def test_an_owner_of_everything_gives_to_newcomers_down_to_its_share() -> None:
    """shouldReBalanceTasksAcrossAllClientsWhenCapacityAndTaskCountTheSame and
    ...WhenCapacityLessThanTaskCount: member3 had all four tasks."""
    for others, shares in (
        (("member1", "member2", "member4"), [1, 1, 1, 1]),
        (("member1", "member2"), [1, 1, 2]),
    ):
        members = [member(m, m.replace("member", "process")) for m in others]
        members.append(member("member3", "process3", [0, 1, 2, 3]))
        result = assign(members, {S: 4}, (), 0)
        assert [len(ids(result, m)) for m in sorted(result)] == shares


def test_a_newcomer_takes_the_fewest_tasks_from_the_others() -> None:
    """shouldMoveMinimalNumberOfTasksWhenPreviouslyAboveCapacityAndNewClientAdded,
    shouldAssignTasksToNewClient, ...WithoutFlippingAssignmentBetweenExistingClients and
    ...ExistingAndBouncedClients."""
    members = [member("member1", "process1", [0, 2]), member("member2", "process2", [1, 3])]
    result = assign([*members, member("member3", "process3")], {S: 4}, (), 0)
    assert len(ids(result, "member3")) == 1
    assert ids(result, "member1") == {0, 2} or ids(result, "member2") == {1, 3}
    result = assign(
        [member("member1", "process1", [1, 2]), member("member2", "process2")], {S: 2}, (), 0
    )
    assert len(ids(result, "member1")) == 1
    members = [member("member1", "process1", [0, 1, 2]), member("member2", "process2", [3, 4, 5])]
    result = assign([*members, member("new", "process3")], {S: 6}, (), 0)
    assert (
        len(ids(result, "member1")) == len(ids(result, "member2")) == len(ids(result, "new")) == 2
    )
    assert ids(result, "member1") <= {0, 1, 2} and ids(result, "member2") <= {3, 4, 5}
    members = [
        member("member1", "process1", [0, 1, 2, 6]),
        member("member2", "process2", standby=[3, 4, 5]),
    ]
    result = assign([*members, member("new", "newProcess")], {S: 7}, (), 0)
    assert ids(result, "member1") <= {0, 1, 2, 6} and len(ids(result, "member1")) == 3
    assert ids(result, "member2") <= {3, 4, 5} and len(ids(result, "member2")) == 2
    assert len(ids(result, "new")) == 2


def test_new_tasks_go_to_the_newcomer_and_nothing_moves() -> None:
    """shouldNotMoveAnyTasksWhenNewTasksAdded, shouldAssignNewTasksToNewClientWhenPrevious
    TasksAssignedToOldClients."""
    members = [member("member1", "process1", [0, 1]), member("member2", "process2", [2, 3])]
    result = assign(members, {S: 6}, (), 0)
    assert ids(result, "member1") >= {0, 1} and ids(result, "member2") >= {2, 3}
    members = [member("member1", "process1", [2, 1]), member("member2", "process2", [0, 3])]
    result = assign([*members, member("member3", "process3")], {S: 6}, (), 0)
    assert (ids(result, "member1"), ids(result, "member2"), ids(result, "member3")) == (
        {1, 2},
        {0, 3},
        {4, 5},
    )


def test_tasks_nobody_had_active_go_to_the_new_members() -> None:
    """shouldAssignTasksNotPreviouslyActiveToNewClient and ...ToMultipleNewClients: three
    sub-topologies of four tasks; the previous owners keep exactly theirs (three each), the
    new members (whose previous standbys do not matter here) take the three nobody had."""
    s0, s1, s2 = (f"test-subtopology{i}" for i in range(3))
    counts = dict.fromkeys((s0, s1, s2), 4)
    kept = {
        "member1": {s0: {1}, s1: {2, 3}},
        "member2": {s0: {0}, s1: {1}, s2: {2}},
        "member3": {s2: {0, 1, 3}},
    }
    standbys = {
        "member1": {s0: {0}, s1: {1}, s2: {0, 1, 3}},
        "member2": {s0: {1, 2, 3}, s1: {0, 2, 3}, s2: {0, 1, 3}},
        "member3": {s0: {2}, s1: {2}},
    }
    everything = {s: set(range(4)) for s in counts}
    members = [
        AssignorMember(
            m, m.replace("member", "process"), TasksTuple.of(active=kept[m], standby=standbys[m])
        )
        for m in kept
    ]
    newcomer = AssignorMember("new", "process4", TasksTuple.of(standby=everything))
    result = assign([*members, newcomer], counts, (), 0)
    for m, tasks in kept.items():
        assert result[m].active == TasksTuple.of(active=tasks).active, m
    assert result["new"].active == TasksTuple.of(active={s0: {2, 3}, s1: {0}}).active
    bounced = [
        AssignorMember("bounce1", "bounce1", TasksTuple.of(standby={s2: {0, 1, 3}})),
        AssignorMember("bounce2", "bounce2", TasksTuple.of(standby={s0: {2, 3}, s1: {0}})),
    ]
    result = assign([*members[:2], *bounced], counts, (), 0)
    for m in ("member1", "member2"):
        assert result[m].active == TasksTuple.of(active=kept[m]).active, m
    assert result["bounce1"].active == TasksTuple.of(active={s2: {0, 1, 3}}).active
    assert result["bounce2"].active == TasksTuple.of(active={s0: {2, 3}, s1: {0}}).active


def test_many_tasks_with_two_standbys_are_balanced() -> None:
    """shouldHandleLargeNumberOfTasksWithStandbyAssignment: 100 tasks, 5 processes, 2 standbys."""
    members = [member(f"member{i}", f"process{i}") for i in range(5)]
    result = assign(members, {S: 100}, {S}, 2)
    assert [len(ids(result, m.member_id)) for m in members] == [20] * 5
    for m in members:
        assert not ids(result, m.member_id) & ids(result, m.member_id, standby=True)
    assert sum(len(ids(result, m.member_id, standby=True)) for m in members) == 200


def test_standby_edge_cases() -> None:
    """shouldHandleOddNumberOfClientsWithStandbyTasks (14 tasks, 7 processes: 2 each, 14
    standbys), shouldHandleHighStandbyReplicaCount (5 replicas, 3 processes: 2 each task),
    shouldHandleLargeNumberOfSubtopologiesWithStandbyTasks, ...WithSingleClientAndMultiple
    StandbyReplicas and ...WithMoreStandbyReplicasThanAvailableClients."""
    members = [member(f"member{i}", f"process{i}") for i in range(7)]
    result = assign(members, {S: 14}, {S}, 1)
    assert [len(ids(result, m.member_id)) for m in members] == [2] * 7
    assert sum(len(ids(result, m.member_id, standby=True)) for m in members) == 14
    members = [member(f"member{i}", f"process{i}") for i in range(3)]
    result = assign(members, {S: 6}, {S}, 5)
    assert sum(len(ids(result, m.member_id, standby=True)) for m in members) == 12
    members = [member(f"member{i}", f"process{i}") for i in range(4)]
    counts = {f"subtopology-{i}": 5 for i in range(10)}
    result = assign(members, counts, set(counts), 1)
    assert {t[0] for r in result.values() for t in task_ids(r.standby)} == set(counts)
    assert active(result, *result) == {(s, p) for s in counts for p in range(5)}
    result = assign([member("member1", "process1")], {S: 10}, {S}, 3)
    assert len(ids(result, "member1")) == 10 and not ids(result, "member1", standby=True)
    members = [member(f"member{i}", f"process{i}") for i in range(2)]
    result = assign(members, {S: 4}, {S}, 5)
    assert [ids(result, m.member_id, standby=True) for m in members] == [
        {0, 1, 2, 3} - ids(result, m.member_id) for m in members
    ]


def test_a_new_process_joins_owners_of_actives_and_standbys() -> None:
    """shouldReassignTasksWhenNewNodeJoinsWithExistingActiveAndStandbyAssignments."""
    members = [
        member("member1", "process1", [0, 1], [2, 3]),
        member("member2", "process2", [2, 3], [0, 1]),
        member("member3", "process3"),
    ]
    result = assign(members, {S: 4}, {S}, 1)
    assert {p for m in result for p in ids(result, m)} == {0, 1, 2, 3}
    assert {p for m in result for p in ids(result, m, standby=True)} == {0, 1, 2, 3}
    for m in result:
        assert 1 <= len(ids(result, m)) <= 2
        assert len(ids(result, m)) + len(ids(result, m, standby=True)) <= 3


def test_a_standby_stays_with_its_previous_holder() -> None:
    """shouldAssignStandbyTaskToPreviousOwnerBasedOnBelowQuotaCondition and
    shouldAssignStandbyToPreviousStandbyThatDoesNotHoldTheActiveTask."""
    members = [
        member("member1", "process1", [0], [1]),
        member("member2", "process2", [1]),
        member("member3", "process3"),
    ]
    result = assign(members, {S: 2}, {S}, 1)
    assert 0 in ids(result, "member1") and 1 not in ids(result, "member1")
    assert 1 in ids(result, "member1", standby=True)
    assert len(ids(result, "member1")) + len(ids(result, "member1", standby=True)) <= 2
    members = [
        member("member1", "process1", standby=[2]),
        member("member2", "process2", [0], [2]),
        member("member3", "process3", [1]),
        member("member4", "process4"),
    ]
    result = assign(members, {S: 3}, {S}, 1)
    assert [ids(result, m.member_id) for m in members] == [{2}, {0}, {1}, set()]
    assert ids(result, "member2", standby=True) == {2}
    standbys = tuple(ids(result, m, standby=True) for m in ("member1", "member3", "member4"))
    assert standbys in (
        (set(), {0}, {1}),
        ({1}, set(), {0}),
        ({0}, set(), {1}),
    )


def test_two_processes_get_one_task_and_one_standby_of_each_sub_topology() -> None:
    """shouldRangeAssignTasksWhenStartingEmpty and shouldRangeAssignTasksWhenScalingUp (member1
    had all four tasks)."""
    counts = {"test-subtopology1": 2, "test-subtopology2": 2}
    everything = TasksTuple.of(active={s: {0, 1} for s in counts})
    for previous in (TasksTuple(), everything):
        members = [AssignorMember("member1", "process1", previous), member("member2", "process2")]
        result = assign(members, counts, set(counts), 1)
        for m in ("member1", "member2"):
            for tasks in (result[m].active, result[m].standby):
                assert {s: len(ps) for s, ps in tasks.items()} == dict.fromkeys(counts, 1), m
        assert active(result, *result) == {(s, p) for s in counts for p in (0, 1)}
