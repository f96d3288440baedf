"""The classic protocol's decisions as pure functions of (group, members, request, now).

Kafka's GroupMetadataManager (classic part) is the reference; the serverless differences
(barriers answered with 202, timers checked lazily) are in docs/classic-protocol.md.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace

from ...errors import Errors
from ..rebalances import RebalanceRecord, recorded
from .limits import ClassicLimits
from .model import (
    COMPLETING_REBALANCE,
    EMPTY,
    PREPARING_REBALANCE,
    STABLE,
    ClassicGroup,
    ClassicMember,
)


def check_join_request(
    group_id: str,
    session_timeout_ms: int,
    protocol_type: str,
    protocol_names: Sequence[str],
    settings: ClassicLimits,
) -> Errors | None:
    if not group_id:
        return Errors.INVALID_GROUP_ID
    if not (
        settings.group_min_session_timeout_ms
        <= session_timeout_ms
        <= settings.group_max_session_timeout_ms
    ):
        return Errors.INVALID_SESSION_TIMEOUT
    if not protocol_type or not protocol_names:
        return Errors.INCONSISTENT_GROUP_PROTOCOL
    return None


def supports_protocols(
    group: ClassicGroup, protocol_type: str, protocol_names: Iterable[str], replacing: int = 0
) -> bool:
    """Kafka's supportsProtocols: an empty group takes anything; otherwise the type must match
    and one of the protocols must be supported by every (other) member."""
    if group.member_count == 0:
        return True
    if group.protocol_type != protocol_type:
        return False
    others = group.member_count - replacing
    if others <= 0:
        return True
    return any(group.protocol_counts.get(name, 0) >= others for name in protocol_names)


def with_member_protocols(
    counts: dict[str, int], added: Iterable[str] = (), removed: Iterable[str] = ()
) -> dict[str, int]:
    result = dict(counts)
    for name in set(removed):
        result[name] = result.get(name, 0) - 1
        if result[name] <= 0:
            del result[name]
    for name in set(added):
        result[name] = result.get(name, 0) + 1
    return result


def vote_protocol(members: Sequence[ClassicMember]) -> str:
    """Each member votes for its first preference among the protocols all support."""
    common = set(members[0].protocol_names)
    for member in members[1:]:
        common &= set(member.protocol_names)
    if not common:
        raise ValueError("no protocol is supported by every member")
    votes = Counter(next(n for n in m.protocol_names if n in common) for m in members)
    best = max(votes.values())
    # Ties go to the protocol the earliest member prefers: deterministic across retries.
    for member in members:
        choice = next(n for n in member.protocol_names if n in common)
        if votes[choice] == best:
            return choice
    raise AssertionError("unreachable")


def start_rebalance(group: ClassicGroup, now_ms: int) -> ClassicGroup:
    """Enter PreparingRebalance: members must rejoin within the rebalance timeout."""
    if group.state == PREPARING_REBALANCE:
        return group
    initial = group.state == EMPTY
    return replace(
        group,
        state=PREPARING_REBALANCE,
        rebalance_started_ms=now_ms,
        join_deadline_ms=now_ms + group.rebalance_timeout_ms,
        initial_delay_until_ms=None if not initial else now_ms,
        sync_deadline_ms=None,
        topic_changes_seen=group.topic_changes,
    )


def extend_initial_delay(group: ClassicGroup, now_ms: int, settings: ClassicLimits) -> ClassicGroup:
    """The first rebalance of an empty group waits the initial delay, extended while new
    members keep arriving, capped by the rebalance timeout the rebalance started with (its join
    deadline): as Kafka's InitialDelayedJoin, whose extensions only spend what is left of it.
    Later members' longer rebalance timeouts do not move the cap."""
    if group.initial_delay_until_ms is None or group.rebalance_started_ms is None:
        return group
    cap = group.join_deadline_ms
    if cap is None:
        cap = group.rebalance_started_ms + group.rebalance_timeout_ms
    until = min(now_ms + settings.group_initial_rebalance_delay_ms, cap)
    return replace(group, initial_delay_until_ms=max(group.initial_delay_until_ms, until))


