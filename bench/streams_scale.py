"""Scale: a 5,000-member streams group (every member with an interactive-query endpoint) joined,
driven to a settled target, held steady, then rebalanced (10 members leave, 10 join): the
requests and write units of a steady heartbeat, the busiest partition key's and the group
item's writes in each phase, and how many heartbeat rounds (and seconds here) convergence takes.

    python -m bench.streams_scale [--members 5000] [--partitions 10000] [--moves 10] [--no-write]
    python -m bench.streams_scale --smoke   # 12 members, 24 partitions; writes nothing

The real code on an in-memory DynamoDB (groupcoord/local/memory/, DynamoDB's item and
transaction limits enforced, requests served one at a time), as bench/scale.py: 5,000 members
heartbeating through DynamoDB Local would take far longer than a benchmark may run here. The
members are bench/streams_sim.py's: each heartbeats through the service's
streams_group_heartbeat at a simulated clock, reports its tasks only when they changed and the
endpoint epoch it last heard. Joins go through the heartbeat too, as one burst at one instant
(installs batched by `group.streams.assignment.interval.ms`, the initial delay waited out).
Every call is audited (bench/common.py CapacityAudit: whole items, x2 in transactions, GSI
writes) per partition key, and every write request is counted per item (the group item's).
Settings are the defaults (5 s heartbeats, 45 s sessions, session renewals every third
heartbeat) but one standby replica and no warm-ups (Kafka 4.2's immediate moves).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.common import CapacityAudit, fmt, parse_args, save_results, table, write_section
from bench.streams_sim import ManualClock, StreamsSim, sim_store, word_count
from groupcoord.core.topics import TopicRecord
from groupcoord.service.streams.common import reload
from groupcoord.settings import Settings
from groupcoord.store import capacity, schema
from groupcoord.topic_ids import new_topic_id

COMMAND = "python -m bench.streams_scale"
WRITE_LIMIT = 1000  # write units per second on one partition key
READ_LIMIT = 3000
HEARTBEAT_MS = 5000
GROUP, WORDS, APP = "streams-scale", "words", "app"


@dataclass
class Phase:
    """One phase's calls, audited: a round is every member's heartbeat, 5 s of traffic."""

    name: str
    calls: int = 0
    requests: int = 0
    write_units: float = 0.0
    read_units: float = 0.0
    writes_by_key: dict[str, float] = field(default_factory=dict)
    reads_by_key: dict[str, float] = field(default_factory=dict)
    group_item_writes: int = 0
    largest_item: int = 0
    seconds: float = 0.0

    def busiest(self, writes: bool = True) -> tuple[str, float]:
        found = self.writes_by_key if writes else self.reads_by_key
        return max(found.items(), key=lambda kv: kv[1], default=("-", 0.0))


class Bench:
    def __init__(self, members: int, partitions: int, instances: int) -> None:
        settings = Settings.from_mapping(
            {
                "groupcoord.table.name": "streams-scale",
                "group.streams.num.standby.replicas": "1",
                "group.streams.num.warmup.replicas": "0",
            }
        )
        self.clock = ManualClock()
        self.audits: list[CapacityAudit] = []
        self.store, self.writes = sim_store(settings, self.clock, wrap=self._audit)
        self.store.topics.create(TopicRecord(WORDS, new_topic_id(), partitions), now_ms=0)
        topology = word_count(WORDS, APP)
        self.sim = StreamsSim(
            self.store, self.clock, GROUP, topology, keep_routes=False, instances=instances
        )
        self.size = members
        self.group_item = tuple(schema.group_key(GROUP)[k] for k in (schema.PK, schema.SK))

    def _audit(self, client: Any) -> CapacityAudit:
        self.audits.append(CapacityAudit(client, "streams-scale"))
        return self.audits[-1]

    def phase(self, name: str, calls: Iterable[Callable[[], Any]]) -> Phase:
        found = Phase(name)
        before = self.writes.by_item[self.group_item]
        started = time.perf_counter()
        with capacity.metered() as usage, self.audits[0].measuring() as audited:
            for call in calls:
                call()
                found.calls += 1
        found.seconds = time.perf_counter() - started
        found.requests = usage.requests
        found.write_units, found.read_units = audited.write_units, audited.read_units
        found.writes_by_key, found.reads_by_key = audited.writes_by_key, audited.reads_by_key
        found.largest_item = audited.largest_item
        found.group_item_writes = self.writes.by_item[self.group_item] - before
        return found

    def round(self, name: str, extra: Iterable[Callable[[], Any]] = ()) -> Phase:
        """`extra` calls (leaves, joins), then every member's heartbeat; 5 s pass."""

        def calls() -> Iterable[Callable[[], Any]]:
            yield from extra
            for m in sorted(self.sim.members):  # after the leaves and joins
                yield lambda m=m: self.sim.beat(m)

        found = self.phase(name, calls())
        self.clock.advance(HEARTBEAT_MS)
        return found

    def converge(self, label: str, first: Iterable[Callable[[], Any]] = ()) -> list[Phase]:
        rounds = [self.round(f"{label} round 1", first)]
        while not self.sim.converged():
            if len(rounds) >= 12:
                raise RuntimeError(f"{label}: not converged after 12 rounds")
            rounds.append(self.round(f"{label} round {len(rounds) + 1}"))
            print(f"  {rounds[-1].name}: {rounds[-1].seconds:.1f}s")
        return rounds

    def join(self, i: int) -> Callable[[], Any]:
        return lambda: self.sim.join(f"m-{i:05d}", f"p-{i:05d}", ("10.0.0.1", 7000 + i))

    def leave(self, member_id: str) -> Callable[[], Any]:
        return lambda: self.sim.leave(member_id)


