"""The settings the classic protocol's decisions read, as the core names them: the
coordinator's `Settings` (settings.py) has them all, and the core asks for no more, so it
never imports the settings module (which reads the environment, and validates the Kinesis
binders setting with core/kinesis/binders.py)."""

from __future__ import annotations

from typing import Protocol


class ClassicLimits(Protocol):
    @property
    def group_min_session_timeout_ms(self) -> int: ...
    @property
    def group_max_session_timeout_ms(self) -> int: ...
    @property
    def group_max_size(self) -> int: ...
    @property
    def group_initial_rebalance_delay_ms(self) -> int: ...
