"""Per-partition lag a member reports (a Kinesis consumer's MillisBehindLatest), pure.

A member may report how far behind it is on each partition it holds (consumer-group-heartbeat's
`partitionLags`). The coordinator keeps the last values on the member item for the dashboard and
the assignor, but a heartbeat that reports a new value must not cost a write of its own: the
values ride on the writes the heartbeat makes anyway (a session renewal, a reconciliation), and
force one only on a meaningful change, when a partition's lag crosses into another band
(BANDS_MS). Falling back into a lower band takes a value under half the band's floor, so a lag
that hovers at a border writes once, not on every heartbeat.

Classic and consumer members both keep lags, so this module names partitions as plain
(topic id, partition) pairs and imports neither family.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import Any

from ..models.limits import PARTITION_LAGS_MAX

# (topic id, partition, lag ms), sorted: what a member item keeps.
Lags = tuple[tuple[str, int, int], ...]
NO_LAGS: Lags = ()

# Band floors: caught up (under 1 s), seconds, a minute, ten minutes, an hour.
BANDS_MS = (1_000, 10_000, 60_000, 600_000, 3_600_000)


def band(lag_ms: int) -> int:
    """0 for under BANDS_MS[0], then one more for each floor reached."""
    return sum(1 for floor in BANDS_MS if lag_ms >= floor)


def kept(
    old: Lags,
    reported: Iterable[tuple[str, int, int]] | None,
    holds: Mapping[str, Collection[int]] | None,
) -> Lags:
    """The lags to keep: the request's report (None: not sent, `old` stays), which replaces
    the last one, of the partitions the member `holds` only (None: not known here, as for a
    classic member whose assignment is opaque bytes), at most PARTITION_LAGS_MAX of them."""
    if reported is None:
        entries: Iterable[tuple[str, int, int]] = old
    else:
        entries = ((t, p, max(0, ms)) for t, p, ms in reported)
    values = {(t, p): ms for t, p, ms in entries if holds is None or p in holds.get(t, ())}
    return tuple(sorted((t, p, ms) for (t, p), ms in values.items()))[:PARTITION_LAGS_MAX]


def changed_meaningfully(old: Lags, new: Lags) -> bool:
    """Whether `new` is worth a write of its own: a partition's first value, or a lag that
    moved into a higher band, or under half the floor of its old band."""
    before = {(t, p): ms for t, p, ms in old}
    for topic, partition, ms in new:
        last = before.get((topic, partition))
        if last is None:
            return True
        was, now = band(last), band(ms)
        if now > was or (now < was and ms * 2 < BANDS_MS[was - 1]):
            return True
    return False


def to_item(lags: Lags) -> list[list[str | int]]:
    return [list(entry) for entry in lags]


def from_item(value: Iterable[Sequence[Any]] | None) -> Lags:
    return tuple((str(e[0]), int(e[1]), int(e[2])) for e in value or ())


def group_lags(members: Iterable[Lags]) -> Mapping[tuple[str, int], int]:
    """Every partition's last reported lag across the members (a partition is held by one
    member at a time; a stale value left by an earlier holder loses to a larger one)."""
    lags: dict[tuple[str, int], int] = {}
    for member_lags in members:
        for topic, partition, ms in member_lags:
            key = (topic, partition)
            lags[key] = max(ms, lags.get(key, 0))
    return lags
