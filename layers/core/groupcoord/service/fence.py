"""The verdict of a group type's commit rule: an error for the whole request, or the guard the
commit is written under (checked again at the write: store/offsets.py)."""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import Errors
from ..models.offsets import OffsetCommitRequest
from ..store.offsets import CommitGuard


@dataclass(frozen=True)
class Fence:
    error: Errors | None = None
    guard: CommitGuard | None = None


def has_member_info(request: OffsetCommitRequest) -> bool:
    """The commit names a member (id, instance or generation): it comes from inside a group."""
    return (
        bool(request.member_id)
        or request.group_instance_id is not None
        or request.generation_id_or_member_epoch >= 0
    )
