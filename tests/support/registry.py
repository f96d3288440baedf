"""A registry that holds other tenants' topics: what one group's reads must not grow with."""

from __future__ import annotations

from collections.abc import Callable

from groupcoord.core.topics import TopicRecord
from groupcoord.store.store import Store
from groupcoord.topic_ids import new_topic_id
from tests.support.consumer import unique

OTHER_TOPICS = 300


def assert_reads_ignore_other_topics(store: Store, reads: Callable[[], float]) -> None:
    """`reads()` (one call's read units) costs no more once the registry holds
    OTHER_TOPICS unrelated topics than before (within one read unit)."""
    before = reads()
    for i in range(OTHER_TOPICS):
        store.topics.create(TopicRecord(unique(f"other-tenant-{i}"), new_topic_id(), 8), 0)
    after = reads()
    assert after <= before + 1, (before, after)
