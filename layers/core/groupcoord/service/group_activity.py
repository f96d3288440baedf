"""describe-group-activity (a groupcoord extension, models/activity.py): what monitoring shows
of a group, read only.

Unlike describe-groups and consumer-group-describe it never runs a group's due timers: a
dashboard that polls must not write. A member past its session deadline therefore stays listed
until a request or the sweeper expires it (the answer's `nowMs` lets the reader tell).

Authorized as consumer-group-describe: DESCRIBE on each group (30 for that group alone, unread),
and a group whose answer would name a topic the caller may not DESCRIBE (its subscription, a
member's, the grid's) answers 29 alone; as offset-fetch, the grid leaves out the partitions of
topics the caller may not DESCRIBE that only a committed offset names.

Reads: a summary is one eventually consistent GetItem per group. A detail adds the member
Queries (one per member shard, as describe does), one GetItem per subscribed topic, and the
committed offsets of the grid's partitions by BatchGetItem (100 keys a request); a group with
no subscription (offsets only) has its 64 offset shards queried instead.
"""

from __future__ import annotations

from collections.abc import Iterable

from ..core.acls import AclOperation
from ..core.classic.model import PREPARING_REBALANCE, STABLE, ClassicGroup, ClassicMember
from ..core.consumer.group import group_state
from ..core.consumer.member import ConsumerGroupMember
from ..core.consumer.model import ConsumerGroup
from ..core.offsets import CommittedOffset
from ..core.session_renewal import last_renewed_ms
from ..core.streams.group import StreamsGroup
from ..errors import Errors
from ..models.activity import (
    ACTIVITY_PARTITIONS_MAX,
    ActivityGroup,
    ActivityMember,
    ActivityPartition,
    DescribeGroupActivityRequest,
    DescribeGroupActivityResponse,
)
from ..wire.consumer_protocol import ConsumerProtocolError, decode_assignment
from .activity_rebalances import recent_rebalances
from .classic.common import classic_renewal_slack_ms
from .consumer.common import consumer_renewal_slack_ms, session_timeout_ms
from .consumer.describe import UNDESCRIBABLE_TOPICS
from .context import ApiContext
from .refusals import may_describe_topics
from .streams.activity import streams_detail, streams_summary
from .streams.common import GROUP_TYPE as STREAMS

# (topic name, partition) -> the grid cell being filled in.
Grid = dict[tuple[str, int], ActivityPartition]


def describe_group_activity(
    request: DescribeGroupActivityRequest, ctx: ApiContext
) -> DescribeGroupActivityResponse:
    detail = request.include_members
    return DescribeGroupActivityResponse(
        now_ms=ctx.now_ms,
        groups=[_describe(group_id, ctx, detail) for group_id in request.group_ids],
    )


def _describe(group_id: str, ctx: ApiContext, detail: bool) -> ActivityGroup:
    described = _described(group_id, ctx, detail)
    if described.error_code == 0 and not may_describe_topics(ctx, _topics_named(described)):
        # As consumer-group-describe: 29 with nothing else, the topics unnamed.
        return ActivityGroup(
            group_id=group_id,
            error_code=Errors.TOPIC_AUTHORIZATION_FAILED,
            error_message=UNDESCRIBABLE_TOPICS,
        )
    return described


def _topics_named(described: ActivityGroup) -> set[str]:
    """Every topic an answer names: the group's subscription, its members' and the grid's."""
    names = set(described.subscribed_topics)
    for m in described.members:
        names.update(m.subscribed_topic_names or ())
    names.update(cell.topic_name for cell in described.partitions if cell.topic_name)
    return names


def _described(group_id: str, ctx: ApiContext, detail: bool) -> ActivityGroup:
    if not ctx.caller.may_on_group(AclOperation.DESCRIBE, group_id):
        return ActivityGroup(group_id=group_id, error_code=Errors.GROUP_AUTHORIZATION_FAILED)
    # Eventually consistent: a monitor may lag a write by a moment, at half the read cost.
    item = ctx.store.classic.read_group(group_id, consistent=False)
    if item is None:
        return ActivityGroup(
            group_id=group_id,
            error_code=Errors.GROUP_ID_NOT_FOUND,
            error_message=f"Group {group_id} not found.",
        )
    if item.header.is_consumer_group:
        return _consumer(item.consumer(), ctx, detail)
    if item.group_type == STREAMS:
        return _streams(item.streams(), ctx, detail)
    return _classic(item.classic(), ctx, detail)


