"""Cost per API call: DynamoDB requests and capacity units, in-process, for classic groups of
10, 1,000 and 5,000 members (and the consumer-protocol and offset APIs once they answer).

    python -m bench.cost [--sizes 10,1000,5000] [--protocol-max 100] [--no-write]
    python -m bench.cost --smoke   # a group of 3, built directly, no barrier hold; writes nothing

The Lambda handlers get API Gateway events; the runtime is configured on a table of a DynamoDB
Local started here. Two figures per call: the store's own estimate
(capacity.metered(), what the deployed functions report as metrics) and an independent audit
that re-reads every item the call wrote, before and after, and charges it by DynamoDB's rules
(bench/common.py CapacityAudit). DynamoDB Local's reported units are shown for reference.

A steady heartbeat writes the member's session deadline only when it is less than one session
away (`groupcoord.session.renewal.skips`, core/session_renewal.py), so it is measured both ways:
renewal not due (reads only) and renewal due (measured with skips 0, where every heartbeat
renews). The row without a suffix is their mean at the default skips, (skips x not due + due) /
(skips + 1): what a steady heartbeat costs on average, and what the hot-key table and
bench/cost_model.py use.

Each group also runs a periodic expiry check (classic) or scan (consumer protocol) in the
heartbeat that finds its next check (`dl`) passed: it reads every member. It is measured for
both protocols at every size, by moving `dl` into the past (bench/common.py
make_group_timer_due, make_consumer_group_timer_due), each sample a heartbeat whose renewal is
not due, so that what the check adds is its row minus the "renewal not due" row.
"""

from __future__ import annotations

import argparse
import random
import re
import sys
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.common import (
    TOPIC,
    Call,
    ConsumerGroupSim,
    InProcess,
    SimMember,
    all_stable,
    assignment_bytes,
    build_classic_group_direct,
    build_consumer_group_direct,
    create_topic,
    dynamodb_local,
    fmt,
    make_consumer_group_timer_due,
    make_group_timer_due,
    parse_args,
    range_assign,
    run_rounds,
    save_results,
    settle_consumer_group,
    subscription_b64,
    table,
    write_section,
)
from groupcoord import runtime
from groupcoord.core.acls import (
    AclBinding,
    AclOperation,
    PatternType,
    PermissionType,
    ResourceType,
)
from groupcoord.core.principals import ANONYMOUS
from groupcoord.service.classic.common import hold_plan
from groupcoord.settings import Settings
from groupcoord.store import capacity, schema
from groupcoord.store.codecs.classic import group_from_item
from groupcoord.store.dynamo import make_client

PARTITIONS = 1000
# `--smoke`: one tiny group, built directly, and held calls answered at once.
SMOKE_SIZE = 3
SMOKE_SETTINGS = {"groupcoord.barrier.hold.ms": "0"}
HEARTBEAT_SAMPLES = 20
# Building groups through the protocol: no barrier hold, a short initial delay, long sessions
# (so that no member expires while thousands of others are still joining).
BUILD_SETTINGS = {"groupcoord.barrier.hold.ms": "0", "group.initial.rebalance.delay.ms": "300"}
SESSION_TIMEOUT_MS = 300_000
COMMAND = "python -m bench.cost"
# Steady heartbeats: the scenario names (others read them from bench/.results/cost.json), the
# suffixes of the two measured kinds, and the default number of heartbeats after a renewal
# that only read.
HEARTBEAT = "heartbeat, steady state"
CONSUMER_HEARTBEAT = "consumer-group-heartbeat, steady state"
NOT_DUE = ", renewal not due"
DUE = ", renewal due"
SKIPS_SETTING = "groupcoord.session.renewal.skips"
RENEWAL_SKIPS = Settings().session_renewal_skips
# The periodic expiry check of a group (classic) or scan (consumer protocol): heartbeats that
# find the group's next check (`dl`) due, measured by moving it into the past.
CLASSIC_TIMER = "heartbeat, group timer due (expiry check)"
CONSUMER_TIMER = "consumer-group-heartbeat, group timer due (expiry scan)"
TIMER_SAMPLES = 3
# Before the timer samples, members whose session ends within this are renewed, so that the
# check finds nobody to expire (the scenario is a Stable group's routine check).
TIMER_MARGIN_MS = 30_000
# The fields of a Row that count requests and units per call.
UNIT_FIELDS = (
    "requests",
    "est_read",
    "est_write",
    "audit_read",
    "audit_write",
    "audit_index_write",
)
# The fields of a Row that are means per call (blended by weight in Row.blend).
MEAN_FIELDS = (*UNIT_FIELDS, "reported", "seconds")


@dataclass
class Row:
    scenario: str
    members: str
    build: str
    samples: int = 0
    requests: float = 0.0
    max_requests: int = 0
    est_read: float = 0.0
    est_write: float = 0.0
    audit_read: float = 0.0
    audit_write: float = 0.0
    audit_index_write: float = 0.0
    reported: float = 0.0
    seconds: float = 0.0  # mean in-process handler time (DynamoDB Local, audit on)
    largest_item: int = 0
    operations: dict[str, float] = field(default_factory=dict)
    # Mean units per call on the partition keys of each kind (key_kind()).
    key_reads: dict[str, float] = field(default_factory=dict)
    key_writes: dict[str, float] = field(default_factory=dict)
    status: str = ""
    note: str = ""

    @classmethod
    def of(cls, scenario: str, members: str, build: str, calls: list[Call], note: str = "") -> Row:
        n = len(calls)
        row = cls(scenario, members, build, samples=n, note=note)
        ops: dict[str, float] = {}
        for call in calls:
            row.requests += call.usage.requests / n
            row.max_requests = max(row.max_requests, call.usage.requests)
            row.est_read += call.usage.read_units / n
            row.est_write += call.usage.write_units / n
            row.reported += call.usage.reported_units / n
            row.seconds += call.seconds / n
            for op, count in call.usage.by_operation.items():
                ops[op] = ops.get(op, 0) + count / n
            if call.audited is not None:
                row.audit_read += call.audited.read_units / n
                row.audit_write += call.audited.write_units / n
                row.audit_index_write += call.audited.index_write_units / n
                row.largest_item = max(row.largest_item, call.audited.largest_item)
                for mine, theirs in (
                    (row.key_reads, call.audited.reads_by_key),
                    (row.key_writes, call.audited.writes_by_key),
                ):
                    for key, units in theirs.items():
                        kind = key_kind(key)
                        mine[kind] = mine.get(kind, 0.0) + units / n
        row.operations = ops
        row.status = ", ".join(sorted({_status(c) for c in calls}))
        return row

    @classmethod
    def blend(cls, scenario: str, parts: Sequence[tuple[Row, float]], note: str = "") -> Row:
        """The weighted mean of measured rows (weights summing to 1): per-call means are
        blended, maxima kept."""
        first = parts[0][0]
        row = cls(scenario, first.members, first.build, note=note)
        for part, weight in parts:
            row.samples += part.samples
            row.max_requests = max(row.max_requests, part.max_requests)
            row.largest_item = max(row.largest_item, part.largest_item)
            for name in MEAN_FIELDS:
                setattr(row, name, getattr(row, name) + weight * getattr(part, name))
            for mine, theirs in (
                (row.operations, part.operations),
                (row.key_reads, part.key_reads),
                (row.key_writes, part.key_writes),
            ):
                for key, value in theirs.items():
                    mine[key] = mine.get(key, 0.0) + weight * value
        statuses = {s for part, _ in parts for s in part.status.split(", ") if s}
        row.status = ", ".join(sorted(statuses))
        return row

    @property
    def skipped(self) -> bool:
        return self.samples == 0


