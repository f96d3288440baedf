"""What a releasing heartbeat costs with the push channel on and off: a consumer-protocol
member acknowledging a revocation (its heartbeat writes its member item without the partitions
it gave up); with push on, the heartbeat then tells the members waiting on them
(service/consumer/heartbeat.py `_tell_waiters`, core/push.release_notice_members).

    python -m bench.cost_release [--sizes 10,100,1000] [--partitions 1000]
    python -m bench.cost_release --smoke   # a group of 3; writes nothing

Per size, a Stable group built directly (bench/common.py build_consumer_group_direct, over
max(--partitions, 2 x members) partitions, so that a joiner takes a partition from someone at
every size) with every member connected; then a member joins, its target is installed at once,
and every member whose target lost partitions heartbeats twice (hears the revocation, then
acknowledges it: the releasing heartbeat measured). Twice per mode: audited (DynamoDB requests
and read/write units by the capacity audit) and timed (in-process, without the audit). Push on:
a `@connections` client that delivers nothing (bench/cost_push.py), so what is measured is what
the coordinator reads and writes to decide whom to tell and to find their connections.
Prints its table; the figures go into docs/performance.md's findings by hand, with the load.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.common import (
    TOPIC,
    Call,
    ConsumerGroupSim,
    InProcess,
    build_consumer_group_direct,
    create_topic,
    dynamodb_local,
    fmt,
    parse_args,
    percentile,
    table,
)
from bench.cost_push import _Delivered
from groupcoord.service.consumer.common import reload
from groupcoord.store.push import ConnectionPoster, PushConnection

SIZES = (10, 100, 1000)
PARTITIONS = 1000
# Installs at once: the joiner's heartbeat installs the target whose releases are measured.
SETTINGS = {"group.consumer.assignment.interval.ms": "0"}


@dataclass
class Releases:
    """The releasing heartbeats of one joiner's rebalance."""

    size: int
    push: bool
    calls: list[Call]
    timed: list[Call]

    def mean(self, pick: str) -> float:
        values = {
            "requests": [c.usage.requests for c in self.calls],
            "read": [c.audited.read_units for c in self.calls if c.audited],
            "write": [
                c.audited.write_units + c.audited.index_write_units for c in self.calls if c.audited
            ],
        }[pick]
        return sum(values) / len(values) if values else 0.0

    def row(self) -> tuple[str, ...]:
        ms = [c.seconds * 1000 for c in self.timed] or [0.0]
        ops: dict[str, int] = {}
        for c in self.calls:
            for op, n in c.usage.by_operation.items():
                ops[op] = ops.get(op, 0) + n
        per_call = ", ".join(
            f"{op} {n / len(self.calls):.1f}" for op, n in sorted(ops.items()) if self.calls
        )
        return (
            f"{self.size:,}",
            "on" if self.push else "off",
            str(len(self.calls)),
            fmt(self.mean("requests")),
            per_call,
            fmt(self.mean("read"), 2),
            fmt(self.mean("write"), 2),
            f"{percentile(ms, 50):.1f}",
        )


def _connect_all(coordinator: InProcess, group_id: str, member_ids: list[str]) -> None:
    """Every member's connection item, as `$connect` writes it (no handshake needed here)."""
    now = coordinator.store.clock.now_ms()
    for member_id in member_ids:
        connection = PushConnection(group_id, member_id, f"{uuid.uuid4().hex[:14]}=", "")
        coordinator.store.push.open(connection, now)


def _rebalance(coordinator: InProcess, sim: ConsumerGroupSim) -> list[Call]:
    """A member joins; every member whose target lost partitions hears its revocation and
    acknowledges it. The acknowledging (releasing) heartbeats."""
    joiner = str(uuid.uuid4())
    sim.ids.append(joiner)
    answer = sim.beat(joiner)
    if answer.status != 200 or answer.error_code != 0:
        raise RuntimeError(f"join: {answer.status} {answer.body}")
    group = reload(coordinator.store.consumer, sim.group_id)
    assert group is not None and group.target_epoch == group.group_epoch, "not installed"
    members = coordinator.store.consumer.members(group)
    losing = [m.member_id for m in members if m.member_id != joiner and not _keeps(m)]
    releases = []
    for member_id in losing:
        sim.beat(member_id)  # hears its revocation
        if member_id in sim.unacked:
            releases.append(sim.beat(member_id))
    bad = [c for c in releases if c.status != 200 or c.error_code != 0]
    if bad:
        raise RuntimeError(f"release: {bad[0].status} {bad[0].body}")
    sim.beat(joiner)  # takes what was released (not measured)
    return releases


def _keeps(member: object) -> bool:
    from groupcoord.core.consumer.assignment import minus

    holds = member.assignment.holds  # type: ignore[attr-defined]
    return not minus(holds, member.target)  # type: ignore[attr-defined]


def measure(endpoint: str, size: int, partitions: int, push: bool) -> Releases:
    coordinator = InProcess(endpoint, SETTINGS, audit=True)
    create_topic(coordinator, TOPIC, max(partitions, 2 * size))
    group_id = f"release-{uuid.uuid4().hex[:8]}"
    sim, _ = build_consumer_group_direct(coordinator, group_id, size)
    if push:
        coordinator.store.push_poster = ConnectionPoster(
            "http://127.0.0.1:9", lambda _: _Delivered()
        )
        _connect_all(coordinator, group_id, sim.ids)
    audited = _rebalance(coordinator, sim)
    with coordinator.unaudited():
        timed = _rebalance(coordinator, sim)
    return Releases(size, push, audited, timed)


HEADERS = (
    "members",
    "push",
    "releasing heartbeats",
    "DynamoDB requests",
    "by operation",
    "RCU (audited)",
    "WCU (audited)",
    "ms p50 (in-process)",
)


def main(argv: list[str] | None = None) -> list[Releases]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default=",".join(map(str, SIZES)))
    parser.add_argument("--partitions", type=int, default=PARTITIONS)
    parser.add_argument("--no-write", action="store_true", help="(writes nothing anyway)")
    args = parse_args(parser, argv, sizes="3", partitions=12)
    sizes = [int(s) for s in str(args.sizes).split(",")]
    load = os.getloadavg()
    started = time.perf_counter()
    found = []
    with dynamodb_local() as endpoint:
        for size in sizes:
            for push in (False, True):
                found.append(measure(endpoint, size, args.partitions, push))
                print(f"  {size:,} members, push {'on' if push else 'off'}: done", flush=True)
    print(table(HEADERS, [r.row() for r in found]))
    print(
        f"load average {load[0]:.1f} at the start, {os.getloadavg()[0]:.1f} at the end; "
        f"{time.perf_counter() - started:.0f} s"
    )
    return found


if __name__ == "__main__":
    main()
