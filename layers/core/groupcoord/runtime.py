"""The settings and store a request runs on: built from the environment in Lambda on first use,
or installed by tests before the first request (`configure`); `groupcoord serve` scopes each
request to its own deployment (`scoped`), so that several local coordinators, each with its
own settings and store, can share one process (the tests run them so)."""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import TYPE_CHECKING

from . import clock
from .settings import Settings

if TYPE_CHECKING:
    # Imported where the store is first built: its repositories and the AWS SDK are not a
    # function's import cost (docs/performance.md, "Cold start").
    from .store.store import Store

_lock = threading.Lock()
_settings: Settings | None = None
_store: Store | None = None
_scoped: ContextVar[tuple[Settings, Store] | None] = ContextVar("runtime", default=None)


def configure(settings: Settings, store: Store) -> None:
    global _settings, _store
    with _lock:
        _settings, _store = settings, store


@contextmanager
def scoped(settings: Settings, store: Store) -> Iterator[None]:
    """Run what happens in this block (on this thread) on `settings` and `store`."""
    token = _scoped.set((settings, store))
    try:
        yield
    finally:
        _scoped.reset(token)


def current() -> tuple[Settings, Store]:
    global _settings, _store
    scoped_here = _scoped.get()
    if scoped_here is not None:
        return scoped_here
    with _lock:
        if _settings is None or _store is None:
            from .store.store import Store

            _settings = Settings.from_env()
            # boto3 honours AWS_ENDPOINT_URL itself; the explicit one wins for DynamoDB.
            endpoint = os.environ.get("AWS_ENDPOINT_URL_DYNAMODB") or None
            _store = Store.connect(_settings, endpoint_url=endpoint)
        return _settings, _store


def now_ms() -> int:
    return clock.SYSTEM.now_ms()
