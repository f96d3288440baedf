"""Scale: a 5,000-member consumer-protocol group over 100,000 partitions driven to Stable, with
the largest item written, the busiest partition key's load at a 5 s heartbeat, and the time the
target assignment takes.

    python -m bench.scale [--members 5000] [--partitions 100000] [--topics 4] [--no-write]
    python -m bench.scale --smoke   # 20 members, 200 partitions; writes nothing

The real code, on an in-memory DynamoDB: the Lambda handler (consumer-group-heartbeat, API
Gateway events) and the store run over groupcoord/local/memory/ (DynamoDB's item and
transaction limits enforced, requests served one at a time), because 5,000 members heartbeating
through DynamoDB Local would take far longer than a benchmark may run here. As in
tests/integration/test_consumer_scale.py, the first member joins through the handler, the other
4,999 are written as a burst of joins leaves them (member items by the store's `member_to_item`,
the group epoch bumped), and the real install (`ensure_target_installed`) computes the target;
then every member heartbeats through the handler, round after round, until the group is Stable.
Every call is audited (bench/common.py CapacityAudit: whole items, x2 in transactions, GSI
writes) per partition key.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.common import (
    Audited,
    CapacityAudit,
    ConsumerGroupSim,
    InProcess,
    fmt,
    parse_args,
    save_results,
    table,
    write_section,
)
from groupcoord.core.consumer.assignment import size as assignment_size
from groupcoord.core.consumer.assignors import AssignorMember, assign_uniform
from groupcoord.core.consumer.group import group_state
from groupcoord.core.topics import TopicRecord
from groupcoord.http.apis import FUNCTION_APIS
from groupcoord.http.handler import make_api_handler
from groupcoord.local.memory import MemoryDynamoClient
from groupcoord.local.seed import add_joined_members, largest_items
from groupcoord.service.consumer.common import reload
from groupcoord.service.consumer.install import ensure_target_installed
from groupcoord.settings import Settings
from groupcoord.store import capacity
from groupcoord.store.dynamo import Dynamo
from groupcoord.store.store import Store
from groupcoord.topic_ids import new_topic_id

COMMAND = "python -m bench.scale"
ITEM_LIMIT = 400 * 1024
WRITE_LIMIT = 1000  # write units per second on one partition key (no hot key)
READ_LIMIT = 3000
HEARTBEAT_S = 5.0
SESSION_MS = 600_000  # nobody expires while 5,000 members take their turns here


class MemoryInProcess(InProcess):
    """InProcess (the Lambda handlers, API Gateway events) over the in-memory DynamoDB."""

    def __init__(self, table: str = "scale") -> None:
        self.base = {
            "groupcoord.table.name": table,
            "group.consumer.session.timeout.ms": str(SESSION_MS),
            "group.consumer.max.session.timeout.ms": str(SESSION_MS),
        }
        self.memory = MemoryDynamoClient()
        self.audit = CapacityAudit(self.memory, table)
        settings = Settings.from_mapping(self.base)
        self.dynamo = Dynamo(self.audit, table, settings.store_max_attempts)
        self.configure({})
        self.store.ensure_table()
        self.handlers = {f: make_api_handler(f) for f in FUNCTION_APIS}


@dataclass
class Round:
    name: str
    calls: int = 0
    seconds: float = 0.0
    requests: int = 0
    writes_by_key: dict[str, float] = field(default_factory=dict)
    reads_by_key: dict[str, float] = field(default_factory=dict)
    largest_item: int = 0

    def add(self, audited: Audited | None, requests: int) -> None:
        self.calls += 1
        self.requests += requests
        if audited is None:
            return
        self.largest_item = max(self.largest_item, audited.largest_item)
        for mine, theirs in (
            (self.writes_by_key, audited.writes_by_key),
            (self.reads_by_key, audited.reads_by_key),
        ):
            for key, units in theirs.items():
                mine[key] = mine.get(key, 0.0) + units

    def busiest(self, writes: bool = True) -> tuple[str, float]:
        found = self.writes_by_key if writes else self.reads_by_key
        return max(found.items(), key=lambda kv: kv[1], default=("-", 0.0))


def abstract(key: str, group_id: str) -> str:
    return key.replace(group_id, "<group>")


def assignor_times(members: int, partitions: int, topics: int) -> tuple[float, float]:
    """The uniform assignor alone: a cold target for every member, and the sticky rerun when
    one more member joins."""
    counts = {f"t{i}": partitions // topics for i in range(topics)}
    assignor_members = [AssignorMember(f"m{i:05d}", frozenset(counts)) for i in range(members)]
    started = time.perf_counter()
    first = assign_uniform(assignor_members, counts)
    cold = time.perf_counter() - started
    sticky = [replace(m, previous=first[m.member_id]) for m in assignor_members]
    started = time.perf_counter()
    assign_uniform([*sticky, AssignorMember("joiner", frozenset(counts))], counts)
    return cold, time.perf_counter() - started


def stable(sim: ConsumerGroupSim, partitions: int) -> bool:
    if sim.unacked or len(set(sim.epochs.values())) != 1:
        return False
    held = sum(len(tp["partitions"]) for owned in sim.owned.values() for tp in owned)
    return held == partitions


def heartbeat_round(coordinator: MemoryInProcess, sim: ConsumerGroupSim, name: str) -> Round:
    result = Round(name)
    order = list(sim.ids)
    random.shuffle(order)
    started = time.perf_counter()
    for member_id in order:
        answer = sim.beat(member_id)
        if answer.status != 200 or answer.error_code != 0:
            raise RuntimeError(f"consumer-group-heartbeat: {answer.status} {answer.body}")
        result.add(answer.audited, answer.usage.requests)
    result.seconds = time.perf_counter() - started
    return result


GROUP_ID = "scale-group"


def first_member(
    coordinator: MemoryInProcess, names: list[str], partitions: int, topics: int
) -> tuple[ConsumerGroupSim, int]:
    """The topics, and the first member joined through the handler (given every partition):
    the simulated members, and the first one's member item size."""
    store = coordinator.store
    for name in names:
        store.topics.create(TopicRecord(name, new_topic_id(), partitions // topics), 0)
    sim = ConsumerGroupSim(coordinator.call, GROUP_ID, 1, topic=names[0])
    first = sim.ids[0]
    body = {
        "groupId": GROUP_ID,
        "memberId": first,
        "memberEpoch": 0,
        "rebalanceTimeoutMs": 300_000,
        "subscribedTopicNames": names,
        "topicPartitions": [],
    }
    answer = coordinator.call("consumer-group-heartbeat", body)
    assert answer.status == 200 and answer.error_code == 0, answer.body
    sim.epochs[first] = answer.body["memberEpoch"]
    sim.owned[first] = answer.body["assignment"]["topicPartitions"]
    sim.unacked.add(first)
    first_item, _ = largest_items(store, GROUP_ID)
    print(f"first member holds all {partitions:,} partitions: member item {first_item:,} B")
    return sim, first_item


def join_burst(store: Store, sim: ConsumerGroupSim, members: int, names: list[str]) -> None:
    """The other members, written as a burst of joins leaves them."""
    build_started = time.perf_counter()
    joined = add_joined_members(
        store, GROUP_ID, members - 1, names, session_ms=SESSION_MS, rebalance_timeout_ms=300_000
    )
    group = reload(store.consumer, GROUP_ID)
    assert group is not None
    for mid in joined:
        sim.ids.append(mid)
        sim.epochs[mid] = group.target_epoch
    sim.unacked.update(joined)  # their first heartbeat sends topicPartitions [] (a full one)
    print(f"{members - 1:,} joins written in {time.perf_counter() - build_started:.1f}s")


def install_target(coordinator: MemoryInProcess) -> tuple[Round, list[int]]:
    """The real install, audited: its round, and the partitions each member's target holds."""
    store = coordinator.store
    group = reload(store.consumer, GROUP_ID)
    assert group is not None
    install = Round("install (ensure_target_installed)")
    with capacity.metered() as usage, coordinator.audit.measuring() as audited:
        install_started = time.perf_counter()
        group, installed = ensure_target_installed(store, group, batched=False)
        install.seconds = time.perf_counter() - install_started
    install.add(audited, usage.requests)
    assert installed is not None and group.target_epoch == group.group_epoch
    print(f"install: {install.seconds:.1f}s, {usage.requests} requests")
    return install, [assignment_size(m.target) for m in installed.members.values()]


def converge(coordinator: MemoryInProcess, sim: ConsumerGroupSim, partitions: int) -> list[Round]:
    """Heartbeat rounds until the group is Stable."""
    rounds: list[Round] = []
    while not stable(sim, partitions):
        if len(rounds) >= 10:
            raise RuntimeError("not Stable after 10 rounds")
        rounds.append(heartbeat_round(coordinator, sim, f"heartbeat round {len(rounds) + 1}"))
        print(f"  {rounds[-1].name}: {rounds[-1].seconds:.1f}s")
    return rounds


@dataclass
class Run:
    """What a run measured, for its tables."""

    members: int
    partitions: int
    topics: int
    cold_s: float
    sticky_s: float
    first_item: int
    targets: list[int]
    install: Round
    rounds: list[Round]
    steady: Round

    @property
    def phases(self) -> list[Round]:
        return [self.install, *self.rounds, self.steady]


def facts_table(
    coordinator: MemoryInProcess, sim: ConsumerGroupSim, run: Run
) -> tuple[list[tuple[str, str]], str]:
    """The group at the end, its items and the assignor's times: the figures, and their table."""
    store = coordinator.store
    final_group = reload(store.consumer, GROUP_ID)
    assert final_group is not None
    largest_member, group_item = largest_items(store, GROUP_ID)
    state = group_state(
        final_group.member_count,
        final_group.group_epoch,
        final_group.target_epoch,
        store.consumer.members(final_group),
    )
    largest_written = max(r.largest_item for r in run.phases)
    converge_s = sum(r.seconds for r in run.rounds)
    targets, install = run.targets, run.install
    facts = [
        ("members, partitions (topics)", f"{run.members:,}, {run.partitions:,} ({run.topics})"),
        ("group state at the end (computed from the member items)", state),
        ("group epoch = target epoch = every member's epoch",
         f"{final_group.group_epoch} = {final_group.target_epoch} = "
         f"{', '.join(str(e) for e in sorted(set(sim.epochs.values())))}"),
        ("partitions per member", f"{min(targets)}-{max(targets)}"),
        ("heartbeat rounds from the install to Stable",
         f"{len(run.rounds)} ({converge_s:.0f} s here)"),
        ("largest item written (audited, whole runs)",
         f"{largest_written:,} B ({largest_written / ITEM_LIMIT:.1%} of 400 KB)"),
        ("largest member item / group item at the end", f"{largest_member:,} B / {group_item:,} B"),
        ("a member item holding all partitions (the first member, alone)",
         f"{run.first_item:,} B"),
        ("largest transaction", f"{coordinator.memory.largest_transaction} items"),
        ("target assignment, uniform assignor alone: cold", f"{run.cold_s * 1000:,.0f} ms"),
        ("target assignment, uniform assignor alone: sticky rerun + 1 member",
         f"{run.sticky_s * 1000:,.0f} ms"),
        ("install (assignor + read members + write targets, in-memory)",
         f"{install.seconds:.1f} s, {install.requests:,} requests"),
    ]  # fmt: skip
    if largest_written > ITEM_LIMIT // 10:
        print(f"!!! largest item {largest_written:,} B is not far below 400 KB")
    return facts, table(("", "figure"), facts)


def keys_table(run: Run) -> tuple[str, list[tuple[str, float]]]:
    """The busiest key of each phase against DynamoDB's per-key limits; the rounds that break
    them (name, writes/s)."""
    key_rows, broken = [], []
    for r in run.phases:
        wkey, wunits = r.busiest(writes=True)
        rkey, runits = r.busiest(writes=False)
        wrate, rrate = wunits / HEARTBEAT_S, runits / HEARTBEAT_S
        burst = r is run.install
        over = (wrate > WRITE_LIMIT or rrate > READ_LIMIT) and not burst
        if over:
            broken.append((r.name, wrate))
        key_rows.append(
            (
                r.name,
                fmt(r.calls),
                fmt(r.requests),
                f"{abstract(wkey, GROUP_ID)}: {fmt(wunits, 0)}",
                f"{fmt(wrate, 0)}" if not burst else "(one burst)",
                f"{abstract(rkey, GROUP_ID)}: {fmt(runits, 0)}",
                f"{fmt(rrate, 0)}" if not burst else "(one burst)",
                "**BREAKS the hot-key limit**" if over else "ok",
                f"{r.seconds:.1f}",
            )
        )
    text = table(
        (
            "phase",
            "calls",
            "DynamoDB requests",
            "busiest key: write units",
            "its writes/s at a 5 s heartbeat",
            "busiest key: read units",
            "its reads/s at a 5 s heartbeat",
            "verdict",
            "s here",
        ),
        key_rows,
    )
    return text, broken


def measure_run(
    members: int, partitions: int, topics: int
) -> tuple[MemoryInProcess, Run, ConsumerGroupSim]:
    """The whole run on the in-memory stand-in: the coordinator, the figures, the members."""
    print(f"assignor alone: {members:,} members x {partitions:,} partitions")
    cold_s, sticky_s = assignor_times(members, partitions, topics)
    coordinator = MemoryInProcess()
    names = [f"scale-{i}" for i in range(topics)]
    sim, first_item = first_member(coordinator, names, partitions, topics)
    join_burst(coordinator.store, sim, members, names)
    install, targets = install_target(coordinator)
    rounds = converge(coordinator, sim, partitions)
    steady = heartbeat_round(coordinator, sim, "steady round (Stable, nothing changes)")
    print(f"  steady round: {steady.seconds:.1f}s")
    run = Run(
        members, partitions, topics, cold_s, sticky_s, first_item, targets, install, rounds, steady
    )
    return coordinator, run, sim


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--members", type=int, default=5000)
    parser.add_argument("--partitions", type=int, default=100_000)
    parser.add_argument("--topics", type=int, default=4)
    parser.add_argument("--no-write", action="store_true")
    args = parse_args(parser, argv, members=20, partitions=200)
    started = time.perf_counter()
    coordinator, run, sim = measure_run(args.members, args.partitions, args.topics)
    facts, facts_text = facts_table(coordinator, sim, run)
    keys_text, broken = keys_table(run)
    elapsed = time.perf_counter() - started
    steady_keys = sorted(
        ((abstract(k, GROUP_ID), u / HEARTBEAT_S) for k, u in run.steady.writes_by_key.items()),
        key=lambda kv: -kv[1],
    )
    spread = ", ".join(f"{k} {fmt(v, 0)}" for k, v in steady_keys[:10])
    print(facts_text)
    print(keys_text)
    print(f"steady round, writes/s per key: {spread}")
    for name, rate in broken:
        print(f"!!! BREAKS the hot-key limit: {name}: {rate:,.0f} writes/s on one key")
    print(f"took {elapsed:.0f}s")
    results = {"facts": facts, "rounds": [r.__dict__ for r in run.phases], "seconds": elapsed}
    if not args.smoke:
        save_results("scale", results)
    if not args.no_write:
        body = "\n\n".join(
            [
                DOC_INTRO.format(
                    members=args.members, partitions=args.partitions, topics=args.topics
                ),
                facts_text,
                KEYS_INTRO.format(limit=WRITE_LIMIT, read=READ_LIMIT),
                keys_text,
                f"Steady round, write units per second per key at a 5 s heartbeat: {spread}.",
                *(
                    f"**Breaks the hot-key limit: {n}: {fmt(rate, 0)} writes/s on one key.**"
                    for n, rate in broken
                ),
                f"The run took {elapsed:.0f} s.",
            ]
        )
        command = COMMAND if argv is None else f"{COMMAND} {' '.join(argv)}"
        print(
            f"wrote {write_section('scale', 'Scale: a 5,000-member consumer group', command, body)}"
        )
    return results


DOC_INTRO = """\
A consumer-protocol group of {members:,} members subscribed to {topics} topics of
{partitions:,} partitions in all, driven to Stable by the real code **on an in-memory DynamoDB
stand-in** (groupcoord/local/memory/: DynamoDB's 400 KB item and 100-item transaction
limits enforced, one request at a time), not on DynamoDB Local: the Lambda handler
(consumer-group-heartbeat, API Gateway events) and the store, every call audited by
`CapacityAudit` (whole items, x2 in transactions, GSI writes). As in
`tests/integration/test_consumer_scale.py`, the first member joins through the handler and is
given every partition; the other members are written as a burst of joins leaves them (member
items by the store's `member_to_item`, the group epoch bumped); the real install
(`ensure_target_installed`) computes and writes the target; then every member heartbeats through
the handler, in a random order each round, until every member is at the target epoch, has
acknowledged its assignment and every partition has one owner. Times are in-process in-memory
times of this machine (no network): the assignor's are what a Lambda would spend computing."""

KEYS_INTRO = """\
Load per partition key: the audited write (and read) units each round put on its busiest key
(table or index key, the group id abstracted). Each member sends one heartbeat per round, so at
a 5 s heartbeat a round is 5 s of traffic: units / 5 is the key's rate. DynamoDB's limit is
{limit:,} write units ({read:,} read units) per second per partition key. The install is one
burst by one request (written in transactions of under 100 items), not a rate."""


if __name__ == "__main__":
    main()
