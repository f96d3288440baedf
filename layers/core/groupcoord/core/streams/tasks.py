"""Tasks: a task is one partition number of one sub-topology. `Tasks` maps a sub-topology id
to its partition numbers (the algebra of core/consumer/assignment.py applies unchanged:
a sub-topology id plays a topic id's part); `TasksTuple` holds a member's three roles."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field

from ..consumer.assignment import from_pairs as from_task_ids
from ..consumer.assignment import intersect, minus, normalize, overlaps, union
from ..consumer.assignment import size as tasks_size

Tasks = dict[str, frozenset[int]]
TaskId = tuple[str, int]  # (subtopology id, partition)

__all__ = [
    "TaskId",
    "Tasks",
    "TasksTuple",
    "from_task_ids",
    "intersect",
    "minus",
    "normalize",
    "overlaps",
    "task_ids",
    "tasks_size",
    "union",
]


def task_ids(tasks: Mapping[str, Iterable[int]]) -> Iterator[TaskId]:
    """Every task of `tasks`, in a stable order (sub-topology, then partition)."""
    for subtopology in sorted(tasks):
        for partition in sorted(tasks[subtopology]):
            yield subtopology, partition


def contains(tasks: Mapping[str, frozenset[int]], task: TaskId) -> bool:
    return task[1] in tasks.get(task[0], frozenset())


@dataclass(frozen=True)
class TasksTuple:
    """A member's active, standby and warm-up tasks (Kafka's TasksTuple)."""

    active: Tasks = field(default_factory=dict)
    standby: Tasks = field(default_factory=dict)
    warmup: Tasks = field(default_factory=dict)

    @classmethod
    def of(
        cls,
        active: Mapping[str, Iterable[int]] | None = None,
        standby: Mapping[str, Iterable[int]] | None = None,
        warmup: Mapping[str, Iterable[int]] | None = None,
    ) -> TasksTuple:
        return cls(normalize(active or {}), normalize(standby or {}), normalize(warmup or {}))

    def is_empty(self) -> bool:
        return not (self.active or self.standby or self.warmup)

    def merge(self, other: TasksTuple) -> TasksTuple:
        return TasksTuple(
            union(self.active, other.active),
            union(self.standby, other.standby),
            union(self.warmup, other.warmup),
        )

    def contains_any(self, other: TasksTuple) -> bool:
        """Whether any task of `other` is held here in the same role."""
        return (
            overlaps(other.active, self.active)
            or overlaps(other.standby, self.standby)
            or overlaps(other.warmup, self.warmup)
        )

    def all_tasks(self) -> Tasks:
        return union(union(self.active, self.standby), self.warmup)

    def size(self) -> int:
        return tasks_size(self.active) + tasks_size(self.standby) + tasks_size(self.warmup)


EMPTY = TasksTuple()
