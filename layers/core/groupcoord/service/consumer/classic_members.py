"""Classic-protocol members inside a consumer group (Kafka's
classicGroupJoinToConsumerGroup, classicGroupSyncToConsumerGroup,
classicGroupHeartbeatToConsumerGroup, classicGroupLeaveToConsumerGroup).

A classic member of a consumer group is a consumer group member item with `classic` metadata
(session timeout, protocols). Its join-group is a consumer-protocol join (epoch 0) whose
subscription and owned partitions come from its ConsumerProtocol Subscription: the group epoch
is bumped if its subscription changed, the target installed, the member reconciled, and the
answer carries generation = member epoch (no leader, no member list: the coordinator assigns).
Its sync-group returns the assigned partitions without those pending revocation, as a
ConsumerProtocol Assignment. Its heartbeat answers 27 when it must rejoin: its epoch is behind
the group epoch, it has partitions to revoke, or the partitions it waits for are free now.
Every request renews its session; expiry is the consumer group's (session deadline).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from ...core.classic.rules import expiry_ms, heartbeat_interval_ms
from ...core.consumer.assignment import Assignment, intersect, minus
from ...core.consumer.member import ClassicMetadata, ConsumerGroupMember
from ...core.consumer.model import ConsumerGroup
from ...core.consumer.reconciliation import MemberState
from ...core.lag import kept as kept_lags
from ...core.migration import (
    CONSUMER_PROTOCOL_TYPE,
    common_protocols,
    downgrade_enabled,
    member_subscription,
    narrowed_protocols,
    owned_partitions,
    supports_classic_protocols,
)
from ...errors import Errors
from ...models.classic import (
    HeartbeatRequest,
    HeartbeatResponse,
    JoinGroupRequest,
    JoinGroupResponse,
    LeaveGroupMemberResponse,
    LeaveGroupRequest,
    LeaveGroupResponse,
    SyncGroupRequest,
    SyncGroupResponse,
)
from ...models.consumer import (
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
    ConsumerGroupHeartbeatTopicPartitions,
)
from ...store.errors import Conflict
from ...store.stored_group import StoredGroup
from ...wire.consumer_protocol import (
    Assignment as ProtocolAssignment,
)
from ...wire.consumer_protocol import (
    ConsumerProtocolError,
    Subscription,
    encode_assignment,
)
from ..context import ApiContext
from ..races import GroupBusy, retry_on_race
from .common import reload
from .downgrade import maybe_downgrade
from .heartbeat import Answer, _Heartbeat
from .install import ensure_target


class NotMixed(Exception):
    """The group is not (or no longer) a consumer group."""


class Downgraded(NotMixed):
    """This request downgraded the group to a classic group."""


def is_consumer_group_with_members(found: StoredGroup | None) -> bool:
    if found is None:
        return False
    return found.header.is_consumer_group and found.header.member_count > 0


def is_consumer_group(found: StoredGroup | None) -> bool:
    return found is not None and found.header.is_consumer_group


# --- join-group ---


class _ClassicJoin(_Heartbeat):
    """The consumer protocol's join, for a member that speaks the classic protocol."""

    batched_installs = False
    join_settles_at_acknowledgement = False

    def __init__(
        self,
        request: ConsumerGroupHeartbeatRequest,
        ctx: ApiContext,
        metadata: ClassicMetadata,
    ) -> None:
        super().__init__(request, ctx, consistent=True)
        self.metadata = metadata

    def _group(self) -> ConsumerGroup:
        found = self.cs.read_group(self.request.group_id, consistent=True)
        if found is None or not is_consumer_group(found):
            raise NotMixed(self.request.group_id)
        return self.prepare(found)

    def apply(self, member: ConsumerGroupMember) -> tuple[ConsumerGroupMember, bool]:
        updated, changed = super().apply(member)
        return replace(updated, classic=self.metadata), changed

    def session_ms(self) -> int:
        return self.metadata.session_timeout_ms

    def renewal_slack_ms(self, member: ConsumerGroupMember) -> int:
        return 0  # a join: the session restarts exactly

    def _join(self, group: ConsumerGroup) -> ConsumerGroupHeartbeatResponse:
        # The group item's common classic protocols narrow to this member's first (one version
        # bump, only when they change: not on the rejoins of a steady mixed group), once the
        # join may name the member it names (a refused join writes nothing).
        self._check_join_binding(group)
        known = group.classic_protocols
        narrowed = narrowed_protocols(known, self.metadata.protocol_names)
        if known is None or narrowed != sorted(known):
            group = self.cs.update_group(group, replace(group, classic_protocols=tuple(narrowed)))
        return super()._join(group)

    def taking_over(self, group: ConsumerGroup, owner: ConsumerGroupMember) -> ConsumerGroupMember:
        if owner.classic is None and downgrade_enabled(
            self.ctx.settings.group_consumer_migration_policy
        ):
            # Kafka's validateOnlineDowngradeWithReplacedMember: the last consumer-protocol
            # member restarted as a classic one. The group is downgraded without it (if only
            # classic members remain, in a classic group's size); the joiner then joins the
            # classic group, taking the instance id back.
            members = self.cs.members(group)
            if maybe_downgrade(self.ctx.store, group, [owner], members, self.now):
                raise Downgraded(group.group_id)
        # A restarted classic static member takes its instance over at once (Kafka does not
        # wait for a -2 leave from the classic protocol, which has none).
        return replace(owner, assignment=replace(owner.assignment, epoch=-2))


