"""Warm-ups by lag (core/streams/warmups.py): a stateful active moves only to a caught-up
member; otherwise it stays and the destination warms up, within the group's budget."""

from __future__ import annotations

from groupcoord.core.streams.tasks import TasksTuple
from groupcoord.core.streams.warmups import Report, caught_up, refine

HOLDERS = {("0", p): "a" for p in range(4)}
PROCESS = {"a": "p1", "b": "p2", "c": "p1"}
# What the sticky assignor answers when b joins: half of a's tasks move to b.
TARGETS = {
    "a": TasksTuple.of(active={"0": {0, 1}}, standby={"0": {2, 3}}),
    "b": TasksTuple.of(active={"0": {2, 3}}, standby={"0": {0, 1}}),
}


def run(reports: dict[str, Report], budget: int = 2, stateful: str = "0") -> dict:
    return refine(
        TARGETS,
        HOLDERS,
        PROCESS,
        reports,
        frozenset({stateful}),
        acceptable_lag=10,
        max_warmups=budget,
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
