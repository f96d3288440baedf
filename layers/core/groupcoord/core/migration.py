"""Classic <-> consumer migration rules: when the other protocol may take a group over.
Pure: no I/O, no clock. See docs/consumer-protocol.md, "Migration between the protocols".

An Empty group of either type is replaced by the other protocol's first request whatever the
policy. A classic group with members is upgraded only when `validate_online_upgrade` finds
nothing against it (Kafka's GroupMetadataManager.validateOnlineUpgrade; every refusal is 69
GROUP_ID_NOT_FOUND with the message returned here). A consumer group whose last
consumer-protocol member leaves or expires is downgraded when `downgrade_wanted` says so.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace

from ..wire.consumer_protocol import Assignment as WireAssignment
from ..wire.consumer_protocol import (
    ConsumerProtocolError,
    Subscription,
    decode_assignment,
    decode_subscription,
    encode_assignment,
)
from .classic.model import STABLE, ClassicGroup, ClassicMember, Protocol
from .classic.rules import next_check_ms, start_rebalance, vote_protocol, with_member_protocols
from .consumer.assignment import Assignment, minus, normalize, union
from .consumer.member import ClassicMetadata, ConsumerGroupMember
from .consumer.reconciliation import MemberAssignment, MemberState
from .rebalances import RebalanceRecord

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


# --- the protocols of a mixed group's classic-protocol members (Kafka's
# ConsumerGroup.supportsClassicProtocols) ---


def common_protocols(name_sets: Iterable[Iterable[str]]) -> set[str] | None:
    """The names every set has; None when there are no sets (no classic members)."""
    common: set[str] | None = None
    for names in name_sets:
        common = set(names) if common is None else common & set(names)
    return common


def narrowed_protocols(known: Sequence[str] | None, names: Iterable[str]) -> list[str]:
    """The group item's `classic_protocols` once a member with `names` is in the group."""
    joined = set(names)
    return sorted(joined if known is None else joined & set(known))


def supports_classic_protocols(names: Iterable[str], common: set[str] | None) -> bool:
    """A classic joiner of a non-empty consumer group needs a protocol name that every
    classic-protocol member supports (else 23 INCONSISTENT_GROUP_PROTOCOL)."""
    return common is None or bool(common & set(names))


# --- the upgrade of a non-empty classic group ---


def malformed_protocol(group_id: str) -> str:
    return (
        f"Cannot upgrade the classic group {group_id} to consumer group because the embedded "
        "consumer protocol is malformed."
    )


def _names_to_ids(
    partitions: Mapping[str, Iterable[int]], topic_ids: Mapping[str, str]
) -> Assignment:
    """Topic names -> ids; topics the registry does not know are dropped (as Kafka drops
    topics missing from its metadata image)."""
    return normalize({topic_ids[t]: ps for t, ps in partitions.items() if t in topic_ids})


def owned_partitions(subscription: Subscription, topic_ids: Mapping[str, str]) -> Assignment:
    return _names_to_ids(subscription.owned_partitions, topic_ids)


def member_subscription(protocols: Iterable[tuple[str, bytes]], name: str | None) -> Subscription:
    """The ConsumerProtocol Subscription a classic member joined with: the one of the group's
    protocol, else its first. ConsumerProtocolError if malformed."""
    chosen = list(protocols)
    for protocol_name, metadata in chosen:
        if protocol_name == name:
            return decode_subscription(metadata)
    if not chosen:
        raise ConsumerProtocolError("no protocol")
    return decode_subscription(chosen[0][1])


def named_topics(protocols: Iterable[tuple[str, bytes]]) -> set[str]:
    """Every topic the ConsumerProtocol Subscriptions of a classic member's protocols name
    (their subscribed topics and owned partitions); a malformed one names none."""
    topics: set[str] = set()
    for _, metadata in protocols:
        try:
            subscription = decode_subscription(metadata)
        except ConsumerProtocolError:
            continue
        topics.update(subscription.topics)
        topics.update(subscription.owned_partitions)
    return topics


def upgraded_members(
    group: ClassicGroup,
    members: Sequence[ClassicMember],
    topic_ids: Mapping[str, str],
    now_ms: int,
) -> list[ConsumerGroupMember]:
    """Kafka's ConsumerGroup.fromClassicGroup: every (non-pending) classic member becomes a
    consumer group member at epoch = generation, STABLE, with the partitions of its current
    assignment (assignment epochs = generation) as both its assignment and its target, marked
    as a classic-protocol member. A partition claimed by two members' stored assignments (the
    leader's bug) stays with the first member id only, so no partition is ever held twice.
    ConsumerProtocolError if a member's subscription or assignment does not decode."""
    generation = group.generation
    converted: list[ConsumerGroupMember] = []
    claimed: Assignment = {}
    for m in sorted((m for m in members if not m.pending), key=lambda m: m.member_id):
        protocols = tuple((p.name, p.metadata) for p in m.protocols)
        subscription = member_subscription(protocols, group.protocol_name)
        assigned = minus(
            _names_to_ids(decode_assignment(m.assignment).partitions, topic_ids), claimed
        )
        claimed = union(claimed, assigned)
        expiry = m.expiry_ms or m.session_timeout_ms
        converted.append(
            ConsumerGroupMember(
                member_id=m.member_id,
                instance_id=m.instance_id,
                rack_id=subscription.rack_id,
                client_id=m.client_id,
                client_host=m.client_host,
                principal=m.principal,
                rebalance_timeout_ms=m.rebalance_timeout_ms,
                subscribed_topic_names=tuple(sorted(set(subscription.topics))),
                assignment=MemberAssignment(
                    epoch=generation,
                    previous_epoch=generation,
                    state=MemberState.STABLE,
                    assigned=assigned,
                    assigned_at={generation: assigned} if assigned else {},
                ),
                target=assigned,
                target_epoch=generation,
                session_deadline=now_ms + expiry,
                classic=ClassicMetadata(
                    session_timeout_ms=expiry,
                    protocols=protocols,
                    heartbeat_interval_ms=m.heartbeat_interval_ms,
                ),
            )
        )
    return converted