# How many members have joined the open barrier is not kept on the group item: every join
# would write it, and 5,000 members rejoining within 5 s would put ~2,000 write units/s on the
# group's key (a hot key). The store counts joins in per-shard counter items instead, as a
# hint of WHEN to look; whether the barrier closes is decided on the member items themselves
# (`joined_count`), which the completion lists anyway.


def barrier_due(group: ClassicGroup, now_ms: int) -> bool:
    """The barrier closes now whatever the joins: its rebalance timeout passed, or there is
    nobody left to wait for (past the initial delay)."""
    if group.state != PREPARING_REBALANCE:
        return False
    if group.join_deadline_ms is not None and now_ms >= group.join_deadline_ms:
        return True
    return group.member_count <= 0 and past_initial_delay(group, now_ms)


def past_initial_delay(group: ClassicGroup, now_ms: int) -> bool:
    """Joins may close the barrier (before that, the first rebalance of an empty group waits)."""
    return group.initial_delay_until_ms is None or now_ms >= group.initial_delay_until_ms


def joined_count(group: ClassicGroup, members: Iterable[ClassicMember]) -> int:
    """Members whose join for the pending generation is registered."""
    return sum(1 for m in members if not m.pending and group.awaiting_join(m))


def barrier_ready(group: ClassicGroup, now_ms: int, joined: int) -> bool:
    """Kafka closes the join barrier when every known member has joined (`joined` of them, as
    counted from the member items), or at the rebalance timeout."""
    if group.state != PREPARING_REBALANCE:
        return False
    if barrier_due(group, now_ms):
        return True
    return past_initial_delay(group, now_ms) and joined >= group.member_count


def uncounted_joins(group: ClassicGroup, removed: Iterable[ClassicMember]) -> list[str]:
    """Members leaving an open barrier whose join was counted for it: their counts go."""
    return [m.member_id for m in removed if not m.pending and group.awaiting_join(m)]


@dataclass(frozen=True)
class JoinCompletion:
    group: ClassicGroup
    removed: list[ClassicMember]
    members: list[ClassicMember]  # the members of the new generation


def complete_join(
    group: ClassicGroup, members: Sequence[ClassicMember], now_ms: int
) -> JoinCompletion:
    """Close the join barrier: drop dynamic members that did not rejoin, pick the protocol and
    the leader, and move to the next generation (CompletingRebalance, or Empty if nobody is
    left)."""
    pending_generation = group.generation + 1
    joined = [m for m in members if not m.pending and m.joined_generation == pending_generation]
    kept_static = [
        m
        for m in members
        if not m.pending and m.joined_generation != pending_generation and m.instance_id
    ]
    removed = [
        m
        for m in members
        if not m.pending and m.joined_generation != pending_generation and not m.instance_id
    ]
    survivors = sorted(joined, key=lambda m: (m.joined_at_ms, m.member_id)) + kept_static
    counts: dict[str, int] = {}
    for member in survivors:
        counts = with_member_protocols(counts, added=member.protocol_names)
    base = replace(
        group,
        generation=pending_generation,
        rebalances=_moved(group, pending_generation, len(survivors), now_ms),
        member_count=len(survivors),
        protocol_counts=counts,
        join_deadline_ms=None,
        initial_delay_until_ms=None,
        rebalance_started_ms=None,
        rebalance_timeout_ms=max((m.rebalance_timeout_ms for m in survivors), default=0),
    )
    if not survivors:
        return JoinCompletion(
            replace(
                base,
                state=EMPTY,
                protocol_name=None,
                leader=None,
                protocol_type=None,
                sync_deadline_ms=None,
                empty_since_ms=now_ms,
            ),
            removed,
            [],
        )
    # The old leader if it rejoined, else the first member that did (survivors are sorted
    # by join time, rejoined members first).
    leader_ids = {m.member_id for m in joined}
    leader = group.leader if group.leader in leader_ids else survivors[0].member_id
    new_group = replace(
        base,
        state=COMPLETING_REBALANCE,
        protocol_name=vote_protocol(survivors),
        leader=leader,
        sync_deadline_ms=now_ms + base.rebalance_timeout_ms,
        empty_since_ms=None,
    )
    # Kafka reschedules every member's heartbeat when the join completes: the time a member
    # spent waiting at the barrier (held or polling) must not count against its session.
    survivors = [
        replace(
            m,
            joined_generation=pending_generation,
            member_generation=pending_generation,
            session_deadline_ms=now_ms + m.expiry_ms,
        )
        for m in survivors
    ]
    return JoinCompletion(new_group, removed, survivors)


