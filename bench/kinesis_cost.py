"""$ per shard-month of a Kinesis-backed topic's coordination, derived from what this run
measures (bench.kinesis prints it): a consumer-protocol group of MEMBERS members on a stream of
SHARDS shards, joined through the handlers in-process on DynamoDB Local, its calls audited
(bench/common.py CapacityAudit: units by DynamoDB's rules) and, in a second run without the
audit, timed (the p50 handler time, billed as Lambda duration: an upper bound, DynamoDB Local
being slower than DynamoDB). Priced with bench/pricing.py's list prices and its reading of
the template (architecture, memory), as the cost model prices a member-month:

- the member's steady heartbeats, every 5 s: renewal not due and due, blended at the default
  `groupcoord.session.renewal.skips` ((skips x not due + due) / (skips + 1));
- the group's timer check (its expiry scan, forced due), once per check interval
  (pricing.check_interval_s), shared by the group's members;
- the topic's scheduled shard sync (one that finds nothing new), every
  `groupcoord.kinesis.shard.sync.interval.ms`, shared by the topic's shards; it runs inside
  the sweeper's invocation, which runs every minute anyway: its units and duration only;
- a checkpoint of one shard (an offset-commit with a position), priced apart at two
  intervals: a request of its own (front door, Lambda request and duration, units).

KCL's figure is its lease renewals: one 1-WRU conditional write per lease (shard) every
failoverTimeMillis / 3 (10 s / 3), and its checkpoints one 1-WRU UpdateItem each.
"""

from __future__ import annotations

import statistics
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from groupcoord.settings import Settings

from .common import Call, ConsumerGroupSim, InProcess, settle_consumer_group
from .common import make_consumer_group_timer_due as force_check_due
from .cost import RENEWAL_SKIPS, steady_samples, timer_samples
from .cost_model import TEMPLATE_LAMBDA
from .pricing import (
    CONSUMER,
    FRONT_DOORS,
    HEARTBEAT_S,
    KCL_RENEWAL_S,
    MONTH_S,
    WRU,
    check_interval_s,
    per_heartbeat,
)

MEMBERS = 2  # the group measured, as the timings' two workers
SHARDS = 4
CHECKPOINT_SAMPLES = 10
# Checkpoint intervals priced: KinesisConsumer's default, and once a minute.
COMMIT_INTERVALS_S = (5.0, 60.0)
SHARDS_PER_MEMBER = (1, 4, 16)


@dataclass(frozen=True)
class PerCall:
    """One kind of call: read and write units (GSI writes included) by the audit, and its
    handler time (p50, seconds) without the audit."""

    read: float
    write: float
    seconds: float

    def usd(self, front_door: float | None) -> float:
        """What one costs: units and duration; with `front_door`, a request of its own (the
        front door's charge and Lambda's request charge)."""
        parts = per_heartbeat(self.read, self.write, self.seconds * 1000, TEMPLATE_LAMBDA)
        if front_door is None:
            return parts["DynamoDB reads"] + parts["DynamoDB writes"] + parts["Lambda duration"]
        return sum(parts.values()) - parts["front door"] + front_door


@dataclass(frozen=True)
class Measured:
    not_due: PerCall  # a steady heartbeat whose renewal is not due
    due: PerCall  # one that renews the session
    check: PerCall  # what the group's timer check adds to the heartbeat that runs it
    checkpoint: PerCall
    sync: PerCall


@dataclass
class Sample:
    """A measured call of one run: its audited units (None without the audit) and seconds."""

    read: float | None
    write: float | None
    seconds: float

    @classmethod
    def of(cls, call: Call) -> Sample:
        audited = call.audited
        if audited is None:
            return cls(None, None, call.seconds)
        return cls(
            audited.read_units, audited.write_units + audited.index_write_units, call.seconds
        )


