"""The sticky task assignor (Kafka's streams StickyTaskAssignor), pure.

Active tasks stay with their previous owner while it is under its quota, then go to a
previous standby of the task (the most caught-up one by the members' reported lags, beyond
Kafka 4.2: a task whose owner died resumes where its state is freshest), then to a member
that reports changelog offsets for it without having it as standby (state on its disk: a
restarted process, whose new member id has no previous target; the most caught up first, as
Kafka's), then to the least-loaded process and its least-loaded member.
Each stateful task gets `num_standby` standbys, never on a process that holds the task
already (active or standby), preferring its previous active owner and previous standbys;
the rest go to the least-loaded processes, spread over client tags (racks, zones): among the
least-loaded candidates, the one whose tags differ most from the task's other holders.
Load is tasks per member of a process (a process with more members takes more).
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from .tasks import TaskId, TasksTuple, from_task_ids, task_ids

# How many of the least-loaded eligible processes a standby's tag spread chooses from.
TAG_CANDIDATES = 8


@dataclass(frozen=True)
class AssignorMember:
    member_id: str
    process_id: str
    # What it had: the previous target (stickiness), and tags for the standbys' spread.
    previous: TasksTuple = field(default_factory=TasksTuple)
    client_tags: tuple[tuple[str, str], ...] = ()
    # Its state's lag per task, from its latest report (core/streams/warmups.py); a task
    # missing has no known lag.
    lags: Mapping[TaskId, int] = field(default_factory=dict)
    # The changelog offsets it reports per task (the state it has on disk).
    offsets: Mapping[TaskId, int] = field(default_factory=dict)


# How caught up a member is on a task, best first: within the acceptable lag, then behind it
# by its lag, then unknown.
Rank = tuple[int, ...]


def lag_rank(lag: int | None, acceptable_lag: int) -> Rank:
    if lag is None:
        return (2, 0)
    return (0, 0) if lag <= acceptable_lag else (1, lag)


def _quota(tasks: int, members: int) -> int:
    return 0 if members == 0 else -(-tasks // members)


class _Process:
    def __init__(self, process_id: str, tags: frozenset[tuple[str, str]]) -> None:
        self.process_id = process_id
        self.tags = tags
        self.counts: dict[str, int] = {}
        self.tasks: set[TaskId] = set()

    @property
    def load(self) -> float:
        return sum(self.counts.values()) / len(self.counts)

    def least_loaded_member(self) -> str:
        return min(self.counts, key=lambda m: (self.counts[m], m))


class _Quota:
    """Kafka's shrinking quota: once a member reaches it, the rest is shared by the others."""

    def __init__(self, tasks: int, members: int) -> None:
        self.tasks, self.members = tasks, members
        self.per_member = _quota(tasks, members)

    def reached(self, count: int) -> None:
        if count == self.per_member:
            self.members -= 1
            self.tasks -= count
            self.per_member = _quota(self.tasks, self.members)