@dataclass(frozen=True)
class Expiry:
    group: ClassicGroup
    removed: list[ClassicMember]
    removed_pending: list[ClassicMember]


def sync_error(
    group: ClassicGroup, generation: int, protocol_type: str | None, protocol_name: str | None
) -> Errors | None:
    """Kafka's SyncGroup checks once the member is known: another generation 22, another
    protocol type or name 23, a group rebalancing 27. None: the sync goes on."""
    if generation != group.generation:
        return Errors.ILLEGAL_GENERATION
    if (protocol_type is not None and protocol_type != group.protocol_type) or (
        protocol_name is not None and protocol_name != group.protocol_name
    ):
        return Errors.INCONSISTENT_GROUP_PROTOCOL
    if group.state == PREPARING_REBALANCE:
        return Errors.REBALANCE_IN_PROGRESS
    return None


def pending_expired(member: ClassicMember, now_ms: int) -> bool:
    """A member id handed out by a first join (79) whose second join came too late."""
    return member.pending and member.session_deadline_ms <= now_ms


def expire(group: ClassicGroup, members: Sequence[ClassicMember], now_ms: int) -> Expiry:
    """What timers have fired: dead members (session), members that did not sync in time
    (rebalance timeout in CompletingRebalance/Stable), expired pending member ids."""
    removed_pending = [m for m in members if pending_expired(m, now_ms)]
    removed: list[ClassicMember] = []
    for member in members:
        if member.pending:
            continue
        kept_alive = group.awaiting_join(member) or group.awaiting_sync(member)
        if not kept_alive and member.session_deadline_ms <= now_ms:
            removed.append(member)
    sync_overdue = (
        group.state in (COMPLETING_REBALANCE, STABLE)
        and group.sync_deadline_ms is not None
        and now_ms >= group.sync_deadline_ms
    )
    if sync_overdue:
        removed_ids = {m.member_id for m in removed}
        removed += [
            m
            for m in members
            if not m.pending
            and m.member_id not in removed_ids
            and m.synced_generation != group.generation
        ]
    new_group = group
    if removed:
        new_group = remove_members(group, removed, now_ms)
    elif sync_overdue:
        new_group = replace(group, sync_deadline_ms=None)
    return Expiry(new_group, removed, removed_pending)


def _moved(
    group: ClassicGroup, generation: int, members: int, now_ms: int
) -> tuple[RebalanceRecord, ...]:
    """The group's record of its generation moves with this one (core/rebalances.py)."""
    return recorded(
        group.rebalances,
        epoch_before=group.generation,
        epoch_after=generation,
        at_ms=now_ms,
        members=members,
        topics_changed=False,
    )


def remove_members(
    group: ClassicGroup, removed: Sequence[ClassicMember], now_ms: int
) -> ClassicGroup:
    """Members leave (or die): counts shrink and the group rebalances, or empties."""
    counts = group.protocol_counts
    for member in removed:
        counts = with_member_protocols(counts, removed=member.protocol_names)
    remaining = max(0, group.member_count - len(removed))
    leader = None if group.leader in {m.member_id for m in removed} else group.leader
    shrunk = replace(
        group,
        member_count=remaining,
        protocol_counts=counts,
        leader=leader,
    )
    if group.state == PREPARING_REBALANCE:
        # The barrier may now be complete: the caller uncounts the leavers' joins
        # (uncounted_joins) and checks.
        return shrunk
    if remaining == 0:
        return replace(
            shrunk,
            state=EMPTY,
            generation=group.generation + 1,
            rebalances=_moved(group, group.generation + 1, 0, now_ms),
            protocol_name=None,
            protocol_type=None,
            leader=None,
            sync_deadline_ms=None,
            empty_since_ms=now_ms,
        )
    return start_rebalance(shrunk, now_ms)


