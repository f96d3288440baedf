"""A member's push channel (docs/sessions.md, "Push"): a WebSocket to the URL find-coordinator
told, opened for the member's group and id, on which the coordinator posts a notice whenever
the member should heartbeat. A hint beside the protocol: the member heartbeats at its interval
whatever happens here, and a socket that drops, or never opens, costs latency only.

The `websockets` package (the `push` extra) is imported only here, when a socket is opened;
without it the member polls, and says so once.
"""

from __future__ import annotations

import contextlib
import json
import logging
import random
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any
from urllib.parse import quote, urlencode

log = logging.getLogger("groupcoord.client.push")

# API Gateway closes a connection idle for 10 minutes (a WebSocket ping frame does not count: it
# needs a message): a keepalive about every 9 keeps it open (and finds a dead one). API Gateway
# answers it itself, one-way: one message in, no function call, nothing back (docs/
# performance.md, cost model). Each pause is drawn within PING_JITTER of the interval (at most
# 9 min 22 s: a margin of over half a minute before the idle limit), so that members connected
# together do not send together.
PING_INTERVAL_S = 540.0
PING_JITTER = 0.04
# Reconnects back off exponentially with full jitter, from the first pause up to the cap.
BACKOFF_FIRST_S = 0.2
BACKOFF_CAP_S = 30.0
OPEN_TIMEOUT_S = 5.0
# How often the reader looks up from the socket (to stop, or to follow a new member id).
RECV_SLICE_S = 0.25
# The push channel's messages (the WebSocket API's routes: groupcoord.http.websocket, which
# the client does not import). A ping makes the socket its member's current one again (one
# function call, answered pong); a keepalive only keeps the socket open.
PING = json.dumps({"action": "ping"})
KEEPALIVE = json.dumps({"action": "keepalive"})

Notice = Callable[[float], None]  # called with the delay (seconds) before the heartbeat


def reconnect_pause_s(failures: int, jitter: float) -> float:
    """The pause before the next connect. After a socket that ended in order (the member's
    id changed): the first pause. After `failures` failed attempts in a row (a socket that
    dropped counts one): full jitter, `jitter` (0 to 1, a random draw) of an exponential
    ceiling, the first pause doubled per failure up to the cap, so that members a restarted
    coordinator dropped together do not reconnect together."""
    if failures <= 0:
        return BACKOFF_FIRST_S
    ceiling = min(BACKOFF_CAP_S, BACKOFF_FIRST_S * 2 ** min(failures, 16))
    return min(1.0, max(0.0, jitter)) * ceiling


def ping_pause_s(interval_s: float, jitter: float) -> float:
    """The pause before the next ping: `interval_s` moved by up to PING_JITTER of it either
    way, `jitter` (0 to 1, a random draw) placing it."""
    return interval_s * (1 + PING_JITTER * (2 * min(1.0, max(0.0, jitter)) - 1))


def handshake_may_linger(error: BaseException) -> bool:
    """Whether a handshake that failed with `error` may have its `$connect` recorded still, after
    a later socket's: unless the API answered it with a refusal (4xx: refused, or throttled
    before any function ran), it may (a timeout, a connection lost mid-way, or a 5xx: API
    Gateway answers 500 when the function outlives its 29 s integration timeout, and the
    function may write still)."""
    status = getattr(getattr(error, "response", None), "status_code", None)
    return not (isinstance(status, int) and 400 <= status < 500)


