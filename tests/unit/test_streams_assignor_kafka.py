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