def next_check_ms(group: ClassicGroup, members: Iterable[ClassicMember], now_ms: int) -> int | None:
    """The earliest time a timer of this group may fire (the group item's `dl`)."""
    candidates = [t for t in (group.join_deadline_ms, group.sync_deadline_ms) if t is not None]
    if group.initial_delay_until_ms is not None and group.initial_delay_until_ms > now_ms:
        candidates.append(group.initial_delay_until_ms)
    for member in members:
        if member.pending or not (group.awaiting_join(member) or group.awaiting_sync(member)):
            candidates.append(member.session_deadline_ms)
    return min(candidates) if candidates else None


def heartbeat_interval_ms(session_timeout_ms: int, heartbeat_frequency: int) -> int:
    return session_timeout_ms // heartbeat_frequency


def expiry_ms(session_timeout_ms: int, heartbeat_frequency: int, threshold: int) -> int:
    return threshold * session_timeout_ms // heartbeat_frequency


# --- what is due when a request (or the sweeper) reads the group: settle ---


@dataclass(frozen=True)
class DueWork:
    """What may be due on a group read at `now`, before any member is read."""

    # The group's timer check (sessions, pending ids, rebalance timeouts): reads every member.
    timers: bool
    topic_change: bool
    # The join barrier's deadline passed (or it has no member left to wait for).
    barrier: bool

    @property
    def any(self) -> bool:
        return self.timers or self.topic_change or self.barrier


def due_work(group: ClassicGroup, now_ms: int) -> DueWork:
    return DueWork(
        timers=group.next_check_ms is not None and now_ms >= group.next_check_ms,
        topic_change=group.topics_changed(),
        barrier=barrier_due(group, now_ms),
    )


def may_count_joins(group: ClassicGroup, work: DueWork, now_ms: int) -> bool:
    """Whether the open barrier's join counters are worth reading: they only say when to
    look at the member items, which decide."""
    return (
        not (work.timers or work.barrier)
        and group.state == PREPARING_REBALANCE
        and past_initial_delay(group, now_ms)
    )


def needs_members(group: ClassicGroup, work: DueWork, counted: bool) -> bool:
    """Whether settling reads the member items (without payloads): for the timer check, for
    a topic change that restarts the session timers of members waiting for the leader's sync,
    and to close a barrier that is due or whose joins were all counted."""
    return (
        work.timers
        or (work.topic_change and group.state == COMPLETING_REBALANCE)
        or (group.state == PREPARING_REBALANCE and (work.barrier or counted))
    )


@dataclass(frozen=True)
class Settlement:
    """What settling a group writes: its new state, the members (and pending ids) that go,
    and the barrier's completion if it closed (its members' new generations and deadlines)."""

    group: ClassicGroup
    removed: tuple[ClassicMember, ...]
    completion: JoinCompletion | None


def settle_due(
    group: ClassicGroup,
    members: Sequence[ClassicMember] | None,
    work: DueWork,
    counted: bool,
    now_ms: int,
) -> Settlement | None:
    """Apply what is due: expire dead members, see a topic change (a rebalance, unless one is
    under way), close the barrier if it is ready, and set the next check. `members` are the
    member items as read when `needs_members` said so, else None. None: nothing to write (a
    counted join not yet on the member items)."""
    removed: list[ClassicMember] = []
    current = list(members) if members is not None else None
    if work.timers:
        assert current is not None
        expiry = expire(group, current, now_ms)
        group = expiry.group
        removed += expiry.removed + expiry.removed_pending
        gone = {m.member_id for m in removed}
        current = [m for m in current if m.member_id not in gone]
    if group.topics_changed():
        if group.state in (STABLE, COMPLETING_REBALANCE):
            group = start_rebalance(group, now_ms)
        else:
            group = replace(group, topic_changes_seen=group.topic_changes)
    completes = current is not None and barrier_ready(group, now_ms, joined_count(group, current))
    if counted and not completes and not work.topic_change:
        return None
    completion = None
    if completes:
        assert current is not None
        completion = complete_join(group, current, now_ms)
        group = completion.group
        removed += completion.removed
        current = list(completion.members)
    if current is not None:
        group = replace(group, next_check_ms=next_check_ms(group, current, now_ms))
    else:
        candidates = [
            t
            for t in (group.next_check_ms, group.join_deadline_ms, group.initial_delay_until_ms)
            if t is not None
        ]
        group = replace(group, next_check_ms=min(candidates) if candidates else None)
    return Settlement(group, tuple(removed), completion)
