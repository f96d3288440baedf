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


def encode_partitions(partitions: Iterable[int]) -> str:
    """Sorted partitions as ranges, "0-4,7,9-12": a member of a big topic (one member over
    100,000 partitions) stays a few bytes instead of a 500 KB number list."""
    ordered = sorted(set(partitions))
    parts: list[str] = []
    i = 0
    while i < len(ordered):
        j = i
        while j + 1 < len(ordered) and ordered[j + 1] == ordered[j] + 1:
            j += 1
        parts.append(str(ordered[i]) if i == j else f"{ordered[i]}-{ordered[j]}")
        i = j + 1
    return ",".join(parts)


def decode_partitions(value: str | Iterable[int]) -> list[int]:
    """The inverse of `encode_partitions`; a plain number list (the older form) too."""
    if not isinstance(value, str):
        return [int(p) for p in value]
    found: list[int] = []
    for part in value.split(","):
        if not part:
            continue
        start, _, end = part.partition("-")
        if end:
            found.extend(range(int(start), int(end) + 1))
        else:
            found.append(int(start))
    return found


def to_item(a: Mapping[str, Iterable[int]]) -> dict[str, str]:
    """The stored form: topic id -> partition ranges (`encode_partitions`)."""
    return {t: encode_partitions(ps) for t, ps in sorted(a.items()) if ps}


def from_item(value: Mapping[str, str | Iterable[int]] | None) -> Assignment:
    return normalize({t: decode_partitions(ps) for t, ps in (value or {}).items()})
