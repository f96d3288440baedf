"""The sticky task assignor (core/streams/assignor.py): every task active exactly once,
standbys never beside their active, spread by client tags, and sticky across rebalances."""

from __future__ import annotations

from collections import Counter

from hypothesis import given, settings
from hypothesis import strategies as st

from groupcoord.core.streams.assignor import AssignorMember, assign, lag_rank
from groupcoord.core.streams.tasks import TaskId, TasksTuple, task_ids

TWO_SUBTOPOLOGIES = {"0": 4, "1": 4}


def actives(result: dict[str, TasksTuple]) -> Counter[TaskId]:
    return Counter(t for tasks in result.values() for t in task_ids(tasks.active))


def with_previous(members: list[AssignorMember], result: dict[str, TasksTuple]) -> list:
    return [
        AssignorMember(m.member_id, m.process_id, result[m.member_id], m.client_tags)
        for m in members
    ]


def test_two_processes_share_every_task_and_standbys_cross_over() -> None:
    members = [AssignorMember("a", "p1"), AssignorMember("b", "p2")]
    result = assign(members, TWO_SUBTOPOLOGIES, stateful={"1"}, num_standby=1)
    assert set(actives(result)) == {(s, p) for s in "01" for p in range(4)}
    assert max(actives(result).values()) == 1
    assert all(len(list(task_ids(r.active))) == 4 for r in result.values())
    # Every stateful task has its standby on the other process; stateless ones have none.
    for me, other in (("a", "b"), ("b", "a")):
        assert result[me].standby == {
            "1": frozenset(p for s, p in task_ids(result[other].active) if s == "1")
        }


def test_a_new_member_takes_tasks_only_from_the_busiest() -> None:
    first = assign([AssignorMember("a", "p1")], {"0": 6}, stateful=(), num_standby=0)
    members = [AssignorMember("a", "p1", first["a"]), AssignorMember("b", "p2")]
    second = assign(members, {"0": 6}, stateful=(), num_standby=0)
    assert len(second["a"].active["0"]) == 3 and second["a"].active["0"] <= first["a"].active["0"]


def test_a_previous_standby_is_preferred_as_the_new_active() -> None:
    # c held task 0_1 as standby; the active owner left: c gets it, not the empty member d.
    previous = TasksTuple.of(standby={"0": {1}})
    members = [
        AssignorMember("b", "p2", TasksTuple.of(active={"0": {0}})),
        AssignorMember("c", "p3", previous),
        AssignorMember("d", "p4"),
    ]
    result = assign(members, {"0": 2}, stateful={"0"}, num_standby=0)
    assert result["c"].active == {"0": frozenset({1})}
    assert result["b"].active == {"0": frozenset({0})}


def test_standbys_spread_over_client_tags() -> None:
    zone = {"p1": "a", "p2": "a", "p3": "b", "p4": "b"}
    members = [
        AssignorMember(f"m{p}", p, client_tags=(("zone", z),)) for p, z in sorted(zone.items())
    ]
    result = assign(members, {"0": 8}, stateful={"0"}, num_standby=1)
    process = {m.member_id: m.process_id for m in members}
    where_active = {t: process[m] for m, r in result.items() for t in task_ids(r.active)}
    for m, r in result.items():
        for task in task_ids(r.standby):
            assert zone[process[m]] != zone[where_active[task]], task


def test_too_few_processes_get_fewer_standbys() -> None:
    members = [AssignorMember("a", "p1"), AssignorMember("b", "p1")]
    result = assign(members, {"0": 2}, stateful={"0"}, num_standby=1)
    assert all(not r.standby for r in result.values())


@st.composite
def groups(draw: st.DrawFn) -> tuple[list[AssignorMember], dict[str, int], set[str], int]:
    processes = draw(st.integers(1, 5))
    count = draw(st.integers(1, 8))
    members = [
        AssignorMember(
            f"m{i}",
            f"p{draw(st.integers(0, processes - 1))}",
            client_tags=(("zone", draw(st.sampled_from("ab"))),),
        )
        for i in range(count)
    ]
    subs = draw(st.dictionaries(st.sampled_from("0123"), st.integers(1, 12), min_size=1))
    stateful = draw(st.sets(st.sampled_from(sorted(subs))))
    return members, subs, stateful, draw(st.integers(0, 2))


