"""Target assignment installs: when the group epoch is ahead of the target epoch, run the
group's assignor over all members and install the new target.

The install takes a lease on the group item (`installId`, one installer at a time), on the
version read, so the epoch it installs for is the group epoch at that moment. It then reads the
members, writes the changed member targets in transactions of under 100 items that each renew
(and check) the lease, and flips `targetEpoch` to that epoch last. A crash in between leaves the
old target epoch in force: members whose target item is ahead of it wait, and the next request
installs again.

Installs coalesce: a request that finds a live lease does not start another install and does
not wait for it; the running install covers every bump before its lease, and whatever bumped
the epoch after it is installed by the next request (heartbeats come every few seconds). So a
burst of n joins costs a few installs, not n, and a 5,000-member group never livelocks on
installs that a newer join keeps invalidating.

Installs are also batched in time, as Kafka does (KIP-1263,
`group.consumer.assignment.interval.ms`, 1 s): within that interval of the last install, a
request leaves the group's bump to a later one (every member heartbeats within its interval),
so a storm of joins costs an install a second, each reading every member, not one per join. A
group's first target waits for the members joining with the first one (core/consumer/forming.py:
until no member joined for `groupcoord.consumer.first.assignment.delay.ms`, at most 2 s); the
target after an expiry is installed at once (the sweeper may be the group's only traffic).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from ...core.consumer.assignment import Assignment, minus, pairs
from ...core.consumer.assignors import ASSIGNORS, AssignorMember, choose_assignor
from ...core.consumer.forming import first_target_held_until
from ...core.consumer.group import (
    combined_regex,
    group_state,
    subscribed_topic_ids,
    subscription_digest,
)
from ...core.consumer.heirs import with_heirs
from ...core.consumer.member import ConsumerGroupMember, Holder
from ...core.consumer.model import ConsumerGroup
from ...core.consumer.waiters import waiters_by_holder, waiters_grew
from ...core.lag import group_lags
from ...core.push import deferred_install_wait_ms
from ...core.topics import TopicRecord, regex_matches
from ...settings import Settings
from ...store.consumer.repository import ConsumerGroupStore
from ...store.store import Store
from ..authorization import describable_by
from ..kinesis.lineage import gate
from ..kinesis.sync import sync_stale
from ..modern.install import LEASE_MS, install_if_due, is_held_back, leased
from ..push import notify_members
from .common import state_refresh_ms

# Renewed by every chunk of target writes, so it need only outlast one chunk (and the member
# read before the first); a crashed install holds the group's installs back this long.
# A request that made the group's first bump waits this long for its first target (longer than
# the first target's hold, core/consumer/forming.FIRST_TARGET_HOLD_MAX_MS).
WAIT_FOR_FIRST_TARGET_MS = 3_000
# Lease races and lost flips are retried this many times before the request goes on.


@dataclass(frozen=True)
class Installed:
    """An install this request completed: the group after the flip and every member as the
    install left it (read strongly consistently after the lease, then its target written).
    What a holder held then is a superset of what it can hold of another member's new target
    afterwards (install.py's writes and reconcile's acquisitions serialize on acqVersion/tver),
    so the snapshot may stand in for fresh reads of the holders in the same request."""

    group: ConsumerGroup
    members: dict[str, ConsumerGroupMember]


def ensure_target(store: Store, group: ConsumerGroup, batched: bool = True) -> ConsumerGroup:
    return ensure_target_installed(store, group, batched)[0]


def ensure_target_installed(
    store: Store, group: ConsumerGroup, batched: bool = True
) -> tuple[ConsumerGroup, Installed | None]:
    """The group with its target installed up to the current group epoch if this request could
    do it: at most one successful install per request. If another request holds a live lease,
    or (`batched`) the last install is less than the assignment interval old, the group as it
    is (that install, or a later request, covers our bump)."""
    cs = store.consumer
    interval = store.settings.group_consumer_assignment_interval_ms
    delay = first_assignment_delay_ms(store.settings) if batched else 0

    def held_back(g: ConsumerGroup, now: int) -> bool:
        # A new group's first target waits for the members joining with the first one.
        forming = first_target_held_until(g, now, delay) is not None
        return forming or is_held_back(g, now, batched, interval)

    return install_if_due(store, cs, group, held_back, lambda g, now: install(store, cs, g, now))


def first_assignment_delay_ms(settings: Settings) -> int:
    """How long a new group's first target waits for more joins (core/consumer/forming.py):
    `groupcoord.consumer.first.assignment.delay.ms`, when installs are batched at all (an
    assignment interval of 0 installs at every change, the first one included)."""
    if settings.group_consumer_assignment_interval_ms <= 0:
        return 0
    return settings.consumer_first_assignment_delay_ms


def notify_deferred_install(store: Store, group: ConsumerGroup, member_id: str | None) -> None:
    """After a request left the group's install to a later one (batched in time): with push,
    members heartbeat a third as often, so they are told when to come and install it. The
    first membership change since the last install (`member_id` None) tells every member;
    any other request of a member (`member_id`) tells that member alone."""
    wait = deferred_install_wait_ms(
        group,
        store.clock.now_ms(),
        store.settings.group_consumer_assignment_interval_ms,
        first_change=member_id is None,
    )
    if wait is not None:
        members = None if member_id is None else [member_id]
        notify_members(store, group.group_id, members, after_ms=wait)


def _resolved(
    store: Store,
    members: list[ConsumerGroupMember],
    now_ms: int,
    topics: list[TopicRecord] | None = None,
) -> tuple[list[AssignorMember], dict[str, int]]:
    """The members as the assignor sees them (their subscriptions resolved to the ids of the
    topics they may see) and the partition counts of every topic subscribed (of `topics`, as
    listed by the caller, else listed here)."""
    topics = store.topics.list() if topics is None else topics
    ids = {t.name: t.topic_id for t in topics}
    counts = {t.topic_id: t.partitions for t in topics}
    assignor_members = [
        AssignorMember(
            m.member_id,
            subscribed_topic_ids(
                m,
                ids,
                describable_by(store, m.principal, m.client_host, now_ms)
                if m.subscribed_topic_regex
                else None,
            ),
            m.target,
            m.instance_id,
        )
        for m in members
    ]
    subscribed = {t for am in assignor_members for t in am.topics}
    return assignor_members, {t: counts[t] for t in subscribed}


def topic_changes_matter(store: Store, group: ConsumerGroup, now_ms: int) -> bool:
    """Whether the topic changes the group has not seen change what its target is computed
    from. A regex that matches a topic its members may not describe hears of the topic's
    changes (the registry tells every group whose regex matches) but must not move for them:
    the members would learn that the topic exists and when it changes. Only such a group is
    checked (its members read); any other group a change reaches subscribes to the topic."""
    if not (
        store.settings.authorizer_enabled
        and group.subscribed_regex
        and group.subscription_digest is not None
    ):
        return True
    _, counts = _resolved(store, store.consumer.members(group), now_ms)
    return subscription_digest(counts) != group.subscription_digest


def _targets(
    store: Store, group: ConsumerGroup, members: list[ConsumerGroupMember], now_ms: int
) -> tuple[dict[str, Assignment], str, list[str], str | None, str]:
    names = sorted({n for m in members for n in m.subscribed_topic_names})
    regex = combined_regex(m.subscribed_topic_regex or "" for m in members)
    # Register before listing topics: a topic created after the listing bumps us.
    for name in sorted(set(names) - set(group.subscribed_topics)):
        store.topics.subscribe(name, group.group_id)
    if regex != group.subscribed_regex:
        store.topics.set_regex(group.group_id, regex)
    topics = _topics_synced(store, names, regex, now_ms)
    assignor_members, counts = _resolved(store, members, now_ms, topics)
    # Kinesis-backed topics: a shard done for the group, or whose parents are not, goes to
    # no one; a child preferably to its parent's last owner (docs/kinesis.md).
    blocked, heirs = gate(store, group.group_id, topics, counts, group.created_at_ms)
    if heirs:
        assignor_members = with_heirs(assignor_members, heirs, blocked)
    assignor = choose_assignor(
        (m.server_assignor for m in members), store.settings.consumer_assignors
    )
    lags = group_lags(m.lags for m in members)
    targets = ASSIGNORS[assignor](assignor_members, counts, blocked, lags)
    return targets, assignor, names, regex, subscription_digest(counts)


def _topics_synced(
    store: Store, names: list[str], regex: str | None, now_ms: int
) -> list[TopicRecord]:
    """The topics, after a lazy shard sync of the Kinesis-backed ones the group subscribes to
    whose last sync is older than groupcoord.kinesis.shard.sync.interval.ms (read again if
    a registry grew). Only a regex reads the whole registry: named subscriptions cost what
    they name, whatever other groups' topics the registry holds. Consistent reads: an install
    runs once per epoch (batched in time), not once per join, and must see the topic change
    that bumped it (or a topic created just before the group subscribed)."""

    def read() -> list[TopicRecord]:
        return store.topics.list() if regex else store.topics.get_many(names)

    topics = read()
    wanted = set(names)
    subscribed = [
        t
        for t in topics
        if t.kinesis is not None and (t.name in wanted or (regex and regex_matches(regex, t.name)))
    ]
    return read() if sync_stale(store, subscribed, now_ms) else topics


def _waits(
    members: list[ConsumerGroupMember], targets: dict[str, Assignment]
) -> dict[str, list[str]]:
    """Member id -> the members holding partitions of its new target that it lacks."""
    holder_of = {tp: m.member_id for m in members for tp in pairs(m.assignment.holds)}
    found: dict[str, list[str]] = {}
    for m in members:
        needed = pairs(minus(targets.get(m.member_id, {}), m.assignment.holds))
        holders = {holder_of[tp] for tp in needed if holder_of.get(tp, m.member_id) != m.member_id}
        found[m.member_id] = sorted(holders)
    return found


def _target_writes(
    store: Store,
    group: ConsumerGroup,
    members: list[ConsumerGroupMember],
    targets: dict[str, Assignment],
    epoch: int,
) -> tuple[dict[str, ConsumerGroupMember], list[Any]]:
    """Every member as the install leaves it, and the writes: a new target (with its waitOn
    and the member's waiters), or only the waiters of a holder whose target stayed."""
    waits = _waits(members, targets)
    waiters = waiters_by_holder(waits)
    by_id = {m.member_id: m for m in members}
    installs = store.consumer_installs
    updates: list[Any] = []  # the store's updates
    for m in members:
        target = targets.get(m.member_id, {})
        wait_on = tuple(Holder(w, by_id[w].instance_id) for w in waits[m.member_id])
        found = waiters.get(m.member_id, ())
        # A waitOn that only shrank (holders released since) needs no write: reading a
        # holder that holds nothing of the target is harmless, missing one is not.
        if target != m.target or not set(wait_on) <= set(m.wait_on):
            written = replace(m, target=target, wait_on=wait_on, waiters=found)
            updates.append(installs.target_update(group, written, epoch))
            by_id[m.member_id] = replace(
                written, target_epoch=epoch, target_version=m.target_version + 1
            )
        elif waiters_grew(m.waiters, found):
            written = replace(m, waiters=found)
            updates.append(installs.waiters_update(group, written))
            by_id[m.member_id] = replace(written, target_version=m.target_version + 1)
    return by_id, updates


def install(store: Store, cs: ConsumerGroupStore, group: ConsumerGroup, now_ms: int) -> Installed:
    epoch = group.group_epoch
    lease = leased(group, now_ms)
    install_id = lease.install_id
    assert install_id is not None
    group = store.consumer_installs.take_install_lease(group, lease, now_ms)
    try:
        members = cs.members(group)
        targets, assignor, names, regex, digest = _targets(store, group, members, now_ms)
        by_id, updates = _target_writes(store, group, members, targets, epoch)
        store.consumer_installs.write_targets(
            group, install_id, updates, lambda: store.clock.now_ms() + LEASE_MS
        )
        installed = replace(
            group,
            target_epoch=epoch,
            assigned_at=store.clock.now_ms(),
            assignor_name=assignor,
            subscribed_topics=tuple(names),
            subscribed_regex=regex,
            subscription_digest=digest,
            state=group_state(len(members), epoch, epoch, None),
            install_id=None,
            install_until=0,
        )
        if members:
            refresh = now_ms + state_refresh_ms(store.settings)
            dl = refresh if group.deadline is None else min(group.deadline, refresh)
            installed = replace(installed, deadline=dl)
        flipped = store.consumer_installs.flip_target(group, installed, install_id)
    except BaseException:
        store.consumer_installs.release_install(group.group_id, install_id)
        raise
    for name in sorted(set(group.subscribed_topics) - set(names)):
        store.topics.unsubscribe(name, group.group_id)
    return Installed(flipped, by_id)
