"""Per-partition lag a member reports (a Kinesis consumer's MillisBehindLatest), pure.

A member may report how far behind it is on each partition it holds (consumer-group-heartbeat's
`partitionLags`). The coordinator keeps the last values on the member item for the dashboard and
the assignor, but a heartbeat that reports a new value must not cost a write of its own: the
values ride on the writes the heartbeat makes anyway (a session renewal, a reconciliation), and
force one only on a meaningful change, when a partition's lag crosses into another band
(BANDS_MS). Falling back into a lower band takes a value under half the band's floor, so a lag
that hovers at a border writes once, not on every heartbeat.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from .consumer.assignment import Assignment, TopicPartition

# (topic id, partition, lag ms), sorted: what a member item keeps.
Lags = tuple[tuple[str, int, int], ...]
NO_LAGS: Lags = ()

# Band floors: caught up (under 1 s), seconds, a minute, ten minutes, an hour.
BANDS_MS = (1_000, 10_000, 60_000, 600_000, 3_600_000)


def band(lag_ms: int) -> int:
    """0 for under BANDS_MS[0], then one more for each floor reached."""
    return sum(1 for floor in BANDS_MS if lag_ms >= floor)


def merged(old: Lags, reported: Iterable[tuple[str, int, int]] | None, holds: Assignment) -> Lags:
    """The lags to keep: `old` updated with what the request `reported` (None: nothing), for
    the partitions the member `holds` only (a report on any other is dropped)."""
    values = {(t, p): ms for t, p, ms in old if p in holds.get(t, ())}
    for topic, partition, ms in reported or ():
        if partition in holds.get(topic, ()):
            values[(topic, partition)] = max(0, ms)
    return tuple(sorted((t, p, ms) for (t, p), ms in values.items()))


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


def as_map(lags: Lags) -> dict[TopicPartition, int]:
    return {(t, p): ms for t, p, ms in lags}


def group_lags(members: Iterable[Lags]) -> Mapping[TopicPartition, int]:
    """Every partition's last reported lag across the members (a partition is held by one
    member at a time; a stale value left by an earlier holder loses to a larger one)."""
    lags: dict[TopicPartition, int] = {}
    for member_lags in members:
        for topic, partition, ms in member_lags:
            key = (topic, partition)
            lags[key] = max(ms, lags.get(key, 0))
    return lags