class _State:
    def __init__(self, members: Sequence[AssignorMember], total_active: int, total: int) -> None:
        self.processes: dict[str, _Process] = {}
        self.process_of: dict[str, str] = {}
        self.active: dict[str, set[TaskId]] = {m.member_id: set() for m in members}
        self.standby: dict[str, set[TaskId]] = {m.member_id: set() for m in members}
        self.where: dict[TaskId, list[_Process]] = {}
        for m in sorted(members, key=lambda m: m.member_id):
            process = self.processes.setdefault(
                m.process_id, _Process(m.process_id, frozenset(m.client_tags))
            )
            process.counts[m.member_id] = 0
            self.process_of[m.member_id] = m.process_id
        self.active_quota = _Quota(total_active, len(members))
        self.total_quota = _Quota(total, len(members))

    def count(self, member_id: str) -> int:
        return self.processes[self.process_of[member_id]].counts[member_id]

    def add(self, member_id: str, task: TaskId, active: bool) -> None:
        process = self.processes[self.process_of[member_id]]
        process.counts[member_id] += 1
        process.tasks.add(task)
        self.where.setdefault(task, []).append(process)
        (self.active if active else self.standby)[member_id].add(task)
        count = process.counts[member_id]
        if active:
            self.active_quota.reached(count)
        self.total_quota.reached(count)

    def holds(self, member_id: str, task: TaskId) -> bool:
        return task in self.processes[self.process_of[member_id]].tasks

    def least_loaded_previous(
        self, candidates: Iterable[str], task: TaskId | None = None
    ) -> str | None:
        """Kafka's findPrevMemberWithLeastLoad: the candidate whose process and member are
        least loaded (for a standby: whose process does not hold the task)."""
        best: str | None = None
        best_load = (float("inf"), float("inf"))
        for member_id in candidates:
            if member_id not in self.process_of:
                continue
            if task is not None and self.holds(member_id, task):
                continue
            process = self.processes[self.process_of[member_id]]
            load = (process.load, process.counts[member_id])
            if best is None or (load[0] < best_load[0] and load[1] < best_load[1]):
                best, best_load = member_id, load
        return best

    def freshest_previous(
        self, candidates: Iterable[str], rank: Callable[[str], Rank]
    ) -> str | None:
        """The new active owner among a task's previous standbys: of those under the active
        quota, the best ranked (most caught up), and among them the least loaded."""
        eligible = [
            m
            for m in candidates
            if m in self.process_of and self.count(m) < self.active_quota.per_member
        ]
        if not eligible:
            return None
        best = min(rank(m) for m in eligible)
        return self.least_loaded_previous(m for m in eligible if rank(m) == best)


@dataclass(frozen=True)
class _Previous:
    """Who had each task: its previous active owner, its previous standbys, and Kafka's
    standby candidates (the previous standbys, then the members that report offsets for it:
    its state is on their disk)."""

    active: dict[TaskId, str]
    standby: dict[TaskId, list[str]]
    candidates: dict[TaskId, list[str]]

    @classmethod
    def of(cls, members: Sequence[AssignorMember]) -> _Previous:
        active: dict[TaskId, str] = {}
        standby: dict[TaskId, list[str]] = {}
        reporters: dict[TaskId, list[str]] = {}
        for m in sorted(members, key=lambda m: m.member_id):
            for task in task_ids(m.previous.active):
                active[task] = m.member_id
            standbys = set(task_ids(m.previous.standby))
            for task in sorted(standbys):
                standby.setdefault(task, []).append(m.member_id)
            for task in sorted(set(m.offsets) - standbys):
                reporters.setdefault(task, []).append(m.member_id)
        candidates = {t: standby.get(t, []) + reporters.get(t, []) for t in {*standby, *reporters}}
        return cls(active, standby, candidates)


def _ranker(
    members: Sequence[AssignorMember], previous: _Previous, acceptable_lag: int
) -> Callable[[TaskId], Callable[[str], Rank]]:
    """How a task's candidates rank as its new active owner, best first: previous standbys
    by lag, then members with its state on disk by lag, then by the highest offset."""
    by_id = {m.member_id: m for m in members}

    def rank(task: TaskId) -> Callable[[str], Rank]:
        standbys = set(previous.standby.get(task, ()))

        def of(member_id: str) -> Rank:
            m = by_id[member_id]
            caught_up = lag_rank(m.lags.get(task), acceptable_lag)
            if member_id in standbys:
                return (0, *caught_up, 0)
            return (1, *caught_up, -m.offsets.get(task, 0))

        return of

    return rank