def check_invariants(
    members: list[AssignorMember],
    result: dict[str, TasksTuple],
    subs: dict[str, int],
    stateful: set[str],
    standbys: int,
) -> None:
    everything = {(s, p) for s, n in subs.items() for p in range(n)}
    assert actives(result) == Counter(everything)  # every task active exactly once
    process = {m.member_id: m.process_id for m in members}
    holders: dict[TaskId, list[str]] = {}
    for m, r in result.items():
        for task in (*task_ids(r.active), *task_ids(r.standby)):
            holders.setdefault(task, []).append(process[m])
        assert all(s in stateful for s in r.standby)
    for task, where in holders.items():
        # Never two copies of a task on one process: standbys never beside their active.
        assert len(where) == len(set(where)), task
        if task[0] in stateful:
            assert len(where) == 1 + min(standbys, len(set(process.values())) - 1), task
    if len(set(process.values())) == len(members):  # one member a process: balanced
        counts = [len(list(task_ids(r.active))) for r in result.values()]
        assert max(counts) - min(counts) <= 1


@settings(max_examples=150, deadline=None)
@given(groups())
def test_every_task_once_and_no_standby_beside_its_active(group: tuple) -> None:
    members, subs, stateful, standbys = group
    result = assign(members, subs, stateful, standbys)
    check_invariants(members, result, subs, stateful, standbys)


@settings(max_examples=150, deadline=None)
@given(groups())
def test_a_second_rebalance_moves_no_active_task(group: tuple) -> None:
    members, subs, stateful, standbys = group
    first = assign(members, subs, stateful, standbys)
    second = assign(with_previous(members, first), subs, stateful, standbys)
    check_invariants(members, second, subs, stateful, standbys)
    assert {m: r.active for m, r in second.items()} == {m: r.active for m, r in first.items()}


@settings(max_examples=150, deadline=None)
@given(groups(), st.integers(0, 7))
def test_a_member_leaving_moves_only_its_own_active_tasks(group: tuple, gone: int) -> None:
    members, subs, stateful, standbys = group
    first = assign(members, subs, stateful, standbys)
    leaver = members[gone % len(members)]
    rest = [m for m in with_previous(members, first) if m.member_id != leaver.member_id]
    if not rest:
        return
    second = assign(rest, subs, stateful, standbys)
    check_invariants(rest, second, subs, stateful, standbys)
    # A survivor keeps its tasks up to its share of the group without the leaver.
    share = sum(subs.values()) // len(rest)
    for m in rest:
        had = set(task_ids(first[m.member_id].active))
        kept = had & set(task_ids(second[m.member_id].active))
        assert len(kept) >= min(len(had), share), m.member_id


# --- the new active among previous standbys, by reported lag (beyond Kafka 4.2) ---


def orphaned(lags: dict[str, int | None]) -> list[AssignorMember]:
    """Task 0_0's active owner is gone; each member listed held it as standby, with its lag
    (None: no report). A busy member b keeps 0_1 active."""
    return [
        AssignorMember(
            m,
            f"p-{m}",
            TasksTuple.of(standby={"0": {0}}, active={"0": {1}} if m == "b" else None),
            lags={} if lag is None else {("0", 0): lag},
        )
        for m, lag in sorted(lags.items())
    ]


def new_active(members: list[AssignorMember], acceptable_lag: int = 10) -> str:
    result = assign(members, {"0": 2}, stateful={"0"}, num_standby=1, acceptable_lag=acceptable_lag)
    (owner,) = [m for m, r in result.items() if 0 in r.active.get("0", ())]
    return owner


def test_a_caught_up_standby_is_preferred_over_a_lagging_one() -> None:
    # By load and name c would win (a lagging c was chosen before lags were an input).
    assert new_active(orphaned({"c": 500, "d": 5})) == "d"
    assert new_active(orphaned({"c": 5, "d": 500})) == "c"


def test_without_a_caught_up_standby_the_least_lag_wins_and_no_report_comes_last() -> None:
    assert new_active(orphaned({"c": 900, "d": 50})) == "d"
    assert new_active(orphaned({"c": None, "d": 50_000})) == "d"
    # Equally caught up (both within the acceptable lag): load and name decide, as before.
    assert new_active(orphaned({"c": 9, "d": 0})) == "c"
    assert new_active(orphaned({"c": None, "d": None})) == "c"


def test_a_caught_up_standby_at_its_quota_leaves_the_task_to_the_next() -> None:
    # b is caught up but keeps 0_1 and is at its quota of one active: c takes 0_0.
    assert new_active(orphaned({"b": 0, "c": 500})) == "c"


@st.composite
def orphaned_tasks(draw: st.DrawFn) -> tuple:
    """A group of one-member processes with at most a task each (so no quota gets in the
    way of a dead owner's task), standbys, and random lag reports."""
    processes = draw(st.integers(3, 5))
    tasks = draw(st.integers(1, processes - 1))  # some process has no active task
    members = [AssignorMember(f"m{i}", f"p{i}") for i in range(processes)]
    standbys = draw(st.integers(1, 2))
    lag = st.one_of(st.none(), st.integers(0, 40))
    lags = [draw(st.lists(lag, min_size=tasks, max_size=tasks)) for _ in members]
    gone = draw(st.integers(0, tasks - 1))  # the member that held task `gone` dies
    return members, tasks, standbys, lags, draw(st.integers(0, 20)), gone


