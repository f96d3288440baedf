"""Wildcard subscriptions: a topic created later that matches the pattern reaches the group.
Classic members match it themselves from `metadata`; consumer-protocol members send
`subscribedTopicRegex` and the coordinator matches it."""

from __future__ import annotations

import time

from groupcoord.client import GroupMember, TopicPartition
from tests.e2e.helpers import (
    CLASSIC_HEARTBEAT_MS,
    CLASSIC_SESSION_MS,
    CONSUMER_SESSION_MS,
    CONVERGE_S,
    Polled,
    Recorder,
    create_topic,
    unique,
    wait_until,
)


def test_a_new_topic_matching_the_pattern_is_picked_up_by_both_protocols(
    coordinator: str,
) -> None:
    prefix = unique("wild")
    create_topic(coordinator, f"{prefix}-a", 2)
    members = []
    for protocol in ("consumer", "classic"):
        classic = protocol == "classic"
        recorder = Recorder()
        member = GroupMember(
            coordinator,
            unique(f"wild-{protocol}"),
            pattern=rf"{prefix}-.*",
            protocol=protocol,
            listener=recorder,
            session_timeout_ms=CLASSIC_SESSION_MS if classic else CONSUMER_SESSION_MS,
            heartbeat_interval_ms=CLASSIC_HEARTBEAT_MS if classic else None,
            metadata_refresh_ms=500,
        )
        members.append(Polled(member, recorder))
    first = {TopicPartition(f"{prefix}-a", p) for p in range(2)}
    later = {TopicPartition(f"{prefix}-b", p) for p in range(3)}
    try:
        for m in members:
            wait_until(lambda m=m: m.owned == first, CONVERGE_S, "the matching topic")
        created_at = time.monotonic()
        create_topic(coordinator, f"{prefix}-b", 3)
        create_topic(coordinator, f"not-{prefix}-c", 3)  # does not match: full match only
        for m in members:
            wait_until(lambda m=m: m.owned == first | later, CONVERGE_S, "the new topic")
            events = m.recorder.since(created_at, "assigned")
            assert later <= set().union(*(e.partitions for e in events))
            assert not m.errors, m.errors
    finally:
        for m in members:
            m.close()