def key_kind(key: str) -> str:
    """A partition key with the group id and shard number abstracted: G#<group>#M<n>."""
    key = re.sub(r"cost-[a-z]-[0-9a-f]{8}", "<group>", key)
    return re.sub(r"(\D)\d+$", r"\1<n>", key)


def _status(call: Call) -> str:
    code = call.error_code
    return f"{call.status}" + (f"/{code}" if code not in (None, 0) else "")


def _ops(operations: dict[str, float]) -> str:
    short = {
        "get_item": "Get",
        "query": "Query",
        "update_item": "Update",
        "put_item": "Put",
        "delete_item": "Delete",
        "transact_write_items": "TransactWrite",
        "batch_write_item": "BatchWrite",
        "batch_get_item": "BatchGet",
    }
    return " ".join(f"{short.get(op, op)}x{fmt(n)}" for op, n in sorted(operations.items()))


# --- steady heartbeats: session renewal due or not ---


@contextmanager
def renewal_skips(coordinator: InProcess, skips: int) -> Iterator[None]:
    """Calls in this block run with `groupcoord.session.renewal.skips` = `skips`, the
    coordinator's other settings unchanged."""
    saved = coordinator.overrides
    coordinator.configure({**saved, SKIPS_SETTING: str(skips)})
    try:
        yield
    finally:
        coordinator.configure(saved)


def steady_samples(
    coordinator: InProcess, beat: Callable[[str], Call], candidates: Sequence[str]
) -> tuple[list[Call], list[Call]]:
    """Steady heartbeats of randomly chosen members, (renewal not due, renewal due). Not due:
    each member heartbeats once first (renewing its session if due), so that the measured
    heartbeats find it a whole session ahead. Due: the same members with skips 0, where every
    heartbeat renews (the same reads and the same conditional write of the member item as a
    renewal that falls due at the default)."""
    sample = [random.choice(candidates) for _ in range(HEARTBEAT_SAMPLES)]
    with renewal_skips(coordinator, max(1, RENEWAL_SKIPS)):
        for member_id in dict.fromkeys(sample):
            beat(member_id)
        not_due = [beat(m) for m in sample]
    with renewal_skips(coordinator, 0):
        due = [beat(m) for m in sample]
    return not_due, due


def steady_rows(
    scenario: str, label: str, build: str, not_due: list[Call], due: list[Call]
) -> list[Row]:
    """The two measured kinds of a steady heartbeat and, when both were met, their mean at the
    default skips under the scenario's own name."""
    every = RENEWAL_SKIPS + 1
    rows = []
    if not_due:
        note = f"reads only: {RENEWAL_SKIPS} of every {every} steady heartbeats (skips default)"
        rows.append(Row.of(scenario + NOT_DUE, label, build, not_due, note))
    if due:
        note = (
            f"writes the session deadline: 1 of every {every} steady heartbeats (measured with "
            "skips 0, where every heartbeat is one)"
        )
        rows.append(Row.of(scenario + DUE, label, build, due, note))
    if not_due and due:
        quiet, renewing = rows
        weight = RENEWAL_SKIPS / every
        note = f"mean at skips {RENEWAL_SKIPS}: ({RENEWAL_SKIPS} x not due + due) / {every}"
        rows.insert(0, Row.blend(scenario, [(quiet, weight), (renewing, 1 - weight)], note))
    return rows


# --- the periodic expiry check: group timer due ---


def renew_short_sessions(
    beat: Callable[[str], Call], deadlines: dict[str, int], now_ms: int
) -> None:
    """Heartbeat (unmeasured) every member whose session ends within TIMER_MARGIN_MS."""
    for member_id, deadline in deadlines.items():
        if deadline < now_ms + TIMER_MARGIN_MS:
            beat(member_id)


def timer_samples(
    coordinator: InProcess,
    beat: Callable[[str], Call],
    force_due: Callable[[], None],
    deadline_of: Callable[[str], int],
    candidates: Sequence[str],
) -> tuple[list[Call], int]:
    """Heartbeats that find the group's next check forced due (`force_due`), each of a member
    whose renewal is not due, so that such a call is a "renewal not due" heartbeat plus the
    check: the member heartbeats once first (renewing if due), then the check is forced due
    and it heartbeats again. Returns the calls and how many of them renewed the session
    (`deadline_of` moved; should be none)."""
    calls, renewed = [], 0
    chosen = random.sample(list(candidates), min(TIMER_SAMPLES, len(candidates)))
    with renewal_skips(coordinator, max(1, RENEWAL_SKIPS)):
        for member_id in chosen:
            beat(member_id)
            force_due()
            before = deadline_of(member_id)
            calls.append(beat(member_id))
            renewed += deadline_of(member_id) != before
    return calls, renewed


