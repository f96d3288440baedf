"""Target installs of a streams group, as the consumer protocol's (service/consumer/install.py):
when the group epoch is ahead of the target epoch, configure the topology on the registry's
topics, run the sticky task assignor over every member, write the members' new targets and
flip the target epoch, under the install lease on the group item.

A topology that cannot be configured yet (a source topic missing, partition counts that
disagree) gives every member an empty target: the group is NotReady, and its status is
answered by every heartbeat until a topic change lets the next install configure it. A group
still in its initial rebalance delay installs nothing. Installs are batched in time as the
consumer protocol's (`group.streams.assignment.interval.ms`).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from ...core.streams.assignor import AssignorMember, assign
from ...core.streams.configuration import ConfiguredTopology
from ...core.streams.group import StreamsGroup, group_state
from ...core.streams.heartbeat_rules import in_initial_delay
from ...core.streams.member import StreamsGroupMember
from ...core.streams.tasks import EMPTY, TaskId, TasksTuple, minus, task_ids, union
from ...core.streams.topology import Topology
from ...core.streams.warmups import Report, refine
from ...store.errors import Conflict
from ...store.store import Store
from ..modern.install import LEASE_MS, install_if_due, is_held_back, leased
from .topology import MayCreate, configured, subscribe
from .visibility import digest_if_gated, members_visible


@dataclass(frozen=True)
class Installed:
    """An install this request completed: the group after the flip and every member as the
    install left it (as service/consumer/install.Installed)."""

    group: StreamsGroup
    members: dict[str, StreamsGroupMember]


def ensure_target(
    store: Store, group: StreamsGroup, batched: bool = True, may_create: MayCreate | None = None
) -> tuple[StreamsGroup, Installed | None]:
    """The group with its target installed up to the current group epoch if this request could
    do it (at most one install per request). `may_create`: whether the request may create the
    topology's internal topics (None: the sweeper's install, which may unless the authorizer
    is on; a member's next heartbeat creates them then)."""
    if may_create is None:
        allowed = not store.settings.authorizer_enabled
        may_create = lambda _topic: allowed  # noqa: E731
    interval = store.settings.group_streams_assignment_interval_ms
    creates = may_create

    def held_back(g: StreamsGroup, now: int) -> bool:
        # The initial rebalance delay holds it back too (core/streams/heartbeat_rules.py).
        return in_initial_delay(g, now) or is_held_back(g, now, batched, interval)

    return install_if_due(
        store, store.streams, group, held_back, lambda g, now: install(store, g, now, creates)
    )


def _previous(m: StreamsGroupMember) -> TasksTuple:
    """What the assignor keeps sticky: the previous target, a warm-up counting as a standby
    (the member has state of it)."""
    return TasksTuple(m.target.active, union(m.target.standby, m.target.warmup))


def _reports(
    store: Store, group: StreamsGroup, members: list[StreamsGroupMember], config: ConfiguredTopology
) -> dict[str, Report]:
    """The members' latest lag reports, when they can matter: state to move between members
    (warm-ups), standbys to choose a new active from (the most caught up), a restarted
    process's state on disk to give its tasks back to."""
    if not config.stateful or len(members) < 2:
        return {}
    return store.streams.reports(group)


def _refined(
    store: Store,
    members: list[StreamsGroupMember],
    topology: Topology,
    config: ConfiguredTopology,
    targets: dict[str, TasksTuple],
    reports: dict[str, Report],
) -> dict[str, TasksTuple]:
    """Warm-ups by lag (core/streams/warmups.py), when the group has state to move. A task
    stays active only on a holder that may still run it (a member on an older topology epoch
    gives up the sub-topologies that changed at once)."""
    settings = store.settings
    if settings.group_streams_num_warmup_replicas == 0 or not config.stateful or len(members) < 2:
        return targets
    holders = {
        t: m.member_id
        for m in members
        for t in task_ids(m.tasks.holds.active)
        if topology.runs(t[0], m.topology_epoch)
    }
    return refine(
        targets,
        holders,
        {m.member_id: m.process_id for m in members},
        reports,
        config.stateful,
        acceptable_lag=settings.group_streams_acceptable_recovery_lag,
        max_warmups=settings.group_streams_num_warmup_replicas,
        num_standby=settings.group_streams_num_standby_replicas,
    )


