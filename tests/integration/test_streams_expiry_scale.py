"""A big streams group's expiry (service/streams/expiry.py): the check of a group past
CLAIM_FROM_MEMBERS members is claimed, and more expired members than one transaction takes
are removed over several passes, the next one due at once."""

from __future__ import annotations

import time
from dataclasses import replace

from groupcoord.core.timer_checks import CLAIM_FROM_MEMBERS
from groupcoord.core.topics import TopicRecord
from groupcoord.models.streams import StreamsGroupHeartbeatRequest
from groupcoord.service.context import ApiContext
from groupcoord.service.streams.common import renewal_slack
from groupcoord.service.streams.expiry import expire_streams_group
from groupcoord.service.streams.heartbeat import streams_group_heartbeat
from groupcoord.store import capacity
from groupcoord.store.codecs.streams import group_from_item
from groupcoord.store.store import Store
from groupcoord.store.streams.installs import CHUNK
from groupcoord.topic_ids import new_topic_id
from tests.support.consumer import unique

SIZE = CLAIM_FROM_MEMBERS + 20
SILENT = 60  # more than one pass removes (CHUNK // 2)


def _heartbeat(store: Store, body: dict, now_ms: int) -> dict:
    ctx = ApiContext(settings=store.settings, store=store, now_ms=now_ms, endpoint="http://x")
    return streams_group_heartbeat(
        StreamsGroupHeartbeatRequest.model_validate(body), ctx
    ).to_json_dict()


def test_a_big_groups_expiry_is_claimed_and_done_in_passes(service_store: Store) -> None:
    settings = replace(
        service_store.settings,
        group_streams_initial_rebalance_delay_ms=0,
        group_streams_assignment_interval_ms=60_000,  # joins batched: not an install each
    )
    store = Store(service_store.dynamo, settings)
    words = unique("words")
    store.topics.create(TopicRecord(words, new_topic_id(), 8), now_ms=0)
    group = unique("g")
    topology = {"epoch": 1, "subtopologies": [{"subtopologyId": "0", "sourceTopics": [words]}]}
    now = int(time.time() * 1000)
    epochs = {}
    for i in range(SIZE):
        body = {"groupId": group, "memberId": f"m-{i:03d}", "memberEpoch": 0,
                "processId": f"p{i}", "rebalanceTimeoutMs": 30000, "topology": topology,
                "activeTasks": [], "standbyTasks": [], "warmupTasks": []}  # fmt: skip
        answer = _heartbeat(store, body, now)
        assert answer["errorCode"] == 0, answer
        epochs[f"m-{i:03d}"] = answer["memberEpoch"]
    session = settings.group_streams_session_timeout_ms
    live = [m for i, m in enumerate(sorted(epochs)) if i >= SILENT]
    for member in live:  # the others go silent
        body = {"groupId": group, "memberId": member, "memberEpoch": epochs[member]}
        assert _heartbeat(store, body, now + session // 2)["errorCode"] == 0
    # A session renewed by a heartbeat runs its slack longer (core/session_renewal.py).
    later = now + session + renewal_slack(settings) + 1
    assert SILENT > CHUNK // 2
    first = {"groupId": group, "memberId": live[0], "memberEpoch": epochs[live[0]]}
    due = store.streams.read_group(group, consistent=True)
    assert due is not None
    # The first pass, claimed: one transaction's worth removed, the next pass due at once.
    expire_streams_group(store, due, later)
    item = store.streams.group_item(group, consistent=True)
    assert item is not None
    after_one = group_from_item(item)
    assert after_one.member_count == SIZE - CHUNK // 2
    assert after_one.deadline is not None and after_one.deadline <= later
    # A request that read the same due group and lost the claim goes on without reading the
    # members: one conditional write, refused.
    with capacity.metered() as usage:
        expire_streams_group(store, due, later)
    assert usage.by_operation == {"update_item": 1}, usage.by_operation
    # The next heartbeat runs the second pass.
    assert _heartbeat(store, first, later)["errorCode"] == 0
    item = store.streams.group_item(group, consistent=True)
    assert item is not None
    assert group_from_item(item).member_count == SIZE - SILENT
    assert sorted(m.member_id for m in store.streams.members(group_from_item(item))) == live