@settings(max_examples=200, deadline=None)
@given(orphaned_tasks())
def test_a_dead_owners_task_goes_to_its_most_caught_up_standby(case: tuple) -> None:
    members, tasks, standbys, lags, acceptable, gone = case
    first = assign(members, {"0": tasks}, {"0"}, standbys)
    (leaver,) = [m for m, r in first.items() if gone in r.active.get("0", ())]
    rest = [
        AssignorMember(m.member_id, m.process_id, first[m.member_id],
                       lags={("0", p): lag for p, lag in enumerate(lags[i]) if lag is not None})
        for i, m in enumerate(members)
        if m.member_id != leaver
    ]  # fmt: skip
    second = assign(rest, {"0": tasks}, {"0"}, standbys, acceptable_lag=acceptable)
    check_invariants(rest, second, {"0": tasks}, {"0"}, standbys)
    for task in task_ids(first[leaver].active):
        # The survivors keep their own task; those without one may take the dead owner's.
        free = [m.member_id for m in rest if not first[m.member_id].active]
        had = [m for m in free if task in set(task_ids(first[m].standby))]
        (owner,) = [m for m, r in second.items() if task in set(task_ids(r.active))]
        if had:
            reported = {m.member_id: m.lags.get(task) for m in rest}
            ranks = {m: lag_rank(reported[m], acceptable) for m in had}
            assert owner in had and ranks[owner] == min(ranks.values()), (task, owner, ranks)


# --- a cold start gives tasks back to the state on disk (Kafka's StickyTaskAssignorTest) ---


def reporting(member_id: str, process_id: str, partitions: dict[int, int]) -> AssignorMember:
    """A member with a fresh id and no previous target that reports changelog offsets."""
    return AssignorMember(
        member_id, process_id, offsets={("s", p): o for p, o in partitions.items()}
    )


def active_partitions(result: dict[str, TasksTuple], *member_ids: str) -> set[int]:
    return {p for m in member_ids for p in result[m].active.get("s", ())}


def test_a_cold_start_gives_each_member_the_tasks_it_reports_offsets_for() -> None:
    members = [reporting("member1", "process1", {0: 100, 1: 100}),
               reporting("member2", "process2", {2: 100, 3: 100})]  # fmt: skip
    result = assign(members, {"s": 4}, stateful={"s"}, num_standby=0)
    assert active_partitions(result, "member1") == {0, 1}
    assert active_partitions(result, "member2") == {2, 3}


def test_a_cold_start_keeps_tasks_on_the_process_whose_members_report_them() -> None:
    first, second = {0: 100, 1: 100}, {2: 100, 3: 100}
    members = [reporting("member1_1", "process1", first), reporting("member1_2", "process1", first),
               reporting("member2_1", "process2", second),
               reporting("member2_2", "process2", second)]  # fmt: skip
    result = assign(members, {"s": 4}, stateful={"s"}, num_standby=0)
    assert active_partitions(result, "member1_1", "member1_2") == {0, 1}
    assert active_partitions(result, "member2_1", "member2_2") == {2, 3}
    assert all(len(r.active.get("s", ())) == 1 for r in result.values())


def test_current_owners_rank_before_reports_and_the_most_caught_up_report_first() -> None:
    members = [
        AssignorMember("member1", "process1", TasksTuple.of(active={"s": {0}})),
        AssignorMember("member2", "process2", TasksTuple.of(standby={"s": {0, 1}})),
        reporting("member3", "process3", {0: 1_000_000, 1: 1_000_000, 2: 100}),
        reporting("member4", "process4", {2: 50}),
    ]
    result = assign(members, {"s": 4}, stateful={"s"}, num_standby=0)
    assert [active_partitions(result, m.member_id) for m in members] == [{0}, {1}, {2}, {3}]


def test_a_cold_start_puts_standbys_away_from_the_process_holding_the_state() -> None:
    members = [
        reporting("member1", "process1", {0: 100}),
        reporting("member2", "process2", {1: 100}),
    ]
    result = assign(members, {"s": 2}, stateful={"s"}, num_standby=1)
    assert result["member1"] == TasksTuple.of(active={"s": {0}}, standby={"s": {1}})
    assert result["member2"] == TasksTuple.of(active={"s": {1}}, standby={"s": {0}})
