"""describe-group-activity of a streams group (service/group_activity.py): its members with
their process and tasks by role, and a grid of its source topics' partitions, each owned by
the member whose active task reads it."""

from __future__ import annotations

from ...core.session_renewal import last_renewed_ms
from ...core.streams.group import StreamsGroup, group_state
from ...core.streams.member import StreamsGroupMember
from ...core.streams.tasks import Tasks
from ...models.activity import ActivityGroup, ActivityMember, ActivityTasks
from ..activity_rebalances import recent_rebalances
from ..context import ApiContext
from .common import renewal_slack, session_ms


def _tasks(tasks: Tasks) -> list[ActivityTasks]:
    return [
        ActivityTasks(subtopology_id=s, partitions=sorted(ps)) for s, ps in sorted(tasks.items())
    ]


def _member(m: StreamsGroupMember, session: int, ctx: ApiContext) -> ActivityMember:
    slack = renewal_slack(ctx.settings, connected=m.push_connected(ctx.now_ms))
    assigned = m.tasks.assigned
    return ActivityMember(
        member_id=m.member_id,
        instance_id=m.instance_id,
        client_id=m.client_id,
        client_host=m.client_host,
        principal=m.principal,
        protocol="streams",
        member_epoch=m.epoch,
        member_state=str(m.state),
        last_heartbeat_ms=last_renewed_ms(m.session_deadline, session, slack),
        session_deadline_ms=m.session_deadline,
        process_id=m.process_id,
        active_tasks=_tasks(assigned.active),
        standby_tasks=_tasks(assigned.standby),
        warmup_tasks=_tasks(assigned.warmup),
    )


def streams_summary(group: StreamsGroup) -> ActivityGroup:
    return ActivityGroup(
        group_id=group.group_id,
        group_type="streams",
        group_state=group.state,
        protocol_type="streams",
        protocol_name="sticky",
        member_count=group.member_count,
        epoch=group.group_epoch,
        assignment_epoch=group.target_epoch,
        created_at_ms=group.created_at_ms,
        recent_rebalances=recent_rebalances(group.rebalances),
    )


def streams_detail(
    group: StreamsGroup, ctx: ApiContext
) -> tuple[ActivityGroup, list[ActivityMember], dict[tuple[str, int], str]]:
    """The summary with its topics and state, the members, and the owner of every source
    partition an active task reads ((topic, partition) -> member id)."""
    described = streams_summary(group)
    members = ctx.store.streams.members(group)
    ready = group.topology_status is None
    described.group_state = group_state(
        len(members), group.group_epoch, group.target_epoch, ready, members
    )
    topology = ctx.store.streams.topology(group.group_id)
    readers: dict[str, list[str]] = {}
    if topology is not None:
        internal = topology.internal_topics()
        for s in topology.subtopologies:
            for topic in s.external_source_topics:
                if topic not in internal:
                    readers.setdefault(s.subtopology_id, []).append(topic)
    described.subscribed_topics = sorted({t for ts in readers.values() for t in ts})
    owners: dict[tuple[str, int], str] = {}
    for m in members:
        for sub, partitions in m.tasks.assigned.active.items():
            for topic in readers.get(sub, ()):
                owners.update({(topic, p): m.member_id for p in partitions})
    session = session_ms(ctx.settings)
    return described, [_member(m, session, ctx) for m in members], owners
