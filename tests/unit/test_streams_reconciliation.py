"""Reconciliation of a streams member (core/streams/reconciliation.py): revocation first
(UNREVOKED_TASKS), then tasks once their holders let go (UNRELEASED_TASKS), roles changing in
place, and kept tasks keeping the epoch they were first granted at."""

from __future__ import annotations

from groupcoord.core.streams.reconciliation import (
    Holdings,
    MemberState,
    MemberTasks,
    holdings_of,
    is_lost_response,
    reconcile,
)
from groupcoord.core.streams.tasks import TasksTuple

STABLE = MemberState.STABLE
UNREVOKED = MemberState.UNREVOKED_TASKS
UNRELEASED = MemberState.UNRELEASED_TASKS
NOBODY = Holdings()


def tasks(active: tuple[int, ...] = (), standby: tuple[int, ...] = ()) -> TasksTuple:
    return TasksTuple.of(active={"0": active}, standby={"0": standby})


def at(epoch: int, held: TasksTuple) -> MemberTasks:
    """A member Stable at `epoch` holding `held`, its actives granted at `epoch`."""
    return MemberTasks(
        epoch=epoch,
        previous_epoch=epoch - 1,
        assigned=held,
        active_epochs={("0", p): epoch for p in held.active.get("0", ())},
    )


def test_a_member_at_its_target_is_left_alone() -> None:
    member = at(3, tasks((0, 1)))
    assert reconcile(member, "p1", 3, tasks((0,)), None, NOBODY) is member


def test_a_joiner_gets_its_free_target_at_the_target_epoch() -> None:
    after = reconcile(MemberTasks(), "p1", 4, tasks((0, 1), standby=(2,)), tasks(), NOBODY)
    assert (after.epoch, after.state, after.assigned) == (4, STABLE, tasks((0, 1), (2,)))
    assert after.active_epochs == {("0", 0): 4, ("0", 1): 4}


def test_revocation_comes_first_and_keeps_the_epoch() -> None:
    after = reconcile(at(3, tasks((0, 1))), "p1", 4, tasks((0,)), tasks((0, 1)), NOBODY)
    assert (after.epoch, after.state) == (3, UNREVOKED)
    assert after.assigned == tasks((0,)) and after.revoking == tasks((1,))
    # Until it reports the task gone (or says nothing), it stays where it is.
    assert reconcile(after, "p1", 4, tasks((0,)), tasks((0, 1)), NOBODY) is after
    assert reconcile(after, "p1", 4, tasks((0,)), None, NOBODY) is after
    done = reconcile(after, "p1", 4, tasks((0,)), tasks((0,)), NOBODY)
    assert (done.epoch, done.state, done.assigned) == (4, STABLE, tasks((0,)))


def test_a_kept_task_keeps_its_first_assignment_epoch() -> None:
    first = reconcile(MemberTasks(), "p1", 2, tasks((0,)), tasks(), NOBODY)
    second = reconcile(first, "p1", 5, tasks((0, 1)), tasks((0,)), NOBODY)
    assert second.epoch == 5
    assert second.active_epochs == {("0", 0): 2, ("0", 1): 5}
    assert second.assignment_epoch(("0", 0)) == 2 and second.assignment_epoch(("0", 7)) is None
    # Through a revocation too: the kept tasks still carry 2 and 5, the revoked one its own.
    third = reconcile(second, "p1", 7, tasks((0, 1)), tasks((0, 1)), NOBODY)
    assert third.epoch == 7 and third.active_epochs == {("0", 0): 2, ("0", 1): 5}
    revoking = reconcile(third, "p1", 8, tasks((1,)), tasks((0, 1)), NOBODY)
    assert revoking.state is UNREVOKED
    assert revoking.active_epochs == {("0", 0): 2, ("0", 1): 5}


def test_a_task_another_member_holds_is_unreleased_until_it_lets_go() -> None:
    other = holdings_of([("p2", tasks((1,)))])
    after = reconcile(at(3, tasks((0,))), "p1", 4, tasks((0, 1)), tasks((0,)), other)
    assert (after.epoch, after.state, after.assigned) == (4, UNRELEASED, tasks((0,)))
    released = reconcile(after, "p1", 4, tasks((0, 1)), tasks((0,)), NOBODY)
    assert (released.state, released.assigned) == (STABLE, tasks((0, 1)))
    assert released.active_epochs[("0", 1)] == 4


def test_an_active_waits_for_a_standby_of_its_own_process() -> None:
    # Another member of p1 still has the task's state as a standby (a shared state directory).
    same_process = holdings_of([("p1", tasks(standby=(1,)))])
    after = reconcile(MemberTasks(), "p1", 4, tasks((1,)), tasks(), same_process)
    assert after.state is UNRELEASED and not after.assigned.active
    elsewhere = holdings_of([("p2", tasks(standby=(1,)))])
    after = reconcile(MemberTasks(), "p1", 4, tasks((1,)), tasks(), elsewhere)
    assert after.state is STABLE and after.assigned == tasks((1,))


def test_a_standby_promoted_to_active_is_kept_until_the_active_is_granted() -> None:
    member = at(3, tasks((0,), standby=(1,)))
    holder = holdings_of([("p2", tasks((1,)))])
    waiting = reconcile(member, "p1", 4, tasks((0, 1)), tasks((0,), (1,)), holder)
    assert (waiting.state, waiting.assigned) == (UNRELEASED, tasks((0,), standby=(1,)))
    promoted = reconcile(waiting, "p1", 4, tasks((0, 1)), tasks((0,), (1,)), NOBODY)
    assert (promoted.state, promoted.assigned) == (STABLE, tasks((0, 1)))


def test_a_demoted_active_becomes_a_standby_at_once_and_is_still_revoked() -> None:
    member = at(3, tasks((0, 1)))
    after = reconcile(member, "p1", 4, tasks((0,), standby=(1,)), tasks((0, 1)), NOBODY)
    assert after.state is UNREVOKED
    assert after.assigned == tasks((0,), standby=(1,))
    assert after.revoking == tasks((1,))
    done = reconcile(after, "p1", 4, tasks((0,), (1,)), tasks((0,), (1,)), NOBODY)
    assert (done.epoch, done.state, done.assigned) == (4, STABLE, tasks((0,), (1,)))


def test_the_previous_epoch_is_a_lost_response_only_with_owned_tasks_assigned() -> None:
    member = at(4, tasks((0, 1)))
    assert is_lost_response(member, 3, tasks((0,)))
    assert not is_lost_response(member, 3, tasks((0, 2)))
    assert not is_lost_response(member, 3, None)
    assert not is_lost_response(member, 2, tasks((0,)))