def timer_row(
    scenario: str, label: str, build: str, calls: list[Call], renewed: int, ok: list[bool]
) -> Row:
    """The row of the check's samples; its note says what went wrong, if anything (marked
    "!!!", which timer_check() reports)."""
    checked = sum("query" in c.usage.by_operation for c in calls)
    note = (
        f"{len(calls)} heartbeats, renewal not due, that found the group's next check forced "
        "due: the check reads every member; it adds this row minus the renewal-not-due row, "
        "once per group per check"
    )
    problems = []
    if checked < len(calls):
        problems.append(f"only {checked} of {len(calls)} read the members")
    if renewed:
        problems.append(f"{renewed} renewed the session")
    if not all(ok):
        problems.append(f"{ok.count(False)} not routine (an error, an assignment, a fencing)")
    row = Row.of(scenario, label, build, calls, note)
    if problems:
        row.note += "; !!! " + ", ".join(problems) + " !!!"
    return row


# --- classic groups ---


def _members(coordinator: InProcess, group_id: str, size: int) -> list[SimMember]:
    return [
        SimMember(coordinator.call, group_id, SESSION_TIMEOUT_MS, PARTITIONS, index=i)
        for i in range(size)
    ]


def build_stable(coordinator: InProcess, group_id: str, size: int, protocol: bool) -> list[str]:
    """A Stable group; returns member ids (leader first). Generation is 1 when built directly."""
    if not protocol:
        return build_classic_group_direct(coordinator, group_id, size, partitions=PARTITIONS)
    coordinator.configure(BUILD_SETTINGS)
    members = _members(coordinator, group_id, size)
    run_rounds(members, lambda: all_stable(members, PARTITIONS), max_rounds=200)
    coordinator.configure({})
    leader = next(m for m in members if m.members)
    return [leader.member_id] + [m.member_id for m in members if m is not leader]


def build_completing(
    coordinator: InProcess, group_id: str, size: int, protocol: bool
) -> tuple[list[str], int]:
    """A group in CompletingRebalance (everyone joined, nobody synced): (ids, generation)."""
    if not protocol:
        ids = build_classic_group_direct(
            coordinator, group_id, size, partitions=PARTITIONS, stable=False
        )
        return ids, 1
    coordinator.configure(BUILD_SETTINGS)
    members = _members(coordinator, group_id, size)
    for member in members:
        member.stop_at_sync = True
    run_rounds(members, lambda: all(m.state == "sync" for m in members), max_rounds=200)
    coordinator.configure({})
    leader = next(m for m in members if m.members)
    ids = [leader.member_id] + [m.member_id for m in members if m is not leader]
    return ids, leader.generation


def classic_rows(coordinator: InProcess, size: int, protocol: bool) -> list[Row]:
    build = "protocol" if protocol else "direct"
    label = f"{size:,}"
    rows = stable_group_rows(coordinator, size, protocol, label, build)
    rows += completing_group_rows(coordinator, size, protocol, label, build)
    rows += consumer_rows(coordinator, size, protocol, label)
    return rows


def stable_group_rows(
    coordinator: InProcess, size: int, protocol: bool, label: str, build: str
) -> list[Row]:
    """Group A, Stable: heartbeats, offsets, the periodic expiry check, a new member's join."""
    started = time.perf_counter()
    group_a = f"cost-a-{uuid.uuid4().hex[:8]}"
    ids = build_stable(coordinator, group_a, size, protocol)
    generation = _generation(coordinator, group_a)
    print(f"  built {size:,}-member Stable group ({build}) in {time.perf_counter() - started:.1f}s")

    def heartbeat(member_id: str) -> Call:
        body = {"groupId": group_a, "generationId": generation, "memberId": member_id}
        return coordinator.call("heartbeat", body)

    not_due, due = steady_samples(coordinator, heartbeat, ids)
    rows = steady_rows(HEARTBEAT, label, build, not_due, due)
    rows += offset_rows(coordinator, group_a, ids[1], generation, label, build)
    rows.append(classic_timer_row(coordinator, group_a, heartbeat, ids, label, build))
    return rows + join_rows(coordinator, group_a, ids, label, build)


def join_rows(
    coordinator: InProcess, group_id: str, ids: list[str], label: str, build: str
) -> list[Row]:
    """A new member's join into a Stable group, then a known member's while the barrier is
    open (registered, and re-sent after its 202)."""
    join = {
        "groupId": group_id,
        "memberId": "",
        "sessionTimeoutMs": SESSION_TIMEOUT_MS,
        "protocolType": "consumer",
        "protocols": [{"name": "range", "metadata": subscription_b64()}],
    }
    first = coordinator.call("join-group", join)
    rows = [Row.of("join-group, new member: id request", label, build, [first])]
    second = coordinator.call("join-group", {**join, "memberId": first.body["memberId"]})
    hold = coordinator.settings.barrier_hold_ms
    rows.append(
        Row.of(
            "join-group, new member: registered (starts the rebalance)",
            label,
            build,
            [second],
            f"held {second.seconds:.1f}s (barrier.hold.ms {hold}; hold_plan)",
        )
    )
    # The rebalance is open: the members it waits for rejoin (known members), then re-send.
    plan = hold_plan(len(ids) + 1, hold)  # the new member above joined
    rejoin = {**join, "memberId": ids[-1]}
    known = coordinator.call("join-group", rejoin)
    rows.append(
        Row.of(
            "join-group, known member: registered (barrier open)",
            label,
            build,
            [known],
            f"held {known.seconds:.1f}s (at most {plan.hold_ms} ms, polling every "
            f"{plan.poll_interval_s:g} s)",
        )
    )
    resent = coordinator.call("join-group", rejoin)
    rows.append(
        Row.of(
            "join-group, known member: re-sent after 202 (barrier open)",
            label,
            build,
            [resent],
            f"held {resent.seconds:.1f}s; retryAfterMs {resent.body.get('retryAfterMs')}",
        )
    )
    return rows


