"""A KinesisConsumer worker as its own process, for the Kinesis end-to-end tests:

    python -m tests.support.kinesis_worker --url URL --group G --topic T --name a --log FILE
        [--protocol classic] [--table SINK] [--hold-key KEY]

Records carry `<key>:<seq>`, a sequence per partition key (tests/support/kinesis_workers.py
writes and checks them). The worker logs, one JSON line each, every record its handler got
(the partition, key, seq and sequence number) and every commit's outcome (its positions and
the error code the client raised, 0 when it was accepted), each with `time.monotonic()`: on
Linux CLOCK_MONOTONIC, one clock for every process of the machine, so the tests can order
what several workers did.

`--table`: exactly once: each record's write (`ADD n 1`, the handler's time as `at`, the
worker's name added to the set `by`) is committed with the batch's checkpoint
(`exactly_once=True`). `--hold-key`: the first batch holding that key stops in the handler
(logged as `holding`, with the batch's records) until a line arrives on stdin, so that a test
can freeze the process (SIGSTOP) in the middle of a batch, as a long GC pause or a frozen VM
would. SIGTERM is a graceful stop: `run()` returns, committing and leaving the group.
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from groupcoord.client import TopicPartition, sink
from groupcoord.client.errors import GroupcoordError
from groupcoord.client.kinesis import KinesisConsumer, KinesisRecord
from groupcoord.client.member import GroupMember

# A commit's transaction holds 100 items: the fence, the checkpoint and at most 98 writes.
BATCH = 90
FETCH_INTERVAL_S = 0.2
COMMIT_INTERVAL_S = 1.0

Note = Callable[..., None]


def parse(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description="a KinesisConsumer worker for the tests")
    parser.add_argument("--url", required=True)
    parser.add_argument("--group", required=True)
    parser.add_argument("--topic", required=True)
    parser.add_argument("--name", required=True)
    parser.add_argument("--log", required=True)
    parser.add_argument("--protocol", default="consumer", choices=("consumer", "classic"))
    parser.add_argument("--session-ms", type=int, default=8000, help="classic members only")
    parser.add_argument("--heartbeat-ms", type=int, default=500, help="classic members only")
    parser.add_argument("--table", help="commit each record's write with its checkpoint")
    parser.add_argument("--hold-key", help="stop in the first batch with this key until stdin")
    return parser.parse_args(argv)


def mark(table: str, item: str, at: float, worker: str) -> dict[str, Any]:
    """The record's write: counted, stamped with when it was handled and by whom."""
    return sink.update(
        table, {"k": item}, "SET #at = :at ADD #n :one, #by :me",
        names={"#at": "at", "#n": "n", "#by": "by"}, values={":at": at, ":one": 1, ":me": {worker}},
    )  # fmt: skip


def handler(args: argparse.Namespace, note: Note) -> Callable[..., Any]:
    held = threading.Event()

    def handle(tp: TopicPartition, records: list[KinesisRecord]) -> list[dict[str, Any]] | None:
        holding = args.hold_key and any(r.partition_key == args.hold_key for r in records)
        if holding and not held.is_set():
            held.set()
            note(event="holding", p=tp.partition, upto=records[-1].sequence_number)
            sys.stdin.readline()  # the test freezes the process here, then lets it go
        at = time.monotonic()
        writes = []
        for record in records:
            key, seq = record.data.decode().split(":")
            note(p=tp.partition, k=key, s=int(seq), sn=record.sequence_number)
            if args.table:
                writes.append(mark(args.table, f"{key}#{seq}", at, args.name))
        return writes if args.table else None

    return handle


def observe_commits(member: GroupMember, note: Note) -> None:
    """Log each commit's positions and outcome (what the client raised), then behave as
    before: the consumer sees the same answers."""
    commit = member.commit

    def observed(
        offsets: Mapping[TopicPartition, int],
        metadata: str | None = None,
        writes: Sequence[Mapping[str, Any]] | None = None,
        positions: Mapping[TopicPartition, Mapping[str, Any]] | None = None,
    ) -> None:
        at = {str(tp.partition): dict(p) for tp, p in (positions or {}).items()}
        try:
            commit(offsets, metadata, writes, positions)
        except GroupcoordError as error:
            code = int(error.error) if error.error is not None else -1
            note(commit=at, error=code, writes=len(writes or ()))
            raise
        note(commit=at, error=0, writes=len(writes or ()))

    member.commit = observed  # type: ignore[method-assign]


def main(argv: Sequence[str] | None = None) -> None:
    args = parse(argv)
    log = open(args.log, "a", buffering=1)  # noqa: SIM115 - open for the process's life
    lock = threading.Lock()

    def note(**fields: Any) -> None:
        line = json.dumps({"t": time.monotonic(), "w": args.name, **fields})
        with lock:
            log.write(line + "\n")

    classic = (
        {"session_timeout_ms": args.session_ms, "heartbeat_interval_ms": args.heartbeat_ms}
        if args.protocol == "classic"
        else {}
    )
    consumer = KinesisConsumer(
        args.url, args.group, args.topic, handler(args, note),
        exactly_once=bool(args.table), limit=BATCH, fetch_interval_s=FETCH_INTERVAL_S,
        commit_interval_s=COMMIT_INTERVAL_S, protocol=args.protocol, **classic,
    )  # fmt: skip
    observe_commits(consumer.member, note)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    note(event="started")
    consumer.run(stop)
    note(event="stopped")


if __name__ == "__main__":
    main()
