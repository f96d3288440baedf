"""Target assignment installs: when the group epoch is ahead of the target epoch, run the
group's assignor over all members and install the new target.

The install takes a lease on the group item (`installId`, one writer per epoch), writes the
changed member targets in transactions of under 100 items that each check the lease, then
flips `targetEpoch` on the group item last. A crash in between leaves the old target epoch in
force: members whose target item is ahead of it wait, and the next request installs again.
"""

from __future__ import annotations

import contextlib
import time
import uuid
from dataclasses import replace

from ...core.consumer.assignment import Assignment, minus, pairs
from ...core.consumer.assignors import ASSIGNORS, AssignorMember, choose_assignor
from ...core.consumer.group import combined_regex, group_state, subscribed_topic_ids
from ...core.consumer.member import ConsumerGroupMember, Holder
from ...store.consumer_groups import Conflict, ConsumerGroupRecord, ConsumerGroupStore
from ...store.store import Store
from .common import clock_ms, consumer_store, reload, state_refresh_ms

LEASE_MS = 15_000
# How long a request waits for another request's install before answering without it.
WAIT_FOR_OTHER_INSTALL_MS = 3_000


def ensure_target(store: Store, group: ConsumerGroupRecord) -> ConsumerGroupRecord:
    """The group with target epoch = group epoch, installing the target if needed (or the
    group as it is, if another request's install does not finish in time)."""
    cs = consumer_store(store)
    waited_until = clock_ms() + WAIT_FOR_OTHER_INSTALL_MS
    for _ in range(50):
        if group.group_epoch <= group.target_epoch:
            return group
        now = clock_ms()
        if group.install_id is not None and group.install_until > now:
            if now >= waited_until:
                return group
            time.sleep(0.05)
        else:
            with contextlib.suppress(Conflict):
                install(store, cs, group, now)
        fresh = reload(cs, group.group_id)
        if fresh is None:
            return group
        group = fresh
    return group


def _targets(
    store: Store, group: ConsumerGroupRecord, members: list[ConsumerGroupMember]
) -> tuple[dict[str, Assignment], str, list[str], str | None]:
    names = sorted({n for m in members for n in m.subscribed_topic_names})
    regex = combined_regex(m.subscribed_topic_regex or "" for m in members)
    # Register before listing topics: a topic created after the listing bumps us.
    for name in sorted(set(names) - set(group.subscribed_topics)):
        store.topics.subscribe(name, group.group_id)
    if regex != group.subscribed_regex:
        store.topics.set_regex(group.group_id, regex)
    topics = store.topics.list()
    ids = {t.name: t.topic_id for t in topics}
    counts = {t.topic_id: t.partitions for t in topics}
    assignor_members = [
        AssignorMember(m.member_id, subscribed_topic_ids(m, ids), m.target, m.instance_id)
        for m in members
    ]
    subscribed = {t for am in assignor_members for t in am.topics}
    assignor = choose_assignor(
        (m.server_assignor for m in members), store.settings.consumer_assignors
    )
    targets = ASSIGNORS[assignor](assignor_members, {t: counts[t] for t in subscribed})
    return targets, assignor, names, regex


def install(store: Store, cs: ConsumerGroupStore, group: ConsumerGroupRecord, now_ms: int) -> None:
    epoch = group.group_epoch
    install_id = uuid.uuid4().hex
    cs.update_group(
        group,
        {
            "installId": install_id,
            "installUntil": now_ms + LEASE_MS,
            # Topic changes up to here are seen by the listing below.
            "topicChangesSeen": group.topic_changes,
        },
    )
    group = replace(group, version=group.version + 1, install_id=install_id)
    try:
        members = cs.members(group)
        targets, assignor, names, regex = _targets(store, group, members)
        holder_of = {tp: m.member_id for m in members for tp in pairs(m.assignment.holds)}
        by_id = {m.member_id: m for m in members}
        updates = []
        for m in members:
            target = targets.get(m.member_id, {})
            needed = minus(target, m.assignment.holds)
            waits = sorted(
                {
                    holder_of[tp]
                    for tp in pairs(needed)
                    if holder_of.get(tp, m.member_id) != m.member_id
                }
            )
            wait_on = tuple(Holder(w, by_id[w].instance_id) for w in waits)
            if target != m.target or wait_on != m.wait_on:
                updates.append(
                    cs.target_update(group, replace(m, target=target, wait_on=wait_on), epoch)
                )
        cs.write_targets(group, install_id, updates)
        sets = {
            "targetEpoch": epoch,
            "assignorName": assignor,
            "subscribedTopics": names,
            "groupState": group_state(len(members), epoch, epoch, None),
        }
        removes = ["installId", "installUntil"]
        if regex is None:
            removes.append("subscribedRegex")
        else:
            sets["subscribedRegex"] = regex
        if members:
            refresh = now_ms + state_refresh_ms(store.settings)
            dl = refresh if group.deadline is None else min(group.deadline, refresh)
            deadline_sets, _ = cs.deadline_fields(group.group_id, dl)
            sets.update(deadline_sets)
        cs.flip_target(group, install_id, epoch, sets, removes)
    except BaseException:
        cs.release_install(group.group_id, install_id)
        raise
    for name in sorted(set(group.subscribed_topics) - set(names)):
        store.topics.unsubscribe(name, group.group_id)
