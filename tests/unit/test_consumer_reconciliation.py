"""Reconciliation (Kafka's CurrentAssignmentBuilder), the epoch check and request validation."""

from __future__ import annotations

from groupcoord.core.consumer.group import (
    apply_request,
    check_member_epoch,
    combined_regex,
    group_state,
    is_full_request,
    validate_heartbeat,
)
from groupcoord.core.consumer.member import ConsumerGroupMember
from groupcoord.core.consumer.reconciliation import MemberAssignment, MemberState, reconcile
from groupcoord.errors import Errors
from groupcoord.models.consumer import ConsumerGroupHeartbeatRequest

T = "t"
STABLE = MemberState.STABLE
UNREVOKED = MemberState.UNREVOKED_PARTITIONS
UNRELEASED = MemberState.UNRELEASED_PARTITIONS


def parts(*ps: int) -> dict[str, frozenset[int]]:
    return {T: frozenset(ps)} if ps else {}


def stable(epoch: int, *ps: int) -> MemberAssignment:
    return MemberAssignment(epoch=epoch, previous_epoch=epoch - 1, assigned=parts(*ps))


def test_a_stable_member_at_the_target_epoch_stays() -> None:
    m = stable(3, 0, 1)
    assert reconcile(m, 3, parts(0, 1, 2), None, {}) is m


def test_revocation_first_keeps_the_epoch_and_lists_only_retained_partitions() -> None:
    m = reconcile(stable(1, 0, 1, 2, 3), 2, parts(0, 1), None, {})
    assert (m.state, m.epoch, m.assigned, m.revoking) == (UNREVOKED, 1, parts(0, 1), parts(2, 3))
    # Still reporting a revoked partition: no progress.
    assert reconcile(m, 2, parts(0, 1), parts(0, 1, 3), {}) is m
    # Null owned partitions count as still owning.
    assert reconcile(m, 2, parts(0, 1), None, {}) is m
    done = reconcile(m, 2, parts(0, 1), parts(0, 1), {})
    assert (done.state, done.epoch, done.assigned, done.revoking) == (STABLE, 2, parts(0, 1), {})


def test_a_member_that_already_dropped_the_partitions_skips_unrevoked() -> None:
    m = reconcile(stable(1, 0, 1, 2), 2, parts(0), parts(0), {})
    assert (m.state, m.epoch, m.assigned) == (STABLE, 2, parts(0))


def test_partitions_held_by_others_are_not_given_until_released() -> None:
    m = reconcile(stable(1), 2, parts(4, 5), parts(), held_by_others=parts(5))
    assert (m.state, m.epoch, m.assigned) == (UNRELEASED, 2, parts(4))
    m = reconcile(m, 2, parts(4, 5), parts(4), held_by_others=parts(5))
    assert (m.state, m.assigned) == (UNRELEASED, parts(4))
    m = reconcile(m, 2, parts(4, 5), parts(4), held_by_others={})
    assert (m.state, m.epoch, m.assigned) == (STABLE, 2, parts(4, 5))


def test_epoch_check_fences_ahead_and_behind_but_accepts_a_lost_response() -> None:
    member = ConsumerGroupMember("m", assignment=MemberAssignment(5, 4, STABLE, parts(0, 1)))
    assert check_member_epoch(member, 6, None).error == Errors.FENCED_MEMBER_EPOCH
    assert check_member_epoch(member, 3, parts(0)).error == Errors.FENCED_MEMBER_EPOCH
    assert check_member_epoch(member, 4, None).error == Errors.FENCED_MEMBER_EPOCH
    assert check_member_epoch(member, 4, parts(0, 2)).error == Errors.FENCED_MEMBER_EPOCH
    assert check_member_epoch(member, 4, parts(1)) is None
    assert check_member_epoch(member, 5, None) is None


def req(**fields) -> ConsumerGroupHeartbeatRequest:
    body = {"groupId": "g", "memberId": "m", "memberEpoch": 0, "rebalanceTimeoutMs": 1000,
            "subscribedTopicNames": ["a"], "topicPartitions": [], **fields}  # fmt: skip
    return ConsumerGroupHeartbeatRequest.model_validate(body)


def test_validation_follows_kafka() -> None:
    assignors = ("uniform", "range")
    cases = {
        "MemberId can't be empty.": req(memberId=""),
        "GroupId can't be empty.": req(groupId=""),
        "InstanceId can't be empty.": req(instanceId=""),
        "RackId can't be empty.": req(rackId=""),
        "RebalanceTimeoutMs must be provided in first request.": req(rebalanceTimeoutMs=-1),
        "TopicPartitions must be empty when (re-)joining.": req(topicPartitions=None),
        "InstanceId can't be null.": req(memberEpoch=-2),
        "MemberEpoch is invalid.": req(memberEpoch=-3),
    }
    for message, request in cases.items():
        refusal = validate_heartbeat(request, assignors)
        assert refusal is not None and (refusal.error, refusal.message) == (42, message)
    both_null = validate_heartbeat(req(subscribedTopicNames=None), assignors)
    assert both_null is not None and both_null.error == 42
    assert validate_heartbeat(req(serverAssignor="sticky"), assignors).error == 112
    assert validate_heartbeat(req(subscribedTopicRegex="a("), assignors).error == 128
    assert validate_heartbeat(req(subscribedTopicRegex="a.*"), assignors) is None
    assert validate_heartbeat(req(), assignors) is None


def test_subscription_changes_and_full_requests() -> None:
    member = ConsumerGroupMember("m", subscribed_topic_names=("a", "b"))
    same, changed = apply_request(member, req(subscribedTopicNames=["b", "a"]), "c", "h")
    assert not changed and same.client_id == "c"
    _, changed = apply_request(member, req(subscribedTopicRegex="x.*"), "c", "h")
    assert changed
    assert is_full_request(req())
    assert not is_full_request(req(memberEpoch=3, topicPartitions=None))
    assert combined_regex(["a.*", "b", "a.*"]) == "(?:a.*)|(?:b)"


def test_group_states() -> None:
    stable_member = ConsumerGroupMember("m", assignment=MemberAssignment(epoch=3))
    behind = ConsumerGroupMember("n", assignment=MemberAssignment(epoch=2))
    assert group_state(0, 3, 3, []) == "Empty"
    assert group_state(1, 4, 3, [stable_member]) == "Assigning"
    assert group_state(2, 3, 3, [stable_member, behind]) == "Reconciling"
    assert group_state(1, 3, 3, [stable_member]) == "Stable"
