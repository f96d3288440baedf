"""What a request brings besides its body: the caller, the clock, the settings, the store."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from ..clock import Clock
from ..settings import Settings
from .authorization import EVERYONE, Caller

if TYPE_CHECKING:
    # For the annotation only: the store facade imports every repository, which a function's
    # init need not (docs/performance.md, "Cold start").
    from ..store.store import Store


@dataclass(frozen=True)
class ApiContext:
    settings: Settings
    store: Store
    now_ms: int
    endpoint: str  # base URL of this coordinator, without /v1
    client_id: str = ""
    client_host: str = ""
    correlation_id: str | None = None
    # Who is calling, and what they may do (service/authorization.py).
    caller: Caller = EVERYONE

    @property
    def clock(self) -> Clock:
        """The deployment's clock (the store's): what a request reads again or sleeps on."""
        return self.store.clock

    @property
    def host_and_port(self) -> tuple[str, int]:
        parts = urlsplit(self.endpoint)
        default_port = 443 if parts.scheme == "https" else 80
        return parts.hostname or "", parts.port or default_port