def _streams(group: StreamsGroup, ctx: ApiContext, detail: bool) -> ActivityGroup:
    if not detail:
        return streams_summary(group)
    described, members, owners = streams_detail(group, ctx)
    grid = _grid(ctx, described.subscribed_topics, {})
    for (topic, partition), member_id in owners.items():
        _cell(grid, topic, "", partition).owner = member_id
    return _detailed(described, ctx, grid, members)


# --- classic groups ---


def _classic_state(group: ClassicGroup, m: ClassicMember) -> str:
    if m.pending:
        return "Pending"
    if group.awaiting_join(m):
        return "AwaitingJoin"
    if group.state == PREPARING_REBALANCE:
        return "MustRejoin"
    if group.awaiting_sync(m):
        return "AwaitingSync"
    return "Stable"


def _classic(group: ClassicGroup, ctx: ApiContext, detail: bool) -> ActivityGroup:
    described = ActivityGroup(
        group_id=group.group_id,
        group_type="classic",
        group_state=group.state,
        protocol_type=group.protocol_type or "",
        protocol_name=group.protocol_name or "",
        member_count=group.member_count,
        epoch=group.generation,
        assignment_epoch=group.generation,
        created_at_ms=group.created_at_ms,
        recent_rebalances=recent_rebalances(group.rebalances),
        subscribed_topics=list(group.subscribed_topics),
    )
    if not detail:
        return described
    # Assignments are opaque bytes but for the consumer protocol type, decoded for the grid;
    # Kafka shows them only in Stable, so the payload items are read only then.
    decodable = group.state == STABLE and group.protocol_type == "consumer"
    listed = ctx.store.classic.members(group, payloads=decodable)
    members = sorted((m for m in listed if not m.pending), key=lambda m: m.member_id)
    owners: dict[tuple[str, int], str] = {}
    for m in members:
        if decodable and m.assignment and m.assignment_generation == group.generation:
            try:
                decoded = decode_assignment(m.assignment).partitions
            except ConsumerProtocolError:
                continue  # a client's own bytes: nothing to show
            for topic, partitions in decoded.items():
                owners.update({(topic, p): m.member_id for p in partitions})
    ids: dict[str, str] = {}
    grid = _grid(ctx, group.subscribed_topics, ids)
    for (topic, partition), member_id in owners.items():
        _cell(grid, topic, "", partition).owner = member_id
    for m in members:  # a lag shows where its reporter is the decoded owner
        for topic_id, partition, lag_ms in m.lags:
            if owners.get((ids.get(topic_id, ""), partition)) == m.member_id:
                grid[(ids[topic_id], partition)].lag_ms = lag_ms
    return _detailed(
        described,
        ctx,
        grid,
        [
            ActivityMember(
                member_id=m.member_id,
                instance_id=m.instance_id,
                client_id=m.client_id,
                client_host=m.client_host,
                principal=m.principal,
                protocol="classic",
                member_epoch=m.member_generation,
                member_state=_classic_state(group, m),
                last_heartbeat_ms=last_renewed_ms(
                    m.session_deadline_ms, m.expiry_ms, classic_renewal_slack_ms(m, ctx.settings)
                ),
                session_deadline_ms=m.session_deadline_ms,
            )
            for m in members
        ],
    )


# --- consumer groups ---