def _targets(
    store: Store,
    members: list[StreamsGroupMember],
    topology: Topology,
    config: ConfiguredTopology,
    reports: dict[str, Report],
) -> dict[str, TasksTuple]:
    """The sticky assignor's targets. During a rolling upgrade (members on older topology
    epochs) each set of sub-topologies is assigned among the members that may run it: the
    ones every member's epoch shares among all, the changed ones among the upgraded."""
    if not config.is_ready or not members:
        return {}
    by_runners: dict[tuple[str, ...], list[str]] = {}
    for sub in sorted(config.task_counts):
        runners = tuple(m.member_id for m in members if topology.runs(sub, m.topology_epoch))
        by_runners.setdefault(runners, []).append(sub)
    settings = store.settings
    targets: dict[str, TasksTuple] = {}
    for runners, subs in by_runners.items():
        chosen = [m for m in members if m.member_id in runners]
        found = assign(
            [
                AssignorMember(
                    m.member_id,
                    m.process_id,
                    _previous(m),
                    m.client_tags,
                    reports[m.member_id].lags() if m.member_id in reports else {},
                    reports[m.member_id].offsets if m.member_id in reports else {},
                )
                for m in chosen
            ],
            {s: config.task_counts[s] for s in subs},
            config.stateful,
            settings.group_streams_num_standby_replicas,
            settings.group_streams_acceptable_recovery_lag,
        )
        for member_id, tasks in found.items():
            targets[member_id] = targets.get(member_id, EMPTY).merge(tasks)
    return targets


@dataclass(frozen=True)
class _Holders:
    """Who holds what, read once per install: the member holding each task active, and the
    members of each process holding each task in any role."""

    active: dict[TaskId, str]
    on_process: dict[tuple[str, TaskId], set[str]]

    @classmethod
    def of(cls, members: list[StreamsGroupMember]) -> _Holders:
        active: dict[TaskId, str] = {}
        on_process: dict[tuple[str, TaskId], set[str]] = {}
        for m in members:
            held = m.tasks.holds
            for task in task_ids(held.active):
                active[task] = m.member_id
            for task in task_ids(held.all_tasks()):
                on_process.setdefault((m.process_id, task), set()).add(m.member_id)
        return cls(active, on_process)

    def wait_on(self, m: StreamsGroupMember, target: TasksTuple) -> tuple[str, ...]:
        """The members that hold some task of `m`'s target in a way that keeps it from `m`:
        its active elsewhere, or any copy on `m`'s process (core/streams/reconciliation.py)."""
        held = m.tasks.holds
        waits: set[str] = set()
        for task in task_ids(minus(target.active, held.active)):
            if task in self.active:
                waits.add(self.active[task])
        needed = TasksTuple(
            minus(target.active, held.active),
            minus(target.standby, held.standby),
            minus(target.warmup, held.warmup),
        )
        for task in task_ids(needed.all_tasks()):
            waits.update(self.on_process.get((m.process_id, task), ()))
        waits.discard(m.member_id)
        return tuple(sorted(waits))


def install(store: Store, group: StreamsGroup, now_ms: int, may_create: MayCreate) -> Installed:
    ss, installs = store.streams, store.streams_installs
    epoch = group.group_epoch
    lease = leased(group, now_ms)
    install_id = lease.install_id
    assert install_id is not None
    group = installs.take_install_lease(group, lease, now_ms)
    try:
        members = ss.members(group)
        topology = ss.topology(group.group_id)
        if topology is None:  # a group never joined with a topology has no target
            raise Conflict(group.group_id)
        if group.validated_topology_epoch != topology.epoch:
            subscribe(store, group.group_id, topology)
        # A regex resolves only what every member may describe; the fingerprint is read
        # before the configuration, so a change after it moves the group at its next look.
        visible = members_visible(store, members, now_ms)
        digest = digest_if_gated(store, topology, visible)
        config = configured(store, group.group_id, topology, now_ms, may_create, visible)
        reports = _reports(store, group, members, config)
        targets = _targets(store, members, topology, config, reports)
        targets = _refined(store, members, topology, config, targets, reports)
        by_id = {m.member_id: m for m in members}
        holders = _Holders.of(members)
        updates = []
        for m in members:
            target = targets.get(m.member_id, EMPTY)
            wait_on = holders.wait_on(m, target)
            if target != m.target or not set(wait_on) <= set(m.wait_on):
                written = replace(m, target=target, wait_on=wait_on)
                updates.append(installs.target_update(group, written, epoch))
                by_id[m.member_id] = replace(
                    written, target_epoch=epoch, target_version=m.target_version + 1
                )
        installs.write_targets(group, install_id, updates, lambda: store.clock.now_ms() + LEASE_MS)
        installed = replace(
            group,
            target_epoch=epoch,
            assigned_at=store.clock.now_ms(),
            validated_topology_epoch=topology.epoch if config.is_ready else -1,
            topology_status=config.status,
            topology_detail=config.detail,
            resolved_digest=digest,
            state=group_state(len(members), epoch, epoch, config.is_ready, None),
            install_id=None,
            install_until=0,
        )
        # The endpoints map shows the target: one new endpoint epoch per install, in the flip.
        installed = installed.with_endpoints_changed(any(m.user_endpoint for m in members))
        flipped = installs.flip_target(group, installed, install_id)
    except BaseException:
        installs.release_install(group.group_id, install_id)
        raise
    return Installed(flipped, by_id)