def completing_group_rows(
    coordinator: InProcess, size: int, protocol: bool, label: str, build: str
) -> list[Row]:
    """Group B, CompletingRebalance: syncs, then a leave in Stable."""
    group_b = f"cost-b-{uuid.uuid4().hex[:8]}"
    ids, generation = build_completing(coordinator, group_b, size, protocol)
    leader, followers = ids[0], ids[1:]
    hold = coordinator.settings.barrier_hold_ms

    def sync(member_id: str, assignments: list[dict[str, Any]] | None = None) -> Call:
        body: dict[str, Any] = {
            "groupId": group_b,
            "generationId": generation,
            "memberId": member_id,
            "protocolType": "consumer",
            "protocolName": "range",
        }
        if assignments is not None:
            body["assignments"] = assignments
        return coordinator.call("sync-group", body)

    rows = []
    if followers:
        held = sync(followers[0])
        rows.append(
            Row.of(
                "sync-group, follower before the leader",
                label,
                build,
                [held],
                f"held {held.seconds:.1f}s (barrier.hold.ms {hold}; hold_plan)",
            )
        )
    plan = range_assign(ids, PARTITIONS)
    assignments = [
        {"memberId": m, "assignment": _b64(assignment_bytes(p))} for m, p in plan.items()
    ]
    rows.append(Row.of("sync-group, leader", label, build, [sync(leader, assignments)]))
    if len(followers) > 1:
        rows.append(Row.of("sync-group, follower", label, build, [sync(followers[1])]))
    leave = {"groupId": group_b, "members": [{"memberId": followers[-1] if followers else leader}]}
    rows.append(Row.of("leave-group", label, build, [coordinator.call("leave-group", leave)]))
    return rows


def classic_timer_row(
    coordinator: InProcess,
    group_id: str,
    heartbeat: Callable[[str], Call],
    ids: Sequence[str],
    label: str,
    build: str,
) -> Row:
    """The classic group's periodic expiry check (service/classic_group.py settle: claim, read
    every member, commit the next check), forced due TIMER_SAMPLES times."""
    groups = coordinator.classic_groups()

    def group() -> Any:
        item = groups.group_item(group_id)
        assert item is not None
        return group_from_item(item)

    def sessions() -> dict[str, int]:
        return {m.member_id: m.session_deadline_ms for m in groups.members(group(), payloads=False)}

    def deadline_of(member_id: str) -> int:
        member = groups.member(group(), member_id)
        assert member is not None
        return member.session_deadline_ms

    renew_short_sessions(heartbeat, sessions(), runtime.now_ms())
    calls, renewed = timer_samples(
        coordinator,
        heartbeat,
        lambda: make_group_timer_due(coordinator, group_id),
        deadline_of,
        ids[1:] or ids,
    )
    ok = [c.status == 200 and c.error_code == 0 for c in calls]
    return timer_row(CLASSIC_TIMER, label, build, calls, renewed, ok)


def _b64(data: bytes) -> str:
    import base64

    return base64.b64encode(data).decode()


def _generation(coordinator: InProcess, group_id: str) -> int:
    item = coordinator.classic_groups().group_item(group_id)
    assert item is not None
    return int(item["generation"])


# --- offsets and consumer-protocol heartbeats ---


def _skip(scenario: str, label: str, why: str) -> Row:
    """A row for a scenario that could not be measured (the setup was answered an error)."""
    return Row(scenario, label, "-", note=why)


def offset_rows(
    coordinator: InProcess, group_id: str, member_id: str, generation: int, label: str, build: str
) -> list[Row]:
    def commit(partitions: range, offset: int) -> Call:
        body = {
            "groupId": group_id,
            "generationIdOrMemberEpoch": generation,
            "memberId": member_id,
            "topics": [
                {
                    "name": TOPIC,
                    "partitions": [
                        {"partitionIndex": p, "committedOffset": offset} for p in partitions
                    ],
                }
            ],
        }
        return coordinator.call("offset-commit", body)

    rows: list[Row] = []
    for count in (1, 100):
        commit(range(count), 1)  # the first commit creates the offsets; measure updates
        rows.append(
            Row.of(
                f"offset-commit, {count} partition{'s' * (count > 1)}",
                label,
                build,
                [commit(range(count), 2)],
            )
        )
    body = {
        "groups": [
            {
                "groupId": group_id,
                "topics": [{"name": TOPIC, "partitionIndexes": list(range(100))}],
            }
        ]
    }
    fetch = coordinator.call("offset-fetch", body)
    rows.append(Row.of("offset-fetch, 100 partitions", label, build, [fetch]))
    return rows


def consumer_rows(
    coordinator: InProcess, size: int, protocol: bool, label: str, timer: bool = True
) -> list[Row]:
    scenario = CONSUMER_HEARTBEAT
    if not protocol:
        started = time.perf_counter()
        sim, times = build_consumer_group_direct(
            coordinator, f"cost-c-{uuid.uuid4().hex[:8]}", size
        )
        print(
            f"  built {size:,}-member consumer group (direct) in "
            f"{time.perf_counter() - started:.1f}s "
            + ", ".join(f"{k} {v:.1f}s" for k, v in times.items())
        )
        build, candidates = "direct", sim.ids[1:]
    else:
        sim = ConsumerGroupSim(coordinator.call, f"cost-c-{uuid.uuid4().hex[:8]}", size)
        failed = settle_consumer_group(coordinator, sim)
        if failed is not None:
            return [_skip(scenario, label, f"answered {_status(failed)}: {failed.body}")]
        build, candidates = "protocol", sim.ids
    not_due, due = steady_samples(coordinator, sim.beat, candidates)
    calls = not_due + due
    bad = [c for c in calls if c.status != 200 or c.error_code != 0 or c.body.get("assignment")]
    if bad:
        return [_skip(scenario, label, f"answered {_status(bad[0])}: {bad[0].body}")]
    rows = consumer_heartbeat_rows(scenario, label, build, not_due, due)
    if timer:
        rows.append(consumer_timer_row(coordinator, sim, candidates, label, build))
    return rows


def consumer_timer_row(
    coordinator: InProcess, sim: ConsumerGroupSim, candidates: Sequence[str], label: str, build: str
) -> Row:
    """The consumer group's periodic expiry scan (service/consumer/expiry.py: claim, read every
    member, write the next deadline), forced due TIMER_SAMPLES times."""
    from groupcoord.service.consumer.common import reload

    cs = coordinator.store.consumer

    def group() -> Any:
        found = reload(cs, sim.group_id)
        assert found is not None
        return found

    def deadline_of(member_id: str) -> int:
        member = cs.member(group(), member_id, consistent=True)
        assert member is not None
        return member.session_deadline

    before = group()
    sessions = {m.member_id: m.session_deadline for m in cs.members(before)}
    renew_short_sessions(sim.beat, sessions, runtime.now_ms())
    calls, renewed = timer_samples(
        coordinator,
        sim.beat,
        lambda: make_consumer_group_timer_due(coordinator, sim.group_id),
        deadline_of,
        candidates,
    )
    after = group()
    ok = [c.status == 200 and c.error_code == 0 and not c.body.get("assignment") for c in calls]
    if (after.member_count, after.group_epoch) != (before.member_count, before.group_epoch):
        ok.append(False)  # the scan fenced someone: not a routine check
    return timer_row(CONSUMER_TIMER, label, build, calls, renewed, ok)


