"""A chaos member's push socket (tests/e2e/test_chaos.py with GROUPCOORD_TEST_PUSH=on), on a
thread of its own, as the client library holds one (docs/sessions.md, "Push"): opened at the
push URL that find-coordinator of the instance the member last talked to tells, once the member
exists; each notice makes the member heartbeat at once (after its `afterMs`); reopened on
another live instance when its instance is killed (that socket closes without `$disconnect`,
as API Gateway would keep it); left open but silent while the member stalls (a zombie: its
session must still expire it, connected renewal slack and all); closed without a close frame
when the member's process dies (`$disconnect`: expired after the grace)."""

from __future__ import annotations

import json
import random
import threading
import time
import urllib.request
from collections import Counter
from typing import Any

from websockets.exceptions import ConnectionClosed, WebSocketException
from websockets.sync.client import ClientConnection

from tests.support.push_sockets import open_socket

# After a failed open (the instance killed meanwhile, the member not created yet: 404).
REOPEN_AFTER_S = 1.0
READ_SLICE_S = 0.3  # how often the reader looks whether its member id is still the wanted one
OPEN_TIMEOUT_ERRORS = (OSError, TimeoutError, WebSocketException, ValueError, KeyError)


class PushLink:
    """The socket of one member (Member.push). The member's thread says which member id it
    is (`want`), waits on `pause`, and may `crash` it or go `silent`; this thread does the
    rest. `counts` (sockets opened, notices, opens failed, closed by a kill) for the report."""

    def __init__(self, name: str, group: str, urls: Any, last_url: Any, counts: Counter) -> None:
        self.group = group
        self._urls = urls  # () -> the live instances' base URLs
        self._last_url = last_url  # () -> the instance the member last talked to, or ""
        self._rng = random.Random(f"{name}-push")
        self.counts = counts
        self.wanted = ""  # the member id to hold a socket for ("" none)
        self.silent = threading.Event()  # a stalled or dead process: opens nothing
        self.due = threading.Event()  # a notice came: heartbeat at once
        self.due_at = 0.0  # ... but not before (a disconnect grace's `afterMs`)
        self.done = threading.Event()
        self._lock = threading.Lock()
        self._socket: ClientConnection | None = None
        self.thread = threading.Thread(target=self._run, name=f"{name}-push", daemon=True)
        self.thread.start()

    def want(self, member_id: str) -> None:
        self.wanted = member_id

    def pause(self, stop: threading.Event, seconds: float) -> None:
        """Until the next heartbeat: `seconds`, or a notice's time, or `stop`."""
        deadline = time.monotonic() + seconds
        while not stop.is_set():
            now = time.monotonic()
            if now >= deadline or (self.due.is_set() and now >= self.due_at):
                break
            stop.wait(0.05)
        if self.due.is_set() and time.monotonic() >= self.due_at:
            self.due.clear()

    def is_open(self) -> bool:
        with self._lock:
            return self._socket is not None

    def crash(self) -> bool:
        """The process dies: its socket closes without a close frame (`$disconnect`, then the
        grace) and nothing reopens. False when no socket was open."""
        self.silent.set()
        with self._lock:
            socket, self._socket = self._socket, None
        if socket is None:
            return False
        socket.close_socket()
        self.counts["crash closes"] += 1
        return True

    def stop(self, crash: bool) -> None:
        """The member stops for good: its socket crashes or closes cleanly."""
        if crash:
            self.crash()
        self.done.set()
        self.thread.join(timeout=10)

    # the thread

    def _run(self) -> None:
        while not self.done.is_set():
            member_id = self.wanted
            if not member_id or self.silent.is_set():
                self.done.wait(0.1)
                continue
            socket = self._open(member_id)
            if socket is None:
                self.counts["opens failed"] += 1
                self.done.wait(REOPEN_AFTER_S)
                continue
            self.counts["sockets opened"] += 1
            self._read(socket, member_id)

    def _open(self, member_id: str) -> ClientConnection | None:
        live = self._urls()
        url = self._last_url()
        if url not in live:
            url = self._rng.choice(live) if live else ""
        try:
            push_url = _push_url(url)
            socket = open_socket(push_url, self.group, member_id)
            socket.send(json.dumps({"action": "ping"}))
        except OPEN_TIMEOUT_ERRORS:
            return None
        with self._lock:
            self._socket = socket
        return socket

    def _read(self, socket: ClientConnection, member_id: str) -> None:
        """Until the socket closes (its instance killed, or crashed by the member) or the
        member id changes (a member that started over closes its old socket cleanly)."""
        try:
            while not self.done.is_set() and self.wanted == member_id:
                try:
                    text = socket.recv(timeout=READ_SLICE_S)
                except TimeoutError:
                    continue
                notice = json.loads(text)
                if notice.get("type") == "heartbeat" and not self.silent.is_set():
                    self.counts["notices"] += 1
                    self.due_at = time.monotonic() + notice.get("afterMs", 0) / 1000
                    self.due.set()
        except ConnectionClosed:
            with self._lock:
                killed = self._socket is socket  # not closed by crash() or stop()
            if killed:
                self.counts["closed by a kill"] += 1
        finally:
            with self._lock:
                if self._socket is socket:
                    self._socket = None
            socket.close()  # a clean close (no disconnect grace); nothing after a crash


def _push_url(base_url: str) -> str:
    """The push URL find-coordinator of that instance tells."""
    request = urllib.request.Request(
        f"{base_url}/v1/find-coordinator",
        data=json.dumps({"keyType": 0, "coordinatorKeys": ["x"]}).encode(),
        method="POST",
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        url = json.loads(response.read())["coordinators"][0]["pushUrl"]
    if not url:
        raise ValueError("the instance offers no push channel")
    return url
