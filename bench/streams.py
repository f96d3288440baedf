"""A steady streams-group heartbeat's cost (docs/streams.md): DynamoDB requests and capacity
units per heartbeat, in-process on a DynamoDB Local started here, for groups of 10 and 100
members, and the $ per member-month they come to at a 5 s heartbeat.

    python -m bench.streams [--sizes 10,100] [--no-write]

Two figures per size, as bench/cost.py measures the other protocols: a heartbeat whose session
renewal is not due (reads only) and one whose renewal is due (a member write), blended at the
default `groupcoord.session.renewal.skips` (2): (2 x not due + due) / 3. The $ column counts
the front door (API Gateway HTTP API), Lambda requests and DynamoDB, at bench/cost_model.py's
prices; Lambda duration is left out (not measured here; bench/cost.py's rows have it for the
other protocols).
"""

from __future__ import annotations

import argparse
import sys
import time
import uuid
from dataclasses import replace
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.common import dynamodb_local, write_section
from bench.cost_model import API_GATEWAY, HEARTBEAT_S, LAMBDA_REQUEST, MONTH_S, RRU, WRU
from groupcoord.core.session_renewal import renewal_slack_ms
from groupcoord.core.topics import TopicRecord
from groupcoord.models.streams import StreamsGroupHeartbeatRequest
from groupcoord.service.context import ApiContext
from groupcoord.service.streams.heartbeat import streams_group_heartbeat
from groupcoord.settings import Settings
from groupcoord.store import capacity
from groupcoord.store.store import Store
from groupcoord.topic_ids import new_topic_id

COMMAND = "python -m bench.streams"
SKIPS = 2


def _heartbeat(store: Store, body: dict[str, Any], now_ms: int) -> dict[str, Any]:
    ctx = ApiContext(settings=store.settings, store=store, now_ms=now_ms, endpoint="http://x")
    request = StreamsGroupHeartbeatRequest.model_validate(body)
    return streams_group_heartbeat(request, ctx).to_json_dict()


def _tasks(answer: dict[str, Any], role: str) -> list[dict[str, Any]]:
    return answer.get(f"{role}Tasks") or []


def _settled(store: Store, size: int, now: int) -> tuple[str, dict[str, int]]:
    """A group of `size` members (a process each) on a 2-sub-topology topology, reconciled."""
    words = f"words-{uuid.uuid4().hex[:8]}"
    store.topics.create(TopicRecord(words, new_topic_id(), 2 * size), now_ms=0)
    group = f"bench-{uuid.uuid4().hex[:8]}"
    topology = {"epoch": 1, "subtopologies": [
        {"subtopologyId": "0", "sourceTopics": [words], "repartitionSinkTopics": [f"{group}-r"]},
        {"subtopologyId": "1", "sourceTopics": [f"{group}-r"],
         "repartitionSourceTopics": [{"name": f"{group}-r"}],
         "stateChangelogTopics": [{"name": f"{group}-c"}]},
    ]}  # fmt: skip
    epochs: dict[str, int] = {}
    owned: dict[str, dict[str, list[dict[str, Any]]]] = {}
    for i in range(size):
        member = f"m-{i}"
        answer = _heartbeat(store, {
            "groupId": group, "memberId": member, "memberEpoch": 0, "processId": f"p{i}",
            "rebalanceTimeoutMs": 30000, "topology": topology, "activeTasks": [],
            "standbyTasks": [], "warmupTasks": []}, now)  # fmt: skip
        epochs[member] = answer["memberEpoch"]
        owned[member] = {r: _tasks(answer, r) for r in ("active", "standby", "warmup")}
    for _ in range(6):
        for member in epochs:
            tasks = {f"{r}Tasks": t for r, t in owned[member].items()}
            body = {"groupId": group, "memberId": member, "memberEpoch": epochs[member], **tasks}
            answer = _heartbeat(store, body, now)
            epochs[member] = answer["memberEpoch"]
            if answer.get("activeTasks") is not None:
                owned[member] = {r: _tasks(answer, r) for r in ("active", "standby", "warmup")}
    return group, epochs


def measure(store: Store, size: int) -> dict[str, float]:
    now = int(time.time() * 1000)
    group, epochs = _settled(store, size, now)
    settings = store.settings
    interval = settings.group_streams_heartbeat_interval_ms
    slack = renewal_slack_ms(interval, SKIPS, settings.group_streams_session_timeout_ms)
    figures: dict[str, float] = {}
    for label, at in (("not_due", now + interval), ("due", now + slack + 1)):
        reads = writes = requests = 0.0
        for member, epoch in epochs.items():
            body = {"groupId": group, "memberId": member, "memberEpoch": epoch}
            with capacity.metered() as usage:
                assert _heartbeat(store, body, at)["errorCode"] == 0
            reads += usage.read_units
            writes += usage.write_units
            requests += sum(usage.by_operation.values())
        figures[f"{label}_rcu"] = reads / size
        figures[f"{label}_wcu"] = writes / size
        figures[f"{label}_requests"] = requests / size
    return figures


def row(size: int, f: dict[str, float]) -> str:
    def blend(name: str) -> float:
        return (SKIPS * f[f"not_due_{name}"] + f[f"due_{name}"]) / (SKIPS + 1)

    rcu, wcu, requests = blend("rcu"), blend("wcu"), blend("requests")
    beats = MONTH_S / HEARTBEAT_S
    dollars = beats * (API_GATEWAY + LAMBDA_REQUEST + rcu * RRU + wcu * WRU)
    return (
        f"| streams, {size:,} members, HTTP API | {requests:.2f} | {rcu:.3f} | {wcu:.3f} | "
        f"{f['not_due_requests']:.0f} / {f['due_requests']:.0f} | **${dollars:.4f}** |"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="10,100")
    parser.add_argument("--no-write", action="store_true", help="print, leave the docs alone")
    args = parser.parse_args(argv)
    lines = [
        "| per member-month | DynamoDB requests / heartbeat | RCU / heartbeat | "
        "WCU / heartbeat | requests: renewal not due / due | front door + Lambda requests "
        "+ DynamoDB |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    with dynamodb_local() as url:
        base = Settings.from_mapping({
            "groupcoord.table.name": f"bench-streams-{uuid.uuid4().hex[:8]}",
            "group.streams.initial.rebalance.delay.ms": "0",
            "group.streams.assignment.interval.ms": "0",
            "group.streams.num.standby.replicas": "1",
        })  # fmt: skip
        store = Store.connect(replace(base, session_renewal_skips=SKIPS), endpoint_url=url)
        store.ensure_table()
        for size in (int(s) for s in args.sizes.split(",")):
            lines.append(row(size, measure(store, size)))
            print(lines[-1], flush=True)
    body = (
        "A steady heartbeat of a settled group (every member its own process, one standby), "
        f"blended at session.renewal.skips {SKIPS}; Lambda duration not included.\n\n"
        + "\n".join(lines)
    )
    if not args.no_write:
        write_section("streams", "Streams groups: a steady heartbeat's cost", COMMAND, body)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