def consumer_heartbeat_rows(
    scenario: str, label: str, build: str, not_due: list[Call], due: list[Call]
) -> list[Row]:
    """Steady heartbeats, apart from any that found the group's next check (`dl`) passed and
    scanned the members (a Query per member shard): that happens once per group per check
    (every 2 heartbeat intervals while the group reconciles, else at the earliest session
    deadline), not once per heartbeat; it is measured on its own (consumer_timer_row), so a
    sample that met it by chance is left out."""

    def scanned(call: Call) -> bool:
        return "query" in call.usage.by_operation

    met = sum(scanned(c) for c in not_due + due)
    if met:
        print(f"  {met} steady sample(s) met the expiry scan by chance: left out")
    return steady_rows(
        scenario,
        label,
        build,
        [c for c in not_due if not scanned(c)],
        [c for c in due if not scanned(c)],
    )


def authorized_rows(coordinator: InProcess) -> list[Row]:
    """The consumer heartbeat of a 10-member group with the authorizer on, its ACLs allowing
    the caller: the instance's copy of the ACLs is fresh (groupcoord.acl.cache.ms), so a steady
    heartbeat reads nothing more than without it (docs/authorization.md, "The instance
    cache")."""
    coordinator.configure({"groupcoord.authorizer.enabled": "true"})
    coordinator.store.acls.create(
        AclBinding(
            resource_type=resource_type,
            resource_name="*",
            pattern_type=PatternType.LITERAL,
            principal=ANONYMOUS,  # the bench's events carry no identity
            host="*",
            operation=AclOperation.ALL,
            permission=PermissionType.ALLOW,
        )
        for resource_type in (ResourceType.GROUP, ResourceType.TOPIC)
    )
    try:
        rows = consumer_rows(coordinator, 10, True, "10", timer=False)
    finally:
        coordinator.configure({})
    return [replace(r, scenario=f"{r.scenario}, authorizer on") for r in rows]


def big_member_rows(coordinator: InProcess) -> list[Row]:
    """A heartbeat and a commit's fence are billed on the whole member item they update: 10
    members over 5,000 partitions (500 each), built directly. The assignment is on the
    member's payload item, not on the member item (store/classic/)."""
    group_id = f"cost-d-{uuid.uuid4().hex[:8]}"
    ids = build_classic_group_direct(coordinator, group_id, 10, partitions=5000)
    with renewal_skips(coordinator, 0):  # a heartbeat that renews: the write is the point
        beats = [
            coordinator.call("heartbeat", {"groupId": group_id, "generationId": 1, "memberId": m})
            for m in ids[1:6]
        ]

    def commit(member_id: str, offset: int) -> Call:
        partition = {"partitionIndex": 0, "committedOffset": offset}
        body = {
            "groupId": group_id,
            "generationIdOrMemberEpoch": 1,
            "memberId": member_id,
            "topics": [{"name": TOPIC, "partitions": [partition]}],
        }
        return coordinator.call("offset-commit", body)

    commit(ids[1], 1)  # the first commit creates the offset and the retention check
    commits = [commit(m, 2) for m in ids[1:6]]
    scenario = "{}, 500 partitions per member"
    return [
        Row.of(scenario.format(HEARTBEAT + DUE), "10", "direct", beats, "skips 0"),
        Row.of(scenario.format("offset-commit, 1 partition"), "10", "direct", commits),
    ]


# --- size-independent APIs ---


SINK_WRITES = 5  # counters one batch updates (docs/exactly-once.md)


def sink_rows(coordinator: InProcess, endpoint: str) -> list[Row]:
    """A batch's commit that carries its outputs (one transaction: fence, idempotency marker,
    offset, writes) next to a plain commit plus the same outputs written on their own
    (at-least-once). The sink items are another table's: not in the audit, so the audited
    columns show the coordinator's table only; est. counts both."""
    sink = f"sink-{uuid.uuid4().hex[:8]}"
    client = make_client(endpoint_url=endpoint)
    client.create_table(
        TableName=sink,
        KeySchema=[{"AttributeName": "k", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "k", "AttributeType": "S"}],
        BillingMode="PAY_PER_REQUEST",
    )
    coordinator.configure({"groupcoord.sink.tables": sink})
    group = f"sink-{uuid.uuid4().hex[:8]}"

    def commit(offset: int, writes: bool) -> Call:
        body: dict[str, Any] = {
            "groupId": group,
            "topics": [
                {"name": TOPIC, "partitions": [{"partitionIndex": 0, "committedOffset": offset}]}
            ],
        }
        if writes:
            body["writes"] = [
                {
                    "Update": {
                        "TableName": sink,
                        "Key": {"k": {"S": f"key-{i}"}},
                        "UpdateExpression": "ADD #n :c",
                        "ExpressionAttributeNames": {"#n": "n"},
                        "ExpressionAttributeValues": {":c": {"N": "3"}},
                    }
                }
                for i in range(SINK_WRITES)
            ]
            body["idempotencyKey"] = uuid.uuid4().hex
        return coordinator.call("offset-commit", body)

    commit(1, writes=True)  # creates the group, the offset and the counters
    with_writes = [commit(2 + i, writes=True) for i in range(5)]
    plain = [commit(10 + i, writes=False) for i in range(5)]
    # What the at-least-once twin adds on its own: one UpdateItem per counter, each under 1 KB.
    alone = SINK_WRITES * capacity.write_units(100, transactional=False)
    coordinator.configure({})
    return [
        Row.of(
            f"offset-commit, 1 partition + {SINK_WRITES} ADD writes (exactly-once)",
            "-",
            "-",
            with_writes,
            note="one TransactWriteItems: fence, marker, offset, writes",
        ),
        Row.of(
            "offset-commit, 1 partition (the at-least-once twin)",
            "-",
            "-",
            plain,
            note=f"+ {SINK_WRITES} UpdateItem requests, {alone:g} WCU, written by the worker",
        ),
    ]


