"""The process-wide settings and store: built from the environment in Lambda on first use,
or installed by `groupcoord serve` / tests before the first request."""

from __future__ import annotations

import os
import threading

from . import clock
from .settings import Settings
from .store.store import Store

_lock = threading.Lock()
_settings: Settings | None = None
_store: Store | None = None


def configure(settings: Settings, store: Store) -> None:
    global _settings, _store
    with _lock:
        _settings, _store = settings, store


def current() -> tuple[Settings, Store]:
    global _settings, _store
    with _lock:
        if _settings is None or _store is None:
            _settings = Settings.from_env()
            # boto3 honours AWS_ENDPOINT_URL itself; the explicit one wins for DynamoDB.
            endpoint = os.environ.get("AWS_ENDPOINT_URL_DYNAMODB") or None
            _store = Store.connect(_settings, endpoint_url=endpoint)
        return _settings, _store


def now_ms() -> int:
    return clock.now_ms()
