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

A member with a live push connection (docs/sessions.md, "Push": its member item says so,
`$connect` marks it and its `$disconnect` clears it) is another case: its crash is seen by the
disconnect (the grace, about 1 s), so its session is only the fallback for a host or network
loss, and its client heartbeats up to CONNECTED_INTERVAL_FACTOR of the coordinator's intervals
apart. Its slack is reckoned on that longer interval and may reach a whole session
(CONNECTED_MAX_SLACK_SHARE): at a 5 s coordinator interval (15 s while connected) and a 45 s
session it skips 2 heartbeats of 3 with 37.5 s of slack, so a host loss is seen at most
82.5 s after its last heartbeat (session + 2.5 connected intervals) instead of 45 s. Where the
longer beat nears the session (a short session), its deadline reaches at least one coordinator
interval past that beat, skips or not (connected_beat_margin_ms): a live member is never
expired between two of its beats.
"""

from __future__ import annotations

# The slack is at most this share of the session.
MAX_SLACK_SHARE = (1, 3)
# A connected member: its client's steady heartbeat is at most this many of the coordinator's
# intervals (client/member_push.py), and its slack at most this share of the session.
CONNECTED_INTERVAL_FACTOR = 3
CONNECTED_MAX_SLACK_SHARE = (1, 1)


def effective_skips(
    heartbeat_interval_ms: int,
    skips: int,
    session_ms: int,
    share: tuple[int, int] = MAX_SLACK_SHARE,
) -> int:
    """How many heartbeats after a renewal answer from reads alone: `skips` (the setting), or
    fewer when their slack, (skips + 1/2) intervals, would pass `share` of the session."""
    if skips <= 0 or heartbeat_interval_ms <= 0:
        return 0
    num, den = share
    # (2s + 1) * interval / 2 <= session * num / den, in integers.
    room = 2 * num * session_ms - den * heartbeat_interval_ms
    if room < 0:
        return 0
    return min(skips, room // (2 * den * heartbeat_interval_ms))


def renewal_slack_ms(
    heartbeat_interval_ms: int,
    skips: int,
    session_ms: int,
    share: tuple[int, int] = MAX_SLACK_SHARE,
) -> int:
    """How far past one session a renewal sets the deadline: (s + 1/2) intervals for the
    effective skips s; none when no skip fits (no delay that would save nothing)."""
    effective = effective_skips(heartbeat_interval_ms, skips, session_ms, share)
    if effective == 0:
        return 0
    return (2 * effective + 1) * heartbeat_interval_ms // 2


def member_renewal_slack_ms(
    heartbeat_interval_ms: int, skips: int, session_ms: int, *, connected: bool
) -> int:
    """The slack of a member's renewal: renewal_slack_ms's, or for a member with a live push
    connection the one of its longer interval (CONNECTED_INTERVAL_FACTOR) up to a whole
    session, and never less than an unconnected member's."""
    slack = renewal_slack_ms(heartbeat_interval_ms, skips, session_ms)
    if not connected:
        return slack
    stretched = CONNECTED_INTERVAL_FACTOR * heartbeat_interval_ms
    return max(
        slack,
        renewal_slack_ms(stretched, skips, session_ms, CONNECTED_MAX_SLACK_SHARE),
        connected_beat_margin_ms(heartbeat_interval_ms, session_ms),
    )


def connected_beat_margin_ms(heartbeat_interval_ms: int, session_ms: int) -> int:
    """How far past a session a connected member's deadline must reach, whatever the skips, so
    that its client's beat, CONNECTED_INTERVAL_FACTOR intervals apart, never lets it lapse while
    it lives: the longer beat plus one coordinator interval. None at the defaults (15 + 5 s
    within a 45 s session); 2 s at a 2 s interval and a 6 s session, where the beat is the
    whole session (every beat then renews: no skip fits)."""
    return max(0, (CONNECTED_INTERVAL_FACTOR + 1) * heartbeat_interval_ms - session_ms)


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
