"""What the consumer protocol's service modules share: the store, the clock, timeouts."""

from __future__ import annotations

from ... import faults
from ...core.consumer.model import ConsumerGroup
from ...core.session_renewal import member_renewal_slack_ms
from ...settings import Settings
from ...store.consumer.repository import ConsumerGroupStore
from ...store.conversion import Conversion
from ...store.store import Store

GROUP_TYPE = "consumer"


def convert(store: Store, conversion: Conversion) -> None:
    """Write a protocol conversion atomically (store/conversion.py); Conflict if the group
    moved meanwhile (nothing changed: the caller decides again)."""
    settings = store.settings
    store.conversions.convert(
        conversion,
        max_transaction_items=settings.conversion_transaction_items,
        checkpoint=faults.checkpoint(settings),
    )


def session_timeout_ms(settings: Settings) -> int:
    return settings.group_consumer_session_timeout_ms


def heartbeat_interval_ms(settings: Settings) -> int:
    return settings.group_consumer_heartbeat_interval_ms


def consumer_renewal_slack_ms(settings: Settings, *, connected: bool = False) -> int:
    """How far past one session a consumer-protocol heartbeat's renewal sets the deadline
    (`connected`: the member has a live push connection)."""
    return member_renewal_slack_ms(
        heartbeat_interval_ms(settings),
        settings.session_renewal_skips,
        session_timeout_ms(settings),
        connected=connected,
    )


def state_refresh_ms(settings: Settings) -> int:
    """How soon a Reconciling group is looked at again to refresh its listed state."""
    return 2 * heartbeat_interval_ms(settings)


def reload(cs: ConsumerGroupStore, group_id: str) -> ConsumerGroup | None:
    return cs.group(group_id)
