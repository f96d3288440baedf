"""A streams group member as the coordinator keeps it (Kafka's StreamsGroupMember)."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..modern.model import ModernGroupMember
from .reconciliation import MemberState, MemberTasks
from .tasks import EMPTY, TasksTuple

LEAVE_EPOCH = -1
STATIC_LEAVE_EPOCH = -2


@dataclass(frozen=True)
class Endpoint:
    """Where a member answers interactive queries (Kafka Streams' application.server)."""

    host: str
    port: int


@dataclass(frozen=True)
class StreamsGroupMember(ModernGroupMember):
    topology_epoch: int = 0
    # The process (a Kafka Streams client) the member runs in: its members share a state
    # directory, so a task's active and standbys never share a process.
    process_id: str = ""
    user_endpoint: Endpoint | None = None
    client_tags: tuple[tuple[str, str], ...] = ()
    tasks: MemberTasks = field(default_factory=MemberTasks)
    # The target: tasks, the epoch they were computed for, and the members that held some of
    # them when it was installed (the only members its reconciliation needs to read).
    target: TasksTuple = EMPTY
    target_epoch: int = 0
    target_version: int = 0
    wait_on: tuple[str, ...] = ()
    # Grows whenever the member's held tasks grow (installs condition on it, so that the
    # holders they record stay complete).
    acquired_version: int = 0
    # The digest of its latest changelog offsets report (core/streams/warmups.Report, an item
    # of its own), "" before its first: a heartbeat that repeats the report does not write it.
    report_digest: str = ""
    # Grows on every write of the member (writes condition on it).
    version: int = 0
    session_deadline: int = 0
    rebalance_deadline: int | None = None

    @property
    def epoch(self) -> int:
        return self.tasks.epoch

    @property
    def state(self) -> MemberState:
        return self.tasks.state

    def metadata(self) -> tuple[object, ...]:
        """What the target is computed from: a change bumps the group epoch."""
        return (self.process_id, self.rack_id, self.client_tags, self.topology_epoch)
