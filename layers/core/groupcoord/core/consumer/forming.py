"""A new consumer group's first target, held back while its members are still joining (pure).

Members that start together join one after another (each join is one conditional write of
the group item), so a first target installed at the first join gives that member every
partition, and each later install (batched a `group.consumer.assignment.interval.ms` apart)
takes some back: the group is balanced only after several rounds of revocations. Held back
until no member joined for `groupcoord.consumer.first.assignment.delay.ms`, the first target
covers every member that started together, and none of them revokes anything. The hold never
lasts longer than FIRST_TARGET_HOLD_MAX_MS after the group was created: a join waiting for
its group's first target is answered within 3 s (service/consumer/install.py), with what a
later member join brings installed a batching interval later, as after any install. Kafka's
streams groups hold their first target for `group.streams.initial.rebalance.delay.ms` (3 s);
this hold ends as soon as the joins stop.
"""

from __future__ import annotations

from .model import ConsumerGroup

FIRST_TARGET_HOLD_MAX_MS = 2_000
# How often a join waiting for its group's first target looks again once the hold is over.
FIRST_TARGET_POLL_MS = 50


def first_target_held_until(group: ConsumerGroup, now_ms: int, delay_ms: int) -> int | None:
    """Until when `group`'s first target is held back (None: not held, install it now): the
    last membership change (the group epoch's last move) plus `delay_ms`, and no later than
    FIRST_TARGET_HOLD_MAX_MS after the group was created. Only a group that has never had a
    target is held."""
    if delay_ms <= 0 or group.target_epoch > 0 or group.group_epoch == 0:
        return None
    last_change = group.rebalances[-1].at_ms if group.rebalances else group.created_at_ms
    until = min(last_change + delay_ms, group.created_at_ms + FIRST_TARGET_HOLD_MAX_MS)
    return until if until > now_ms else None


def first_target_wait_ms(group: ConsumerGroup, now_ms: int, delay_ms: int) -> int:
    """How long a join waiting for `group`'s first target (as read at `now_ms`) sleeps before
    it reads the group again: until the hold ends (a later join may extend it: the next read
    tells), and FIRST_TARGET_POLL_MS at least (another request's install may be running).
    Joins that wait out the hold together read the group a few times, not every 50 ms."""
    until = first_target_held_until(group, now_ms, delay_ms)
    return max(FIRST_TARGET_POLL_MS, 0 if until is None else until - now_ms)
