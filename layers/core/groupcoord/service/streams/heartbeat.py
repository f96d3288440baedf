"""streams-group-heartbeat (KIP-1071): join, leave, and the regular heartbeat that reconciles
a member towards its target, as the consumer protocol's (service/consumer/heartbeat.py).

A steady heartbeat (nothing changed) reads the group item (eventually consistent) and the
member item (consistent) and writes only the member item, conditioned on the versions read,
and only when its session needs renewing (core/session_renewal.py): the cost of a
consumer-protocol heartbeat. An error decided on the eventually consistent read is confirmed
on consistent reads before it is answered. A join or a leave is one transaction with the group
item conditioned on its version; a lost race is re-read (consistently) and decided again.
"""

from __future__ import annotations

from dataclasses import replace

from ...core.acls import AclOperation
from ...core.modern.access import GroupAccess, plan_group_access
from ...core.modern.refusal import Refusal
from ...core.modern.static import check_identity, needs_instance_owner
from ...core.ownership import NOT_OWNER_MESSAGE
from ...core.streams.configuration import (
    InvalidTopology,
    StatusCode,
    configure,
)
from ...core.streams.group import StreamsGroup
from ...core.streams.heartbeat_rules import (
    CONVERSION,
    NewMember,
    TopologyStep,
    apply_request,
    plan_new_member,
    plan_static_takeover,
    plan_topology,
    static_leave,
)
from ...core.streams.member import LEAVE_EPOCH, STATIC_LEAVE_EPOCH, StreamsGroupMember
from ...core.streams.tasks import task_ids
from ...core.streams.topology import Topology, from_message
from ...core.streams.validation import (
    check_member_epoch,
    owned_tasks,
    task_offsets,
    validate_heartbeat,
)
from ...core.streams.warmups import Report, caught_up
from ...errors import Errors
from ...models.streams import StreamsGroupHeartbeatRequest, StreamsGroupHeartbeatResponse
from ...store.errors import Conflict
from ...store.stored_group import StoredGroup
from ..context import ApiContext
from ..races import DecideAgain, retry_on_race
from ..refusals import group_refusal, may_describe_topics
from .common import heartbeat_interval_ms, reload, session_ms
from .expiry import expire_streams_group
from .install import Installed, ensure_target
from .reconciling import Reconciling
from .topology import registry_counts
from .visibility import topic_changes_matter


class Answer(Exception):
    """A Kafka error answer, raised from deep in the flow."""

    def __init__(self, refusal: Refusal) -> None:
        super().__init__(refusal.message)
        self.refusal = refusal


def _error(
    request: StreamsGroupHeartbeatRequest, refusal: Refusal
) -> StreamsGroupHeartbeatResponse:
    return StreamsGroupHeartbeatResponse(
        error_code=refusal.error, error_message=refusal.message, member_id=request.member_id
    )


def _topology_topics(request: StreamsGroupHeartbeatRequest) -> set[str]:
    if request.topology is None:
        return set()
    topology = from_message(request.topology)
    names = set(topology.internal_topics())
    for s in topology.subtopologies:
        names.update(s.source_topics)
    return names


def streams_group_heartbeat(
    request: StreamsGroupHeartbeatRequest, ctx: ApiContext
) -> StreamsGroupHeartbeatResponse:
    # Kafka's checks come before anything is validated or read: READ on the group, then
    # DESCRIBE on every topic the topology names (29 for the whole request).
    refused = group_refusal(ctx, AclOperation.READ, request.group_id, StreamsGroupHeartbeatResponse)
    if refused is not None:
        return refused
    if not may_describe_topics(ctx, _topology_topics(request)):
        return StreamsGroupHeartbeatResponse(error_code=Errors.TOPIC_AUTHORIZATION_FAILED)
    refusal = validate_heartbeat(request)
    if refusal is not None:
        return _error(request, refusal)

    def once(attempt: int) -> StreamsGroupHeartbeatResponse:
        consistent = attempt > 0
        try:
            return _Heartbeat(request, ctx, consistent=consistent).run()
        except Answer as answer:
            if consistent:
                return _error(request, answer.refusal)
            raise DecideAgain() from None

    busy = Refusal(Errors.COORDINATOR_LOAD_IN_PROGRESS, "The group is busy; retry the heartbeat.")
    return retry_on_race(ctx.clock, once, busy=lambda: _error(request, busy))


