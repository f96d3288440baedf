"""What the streams service modules share: timeouts from the settings, the group's reload."""

from __future__ import annotations

from ...core.session_renewal import member_renewal_slack_ms
from ...core.streams.group import StreamsGroup
from ...core.streams.heartbeat_rules import GROUP_TYPE
from ...settings import Settings
from ...store.streams.repository import StreamsGroupStore

__all__ = ["GROUP_TYPE", "heartbeat_interval_ms", "reload", "renewal_slack", "session_ms"]


def session_ms(settings: Settings) -> int:
    return settings.group_streams_session_timeout_ms


def heartbeat_interval_ms(settings: Settings) -> int:
    return settings.group_streams_heartbeat_interval_ms


def renewal_slack(settings: Settings, *, connected: bool = False) -> int:
    """How far past one session a steady heartbeat's renewal sets the deadline (as the
    consumer protocol's: core/session_renewal.py; `connected`: a live push connection)."""
    return member_renewal_slack_ms(
        heartbeat_interval_ms(settings),
        settings.session_renewal_skips,
        session_ms(settings),
        connected=connected,
    )


def reload(ss: StreamsGroupStore, group_id: str) -> StreamsGroup | None:
    return ss.group(group_id)
