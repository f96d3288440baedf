"""Crash injection for tests (setting `groupcoord.fault.crash.at`): a request that reaches a
named point dies there, leaving DynamoDB as a Lambda timeout or a killed process would, so
that tests can show the next request completes or rolls back what it left
(docs/architecture.md, "Crash recovery").

Besides the points the code names (`checkpoint`), every DynamoDB write call of a request is
one: `write.<n>.before` dies before the request's n-th write call (put, update, delete,
transact, batch_write: one each, whatever its retries or its batches) is sent, and
`write.<n>.after` once DynamoDB has answered it (a refused condition is an answer too: the
request dies before acting on it). A sweep's write calls are points of their own,
`sweep.write.<n>.before|after`, so that a deployment crashing its requests still sweeps, and
the other way round. The HTTP layer counts per request (`request_scope`), the sweep per run
(`sweep_scope`), in a context variable, so that requests on `serve`'s concurrent threads keep
their own count; the store adapter (store/dynamo.py) reports each write call here. A scope
that crashed stays dead: a write its code still attempts while unwinding (a `finally` that
releases a lease) crashes too, as nothing runs after a real crash. Outside any scope (tests,
the admin tools) writes are neither counted nor crashed at."""

from __future__ import annotations

import contextvars
import re
import threading
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass

from .settings import Settings

_WRITE_POINT = re.compile(r"(?:sweep\.)?write\.([1-9][0-9]*)\.(before|after)")

REQUEST = "request"
SWEEP = "sweep"
# The prefix of each kind of scope's write points.
_PREFIX = {REQUEST: "write", SWEEP: "sweep.write"}


class InjectedCrash(Exception):
    """The request died at a crash point (answered as a server error, as a timeout is)."""


def points(settings: Settings) -> frozenset[str]:
    """The crash points the settings name."""
    return frozenset(p.strip() for p in settings.fault_crash_at.split(",") if p.strip())


def is_write_point(point: str) -> bool:
    """Whether `point` is one of the generic `write.<n>.before|after` points (a request's) or
    `sweep.write.<n>.before|after` (a sweep's)."""
    return _WRITE_POINT.fullmatch(point) is not None


def checkpoint(settings: Settings) -> Callable[[str], None]:
    """A callable that raises InjectedCrash at the points named in the settings."""
    named = points(settings)

    def reached(point: str) -> None:
        if point in named:
            raise InjectedCrash(point)

    return reached


@dataclass
class ScopeWrites:
    """One request's (or sweep's) write calls so far, and the crash points of its deployment."""

    points: frozenset[str]
    kind: str = REQUEST
    writes: int = 0
    # The point it died at: every later write of the scope dies too.
    crashed: str | None = None

    def reached(self, point: str) -> None:
        if point in self.points:
            self.crashed = point
        if self.crashed is not None:
            raise InjectedCrash(self.crashed)


_scope: contextvars.ContextVar[ScopeWrites | None] = contextvars.ContextVar(
    "fault_scope_writes", default=None
)
# Test hook (`observed`): (kind, table or None, list); every scope of that kind (on that table)
# ending meanwhile appends its count to the list.
_observers: list[tuple[str, str | None, list[int]]] = []
_observers_lock = threading.Lock()


@contextmanager
def _counted(settings: Settings, kind: str) -> Iterator[ScopeWrites]:
    writes = ScopeWrites(points(settings), kind)
    token = _scope.set(writes)
    try:
        yield writes
    finally:
        _scope.reset(token)
        with _observers_lock:
            for observed_kind, table, observer in _observers:
                if observed_kind == kind and table in (None, settings.table_name):
                    observer.append(writes.writes)


def request_scope(settings: Settings) -> AbstractContextManager[ScopeWrites]:
    """Count the write calls made inside the block as one request's, crashing at the settings'
    `write.<n>.*` points."""
    return _counted(settings, REQUEST)


def sweep_scope(settings: Settings) -> AbstractContextManager[ScopeWrites]:
    """Count the write calls made inside the block as one sweep's, crashing at the settings'
    `sweep.write.<n>.*` points."""
    return _counted(settings, SWEEP)


def write_sent() -> int:
    """The request (or sweep) is about to send a write call: counts it, crashes at
    `write.<n>.before`. Returns n (0 outside a scope), for `write_answered`."""
    scope = _scope.get()
    if scope is None:
        return 0
    scope.writes += 1
    scope.reached(f"{_PREFIX[scope.kind]}.{scope.writes}.before")
    return scope.writes


def writes_so_far() -> int:
    """How many write calls the request (or sweep) has sent (0 outside a scope)."""
    scope = _scope.get()
    return 0 if scope is None else scope.writes


def write_answered(n: int) -> None:
    """DynamoDB answered the scope's n-th write call: crashes at `write.<n>.after`."""
    scope = _scope.get()
    if scope is None or n == 0:
        return
    scope.reached(f"{_PREFIX[scope.kind]}.{n}.after")


@contextmanager
def observed(kind: str = REQUEST, table: str | None = None) -> Iterator[list[int]]:
    """For tests: the write-call counts of the scopes of `kind` that end inside the block, in
    the order they end: of the deployments on `table`, or of any in this process (another
    test's coordinator may sweep meanwhile)."""
    counts: list[int] = []
    entry = (kind, table, counts)
    with _observers_lock:
        _observers.append(entry)
    try:
        yield counts
    finally:
        with _observers_lock:
            _observers.remove(entry)
