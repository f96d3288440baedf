"""A consumer group member as the coordinator keeps it (Kafka's ConsumerGroupMember)."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..lag import NO_LAGS, Lags
from ..modern.model import ModernGroupMember
from .assignment import Assignment
from .reconciliation import MemberAssignment, MemberState

LEAVE_EPOCH = -1
STATIC_LEAVE_EPOCH = -2


@dataclass(frozen=True)
class Holder:
    """A member that held partitions of another member's new target when it was installed;
    static members are followed through their instance id if replaced meanwhile."""

    member_id: str
    instance_id: str | None = None


@dataclass(frozen=True)
class ClassicMetadata:
    """A member that speaks the classic protocol (join/sync/heartbeat) inside a consumer group
    (Kafka's ClassicMemberMetadata): its session timeout and the protocols it joined with."""

    session_timeout_ms: int
    protocols: tuple[tuple[str, bytes], ...] = ()
    heartbeat_interval_ms: int = 0

    @property
    def protocol_name(self) -> str:
        return self.protocols[0][0] if self.protocols else ""

    @property
    def protocol_names(self) -> list[str]:
        return [name for name, _ in self.protocols]


@dataclass(frozen=True)
class ConsumerGroupMember(ModernGroupMember):
    subscribed_topic_names: tuple[str, ...] = ()
    subscribed_topic_regex: str | None = None
    server_assignor: str | None = None
    assignment: MemberAssignment = field(default_factory=MemberAssignment)
    # The target: partitions, the epoch it was computed for, and whom to wait for.
    target: Assignment = field(default_factory=dict)
    target_epoch: int = 0
    target_version: int = 0
    wait_on: tuple[Holder, ...] = ()
    # The members whose target waits on partitions this one holds, as the last install that
    # wrote this item found them: whom its releases tell (None: too many or unknown, read
    # the group; core/consumer/waiters.py).
    waiters: tuple[str, ...] | None = ()
    # Grows whenever the member's held partitions grow (installs condition on it).
    acquired_version: int = 0
    # Grows on every write but target installs (member writes condition on it).
    version: int = 0
    session_deadline: int = 0
    rebalance_deadline: int | None = None
    # Set for a member that uses the classic protocol (a mixed group).
    classic: ClassicMetadata | None = None
    # The lags it last reported on partitions it holds (core/lag.py).
    lags: Lags = NO_LAGS

    @property
    def epoch(self) -> int:
        return self.assignment.epoch

    @property
    def state(self) -> MemberState:
        return self.assignment.state

    def subscription(self) -> tuple[tuple[str, ...], str | None]:
        return tuple(sorted(self.subscribed_topic_names)), self.subscribed_topic_regex or None
