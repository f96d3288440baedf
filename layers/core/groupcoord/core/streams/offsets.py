"""Who may commit offsets in a streams group (the streams form of KIP-1251, docs/streams.md),
pure: a member committing with its current epoch may commit anything; a newer epoch than the
coordinator's is 113; an older one only partitions of active tasks it has held (assigned or
pending revocation) since an assignment epoch no later than the one sent."""

from __future__ import annotations

from collections.abc import Callable, Iterable

from ...errors import Errors
from .member import StreamsGroupMember


def streams_commit_error(
    member: StreamsGroupMember | None,
    client_epoch: int,
    partitions: Iterable[tuple[str, int]],
    subtopologies_of: Callable[[str], Iterable[str]],
) -> Errors | None:
    """`partitions` as (topic name, index); `subtopologies_of(topic)` the sub-topologies that
    read the topic (its tasks' partition p reads the topic's partition p). None: admitted."""
    if member is None:
        return Errors.UNKNOWN_MEMBER_ID
    if client_epoch > member.epoch:
        return Errors.STALE_MEMBER_EPOCH
    if client_epoch < member.epoch:
        for topic, partition in partitions:
            since = [
                member.tasks.assignment_epoch((sub, partition)) for sub in subtopologies_of(topic)
            ]
            if not any(e is not None and e <= client_epoch for e in since):
                return Errors.STALE_MEMBER_EPOCH
    return None
