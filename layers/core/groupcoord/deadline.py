"""A request's write deadline: the time (ms on the request's clock, groupcoord/clock.py) after
which it must not start any more writes. The HTTP layer scopes it around a request (from the
client's `Groupcoord-Timeout-Ms` header and the Lambda's remaining time); the store adapter
(store/dynamo.py) refuses to send a write past it. Here, at the package root, so that the
store reads it without importing the HTTP layer.

Why a write must not start late: a client that gave up on a request sends its next one, and a
write of the abandoned request landing after that one would undo it (a commit moving the
offset back). docs/client.md ("Timeouts and deadlines") gives the whole argument.

Outside a scope (the sweeper, tests, the admin tools) there is no deadline."""

from __future__ import annotations

import contextvars
from collections.abc import Iterator
from contextlib import contextmanager

from .clock import SYSTEM, Clock

HEADER = "Groupcoord-Timeout-Ms"
MIN_TIMEOUT_MS = 1
MAX_TIMEOUT_MS = 900_000  # Lambda's longest run, 15 minutes: a longer budget means nothing.

WRITE_MARGIN_MS = 2_000
"""The longest a DynamoDB write already started may take to land, plus a request's way from the
client to API Gateway (where receipt is measured): an assumption, with room to spare. Every
retry of the adapter is a new start, gated itself. The client asks for its attempt timeout
minus this; the server stops starting writes this long before the Lambda's own timeout."""

_deadline: contextvars.ContextVar[tuple[int | None, Clock]] = contextvars.ContextVar(
    "write_deadline", default=(None, SYSTEM)
)


@contextmanager
def scoped(at_ms: int | None, clock: Clock = SYSTEM) -> Iterator[None]:
    """No write may start after `at_ms` (ms on `clock`, the request's) inside the block; None:
    no deadline."""
    token = _deadline.set((at_ms, clock))
    try:
        yield
    finally:
        _deadline.reset(token)


def current() -> int | None:
    """The deadline in force, or None."""
    return _deadline.get()[0]


def passed() -> bool:
    """Whether a deadline is in force and its clock is past it."""
    at_ms, clock = _deadline.get()
    return at_ms is not None and clock.now_ms() > at_ms


def parse_timeout_ms(value: str | None) -> int | None:
    """The header's value as milliseconds; None when absent. Raises ValueError (with what is
    wrong) for anything but an integer within MIN_TIMEOUT_MS..MAX_TIMEOUT_MS."""
    if value is None:
        return None
    text = value.strip()
    # int() alone would take "+5", " 5", "5_000" and other digits than ASCII.
    if not text.isascii() or not text.isdigit() or len(text) > 7:
        raise ValueError(f"must be an integer number of milliseconds, not {value[:20]!r}")
    timeout_ms = int(text)
    if not MIN_TIMEOUT_MS <= timeout_ms <= MAX_TIMEOUT_MS:
        raise ValueError(f"must be within {MIN_TIMEOUT_MS}..{MAX_TIMEOUT_MS} ms, not {timeout_ms}")
    return timeout_ms


def request_deadline(
    now_ms: int, timeout_ms: int | None, remaining_ms: int | None, lag_ms: int = 0
) -> int | None:
    """The deadline of a request handled from `now_ms`, received `lag_ms` earlier: the earlier
    of the client's budget (from receipt) and the function's remaining time less the write
    margin (from now: so that a write started in time lands before Lambda stops the function).
    None when neither is known."""
    deadlines: list[int] = []
    if timeout_ms is not None:
        deadlines.append(now_ms - lag_ms + timeout_ms)
    if remaining_ms is not None:
        deadlines.append(now_ms + remaining_ms - WRITE_MARGIN_MS)
    return min(deadlines) if deadlines else None