def _join_error(
    request: JoinGroupRequest, error: Errors, member_id: str | None = None
) -> JoinGroupResponse:
    return JoinGroupResponse(
        error_code=error,
        member_id=request.member_id if member_id is None else member_id,
        protocol_type=None,
    )


def _topic_ids(ctx: ApiContext, names: set[str]) -> dict[str, str]:
    ids = {}
    for name in sorted(names):
        record = ctx.store.topics.get(name, consistent=False)
        if record is not None:
            ids[name] = record.topic_id
    return ids


def _supports_protocols(ctx: ApiContext, group: ConsumerGroup, names: list[str]) -> bool:
    """Kafka's supportsClassicProtocols: a protocol every classic-protocol member supports.
    The group item's `classicProtocols` answers yes at once; only a joiner it does not admit
    (incompatible, or after departures it does not know of) costs a listing of the members."""
    if group.member_count == 0:
        return True
    known = group.classic_protocols
    if supports_classic_protocols(names, None if known is None else set(known)):
        return True
    members = ctx.store.consumer.members(group)
    common = common_protocols(m.classic.protocol_names for m in members if m.classic)
    return supports_classic_protocols(names, common)


def mixed_join(
    request: JoinGroupRequest, ctx: ApiContext, new_member_id: Callable[[str], str]
) -> JoinGroupResponse | None:
    """join-group to a consumer group (the caller saw one). `new_member_id(client_id)` makes
    ids the classic way. None when the join downgraded the group: join it as a classic
    group."""
    cs = ctx.store.consumer
    found = cs.read_group(request.group_id, consistent=True)
    if found is None or not is_consumer_group(found):
        return _join_error(request, Errors.REBALANCE_IN_PROGRESS)  # moved on: rejoin
    group = found.consumer()
    if request.protocol_type != CONSUMER_PROTOCOL_TYPE or not request.protocols:
        return _join_error(request, Errors.INCONSISTENT_GROUP_PROTOCOL)
    protocols = tuple((p.name, p.metadata) for p in request.protocols)
    try:
        subscription: Subscription = member_subscription(protocols, None)
    except ConsumerProtocolError:
        return _join_error(request, Errors.INCONSISTENT_GROUP_PROTOCOL)
    if not _supports_protocols(ctx, group, [name for name, _ in protocols]):
        return _join_error(request, Errors.INCONSISTENT_GROUP_PROTOCOL)
    member_id = _joining_member_id(request, ctx, group, new_member_id)
    if isinstance(member_id, JoinGroupResponse):
        return member_id
    metadata = _classic_metadata(request, protocols)
    as_consumer = _as_consumer_join(request, ctx, member_id, subscription)
    busy = _join_error(request, Errors.REBALANCE_IN_PROGRESS, member_id=member_id)
    try:
        answer = retry_on_race(ctx.clock, lambda _: _ClassicJoin(as_consumer, ctx, metadata).run())
    except GroupBusy:
        return busy
    except Downgraded:
        return None
    except NotMixed:
        return busy
    except Answer as refused:
        return _join_error(request, refused.refusal.error, member_id=member_id)
    if answer.error_code:
        return _join_error(request, Errors(answer.error_code), member_id=member_id)
    return JoinGroupResponse(
        generation_id=answer.member_epoch,
        protocol_type=CONSUMER_PROTOCOL_TYPE,
        protocol_name=metadata.protocol_name,
        leader="",
        member_id=member_id,
        members=[],
        heartbeat_interval_ms=metadata.heartbeat_interval_ms,
    )


