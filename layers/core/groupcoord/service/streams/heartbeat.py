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
from ...core.modern.refusal import Refusal
from ...core.streams.configuration import (
    InvalidTopology,
    StatusCode,
    configure,
)
from ...core.streams.group import StreamsGroup
from ...core.streams.heartbeat_rules import (
    CONVERSION,
    ReconcilePlan,
    TopologyStep,
    apply_request,
    plan_new_member,
    plan_reconcile,
    plan_static_takeover,
    plan_topology,
    static_leave,
)
from ...core.streams.member import StreamsGroupMember
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
from ...store.stored_group import StoredGroup
from ...store.writes import NO_WRITES, Writes
from ..context import ApiContext
from ..modern.heartbeat import (
    Answer,
    Joining,
    MemberHeartbeat,
    refusal_answer,
    run_heartbeat,
)
from ..refusals import group_refusal, may_describe_topics
from .common import heartbeat_interval_ms, renewal_slack, session_ms
from .expiry import expire_streams_group
from .install import Installed, ensure_target
from .reconciling import Reconciling
from .topology import registry_counts
from .visibility import topic_changes_matter

Response = StreamsGroupHeartbeatResponse


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
        return refusal_answer(Response, request, refusal)
    return run_heartbeat(request, ctx, lambda c: _Heartbeat(request, ctx, consistent=c), Response)


