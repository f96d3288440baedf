"""core/rebalances.py: a group's record of its epoch moves, bounded, each cause told from the
membership the entry before recorded."""

from __future__ import annotations

from groupcoord.core.consumer.model import ConsumerGroup
from groupcoord.core.rebalances import (
    JOIN,
    LEAVE,
    MEMBER_UPDATE,
    REBALANCES_KEPT,
    TOPIC_CHANGE,
    RebalanceRecord,
    from_item,
    recorded,
    to_item,
    with_epoch_move,
)


def move(log: tuple[RebalanceRecord, ...], epoch: int, members: int, topics: bool = False):
    before = log[-1].epoch if log else 0
    return recorded(
        log, epoch_before=before, epoch_after=epoch, at_ms=1000 * epoch, members=members,
        topics_changed=topics,
    )  # fmt: skip


def test_each_move_is_recorded_with_its_cause_and_time() -> None:
    log: tuple[RebalanceRecord, ...] = ()
    for epoch, members, topics in [(1, 1, False), (2, 2, False), (3, 2, True), (4, 2, False),
                                   (5, 1, False), (6, 0, False)]:  # fmt: skip
        log = move(log, epoch, members, topics)
    assert [(r.epoch, r.cause, r.members, r.at_ms) for r in log] == [
        (1, JOIN, 1, 1000),
        (2, JOIN, 2, 2000),
        (3, TOPIC_CHANGE, 2, 3000),
        (4, MEMBER_UPDATE, 2, 4000),
        (5, LEAVE, 1, 5000),
        (6, LEAVE, 0, 6000),
    ]


def test_no_move_no_entry_and_the_record_is_bounded() -> None:
    log = move((), 1, 1)
    assert recorded(log, epoch_before=1, epoch_after=1, at_ms=5, members=3,
                    topics_changed=True) == log  # fmt: skip
    for epoch in range(2, 40):
        log = move(log, epoch, epoch)
    assert len(log) == REBALANCES_KEPT
    assert [r.epoch for r in log] == list(range(40 - REBALANCES_KEPT, 40))
    assert from_item(to_item(log)) == log and to_item(()) is None


def test_a_group_write_records_its_epoch_move_only() -> None:
    old = ConsumerGroup("g", group_epoch=3, member_count=1, rebalances=move((), 3, 1))
    assert with_epoch_move(old, old, at_ms=9) is old
    joined = with_epoch_move(old, old.with_members(+1), at_ms=9)
    assert joined.rebalances[-1] == RebalanceRecord(epoch=4, at_ms=9, cause=JOIN, members=2)
