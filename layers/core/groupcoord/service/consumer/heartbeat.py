"""consumer-group-heartbeat (KIP-848): join, leave, static leave, and the regular heartbeat that
reconciles a member towards its target.

A steady heartbeat (nothing changed) reads the group item (eventually consistent) and the
member item (consistent) and writes only the member item, conditioned on the versions read,
and only when its session needs renewing (core/session_renewal.py): every third heartbeat
with the default `groupcoord.session.renewal.skips` and session. An error decided on the eventually
consistent read is confirmed on consistent reads before it is answered. Anything that
changes the group (join, subscription change, leave) is one transaction with the group item
conditioned on its version; a lost race is re-read (consistently) and decided again.
"""

from __future__ import annotations

import contextlib
from dataclasses import replace

from ...core.acls import AclOperation
from ...core.classic.model import ClassicMember
from ...core.consumer.assignment import Assignment, union
from ...core.consumer.group import (
    apply_request,
    check_member_epoch,
    group_state,
    may_settle,
    owned_partitions,
    validate_heartbeat,
)
from ...core.consumer.heartbeat_rules import (
    CONVERSION,
    ReconcilePlan,
    after_topic_changes,
    needs_holdings_of_others,
    plan_new_member,
    plan_reconcile,
    plan_static_takeover,
    static_leave,
)
from ...core.consumer.member import (
    LEAVE_EPOCH,
    STATIC_LEAVE_EPOCH,
    ConsumerGroupMember,
    Holder,
)
from ...core.consumer.model import ConsumerGroup
from ...core.migration import downgrade_enabled
from ...core.modern.access import GroupAccess, plan_group_access
from ...core.modern.refusal import Refusal
from ...core.modern.static import (
    JoinRoute,
    check_identity,
    needs_instance_owner,
    plan_join_route,
)
from ...core.ownership import NOT_OWNER_MESSAGE
from ...errors import Errors
from ...models.consumer import (
    ConsumerGroupHeartbeatAssignment,
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
    ConsumerGroupHeartbeatTopicPartitions,
)
from ...store.consumer.repository import ConsumerGroupStore
from ...store.errors import Conflict
from ...store.stored_group import StoredGroup
from ..context import ApiContext
from ..races import DecideAgain, retry_on_race
from ..refusals import group_refusal, may_describe_topics
from .common import consumer_renewal_slack_ms, heartbeat_interval_ms, reload, session_timeout_ms
from .downgrade import maybe_downgrade
from .expiry import expire_consumer_group
from .install import (
    WAIT_FOR_FIRST_TARGET_MS,
    Installed,
    ensure_target,
    ensure_target_installed,
    topic_changes_matter,
)
from .upgrade import upgrade_classic_group


class Answer(Exception):
    """A Kafka error answer, raised from deep in the flow."""

    def __init__(self, refusal: Refusal) -> None:
        super().__init__(refusal.message)
        self.refusal = refusal


def _error(
    request: ConsumerGroupHeartbeatRequest, refusal: Refusal
) -> ConsumerGroupHeartbeatResponse:
    return ConsumerGroupHeartbeatResponse(
        error_code=refusal.error, error_message=refusal.message, member_id=request.member_id
    )


def consumer_group_heartbeat(
    request: ConsumerGroupHeartbeatRequest, ctx: ApiContext
) -> ConsumerGroupHeartbeatResponse:
    # Kafka's checks come before the coordinator validates or reads anything: READ on the group,
    # then DESCRIBE on every subscribed topic (29 for the whole request, naming none of them).
    refused = group_refusal(
        ctx, AclOperation.READ, request.group_id, ConsumerGroupHeartbeatResponse
    )
    if refused is not None:
        return refused
    if request.subscribed_topic_names and not may_describe_topics(
        ctx, request.subscribed_topic_names
    ):
        return ConsumerGroupHeartbeatResponse(error_code=Errors.TOPIC_AUTHORIZATION_FAILED)
    refusal = validate_heartbeat(request, ctx.settings.consumer_assignors)
    if refusal is not None:
        return _error(request, refusal)

    def once(attempt: int) -> ConsumerGroupHeartbeatResponse:
        consistent = attempt > 0
        try:
            return _Heartbeat(request, ctx, consistent=consistent).run()
        except Answer as answer:
            if consistent:
                return _error(request, answer.refusal)
            # Decided on an eventually consistent read of the group, which may lag a write
            # of the last second (a group just created, a member's epoch just bumped): an
            # error is only answered once consistent reads confirm it.
            raise DecideAgain() from None

    busy = Refusal(Errors.COORDINATOR_LOAD_IN_PROGRESS, "The group is busy; retry the heartbeat.")
    return retry_on_race(ctx.clock, once, busy=lambda: _error(request, busy))