class _Heartbeat(Reconciling):
    def __init__(self, request: StreamsGroupHeartbeatRequest, ctx: ApiContext, consistent: bool):
        self.request = request
        self.ctx = ctx
        self.consistent = consistent
        self.ss = ctx.store.streams
        self.now = ctx.now_ms
        # The digest of the report this heartbeat stored (_record_report), which the member's
        # write records.
        self.report_digest: str | None = None

    def _may_create(self, topic: str) -> bool:
        """Kafka's check before it creates a streams group's internal topic."""
        caller = self.ctx.caller
        return caller.may_on_cluster(AclOperation.CREATE) or caller.may_on_topic(
            AclOperation.CREATE, topic
        )

    def _ensure_target(self, group: StreamsGroup) -> tuple[StreamsGroup, Installed | None]:
        return ensure_target(self.ctx.store, group, may_create=self._may_create)

    def run(self) -> StreamsGroupHeartbeatResponse:
        if self.request.member_epoch == 0:
            self._check_configurable()
        group = self._group()
        epoch = self.request.member_epoch
        if epoch == LEAVE_EPOCH:
            return self._leave(group)
        if epoch == STATIC_LEAVE_EPOCH:
            return self._static_leave(group)
        if epoch == 0:
            return self._join(group)
        return self._heartbeat(group)

    # --- the group ---

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

    def _group(self) -> StreamsGroup:
        gid = self.request.group_id
        item = self.ss.read_group(gid, consistent=self.consistent)
        access = self._access(item)
        if access is not GroupAccess.USE:
            replacing = item if access is GroupAccess.REPLACE else None
            self.ss.create_group(gid, self.ctx.settings.member_shards, self.now, replacing)
            if replacing is not None:  # the classic group's pending member ids go
                self.ctx.store.classic.delete_classic_leftovers(gid, replacing.header.member_shards)
            item = self.ss.read_group(gid, consistent=True)
            if self._access(item) is not GroupAccess.USE:
                raise Conflict(gid)
        assert item is not None
        return self._prepare(item)

    def _prepare(self, item: StoredGroup) -> StreamsGroup:
        """Due expiries, topic changes and target installs of the group `item`."""
        group = item.streams()
        if group.deadline is not None and group.deadline <= self.now:
            expire_streams_group(self.ctx.store, item, self.now)
            group = self._reload(group)
        if group.topology_status is StatusCode.MISSING_INTERNAL_TOPICS and group.member_count:
            # An install could not create them (its caller may not): this caller tries again.
            topology = self.ss.topology(group.group_id)
            if topology is not None and all(
                self._may_create(t) for t in topology.internal_topics()
            ):
                group = self.ss.update_group(
                    group, replace(group, group_epoch=group.group_epoch + 1)
                )
        if group.topic_changes != group.topic_changes_seen:
            # A topic of the topology was created, deleted or grown: configure it again,
            # unless a regex matched it that the members may not describe (visibility.py).
            matters = group.member_count > 0 and topic_changes_matter(
                self.ctx.store, group, self.now
            )
            bumped = replace(
                group,
                topic_changes_seen=group.topic_changes,
                group_epoch=group.group_epoch + (1 if matters else 0),
            )
            group = self.ss.update_group(group, bumped)
        if group.group_epoch > group.target_epoch:
            group, _ = self._ensure_target(group)
        return group

    def _reload(self, group: StreamsGroup) -> StreamsGroup:
        fresh = reload(self.ss, group.group_id)
        if fresh is None:
            raise Conflict(group.group_id)
        return fresh

    # --- members ---

    def _owned(self, member: StreamsGroupMember) -> StreamsGroupMember:
        """`member`, if the caller may act as it (core/ownership.py); else refused with 30."""
        if not self.ctx.caller.may_act_as(member.principal):
            raise Answer(Refusal(Errors.GROUP_AUTHORIZATION_FAILED, NOT_OWNER_MESSAGE))
        return member

    def _existing(self, group: StreamsGroup) -> StreamsGroupMember:
        """The member the request names, if it passes the static identity checks (25, 82)
        and the caller may act as it (30)."""
        req = self.request
        member = self.ss.member(group, req.member_id, consistent=True)
        owner = None
        if needs_instance_owner(req.instance_id, member):
            assert req.instance_id is not None
            owner = self.ss.instance_owner(group, req.instance_id)
        refusal = check_identity(group.group_id, req.member_id, req.instance_id, member, owner)
        if refusal is not None:
            raise Answer(refusal)
        assert member is not None
        return self._owned(member)

    def _static_leave(self, group: StreamsGroup) -> StreamsGroupHeartbeatResponse:
        """-2: the member keeps its tasks for its instance's return within the session; no
        new epoch (beyond Kafka 4.2, as the consumer protocol's static members)."""
        member = self._existing(group)
        self.ss.write_member(group, static_leave(member))
        return self._left(STATIC_LEAVE_EPOCH)

    def _left(self, epoch: int) -> StreamsGroupHeartbeatResponse:
        """A leave's answer: the epoch it left with, and the configured intervals (every
        successful answer carries them)."""
        settings = self.ctx.settings
        return StreamsGroupHeartbeatResponse(
            member_id=self.request.member_id,
            member_epoch=epoch,
            heartbeat_interval_ms=heartbeat_interval_ms(settings),
            acceptable_recovery_lag=settings.group_streams_acceptable_recovery_lag,
            task_offset_interval_ms=settings.group_streams_task_offset_interval_ms,
            status=[],
        )

    def _apply(self, member: StreamsGroupMember) -> tuple[StreamsGroupMember, bool]:
        updated, changed = apply_request(
            member, self.request, self.ctx.client_id, self.ctx.client_host
        )
        if self.report_digest is not None:
            updated = replace(updated, report_digest=self.report_digest)
        return updated, changed

    def _leave(self, group: StreamsGroup) -> StreamsGroupHeartbeatResponse:
        member = self._existing(group)
        left = group.with_members(-1).with_endpoints_changed(member.user_endpoint is not None)
        group = self.ss.update_group(group, left, extra=self.ss.remove_member(group, member))
        self._ensure_target(group)
        return self._left(LEAVE_EPOCH)

    def _topology(self, group: StreamsGroup) -> tuple[Topology, TopologyStep]:
        assert self.request.topology is not None
        topology = from_message(self.request.topology)
        step = plan_topology(group, topology)
        if isinstance(step, Refusal):
            raise Answer(step)
        return topology, step

    def _check_configurable(self) -> None:
        """A topology that can never be configured (a loop, a repartition source nothing
        writes) is refused before anything is created or kept (130). Every join reads its
        topics here, all on the registry's one partition key: eventually consistent, half a
        read unit a topic (a burst of 5,000 joins of a three-topic topology reads 7,500 units
        there, not 15,000). A stale count cannot refuse a join: only the topology's shape
        does (a missing topic is a status, which installs decide on consistent reads)."""
        assert self.request.topology is not None
        topology = from_message(self.request.topology)
        try:
            configure(topology, registry_counts(self.ctx.store, topology, consistent=False))
        except InvalidTopology as why:
            raise Answer(Refusal(Errors.STREAMS_INVALID_TOPOLOGY, str(why))) from None

    def _update_topology(self, group: StreamsGroup, topology: Topology) -> StreamsGroup:
        """A join with a newer topology epoch replaces the group's topology (validated
        first: _check_configurable) and bumps the group epoch: a rolling upgrade keeps its
        group. Members still on the older epoch hear status 0 and keep only the sub-topologies
        both epochs share (install.py)."""
        old = self.ss.topology(group.group_id)
        kept = old.updated_to(topology) if old is not None else topology
        updated = replace(
            group,
            topology_epoch=topology.epoch,
            topology_digest=topology.digest(),
            group_epoch=group.group_epoch + 1,
        )
        put = self.ss.put_topology(group.group_id, kept)
        return self.ss.update_group(group, updated, extra=put)

    def _join(self, group: StreamsGroup) -> StreamsGroupHeartbeatResponse:
        topology, step = self._topology(group)
        member, owner, owner_id = self._join_route(group)
        if step is TopologyStep.UPDATE:
            group, step = self._update_topology(group, topology), TopologyStep.SAME
        if owner is not None:
            return self._replace_static(group, owner)
        if member is not None:
            self._record_report(group, member)
            updated, changed = self._apply(member)
            if not changed:
                return self._reconcile(group, member, updated)
            return self._rewrite(group, member, updated)
        return self._add_member(group, topology, step, owner_id)

    def _join_route(
        self, group: StreamsGroup
    ) -> tuple[StreamsGroupMember | None, StreamsGroupMember | None, str | None]:
        """Who a join names, decided before it writes anything (its topology included): the
        member it rejoins as, or the static member whose instance it takes over, each only if
        the caller may act as it (else 30, and the group is left as it was); and who claims
        its instance id. A takeover the owner did not release (111), and a new member of a
        full group (81), are refused here too."""
        req = self.request
        member = self.ss.member(group, req.member_id, consistent=True)
        owner_id = self.ss.instance_owner(group, req.instance_id) if req.instance_id else None
        if owner_id is not None and owner_id != req.member_id:
            owner = self.ss.member(group, owner_id, consistent=True)
            if owner is not None:
                self._takeover(self._owned(owner))
                return None, owner, owner_id
        if member is None:
            self._new_member(group)  # a full group refuses it before anything is written
        return (self._owned(member) if member is not None else None), None, owner_id

    def _takeover(self, owner: StreamsGroupMember) -> StreamsGroupMember:
        """The member a static rejoin under the request's member id makes of `owner`."""
        req = self.request
        assert req.instance_id is not None
        copy = plan_static_takeover(
            owner, req.member_id, req.instance_id, self.now, session_ms(self.ctx.settings)
        )
        if isinstance(copy, Refusal):
            raise Answer(copy)
        return copy

    def _rewrite(
        self, group: StreamsGroup, member: StreamsGroupMember, updated: StreamsGroupMember
    ) -> StreamsGroupHeartbeatResponse:
        """What the target is computed from changed: the member and a new group epoch in one
        write (and a new endpoint epoch if the member's endpoint changed too)."""
        items = self.ss.put_member(group, updated, new=False)
        moved = group.with_members(0).with_endpoints_changed(
            updated.user_endpoint != member.user_endpoint
        )
        return self._after_change(self.ss.update_group(group, moved, items))

    def _replace_static(
        self, group: StreamsGroup, owner: StreamsGroupMember
    ) -> StreamsGroupHeartbeatResponse:
        """A static member's rejoin under a new member id: it takes over the tasks and the
        epoch, with no new group epoch unless what the target is computed from changed."""
        req = self.request
        assert req.instance_id is not None
        copy = self._takeover(owner)
        report = self.ss.report_writes(group, req.member_id, self._new_report(group, copy))
        updated, changed = self._apply(replace(copy, principal=self.ctx.caller.principal))
        items = self.ss.hand_over(group, owner, updated) + report
        # The endpoints map names a static member's line by its instance: the new member id
        # takes it over unchanged (same tasks), so only a new endpoint needs a new map.
        endpoints = owner.user_endpoint != updated.user_endpoint
        if changed or endpoints:
            moved = group.with_members(0) if changed else group
            group = self.ss.update_group(
                group, moved.with_endpoints_changed(endpoints), extra=items
            )
        else:
            self.ss.transact(items)
        return self._after_change(group)

    def _new_member(self, group: StreamsGroup) -> tuple[NewMember, Report | None]:
        """The caller as a member the group does not know yet, or refused (a full group), and
        the changelog offsets report its join carries (read before the member is built: the
        member's write records its digest)."""
        fresh = StreamsGroupMember(self.request.member_id, principal=self.ctx.caller.principal)
        report = self._new_report(group, fresh)
        joiner, _ = self._apply(fresh)
        settings = self.ctx.settings
        plan = plan_new_member(
            group,
            joiner,
            max_size=settings.group_streams_max_size,
            now=self.now,
            session_ms=session_ms(settings),
            initial_delay_ms=settings.group_streams_initial_rebalance_delay_ms,
        )
        if isinstance(plan, Refusal):
            raise Answer(plan)
        return plan, report

    def _add_member(
        self,
        group: StreamsGroup,
        topology: Topology,
        step: TopologyStep,
        instance_owner: str | None,
    ) -> StreamsGroupHeartbeatResponse:
        plan, report = self._new_member(group)
        items = self.ss.put_member(group, plan.member, new=True)
        items += self.ss.report_writes(group, plan.member.member_id, report)
        if plan.member.instance_id is not None and instance_owner != plan.member.member_id:
            # A new claim, or one a removed member left (moved over).
            items += self.ss.claim_instance(group, plan.member, instance_owner)
        # No new endpoint epoch: the map shows targets, and a joiner has none until the
        # install that gives it one bumps the epoch (a burst of joins rebuilds no map).
        joined = plan.group
        if step is TopologyStep.INITIALIZE:
            items += self.ss.put_topology(group.group_id, topology)
            joined = replace(
                joined, topology_epoch=topology.epoch, topology_digest=topology.digest()
            )
        group = self.ss.update_group(group, joined, extra=items)
        return self._after_change(group)

    def _after_change(self, group: StreamsGroup) -> StreamsGroupHeartbeatResponse:
        """After a membership write: install the target at once (unless another install or
        the initial delay holds it back), then reconcile."""
        group, installed = self._ensure_target(group)
        member = installed.members.get(self.request.member_id) if installed else None
        if member is None:
            member = self.ss.member(group, self.request.member_id, consistent=True)
        if member is None:
            raise Conflict(group.group_id)
        updated, _ = self._apply(member)
        return self._reconcile(group, member, updated, installed)

    def _new_report(self, group: StreamsGroup, member: StreamsGroupMember) -> Report | None:
        """The changelog offsets report the request carries (each list null: unchanged, the
        stored one's), None when it brings nothing new; its digest goes into the member's
        write. Kafka takes it on every heartbeat, the join included (Kafka Streams sends its
        state directory's offsets with its join)."""
        offsets = task_offsets(self.request.task_offsets)
        ends = task_offsets(self.request.task_end_offsets)
        if offsets is None and ends is None:
            return None
        if offsets is None or ends is None:
            stored = self.ss.report(group, member.member_id) if member.report_digest else None
            previous = stored or Report()
            offsets = previous.offsets if offsets is None else offsets
            ends = previous.end_offsets if ends is None else ends
        report = Report(offsets, ends)
        if not (offsets or ends or member.report_digest):
            return None  # an empty report where none is stored (Kafka Streams' first join)
        digest = report.digest()
        if digest == member.report_digest:
            return None
        self.report_digest = digest
        return report

    def _record_report(self, group: StreamsGroup, member: StreamsGroupMember) -> bool:
        """Keep the member's changelog offsets report; True when one of its warm-ups is now
        caught up (the next install promotes it). A report equal to the stored one (the
        member item keeps its digest) writes nothing: its promotion, if any, was asked for
        when it was stored. A new one is written before the member, whose write (due anyway,
        or now: it renews the session too) records its digest."""
        report = self._new_report(group, member)
        if report is None:
            return False
        self.ss.put_report(group, member.member_id, report)
        lag = self.ctx.settings.group_streams_acceptable_recovery_lag
        return any(caught_up(report, t, lag) for t in task_ids(member.tasks.assigned.warmup))

    def _heartbeat(self, group: StreamsGroup) -> StreamsGroupHeartbeatResponse:
        member = self._existing(group)
        refusal = check_member_epoch(member, self.request.member_epoch, owned_tasks(self.request))
        if refusal is not None:
            raise Answer(refusal)
        promoted = self._record_report(group, member)
        updated, changed = self._apply(member)
        if promoted and not changed:
            return self._after_change(self.ss.update_group(group, group.with_members(0)))
        if changed:
            return self._rewrite(group, member, updated)
        return self._reconcile(group, member, updated)