def other_rows(coordinator: InProcess) -> list[Row]:
    rows = [
        Row.of(
            "find-coordinator",
            "-",
            "-",
            [
                coordinator.call("find-coordinator", {"keyType": 0, "coordinatorKeys": ["g"]})
                for _ in range(5)
            ],
        ),
        Row.of(
            "metadata, all topics (2 topics)",
            "-",
            "-",
            [coordinator.call("metadata", {"topics": None}) for _ in range(5)],
        ),
        Row.of(
            "metadata, one topic by name",
            "-",
            "-",
            [coordinator.call("metadata", {"topics": [{"name": TOPIC}]}) for _ in range(5)],
        ),
    ]
    creates = [
        coordinator.call(
            "create-topics",
            {"topics": [{"name": f"t-{uuid.uuid4().hex[:8]}", "numPartitions": PARTITIONS}]},
        )
        for _ in range(5)
    ]
    rows.append(Row.of(f"create-topics, 1 topic of {PARTITIONS:,} partitions", "-", "-", creates))
    return rows


# --- output ---

HEADERS = (
    "API call",
    "members",
    "built by",
    "DynamoDB requests",
    "est. RCU",
    "est. WCU",
    "audited RCU",
    "audited WCU (table + GSI)",
    "DynamoDB Local's units",
    "operations",
    "answer",
    "note",
)


def render(rows: list[Row]) -> str:
    lines = []
    for r in rows:
        if r.skipped:
            lines.append((r.scenario, r.members, r.build, "", "", "", "", "", "", "", "", r.note))
            continue
        audit_w = f"{fmt(r.audit_write)} + {fmt(r.audit_index_write)}"
        lines.append(
            (
                r.scenario,
                r.members,
                r.build,
                fmt(r.requests)
                + (f" (max {r.max_requests})" if r.max_requests > r.requests + 1e-9 else ""),
                fmt(r.est_read),
                fmt(r.est_write),
                fmt(r.audit_read),
                audit_w,
                fmt(r.reported),
                _ops(r.operations),
                r.status,
                r.note,
            )
        )
    return table(HEADERS, lines)


def heartbeat_growth(rows: list[Row]) -> list[str]:
    """Warnings when the steady-state heartbeat costs more in a bigger group."""
    warnings: list[str] = []
    for scenario in (
        f"{base}{kind}" for base in (HEARTBEAT, CONSUMER_HEARTBEAT) for kind in ("", NOT_DUE, DUE)
    ):
        found = [r for r in rows if r.scenario == scenario and not r.skipped]
        if len(found) < 2:
            continue
        small, large = found[0], found[-1]
        for name in UNIT_FIELDS:
            a, b = getattr(small, name), getattr(large, name)
            if b > a + 1e-9:
                warnings.append(
                    f"!!! {scenario.upper()} GROWS WITH GROUP SIZE: {name} {fmt(a, 2)} at "
                    f"{small.members} members -> {fmt(b, 2)} at {large.members} members !!!"
                )
    return warnings


def renewal_check(rows: list[Row]) -> list[str]:
    """Warnings when a steady heartbeat whose renewal is not due wrote anything, or one whose
    renewal is due wrote nothing (the two rows would then not measure what they say)."""
    warnings = []
    for r in rows:
        if r.skipped:
            continue
        wrote = r.audit_write + r.audit_index_write
        if NOT_DUE in r.scenario and wrote > 1e-9:
            warnings.append(
                f"!!! {r.scenario.upper()} ({r.members}) WROTE {fmt(wrote, 2)} WCU a call !!!"
            )
        if DUE in r.scenario and wrote < 1 - 1e-9:
            warnings.append(
                f"!!! {r.scenario.upper()} ({r.members}) WROTE ONLY {fmt(wrote, 2)} WCU a call !!!"
            )
    return warnings


def timer_check(rows: list[Row]) -> list[str]:
    """Warnings for group-timer rows missing at a measured size, or whose samples were not
    what they say (marked in their notes)."""
    warnings = []
    sizes = sorted(
        {r.members for r in rows if r.scenario in (HEARTBEAT, CONSUMER_HEARTBEAT)},
        key=lambda m: int(m.replace(",", "")),
    )
    for scenario in (CLASSIC_TIMER, CONSUMER_TIMER):
        for size in sizes:
            found = [r for r in rows if r.scenario == scenario and r.members == size]
            if not found or found[0].skipped:
                warnings.append(f"!!! {scenario.upper()} NOT MEASURED AT {size} MEMBERS !!!")
            elif "!!!" in found[0].note:
                problem = found[0].note.split("!!!")[1].strip()
                warnings.append(f"!!! {scenario.upper()} ({size}): {problem.upper()} !!!")
    return warnings


def findings(rows: list[Row]) -> list[str]:
    notes = []
    under = [
        r
        for r in rows
        if not r.skipped and r.est_write + 1e-9 < r.audit_write + r.audit_index_write
    ]
    if under:
        names = ", ".join(f"{r.scenario} ({r.members})" for r in under[:6])
        notes.append(
            "The store's estimate is below the audit for: "
            + names
            + (" ..." if len(under) > 6 else "")
            + ". The estimate charges an UpdateItem on its key and new values only "
            "(DynamoDB bills the whole item, the larger of before and after) and leaves GSI "
            "writes out."
        )
    largest = max((r.largest_item for r in rows), default=0)
    notes.append(f"Largest item written in these calls: {largest:,} bytes (DynamoDB limit 400 KB).")
    return notes


# --- hot keys (docs/architecture.md, "No hot key") ---

READ_LIMIT = 3000  # strongly consistent 4 KB reads per second on one partition
WRITE_LIMIT = 1000  # 1 KB writes per second on one partition
HEARTBEAT_S = 5.0
COMMIT_S = 5.0  # Kafka's auto.commit.interval.ms
PARTITIONS_AT_SCALE = 100_000


def shards_of(kind: str) -> int:
    """Over how many partition keys calls of one kind spread (the key formats of schema.py)."""
    defaults = Settings()
    if kind.endswith(("#M<n>", "#S<n>", "#J<n>", "#P<n>")):
        return defaults.member_shards
    if kind.startswith("O#"):
        return schema.OFFSET_SHARDS
    if kind.startswith(f"{schema.DEADLINE_INDEX}:"):
        return defaults.deadline_shards
    if kind.startswith(f"{schema.LISTING_INDEX}:"):
        return schema.GROUP_LISTING_SHARDS
    return 1


