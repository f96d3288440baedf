"""The streams heartbeat's reconciliation step (service/streams/heartbeat.py): what the members
a member waits on still hold, the plan (core/streams/heartbeat_rules.plan_reconcile), its one
member write, and the answer: statuses, tasks when they changed, the endpoints' partitions
when the member's endpoint epoch is behind."""

from __future__ import annotations

import contextlib
from dataclasses import replace

from ...core.streams.group import RECONCILING, StreamsGroup, group_state
from ...core.streams.heartbeat_rules import (
    ReconcilePlan,
    needs_holdings_of_others,
    plan_reconcile,
)
from ...core.streams.member import StreamsGroupMember
from ...core.streams.reconciliation import Holdings, MemberState, holdings_of
from ...models.streams import StreamsGroupHeartbeatRequest, StreamsGroupHeartbeatResponse
from ...store.errors import Conflict
from ...store.streams.repository import StreamsGroupStore
from ..context import ApiContext
from .answers import endpoint_partitions, status_list, task_list
from .common import heartbeat_interval_ms, reload, renewal_slack, session_ms
from .install import Installed

# Below this many members a member's last reconciliation step reads the group's members to
# settle its listed state at once (as the consumer protocol's SETTLED_AT_ONCE_BELOW).
SETTLED_AT_ONCE_BELOW = 100


class Reconciling:
    """The reconciliation half of a heartbeat (its subclass reads the group and the member)."""

    request: StreamsGroupHeartbeatRequest
    ctx: ApiContext
    ss: StreamsGroupStore
    now: int

    def _holdings(
        self, group: StreamsGroup, member: StreamsGroupMember, installed: Installed | None
    ) -> Holdings:
        """What the members recorded in `waitOn` still hold (consistent reads, or the snapshot
        of the install this request just completed)."""
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

    def _reconcile(
        self,
        group: StreamsGroup,
        member: StreamsGroupMember,
        updated: StreamsGroupMember,
        installed: Installed | None = None,
    ) -> StreamsGroupHeartbeatResponse:
        others = Holdings()
        if needs_holdings_of_others(group, member):
            others = self._holdings(group, member, installed)
        plan = plan_reconcile(
            group,
            member,
            updated,
            self.request,
            others,
            now=self.now,
            session_ms=session_ms(self.ctx.settings),
            renewal_slack_ms=renewal_slack(self.ctx.settings),
        )
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
        if plan.lower_group_deadline_to is not None:
            self._lower_group_deadline(group, plan.lower_group_deadline_to)
        self._maybe_settle(group, plan)
        return self._response(group, plan)

    def _maybe_settle(self, group: StreamsGroup, plan: ReconcilePlan) -> None:
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
        if state != group.state:
            with contextlib.suppress(Conflict):
                self.ss.update_group(group, replace(group, state=state))

    def _lower_group_deadline(self, group: StreamsGroup, deadline: int) -> None:
        """A rebalance timeout earlier than the group's next look: look earlier (best
        effort: the next expiry recomputes the deadline from the members anyway)."""
        for _ in range(3):
            try:
                self.ss.update_group(group, replace(group, deadline=deadline))
                return
            except Conflict:
                fresh = reload(self.ss, group.group_id)
                if fresh is None or (fresh.deadline is not None and fresh.deadline <= deadline):
                    return
                group = fresh

    def _response(self, group: StreamsGroup, plan: ReconcilePlan) -> StreamsGroupHeartbeatResponse:
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
