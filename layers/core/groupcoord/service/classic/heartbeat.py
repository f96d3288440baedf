"""heartbeat: one eventually consistent read of the group item and one consistent read of the
member item, and a conditional write of the member item when its session needs renewing
(core/session_renewal.py)."""

from __future__ import annotations

from ...core.acls import AclOperation
from ...core.classic.model import EMPTY, PREPARING_REBALANCE, ClassicGroup, ClassicMember
from ...core.lag import Lags
from ...core.lag import changed_meaningfully as lags_changed_meaningfully
from ...core.lag import kept as kept_lags
from ...core.offsets import classic_membership_error
from ...core.session_renewal import renewed_deadline
from ...errors import Errors
from ...models.classic import HeartbeatRequest, HeartbeatResponse
from ...store.classic.repository import SessionNotRenewed
from ..classic_group import NotClassic, load, settle
from ..consumer.classic_members import is_consumer_group, mixed_heartbeat
from ..context import ApiContext
from ..races import GroupBusy
from ..refusals import group_refusal
from .common import claimed_instance_owner, classic_renewal_slack_ms


def _membership_error(
    request: HeartbeatRequest, ctx: ApiContext, group: ClassicGroup, old: ClassicMember | None
) -> Errors:
    """Why a member's heartbeat is refused, from the member as it is (None = absent)."""
    if old is not None and not ctx.caller.may_act_as(old.principal):
        return Errors.GROUP_AUTHORIZATION_FAILED
    instance = request.group_instance_id
    owner = claimed_instance_owner(ctx.store, group, old, instance)
    error = classic_membership_error(old, request.member_id, instance, owner)
    return error if error is not None else Errors.ILLEGAL_GENERATION


def _renewed_already(
    member: ClassicMember, request: HeartbeatRequest, ctx: ApiContext, slack: int
) -> bool:
    """The member (read consistently) is one the heartbeat would renew (the conditions of
    renew_joined_session), and its session still lies a whole session ahead
    (core/session_renewal.py): nothing to write."""
    if member.pending or not ctx.caller.may_act_as(member.principal):
        return False
    if request.group_instance_id and member.instance_id != request.group_instance_id:
        return False
    return renewed_deadline(member.session_deadline_ms, ctx.now_ms, member.expiry_ms, slack) is None


def _reported_lags(
    member: ClassicMember | None, request: HeartbeatRequest
) -> tuple[Lags | None, bool]:
    """The lags to write with the renewal (None: none sent), and whether they changed
    meaningfully (core/lag.py: then they are a write of their own). A classic member's
    assignment is opaque bytes here, so a report is kept as sent (bounded)."""
    if member is None or request.partition_lags is None:
        return None, False
    lags = kept_lags(member.lags, request.reported_lags(), None)
    return lags, lags_changed_meaningfully(member.lags, lags)


def heartbeat(request: HeartbeatRequest, ctx: ApiContext) -> HeartbeatResponse:
    refused = group_refusal(ctx, AclOperation.READ, request.group_id, HeartbeatResponse)
    if refused is not None:
        return refused
    if not request.group_id:
        return HeartbeatResponse(error_code=Errors.INVALID_GROUP_ID)
    answer = _decide(request, ctx, consistent=False)
    if answer.error_code not in (Errors.NONE, Errors.REBALANCE_IN_PROGRESS):
        # Decided on an eventually consistent read of the group item, which may lag a write of
        # the last second (a new generation, a group just created): an error is answered only
        # once a consistent read confirms it. A Stable group read stale answers 0 where 27 is
        # due, and the member hears of the rebalance one heartbeat later, as with the consumer
        # protocol; a rebalance read stale answers 27, and the member rejoins, as the newer
        # state (a generation it is not in) would have it do. Fencing (generations on the
        # member item, commits) never reads it stale. Every member heartbeats through a
        # rebalance: 27 is not read twice.
        answer = _decide(request, ctx, consistent=True)
    return answer


def _decide(request: HeartbeatRequest, ctx: ApiContext, *, consistent: bool) -> HeartbeatResponse:
    try:
        group = load(ctx.store, request.group_id, consistent=consistent)
        if group is not None:
            group = settle(ctx.store, group, ctx.now_ms)
    except (NotClassic, GroupBusy) as error:
        if isinstance(error, NotClassic) and is_consumer_group(error.found):
            return mixed_heartbeat(request, ctx)  # a classic-protocol member of a consumer group
        code = (
            Errors.UNKNOWN_MEMBER_ID
            if isinstance(error, NotClassic)
            else Errors.REBALANCE_IN_PROGRESS
        )
        return HeartbeatResponse(error_code=code)
    if group is None or group.state == EMPTY or not request.member_id:
        return HeartbeatResponse(error_code=Errors.UNKNOWN_MEMBER_ID)
    store = ctx.store.classic
    member = store.member(group, request.member_id)
    if request.generation_id != group.generation:
        return HeartbeatResponse(error_code=_membership_error(request, ctx, group, member))
    slack = classic_renewal_slack_ms(member, ctx.settings) if member is not None else 0
    lags, forced = _reported_lags(member, request)
    if member is None or forced or not _renewed_already(member, request, ctx, slack):
        try:
            # Conditional: the member may have changed since the read.
            store.renew_joined_session(
                group,
                request.member_id,
                request.group_instance_id,
                ctx.now_ms,
                caller=ctx.caller.principal if ctx.caller.bound_to_own_members else None,
                slack_ms=slack,
                lags=lags,
            )
        except SessionNotRenewed as refused:
            error = _membership_error(request, ctx, group, refused.member)
            return HeartbeatResponse(error_code=error)
    if group.state == PREPARING_REBALANCE:
        return HeartbeatResponse(error_code=Errors.REBALANCE_IN_PROGRESS)
    return HeartbeatResponse(error_code=Errors.NONE)
