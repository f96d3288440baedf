"""consumer-group-heartbeat (KIP-848): join, leave, static leave, and the regular heartbeat that
reconciles a member towards its target.

A steady heartbeat (nothing changed) reads the group item and the member item (eventually
consistent) and writes only the member item, conditioned on the versions read. Anything that
changes the group (join, subscription change, leave) is one transaction with the group item
conditioned on its version; a lost race is re-read (consistently) and decided again.
"""

from __future__ import annotations

import time
from dataclasses import replace

from ... import clock
from ...core.consumer.assignment import Assignment, is_subset, minus, union
from ...core.consumer.group import (
    ASSIGNING,
    EMPTY,
    STABLE,
    Refusal,
    apply_request,
    check_member_epoch,
    is_full_request,
    owned_partitions,
    validate_heartbeat,
)
from ...core.consumer.member import (
    LEAVE_EPOCH,
    STATIC_LEAVE_EPOCH,
    ConsumerGroupMember,
    Holder,
)
from ...core.consumer.model import ConsumerGroup
from ...core.consumer.reconciliation import MemberAssignment, MemberState, reconcile
from ...core.migration import downgrade_enabled
from ...errors import Errors
from ...models.consumer import (
    ConsumerGroupHeartbeatAssignment,
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
    ConsumerGroupHeartbeatTopicPartitions,
)
from ...store.consumer_groups import ConsumerGroupStore, group_from_item
from ...store.errors import Conflict
from ...store.groups import header
from ..context import ApiContext
from .common import (
    RACE_ATTEMPTS,
    backoff,
    heartbeat_interval_ms,
    reload,
    session_timeout_ms,
)
from .downgrade import maybe_downgrade
from .expiry import expire_consumer_group
from .install import WAIT_FOR_FIRST_TARGET_MS, Installed, ensure_target, ensure_target_installed
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
    refusal = validate_heartbeat(request, ctx.settings.consumer_assignors)
    if refusal is not None:
        return _error(request, refusal)
    for attempt in range(RACE_ATTEMPTS):
        try:
            return _Heartbeat(request, ctx, consistent=attempt > 0).run()
        except Answer as answer:
            return _error(request, answer.refusal)
        except Conflict:
            backoff(attempt)
    return _error(
        request,
        Refusal(Errors.COORDINATOR_LOAD_IN_PROGRESS, "The group is busy; retry the heartbeat."),
    )


