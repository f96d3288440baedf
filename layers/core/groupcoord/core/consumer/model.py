"""The state of a consumer group (KIP-848) as the rules see it; its members are
member.ConsumerGroupMember. The store reads and writes it (store/consumer/); a service
decides a new state with `dataclasses.replace` and the store writes the difference."""

from __future__ import annotations

from dataclasses import dataclass, replace

from ..rebalances import RebalanceRecord

EMPTY = "Empty"
ASSIGNING = "Assigning"
RECONCILING = "Reconciling"
STABLE = "Stable"


@dataclass(frozen=True)
class ConsumerGroup:
    group_id: str
    # Grows on every write of the group; every write is conditioned on the one read.
    version: int = 0
    member_count: int = 0
    member_shards: int = 8
    # The epoch of the membership and subscriptions, and the epoch of the installed target.
    group_epoch: int = 0
    target_epoch: int = 0
    state: str = EMPTY
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

    def with_members(self, delta: int) -> ConsumerGroup:
        """The membership changed by `delta` members: a new group epoch (a new target due)."""
        count = self.member_count + delta
        return replace(
            self,
            group_epoch=self.group_epoch + 1,
            member_count=count,
            state=ASSIGNING if count else EMPTY,
        )
