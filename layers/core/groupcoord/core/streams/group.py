"""The state of a streams group as the rules see it; its members are member.StreamsGroupMember.
The store reads and writes it (store/streams/); a service decides a new state with
`dataclasses.replace` and the store writes the difference."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace

from ..modern.members import listed_state
from ..modern.model import ModernGroup
from ..rebalances import RebalanceRecord
from .configuration import StatusCode
from .member import StreamsGroupMember
from .reconciliation import MemberState

EMPTY = "Empty"
NOT_READY = "NotReady"
ASSIGNING = "Assigning"
RECONCILING = "Reconciling"
STABLE = "Stable"
STATES = (EMPTY, NOT_READY, ASSIGNING, RECONCILING, STABLE)


@dataclass(frozen=True)
class StreamsGroup(ModernGroup):
    # The group epoch counts the changes of the membership, its metadata and the topology.
    # The group's topology (its epoch and fingerprint; the topology has its own item), and
    # the epoch whose configuration the installed target was computed from (-1: none).
    topology_epoch: int = -1
    topology_digest: str = ""
    validated_topology_epoch: int = -1
    # Why the topology could not be configured at the last install (None: it was), answered
    # as a status by every heartbeat until it can.
    topology_status: StatusCode | None = None
    topology_detail: str = ""
    # Grows whenever the endpoints map may have changed (interactive queries): a member with
    # an endpoint joined, left or changed it, or a target was installed. The map shows the
    # target, so a rebalance bumps it once, not once per member that reconciles.
    endpoint_epoch: int = 0
    # The member that asked the application to shut down (status 4 until the group is empty).
    shutdown_requested_by: str | None = None
    # The end of the initial rebalance delay of an empty group's first members (ms).
    delay_until: int = 0
    # When the group next needs a look (a member's session or rebalance timeout, the delay).
    deadline: int | None = None
    # The install lease: one request at a time computes and writes a new target.
    install_id: str | None = None
    install_until: int = 0
    assigned_at: int = 0
    created_at_ms: int = 0
    # How many topic changes the registry counted for the group, and how many it took in.
    topic_changes: int = 0
    topic_changes_seen: int = 0
    # With the authorizer on and a source regex: the fingerprint of the topics the last
    # install resolved (core/streams/visibility.py); a topic change that leaves it as it is
    # moves nothing. None: every topic change moves the group.
    resolved_digest: str | None = None
    # The last group epoch moves, when and why (core/rebalances.py).
    rebalances: tuple[RebalanceRecord, ...] = ()

    def with_members(self, delta: int) -> StreamsGroup:
        """ModernGroup.with_members; a shutdown request ends when the group empties."""
        changed = super().with_members(delta)
        return changed if changed.member_count else replace(changed, shutdown_requested_by=None)

    def with_endpoints_changed(self, changed: bool = True) -> StreamsGroup:
        """The endpoints map is out of date when `changed`: a new endpoint epoch, written
        with the group write that changed it (no write of its own)."""
        return replace(self, endpoint_epoch=self.endpoint_epoch + 1) if changed else self


def group_state(
    member_count: int,
    group_epoch: int,
    target_epoch: int,
    ready: bool,
    members: Iterable[StreamsGroupMember] | None = None,
) -> str:
    """Empty, NotReady (its topology cannot be configured yet), Assigning, Reconciling or
    Stable. Without the members, the best guess is Reconciling."""
    if member_count and not ready:
        return NOT_READY
    return listed_state(member_count, group_epoch, target_epoch, members, _is_stable)


def _is_stable(member: StreamsGroupMember) -> bool:
    return member.state is MemberState.STABLE
