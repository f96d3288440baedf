"""The streams heartbeat's reconciliation step (service/streams/heartbeat.py): what the members
a member waits on still hold, the plan (core/streams/heartbeat_rules.plan_reconcile), its one
member write, and the answer: statuses, tasks when they changed, the endpoints' partitions
when the member's endpoint epoch is behind."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from ...core.streams.group import RECONCILING, StreamsGroup, group_state
from ...core.streams.heartbeat_rules import (
    ReconcilePlan,
    needs_holdings_of_others,
)
from ...core.streams.member import StreamsGroupMember
from ...core.streams.notices import (
    release_notice_members,
    released_tasks,
    shutdown_first_requested,
)
from ...core.streams.reconciliation import Holdings, MemberState, holdings_of
from ...core.streams.tasks import TasksTuple
from ...models.streams import StreamsGroupHeartbeatRequest, StreamsGroupHeartbeatResponse
from ...store.streams.repository import StreamsGroupStore
from ..context import ApiContext
from ..push import notify_members, notify_waiting
from .answers import endpoint_partitions, status_list, task_list
from .common import heartbeat_interval_ms
from .install import Installed

# Below this many members a member's last reconciliation step reads the group's members to
# settle its listed state at once (as the consumer protocol's SETTLED_AT_ONCE_BELOW).
SETTLED_AT_ONCE_BELOW = 100


class Reconciling:
    """The streams heartbeat's reconciliation hooks (service/modern/heartbeat.py calls them
    in order: holdings, plan, write_plan, lower_deadline_to, after_plan, response)."""

    request: StreamsGroupHeartbeatRequest
    ctx: ApiContext
    ss: StreamsGroupStore
    now: int
    _settle_state: Callable[[StreamsGroup, str], None]  # the skeleton's

    def holdings(
        self, group: StreamsGroup, member: StreamsGroupMember, installed: Installed | None
    ) -> Holdings:
        """What the members recorded in `waitOn` still hold (consistent reads, or the snapshot
        of the install this request just completed), when the member needs it."""
        if not needs_holdings_of_others(group, member):
            return Holdings()
        ids = [i for i in member.wait_on if i != member.member_id]
        if not ids:
            return Holdings()
        if installed is not None and all(i in installed.members for i in ids):
            found = {i: installed.members[i] for i in ids}
        else:
            found = self.ss.members_by_id(group, ids)
        if len(found) < len(ids):
            # A holder is gone: left, expired, or replaced by its static instance's new member
            # id, which holds its tasks now. Rare: every member is read.
            found = {m.member_id: m for m in self.ss.members(group)}
        others = (m for m in found.values() if m.member_id != member.member_id)
        return holdings_of((m.process_id, m.tasks.holds) for m in others)

    def write_plan(
        self, group: StreamsGroup, member: StreamsGroupMember, plan: ReconcilePlan
    ) -> StreamsGroup:
        shutdown_before = group.shutdown_requested_by
        group = self._write_plan(group, member, plan)
        held_after = plan.member.tasks.holds if plan.writes else member.tasks.holds
        # After the writes committed: the others hear of the shutdown, or take the tasks.
        if shutdown_first_requested(shutdown_before, group.shutdown_requested_by):
            notify_members(self.ctx.store, group.group_id, None, skip=member.member_id)
        else:
            released = released_tasks(member.tasks.holds, held_after)
            if not released.is_empty():
                self._tell_waiters(group, member, released)
        return group

    def _tell_waiters(
        self, group: StreamsGroup, member: StreamsGroupMember, released: TasksTuple
    ) -> None:
        """Released tasks: the members waiting on them may take them now
        (core/streams/notices.release_notice_members); every member if the others cannot be
        read."""
        notify_waiting(
            self.ctx.store,
            group.group_id,
            lambda: release_notice_members(released, self.ss.members(group), member),
            skip=member.member_id,
        )

    def _write_plan(
        self, group: StreamsGroup, member: StreamsGroupMember, plan: ReconcilePlan
    ) -> StreamsGroup:
        if plan.member.user_endpoint != member.user_endpoint:
            # A new endpoint alone (no new group epoch; rare): the member and a new endpoint
            # epoch in one write. A member's tasks changing needs none: the map shows targets.
            items = self.ss.put_member(group, plan.member, new=False)
            group = self.ss.update_group(group, group.with_endpoints_changed(), extra=items)
        elif plan.writes:
            self.ss.write_member(group, plan.member)
        if self.request.shutdown_application and group.shutdown_requested_by is None:
            group = self.ss.update_group(
                group, replace(group, shutdown_requested_by=member.member_id)
            )
        return group

    def after_plan(self, group: StreamsGroup, plan: ReconcilePlan) -> None:
        """The group's listed state once a member reached its target (list-groups), written
        when it changed; small groups only, best effort (as the consumer protocol's)."""
        after, before = plan.after, plan.before
        reached = after.state is MemberState.STABLE and after.epoch == group.target_epoch
        was = before.state is MemberState.STABLE and before.epoch == group.target_epoch
        if not reached or was or group.state != RECONCILING:
            return
        if group.member_count >= SETTLED_AT_ONCE_BELOW:
            return
        members = [m for m in self.ss.members(group) if m.member_id != plan.member.member_id]
        members.append(plan.member)
        ready = group.topology_status is None
        state = group_state(len(members), group.group_epoch, group.target_epoch, ready, members)
        self._settle_state(group, state)

    def response(self, group: StreamsGroup, plan: ReconcilePlan) -> StreamsGroupHeartbeatResponse:
        settings = self.ctx.settings
        response = StreamsGroupHeartbeatResponse(
            member_id=self.request.member_id,
            member_epoch=plan.after.epoch,
            heartbeat_interval_ms=heartbeat_interval_ms(settings),
            acceptable_recovery_lag=settings.group_streams_acceptable_recovery_lag,
            task_offset_interval_ms=settings.group_streams_task_offset_interval_ms,
            status=status_list(group, plan.member, self.now),
            endpoint_information_epoch=group.endpoint_epoch,
        )
        if plan.sends_tasks:
            assigned = plan.after.assigned
            response.active_tasks = task_list(assigned.active)
            response.standby_tasks = task_list(assigned.standby)
            response.warmup_tasks = task_list(assigned.warmup)
        if self.request.endpoint_information_epoch != group.endpoint_epoch:
            response.partitions_by_user_endpoint = endpoint_partitions(
                self.ctx.store, group, plan.member
            )
        return response
