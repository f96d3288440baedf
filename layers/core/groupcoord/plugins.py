"""Behaviour chosen by a key (a group type, an item kind), registered where it is written.

The group protocols register their timers, cleanup and offset rules this way, so that the
shared code (sweeper, delete-groups, offsets) never imports a protocol module.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Generic, TypeVar

F = TypeVar("F", bound=Callable[..., object])


class Registry(Generic[F]):
    def __init__(self, what: str) -> None:
        self.what = what
        self._by_key: dict[str, F] = {}

    def register(self, key: str) -> Callable[[F], F]:
        """Decorator: register `fn` for `key`."""

        def add(fn: F) -> F:
            self._by_key[key] = fn
            return fn

        return add

    def get(self, key: str) -> F | None:
        return self._by_key.get(key)
