"""groupcoord.client: a consumer-group member for both protocols, and its errors."""

from .assignors import TopicPartition
from .errors import (
    CommitFailed,
    CoordinatorUnavailable,
    FencedInstance,
    GroupcoordError,
    InvalidRequest,
    WriteConditionFailed,
)
from .member import GroupMember, RebalanceListener
from .options import MemberOptions

__all__ = [
    "CommitFailed",
    "CoordinatorUnavailable",
    "FencedInstance",
    "GroupMember",
    "GroupcoordError",
    "InvalidRequest",
    "MemberOptions",
    "RebalanceListener",
    "TopicPartition",
    "WriteConditionFailed",
]
