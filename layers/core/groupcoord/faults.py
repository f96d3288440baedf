"""Crash injection for tests (setting `groupcoord.fault.crash.at`): a request that reaches a
named point dies there, leaving DynamoDB as a Lambda timeout or a killed process would, so
that tests can show the next request completes or rolls back what it left
(docs/architecture.md, "Crash recovery").

Besides the points the code names (`checkpoint`), every DynamoDB write call of a request is
one: `write.<n>.before` dies before the request's n-th write call (put, update, delete,
transact, batch_write: one each, whatever its retries or its batches) is sent, and
`write.<n>.after` once DynamoDB has answered it (a refused condition is an answer too: the
request dies before acting on it). The HTTP layer counts per request (`request_scope`), in a
context variable, so that requests on `serve`'s concurrent threads keep their own count; the
store adapter (store/dynamo.py) reports each write call here. Outside a request (the
sweeper, tests, the admin tools) writes are neither counted nor crashed at."""

from __future__ import annotations

import contextvars
import re
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from .settings import Settings

_WRITE_POINT = re.compile(r"write\.([1-9][0-9]*)\.(before|after)")


class InjectedCrash(Exception):
    """The request died at a crash point (answered as a server error, as a timeout is)."""


def points(settings: Settings) -> frozenset[str]:
    """The crash points the settings name."""
    return frozenset(p.strip() for p in settings.fault_crash_at.split(",") if p.strip())


def is_write_point(point: str) -> bool:
    """Whether `point` is one of the generic `write.<n>.before|after` points."""
    return _WRITE_POINT.fullmatch(point) is not None


def checkpoint(settings: Settings) -> Callable[[str], None]:
    """A callable that raises InjectedCrash at the points named in the settings."""
    named = points(settings)

    def reached(point: str) -> None:
        if point in named:
            raise InjectedCrash(point)

    return reached


@dataclass
class RequestWrites:
    """One request's write calls so far, and the crash points of its deployment."""

    points: frozenset[str]
    writes: int = 0


_scope: contextvars.ContextVar[RequestWrites | None] = contextvars.ContextVar(
    "fault_request_writes", default=None
)
# Test hook (`observed`): lists that every request scope ending meanwhile appends its count to.
_observers: list[list[int]] = []
_observers_lock = threading.Lock()


@contextmanager
def request_scope(settings: Settings) -> Iterator[RequestWrites]:
    """Count the write calls made inside the block as one request's, crashing at the settings'
    `write.<n>.*` points."""
    writes = RequestWrites(points(settings))
    token = _scope.set(writes)
    try:
        yield writes
    finally:
        _scope.reset(token)
        with _observers_lock:
            for observer in _observers:
                observer.append(writes.writes)


def write_sent() -> int:
    """The request is about to send a write call: counts it, crashes at `write.<n>.before`.
    Returns n (0 outside a request scope), for `write_answered`."""
    scope = _scope.get()
    if scope is None:
        return 0
    scope.writes += 1
    point = f"write.{scope.writes}.before"
    if point in scope.points:
        raise InjectedCrash(point)
    return scope.writes


def write_answered(n: int) -> None:
    """DynamoDB answered the request's n-th write call: crashes at `write.<n>.after`."""
    scope = _scope.get()
    if scope is None or n == 0:
        return
    point = f"write.{n}.after"
    if point in scope.points:
        raise InjectedCrash(point)


@contextmanager
def observed() -> Iterator[list[int]]:
    """For tests: the write-call counts of the request scopes (of any deployment in this
    process) that end inside the block, in the order they end."""
    counts: list[int] = []
    with _observers_lock:
        _observers.append(counts)
    try:
        yield counts
    finally:
        with _observers_lock:
            _observers.remove(counts)
