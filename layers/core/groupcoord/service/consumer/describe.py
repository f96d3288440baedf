"""consumer-group-describe: members with their epochs, assignments, targets and states."""

from __future__ import annotations

from ...core.consumer.assignment import Assignment
from ...core.consumer.group import group_state
from ...errors import Errors
from ...models.consumer import (
    ConsumerGroupDescribedGroup,
    ConsumerGroupDescribeMember,
    ConsumerGroupDescribeRequest,
    ConsumerGroupDescribeResponse,
    DescribedAssignment,
    DescribedTopicPartitions,
)
from ...store.consumer_groups import group_from_item
from ...store.groups import header
from ..context import ApiContext
from .expiry import expire_consumer_group

CONSUMER_MEMBER_TYPE = 1


def _described(assignment: Assignment, names: dict[str, str]) -> DescribedAssignment:
    return DescribedAssignment(
        topic_partitions=[
            DescribedTopicPartitions(topic_id=t, topic_name=names.get(t, ""), partitions=sorted(ps))
            for t, ps in sorted(assignment.items())
        ]
    )


def consumer_group_describe(
    request: ConsumerGroupDescribeRequest, ctx: ApiContext
) -> ConsumerGroupDescribeResponse:
    names = {t.topic_id: t.name for t in ctx.store.topics.list()} if request.group_ids else {}
    return ConsumerGroupDescribeResponse(
        groups=[_describe(group_id, ctx, names) for group_id in request.group_ids]
    )


def _describe(group_id: str, ctx: ApiContext, names: dict[str, str]) -> ConsumerGroupDescribedGroup:
    cs = ctx.store.consumer
    item = cs.group_item(group_id, consistent=True)
    found = header(item) if item is not None else None
    if (
        found is not None
        and found.is_consumer_group
        and found.deadline is not None
        and found.deadline <= ctx.now_ms
    ):
        expire_consumer_group(ctx.store, item, ctx.now_ms)
        item = cs.group_item(group_id, consistent=True)
    if item is None:
        return ConsumerGroupDescribedGroup(
            group_id=group_id,
            error_code=Errors.GROUP_ID_NOT_FOUND,
            error_message=f"Group {group_id} not found.",
        )
    if not header(item).is_consumer_group:
        return ConsumerGroupDescribedGroup(
            group_id=group_id,
            error_code=Errors.GROUP_ID_NOT_FOUND,
            error_message=f"Group {group_id} is not a consumer group.",
        )
    group = group_from_item(item)
    members = cs.members(group)
    state = group_state(len(members), group.group_epoch, group.target_epoch, members)
    return ConsumerGroupDescribedGroup(
        group_id=group_id,
        group_state=state,
        group_epoch=group.group_epoch,
        assignment_epoch=group.target_epoch,
        assignor_name=group.assignor_name or ctx.settings.consumer_assignors[0],
        members=[
            ConsumerGroupDescribeMember(
                member_id=m.member_id,
                instance_id=m.instance_id,
                rack_id=m.rack_id,
                member_epoch=m.epoch,
                client_id=m.client_id,
                client_host=m.client_host,
                subscribed_topic_names=list(m.subscribed_topic_names),
                subscribed_topic_regex=m.subscribed_topic_regex,
                assignment=_described(m.assignment.assigned, names),
                target_assignment=_described(m.target, names),
                member_type=CONSUMER_MEMBER_TYPE,
            )
            for m in members
        ],
    )
