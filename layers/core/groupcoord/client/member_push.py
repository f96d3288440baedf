"""A member's side of the push channel (docs/client.md, "Push"), shared by GroupMember (and so
KinesisConsumer) and StreamsMember: at most one socket (client/push.py), to the URL
find-coordinator offers, moved or closed when the offer changes and never opened again once
the member closed; the heartbeats its notices ask for; the steady heartbeat interval while the
socket is open; and one log line when the member polls instead.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections.abc import Callable, Mapping

from .push import PushChannel

log = logging.getLogger("groupcoord.client.push")

# After a notice's beat, a second one this much later: the first may read the group (an
# eventually consistent read) before the change reached it, and the next one at the
# interval is 15 s away.
SECOND_LOOK_S = 1.0


def steady_interval_s(coordinator_s: float, push_s: float, connected: bool) -> float:
    """The steady heartbeat interval: while the socket is open push carries every change, so a
    beat is a liveness backup, `push_s` apart (never more than 3 of the coordinator's
    intervals, which fit its session, nor less than one); else the coordinator's."""
    if connected:
        return max(coordinator_s, min(push_s, 3 * coordinator_s))
    return coordinator_s


class MemberPush:
    """`member_id` says under which id to connect ("" while the member has none: no socket).
    `enabled` False keeps the member off the channel. `interval_s` is the steady heartbeat
    while the socket is open (at most 3 of the coordinator's intervals). `headers_for` gives
    a handshake's headers for its URL (Transport.handshake_headers: signed for an API with IAM
    auth)."""

    def __init__(
        self,
        group_id: str,
        member_id: Callable[[], str],
        *,
        enabled: bool = True,
        interval_s: float = 15.0,
        headers_for: Callable[[str], Mapping[str, str]] = lambda _: {},
    ) -> None:
        self.group_id = group_id
        self._member_id = member_id
        self._enabled = enabled
        self._interval_s = interval_s
        self._headers_for = headers_for
        self._channel: PushChannel | None = None
        self._lock = threading.Lock()  # offers come from poll() and the heartbeat thread
        self._closed = False
        self._beats_at: list[float] = []  # notices' beats to come (monotonic times)
        self._beats_lock = threading.Lock()
        self._noticed = threading.Event()
        self._said_polling = False

    @property
    def connected(self) -> bool:
        channel = self._channel
        return channel is not None and channel.connected

    @property
    def url(self) -> str | None:
        channel = self._channel
        return channel.url if channel is not None else None

    def offer(self, url: object) -> None:
        """find-coordinator's `pushUrl` (None or "": not offered): open or move the socket,
        or close it and poll."""
        with self._lock:
            if self._closed:
                return
            wanted = url if isinstance(url, str) and url else None
            current = self._channel
            if wanted is not None and self._enabled:
                if current is not None and current.url == wanted:
                    return
                if current is not None:
                    current.stop()
                self._channel = PushChannel(
                    wanted, self.group_id, self._member_id, self.notice, self._headers_for
                ).start()
                return
            self._channel = None
            if current is not None:
                current.stop()
            self._say_polling()

    def _say_polling(self) -> None:
        """Once: that this member polls although push is on by default (a member the user
        kept off the channel says nothing)."""
        if self._said_polling or not self._enabled:
            return
        self._said_polling = True
        log.info(
            "push: the coordinator offers no push channel (no pushUrl); group %s polls at the "
            "heartbeat interval",
            self.group_id,
        )

    def member_changed(self) -> None:
        """The member's id was just given (a join answered): open the socket at once."""
        channel = self._channel
        if channel is not None:
            channel.wake()

    def close(self, *, abort: bool = False) -> None:
        """Close the socket for good (`abort`: dropped without a close frame, as a killed
        process's is)."""
        with self._lock:
            self._closed = True
            channel, self._channel = self._channel, None
        if channel is not None:
            channel.stop(abort=abort)
        self._noticed.set()  # a wait() returns

    # --- the beats notices ask for ---

    def notice(self, delay_s: float, now: float | None = None) -> None:
        """A notice (or a socket just opened or dropped): heartbeat after `delay_s`, and once
        more SECOND_LOOK_S later (`now`: the monotonic time, by default the clock's)."""
        at = (time.monotonic() if now is None else now) + max(0.0, delay_s)
        with self._beats_lock:
            self._beats_at = sorted({*self._beats_at, at, at + SECOND_LOOK_S})
        self._noticed.set()

    def due_beat(self, now: float) -> float:
        """The earliest notice beat that is due by `now` (those due are consumed), or
        infinity."""
        with self._beats_lock:
            if not self._beats_at or self._beats_at[0] > now:
                return math.inf
            due = self._beats_at[0]
            self._beats_at = [at for at in self._beats_at if at > now]
            return due

    def next_beat(self) -> float:
        """When the next notice beat is due (monotonic), or infinity."""
        with self._beats_lock:
            return self._beats_at[0] if self._beats_at else math.inf

    def wait(self, timeout_s: float) -> None:
        """Wait up to `timeout_s`, or until a notice comes."""
        if self._noticed.wait(max(0.0, timeout_s)):
            self._noticed.clear()

    def interval_s(self, coordinator_interval_s: float) -> float:
        """The steady heartbeat interval now (steady_interval_s)."""
        return steady_interval_s(coordinator_interval_s, self._interval_s, self.connected)
