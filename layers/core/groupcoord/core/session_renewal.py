"""When a heartbeat writes the member's session deadline, pure.

A heartbeat that changes nothing need not write: the member's stored deadline already covers a
whole session from now. So a renewal writes the deadline `now + session + slack`, where the
slack is `(skips + 1/2)` heartbeat intervals, and the next `skips` heartbeats (a heartbeat
comes a little over an interval after the last) find the deadline still a session away and
answer from reads alone. A member is therefore never expired earlier than one session after
its last heartbeat, and at most the slack later; skips 0 writes on every heartbeat, without
slack: Kafka's exact timing. Every renewal saved is a conditional write (1 WCU) saved.

The slack is also bounded by the session: at most a third of it (MAX_SLACK_SHARE, the ratio
Kafka advises between heartbeat interval and session timeout), so fewer heartbeats skip the
write when the session is short, and a member that chose a short session for fast failure
detection is removed at most a third of it late: with 5 s heartbeats and skips 2 a 45 s
session skips 2 (removed at most 12.5 s late), a 30 s session 1 (7.5 s), a 15 s session
none (on time: a slack that buys no skip is not taken).
"""

from __future__ import annotations

# The slack is at most this share of the session.
MAX_SLACK_SHARE = (1, 3)


def effective_skips(heartbeat_interval_ms: int, skips: int, session_ms: int) -> int:
    """How many heartbeats after a renewal answer from reads alone: `skips` (the setting), or
    fewer when their slack, (skips + 1/2) intervals, would pass MAX_SLACK_SHARE of the
    session."""
    if skips <= 0 or heartbeat_interval_ms <= 0:
        return 0
    num, den = MAX_SLACK_SHARE
    # (2s + 1) * interval / 2 <= session * num / den, in integers.
    room = 2 * num * session_ms - den * heartbeat_interval_ms
    if room < 0:
        return 0
    return min(skips, room // (2 * den * heartbeat_interval_ms))


def renewal_slack_ms(heartbeat_interval_ms: int, skips: int, session_ms: int) -> int:
    """How far past one session a renewal sets the deadline: (s + 1/2) intervals for the
    effective skips s; none when no skip fits (no delay that would save nothing)."""
    effective = effective_skips(heartbeat_interval_ms, skips, session_ms)
    if effective == 0:
        return 0
    return (2 * effective + 1) * heartbeat_interval_ms // 2


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
