"""When a member-based group's request installs its next target itself (at most one install
per request): not while its target is current, another request holds a live install lease,
or (`batched`) the last install is less than the assignment interval old; a lost race reads
the group again and decides again, a bounded number of times. Once an install's flip committed,
the members it retargeted are told over the push channel (service/push.py), for both
families, from here."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any, Protocol, TypeVar

from ...store.errors import Conflict
from ...store.member_groups import MemberGroupStore
from ...store.store import Store
from ..push import notify_members
from ..races import DecideAgain, retry_on_race

INSTALL_ATTEMPTS = 4
# How long an install lease keeps other requests from installing the same group's target.
LEASE_MS = 10_000


class Installing(Protocol):
    @property
    def group_id(self) -> str: ...
    @property
    def group_epoch(self) -> int: ...
    @property
    def target_epoch(self) -> int: ...
    @property
    def install_id(self) -> str | None: ...
    @property
    def install_until(self) -> int: ...
    @property
    def assigned_at(self) -> int: ...


class Targeted(Protocol):
    @property
    def target_epoch(self) -> int: ...


class Completed(Protocol):
    """A family's completed install: the group after the flip, every member as it left them."""

    @property
    def group(self) -> Any: ...
    @property
    def members(self) -> Mapping[str, Targeted]: ...


G = TypeVar("G", bound=Installing)
Done = TypeVar("Done", bound=Completed)


def is_held_back(group: Installing, now: int, batched: bool, interval_ms: int) -> bool:
    """No install by this request: the target is current, another request's lease is live,
    or (`batched`) the last install is younger than the assignment interval (that install,
    or a later request, covers the bump)."""
    if group.group_epoch <= group.target_epoch:
        return True
    if group.install_id is not None and group.install_until > now:
        return True
    return batched and group.target_epoch > 0 and now < group.assigned_at + interval_ms


def retargeted(installed: Completed) -> list[str]:
    """The members whose target the install wrote (their items carry its epoch)."""
    epoch = installed.group.target_epoch
    return [mid for mid, m in installed.members.items() if m.target_epoch == epoch]


def install_if_due(
    store: Store,
    family: MemberGroupStore[Any, Any],
    group: G,
    held_back: Callable[[G, int], bool],
    install: Callable[[G, int], Done],
) -> tuple[G, Done | None]:
    """`install(group, now)` unless `held_back(group, now)`; the group as the install left it
    (or as it is) and the install, if this request did one."""
    clock = store.clock
    current = group

    def attempt(_: int) -> tuple[G, Done | None]:
        nonlocal current
        now = clock.now_ms()
        if held_back(current, now):
            return current, None
        try:
            installed = install(current, now)
        except Conflict:
            fresh = family.group(current.group_id)
            if fresh is None:
                return current, None
            current = fresh
            raise DecideAgain() from None
        # After the flip committed: the members with a new target hear of it now.
        notify_members(store, current.group_id, retargeted(installed))
        return installed.group, installed

    return retry_on_race(clock, attempt, attempts=INSTALL_ATTEMPTS, busy=lambda: (current, None))


def leased(group: G, now_ms: int) -> G:
    """The group as an install's lease writes it: a new install id, the lease's end, and the
    topic changes up to here seen (the install's listing sees them)."""
    return replace(  # type: ignore[type-var]
        group,
        topic_changes_seen=group.topic_changes,  # type: ignore[attr-defined]
        install_id=uuid.uuid4().hex,
        install_until=now_ms + LEASE_MS,
    )
