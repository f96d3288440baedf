"""What the classic leader's assignors share: a topic partition, an assignment, the partitions
that go to no one (`blocked`), and which partitions of the subscribed topics may be assigned."""

from __future__ import annotations

from collections.abc import Mapping
from collections.abc import Set as AbstractSet
from typing import NamedTuple

from ..wire.consumer_protocol import Subscription


class TopicPartition(NamedTuple):
    topic: str
    partition: int


Assignment = dict[str, list[TopicPartition]]
Blocked = Mapping[str, AbstractSet[int]]
NOTHING_BLOCKED: Blocked = {}


def allowed_partitions(topic: str, partitions: Mapping[str, int], blocked: Blocked) -> list[int]:
    """The topic's partitions that may be assigned, in order."""
    gone = blocked.get(topic, ())
    return [p for p in range(partitions.get(topic, 0)) if p not in gone]


def subscribed_topics(subscriptions: Mapping[str, Subscription]) -> list[str]:
    return sorted({t for s in subscriptions.values() for t in s.topics})