# --- the downgrade of a consumer group whose last consumer-protocol member goes (item 4) ---


def downgrade_wanted(
    policy: str,
    remaining: Sequence[ConsumerGroupMember],
    classic_max_size: int,
) -> bool:
    """Kafka's validateOnlineDowngradeWithFencedMembers: the members that stay all use the
    classic protocol, there is at least one, the policy allows downgrades and they fit in a
    classic group."""
    if not remaining or any(m.classic is None for m in remaining):
        return False
    if not downgrade_enabled(policy):
        return False
    return len(remaining) <= classic_max_size


def _ids_to_names(partitions: Assignment, topic_names: Mapping[str, str]) -> dict[str, list[int]]:
    """Topic ids -> names; topics the registry no longer knows are dropped."""
    return {topic_names[t]: sorted(ps) for t, ps in sorted(partitions.items()) if t in topic_names}


def _assignment_version(classic: ClassicMetadata) -> int:
    """Kafka serializes the assignment at the version of the member's Subscription (capped
    at the Assignment's highest version, 3)."""
    for _, metadata in classic.protocols[:1]:
        try:
            return min(max(decode_subscription(metadata).version, 0), 3)
        except ConsumerProtocolError:
            return 0
    return 0


def _protocol_name(members: Sequence[ClassicMember]) -> str:
    """Kafka's selectProtocol; the first member's first protocol when no protocol is common
    to all (mixed groups do not check a classic joiner's protocols against the others')."""
    try:
        return vote_protocol(members)
    except ValueError:
        return members[0].protocols[0].name if members[0].protocols else ""


def downgraded_group(
    group_id: str,
    group_epoch: int,
    remaining: Sequence[ConsumerGroupMember],
    topic_names: Mapping[str, str],
    *,
    version: int,
    member_shards: int,
    created_at_ms: int,
    topic_changes: int,
    now_ms: int,
    rebalances: tuple[RebalanceRecord, ...] = (),
) -> tuple[ClassicGroup, list[ClassicMember]]:
    """Kafka's ClassicGroup.fromConsumerGroup followed by prepareRebalance: a classic group at
    generation = group epoch, protocolType consumer, whose members are the remaining
    (classic-protocol) members with the protocols they joined with and, as their assignment,
    their target assignment encoded as a ConsumerProtocol Assignment (assignment epochs are
    dropped); then PreparingRebalance, so their next heartbeat answers 27 and they rejoin.
    `version` is the group item's new version; `rebalances`, the consumer group's record of
    its epoch moves, carried on (generation = group epoch)."""
    members: list[ClassicMember] = []
    counts: dict[str, int] = {}
    topics: set[str] = set()
    for m in sorted(remaining, key=lambda m: m.member_id):
        assert m.classic is not None
        protocols = tuple(Protocol(name, metadata) for name, metadata in m.classic.protocols)
        counts = with_member_protocols(counts, added=[p.name for p in protocols])
        topics.update(m.subscribed_topic_names)
        wire = WireAssignment(
            _ids_to_names(m.target, topic_names), version=_assignment_version(m.classic)
        )
        members.append(
            ClassicMember(
                member_id=m.member_id,
                instance_id=m.instance_id,
                client_id=m.client_id,
                client_host=m.client_host,
                principal=m.principal,
                # ClassicMetadata keeps the expiry (threshold x session / frequency), which is
                # the session timeout with the default settings.
                session_timeout_ms=m.classic.session_timeout_ms,
                rebalance_timeout_ms=m.rebalance_timeout_ms,
                expiry_ms=m.classic.session_timeout_ms,
                heartbeat_interval_ms=m.classic.heartbeat_interval_ms,
                protocol_type=CONSUMER_PROTOCOL_TYPE,
                protocols=protocols,
                joined_generation=group_epoch,
                member_generation=group_epoch,
                joined_at_ms=now_ms,
                synced_generation=group_epoch,
                assignment=encode_assignment(wire),
                assignment_generation=group_epoch,
                session_deadline_ms=now_ms + m.classic.session_timeout_ms,
            )
        )
    stable = ClassicGroup(
        group_id=group_id,
        state=STABLE,
        generation=group_epoch,
        protocol_type=CONSUMER_PROTOCOL_TYPE,
        protocol_name=_protocol_name(members),
        leader=members[0].member_id,
        version=version,
        member_count=len(members),
        protocol_counts=counts,
        rebalance_timeout_ms=max(m.rebalance_timeout_ms for m in members),
        topic_changes=topic_changes,
        topic_changes_seen=topic_changes,
        subscribed_topics=tuple(sorted(topics)),
        member_shards=member_shards,
        created_at_ms=created_at_ms,
        rebalances=rebalances,
    )
    group = start_rebalance(stable, now_ms)
    group = replace(group, next_check_ms=next_check_ms(group, members, now_ms))
    return group, members
