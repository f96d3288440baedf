"""Assignments: topic id -> set of partitions, and the small algebra reconciliation needs.

An `Assignment` only holds topics with at least one partition, so two equal assignments
compare equal whatever way they were built.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

Assignment = dict[str, frozenset[int]]
TopicPartition = tuple[str, int]

EMPTY: Assignment = {}


def normalize(parts: Mapping[str, Iterable[int]]) -> Assignment:
    return {t: frozenset(ps) for t, ps in parts.items() if ps and frozenset(ps)}


def from_pairs(pairs: Iterable[TopicPartition]) -> Assignment:
    found: dict[str, set[int]] = {}
    for topic, partition in pairs:
        found.setdefault(topic, set()).add(partition)
    return normalize(found)


def pairs(assignment: Mapping[str, Iterable[int]]) -> set[TopicPartition]:
    return {(t, p) for t, ps in assignment.items() for p in ps}


def union(a: Assignment, b: Assignment) -> Assignment:
    return normalize({t: a.get(t, frozenset()) | b.get(t, frozenset()) for t in {*a, *b}})


def intersect(a: Assignment, b: Assignment) -> Assignment:
    return normalize({t: a[t] & b[t] for t in a.keys() & b.keys()})


def minus(a: Assignment, b: Assignment) -> Assignment:
    return normalize({t: ps - b.get(t, frozenset()) for t, ps in a.items()})


def size(a: Mapping[str, Iterable[int]]) -> int:
    return sum(len(frozenset(ps)) for ps in a.values())


def is_subset(a: Assignment, b: Assignment) -> bool:
    return all(ps <= b.get(t, frozenset()) for t, ps in a.items())


def overlaps(a: Assignment, b: Assignment) -> bool:
    return any(ps & b.get(t, frozenset()) for t, ps in a.items())


def to_item(a: Assignment) -> dict[str, list[int]]:
    """The stored form: topic id -> sorted partition list (a later assignment-epoch list can
    sit beside it, aligned index by index)."""
    return {t: sorted(ps) for t, ps in sorted(a.items())}


def from_item(value: Mapping[str, Iterable[int]] | None) -> Assignment:
    return normalize({t: [int(p) for p in ps] for t, ps in (value or {}).items()})