def _joining_member_id(
    request: JoinGroupRequest,
    ctx: ApiContext,
    group: ConsumerGroup,
    new_member_id: Callable[[str], str],
) -> str | JoinGroupResponse:
    """The joiner's member id (a new one for a new member), or the refusal: a full group (81),
    a dynamic member's first join (79, with its id), another member's instance (82)."""
    cs = ctx.store.consumer
    member_id = request.member_id
    instance = request.group_instance_id
    known = bool(member_id) and cs.member(group, member_id, consistent=True) is not None
    if not known and group.member_count >= ctx.settings.group_consumer_max_size:
        return _join_error(request, Errors.GROUP_MAX_SIZE_REACHED)
    if not member_id:
        member_id = new_member_id(ctx.client_id)
        if instance is None:
            # A dynamic member gets its id first (Kafka's MEMBER_ID_REQUIRED).
            return _join_error(request, Errors.MEMBER_ID_REQUIRED, member_id=member_id)
    elif instance is not None:
        owner = cs.instance_owner(group, instance)
        if owner is not None and owner != member_id:
            return _join_error(request, Errors.FENCED_INSTANCE_ID)
    return member_id


def _classic_metadata(
    request: JoinGroupRequest, protocols: tuple[tuple[str, bytes], ...]
) -> ClassicMetadata:
    return ClassicMetadata(
        session_timeout_ms=expiry_ms(
            request.session_timeout_ms,
            request.heartbeat_frequency,
            request.failed_heartbeat_threshold,
        ),
        protocols=protocols,
        heartbeat_interval_ms=heartbeat_interval_ms(
            request.session_timeout_ms, request.heartbeat_frequency
        ),
    )


def _as_consumer_join(
    request: JoinGroupRequest, ctx: ApiContext, member_id: str, subscription: Subscription
) -> ConsumerGroupHeartbeatRequest:
    """The classic join as the consumer protocol's epoch-0 heartbeat it stands for."""
    rebalance_timeout = (
        request.session_timeout_ms
        if request.rebalance_timeout_ms < 0
        else request.rebalance_timeout_ms
    )
    owned = owned_partitions(subscription, _topic_ids(ctx, set(subscription.owned_partitions)))
    return ConsumerGroupHeartbeatRequest(
        group_id=request.group_id,
        member_id=member_id,
        member_epoch=0,
        instance_id=request.group_instance_id,
        rack_id=subscription.rack_id or None,
        rebalance_timeout_ms=rebalance_timeout,
        subscribed_topic_names=list(subscription.topics),
        topic_partitions=[
            ConsumerGroupHeartbeatTopicPartitions(topic_id=t, partitions=sorted(ps))
            for t, ps in sorted(owned.items())
        ],
    )


# --- what sync, heartbeat and leave share ---


