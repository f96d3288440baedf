"""When a heartbeat writes the member's session deadline, pure.

A heartbeat that changes nothing need not write: the member's stored deadline already covers a
whole session from now. So a renewal writes the deadline `now + session + slack`, where the
slack is `(skips + 1/2)` heartbeat intervals, and the next `skips` heartbeats (a heartbeat
comes a little over an interval after the last) find the deadline still a session away and
answer from reads alone. A member is therefore never expired earlier than one session after
its last heartbeat, and at most the slack later; skips 0 writes on every heartbeat, without
slack: Kafka's exact timing. Every renewal saved is a conditional write (1 WCU) saved.
"""

from __future__ import annotations


def renewal_slack_ms(heartbeat_interval_ms: int, skips: int) -> int:
    """How far past one session a renewal sets the deadline."""
    if skips <= 0 or heartbeat_interval_ms <= 0:
        return 0
    return (2 * skips + 1) * heartbeat_interval_ms // 2


def renewed_deadline(deadline_ms: int, now_ms: int, session_ms: int, slack_ms: int) -> int | None:
    """The session deadline a heartbeat at `now_ms` writes, or None when the stored
    `deadline_ms` still lies a whole session ahead (nothing to write)."""
    if slack_ms > 0 and deadline_ms >= now_ms + session_ms:
        return None
    return now_ms + session_ms + slack_ms


def last_renewed_ms(deadline_ms: int, session_ms: int, slack_ms: int) -> int:
    """When a heartbeat last renewed the session, from the deadline it wrote (a session that
    a join or a commit started, without slack, reads up to `slack_ms` early)."""
    return deadline_ms - session_ms - slack_ms
