"""What a GroupMember tells its user of a rebalance (client/member.py calls it; client/options.py
carries it): its own module, so that the member and its options both import it."""

from __future__ import annotations

from typing import Protocol

from .assignors import TopicPartition


class RebalanceListener(Protocol):
    """Called on the thread that calls poll() (or close()). Each method gets a non-empty set.

    - `on_partitions_revoked`: the member is about to give these up; commit what you processed
      (the commit still carries the current generation/epoch, so it is accepted).
    - `on_partitions_assigned`: the member owns these now; read `committed()` to resume.
    - `on_partitions_lost`: the membership was lost (expired, fenced, unreachable for a session
      timeout); the partitions may already be someone else's, so do not commit them.
    """

    def on_partitions_revoked(self, partitions: set[TopicPartition]) -> None: ...
    def on_partitions_assigned(self, partitions: set[TopicPartition]) -> None: ...
    def on_partitions_lost(self, partitions: set[TopicPartition]) -> None: ...
