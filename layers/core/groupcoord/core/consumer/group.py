"""Consumer group decisions that need no I/O: request validation, the member epoch check,
subscriptions, the group state, and what the heartbeat response carries."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import replace

from ...errors import Errors
from ...models.consumer import ConsumerGroupHeartbeatRequest
from ...models.limits import REGEX_MAX_CHARS
from ..modern import members
from ..modern.members import listed_state
from ..modern.refusal import Refusal
from ..timer_checks import CLAIM_FROM_MEMBERS
from ..topics import compile_regex, regex_error
from .assignment import Assignment, normalize
from .member import STATIC_LEAVE_EPOCH, ConsumerGroupMember
from .model import RECONCILING
from .reconciliation import MemberAssignment, MemberState, is_lost_response


def validate_heartbeat(
    request: ConsumerGroupHeartbeatRequest, assignors: Sequence[str]
) -> Refusal | None:
    """Kafka's throwIfConsumerGroupHeartbeatRequestIsInvalid, plus the regex check."""

    def invalid(message: str) -> Refusal:
        return Refusal(Errors.INVALID_REQUEST, message)

    if request.member_id == "":
        return invalid("MemberId can't be empty.")
    if request.group_id == "":
        return invalid("GroupId can't be empty.")
    if request.instance_id == "":
        return invalid("InstanceId can't be empty.")
    if request.rack_id == "":
        return invalid("RackId can't be empty.")
    if request.member_epoch == 0:
        if request.rebalance_timeout_ms == -1:
            return invalid("RebalanceTimeoutMs must be provided in first request.")
        if request.topic_partitions is None or request.topic_partitions:
            return invalid("TopicPartitions must be empty when (re-)joining.")
        if request.subscribed_topic_names is None and request.subscribed_topic_regex is None:
            return invalid(
                "Either SubscribedTopicNames or SubscribedTopicRegex must be non-null when "
                "(re-)joining."
            )
    elif request.member_epoch == STATIC_LEAVE_EPOCH:
        if request.instance_id is None:
            return invalid("InstanceId can't be null.")
    elif request.member_epoch < STATIC_LEAVE_EPOCH:
        return invalid("MemberEpoch is invalid.")
    if request.server_assignor is not None and request.server_assignor not in assignors:
        return Refusal(
            Errors.UNSUPPORTED_ASSIGNOR,
            f"ServerAssignor {request.server_assignor} is not supported. Supported assignors: "
            f"{', '.join(assignors)}.",
        )
    if request.subscribed_topic_regex:
        # Kafka's throwIfRegularExpressionIsInvalid (RE2/J there, RE2 here), checked before
        # anything is read or written. The length bound is ours; an over-long pattern is not
        # echoed back.
        regex = request.subscribed_topic_regex
        problem = regex_error(regex)
        if problem is not None:
            shown = f" `{regex}`" if len(regex) <= REGEX_MAX_CHARS else ""
            return Refusal(
                Errors.INVALID_REGULAR_EXPRESSION,
                f"SubscribedTopicRegex{shown} is not a valid regular expression: {problem}.",
            )
    return None


def check_member_epoch(
    member: ConsumerGroupMember, received: int, owned: Assignment | None
) -> Refusal | None:
    """Kafka's throwIfConsumerGroupMemberEpochIsInvalid (for received epochs > 0)."""
    return members.check_member_epoch(
        "consumer",
        member.epoch,
        received,
        lambda: is_lost_response(member.assignment, received, owned),
    )


def owned_partitions(request: ConsumerGroupHeartbeatRequest) -> Assignment | None:
    if request.topic_partitions is None:
        return None
    found: dict[str, set[int]] = {}
    for entry in request.topic_partitions:
        found.setdefault(entry.topic_id, set()).update(entry.partitions)
    return normalize(found)


def is_full_request(request: ConsumerGroupHeartbeatRequest) -> bool:
    """Kafka sends the whole assignment back to a joining member and to a full request."""
    subscription = (
        request.subscribed_topic_names is not None or request.subscribed_topic_regex is not None
    )
    return request.member_epoch == 0 or (
        request.rebalance_timeout_ms != -1 and subscription and request.topic_partitions is not None
    )


# What combined_regex registers when the union of the members' patterns is too big to
# evaluate: every topic then notifies the group, which recomputes its target (each member's own
# pattern decides). Spurious notifications cost a recompute; a missed one would cost a topic.
MATCH_ANY = ".*"
# A union longer than this registers MATCH_ANY without being compiled (it lives on the group
# item, which must stay far below DynamoDB's 400 KB).
COMBINED_REGEX_MAX_CHARS = 16 * REGEX_MAX_CHARS


def combined_regex(patterns: Iterable[str]) -> str | None:
    """One pattern that fully matches (at least) what any of `patterns` fully matches, for the
    topic-change notifications. Patterns RE2 refuses match nothing and are left out; a union
    RE2 cannot compile within its memory budget (each pattern fits, their sum may not) is
    MATCH_ANY."""
    unique = sorted({p for p in patterns if p and compile_regex(p).regex is not None})
    if not unique:
        return None
    if len(unique) == 1:
        return unique[0]
    union = "|".join(f"(?:{p})" for p in unique)
    if len(union) > COMBINED_REGEX_MAX_CHARS or compile_regex(union).regex is None:
        return MATCH_ANY
    return union