def workloads(members: int, hold_ms: int) -> list[tuple[str, float, float, str]]:
    """(scenario, calls/s whose reads count, calls/s whose writes count, what it stands for)
    in a group of `members`. In a rebalance every member registers its join (or sync) once,
    all within one heartbeat interval, and is then held and re-sent until the barrier closes:
    one call per hold + retry-after (hold_plan) each."""
    every = f"{members:,} members, each every {HEARTBEAT_S:.0f} s"
    steady = members / HEARTBEAT_S
    plan = hold_plan(members, hold_ms)
    cycle_s = (plan.hold_ms + plan.retry_after_ms) / 1000
    joining = f"a rebalance: {members:,} members rejoining within {HEARTBEAT_S:.0f} s"
    held = (
        f"a rebalance: {members:,} members held {plan.hold_ms / 1000:g} s and re-sent after "
        f"{plan.retry_after_ms / 1000:g} s"
    )
    scale_out = members // 10
    return [
        ("heartbeat, steady state", steady, steady, every),
        ("consumer-group-heartbeat, steady state", steady, steady, every),
        ("offset-commit, 1 partition", members / COMMIT_S, members / COMMIT_S, every),
        (
            "offset-commit, 100 partitions",
            PARTITIONS_AT_SCALE / 100 / COMMIT_S,
            PARTITIONS_AT_SCALE / 100 / COMMIT_S,
            f"{PARTITIONS_AT_SCALE:,} partitions committed every {COMMIT_S:.0f} s, 100 a call",
        ),
        (
            "join-group, new member: registered (starts the rebalance)",
            scale_out / HEARTBEAT_S,
            scale_out / HEARTBEAT_S,
            f"{scale_out:,} new members joining within {HEARTBEAT_S:.0f} s",
        ),
        (
            "join-group, known member: registered (barrier open)",
            steady,
            steady,
            joining,
        ),
        (
            "join-group, known member: re-sent after 202 (barrier open)",
            members / cycle_s,
            members / cycle_s,
            held,
        ),
        ("sync-group, follower before the leader", members / cycle_s, members / cycle_s, held),
    ]


def hot_keys(rows: list[Row], hold_ms: int) -> tuple[str, list[str]]:
    """Per-key load at the largest measured group size, from each call's audited per-key units."""
    sized = [r for r in rows if not r.skipped and r.members != "-"]
    members = max(int(r.members.replace(",", "")) for r in sized)
    lines, broken = [], []
    for scenario, read_rate, write_rate, meaning in workloads(members, hold_ms):
        found = [r for r in sized if r.scenario == scenario]
        if not found:
            continue
        row = max(found, key=lambda r: int(r.members.replace(",", "")))
        for what, per_kind, limit, rate in (
            ("reads", row.key_reads, READ_LIMIT, read_rate),
            ("writes", row.key_writes, WRITE_LIMIT, write_rate),
        ):
            for kind, units in sorted(per_kind.items()):
                load = rate * units / shards_of(kind)
                if load < 0.05 * limit:
                    continue
                over = f"**BREAKS the hot-key limit** ({load / limit:.0f}x)"
                verdict = "ok" if load <= limit else over
                lines.append(
                    (
                        scenario,
                        meaning,
                        f"{kind} ({shards_of(kind)} key{'s' * (shards_of(kind) > 1)})",
                        f"{fmt(load, 0)} {what}/s",
                        f"{limit:,}",
                        verdict,
                        row.members,
                    )
                )
                if load > limit:
                    broken.append(f"{scenario}: {fmt(load, 0)} {what}/s on {kind} ({meaning})")
    headers = (
        "API call",
        "load",
        "partition key",
        "per key",
        "limit",
        "verdict",
        "units measured at",
    )
    return table(headers, lines), broken


Scenario = Callable[[], list[Row]]


def measure(
    sizes: Sequence[int], protocol_max: int, overrides: dict[str, str] | None = None
) -> list[Row]:
    """Every scenario's row: the classic and consumer-protocol groups on a table per size,
    then the others on one table of their own (`overrides`: settings of every table)."""
    rows: list[Row] = []
    with dynamodb_local() as endpoint:
        for size in sizes:  # a table per size
            print(f"group of {size:,} members")
            coordinator = InProcess(endpoint, overrides, audit=True)
            create_topic(coordinator, TOPIC, PARTITIONS)
            rows += classic_rows(coordinator, size, size <= protocol_max)
        coordinator = InProcess(endpoint, overrides, audit=True)
        create_topic(coordinator, TOPIC, PARTITIONS)
        create_topic(coordinator, "other-topic", 10)
        rows += other_rows(coordinator)
        rows += authorized_rows(coordinator)
        rows += big_member_rows(coordinator)
        rows += sink_rows(coordinator, endpoint)
    rows.sort(key=lambda r: (r.members == "-", r.scenario, len(r.members), r.members))
    return rows


@dataclass(frozen=True)
class Checks:
    """What the rows show beyond themselves: the flags on steady heartbeats, renewals and
    timers, the findings, and the busiest partition keys (the table, and the limits broken)."""

    warnings: list[str]
    renewals: list[str]
    timers: list[str]
    notes: list[str]
    keys_table: str
    broken: list[str]

    @classmethod
    def of(cls, rows: list[Row]) -> Checks:
        keys_table, broken = hot_keys(rows, Settings().barrier_hold_ms)
        return cls(
            heartbeat_growth(rows),
            renewal_check(rows),
            timer_check(rows),
            findings(rows),
            keys_table,
            broken,
        )

    def print(self) -> None:
        for line in self.warnings or ["steady-state heartbeat: constant across group sizes (good)"]:
            print(line)
        for line in self.renewals or [
            "steady-state heartbeat: renewal due writes, not due only reads"
        ]:
            print(line)
        for line in self.timers or ["group timers: measured at every size, as routine checks"]:
            print(line)
        for line in self.notes:
            print(line)
        print(self.keys_table)
        for line in self.broken:
            print(f"!!! BREAKS the hot-key limit: {line}")


