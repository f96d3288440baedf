"""groupcoord.client: a consumer-group member for both protocols, a streams group member, and
their errors."""

from .assignors import TopicPartition
from .errors import (
    CommitFailed,
    CoordinatorUnavailable,
    FencedInstance,
    GroupcoordError,
    InvalidRequest,
    WriteConditionFailed,
)
from .listener import RebalanceListener
from .member import GroupMember
from .options import MemberOptions
from .streams import StreamsListener, StreamsMember, StreamsTasks

__all__ = [
    "CommitFailed",
    "CoordinatorUnavailable",
    "FencedInstance",
    "GroupMember",
    "GroupcoordError",
    "InvalidRequest",
    "MemberOptions",
    "RebalanceListener",
    "StreamsListener",
    "StreamsMember",
    "StreamsTasks",
    "TopicPartition",
    "WriteConditionFailed",
]