def _classic_member(
    ctx: ApiContext, group: ConsumerGroup, member_id: str, instance: str | None
) -> tuple[ConsumerGroupMember | None, Errors]:
    """Kafka's validateConsumerGroupMember and throwIfMemberDoesNotUseClassicProtocol."""
    cs = ctx.store.consumer
    if instance is not None:
        owner = cs.instance_owner(group, instance)
        if owner is None:
            return None, Errors.UNKNOWN_MEMBER_ID
        if owner != member_id:
            return None, Errors.FENCED_INSTANCE_ID
    member = cs.member(group, member_id, consistent=True) if member_id else None
    if member is None or member.classic is None:
        return None, Errors.UNKNOWN_MEMBER_ID
    if not ctx.caller.may_act_as(member.principal):
        return None, Errors.GROUP_AUTHORIZATION_FAILED
    return member, Errors.NONE


def _renew_session(
    ctx: ApiContext,
    group: ConsumerGroup,
    member: ConsumerGroupMember,
    reported: list[tuple[str, int, int]] | None = None,
) -> bool:
    """The member's session restarts (one conditional update of its item, at its epoch),
    with the lags it `reported` on partitions it holds (a classic member renews every time)."""
    assert member.classic is not None
    deadline = ctx.now_ms + member.classic.session_timeout_ms
    lags = None if reported is None else kept_lags(member.lags, reported, member.assignment.holds)
    return ctx.store.consumer.renew_session(group, member, deadline, lags)


def _load(ctx: ApiContext, group_id: str) -> ConsumerGroup:
    group = ctx.store.consumer.group(group_id)
    if group is None:
        raise NotMixed(group_id)
    return group


def _names(ctx: ApiContext, assignment: Assignment) -> dict[str, list[int]]:
    named = {}
    for topic_id, partitions in assignment.items():
        record = ctx.store.topics.get_by_id(topic_id, consistent=False)
        if record is not None:
            named[record.name] = sorted(partitions)
    return named


# --- sync-group ---


def mixed_sync(request: SyncGroupRequest, ctx: ApiContext) -> SyncGroupResponse:
    try:
        group = _load(ctx, request.group_id)
    except NotMixed:
        return SyncGroupResponse(error_code=Errors.REBALANCE_IN_PROGRESS)
    member, error = _classic_member(ctx, group, request.member_id, request.group_instance_id)
    if member is None:
        return SyncGroupResponse(error_code=error)
    assert member.classic is not None
    if request.generation_id != member.epoch:
        return SyncGroupResponse(error_code=Errors.ILLEGAL_GENERATION)
    name = member.classic.protocol_name
    if (request.protocol_type is not None and request.protocol_type != CONSUMER_PROTOCOL_TYPE) or (
        request.protocol_name is not None and request.protocol_name != name
    ):
        return SyncGroupResponse(error_code=Errors.INCONSISTENT_GROUP_PROTOCOL)
    if group.group_epoch > member.epoch and member.state is not MemberState.UNREVOKED_PARTITIONS:
        # A new rebalance: rejoin first (a member with partitions to revoke learns which).
        return SyncGroupResponse(error_code=Errors.REBALANCE_IN_PROGRESS)
    if not _renew_session(ctx, group, member):
        return SyncGroupResponse(error_code=Errors.ILLEGAL_GENERATION)
    assigned = _names(ctx, member.assignment.assigned)
    return SyncGroupResponse(
        protocol_type=CONSUMER_PROTOCOL_TYPE,
        protocol_name=name,
        assignment=encode_assignment(ProtocolAssignment(assigned)),
    )


# --- heartbeat ---


def _waits_only_on_free_partitions(
    ctx: ApiContext, group: ConsumerGroup, member: ConsumerGroupMember
) -> bool:
    pending = minus(member.target, member.assignment.holds)
    if not pending:
        return False
    probe = _Heartbeat(
        ConsumerGroupHeartbeatRequest(
            group_id=group.group_id, member_id=member.member_id, member_epoch=member.epoch
        ),
        ctx,
        consistent=True,
    )
    held = probe._held_by_others(group, member, None)
    return not intersect(pending, held)