def doc_body(text: str, checks: Checks, protocol_max: int, elapsed: float) -> str:
    """The section of docs/performance.md: how it is measured, the rows, what they show."""
    return "\n\n".join(
        [
            DOC_INTRO.format(
                protocol_max=protocol_max,
                partitions=PARTITIONS,
                skips=RENEWAL_SKIPS,
                every=RENEWAL_SKIPS + 1,
                timer_samples=TIMER_SAMPLES,
                margin=TIMER_MARGIN_MS // 1000,
            ),
            text,
            *(f"**{w}**" for w in checks.warnings),
            "Steady-state heartbeat across group sizes: "
            + ("GROWS (see above)." if checks.warnings else "constant."),
            *([f"**{w}**" for w in checks.renewals] or [RENEWALS_OK]),
            *([f"**{w}**" for w in checks.timers] or [TIMERS_OK]),
            *checks.notes,
            "### Busiest partition keys at scale (no hot key)",
            HOT_KEYS_INTRO.format(read=READ_LIMIT, write=WRITE_LIMIT),
            checks.keys_table,
            *(f"**Breaks the hot-key limit: {line}.**" for line in checks.broken),
            f"The run took {elapsed:.0f} s.",
        ]
    )


def main(argv: list[str] | None = None) -> list[Row]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10,1000,5000", help="group sizes, comma-separated")
    parser.add_argument(
        "--protocol-max",
        type=int,
        default=100,
        help="build groups up to this size through join/sync; larger ones directly",
    )
    parser.add_argument("--no-write", action="store_true", help="do not touch docs/")
    args = parse_args(parser, argv, sizes=str(SMOKE_SIZE), protocol_max=0)
    sizes = [int(s) for s in args.sizes.split(",")]
    started = time.perf_counter()
    rows = measure(sizes, args.protocol_max, SMOKE_SETTINGS if args.smoke else None)
    elapsed = time.perf_counter() - started
    text = render(rows)
    checks = Checks.of(rows)
    print(text)
    checks.print()
    print(f"took {elapsed:.0f}s")
    if args.smoke:
        return rows
    save_results("cost", [asdict(r) for r in rows])
    if not args.no_write:
        body = doc_body(text, checks, args.protocol_max, elapsed)
        command = COMMAND if argv is None else f"{COMMAND} {' '.join(argv)}"
        print(f"wrote {write_section('cost', 'Cost per API call', command, body)}")
    return rows


RENEWALS_OK = (
    "Steady heartbeats: every one whose renewal was not due wrote nothing; every one whose "
    "renewal was due wrote at least 1 WCU."
)

TIMERS_OK = (
    "Group timers: the check of each protocol was measured at every size, each sample a "
    "heartbeat whose renewal was not due that read every member, renewed nothing and "
    "expired nobody."
)

HOT_KEYS_INTRO = """\
The load each workload puts on one partition key, from the audited units each call put on keys of
each kind (group ids and shard numbers abstracted), times the calls per second, divided by the
number of keys of that kind the calls spread over. DynamoDB serves about {read:,} read units and
{write:,} write units per second per partition; a single item cannot be split. Only loads above
5% of a limit are listed. In a rebalance each member registers its join once (all within 5 s),
then is held and re-sent (every hold + retryAfterMs) until the barrier closes; new members (which
write the group item: its member count) are modelled as a 10% scale-out within 5 s. A steady
heartbeat counts at its mean at the default `groupcoord.session.renewal.skips` (the row without
a suffix: reads on every heartbeat, the member write on 1 of every skips + 1)."""


DOC_INTRO = """\
Per call, averaged over the samples taken. *est.* is the store's own estimate (what the functions
publish as metrics); *audited* re-reads every item the call wrote (before and after) and charges
it by DynamoDB's rules: the larger item image, x2 in a transaction, plus the GSI writes
(`deadlines`, `listing`). RCU are strongly consistent read units (an eventually consistent read of
up to 4 KB is 0.5). *DynamoDB Local's units* are what it reported (ConsumedCapacity), for reference.
Groups up to {protocol_max} members are built through join/sync (classic) or
consumer-group-heartbeat (consumer protocol); larger groups are written directly, as the protocol
would leave them: classic member and payload items by the store's `member_items` +
BatchWriteItem and the group item by `ClassicGroupStore.commit`; a consumer group by one member
joining through the handler, the others written as a burst of joins leaves them, the real
install (`ensure_target_installed`) computing and writing their targets, the first member
revoking through the handler and the others' items written reconciled (bench/common.py
`build_consumer_group_direct`). Members subscribe to one topic of {partitions:,} partitions,
range-assigned (a classic member's payload item carries its assignment, not the member item that
heartbeats update). "Group timer due" is the heartbeat that finds the group's next check (`dl`)
passed and runs the periodic expiry check (classic: service/classic_group.py `settle`; consumer
protocol: the expiry scan, service/consumer/expiry.py), which reads every member and writes
the next one (from 100 members on it claims the check first, core/timer_checks.py): measured
at every size for both protocols by moving `dl` into the past ({timer_samples} samples, each a
heartbeat whose renewal is not due, of a Stable group whose sessions all run at least {margin} s
more), so what the check adds is that row minus the
"renewal not due" row. It comes once per group per check, not once per heartbeat
(`bench.cost_model` spreads it over a group's heartbeats).
A steady heartbeat writes the member's session deadline only when it is less than one session
away, and a renewal sets it (skips + 1/2) heartbeat intervals past one session
(`groupcoord.session.renewal.skips`, default {skips}; core/session_renewal.py): {skips} of every
{every} steady heartbeats only read. Both kinds are measured: "renewal not due" (each sampled
member heartbeats once first, so that the measured heartbeat finds its session a whole session
ahead) and "renewal due" (the same members with skips 0, where every heartbeat renews: the same
reads and conditional write as a renewal that falls due at the default). The steady-state row
without a suffix is their mean at the default, ({skips} x not due + due) / {every}: the cost of
an average steady heartbeat, used by the hot-key table below and by `bench.cost_model`.
Held calls (a follower's sync before the leader's, a join while the barrier is open) poll the
group for up to `groupcoord.barrier.hold.ms` (default 2000) before answering 202; how often they
poll, and the `retryAfterMs` of the 202, grow with the group, and from ~4,000 members on they are
not held at all (`hold_plan` in service/classic/common.py). A known member's join while the
barrier is open writes its member item and its shard's join counter (`G#<group>#J<n>`), then
reads every shard's counter; with new metadata it first writes its payload item
(`G#<group>#P<n>`)."""


if __name__ == "__main__":
    main()
