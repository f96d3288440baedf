"""Who may commit in a streams group (core/streams/offsets.py): the current epoch anything,
an older one only partitions of active tasks held since then, a newer one nothing."""

from __future__ import annotations

from groupcoord.core.streams.member import StreamsGroupMember
from groupcoord.core.streams.offsets import streams_commit_error
from groupcoord.core.streams.reconciliation import MemberTasks
from groupcoord.core.streams.tasks import TasksTuple
from groupcoord.errors import Errors

# Active 0_0 since epoch 2, 0_1 since 5, 1_0 pending revocation since 3; member at epoch 6.
MEMBER = StreamsGroupMember(
    "m",
    tasks=MemberTasks(
        epoch=6,
        assigned=TasksTuple.of(active={"0": {0, 1}}, standby={"1": {1}}),
        revoking=TasksTuple.of(active={"1": {0}}),
        active_epochs={("0", 0): 2, ("0", 1): 5, ("1", 0): 3},
    ),
)
READERS = {"in": ("0",), "rep": ("1",)}


def error(epoch: int, *parts: tuple[str, int]) -> Errors | None:
    return streams_commit_error(MEMBER, epoch, parts, lambda t: READERS.get(t, ()))


def test_the_current_epoch_commits_anything() -> None:
    assert error(6, ("in", 0), ("elsewhere", 9)) is None


def test_an_older_epoch_commits_what_it_held_since() -> None:
    assert error(2, ("in", 0)) is None
    assert error(3, ("rep", 0)) is None  # pending revocation still counts
    assert error(4, ("in", 1)) == Errors.STALE_MEMBER_EPOCH  # granted at 5
    assert error(5, ("rep", 1)) == Errors.STALE_MEMBER_EPOCH  # a standby, not active
    assert error(5, ("in", 0), ("unknown", 0)) == Errors.STALE_MEMBER_EPOCH


def test_a_newer_epoch_or_no_member_is_refused() -> None:
    assert error(7, ("in", 0)) == Errors.STALE_MEMBER_EPOCH
    assert streams_commit_error(None, 1, [], lambda t: ()) == Errors.UNKNOWN_MEMBER_ID
