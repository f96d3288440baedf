"""The state of a classic group and its members, as the pure rules see it."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import dataclass, field, replace

from ..lag import NO_LAGS, Lags
from ..rebalances import RebalanceRecord

EMPTY = "Empty"
PREPARING_REBALANCE = "PreparingRebalance"
COMPLETING_REBALANCE = "CompletingRebalance"
STABLE = "Stable"

GROUP_TYPE = "classic"


@dataclass(frozen=True)
class Protocol:
    name: str
    metadata: bytes


def protocols_digest(protocols: Iterable[Protocol]) -> str:
    """Identifies a member's protocols, names and metadata, in their order: the member item
    keeps it so that a join can tell new metadata without reading the payload item."""
    digest = hashlib.blake2b(digest_size=16)
    for protocol in protocols:
        name = protocol.name.encode("utf-8")
        for part in (name, protocol.metadata):
            digest.update(len(part).to_bytes(4, "big"))
            digest.update(part)
    return digest.hexdigest()


@dataclass(frozen=True)
class ClassicMember:
    member_id: str
    instance_id: str | None = None
    client_id: str = ""
    client_host: str = ""
    # The principal that created the member (None: unknown, a member older than the field);
    # with the authorizer on, only it may act as the member.
    principal: str | None = None
    session_timeout_ms: int = 0
    rebalance_timeout_ms: int = 0
    # How long silence may last before the member is dead: threshold * session /
    # frequency; equals the session timeout with the defaults.
    expiry_ms: int = 0
    heartbeat_interval_ms: int = 0
    protocol_type: str = ""
    protocols: tuple[Protocol, ...] = ()
    # The generation this member has joined for: group.generation + 1 while its join is
    # registered in PreparingRebalance, group.generation once the barrier completed.
    joined_generation: int = -1
    # The last generation whose barrier closed with this member in it (-1: none yet). Offset
    # commits are fenced on it, on the member item alone (no write units on the group's key).
    member_generation: int = -1
    joined_at_ms: int = 0
    synced_generation: int = -1
    assignment: bytes = b""
    assignment_generation: int = -1
    session_deadline_ms: int = 0
    # Handed a member id by MEMBER_ID_REQUIRED and not yet joined with it.
    pending: bool = False
    # The store keeps the metadata of the protocols and the assignment on a payload item of
    # their own, apart from the member item that heartbeats and commits rewrite. A member read
    # without it (payload_loaded False) has its protocol names with empty metadata, no
    # assignment (generation -1), and the digest of its protocols as the member item keeps it.
    payload_loaded: bool = True
    stored_digest: str = ""
    # The lags it last reported (core/lag.py); a rejoin's rewrite of the item forgets them.
    lags: Lags = NO_LAGS

    @property
    def protocol_names(self) -> list[str]:
        return [p.name for p in self.protocols]

    @property
    def protocols_digest(self) -> str:
        return protocols_digest(self.protocols) if self.payload_loaded else self.stored_digest

    def metadata_for(self, protocol_name: str | None) -> bytes:
        assert self.payload_loaded, "the member's payload was not read"
        for protocol in self.protocols:
            if protocol.name == protocol_name:
                return protocol.metadata
        return b""

    def renewed(self, now_ms: int) -> ClassicMember:
        return replace(self, session_deadline_ms=now_ms + self.expiry_ms)


@dataclass(frozen=True)
class ClassicGroup:
    group_id: str
    state: str = EMPTY
    generation: int = 0
    protocol_type: str | None = None
    protocol_name: str | None = None
    leader: str | None = None
    # Grows on every write of the group item; every write is conditioned on the one read.
    version: int = 0
    member_count: int = 0
    # How many members support each protocol name (Kafka's supportedProtocols).
    protocol_counts: dict[str, int] = field(default_factory=dict)
    rebalance_timeout_ms: int = 0
    rebalance_started_ms: int | None = None
    join_deadline_ms: int | None = None
    initial_delay_until_ms: int | None = None
    sync_deadline_ms: int | None = None
    topic_changes: int = 0
    topic_changes_seen: int = 0
    subscribed_topics: tuple[str, ...] = ()
    member_shards: int = 8
    empty_since_ms: int | None = None
    next_check_ms: int | None = None
    created_at_ms: int = 0
    # The last generation moves, when and why (core/rebalances.py).
    rebalances: tuple[RebalanceRecord, ...] = ()

    @property
    def pending_generation(self) -> int:
        return self.generation + 1

    def awaiting_join(self, member: ClassicMember) -> bool:
        return self.state == PREPARING_REBALANCE and member.joined_generation == self.generation + 1

    def awaiting_sync(self, member: ClassicMember) -> bool:
        return self.state == COMPLETING_REBALANCE and member.synced_generation == self.generation

    def topics_changed(self) -> bool:
        return self.topic_changes != self.topic_changes_seen


def simple_group(group_id: str, member_shards: int, now_ms: int) -> ClassicGroup:
    """Kafka's "simple" group: what a commit from outside any group creates (an Empty classic
    group with no members)."""
    return ClassicGroup(
        group_id=group_id,
        member_shards=member_shards,
        created_at_ms=now_ms,
        empty_since_ms=now_ms,
        version=1,
    )