def subscribed_topic_ids(
    member: ConsumerGroupMember,
    topic_ids: Mapping[str, str],
    may_describe: Callable[[str], bool] | None = None,
) -> frozenset[str]:
    """The ids of the existing topics a member subscribes to, by name or by regex. With
    `may_describe` (the authorizer is on), a regex matches only the topics the member may
    DESCRIBE, as Kafka's does; its named topics were checked when it named them."""
    names = set(member.subscribed_topic_names)
    if member.subscribed_topic_regex:
        # RE2, compiled once (cached) for all the topics; a pattern RE2 refuses (one stored
        # before RE2 checked them) matches nothing.
        pattern = compile_regex(member.subscribed_topic_regex).regex
        if pattern is not None:
            names.update(
                n
                for n in topic_ids
                if pattern.fullmatch(n) is not None and (may_describe is None or may_describe(n))
            )
    return frozenset(topic_ids[n] for n in names if n in topic_ids)


def subscription_digest(partition_counts: Mapping[str, int]) -> str:
    """A short fingerprint of what a target was computed from: the subscribed topics' ids and
    partition counts (Kafka's subscription metadata hash). A topic change leaves a group's
    epoch alone when it leaves this unchanged."""
    text = ",".join(f"{topic_id}:{count}" for topic_id, count in sorted(partition_counts.items()))
    return hashlib.blake2b(text.encode("ascii"), digest_size=12).hexdigest()


def group_state(
    member_count: int,
    group_epoch: int,
    target_epoch: int,
    members: Iterable[ConsumerGroupMember] | None = None,
) -> str:
    """Empty, Assigning, Reconciling or Stable. Without the members, the best guess is
    Reconciling right after an install (the sweep refines it)."""
    return listed_state(member_count, group_epoch, target_epoch, members, _is_stable)


def _is_stable(member: ConsumerGroupMember) -> bool:
    return member.state is MemberState.STABLE


# Below this many members a member's last reconciliation step reads the group's members to
# settle its listed state at once; a bigger group's is refreshed by its next check, at most
# two heartbeat intervals later (every member's step reading 100 members would cost more than
# the listing is worth). The bound timer checks use for the same trade (core/timer_checks.py).
SETTLED_AT_ONCE_BELOW = CLAIM_FROM_MEMBERS


def may_settle(
    group_state_listed: str,
    member_count: int,
    target_epoch: int,
    before: MemberAssignment,
    after: MemberAssignment,
    *,
    joining: bool = False,
    acknowledged: bool = False,
) -> bool:
    """Whether a member's step may have made its group Stable (as Kafka's state is, at once),
    so that it reads the group's members to settle the listing: its group is listed
    Reconciling and is small enough to read whole, and the member reached STABLE at the target
    epoch just now (`joining`: by its join), or acknowledged (`acknowledged`: the request
    reports what it owns, all of its assignment) an assignment it joined straight into.

    A join answered STABLE (a new group's first target, or nothing to wait for) settles at its
    acknowledgement instead, one round trip later, unless the member is the group's only
    one (nothing to read): members starting together are answered together as their group's
    first target is installed, and each of them reading every other (all but the last in
    vain) is what their answers would wait for."""
    if group_state_listed != RECONCILING or member_count >= SETTLED_AT_ONCE_BELOW:
        return False
    stable = after.state is MemberState.STABLE and after.epoch == target_epoch
    was = before.state is MemberState.STABLE and before.epoch == target_epoch
    if not stable:
        return False
    if not was:
        return not joining or member_count == 1
    return acknowledged and after.previous_epoch == 0


def apply_request(
    member: ConsumerGroupMember,
    request: ConsumerGroupHeartbeatRequest,
    client_id: str,
    client_host: str,
) -> tuple[ConsumerGroupMember, bool]:
    """The member with the request's non-null fields; True when its subscription changed
    (which bumps the group epoch)."""
    names = member.subscribed_topic_names
    if request.subscribed_topic_names is not None:
        names = tuple(sorted(set(request.subscribed_topic_names)))
    regex = member.subscribed_topic_regex
    if request.subscribed_topic_regex is not None:
        regex = request.subscribed_topic_regex or None
    updated = replace(
        member,
        **members.applied_fields(member, request, client_id, client_host),
        server_assignor=(
            request.server_assignor
            if request.server_assignor is not None
            else member.server_assignor
        ),
        subscribed_topic_names=names,
        subscribed_topic_regex=regex,
    )
    return updated, updated.subscription() != member.subscription()


def next_deadline(
    members: Iterable[ConsumerGroupMember], now_ms: int, refresh_ms: int | None
) -> int | None:
    """When the group must next be looked at: the earliest session deadline or armed rebalance
    timeout, or `refresh_ms` from now while it is not Stable (to refresh its listed state)."""
    deadlines = []
    for m in members:
        deadlines.append(m.session_deadline)
        if m.state is MemberState.UNREVOKED_PARTITIONS and m.rebalance_deadline is not None:
            deadlines.append(m.rebalance_deadline)
    if not deadlines:
        return None
    if refresh_ms is not None:
        deadlines.append(now_ms + refresh_ms)
    return min(deadlines)


def is_expired(member: ConsumerGroupMember, now_ms: int) -> bool:
    """Session over, or stuck in UNREVOKED_PARTITIONS past its rebalance timeout."""
    return members.is_overdue(member, MemberState.UNREVOKED_PARTITIONS, now_ms)
