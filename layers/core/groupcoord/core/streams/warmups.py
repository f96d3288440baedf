"""Warm-up tasks by lag (beyond Kafka 4.2: Kafka Streams' high-availability assignor, moved
into the coordinator), pure: the sticky assignor's targets refined so that a stateful active
task moves only to a member whose state of it is caught up.

A member's lag on a task is the task's changelog end offset less the member's offset, from its
latest report (taskOffsets / taskEndOffsets); no report means not caught up; the member that
holds the task active counts as caught up. When the assignor moves a stateful active task from
its holder to a member that is not caught up, the task stays active on its holder and the
destination gets it as a warm-up, at most `max_warmups` in the group; past that budget the
task stays without one (a later install moves it). Once the warm-up catches up, the next
install moves the active. A held-back task keeps `num_standby` standbys as far as processes
allow: the one the assignor put beside the holder goes to a process with no copy of the task
(the destination first, when it has no warm-up of it).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field, replace

from .tasks import TaskId, TasksTuple, contains, from_task_ids, minus, task_ids, union


@dataclass(frozen=True)
class Report:
    """A member's latest changelog offsets and end offsets, per task."""

    offsets: Mapping[TaskId, int] = field(default_factory=dict)
    end_offsets: Mapping[TaskId, int] = field(default_factory=dict)

    def lag(self, task: TaskId) -> int | None:
        if task not in self.offsets or task not in self.end_offsets:
            return None
        return max(0, self.end_offsets[task] - self.offsets[task])

    def digest(self) -> str:
        """A fingerprint of the report: the member item keeps the stored report's, so that a
        heartbeat repeating it writes nothing (service/streams/heartbeat.py)."""
        text = json.dumps([sorted(self.offsets.items()), sorted(self.end_offsets.items())])
        return hashlib.blake2b(text.encode("utf-8"), digest_size=12).hexdigest()

    def lags(self) -> dict[TaskId, int]:
        """The lag of every task the report knows."""
        found = {t: self.lag(t) for t in self.offsets}
        return {t: lag for t, lag in found.items() if lag is not None}


def caught_up(report: Report | None, task: TaskId, acceptable_lag: int) -> bool:
    lag = report.lag(task) if report is not None else None
    return lag is not None and lag <= acceptable_lag


def refine(
    targets: Mapping[str, TasksTuple],
    holders: Mapping[TaskId, str],
    process_of: Mapping[str, str],
    reports: Mapping[str, Report],
    stateful: frozenset[str],
    *,
    acceptable_lag: int,
    max_warmups: int,
    num_standby: int = 0,
) -> dict[str, TasksTuple]:
    """`holders`: the member holding each task active now; `process_of`: each member's process."""
    result = dict(targets)
    owner = {t: m for m, tasks in result.items() for t in task_ids(tasks.active)}
    on_process: dict[str, list[str]] = {}
    for m in result:
        on_process.setdefault(process_of.get(m, ""), []).append(m)
    budget = max_warmups
    for task in sorted(owner):
        new, held_by = owner[task], holders.get(task)
        if task[0] not in stateful or held_by is None or held_by == new or held_by not in result:
            continue
        same_process = process_of.get(new) == process_of.get(held_by)
        if same_process or caught_up(reports.get(new), task, acceptable_lag):
            continue  # (a process's members share its state directory)
        # The active stays where its state is; no other copy may share its process.
        one = from_task_ids([task])
        result[new] = replace(result[new], active=minus(result[new].active, one))
        for m in on_process.get(process_of.get(held_by, ""), ()):
            if contains(result[m].standby, task):
                result[m] = replace(result[m], standby=minus(result[m].standby, one))
        result[held_by] = replace(result[held_by], active=union(result[held_by].active, one))
        if budget > 0:
            budget -= 1
            result[new] = replace(result[new], warmup=union(result[new].warmup, one))
        _keep_standbys(result, task, new, process_of, num_standby)
    return result


def _keep_standbys(
    result: dict[str, TasksTuple],
    task: TaskId,
    prefer: str,
    process_of: Mapping[str, str],
    num_standby: int,
) -> None:
    """Standbys of `task` up to `num_standby`, each on a process with no copy of it: `prefer`
    first, then the member with the fewest tasks."""
    with_copy = {process_of.get(m) for m, t in result.items() if contains(t.all_tasks(), task)}
    standbys = sum(contains(t.standby, task) for t in result.values())
    one = from_task_ids([task])
    while standbys < num_standby:
        free = [m for m in result if process_of.get(m) not in with_copy]
        if not free:
            return  # fewer processes than copies: as the assignor, go on
        chosen = prefer if prefer in free else min(free, key=lambda m: (result[m].size(), m))
        result[chosen] = replace(result[chosen], standby=union(result[chosen].standby, one))
        with_copy.add(process_of.get(chosen))
        standbys += 1