def run_calls(endpoint: str, stream: Callable[[int], str], audit: bool) -> dict[str, list[Sample]]:
    """One run of every kind of call, on a fresh table: the group joined and settled, then its
    steady heartbeats, its timer checks, checkpoints and a shard sync."""
    coordinator = InProcess(endpoint, audit=audit)
    topic = f"k-{uuid.uuid4().hex[:10]}"
    config = [{"name": "groupcoord.kinesis.stream.arn", "value": stream(SHARDS)}]
    created = coordinator.call("create-topics", {"topics": [{"name": topic, "configs": config}]})
    assert created.body["topics"][0]["errorCode"] == 0, created.body
    sim = ConsumerGroupSim(coordinator.call, f"g-{uuid.uuid4().hex[:8]}", MEMBERS, topic=topic)
    failed = settle_consumer_group(coordinator, sim)
    assert failed is None, failed and failed.body
    not_due, due = steady_samples(coordinator, sim.beat, sim.ids)
    checked, renewed = timer_samples(
        coordinator, sim.beat, lambda: force_check_due(coordinator, sim.group_id),
        lambda m: _session_deadline(coordinator, sim.group_id, m), sim.ids,
    )  # fmt: skip
    assert not renewed and all(_scanned(c) for c in checked), "not a routine timer check"
    return {
        "not_due": [Sample.of(c) for c in not_due if not _scanned(c)],
        "due": [Sample.of(c) for c in due if not _scanned(c)],
        "checked": [Sample.of(c) for c in checked],
        "checkpoint": [Sample.of(c) for c in _checkpoints(coordinator, sim, topic)],
        "sync": [_sync(coordinator, topic)],
    }


def _scanned(call: Call) -> bool:
    """The heartbeat ran the group's expiry scan (a Query per member shard)."""
    return "query" in call.usage.by_operation


def _session_deadline(coordinator: InProcess, group_id: str, member_id: str) -> int:
    from groupcoord.service.consumer.common import reload

    store = coordinator.store.consumer
    group = reload(store, group_id)
    assert group is not None
    member = store.member(group, member_id, consistent=True)
    assert member is not None
    return member.session_deadline


def _checkpoints(coordinator: InProcess, sim: ConsumerGroupSim, topic: str) -> list[Call]:
    """A member's checkpoints of a shard it owns, each past the last (the first, which
    creates the position, left out)."""
    member = sim.ids[0]
    partition = sim.owned[member][0]["partitions"][0]
    calls = []
    for sequence in range(1, CHECKPOINT_SAMPLES + 2):
        at = {"partitionIndex": partition, "committedOffset": 0,
              "kinesisPosition": {"sequenceNumber": str(sequence)}}  # fmt: skip
        body = {
            "groupId": sim.group_id, "memberId": member,
            "generationIdOrMemberEpoch": sim.epochs[member],
            "topics": [{"name": topic, "partitions": [at]}],
        }  # fmt: skip
        call = coordinator.call("offset-commit", body)
        assert call.status == 200 and call.error_code == 0, call.body
        calls.append(call)
    return calls[1:]


def _sync(coordinator: InProcess, topic: str) -> Sample:
    """One scheduled shard sync that finds nothing new (the sweeper's, called directly)."""
    from groupcoord.service.kinesis.sync import sync_topic

    store = coordinator.store
    record = store.topics.get(topic)
    assert record is not None
    audit = coordinator.audit
    started = time.perf_counter()
    if audit is None:
        sync_topic(store, record, store.clock.now_ms())
        return Sample(None, None, time.perf_counter() - started)
    with audit.measuring() as audited:
        sync_topic(store, record, store.clock.now_ms())
    units = audited.write_units + audited.index_write_units
    return Sample(audited.read_units, units, time.perf_counter() - started)


def measure(endpoint: str, stream: Callable[[int], str]) -> Measured:
    """Units from an audited run, handler times from a run without the audit."""
    units = run_calls(endpoint, stream, audit=True)
    times = run_calls(endpoint, stream, audit=False)

    def per_call(kind: str) -> PerCall:
        audited, timed = units[kind], times[kind]
        return PerCall(
            read=statistics.fmean(s.read or 0.0 for s in audited),
            write=statistics.fmean(s.write or 0.0 for s in audited),
            seconds=statistics.median(s.seconds for s in timed),
        )

    quiet, checked = per_call("not_due"), per_call("checked")
    check = PerCall(
        checked.read - quiet.read,
        checked.write - quiet.write,
        max(0.0, checked.seconds - quiet.seconds),
    )
    return Measured(
        per_call("not_due"), per_call("due"), check, per_call("checkpoint"), per_call("sync")
    )


