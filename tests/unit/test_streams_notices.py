"""core/streams/notices.py: whom a streams member's heartbeat tells over the push channel."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pytest

from groupcoord.core.streams.member import StreamsGroupMember
from groupcoord.core.streams.notices import (
    release_notice_members,
    released_tasks,
    shutdown_first_requested,
)
from groupcoord.core.streams.reconciliation import MemberTasks
from groupcoord.core.streams.tasks import TasksTuple

Roles = Mapping[str, Sequence[int]]  # role ("active", "standby", "warmup") -> partitions of "0"


def tasks(roles: Roles) -> TasksTuple:
    return TasksTuple.of(**{role: {"0": partitions} for role, partitions in roles.items()})


def member(member_id: str, process: str, holds: Roles, target: Roles) -> StreamsGroupMember:
    return StreamsGroupMember(
        member_id,
        process_id=process,
        tasks=MemberTasks(epoch=3, assigned=tasks(holds)),
        target=tasks(target),
        target_epoch=4,
    )


@pytest.mark.parametrize(
    ("before", "after", "first"),
    [
        (None, "m1", True),  # every other member hears SHUTDOWN_APPLICATION next
        ("m1", "m1", False),  # requested before: told then
        (None, None, False),
    ],
)
def test_only_the_first_shutdown_request_is_told(
    before: str | None, after: str | None, first: bool
) -> None:
    assert shutdown_first_requested(before, after) is first


def test_released_tasks_are_what_left_each_role() -> None:
    held = tasks({"active": [0, 1], "standby": [2]})
    demoted = tasks({"active": [0], "standby": [1, 2]})  # 1 is kept as a standby
    assert released_tasks(held, demoted) == tasks({"active": [1]})
    assert released_tasks(held, tasks({"active": [0, 1]})) == tasks({"standby": [2]})
    assert released_tasks(held, tasks({"active": [0, 1, 3], "standby": [2]})).is_empty()


RELEASER = member("releaser", "p1", {"active": [0]}, {"active": [0]})


def told(released: Roles, *others: StreamsGroupMember) -> list[str]:
    return release_notice_members(tasks(released), [RELEASER, *others], RELEASER)


def test_a_released_active_tells_its_new_active_owner_on_any_process_and_no_other() -> None:
    joiner = member("joiner", "p2", {}, {"active": [1, 3]})  # waits on 1
    taken = member("taken", "p3", {"active": [2]}, {"active": [2]})  # took 2 already
    bystander = member("bystander", "p4", {"active": [4]}, {"active": [4]})
    assert told({"active": [1, 2]}, joiner, taken, bystander) == ["joiner"]
    assert told({"active": [7]}, joiner, taken, bystander) == []
    assert told({}, joiner, taken, bystander) == []


def test_a_standby_promoted_to_active_waits_on_the_released_active() -> None:
    promoted = member("promoted", "p2", {"standby": [1]}, {"active": [1]})
    assert told({"active": [1]}, promoted) == ["promoted"]


def test_a_standby_or_warmup_waits_only_on_a_release_of_its_own_process() -> None:
    """They share the state directory: a standby waits on the active of its own process, not
    on another process's (Kafka's isUnreleasedStandbyTask)."""
    standby_here = member("standby-here", "p1", {}, {"standby": [1]})
    warmup_here = member("warmup-here", "p1", {}, {"warmup": [2]})
    standby_elsewhere = member("standby-elsewhere", "p2", {}, {"standby": [1]})
    others = (standby_here, warmup_here, standby_elsewhere)
    assert told({"active": [1, 2]}, *others) == ["standby-here", "warmup-here"]
    assert told({"standby": [1]}, *others) == ["standby-here"]


def test_an_active_waits_on_a_standby_or_warmup_released_on_its_own_process_only() -> None:
    active_here = member("active-here", "p1", {}, {"active": [1]})
    active_elsewhere = member("active-elsewhere", "p2", {}, {"active": [1]})
    assert told({"standby": [1]}, active_here, active_elsewhere) == ["active-here"]
    assert told({"warmup": [1]}, active_here, active_elsewhere) == ["active-here"]
