"""When a streams member's task offsets go out (client/task_offsets.py), on a clock the test
passes: the join's report, then one per interval with the latest values, an unchanged list
not again, a caught-up warm-up at once, and a rejoin starting over."""

from __future__ import annotations

from groupcoord.client.task_offsets import Report, TaskOffsetReports

T0, T1 = ("0", 0), ("0", 1)


def sent_now(reports: TaskOffsetReports, now_s: float, warmups: tuple = ()) -> Report:
    report = reports.due(now_s, warmups)
    reports.sent(report, now_s)
    return report


def test_one_report_per_interval_with_the_latest_values() -> None:
    reports = TaskOffsetReports(interval_ms=1000, acceptable_lag=10)
    assert sent_now(reports, 0.0) == Report()  # nothing reported yet
    reports.record({T0: 1}, {T0: 100})
    assert sent_now(reports, 0.0) == Report({T0: 1}, {T0: 100})  # the first: at once
    reports.record({T0: 2}, None)
    reports.record({T0: 3}, None)
    assert sent_now(reports, 0.999) == Report()
    # The interval passed: the latest offsets; the end offsets did not change.
    assert sent_now(reports, 1.0) == Report({T0: 3}, None)
    assert sent_now(reports, 5.0) == Report()  # nothing new
    reports.record({T0: 4}, None)
    assert sent_now(reports, 5.0).offsets == {T0: 4}


def test_a_warm_up_caught_up_goes_at_once_and_a_rejoin_sends_everything() -> None:
    reports = TaskOffsetReports(interval_ms=60_000, acceptable_lag=10)
    reports.record({T0: 50, T1: 0}, {T0: 100, T1: 100})
    sent_now(reports, 0.0, (T0,))
    reports.record({T0: 89, T1: 1}, None)
    assert not reports.caught_up([T0])  # 11 behind
    assert sent_now(reports, 1.0, (T0,)) == Report()
    reports.record({T0: 90, T1: 1}, None)
    assert not reports.caught_up([T1])  # not a warm-up of T0's news
    assert reports.caught_up([T0])
    assert sent_now(reports, 2.0, (T0,)) == Report({T0: 90, T1: 1}, None)
    assert not reports.caught_up([T0])  # the coordinator has it now
    reports.rejoined()
    assert sent_now(reports, 3.0) == Report({T0: 90, T1: 1}, {T0: 100, T1: 100})


def test_no_acceptable_lag_known_no_caught_up_news() -> None:
    reports = TaskOffsetReports()
    reports.record({T0: 100}, {T0: 100})
    assert not reports.caught_up([T0])
