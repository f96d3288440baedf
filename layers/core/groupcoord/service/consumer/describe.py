"""consumer-group-describe: members with their epochs, assignments, targets and states.

As Kafka 4.0: a group the caller may not DESCRIBE answers 30 alone, unread; a described group
whose members' assignments or targets name a topic the caller may not DESCRIBE answers 29 with
no members (the topic unnamed)."""

from __future__ import annotations

from ...core.acls import AclOperation
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
from ..context import ApiContext
from ..refusals import group_operations, may_describe_topics
from .expiry import expire_consumer_group

CONSUMER_MEMBER_TYPE = 1
# Kafka's message for a group whose assignments name a topic the caller may not describe.
UNDESCRIBABLE_TOPICS = (
    "The group has described topic(s) that the client is not authorized to describe."
)


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
    allowed = {g: ctx.caller.may_on_group(AclOperation.DESCRIBE, g) for g in request.group_ids}
    names = {t.topic_id: t.name for t in ctx.store.topics.list()} if any(allowed.values()) else {}
    asked = request.include_authorized_operations
    return ConsumerGroupDescribeResponse(
        groups=[
            _describe(group_id, ctx, names, asked)
            if allowed[group_id]
            else ConsumerGroupDescribedGroup(
                group_id=group_id, error_code=Errors.GROUP_AUTHORIZATION_FAILED
            )
            for group_id in request.group_ids
        ]
    )


def _undescribable_topics(ctx: ApiContext, described: ConsumerGroupDescribedGroup) -> bool:
    """Whether the members' assignments or targets name a topic the caller may not DESCRIBE."""
    shown = [
        tp.topic_name
        for m in described.members
        for tp in (*m.assignment.topic_partitions, *m.target_assignment.topic_partitions)
        # A deleted topic has no name (Kafka leaves it out of the answer): nothing to check.
        if tp.topic_name
    ]
    return not may_describe_topics(ctx, shown)


def _describe(
    group_id: str, ctx: ApiContext, names: dict[str, str], asked: bool
) -> ConsumerGroupDescribedGroup:
    cs = ctx.store.consumer
    item = cs.read_group(group_id, consistent=True)
    found = item.header if item is not None else None
    if (
        found is not None
        and found.is_consumer_group
        and found.deadline is not None
        and found.deadline <= ctx.now_ms
    ):
        assert item is not None
        expire_consumer_group(ctx.store, item, ctx.now_ms)
        item = cs.read_group(group_id, consistent=True)
    if item is None:
        return ConsumerGroupDescribedGroup(
            group_id=group_id,
            error_code=Errors.GROUP_ID_NOT_FOUND,
            error_message=f"Group {group_id} not found.",
        )
    if not item.header.is_consumer_group:
        return ConsumerGroupDescribedGroup(
            group_id=group_id,
            error_code=Errors.GROUP_ID_NOT_FOUND,
            error_message=f"Group {group_id} is not a consumer group.",
        )
    group = item.consumer()
    members = cs.members(group)
    state = group_state(len(members), group.group_epoch, group.target_epoch, members)
    described = ConsumerGroupDescribedGroup(
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
                principal=m.principal,
                subscribed_topic_names=list(m.subscribed_topic_names),
                subscribed_topic_regex=m.subscribed_topic_regex,
                assignment=_described(m.assignment.assigned, names),
                target_assignment=_described(m.target, names),
                member_type=CONSUMER_MEMBER_TYPE,
            )
            for m in members
        ],
        # Only a described group has them (Kafka's): a 69 keeps the "not asked" value.
        authorized_operations=group_operations(ctx, group_id, asked),
    )
    if _undescribable_topics(ctx, described):
        return ConsumerGroupDescribedGroup(
            group_id=group_id,
            error_code=Errors.TOPIC_AUTHORIZATION_FAILED,
            error_message=UNDESCRIBABLE_TOPICS,
        )
    return described