class _Heartbeat(
    Reconciling, MemberHeartbeat[StreamsGroup, StreamsGroupMember, ReconcilePlan, Response]
):
    conversion = CONVERSION
    takeover_rule = staticmethod(plan_static_takeover)
    reconcile_rule = staticmethod(plan_reconcile)

    def __init__(self, request: StreamsGroupHeartbeatRequest, ctx: ApiContext, consistent: bool):
        super().__init__(request, ctx, consistent, ctx.store.streams)
        self.request: StreamsGroupHeartbeatRequest = request
        self.ss = ctx.store.streams
        # The digest of the report this heartbeat stored (_record_report), which the member's
        # write records.
        self.report_digest: str | None = None
        # A join's topology and what it does to the group's (_join).
        self.topology: Topology | None = None
        self.step = TopologyStep.SAME

    def _may_create(self, topic: str) -> bool:
        """Kafka's check before it creates a streams group's internal topic."""
        caller = self.ctx.caller
        return caller.may_on_cluster(AclOperation.CREATE) or caller.may_on_topic(
            AclOperation.CREATE, topic
        )

    def session_ms(self) -> int:
        return session_ms(self.ctx.settings)

    def renewal_slack_ms(self, member: StreamsGroupMember) -> int:
        return renewal_slack(self.ctx.settings, connected=member.push_connected(self.now))

    def install(self, group: StreamsGroup) -> tuple[StreamsGroup, Installed | None]:
        """The target installed at once (unless another install or the initial delay holds
        it back)."""
        return ensure_target(self.ctx.store, group, may_create=self._may_create)

    def ensure_target(self, group: StreamsGroup) -> object:
        return self.install(group)

    # --- the group ---

    def before_group(self) -> None:
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

    def create(self, replacing: StoredGroup | None) -> None:
        self.ss.create_group(
            self.request.group_id, self.ctx.settings.member_shards, self.now, replacing
        )

    def prepare(self, found: StoredGroup) -> StreamsGroup:
        """Due expiries, topic changes and target installs of the group `found`."""
        group = found.streams()
        if group.deadline is not None and group.deadline <= self.now:
            expire_streams_group(self.ctx.store, found, self.now)
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
            group, _ = self.install(group)
        return group

    # --- members ---

    def apply(self, member: StreamsGroupMember) -> tuple[StreamsGroupMember, bool]:
        updated, changed = apply_request(
            member, self.request, self.ctx.client_id, self.ctx.client_host
        )
        if self.report_digest is not None:
            updated = replace(updated, report_digest=self.report_digest)
        return updated, changed

    def check_epoch(self, member: StreamsGroupMember) -> Refusal | None:
        return check_member_epoch(member, self.request.member_epoch, owned_tasks(self.request))

    def static_leave(self, member: StreamsGroupMember) -> StreamsGroupMember:
        return static_leave(member)

    def without(self, group: StreamsGroup, member: StreamsGroupMember) -> StreamsGroup:
        return group.with_members(-1).with_endpoints_changed(member.user_endpoint is not None)

    def moved(
        self,
        group: StreamsGroup,
        before: StreamsGroupMember,
        after: StreamsGroupMember,
        changed: bool,
    ) -> StreamsGroup | None:
        """A new group epoch when what the target is computed from changed; a new endpoint
        epoch when the member's endpoint did. The endpoints map names a static member's
        line by its instance: a takeover under a new member id with the same endpoint needs
        no new map."""
        endpoints = before.user_endpoint != after.user_endpoint
        if not (changed or endpoints):
            return None
        moved = group.with_members(0) if changed else group
        return moved.with_endpoints_changed(endpoints)

    def left(self, epoch: int) -> Response:
        """A leave's answer: the epoch it left with, and the configured intervals (every
        successful answer carries them)."""
        settings = self.ctx.settings
        return Response(
            member_id=self.request.member_id,
            member_epoch=epoch,
            heartbeat_interval_ms=heartbeat_interval_ms(settings),
            acceptable_recovery_lag=settings.group_streams_acceptable_recovery_lag,
            task_offset_interval_ms=settings.group_streams_task_offset_interval_ms,
            status=[],
        )

    # --- joins ---

    def _join(self, group: StreamsGroup) -> Response:
        """The join's topology is decided first (131 refuses it before anything else)."""
        assert self.request.topology is not None
        topology = from_message(self.request.topology)
        step = plan_topology(group, topology)
        if isinstance(step, Refusal):
            raise Answer(step)
        self.topology, self.step = topology, step
        return super()._join(group)

    def before_writes(self, group: StreamsGroup) -> StreamsGroup:
        """A join with a newer topology epoch replaces the group's topology (validated
        first: before_group) and bumps the group epoch: a rolling upgrade keeps its group.
        Members still on the older epoch hear status 0 and keep only the sub-topologies both
        epochs share (install.py)."""
        if self.step is not TopologyStep.UPDATE:
            return group
        topology = self.topology
        assert topology is not None
        self.step = TopologyStep.SAME
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

    def new_member(self, group: StreamsGroup) -> Joining[StreamsGroup, StreamsGroupMember]:
        """The caller as a member the group does not know yet, or refused (a full group), and
        the changelog offsets report its join carries, written in its join's transaction
        (read before the member is built: the member's write records its digest). No new
        endpoint epoch: the map shows targets, and a joiner has none until the install that
        gives it one bumps the epoch (a burst of joins rebuilds no map)."""
        fresh = StreamsGroupMember(self.request.member_id, principal=self.ctx.caller.principal)
        report = self._new_report(group, fresh)
        joiner, _ = self.apply(fresh)
        settings = self.ctx.settings
        plan = plan_new_member(
            group,
            joiner,
            max_size=settings.group_streams_max_size,
            now=self.now,
            session_ms=self.session_ms(),
            initial_delay_ms=settings.group_streams_initial_rebalance_delay_ms,
        )
        if isinstance(plan, Refusal):
            raise Answer(plan)
        writes = self.ss.report_writes(group, plan.member.member_id, report)
        return Joining(plan.member, plan.group, writes)

    def joined(
        self, group: StreamsGroup, joining: Joining[StreamsGroup, StreamsGroupMember]
    ) -> tuple[StreamsGroup, Writes]:
        """A first join's topology becomes the group's, in the join's transaction."""
        if self.step is not TopologyStep.INITIALIZE:
            return joining.group, NO_WRITES
        topology = self.topology
        assert topology is not None
        first = replace(
            joining.group, topology_epoch=topology.epoch, topology_digest=topology.digest()
        )
        return first, self.ss.put_topology(group.group_id, topology)

    def takeover_writes(self, group: StreamsGroup, successor: StreamsGroupMember) -> Writes:
        """The report the takeover's request carries, under its new member id."""
        report = self._new_report(group, successor)
        return self.ss.report_writes(group, self.request.member_id, report)

    # --- the changelog offsets report ---

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

    def reported(self, group: StreamsGroup, member: StreamsGroupMember) -> bool:
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