def _consumer(group: ConsumerGroup, ctx: ApiContext, detail: bool) -> ActivityGroup:
    described = ActivityGroup(
        group_id=group.group_id,
        group_type="consumer",
        group_state=group.state,
        protocol_type="consumer",
        protocol_name=group.assignor_name or ctx.settings.consumer_assignors[0],
        member_count=group.member_count,
        epoch=group.group_epoch,
        assignment_epoch=group.target_epoch,
        created_at_ms=group.created_at_ms,
        recent_rebalances=recent_rebalances(group.rebalances),
        subscribed_topics=list(group.subscribed_topics),
    )
    if not detail:
        return described
    members = ctx.store.consumer.members(group)
    described.group_state = group_state(
        len(members), group.group_epoch, group.target_epoch, members
    )
    held = {t for m in members for a in (m.assignment.holds, m.target) for t in a}
    ids: dict[str, str] = {}
    grid = _grid(ctx, group.subscribed_topics, ids)
    missing = held - set(ids)
    if missing:  # topics outside the subscription (a changed one), named by id
        ids.update(ctx.store.topics.names_of_ids(missing))
    for m in members:
        for field, assignment in (
            ("owner", m.assignment.assigned),
            ("revoking_member", m.assignment.revoking),
            ("target_member", m.target),
        ):
            for topic_id, partitions in assignment.items():
                for p in partitions:
                    setattr(_cell(grid, ids.get(topic_id, ""), topic_id, p), field, m.member_id)
        for topic_id, p, lag_ms in m.lags:
            _cell(grid, ids.get(topic_id, ""), topic_id, p).lag_ms = lag_ms
    session_ms = session_timeout_ms(ctx.settings)
    return _detailed(
        described,
        ctx,
        grid,
        [_consumer_member(m, session_ms, ctx) for m in members],
    )


def _consumer_member(m: ConsumerGroupMember, session_ms: int, ctx: ApiContext) -> ActivityMember:
    classic = m.classic is not None
    length = m.classic.session_timeout_ms if m.classic is not None else session_ms
    connected = m.push_connected(ctx.now_ms)
    # Classic members' heartbeats renew every time.
    slack = 0 if classic else consumer_renewal_slack_ms(ctx.settings, connected=connected)
    return ActivityMember(
        member_id=m.member_id,
        instance_id=m.instance_id,
        client_id=m.client_id,
        client_host=m.client_host,
        principal=m.principal,
        protocol="classic" if classic else "consumer",
        member_epoch=m.epoch,
        member_state=str(m.state),
        last_heartbeat_ms=last_renewed_ms(m.session_deadline, length, slack),
        session_deadline_ms=m.session_deadline,
        subscribed_topic_names=list(m.subscribed_topic_names),
        subscribed_topic_regex=m.subscribed_topic_regex,
    )


# --- the grid and the offsets ---


def _grid(ctx: ApiContext, topics: Iterable[str], ids: dict[str, str]) -> Grid:
    """A cell per partition of the subscribed topics that exist; fills `ids` (id -> name)."""
    grid: Grid = {}
    for name in sorted(set(topics)):
        record = ctx.store.topics.get(name, consistent=False)
        if record is None:
            continue
        ids[record.topic_id] = record.name
        for p in range(record.partitions):
            grid[(record.name, p)] = ActivityPartition(
                topic_name=record.name, topic_id=record.topic_id, partition_index=p
            )
    return grid


def _cell(grid: Grid, topic: str, topic_id: str, partition: int) -> ActivityPartition:
    key = (topic or topic_id, partition)
    if key not in grid:
        grid[key] = ActivityPartition(
            topic_name=topic, topic_id=topic_id, partition_index=partition
        )
    return grid[key]


def _detailed(
    described: ActivityGroup, ctx: ApiContext, grid: Grid, members: list[ActivityMember]
) -> ActivityGroup:
    group_id = described.group_id
    offsets: Iterable[CommittedOffset]
    if grid:
        wanted = sorted(k for k, cell in grid.items() if cell.topic_name)
        offsets = ctx.store.offsets.fetch(group_id, wanted[:ACTIVITY_PARTITIONS_MAX]).values()
    else:
        offsets = ctx.store.offsets.fetch_all(group_id)
    for o in offsets:
        cell = _cell(grid, o.topic, o.topic_id, o.partition)
        cell.topic_id = cell.topic_id or o.topic_id
        cell.committed_offset = o.offset
        cell.commit_timestamp_ms = o.commit_timestamp_ms
    shown = [
        cell
        for _, cell in sorted(grid.items())
        # OMIT, as offset-fetch: what a caller may not describe is left out, unnamed.
        if not cell.topic_name or may_describe_topics(ctx, [cell.topic_name])
    ]
    described.members = members
    described.partitions = shown[:ACTIVITY_PARTITIONS_MAX]
    described.partitions_truncated = len(shown) > ACTIVITY_PARTITIONS_MAX
    return described