class _Heartbeat:
    # Target installs batched in time (install.py). A classic-protocol member's join is
    # answered with its assignment, and its sync fails if the target moves after: its
    # subclass installs at once.
    batched_installs = True

    def __init__(self, request: ConsumerGroupHeartbeatRequest, ctx: ApiContext, consistent: bool):
        self.request = request
        self.ctx = ctx
        self.consistent = consistent
        self.cs: ConsumerGroupStore = ctx.store.consumer
        self.now = ctx.now_ms

    # --- the group ---

    def run(self) -> ConsumerGroupHeartbeatResponse:
        group = self._group()
        epoch = self.request.member_epoch
        if epoch == LEAVE_EPOCH:
            return self._leave(group)
        if epoch == STATIC_LEAVE_EPOCH:
            return self._static_leave(group)
        if epoch == 0:
            return self._join(group)
        return self._heartbeat(group)

    def _group(self) -> ConsumerGroup:
        gid = self.request.group_id
        item = self.cs.read_group(gid, consistent=self.consistent)
        access = self._access(item)
        if access in (GroupAccess.CREATE, GroupAccess.REPLACE):
            self.cs.create_group(gid, self.ctx.settings.member_shards, self.now, item)
            if item is not None:  # a replaced Empty classic group: its pending ids go
                self.ctx.store.classic.delete_classic_leftovers(gid, item.header.member_shards)
            item = self.cs.read_group(gid, consistent=True)
            access = self._access(item)
            if access in (GroupAccess.CREATE, GroupAccess.REPLACE):
                raise Conflict(gid)  # gone again, or replaced meanwhile: decide again
        if access is GroupAccess.UPGRADE:
            # An epoch-0 join upgrades a classic group with members (or is refused with 69);
            # then it joins the consumer group as any new member.
            assert item is not None
            why = upgrade_classic_group(
                self.ctx.store, item, self.now, before=self._check_upgrade_binding
            )
            if why is not None:
                raise Answer(Refusal(Errors.GROUP_ID_NOT_FOUND, why))
            raise Conflict(gid)  # converted: decide again on the consumer group
        assert item is not None
        return self._prepare(item)

    def _access(self, item: StoredGroup | None) -> GroupAccess:
        found = item.header if item is not None else None
        access = plan_group_access(
            self.request.group_id,
            found.group_type if found is not None else None,
            found.member_count if found is not None else 0,
            self.request.member_epoch,
            CONVERSION,
        )
        if isinstance(access, Refusal):
            raise Answer(access)
        return access

    def _prepare(self, item: StoredGroup) -> ConsumerGroup:
        """Due expiries, topic changes and target installs of the consumer group `item`."""
        group = item.consumer()
        if group.deadline is not None and group.deadline <= self.now:
            scanned = expire_consumer_group(self.ctx.store, item, self.now)
            group = scanned if scanned is not None else self._reload(group)
        batched = self.batched_installs
        if group.topic_changes != group.topic_changes_seen:
            # A subscribed topic was created, deleted or grown, or a shard ended: a new target
            # may be due. Such changes are rare, so they are not batched: a parent's end
            # starts its children at this heartbeat, even right after an install.
            matter = topic_changes_matter(self.ctx.store, group, self.now)
            group = self.cs.update_group(group, after_topic_changes(group, matter))
            batched = batched and not matter
        if group.group_epoch > group.target_epoch:
            group = ensure_target(self.ctx.store, group, batched)
        return group

    # --- hooks for classic-protocol members (service/consumer/classic_members.py) ---

    def _apply(self, member: ConsumerGroupMember) -> tuple[ConsumerGroupMember, bool]:
        return apply_request(member, self.request, self.ctx.client_id, self.ctx.client_host)

    def _session_ms(self) -> int:
        return session_timeout_ms(self.ctx.settings)

    def _renewal_slack_ms(self) -> int:
        return consumer_renewal_slack_ms(self.ctx.settings)

    def _reload(self, group: ConsumerGroup) -> ConsumerGroup:
        fresh = reload(self.cs, group.group_id)
        if fresh is None:
            raise Conflict(group.group_id)
        return fresh

    # --- members ---

    def _member(self, group: ConsumerGroup, consistent: bool) -> ConsumerGroupMember | None:
        return self.cs.member(group, self.request.member_id, consistent=consistent)

    def _existing(self, group: ConsumerGroup, consistent: bool) -> ConsumerGroupMember:
        """The member the request names, if it passes the static identity checks (25, 82)
        and the caller may act as it (30)."""
        req = self.request
        member = self._member(group, consistent)
        owner = None
        if needs_instance_owner(req.instance_id, member):
            assert req.instance_id is not None
            owner = self.cs.instance_owner(group, req.instance_id)
        refusal = check_identity(group.group_id, req.member_id, req.instance_id, member, owner)
        if refusal is not None:
            raise Answer(refusal)
        assert member is not None
        return self._owned(member)

    def _owned(self, member: ConsumerGroupMember) -> ConsumerGroupMember:
        """`member`, if the caller may act as it (core/ownership.py); else refused with 30."""
        self._may_act_as(member.principal)
        return member

    def _may_act_as(self, principal: str | None) -> None:
        if not self.ctx.caller.may_act_as(principal):
            raise Answer(Refusal(Errors.GROUP_AUTHORIZATION_FAILED, NOT_OWNER_MESSAGE))

    def _check_join_binding(self, group: ConsumerGroup) -> None:
        """Refuse (30) a join that names another principal's member (its id, or the static
        instance it holds), for a path that writes before `_join` decides it."""
        req = self.request
        member = self._member(group, consistent=True)
        if member is not None:
            self._owned(member)
        if req.instance_id is not None:
            owner_id = self.cs.instance_owner(group, req.instance_id)
            owner = self.cs.member(group, owner_id, consistent=True) if owner_id else None
            if owner is not None:
                self._owned(owner)

    def _check_upgrade_binding(self, members: list[ClassicMember]) -> None:
        """Refuse (30) a join that would upgrade a classic group while naming another
        principal's classic member (its id, pending or not, or its static instance): decided
        before the group is converted."""
        req = self.request
        for m in members:
            named = m.member_id == req.member_id or (
                req.instance_id is not None and m.instance_id == req.instance_id
            )
            if named:
                self._may_act_as(m.principal)

    def _leave(self, group: ConsumerGroup) -> ConsumerGroupHeartbeatResponse:
        member = self._existing(group, consistent=True)
        if downgrade_enabled(self.ctx.settings.group_consumer_migration_policy):
            # The downgrade: the last consumer-protocol member leaving a group whose other
            # members all use the classic protocol turns it into a classic group.
            members = self.cs.members(group)
            if maybe_downgrade(self.ctx.store, group, [member], members, self.now):
                return ConsumerGroupHeartbeatResponse(
                    member_id=member.member_id, member_epoch=LEAVE_EPOCH
                )
        group = self.cs.update_group(
            group, group.with_members(-1), extra=self.cs.remove_member(group, member)
        )
        ensure_target(self.ctx.store, group, self.batched_installs)
        return ConsumerGroupHeartbeatResponse(member_id=member.member_id, member_epoch=LEAVE_EPOCH)

    def _static_leave(self, group: ConsumerGroup) -> ConsumerGroupHeartbeatResponse:
        member = self._existing(group, consistent=True)
        self.cs.write_member(group, static_leave(member))
        return ConsumerGroupHeartbeatResponse(
            member_id=member.member_id, member_epoch=STATIC_LEAVE_EPOCH
        )

    def _join(self, group: ConsumerGroup) -> ConsumerGroupHeartbeatResponse:
        req = self.request
        member = self._member(group, consistent=True)
        owner_id = owner = None
        if req.instance_id is not None:
            owner_id = self.cs.instance_owner(group, req.instance_id)
        if owner_id is not None and owner_id != req.member_id:
            owner = self.cs.member(group, owner_id, consistent=True)
        route = plan_join_route(req.member_id, member is not None, owner_id, owner is not None)
        if route is JoinRoute.TAKEOVER:
            assert owner is not None
            return self._replace_static(group, self._owned(owner))
        if route is JoinRoute.NEW:
            return self._add_member(group, owner_id)
        assert member is not None
        updated, changed = self._apply(self._owned(member))
        if changed:
            items = self.cs.put_member(group, updated, new=False)
            group = self.cs.update_group(group, group.with_members(0), extra=items)
            return self._after_change(group)
        return self._reconcile(group, member, updated)

    def _add_member(
        self, group: ConsumerGroup, instance_owner: str | None
    ) -> ConsumerGroupHeartbeatResponse:
        """A member the group does not know joins. `instance_owner` is whom the request's
        instance id is claimed by, if anyone: a removed member (a dangling claim) or the
        joiner itself."""
        joiner, subscribes = self._apply(
            ConsumerGroupMember(
                member_id=self.request.member_id, principal=self.ctx.caller.principal
            )
        )
        plan = plan_new_member(
            group,
            joiner,
            subscribes,
            instance_owner,
            max_size=self.ctx.settings.group_consumer_max_size,
            now=self.now,
            session_ms=self._session_ms(),
        )
        if isinstance(plan, Refusal):
            raise Answer(plan)
        items = self.cs.put_member(group, plan.member, new=True)
        claim = plan.instance_claim
        if claim is not None:
            items += self.cs.claim_instance(group, plan.member, claim.from_member_id)
        return self._after_change(self.cs.update_group(group, plan.group, extra=items))

    def _replace_static(
        self, group: ConsumerGroup, owner: ConsumerGroupMember
    ) -> ConsumerGroupHeartbeatResponse:
        req = self.request
        assert req.instance_id is not None
        copy = plan_static_takeover(
            owner, req.member_id, req.instance_id, self.now, self._session_ms()
        )
        if isinstance(copy, Refusal):
            raise Answer(copy)
        updated, changed = self._apply(replace(copy, principal=self.ctx.caller.principal))
        items = self.cs.hand_over(group, owner, updated)
        if changed:
            group = self.cs.update_group(group, group.with_members(0), extra=items)
        else:
            self.cs.transact(items)
        return self._after_change(group)

    def _after_change(self, group: ConsumerGroup) -> ConsumerGroupHeartbeatResponse:
        """After a membership write (`group` is the group as written): install the target at
        once, then reconcile. If another request's install is running, it (or the next
        heartbeat) covers this change; only a group that has no target at all yet is waited
        for, so that a joiner never gets epoch 0 back."""
        group, installed = ensure_target_installed(self.ctx.store, group, self.batched_installs)
        clock = self.ctx.clock
        waited_until = clock.now_ms() + WAIT_FOR_FIRST_TARGET_MS
        while group.target_epoch == 0 and group.group_epoch > 0 and clock.now_ms() < waited_until:
            clock.sleep(0.05)
            group, installed = ensure_target_installed(
                self.ctx.store, self._reload(group), self.batched_installs
            )
        member = installed.members.get(self.request.member_id) if installed else None
        if member is None:
            member = self._member(group, consistent=True)
        if member is None:
            raise Conflict(group.group_id)
        updated, _ = self._apply(member)
        return self._reconcile(group, member, updated, installed)

    def _heartbeat(self, group: ConsumerGroup) -> ConsumerGroupHeartbeatResponse:
        # Consistent: a heartbeat that writes nothing answers from this read alone, and a
        # member removed or moved to a new epoch must hear of it now.
        member = self._existing(group, consistent=True)
        refusal = check_member_epoch(
            member, self.request.member_epoch, owned_partitions(self.request)
        )
        if refusal is not None:
            raise Answer(refusal)
        updated, changed = self._apply(member)
        if changed:
            items = self.cs.put_member(group, updated, new=False)
            group = self.cs.update_group(group, group.with_members(0), extra=items)
            return self._after_change(group)
        return self._reconcile(group, member, updated)

    # --- reconciliation ---

    def _held_by_others(
        self,
        group: ConsumerGroup,
        member: ConsumerGroupMember,
        installed: Installed | None,
    ) -> Assignment:
        """What the members recorded in `waitOn` still hold (strongly consistent reads, or the
        snapshot of the install this request just completed: see `Installed`)."""
        wait_on = [h for h in member.wait_on if h.member_id != member.member_id]
        if not wait_on:
            return {}
        if installed is not None and all(h.member_id in installed.members for h in wait_on):
            found = installed.members
        else:
            found = self.cs.members_by_id(group, [h.member_id for h in wait_on])
        held: Assignment = {}
        for holder in wait_on:
            current = found.get(holder.member_id) or self._successor(group, holder)
            if current is not None and current.member_id != member.member_id:
                held = union(held, current.assignment.holds)
        return held

    def _successor(self, group: ConsumerGroup, holder: Holder) -> ConsumerGroupMember | None:
        """A replaced static member's partitions live on under its instance id."""
        if holder.instance_id is None:
            return None
        owner = self.cs.instance_owner(group, holder.instance_id)
        return None if owner is None else self.cs.member(group, owner, consistent=True)

    def _reconcile(
        self,
        group: ConsumerGroup,
        member: ConsumerGroupMember,
        updated: ConsumerGroupMember,
        installed: Installed | None = None,
    ) -> ConsumerGroupHeartbeatResponse:
        held: Assignment = {}
        if needs_holdings_of_others(group, member):
            held = self._held_by_others(group, member, installed)
        plan = plan_reconcile(
            group,
            member,
            updated,
            self.request,
            held,
            now=self.now,
            session_ms=self._session_ms(),
            renewal_slack_ms=self._renewal_slack_ms(),
        )
        if plan.writes:
            self.cs.write_member(group, plan.member)
            if may_settle(
                group.state, group.member_count, group.target_epoch, plan.before, plan.after
            ):
                self._settle_listed_state(group, plan.member)
        if plan.refusal is not None:
            raise Answer(plan.refusal)
        if plan.lower_group_deadline_to is not None:
            self._lower_group_deadline(group, plan.lower_group_deadline_to)
        return self._response(plan)

    def _settle_listed_state(self, group: ConsumerGroup, member: ConsumerGroupMember) -> None:
        """The group's state as Kafka would answer it now that `member` is STABLE, written to
        the group item (what list-groups shows) when it changed. Best effort: a group that
        moved meanwhile is left to its next check."""
        others = [] if group.member_count == 1 else self.cs.members(group)
        members = [m for m in others if m.member_id != member.member_id] + [member]
        state = group_state(len(members), group.group_epoch, group.target_epoch, members)
        if state != group.state:
            with contextlib.suppress(Conflict):
                self.cs.update_group(group, replace(group, state=state))

    def _lower_group_deadline(self, group: ConsumerGroup, deadline: int) -> None:
        """A rebalance timeout earlier than the group's next check: check earlier. Best effort:
        the next scan recomputes the deadline from the members anyway."""
        for _ in range(3):
            try:
                self.cs.update_group(group, replace(group, deadline=deadline))
                return
            except Conflict:
                fresh = reload(self.cs, group.group_id)
                if fresh is None or (fresh.deadline is not None and fresh.deadline <= deadline):
                    return
                group = fresh

    def _response(self, plan: ReconcilePlan) -> ConsumerGroupHeartbeatResponse:
        response = ConsumerGroupHeartbeatResponse(
            member_id=self.request.member_id,
            member_epoch=plan.after.epoch,
            heartbeat_interval_ms=heartbeat_interval_ms(self.ctx.settings),
        )
        if plan.sends_assignment:
            response.assignment = ConsumerGroupHeartbeatAssignment(
                topic_partitions=[
                    ConsumerGroupHeartbeatTopicPartitions(topic_id=t, partitions=sorted(ps))
                    for t, ps in sorted(plan.after.assigned.items())
                ]
            )
        return response
