"""A new consumer group's first target held back while its members are still joining
(core/consumer/forming.py), on times the test chooses."""

from __future__ import annotations

from groupcoord.core.consumer.forming import (
    FIRST_TARGET_HOLD_MAX_MS,
    FIRST_TARGET_POLL_MS,
    first_target_held_until,
    first_target_wait_ms,
)
from groupcoord.core.consumer.model import ConsumerGroup
from groupcoord.core.rebalances import JOIN, RebalanceRecord

CREATED = 1_000_000
DELAY = 250


def forming(*joins_at: int, target_epoch: int = 0) -> ConsumerGroup:
    """A group created at CREATED whose members joined at `joins_at` (its epoch's moves)."""
    moves = tuple(RebalanceRecord(i + 1, at, JOIN, i + 1) for i, at in enumerate(joins_at))
    return ConsumerGroup(
        "g",
        group_epoch=len(joins_at),
        target_epoch=target_epoch,
        member_count=len(joins_at),
        created_at_ms=CREATED,
        rebalances=moves,
    )


def test_the_first_target_waits_until_no_member_joined_for_the_delay() -> None:
    group = forming(CREATED, CREATED + 100)
    assert first_target_held_until(group, CREATED + 100, DELAY) == CREATED + 100 + DELAY
    assert first_target_held_until(group, CREATED + 349, DELAY) == CREATED + 350
    assert first_target_held_until(group, CREATED + 350, DELAY) is None
    # A lone member waits the delay once.
    assert first_target_held_until(forming(CREATED), CREATED + 10, DELAY) == CREATED + DELAY


def test_joins_that_keep_coming_hold_it_no_longer_than_the_maximum_after_creation() -> None:
    steady = forming(*range(CREATED, CREATED + 5_000, 200))
    cap = CREATED + FIRST_TARGET_HOLD_MAX_MS
    assert first_target_held_until(steady, cap - 1, DELAY) == cap
    assert first_target_held_until(steady, cap, DELAY) is None


def test_only_a_group_that_never_had_a_target_is_held() -> None:
    assert first_target_held_until(forming(CREATED, target_epoch=1), CREATED, DELAY) is None
    assert first_target_held_until(forming(), CREATED, DELAY) is None  # nobody joined
    assert first_target_held_until(forming(CREATED), CREATED, 0) is None  # no delay set
    # A group item written before the epoch's moves were recorded: its creation counts.
    unrecorded = ConsumerGroup("g", group_epoch=1, member_count=1, created_at_ms=CREATED)
    assert first_target_held_until(unrecorded, CREATED, DELAY) == CREATED + DELAY


def test_a_join_waiting_for_the_first_target_reads_again_when_the_hold_ends() -> None:
    group = forming(CREATED, CREATED + 100)
    assert first_target_wait_ms(group, CREATED + 120, DELAY) == 230  # at CREATED + 350
    # Past the hold (or with none), soon: another request's install may be running.
    assert first_target_wait_ms(group, CREATED + 340, DELAY) == FIRST_TARGET_POLL_MS
    assert first_target_wait_ms(group, CREATED + 400, DELAY) == FIRST_TARGET_POLL_MS
    assert first_target_wait_ms(group, CREATED + 120, 0) == FIRST_TARGET_POLL_MS
