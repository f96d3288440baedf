"""Crash injection for tests (setting `groupcoord.fault.crash.at`): a request that reaches a
named point dies there, leaving DynamoDB as a Lambda timeout or a killed process would, so
that tests can show the next request completes or rolls back what it left
(docs/architecture.md, "Crash recovery")."""

from __future__ import annotations

from collections.abc import Callable

from .settings import Settings


class InjectedCrash(Exception):
    """The request died at a crash point (answered as a server error, as a timeout is)."""


def checkpoint(settings: Settings) -> Callable[[str], None]:
    """A callable that raises InjectedCrash at the points named in the settings."""
    points = {p.strip() for p in settings.fault_crash_at.split(",") if p.strip()}

    def reached(point: str) -> None:
        if point in points:
            raise InjectedCrash(point)

    return reached
