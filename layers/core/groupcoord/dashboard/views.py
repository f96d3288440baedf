"""What the templates show, shaped from the coordinator's answers: pure functions, so the
pages' logic is unit tested without a browser (tests/unit/test_dashboard.py)."""

from __future__ import annotations

import datetime
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .source import GroupDetail
from .timeline import MemberSeen, Rebalance


def duration(ms: int) -> str:
    """A short human duration: 850 ms, 4.2 s, 3 min 5 s, 2 h 4 min, 3 d 2 h."""
    ms = abs(ms)
    if ms < 1000:
        return f"{ms} ms"
    if ms < 60_000:
        return f"{ms / 1000:.1f} s"
    minutes, seconds = divmod(ms // 1000, 60)
    if minutes < 60:
        return f"{minutes} min {seconds} s"
    hours, minutes = divmod(minutes, 60)
    if hours < 48:
        return f"{hours} h {minutes} min"
    return f"{hours // 24} d {hours % 24} h"


def clock_time(ms: int) -> str:
    """A coordinator time (ms since the epoch) as UTC, to the second."""
    if ms <= 0:
        return "-"
    return datetime.datetime.fromtimestamp(ms / 1000, datetime.UTC).strftime("%H:%M:%S UTC")


FILTERS: dict[str, Callable[..., str]] = {"duration": duration, "clock_time": clock_time}


@dataclass(frozen=True)
class MemberRow:
    label: str  # M1, M2...: short, kept for the member's life (timeline.py), used in the grid
    member: dict[str, Any]
    renewed: str  # how long ago its session was last renewed (lastHeartbeatMs)
    deadline: str
    overdue: bool


@dataclass
class Cell:
    partition: int
    owner: str | None  # labels
    revoking: str | None
    target: str | None
    moving: bool  # a target that is not the owner: the partition is about to move
    title: str
    behind: str | None = None  # the lag its holder last reported (lagMs)


@dataclass
class TopicRow:
    name: str
    cells: list[Cell] = field(default_factory=list)


@dataclass(frozen=True)
class OffsetRow:
    topic: str
    partition: int
    owner: str | None
    offset: int | str  # a Kinesis shard's: its checkpoint (SEQUENCE:SUB, SHARD_END)
    committed_ago: str
    committed_at: str


@dataclass(frozen=True)
class TimelineRow:
    at: str
    epochs: str
    causes: tuple[str, ...]
    details: str


@dataclass(frozen=True)
class TaskRow:
    """A streams member's tasks by role, each as "subtopology: partitions"."""

    label: str
    process: str
    active: str
    standby: str
    warmup: str


@dataclass
class GroupPage:
    group: dict[str, Any]
    now_ms: int
    members: list[MemberRow]
    topics: list[TopicRow]
    offsets: list[OffsetRow]
    timeline: list[TimelineRow]
    watching_since: str
    truncated: bool
    tasks: list[TaskRow] = field(default_factory=list)
    shards: list[ShardRow] = field(default_factory=list)


@dataclass
class ShardRow:
    """A Kinesis shard in its lineage: children under their (first) parent, `depth` deep."""

    topic: str
    partition: int
    shard_id: str
    parents: str
    state: str  # open, closed, blocked, done (admin/kinesis_shards.py)
    checkpoint: str
    owner: str | None
    behind: str | None
    depth: int


def _lineage(shards: dict[int, dict[str, Any]]) -> list[tuple[int, int]]:
    """(partition, depth) in lineage order: roots (no parent listed) first, each followed by
    its children (a merge's child under its first parent), in partition order."""
    by_id = {v["shardId"]: p for p, v in shards.items()}
    children: dict[int | None, list[int]] = {}
    for p, v in sorted(shards.items()):
        first = next((by_id[i] for i in v["parentShardIds"] if i in by_id), None)
        children.setdefault(first, []).append(p)
    order: list[tuple[int, int]] = []
    stack = [(p, 0) for p in reversed(children.get(None, []))]
    while stack:
        p, depth = stack.pop()
        order.append((p, depth))
        stack += [(c, depth + 1) for c in reversed(children.get(p, []))]
    return order


def _shard_rows(
    shards: dict[tuple[str, int], dict[str, Any]], owners: dict[tuple[str, int], str | None]
) -> list[ShardRow]:
    """Each Kinesis-backed topic's shards as a tree (_lineage)."""
    rows: list[ShardRow] = []
    for topic in sorted({t for t, _ in shards}):
        mine = {p: v for (t, p), v in shards.items() if t == topic}
        for p, depth in _lineage(mine):
            view, lag = mine[p], mine[p].get("lagMs")
            rows.append(
                ShardRow(
                    topic=topic,
                    partition=p,
                    shard_id=view["shardId"],
                    parents=", ".join(view["parentShardIds"]) or "-",
                    state=view["state"],
                    checkpoint=view["checkpoint"] or "-",
                    owner=owners.get((topic, p)),
                    behind=None if lag is None else f"{duration(int(lag))} behind",
                    depth=depth,
                )
            )
    return rows


def _member_rows(
    members: list[dict[str, Any]], labels: dict[str, str], now_ms: int
) -> list[MemberRow]:
    rows = []
    for m in sorted(members, key=lambda m: int(labels[m["memberId"]][1:])):
        last = int(m.get("lastHeartbeatMs", -1))
        deadline = int(m.get("sessionDeadlineMs", -1))
        overdue = 0 <= deadline <= now_ms
        rows.append(
            MemberRow(
                label=labels[m["memberId"]],
                member=m,
                renewed=f"{duration(now_ms - last)} ago" if last > 0 else "-",
                deadline=(
                    "-"
                    if deadline < 0
                    else f"overdue by {duration(now_ms - deadline)}"
                    if overdue
                    else f"in {duration(deadline - now_ms)}"
                ),
                overdue=overdue,
            )
        )
    return rows


def _task_text(entries: list[dict[str, Any]] | None) -> str:
    parts = [
        f"{e['subtopologyId']}: {', '.join(str(p) for p in e['partitions'])}"
        for e in entries or ()
        if e.get("partitions")
    ]
    return " · ".join(parts) or "-"


def _task_rows(rows: list[MemberRow]) -> list[TaskRow]:
    """A streams group's tasks by role, member by member (other groups have none)."""
    return [
        TaskRow(
            label=row.label,
            process=row.member.get("processId") or "-",
            active=_task_text(row.member.get("activeTasks")),
            standby=_task_text(row.member.get("standbyTasks")),
            warmup=_task_text(row.member.get("warmupTasks")),
        )
        for row in rows
        if row.member.get("activeTasks") is not None
    ]


def _who(labels: dict[str, str], member_id: str | None) -> str | None:
    if member_id is None:
        return None
    return labels.get(member_id, "?")


def _grid(partitions: list[dict[str, Any]], labels: dict[str, str]) -> list[TopicRow]:
    topics: dict[str, TopicRow] = {}
    for p in partitions:
        name = p.get("topicName") or f"(deleted {p.get('topicId', '')})"
        owner = _who(labels, p.get("owner"))
        revoking = _who(labels, p.get("revokingMember"))
        target = _who(labels, p.get("targetMember"))
        parts = [f"{name} partition {p['partitionIndex']}: "]
        parts.append(f"owned by {owner}" if owner else "unowned")
        if revoking:
            parts.append(f", being revoked from {revoking}")
        if target and target != owner:
            parts.append(f", target {target}")
        behind = None if p.get("lagMs") is None else f"{duration(int(p['lagMs']))} behind"
        if behind:
            parts.append(f", {behind}")
        topics.setdefault(name, TopicRow(name)).cells.append(
            Cell(
                partition=int(p["partitionIndex"]),
                owner=owner,
                revoking=revoking,
                target=target,
                moving=target is not None and target != owner,
                title="".join(parts),
                behind=behind,
            )
        )
    return list(topics.values())


def _offsets(
    partitions: list[dict[str, Any]],
    labels: dict[str, str],
    now_ms: int,
    shards: dict[tuple[str, int], dict[str, Any]],
) -> list[OffsetRow]:
    def shown(p: dict[str, Any]) -> int | str:
        shard = shards.get((p.get("topicName", ""), int(p["partitionIndex"])))
        return int(p["committedOffset"]) if shard is None else shard["checkpoint"] or "-"

    return [
        OffsetRow(
            topic=p.get("topicName") or p.get("topicId", ""),
            partition=int(p["partitionIndex"]),
            owner=_who(labels, p.get("owner")),
            offset=shown(p),
            committed_ago=(
                f"{duration(now_ms - int(p['commitTimestampMs']))} ago"
                if int(p.get("commitTimestampMs", -1)) > 0
                else "-"
            ),
            committed_at=clock_time(int(p.get("commitTimestampMs", -1))),
        )
        for p in partitions
        if int(p.get("committedOffset", -1)) >= 0
    ]


def _names(members: tuple[MemberSeen, ...], labels: dict[str, str]) -> str:
    return ", ".join(
        f"{labels.get(m.member_id, m.member_id[:12])} ({m.client_id or 'no client id'})"
        for m in members
    )


def _timeline_row(entry: Rebalance, labels: dict[str, str]) -> TimelineRow:
    details = []
    for what, members in (
        ("joined", entry.joined),
        ("left", entry.left),
        ("expired", entry.expired),
    ):
        if members:
            details.append(f"{what}: {_names(members, labels)}")
    return TimelineRow(
        at=clock_time(entry.at_ms),
        epochs=f"{entry.from_epoch} → {entry.to_epoch}",
        causes=entry.causes,
        details="; ".join(details),
    )


def _timeline(
    recorded: list[dict[str, Any]], observed: list[Rebalance], labels: dict[str, str]
) -> list[TimelineRow]:
    """Newest first: the coordinator's record of the group's last epoch moves (there before
    this dashboard looked), each with the members this dashboard saw join or leave in it,
    then what it saw before the record's oldest."""
    seen = {e.to_epoch: e for e in observed}
    rows = []
    for i in reversed(range(len(recorded))):
        r = recorded[i]
        epoch = int(r["epoch"])
        entry = seen.pop(epoch, None)
        previous = f"{recorded[i - 1]['epoch']} → " if i else ""
        details = _timeline_row(entry, labels).details if entry else ""
        members = f"{r['memberCount']} member{'' if r['memberCount'] == 1 else 's'}"
        rows.append(
            TimelineRow(
                at=clock_time(int(r["atMs"])),
                epochs=f"{previous}{epoch}",
                causes=(r["cause"],),
                details="; ".join(d for d in (members, details) if d),
            )
        )
    oldest = int(recorded[0]["epoch"]) if recorded else None
    earlier = [e for e in seen.values() if oldest is None or e.to_epoch < oldest]
    return rows + [_timeline_row(e, labels) for e in reversed(earlier)]


def group_page(detail: GroupDetail) -> GroupPage:
    group, now_ms = detail.group, detail.now_ms
    listed = list(group.get("members") or ())
    labels = detail.timeline.labels_for(m["memberId"] for m in listed)
    members = _member_rows(listed, labels, now_ms)
    partitions = list(group.get("partitions") or ())
    return GroupPage(
        group=group,
        now_ms=now_ms,
        members=members,
        topics=_grid(partitions, labels),
        offsets=_offsets(partitions, labels, now_ms, detail.shards),
        timeline=_timeline(
            list(group.get("recentRebalances") or ()), list(detail.timeline.entries), labels
        ),
        watching_since=clock_time(detail.timeline.watching_since_ms or 0),
        truncated=bool(group.get("partitionsTruncated")),
        tasks=_task_rows(members),
        shards=_shard_rows(
            detail.shards,
            {
                (p.get("topicName", ""), int(p["partitionIndex"])): _who(labels, p.get("owner"))
                for p in partitions
            },
        ),
    )
