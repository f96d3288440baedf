"""consumer-group-heartbeat (KIP-848): the consumer protocol's hooks of the member-based
heartbeat (service/modern/heartbeat.py): the group's due expiries, topic changes and target
installs, the request applied to a member, a new member's plan, the classic group's upgrade
and downgrade, the reconciliation plan and its answer.

A steady heartbeat reads the group item (eventually consistent) and the member item
(consistent) and writes only the member item, conditioned on the versions read, and only when
its session needs renewing (core/session_renewal.py): every third heartbeat with the default
`groupcoord.session.renewal.skips` and session.
"""

from __future__ import annotations

from typing import Any

from ...core.acls import AclOperation
from ...core.classic.model import ClassicMember
from ...core.consumer.assignment import Assignment, minus, union
from ...core.consumer.forming import first_target_wait_ms
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
from ...core.consumer.member import ConsumerGroupMember, Holder
from ...core.consumer.model import ConsumerGroup
from ...core.migration import downgrade_enabled
from ...core.modern.refusal import Refusal
from ...core.push import release_notice_members
from ...errors import Errors
from ...models.consumer import (
    ConsumerGroupHeartbeatAssignment,
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
    ConsumerGroupHeartbeatTopicPartitions,
)
from ...store.stored_group import StoredGroup
from ..context import ApiContext
from ..modern.heartbeat import (
    Answer,
    Joining,
    MemberHeartbeat,
    refusal_answer,
    run_heartbeat,
)
from ..push import notify_waiting
from ..refusals import group_refusal, may_describe_topics
from .common import consumer_renewal_slack_ms, heartbeat_interval_ms, session_timeout_ms
from .downgrade import maybe_downgrade
from .expiry import expire_consumer_group
from .install import (
    WAIT_FOR_FIRST_TARGET_MS,
    Installed,
    ensure_target,
    ensure_target_installed,
    first_assignment_delay_ms,
    notify_deferred_install,
    topic_changes_matter,
)
from .upgrade import upgrade_classic_group

__all__ = ["Answer", "consumer_group_heartbeat"]

Response = ConsumerGroupHeartbeatResponse


def consumer_group_heartbeat(request: ConsumerGroupHeartbeatRequest, ctx: ApiContext) -> Response:
    # Kafka's checks come before the coordinator validates or reads anything: READ on the group,
    # then DESCRIBE on every subscribed topic (29 for the whole request, naming none of them).
    refused = group_refusal(ctx, AclOperation.READ, request.group_id, Response)
    if refused is not None:
        return refused
    if request.subscribed_topic_names and not may_describe_topics(
        ctx, request.subscribed_topic_names
    ):
        return Response(error_code=Errors.TOPIC_AUTHORIZATION_FAILED)
    refusal = validate_heartbeat(request, ctx.settings.consumer_assignors)
    if refusal is not None:
        return refusal_answer(Response, request, refusal)
    return run_heartbeat(request, ctx, lambda c: _Heartbeat(request, ctx, consistent=c), Response)