def assign(
    members: Sequence[AssignorMember],
    task_counts: Mapping[str, int],
    stateful: Iterable[str],
    num_standby: int,
    acceptable_lag: int = 0,
) -> dict[str, TasksTuple]:
    """Every member's target: `task_counts` sub-topology id -> its number of tasks. A member's
    lag on a task counts as caught up up to `acceptable_lag`."""
    if not members:
        return {}
    stateful = frozenset(stateful) & set(task_counts)
    active_tasks = [(s, p) for s in sorted(task_counts) for p in range(task_counts[s])]
    standby_tasks = [t for t in active_tasks if t[0] in stateful] if num_standby > 0 else []
    total = len(active_tasks) + len(standby_tasks) * num_standby
    state = _State(members, len(active_tasks), total)
    previous = _Previous.of(members)
    rank = _ranker(members, previous, acceptable_lag)
    _assign_active(state, active_tasks, previous.active, previous.candidates, rank)
    if standby_tasks:
        _assign_standby(state, standby_tasks, num_standby, previous.active, previous.candidates)
    return {
        m.member_id: TasksTuple(
            from_task_ids(state.active[m.member_id]), from_task_ids(state.standby[m.member_id])
        )
        for m in members
    }


def _assign_active(
    state: _State,
    tasks: list[TaskId],
    prev_active: Mapping[TaskId, str],
    prev_standby: Mapping[TaskId, list[str]],
    rank: Callable[[TaskId], Callable[[str], Rank]],
) -> None:
    # Partition first: a range-shaped previous assignment keeps its pairs of partitions.
    left = sorted(tasks, key=lambda t: (t[1], t[0]))
    rest = []
    for task in left:
        owner = prev_active.get(task)
        if owner in state.process_of and state.count(owner) < state.active_quota.per_member:
            state.add(owner, task, active=True)
        else:
            rest.append(task)
    unassigned = []
    for task in rest:
        owner = state.freshest_previous(prev_standby.get(task, ()), rank(task))
        if owner is not None:
            state.add(owner, task, active=True)
        else:
            unassigned.append(task)
    heap = [(p.load, p.process_id) for p in state.processes.values()]
    heapq.heapify(heap)
    for task in sorted(unassigned):
        _, process_id = heapq.heappop(heap)
        process = state.processes[process_id]
        state.add(process.least_loaded_member(), task, active=True)
        heapq.heappush(heap, (process.load, process_id))


def _assign_standby(
    state: _State,
    tasks: list[TaskId],
    replicas: int,
    prev_active: Mapping[TaskId, str],
    prev_standby: Mapping[TaskId, list[str]],
) -> None:
    to_least_loaded: list[tuple[TaskId, int]] = []
    for task in sorted(tasks, key=lambda t: (t[1], t[0]), reverse=True):
        for placed in range(replicas):
            owner = prev_active.get(task)
            if (
                owner in state.process_of
                and not state.holds(owner, task)
                and state.count(owner) < state.total_quota.per_member
            ):
                state.add(owner, task, active=False)
                continue
            owner = state.least_loaded_previous(prev_standby.get(task, ()), task)
            if owner is not None and state.count(owner) < state.total_quota.per_member:
                state.add(owner, task, active=False)
                continue
            to_least_loaded.append((task, replicas - placed))
            break
    heap = [(p.load, p.process_id) for p in state.processes.values()]
    heapq.heapify(heap)
    for task, remaining in sorted(to_least_loaded, reverse=True):
        for _ in range(remaining):
            if not _standby_to_least_loaded(state, heap, task):
                break  # fewer processes than replicas: Kafka logs and goes on


def _standby_to_least_loaded(state: _State, heap: list[tuple[float, str]], task: TaskId) -> bool:
    """A standby of `task` on one of the least-loaded processes that do not hold it (`heap`:
    the processes by load), the one whose client tags overlap least with those that do."""
    popped: list[_Process] = []
    nearest: list[_Process] = []
    while heap and len(nearest) < TAG_CANDIDATES:
        process = state.processes[heapq.heappop(heap)[1]]
        popped.append(process)
        if task not in process.tasks:
            nearest.append(process)
    chosen = None
    if nearest:
        holders = [p.tags for p in state.where.get(task, ())]

        def shared(p: _Process) -> int:
            return sum(len(p.tags & tags) for tags in holders)

        chosen = min(nearest, key=lambda p: (shared(p), p.load, p.process_id))
        state.add(chosen.least_loaded_member(), task, active=False)
    for process in popped:
        heapq.heappush(heap, (process.load, process.process_id))
    return chosen is not None