def mixed_heartbeat(request: HeartbeatRequest, ctx: ApiContext) -> HeartbeatResponse:
    try:
        group = _load(ctx, request.group_id)
    except NotMixed:
        return HeartbeatResponse(error_code=Errors.REBALANCE_IN_PROGRESS)
    member, error = _classic_member(ctx, group, request.member_id, request.group_instance_id)
    if member is None:
        return HeartbeatResponse(error_code=error)
    if request.generation_id != member.epoch:
        return HeartbeatResponse(error_code=Errors.ILLEGAL_GENERATION)
    if not _renew_session(ctx, group, member, request.reported_lags()):
        return HeartbeatResponse(error_code=Errors.ILLEGAL_GENERATION)
    if group.group_epoch > group.target_epoch:
        group = ensure_target(ctx.store, group)
    must_rejoin = (
        member.epoch < group.group_epoch
        or member.state is MemberState.UNREVOKED_PARTITIONS
        or (
            member.state is MemberState.UNRELEASED_PARTITIONS
            and _waits_only_on_free_partitions(ctx, group, member)
        )
    )
    return HeartbeatResponse(
        error_code=Errors.REBALANCE_IN_PROGRESS if must_rejoin else Errors.NONE
    )


# --- leave-group ---


def _remove(ctx: ApiContext, group_id: str, member_id: str) -> None:
    """The member leaves (group epoch bump), on the versions read; retried on races."""
    cs = ctx.store.consumer

    def once(_: int) -> None:
        group = reload(cs, group_id)
        if group is None:
            return
        member = cs.member(group, member_id, consistent=True)
        if member is None:
            return
        # The downgrade (Kafka fences leaving classic members the same way): a group left
        # with classic-protocol members only becomes a classic group.
        if downgrade_enabled(ctx.settings.group_consumer_migration_policy) and maybe_downgrade(
            ctx.store, group, [member], cs.members(group), ctx.now_ms
        ):
            return
        group = cs.update_group(
            group, group.with_members(-1), extra=cs.remove_member(group, member)
        )
        ensure_target(ctx.store, group)

    def busy() -> None:
        raise Conflict(group_id)

    retry_on_race(ctx.clock, once, busy=busy)


def mixed_leave(request: LeaveGroupRequest, ctx: ApiContext) -> LeaveGroupResponse:
    try:
        group = _load(ctx, request.group_id)
    except NotMixed:
        return LeaveGroupResponse(error_code=Errors.REBALANCE_IN_PROGRESS)
    cs = ctx.store.consumer
    results = []
    for identity in request.members:
        member_id, instance = identity.member_id, identity.group_instance_id
        error = Errors.NONE
        if instance is not None:
            owner = cs.instance_owner(group, instance)
            if owner is None:
                error = Errors.UNKNOWN_MEMBER_ID
            elif member_id and owner != member_id:
                error = Errors.FENCED_INSTANCE_ID
            else:
                member_id = owner
        elif cs.member(group, member_id, consistent=True) is None:
            error = Errors.UNKNOWN_MEMBER_ID
        if error == Errors.NONE and ctx.caller.bound_to_own_members:
            leaving = cs.member(group, member_id, consistent=True)
            if leaving is not None and not ctx.caller.may_act_as(leaving.principal):
                error = Errors.GROUP_AUTHORIZATION_FAILED
        if error == Errors.NONE:
            try:
                _remove(ctx, request.group_id, member_id)
            except Conflict:
                return LeaveGroupResponse(error_code=Errors.REBALANCE_IN_PROGRESS)
        results.append(
            LeaveGroupMemberResponse(
                member_id=identity.member_id, group_instance_id=instance, error_code=error
            )
        )
    return LeaveGroupResponse(members=results)
