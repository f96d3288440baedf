"""Warm-ups by lag (core/streams/warmups.py): a stateful active moves only to a caught-up
member; otherwise it stays and the destination warms up, within the group's budget."""

from __future__ import annotations

from dataclasses import replace

from hypothesis import given, settings
from hypothesis import strategies as st

from groupcoord.core.streams.assignor import AssignorMember, assign
from groupcoord.core.streams.tasks import TaskId, TasksTuple, task_ids
from groupcoord.core.streams.warmups import Report, caught_up, refine

HOLDERS = {("0", p): "a" for p in range(4)}
PROCESS = {"a": "p1", "b": "p2", "c": "p1"}
# What the sticky assignor answers when b joins: half of a's tasks move to b.
TARGETS = {
    "a": TasksTuple.of(active={"0": {0, 1}}, standby={"0": {2, 3}}),
    "b": TasksTuple.of(active={"0": {2, 3}}, standby={"0": {0, 1}}),
}


def run(
    reports: dict[str, Report], budget: int = 2, stateful: str = "0", standbys: int = 0
) -> dict:
    return refine(
        TARGETS,
        HOLDERS,
        PROCESS,
        reports,
        frozenset({stateful}),
        acceptable_lag=10,
        max_warmups=budget,
        num_standby=standbys,
    )


def test_lag_is_end_less_offset_and_no_report_is_not_caught_up() -> None:
    report = Report({("0", 2): 95}, {("0", 2): 100, ("0", 3): 100})
    assert report.lag(("0", 2)) == 5 and report.lag(("0", 3)) is None
    assert caught_up(report, ("0", 2), 10) and not caught_up(report, ("0", 3), 10)
    assert not caught_up(None, ("0", 2), 10)
    assert report.lags() == {("0", 2): 5}


def test_a_reports_digest_is_its_content_in_any_order() -> None:
    one = Report({("0", 1): 5, ("0", 0): 7}, {("0", 0): 9})
    same = Report({("0", 0): 7, ("0", 1): 5}, {("0", 0): 9})
    assert one.digest() == same.digest()
    assert one.digest() != Report({("0", 0): 7, ("0", 1): 6}, {("0", 0): 9}).digest()
    # Offsets and end offsets are not interchangeable.
    assert Report({("0", 0): 7}, {}).digest() != Report({}, {("0", 0): 7}).digest()


def test_a_lagging_destination_warms_up_while_the_active_stays() -> None:
    refined = run({})
    assert refined["a"].active == {"0": frozenset({0, 1, 2, 3})}
    assert refined["a"].standby == {}  # never a copy beside the active
    assert refined["b"].active == {} and refined["b"].warmup == {"0": frozenset({2, 3})}


def test_a_caught_up_destination_takes_the_active() -> None:
    report = Report({("0", 2): 95, ("0", 3): 99}, {("0", 2): 100, ("0", 3): 100})
    assert run({"b": report}) == TARGETS


def test_the_budget_bounds_the_warmups_and_stateless_tasks_move_at_once() -> None:
    refined = run({}, budget=1)
    assert refined["b"].warmup == {"0": frozenset({2})}
    assert refined["a"].active == {"0": frozenset({0, 1, 2, 3})}
    assert run({}, stateful="1") == TARGETS


def test_a_held_back_task_keeps_its_standby_on_a_process_without_a_copy() -> None:
    # Past the warm-up budget, the destination keeps a standby of the task that stays.
    refined = run({}, budget=1, standbys=1)
    assert refined["b"].warmup == {"0": frozenset({2})}
    assert refined["b"].standby == {"0": frozenset({0, 1, 3})}
    # A third process takes the standby the assignor had put beside the holder.
    targets = {**TARGETS, "d": TasksTuple()}
    third = refine(targets, HOLDERS, PROCESS | {"d": "p3"}, {}, frozenset({"0"}),
                   acceptable_lag=10, max_warmups=2, num_standby=1)  # fmt: skip
    assert third["b"].warmup == {"0": frozenset({2, 3})}
    assert third["d"].standby == {"0": frozenset({2, 3})}
    assert third["a"].standby == {}


# --- the standby contract through the assignor and the warm-ups together ---


@st.composite
def joins(draw: st.DrawFn) -> tuple:
    """A group of one-member processes on a stateless and a stateful sub-topology, some of
    which join a running group, with lag reports (caught up or not) and both settings."""
    processes = draw(st.integers(2, 5))
    members = [AssignorMember(f"m{i}", f"p{i}") for i in range(processes)]
    running = draw(st.integers(1, processes - 1))
    subs = {"0": draw(st.integers(1, 8)), "1": draw(st.integers(1, 8))}
    everyone_caught_up = draw(st.booleans())
    reports = {}
    for m in members[running:]:
        lag = 0 if everyone_caught_up else draw(st.sampled_from([0, 50, None]))
        if lag is not None:
            tasks = [("1", p) for p in range(subs["1"])]
            reports[m.member_id] = Report(
                dict.fromkeys(tasks, 100), dict.fromkeys(tasks, 100 + lag)
            )
    standbys, warmups = draw(st.integers(0, 2)), draw(st.integers(0, 2))
    return members, running, subs, reports, everyone_caught_up, standbys, warmups


@settings(max_examples=150, deadline=None)
@given(joins())
def test_standbys_follow_the_contract_while_tasks_move_by_lag(case: tuple) -> None:
    members, running, subs, reports, everyone_caught_up, standbys, warmups = case
    first = assign(members[:running], subs, {"1"}, standbys)
    holders = {t: m for m, r in first.items() for t in task_ids(r.active)}
    again = [replace(m, previous=first.get(m.member_id, TasksTuple())) for m in members]
    second = assign(again, subs, {"1"}, standbys, acceptable_lag=10)
    process = {m.member_id: m.process_id for m in members}
    result = refine(second, holders, process, reports, frozenset({"1"}),
                    acceptable_lag=10, max_warmups=warmups, num_standby=standbys)  # fmt: skip
    copies: dict[TaskId, list[str]] = {}
    for m, r in result.items():
        assert "0" not in r.standby and "0" not in r.warmup  # stateless: no copies
        for task in task_ids(r.all_tasks()):
            copies.setdefault(task, []).append(process[m])
    for task, where in copies.items():
        assert len(where) == len(set(where)), task  # never two copies on one process
    for p in range(subs["1"]):
        count = sum(p in r.standby.get("1", ()) for r in result.values())
        assert count == standbys or len(copies[("1", p)]) == len(members), (p, count)
    assert sum(len(list(task_ids(r.warmup))) for r in result.values()) <= warmups
    if everyone_caught_up:  # nothing waits for state: no warm-ups, balanced actives
        assert all(not r.warmup for r in result.values())
        counts = [len(list(task_ids(r.active))) for r in result.values()]
        assert max(counts) - min(counts) <= 1
