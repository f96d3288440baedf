"""The state of a consumer group (KIP-848) as the rules see it; its members are
member.ConsumerGroupMember. The store reads and writes it (store/consumer/); a service
decides a new state with `dataclasses.replace` and the store writes the difference."""

from __future__ import annotations

from dataclasses import dataclass

from ..modern.model import ModernGroup
from ..rebalances import RebalanceRecord

EMPTY = "Empty"
ASSIGNING = "Assigning"
RECONCILING = "Reconciling"
STABLE = "Stable"


@dataclass(frozen=True)
class ConsumerGroup(ModernGroup):
    # The group epoch counts the changes of the membership and of its subscriptions.
    assignor_name: str = ""
    # How many times a subscribed topic changed (the topic registry counts them), and how many
    # of those changes the group's last target took in.
    topic_changes: int = 0
    topic_changes_seen: int = 0
    subscribed_topics: tuple[str, ...] = ()
    subscribed_regex: str | None = None
    # group.subscription_digest of what the installed target was computed from (None: not
    # recorded, as in a group installed before it was).
    subscription_digest: str | None = None
    # When the group next needs a look (a member's session or rebalance timeout, a refresh).
    deadline: int | None = None
    # The install lease: one request at a time computes and writes a new target.
    install_id: str | None = None
    install_until: int = 0
    assigned_at: int = 0  # when the current target was installed (ms)
    created_at_ms: int = 0
    # Protocol names every classic-protocol member supports (None: it never had one).
    classic_protocols: tuple[str, ...] | None = None
    # A claimed scan of the members for expiry (expiry.py), until its result is written.
    scan_id: str | None = None
    # The last group epoch moves, when and why (core/rebalances.py).
    rebalances: tuple[RebalanceRecord, ...] = ()
