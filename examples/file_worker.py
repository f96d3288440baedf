#!/usr/bin/env python3
"""A worker that shares a partitioned source with the other workers of its group.

The source is a folder with one file per partition (`0.txt`, `1.txt`, ...); each line is a
record and its line number (from 0) is its offset. Every worker of the group gets some of the
partitions from the coordinator, processes their lines from the group's committed offset on,
and commits as it goes; new lines appended to a file are picked up. Start more workers and
watch the partitions move; stop one (Ctrl-C) and its partitions go to the others.

    python examples/file_worker.py ./data --group demo --name a

Processing here is "print it" (and, with --output, append a JSON line per record to a file),
committed after each batch: at-least-once, as a Kafka consumer that commits after processing.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import time
from collections.abc import Iterable
from pathlib import Path
from typing import TextIO

from groupcoord.client import CommitFailed, GroupMember, TopicPartition
from groupcoord.client.errors import GroupcoordError
from groupcoord.client.paging import metadata_all_pages
from groupcoord.client.transport import Transport


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("source", type=Path, help="a folder of <partition>.txt files")
    parser.add_argument("--url", default=os.environ.get("GROUPCOORD_URL", "http://127.0.0.1:8080"))
    parser.add_argument("--group", default="file-workers")
    parser.add_argument("--topic", help="the topic name (default: the folder's name)")
    parser.add_argument("--name", default=f"worker-{os.getpid()}", help="shown in the output")
    parser.add_argument("--protocol", choices=["consumer", "classic"], default="consumer")
    parser.add_argument("--batch", type=int, default=10, help="lines per commit")
    parser.add_argument("--delay", type=float, default=0.2, help="seconds of 'work' per line")
    parser.add_argument("--output", type=Path, help="append a JSON line per processed record")
    parser.add_argument("--session-timeout-ms", type=int, default=10000)
    parser.add_argument(
        "--heartbeat-interval-ms", type=int, default=1000, help="classic protocol only"
    )
    parser.add_argument("--quiet", action="store_true", help="print assignment changes only")
    args = parser.parse_args(argv)

    files = partition_files(args.source)
    topic = args.topic or args.source.resolve().name
    ensure_topic(args.url, topic, len(files))
    worker = FileWorker(args, topic, files)
    signal.signal(signal.SIGTERM, lambda *_: worker.stop())
    signal.signal(signal.SIGINT, lambda *_: worker.stop())
    return worker.run()


def partition_files(source: Path) -> dict[int, Path]:
    files = {int(p.stem): p for p in source.glob("*.txt") if p.stem.isdigit()}
    if not files or sorted(files) != list(range(len(files))):
        sys.exit(f"{source}: expected files 0.txt .. N.txt, one per partition")
    return files


def ensure_topic(url: str, topic: str, partitions: int) -> None:
    """Create the topic with a partition per file, or grow it to that many."""
    admin = Transport(url, client_id="file-worker")
    created = admin.call(
        "create-topics", {"topics": [{"name": topic, "numPartitions": partitions}]}
    ).body["topics"][0]
    if created["errorCode"] == 0:
        print(f"created topic {topic} with {partitions} partitions", flush=True)
        return
    answer = metadata_all_pages(lambda api, body: admin.call(api, body).body, [{"name": topic}])
    found = answer["topics"][0]
    if len(found["partitions"]) < partitions:
        admin.call("create-partitions", {"topics": [{"name": topic, "count": partitions}]})


class PartitionReader:
    """Reads complete lines of one file from a line number on, remembering where it is."""

    def __init__(self, path: Path, line: int) -> None:
        self.path = path
        self.line = 0
        self.byte = 0
        self.skip_to(line)

    def skip_to(self, line: int) -> None:
        while self.line < line and self.read(line - self.line):
            pass

    def read(self, limit: int) -> list[str]:
        """Up to `limit` complete lines (a line still being written waits)."""
        lines: list[str] = []
        with self.path.open("rb") as f:
            f.seek(self.byte)
            while len(lines) < limit:
                raw = f.readline()
                if not raw.endswith(b"\n"):
                    break
                self.byte += len(raw)
                self.line += 1
                lines.append(raw.decode("utf-8").rstrip("\n"))
        return lines


class FileWorker:
    def __init__(self, args: argparse.Namespace, topic: str, files: dict[int, Path]) -> None:
        self.args = args
        self.topic = topic
        self.files = files
        self.readers: dict[TopicPartition, PartitionReader] = {}
        self.output: TextIO | None = args.output.open("a") if args.output else None
        self.stopping = False
        classic = args.protocol == "classic"
        self.member = GroupMember(
            args.url,
            args.group,
            topics=[topic],
            protocol=args.protocol,
            assignors=["cooperative-sticky"],
            listener=self,
            session_timeout_ms=args.session_timeout_ms,
            heartbeat_interval_ms=args.heartbeat_interval_ms if classic else None,
            client_id=args.name,
        )

    def say(self, text: str) -> None:
        print(f"[{self.args.name}] {text}", flush=True)

    def stop(self) -> None:
        self.stopping = True

    # --- the rebalance listener (called inside poll() and close()) ---

    def on_partitions_assigned(self, partitions: set[TopicPartition]) -> None:
        committed = self.member.committed(partitions)
        for tp in partitions:
            start = committed.get(tp) or 0
            if tp.partition in self.files:
                self.readers[tp] = PartitionReader(self.files[tp.partition], start)
        shown = ", ".join(f"{tp.partition}@{committed.get(tp) or 0}" for tp in sorted(partitions))
        self.say(f"assigned {shown}  (now owns {_fmt(self.readers)})")

    def on_partitions_revoked(self, partitions: set[TopicPartition]) -> None:
        # Commit where we are before someone else takes over.
        positions = {tp: self.readers[tp].line for tp in partitions if tp in self.readers}
        try:
            self.member.commit(positions)
        except GroupcoordError as error:
            self.say(f"could not commit on revocation: {error}")
        for tp in partitions:
            self.readers.pop(tp, None)
        self.say(f"revoked {_fmt(partitions)}  (now owns {_fmt(self.readers)})")

    def on_partitions_lost(self, partitions: set[TopicPartition]) -> None:
        # Someone else may own them already: drop them without committing.
        for tp in partitions:
            self.readers.pop(tp, None)
        self.say(f"lost {_fmt(partitions)}")

    # --- the main loop ---

    def run(self) -> int:
        self.say(f"joining group {self.args.group} on {self.args.url}, topic {self.topic}")
        idle = False
        try:
            while not self.stopping:
                self.member.poll(timeout_s=0.5 if idle else 0.0)
                idle = not self.process_a_batch_each()
        finally:
            self.member.close()
            if self.output is not None:
                self.output.close()
            self.say("closed")
        return 0

    def process_a_batch_each(self) -> bool:
        worked = False
        for tp, reader in sorted(self.readers.items()):
            if self.stopping:
                break
            first = reader.line
            lines = reader.read(self.args.batch)
            if not lines:
                continue
            worked = True
            for offset, line in enumerate(lines, start=first):
                self.process(tp, offset, line)
            try:
                self.member.commit({tp: reader.line})
            except CommitFailed as error:
                # A zombie: the partition moved on. The next poll() rejoins.
                self.say(f"commit of {tp.partition} fenced ({error}); dropping it")
                self.readers.pop(tp, None)
                break
            if not self.args.quiet:
                self.say(f"partition {tp.partition}: processed {first}..{reader.line - 1}")
        return worked

    def process(self, tp: TopicPartition, offset: int, line: str) -> None:
        time.sleep(self.args.delay)
        if self.output is not None:
            record = {"worker": self.args.name, "partition": tp.partition, "offset": offset}
            self.output.write(json.dumps({**record, "line": line}) + "\n")
            self.output.flush()


def _fmt(partitions: Iterable[TopicPartition]) -> str:
    numbers = sorted(tp.partition for tp in partitions)
    return "[" + ",".join(map(str, numbers)) + "]"


if __name__ == "__main__":
    sys.exit(main())
