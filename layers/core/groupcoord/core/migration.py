"""Classic <-> consumer migration rules (issue 6, PROTOCOL.md "Classic ↔ consumer migration"):
when the other protocol may take a group over. Pure: no I/O, no clock.

An Empty group of either type is replaced by the other protocol's first request whatever the
policy. A classic group with members is upgraded only when `validate_online_upgrade` finds
nothing against it (Kafka's GroupMetadataManager.validateOnlineUpgrade; every refusal is 69
GROUP_ID_NOT_FOUND with the message returned here).
"""

from __future__ import annotations

UPGRADE_POLICIES = frozenset({"bidirectional", "upgrade"})
DOWNGRADE_POLICIES = frozenset({"bidirectional", "downgrade"})
CONSUMER_PROTOCOL_TYPE = "consumer"


def upgrade_enabled(policy: str) -> bool:
    return policy in UPGRADE_POLICIES


def downgrade_enabled(policy: str) -> bool:
    return policy in DOWNGRADE_POLICIES


def validate_online_upgrade(
    group_id: str,
    policy: str,
    protocol_type: str | None,
    member_count: int,
    consumer_max_size: int,
) -> str | None:
    """Why a non-empty classic group may not become a consumer group, or None."""
    prefix = f"Cannot upgrade classic group {group_id} to consumer group because"
    if not upgrade_enabled(policy):
        return f"{prefix} online upgrade is disabled."
    if protocol_type != CONSUMER_PROTOCOL_TYPE:
        return f"{prefix} the group does not use the consumer embedded protocol."
    if member_count > consumer_max_size:
        return f"{prefix} the group size exceeds the consumer group maximum size."
    return None
