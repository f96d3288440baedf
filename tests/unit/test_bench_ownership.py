"""bench/ownership.py: the intervals members held partitions, from their reports, and the
overlaps that fail a bench/push.py run."""

from __future__ import annotations

from bench.ownership import (
    ASSIGNED,
    KILLED,
    LOST,
    REVOKED,
    Event,
    held,
    overlaps,
    owned_again,
    owned_at,
    paused,
    reached,
)


def ev(t: float, name: str, *partitions: int) -> Event:
    return Event(t, name, frozenset(partitions))


def test_a_handoff_after_the_revocation_is_no_overlap() -> None:
    a = [ev(1.0, ASSIGNED, 0, 1), ev(5.0, REVOKED, 1)]
    b = [ev(5.2, ASSIGNED, 1)]
    assert overlaps(held("a", a, 0) + held("b", b, 0)) == []


def test_a_partition_taken_before_its_owner_gave_it_up_is_an_overlap() -> None:
    a = [ev(1.0, ASSIGNED, 0, 1), ev(5.0, REVOKED, 1)]
    b = [ev(4.5, ASSIGNED, 1)]
    (found,) = overlaps(held("a", a, 0) + held("b", b, 0))
    assert (found.partition, found.first, found.second) == (1, "a", "b")
    assert abs(found.seconds - 0.5) < 1e-9


def test_a_killed_member_holds_nothing_after_the_kill() -> None:
    # What its pipe delivered after the SIGKILL was said before it; nothing counts after.
    victim = [ev(1.0, ASSIGNED, 3), ev(9.0, KILLED), ev(9.5, ASSIGNED, 4)]
    survivor = [ev(10.0, ASSIGNED, 3, 4)]
    assert overlaps(held("v", victim, 0) + held("s", survivor, 0)) == []
    assert overlaps(held("v", victim, 0) + held("s", [ev(8.0, ASSIGNED, 3)], 0)) != []


def test_a_member_that_keeps_a_partition_overlaps_whoever_takes_it() -> None:
    zombie = [ev(1.0, ASSIGNED, 2)]  # never revoked: held until the end
    taker = [ev(30.0, ASSIGNED, 2), ev(31.0, LOST, 2)]
    (found,) = overlaps(held("z", zombie, 0) + held("t", taker, 0))
    assert found.partition == 2 and abs(found.seconds - 1.0) < 1e-9


def test_the_times_a_move_is_measured_by() -> None:
    others = {"b": [ev(2.0, ASSIGNED, 7)], "c": [ev(2.5, ASSIGNED, 8), ev(3.0, ASSIGNED, 9)]}
    assert owned_again({7, 8}, others, since=1.0) == 2.5
    assert owned_again({7, 8, 10}, others, since=1.0) is None
    joiner = [ev(1.0, ASSIGNED, 1), ev(1.5, ASSIGNED, 2, 3), ev(2.0, REVOKED, 3)]
    assert reached(joiner, 3, since=0.5) == 1.5
    assert reached(joiner, 4, since=0.5) is None
    assert owned_at(joiner, 1.9) == {1, 2, 3} and owned_at(joiner, 2.1) == {1, 2}


def test_paused_counts_what_a_member_gave_up_and_got_back() -> None:
    events = [ev(1.0, ASSIGNED, 1, 2, 3), ev(5.0, REVOKED, 1, 2, 3), ev(6.0, ASSIGNED, 1, 2)]
    assert paused(events, since=4.0, now_owned={1, 2}) == 2
    assert paused(events, since=5.5, now_owned={1, 2}) == 0