def member_month_usd(found: Measured, front_door: float) -> float:
    """$ per member-month: its steady heartbeats and its share of the group's timer checks."""
    weight = RENEWAL_SKIPS / (RENEWAL_SKIPS + 1)
    beat = weight * found.not_due.usd(front_door) + (1 - weight) * found.due.usd(front_door)
    checks = MONTH_S / check_interval_s(CONSUMER, RENEWAL_SKIPS) * found.check.usd(None)
    return MONTH_S / HEARTBEAT_S * beat + checks / MEMBERS


def sync_month_usd(found: Measured) -> float:
    """$ per topic-month of its scheduled shard syncs."""
    interval_s = Settings().kinesis_shard_sync_interval_ms / 1000
    return MONTH_S / interval_s * found.sync.usd(None)


def kcl_month_usd(commit_interval_s: float | None = None) -> float:
    """KCL per shard-month: its lease's renewals, and its checkpoints at an interval."""
    renewals = MONTH_S / KCL_RENEWAL_S * WRU
    return renewals + (MONTH_S / commit_interval_s * WRU if commit_interval_s else 0.0)


def cost_rows(found: Measured) -> list[list[str]]:
    """Per front door and shards per member: the coordination per shard-month (the member's
    heartbeats and timer-check share over its shards, the topic's syncs over the topic's
    MEMBERS x shards), then with a checkpoint per shard every 5 s or 60 s; KCL beside."""
    rows = []
    for door, price in FRONT_DOORS.items():
        member = member_month_usd(found, price)
        per_checkpoint = found.checkpoint.usd(price)
        for shards in SHARDS_PER_MEMBER:
            coordination = member / shards + sync_month_usd(found) / (shards * MEMBERS)
            with_checkpoints = [
                coordination + MONTH_S / interval * per_checkpoint
                for interval in COMMIT_INTERVALS_S
            ]
            rows.append([
                door, str(shards), f"${coordination:.3f}",
                *(f"${v:.3f}" for v in with_checkpoints), f"${kcl_month_usd():.3f}",
                *(f"${kcl_month_usd(i):.3f}" for i in COMMIT_INTERVALS_S),
            ])  # fmt: skip
    return rows


def describe(found: Measured) -> str:
    """The measured figures the rows are derived from, in a sentence."""

    def call(what: str, c: PerCall) -> str:
        return f"{what} {c.read:.2f} RRU + {c.write:.2f} WRU, {c.seconds * 1000:.1f} ms"

    parts = [
        call("a steady heartbeat, renewal not due:", found.not_due),
        call("renewal due:", found.due),
        call("the group's timer check adds", found.check),
        call("a checkpoint:", found.checkpoint),
        call("a shard sync that finds nothing new:", found.sync),
    ]
    by_door = ", ".join(
        f"${member_month_usd(found, price):.3f} ({door})" for door, price in FRONT_DOORS.items()
    )
    return (
        f"Measured ({MEMBERS} members on {SHARDS} shards; units audited, p50 handler times "
        f"without the audit): {'; '.join(parts)}. A member-month: {by_door}; the topic's "
        f"syncs: ${sync_month_usd(found):.3f} a month."
    )


def print_costs(found: Measured, out: Callable[[str], Any] = print) -> None:
    out(describe(found) + "\n")
    header: Sequence[str] = (
        "front door", "shards per member", "groupcoord / shard-month",
        "with a checkpoint every 5 s", "every 60 s", "KCL lease renewals",
        "with a checkpoint every 5 s", "every 60 s",
    )  # fmt: skip
    out("| " + " | ".join(header) + " |")
    out("| " + " | ".join("---" for _ in header) + " |")
    for row in cost_rows(found):
        out("| " + " | ".join(row) + " |")