def _rate(units: float) -> float:
    return units / (HEARTBEAT_MS / 1000)


def _abstract(key: str) -> str:
    return key.replace(GROUP, "<group>")


def _key_row(p: Phase) -> tuple[Any, ...]:
    wkey, wunits = p.busiest(writes=True)
    rkey, runits = p.busiest(writes=False)
    over = _rate(wunits) > WRITE_LIMIT or _rate(runits) > READ_LIMIT
    return (
        p.name,
        fmt(p.calls),
        fmt(p.requests),
        fmt(p.group_item_writes),
        f"{_abstract(wkey)}: {fmt(wunits, 0)} ({fmt(_rate(wunits), 0)}/s)",
        f"{_abstract(rkey)}: {fmt(runits, 0)} ({fmt(_rate(runits), 0)}/s)",
        "**over the per-key limit**" if over else "ok",
        f"{p.seconds:.1f}",
    )


KEY_HEADERS = (
    "phase",
    "calls",
    "DynamoDB requests",
    "group item writes",
    "busiest key: write units (per s at 5 s heartbeats)",
    "busiest key: read units (per s)",
    "verdict",
    "s here",
)


def run(members: int, partitions: int, moves: int, instances: int = 20) -> dict[str, Any]:
    bench = Bench(members, partitions, instances)
    sim = bench.sim
    joins = bench.phase("join burst (every member, one instant)", map(bench.join, range(members)))
    print(f"{members:,} joins: {joins.seconds:.1f}s")
    bench.clock.advance(3000)  # the initial rebalance delay
    settle = bench.converge("first assignment")
    steady = [bench.round(f"steady round {i}") for i in (1, 2, 3)]
    print(f"steady rounds: {', '.join(f'{s.seconds:.1f}s' for s in steady)}")
    leaving = sorted(sim.members)[:: max(1, members // moves)][:moves]
    changes = [*map(bench.leave, leaving), *map(bench.join, range(members, members + moves))]
    started = time.perf_counter()
    rebalance = bench.converge(f"rebalance ({moves} leave, {moves} join)", changes)
    rebalance_s = time.perf_counter() - started
    group = reload(bench.store.streams, GROUP)
    assert group is not None and sim.converged()
    return {
        "instances": instances,
        "map_answer": _map_answer(sim),
        "map_items": _map_items(bench),
        "members": members,
        "partitions": partitions,
        "joins": joins,
        "settle": settle,
        "steady": steady,
        "rebalance": rebalance,
        "rebalance_s": rebalance_s,
        "epochs": (group.group_epoch, group.target_epoch, group.endpoint_epoch),
    }


def _map_answer(sim: StreamsSim) -> tuple[int, float]:
    """One member's answer carrying the whole endpoints map (it asks with epoch -1): its JSON
    size, and the time to compute and serialize it here."""
    member_id = sorted(sim.members)[0]
    sim.members[member_id].endpoint_epoch = -1
    started = time.perf_counter()
    text = json.dumps(sim.beat(member_id).to_json_dict(), separators=(",", ":"))
    return len(text), time.perf_counter() - started


def _map_items(bench: Bench) -> tuple[int, int, float]:
    """The stored endpoints map: items (head and chunks), bytes, and the read units of one
    consistent read of it (what a function instance without a copy pays once per epoch)."""
    pk = schema.group_key(GROUP)[schema.PK]
    items = [
        i
        for i in bench.store.dynamo.query("pk = :pk", {":pk": pk}, consistent=True)
        if i[schema.SK].startswith("STREAMS-ENDPOINTS")
    ]
    sizes = [capacity.item_size(i) for i in items]
    return len(items), sum(sizes), sum(capacity.read_units(n, True) for n in sizes)


def _steady_facts(steady: list[Phase], members: int) -> list[tuple[str, str]]:
    calls = sum(p.calls for p in steady)
    requests = sum(p.requests for p in steady) / calls
    writes = sum(p.write_units for p in steady) / calls
    reads = sum(p.read_units for p in steady) / calls
    hottest = max(_rate(p.busiest()[1]) for p in steady)
    group_writes = sum(p.group_item_writes for p in steady)
    return [
        ("steady heartbeat: DynamoDB requests", fmt(requests, 2)),
        ("steady heartbeat: write units (a renewal every third heartbeat)", fmt(writes, 2)),
        ("steady heartbeat: read units", fmt(reads, 2)),
        ("steady state: busiest key's write units per s", fmt(hottest, 0)),
        ("steady state: group item writes in 3 rounds", fmt(group_writes)),
    ]


def report(found: dict[str, Any], elapsed: float) -> tuple[str, list[Phase]]:
    members, rebalance = found["members"], found["rebalance"]
    phases = [found["joins"], *found["settle"], *found["steady"], *rebalance]
    hottest = max(_rate(p.busiest()[1]) for p in rebalance)
    facts = [
        ("members (each with an endpoint), source partitions",
         f"{members:,}, {found['partitions']:,} (2 sub-topologies, 1 standby)"),
        ("function instances (each keeps the endpoints maps it read)", fmt(found["instances"])),
        ("group epoch, target epoch, endpoint epoch at the end",
         ", ".join(str(e) for e in found["epochs"])),
        *_steady_facts(found["steady"], members),
        ("rebalance: heartbeat rounds to converge", fmt(len(rebalance))),
        ("rebalance: wall clock here (in-process, in-memory)", f"{found['rebalance_s']:.0f} s"),
        ("rebalance: group item writes (leaves, joins, installs, all rounds)",
         fmt(sum(p.group_item_writes for p in rebalance))),
        ("rebalance: busiest key's write units per s (worst round)", fmt(hottest, 0)),
        ("largest item written", f"{max(p.largest_item for p in phases):,} B"),
        ("the endpoints map stored: items, bytes, read units of one read",
         "{:,}, {:,} B, {:,.0f}".format(*found["map_items"])),
        ("an answer carrying the whole endpoints map: JSON, time here",
         f"{found['map_answer'][0]:,} B, {found['map_answer'][1] * 1000:,.0f} ms"),
        ("first assignment: heartbeat rounds", fmt(len(found["settle"]))),
        ("the whole run here", f"{elapsed:.0f} s"),
    ]  # fmt: skip
    return table(("", "figure"), facts), phases


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--members", type=int, default=5000)
    parser.add_argument("--partitions", type=int, default=10_000)
    parser.add_argument("--moves", type=int, default=10)
    parser.add_argument("--instances", type=int, default=20)
    parser.add_argument("--no-write", action="store_true")
    args = parse_args(parser, argv, members=12, partitions=24, moves=2, instances=2)
    started = time.perf_counter()
    found = run(args.members, args.partitions, args.moves, args.instances)
    elapsed = time.perf_counter() - started
    facts_text, phases = report(found, elapsed)
    keys_text = table(KEY_HEADERS, [_key_row(p) for p in phases])
    print(facts_text)
    print(keys_text)
    if not args.smoke:
        save_results("streams_scale", {"facts": facts_text, "seconds": elapsed})
    if not args.no_write:
        intro = DOC_INTRO.format(instances=args.instances)
        body = "\n\n".join([intro, facts_text, KEYS_INTRO.format(limit=WRITE_LIMIT), keys_text])
        command = COMMAND if argv is None else f"{COMMAND} {' '.join(argv)}"
        title = "Streams groups at scale: 5,000 members with endpoints"
        print(f"wrote {write_section('streams_scale', title, command, body, engine=False)}")
    return found


DOC_INTRO = """\
A streams group whose members all have an interactive-query endpoint, on the real code **on an
in-memory DynamoDB stand-in** (as the consumer group's scale run above): every member joins
(one burst), the group settles, three steady rounds, then 10 members leave and 10 join and the
group settles again. A round is one heartbeat of every member (5 s of traffic at the default
interval); real members heartbeat at once after their tasks change, so they converge in fewer
seconds than rounds x 5 s. The endpoints map names each endpoint's target tasks, so one
install bumps the endpoint epoch once (docs/streams.md, "Interactive queries"). The members'
requests are spread over {instances} simulated function instances (stores on one table), each
keeping the endpoints maps it read, as a Lambda instance does: after a bump the map is read
once per instance."""

KEYS_INTRO = """\
Per phase: the group item's write requests, and the busiest partition key's audited units (the
group's key holds the group item, the topology and the endpoints map's chunks; member items
are sharded). DynamoDB's limit is {limit:,} write units per second per partition key."""


if __name__ == "__main__":
    main()