def _unknown_member(member_id: str, group_id: str) -> Answer:
    return Answer(
        Refusal(
            Errors.UNKNOWN_MEMBER_ID, f"Member {member_id} is not a member of group {group_id}."
        )
    )


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
        item = self.cs.group_item(gid, consistent=self.consistent)
        found = header(item) if item is not None else None
        replaceable = found is not None and found.is_classic_group and found.member_count == 0
        if item is None or replaceable:
            if self.request.member_epoch != 0:
                raise Answer(Refusal(Errors.GROUP_ID_NOT_FOUND, f"Group {gid} not found."))
            self.cs.create_group(gid, self.ctx.settings.member_shards, self.now, item)
            if item is not None:  # a replaced Empty classic group: its pending ids go
                self.ctx.store.classic.delete_classic_leftovers(gid, header(item).member_shards)
            item = self.cs.group_item(gid, consistent=True)
            if item is None:
                raise Conflict(gid)
        if not header(item).is_consumer_group:
            if self.request.member_epoch == 0 and header(item).is_classic_group:
                # An epoch-0 join upgrades a classic group with members (or is
                # refused with 69); then it joins the consumer group as any new member.
                why = upgrade_classic_group(self.ctx.store, item, self.now)
                if why is not None:
                    raise Answer(Refusal(Errors.GROUP_ID_NOT_FOUND, why))
                raise Conflict(gid)  # converted: decide again on the consumer group
            raise Answer(
                Refusal(Errors.GROUP_ID_NOT_FOUND, f"Group {gid} is not a consumer group.")
            )
        return self._prepare(item)

    def _prepare(self, item: dict) -> ConsumerGroup:
        """Due expiries, topic changes and target installs of the consumer group `item`."""
        group = group_from_item(item)
        if group.deadline is not None and group.deadline <= self.now:
            expire_consumer_group(self.ctx.store, item, self.now)
            group = self._reload(group)
        if group.topic_changes != group.topic_changes_seen:
            # A subscribed topic was created, deleted or grown: a new target is due.
            group = self.cs.update_group(
                group,
                replace(
                    group,
                    group_epoch=group.group_epoch + 1,
                    topic_changes_seen=group.topic_changes,
                    state=ASSIGNING if group.member_count else EMPTY,
                ),
            )
            group = ensure_target(self.ctx.store, group, self.batched_installs)
        elif group.group_epoch > group.target_epoch:
            group = ensure_target(self.ctx.store, group, self.batched_installs)
        return group

    # --- hooks for classic-protocol members (service/consumer/classic_members.py) ---

    def _apply(self, member: ConsumerGroupMember) -> tuple[ConsumerGroupMember, bool]:
        return apply_request(member, self.request, self.ctx.client_id, self.ctx.client_host)

    def _session_ms(self) -> int:
        return session_timeout_ms(self.ctx.settings)

    def _reload(self, group: ConsumerGroup) -> ConsumerGroup:
        fresh = reload(self.cs, group.group_id)
        if fresh is None:
            raise Conflict(group.group_id)
        return fresh

    # --- members ---

    def _member(self, group: ConsumerGroup, consistent: bool) -> ConsumerGroupMember | None:
        return self.cs.member(group, self.request.member_id, consistent=consistent)

    def _static_owner_check(
        self, group: ConsumerGroup, member: ConsumerGroupMember | None
    ) -> ConsumerGroupMember:
        """Kafka's static member checks for epochs != 0: unknown instance 25, owned by
        another member id 82."""
        iid = self.request.instance_id
        assert iid is not None
        if member is not None and member.instance_id == iid:
            return member
        owner = self.cs.instance_owner(group, iid)
        if owner is None:
            raise Answer(Refusal(Errors.UNKNOWN_MEMBER_ID, f"Instance id {iid} is unknown."))
        if owner != self.request.member_id:
            raise Answer(
                Refusal(
                    Errors.FENCED_INSTANCE_ID,
                    f"Static member {self.request.member_id} with instance id {iid} was fenced "
                    f"by member {owner}.",
                )
            )
        if member is None:
            raise _unknown_member(self.request.member_id, group.group_id)
        return member

    def _existing(self, group: ConsumerGroup, consistent: bool) -> ConsumerGroupMember:
        member = self._member(group, consistent)
        if self.request.instance_id is not None:
            return self._static_owner_check(group, member)
        if member is None:
            raise _unknown_member(self.request.member_id, group.group_id)
        return member

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
            group, group.with_members(-1), extra=self.cs.remove_member_items(group, member)
        )
        ensure_target(self.ctx.store, group, self.batched_installs)
        return ConsumerGroupHeartbeatResponse(member_id=member.member_id, member_epoch=LEAVE_EPOCH)

    def _static_leave(self, group: ConsumerGroup) -> ConsumerGroupHeartbeatResponse:
        member = self._existing(group, consistent=True)
        # Partitions kept for the instance's return; those pending revocation released.
        # KIP-1251: the kept partitions' assignment epochs reset to 0, so the instance's next
        # member id may commit them whatever epoch it is at.
        kept = member.assignment.assigned
        leaving = replace(
            member.assignment,
            epoch=STATIC_LEAVE_EPOCH,
            revoking={},
            assigned_at={0: kept} if kept else {},
        )
        self.cs.write_member(group, replace(member, assignment=leaving, rebalance_deadline=None))
        return ConsumerGroupHeartbeatResponse(
            member_id=member.member_id, member_epoch=STATIC_LEAVE_EPOCH
        )

    def _join(self, group: ConsumerGroup) -> ConsumerGroupHeartbeatResponse:
        req, ctx = self.request, self.ctx
        member = self._member(group, consistent=True)
        owner_id = None
        if req.instance_id is not None:
            owner_id = self.cs.instance_owner(group, req.instance_id)
        if owner_id is not None and owner_id != req.member_id:
            owner = self.cs.member(group, owner_id, consistent=True)
            if owner is not None:
                return self._replace_static(group, owner)
        deadline = self.now + self._session_ms()
        if member is None:
            max_size = ctx.settings.group_consumer_max_size
            if group.member_count >= max_size:
                raise Answer(
                    Refusal(
                        Errors.GROUP_MAX_SIZE_REACHED,
                        f"The consumer group has reached its maximum capacity of {max_size} "
                        "members.",
                    )
                )
            new, changed = self._apply(
                ConsumerGroupMember(member_id=req.member_id, session_deadline=deadline)
            )
            items = self.cs.put_member_items(group, new, new=True)
            if new.instance_id is not None:
                if owner_id is None:
                    items.append(self.cs.claim_instance(group, new))
                elif owner_id != new.member_id:  # a dangling claim of a removed member
                    items.append(
                        self.cs.move_instance(group, new.instance_id, owner_id, new.member_id)
                    )
            joined = group.with_members(+1)
            if not changed and group.group_epoch > 0:
                # No subscription: no new target due.
                state = group.state if group.state != EMPTY else STABLE
                joined = replace(joined, group_epoch=group.group_epoch, state=state)
            if group.deadline is None or deadline < group.deadline:
                joined = replace(joined, deadline=deadline)
            return self._after_change(self.cs.update_group(group, joined, extra=items))
        updated, changed = self._apply(member)
        if changed:
            items = self.cs.put_member_items(group, updated, new=False)
            group = self.cs.update_group(group, group.with_members(0), extra=items)
            return self._after_change(group)
        return self._reconcile(group, member, updated)

    def _replace_static(
        self, group: ConsumerGroup, owner: ConsumerGroupMember
    ) -> ConsumerGroupHeartbeatResponse:
        req = self.request
        assert req.instance_id is not None
        if owner.epoch != STATIC_LEAVE_EPOCH:
            raise Answer(
                Refusal(
                    Errors.UNRELEASED_INSTANCE_ID,
                    f"Static member {req.member_id} with instance id {req.instance_id} cannot "
                    f"join the group because the instance id is owned by {owner.member_id} "
                    "member.",
                )
            )
        # The new member id takes over the instance: same assignment and target, epoch 0.
        copy = replace(
            owner,
            member_id=req.member_id,
            assignment=replace(owner.assignment, epoch=0, previous_epoch=0),
            session_deadline=self.now + self._session_ms(),
            version=0,
        )
        updated, changed = self._apply(copy)
        items = [
            *self.cs.remove_member_items(group, owner)[:1],
            *self.cs.put_member_items(group, updated, new=True),
            self.cs.move_instance(group, req.instance_id, owner.member_id, req.member_id),
        ]
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
        waited_until = clock.now_ms() + WAIT_FOR_FIRST_TARGET_MS
        while group.target_epoch == 0 and group.group_epoch > 0 and clock.now_ms() < waited_until:
            time.sleep(0.05)
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
        member = self._existing(group, consistent=self.consistent)
        refusal = check_member_epoch(
            member, self.request.member_epoch, owned_partitions(self.request)
        )
        if refusal is not None:
            raise Answer(refusal)
        updated, changed = self._apply(member)
        if changed:
            items = self.cs.put_member_items(group, updated, new=False)
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
        owned = owned_partitions(self.request)
        before = member.assignment
        after = before
        if member.target_epoch <= group.target_epoch and before.epoch != STATIC_LEAVE_EPOCH:
            held: Assignment = {}
            if minus(member.target, before.holds):
                held = self._held_by_others(group, member, installed)
            after = reconcile(before, group.target_epoch, member.target, owned, held)
        elif before.epoch == 0 and not before.holds and group.target_epoch > 0:
            # A joiner whose target an unfinished install already wrote: it holds nothing, so
            # it takes the epoch in force (not 0, which would read as a rejoin) and waits.
            after = MemberAssignment(epoch=group.target_epoch)
        rebalance_deadline = updated.rebalance_deadline
        if after.state is MemberState.UNREVOKED_PARTITIONS:
            if before.state is not MemberState.UNREVOKED_PARTITIONS or before.epoch != after.epoch:
                rebalance_deadline = self.now + updated.rebalance_timeout_ms
        else:
            rebalance_deadline = None
        acquired = not is_subset(after.holds, before.holds)
        new = replace(
            updated,
            assignment=after,
            session_deadline=self.now + self._session_ms(),
            rebalance_deadline=rebalance_deadline,
            acquired_version=member.acquired_version + (1 if acquired else 0),
        )
        self.cs.write_member(group, new)
        if after.epoch == 0 and self.request.member_epoch == 0:
            # The group's first target is not installed yet (its installer is slow or died
            # and its lease has not run out): the member is in, but has no epoch to answer.
            raise Answer(
                Refusal(
                    Errors.COORDINATOR_LOAD_IN_PROGRESS,
                    "The group's first assignment is being computed; retry the join.",
                )
            )
        if rebalance_deadline is not None and (
            group.deadline is None or rebalance_deadline < group.deadline
        ):
            self._lower_group_deadline(group, rebalance_deadline)
        return self._response(before, after)

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

    def _response(
        self, before: MemberAssignment, after: MemberAssignment
    ) -> ConsumerGroupHeartbeatResponse:
        response = ConsumerGroupHeartbeatResponse(
            member_id=self.request.member_id,
            member_epoch=after.epoch,
            heartbeat_interval_ms=heartbeat_interval_ms(self.ctx.settings),
        )
        if is_full_request(self.request) or after.assigned != before.assigned:
            response.assignment = ConsumerGroupHeartbeatAssignment(
                topic_partitions=[
                    ConsumerGroupHeartbeatTopicPartitions(topic_id=t, partitions=sorted(ps))
                    for t, ps in sorted(after.assigned.items())
                ]
            )
        return response