class PushChannel:
    """The socket of one member, on a daemon thread: connects when the member has an id,
    follows a new id (a rejoin), keeps the socket alive, reconnects with jittered back-off, and
    calls `on_notice` for each notice. `connected` tells whether a socket is open now."""

    def __init__(
        self,
        url: str,
        group_id: str,
        member_id: Callable[[], str],
        on_notice: Notice,
        headers_for: Callable[[str], Mapping[str, str]] = lambda _: {},
        ping_interval_s: float = PING_INTERVAL_S,
        look_s: float = RECV_SLICE_S,
    ) -> None:
        self.url = url
        self.group_id = group_id
        self._member_id = member_id
        self._on_notice = on_notice
        self._headers_for = headers_for
        self._ping_interval_s = ping_interval_s
        self._look_s = look_s
        self._stop = threading.Event()
        # wake(): the member has an id now; without it the idle thread would see it only at
        # its next look, and every notice posted meanwhile (a joiner's) is lost.
        self._woken = threading.Event()
        self._connected = threading.Event()
        self._socket: Any = None
        self._fell_back = False
        # A handshake attempt may have its `$connect` recorded after the next socket's (it
        # failed without a refusal): the next socket pings at its open and first interval.
        self._ping_owed = False
        self._thread = threading.Thread(target=self._run, name=f"push-{group_id}", daemon=True)

    @property
    def connected(self) -> bool:
        return self._connected.is_set()

    def start(self) -> PushChannel:
        self._thread.start()
        return self

    def wake(self) -> None:
        """The member's id changed (a join answered): connect now, not at the next look."""
        self._woken.set()

    def stop(self, timeout_s: float = 2.0, *, abort: bool = False) -> None:
        """Close the socket: a clean close (the coordinator's `$disconnect` sees an orderly
        close), or, `abort`, the connection dropped without a close frame, as a killed
        process's is (a test's simulated crash)."""
        self._stop.set()
        self._woken.set()
        socket = self._socket
        if socket is not None:
            with contextlib.suppress(Exception):  # closing already: nothing to add
                if abort:
                    socket.close_socket()
                else:
                    socket.close()
        self._thread.join(timeout=timeout_s)

    def _run(self) -> None:
        try:
            from websockets.sync.client import connect
        except ImportError:
            log.warning(
                "push: the websockets package is not installed (pip install "
                "'groupcoord[push]'); polling at the heartbeat interval"
            )
            return
        failures = 0
        while not self._stop.is_set():
            member_id = self._member_id()
            if not member_id:
                self._woken.wait(self._look_s)
                self._woken.clear()
                continue
            try:
                self._session(connect, member_id)
                failures = 0
            except Exception as error:  # refused, unreachable, or a socket that dropped
                failures = 1 if self._connected.is_set() else failures + 1
                self._fall_back(error)
            finally:
                was_connected = self._connected.is_set()
                self._connected.clear()
                self._socket = None
            if self._stop.is_set():
                return
            if was_connected:
                # A socket that closed under the member: a beat now, while it reconnects (a
                # notice may have been lost, and its session may be in a disconnect grace).
                self._on_notice(0.0)
            self._stop.wait(reconnect_pause_s(failures, random.random()))

    def _session(self, connect: Any, member_id: str) -> None:
        # Encoded as SigV4 encodes a query (a space is %20, "/" escaped), so that a signed
        # handshake's canonical request is the one API Gateway computes.
        query = urlencode(
            {"groupId": self.group_id, "memberId": member_id}, quote_via=quote, safe=""
        )
        url = f"{self.url}?{query}"
        headers = dict(self._headers_for(url)) or None
        try:
            opened = connect(
                url, additional_headers=headers, open_timeout=OPEN_TIMEOUT_S, max_size=64 * 1024
            )
        except Exception as error:
            self._ping_owed = self._ping_owed or handshake_may_linger(error)
            raise
        with opened as socket:
            self._socket = socket
            # After an uncertain handshake, a ping makes this socket its member's current one
            # whatever order the coordinator recorded the connects in; the stale `$connect`
            # may still be running, so one more at the first interval (_next_message).
            if self._ping_owed:
                socket.send(PING)
            self._connected.set()
            if self._fell_back:
                log.info("push: connected again to %s", self.url)
                self._fell_back = False
            # A notice may have gone while no socket was open: look now.
            self._on_notice(0.0)
            self._read(socket, member_id)

    def _read(self, socket: Any, member_id: str) -> None:
        next_send = time.monotonic() + self._ping_pause_s()
        while not self._stop.is_set() and self._member_id() == member_id:
            try:
                message = socket.recv(timeout=RECV_SLICE_S)
            except TimeoutError:
                if time.monotonic() >= next_send:
                    socket.send(self._next_message())
                    next_send = time.monotonic() + self._ping_pause_s()
                continue
            self._handle(message)

    def _next_message(self) -> str:
        """The periodic message: the owed second ping (any stale `$connect` has finished by
        now: 29 s at most), then keepalives."""
        if self._ping_owed:
            self._ping_owed = False
            return PING
        return KEEPALIVE

    def _ping_pause_s(self) -> float:
        return ping_pause_s(self._ping_interval_s, random.random())

    def _handle(self, message: str | bytes) -> None:
        try:
            notice = json.loads(message)
        except ValueError:
            return
        log.debug("push: notice %s", notice)
        if isinstance(notice, dict) and notice.get("type") == "heartbeat":
            after_ms = notice.get("afterMs")
            delay = after_ms / 1000 if isinstance(after_ms, int) and 0 < after_ms < 60_000 else 0
            self._on_notice(delay)

    def _fall_back(self, error: Exception) -> None:
        """Say once, until a socket opens again, that the member polls."""
        if not self._fell_back and not self._stop.is_set():
            log.warning(
                "push: no socket to %s (%s); polling at the heartbeat interval until it reconnects",
                self.url,
                type(error).__name__,
            )
            self._fell_back = True