class _Heartbeat(MemberHeartbeat[ConsumerGroup, ConsumerGroupMember, ReconcilePlan, Response]):
    conversion = CONVERSION
    takeover_rule = staticmethod(plan_static_takeover)
    reconcile_rule = staticmethod(plan_reconcile)
    # Target installs batched in time (install.py). A classic-protocol member's join is
    # answered with its assignment, and its sync fails if the target moves after: its
    # subclass installs at once.
    batched_installs = True
    # A join answered STABLE settles the group's listing at the member's acknowledgement
    # (core/consumer/group.may_settle). A classic member acknowledges with a sync, not with
    # a heartbeat of this protocol: its join settles at once (classic_members.py).
    join_settles_at_acknowledgement = True

    def __init__(self, request: ConsumerGroupHeartbeatRequest, ctx: ApiContext, consistent: bool):
        super().__init__(request, ctx, consistent, ctx.store.consumer)
        self.request: ConsumerGroupHeartbeatRequest = request
        self.cs = ctx.store.consumer

    # --- the group ---

    def create(self, replacing: StoredGroup | None) -> None:
        self.cs.create_group(
            self.request.group_id, self.ctx.settings.member_shards, self.now, replacing
        )

    def upgrade(self, found: StoredGroup) -> None:
        """An epoch-0 join upgrades a classic group with members (or is refused with 69);
        then it joins the consumer group as any new member."""
        why = upgrade_classic_group(
            self.ctx.store, found, self.now, before=self._check_upgrade_binding
        )
        if why is not None:
            raise Answer(Refusal(Errors.GROUP_ID_NOT_FOUND, why))

    def prepare(self, found: StoredGroup) -> ConsumerGroup:
        """Due expiries, topic changes and target installs of the consumer group `found`."""
        group = found.consumer()
        if group.deadline is not None and group.deadline <= self.now:
            scanned = expire_consumer_group(self.ctx.store, found, self.now)
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
            if self.request.member_epoch > 0:
                # A member's heartbeat (not a join or a leave, answered anyway: a join that
                # bumps the epoch tells every member after its write, install()).
                notify_deferred_install(self.ctx.store, group, self.request.member_id)
        return group

    def ensure_target(self, group: ConsumerGroup) -> object:
        group = ensure_target(self.ctx.store, group, self.batched_installs)
        notify_deferred_install(self.ctx.store, group, None)
        return group

    def install(self, group: ConsumerGroup) -> tuple[ConsumerGroup, Installed | None]:
        """The target installed at once. If another request's install is running, it (or the
        next heartbeat) covers this change; only a group that has no target at all yet is
        waited for, so that a joiner never gets epoch 0 back."""
        store, batched = self.ctx.store, self.batched_installs
        group, installed = ensure_target_installed(store, group, batched)
        notify_deferred_install(store, group, None)
        clock = self.ctx.clock
        delay = first_assignment_delay_ms(store.settings) if batched else 0
        waited_until = clock.now_ms() + WAIT_FOR_FIRST_TARGET_MS
        while group.target_epoch == 0 and group.group_epoch > 0 and clock.now_ms() < waited_until:
            now = clock.now_ms()
            clock.sleep(min(first_target_wait_ms(group, now, delay), waited_until - now) / 1000)
            group, installed = ensure_target_installed(store, self._reload(group), batched)
        return group, installed

    # --- members (classic-protocol members override some: classic_members.py) ---

    def apply(self, member: ConsumerGroupMember) -> tuple[ConsumerGroupMember, bool]:
        return apply_request(member, self.request, self.ctx.client_id, self.ctx.client_host)

    def session_ms(self) -> int:
        return session_timeout_ms(self.ctx.settings)

    def renewal_slack_ms(self, member: ConsumerGroupMember) -> int:
        connected = member.push_connected(self.now)
        return consumer_renewal_slack_ms(self.ctx.settings, connected=connected)

    def check_epoch(self, member: ConsumerGroupMember) -> Refusal | None:
        return check_member_epoch(member, self.request.member_epoch, owned_partitions(self.request))

    def new_member(self, group: ConsumerGroup) -> Joining[ConsumerGroup, ConsumerGroupMember]:
        req = self.request
        joiner, subscribes = self.apply(
            ConsumerGroupMember(member_id=req.member_id, principal=self.ctx.caller.principal)
        )
        plan = plan_new_member(
            group,
            joiner,
            subscribes,
            None,
            max_size=self.ctx.settings.group_consumer_max_size,
            now=self.now,
            session_ms=self.session_ms(),
        )
        if isinstance(plan, Refusal):
            raise Answer(plan)
        return Joining(plan.member, plan.group)

    def moved(
        self,
        group: ConsumerGroup,
        before: ConsumerGroupMember,
        after: ConsumerGroupMember,
        changed: bool,
    ) -> ConsumerGroup | None:
        return group.with_members(0) if changed else None

    def without(self, group: ConsumerGroup, member: ConsumerGroupMember) -> ConsumerGroup:
        return group.with_members(-1)

    def leaves_otherwise(self, group: ConsumerGroup, member: ConsumerGroupMember) -> bool:
        """The downgrade: the last consumer-protocol member leaving a group whose other
        members all use the classic protocol turns it into a classic group."""
        if not downgrade_enabled(self.ctx.settings.group_consumer_migration_policy):
            return False
        members = self.cs.members(group)
        return maybe_downgrade(self.ctx.store, group, [member], members, self.now)

    def static_leave(self, member: ConsumerGroupMember) -> ConsumerGroupMember:
        return static_leave(member)

    def left(self, epoch: int) -> Response:
        return Response(member_id=self.request.member_id, member_epoch=epoch)

    def _check_join_binding(self, group: ConsumerGroup) -> None:
        """Refuse (30) a join that names another principal's member (its id, or the static
        instance it holds), for a path that writes before the join decides it."""
        req = self.request
        member = self._member(group)
        if member is not None:
            self._owned(member)
        if req.instance_id is not None:
            owner_id = self.cs.instance_owner(group, req.instance_id)
            owner = self._member(group, owner_id) if owner_id else None
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

    # --- reconciliation ---

    def holdings(
        self, group: ConsumerGroup, member: ConsumerGroupMember, installed: Any
    ) -> Assignment:
        if not needs_holdings_of_others(group, member):
            return {}
        return self._held_by_others(group, member, installed)

    def _held_by_others(
        self, group: ConsumerGroup, member: ConsumerGroupMember, installed: Installed | None
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
        return None if owner is None else self._member(group, owner)

    def write_plan(
        self, group: ConsumerGroup, member: ConsumerGroupMember, plan: ReconcilePlan
    ) -> ConsumerGroup:
        if plan.writes:
            self.cs.write_member(group, plan.member)
            released = minus(member.assignment.holds, plan.member.assignment.holds)
            if released:
                self._tell_waiters(group, member, released)
        if (plan.writes or plan.refusal is None) and may_settle(
            group.state,
            group.member_count,
            group.target_epoch,
            plan.before,
            plan.after,
            joining=self.request.member_epoch == 0 and self.join_settles_at_acknowledgement,
            acknowledged=owned_partitions(self.request) == plan.after.assigned,
        ):
            self._settle_listed_state(group, plan.member)
        if plan.refusal is not None:
            raise Answer(plan.refusal)
        return group

    def _tell_waiters(
        self, group: ConsumerGroup, member: ConsumerGroupMember, released: Assignment
    ) -> None:
        """Released partitions: the members waiting on them may take them now
        (core/push.release_notice_members), found among the waiters the last install recorded
        on the releaser's item (core/consumer/waiters.py; `member` as read, the version this
        request's write was conditioned on): a read of those few, or of the whole group when
        the item names none (too many, or unknown). Every member if they cannot be read."""
        waiters = member.waiters
        if waiters == ():
            return  # no one waits on this member: nothing to read

        def waiting() -> list[str]:
            found = (
                self.cs.members(group)
                if waiters is None
                else list(self.cs.members_by_id(group, waiters).values())
            )
            return release_notice_members(released, found, member.member_id)

        notify_waiting(self.ctx.store, group.group_id, waiting, skip=member.member_id)

    def _settle_listed_state(self, group: ConsumerGroup, member: ConsumerGroupMember) -> None:
        """The group's state as Kafka would answer it now that `member` is STABLE, written to
        the group item (what list-groups shows) when it changed."""
        others = [] if group.member_count == 1 else self.cs.standings(group)
        members = [m for m in others if m.member_id != member.member_id] + [member]
        self._settle_state(
            group, group_state(len(members), group.group_epoch, group.target_epoch, members)
        )

    def response(self, group: ConsumerGroup, plan: ReconcilePlan) -> Response:
        response = Response(
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
