"""Local latency as the table grows: `serve`'s p50 and p90 of a describe-groups and of an
offset-commit, over HTTP, as its table fills to 100,000 items, with the sweeper running every
50 ms (the fastest interval the tests use).

    python -m bench.table_growth [--store memory|dynamodb-local] [--sizes 0,10000,50000,100000]
                                 [--sweep-ms 50] [--samples 200]
    python -m bench.table_growth --smoke   # 0 and 100 items, 5 samples

The coordinator runs in this process (groupcoord.local.server.LocalCoordinator, as `serve`
does), so that the table can be filled directly: items spread over many partitions, each in
the deadline index with a deadline a day ahead (the sweeper's queries find them; none is due).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
import uuid
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import requests

from bench.common import parse_args, percentile
from groupcoord import clock
from groupcoord.local.server import LocalCoordinator
from groupcoord.settings import Settings
from groupcoord.store import schema

FILL_BATCH = 25  # DynamoDB's BatchWriteItem limit
PAYLOAD = "x" * 200


def fill(coordinator: LocalCoordinator, start: int, end: int) -> None:
    """Items start..end-1: 100 to a partition, each in the deadline index, due in a day."""
    due = clock.now_ms() + 86_400_000
    shards = coordinator.settings.deadline_shards
    batch: list[dict[str, Any]] = []
    for i in range(start, end):
        batch.append(
            {
                schema.PK: f"FILL#{i // 100}",
                schema.SK: f"{i:08d}",
                schema.DEADLINE_SHARD: f"DL#{i % shards}",
                schema.DEADLINE: due,
                "kind": "fill",
                "payload": PAYLOAD,
            }
        )
        if len(batch) == FILL_BATCH:
            coordinator.store.dynamo.batch_write(puts=batch)
            batch = []
    if batch:
        coordinator.store.dynamo.batch_write(puts=batch)


def timed(session: requests.Session, url: str, body: dict[str, Any]) -> float:
    started = time.perf_counter()
    answer = session.post(url, json=body, timeout=30)
    elapsed = (time.perf_counter() - started) * 1000
    assert answer.status_code == 200, answer.text
    return elapsed


def measure(base: str, group: str, samples: int) -> dict[str, float]:
    session = requests.Session()
    describe = [
        timed(session, f"{base}/v1/describe-groups", {"groups": [group]}) for _ in range(samples)
    ]
    commit_body = {
        "groupId": group,
        "topics": [{"name": "t", "partitions": [{"partitionIndex": 0, "committedOffset": 1}]}],
    }
    commit = [timed(session, f"{base}/v1/offset-commit", commit_body) for _ in range(samples)]
    return {
        "describe p50": statistics.median(describe),
        "describe p90": percentile(describe, 90),
        "commit p50": statistics.median(commit),
        "commit p90": percentile(commit, 90),
    }


def main(argv: list[str] | None = None) -> list[dict[str, Any]]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--store", choices=("memory", "dynamodb-local"), default="memory")
    parser.add_argument("--sizes", default="0,10000,50000,100000")
    parser.add_argument("--sweep-ms", type=int, default=50)
    parser.add_argument("--samples", type=int, default=200)
    args = parse_args(parser, argv, sizes="0,100", samples=5)
    sizes = sorted(int(s) for s in args.sizes.split(","))
    settings = Settings.from_mapping(
        {
            "groupcoord.table.name": f"growth-{uuid.uuid4().hex[:8]}",
            "groupcoord.sweep.interval.ms": str(args.sweep_ms),
        }
    )
    coordinator = LocalCoordinator(settings, port=0, embedded=args.store).start()
    rows: list[dict[str, Any]] = []
    try:
        base = coordinator.url
        group = "growth-group"
        # A group with an offset (a commit from outside creates it).
        commit = {
            "groupId": group,
            "topics": [{"name": "t", "partitions": [{"partitionIndex": 0, "committedOffset": 0}]}],
        }
        assert requests.post(f"{base}/v1/offset-commit", json=commit, timeout=30).ok
        filled = 0
        print(f"store {args.store}, sweep every {args.sweep_ms} ms, {args.samples} samples")
        print("| items | describe-groups p50 | p90 | offset-commit p50 | p90 |")
        print("| ---: | ---: | ---: | ---: | ---: |")
        for size in sizes:
            fill(coordinator, filled, size)
            filled = max(filled, size)
            figures = measure(base, group, args.samples)
            rows.append({"items": size, **figures})
            print(
                f"| {size:,} | {figures['describe p50']:.1f} ms | {figures['describe p90']:.1f} ms"
                f" | {figures['commit p50']:.1f} ms | {figures['commit p90']:.1f} ms |",
                flush=True,
            )
    finally:
        coordinator.stop()
    return rows


if __name__ == "__main__":
    main()
