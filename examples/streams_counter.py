#!/usr/bin/env python3
"""A keyed counter with standbys: a stateful service in a streams group (docs/streams.md).

The input is a folder with one file per partition (`input/0.txt`, ...): each line is a key,
its line number its offset. Task p counts the keys of partition p. Its state lives in a local
state file per process (`<state>/<task>.json`), and every update is also appended to the
task's changelog (`changelog/<p>.log`, shared by the processes as a changelog topic would
be). A process holding a task as standby (or warm-up) tails its changelog into its own state
file, so that when the active's process dies the standby takes over with its state warm,
instead of rebuilding it from the whole changelog. Each process answers interactive queries on
its port: `GET /count/<partition>/<key>` from the state it holds active, else a redirect to the
endpoint the coordinator names for that partition.

    python examples/streams_counter.py ./data --state ./state-a --port 7101
    python examples/streams_counter.py ./data --state ./state-b --port 7102
    curl -L http://127.0.0.1:7101/count/0/apple

`--once` processes what is there and exits (for tests): it prints the counts it holds.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from groupcoord.client import StreamsMember, StreamsTasks
from groupcoord.client.transport import Transport

SUBTOPOLOGY = "0"
IDLE_S = 0.1  # the longest pause between rounds without input (standbys tail their changelog)


def topology(topic: str, app: str) -> dict[str, Any]:
    return {
        "epoch": 1,
        "subtopologies": [
            {
                "subtopologyId": SUBTOPOLOGY,
                "sourceTopics": [topic],
                "stateChangelogTopics": [{"name": f"{app}-counts-changelog"}],
            }
        ],
    }


def lines(path: Path) -> list[str]:
    return path.read_text().splitlines() if path.exists() else []


class Store:
    """One task's state: the counts, the input offset they cover, and how much of the
    changelog they include; kept in a local file, written after every batch."""

    def __init__(self, path: Path) -> None:
        self.path = path
        saved = json.loads(path.read_text()) if path.exists() else {}
        self.counts: dict[str, int] = saved.get("counts", {})
        self.input_offset: int = saved.get("inputOffset", 0)
        self.changelog_offset: int = saved.get("changelogOffset", 0)

    def save(self) -> None:
        data = {"counts": self.counts, "inputOffset": self.input_offset,
                "changelogOffset": self.changelog_offset}  # fmt: skip
        # Written aside and renamed over the old one: a process killed mid-write leaves the
        # last whole store, never an empty or half-written one its restart cannot read.
        written = self.path.with_name(self.path.name + ".tmp")
        written.write_text(json.dumps(data))
        os.replace(written, self.path)


class Counter:
    def __init__(self, args: argparse.Namespace, topic: str) -> None:
        self.args = args
        self.topic = topic
        self.data: Path = args.data
        self.state: Path = args.state
        self.state.mkdir(parents=True, exist_ok=True)
        (self.data / "changelog").mkdir(exist_ok=True)
        process = self.state / "process-id"
        if not process.exists():
            process.write_text(os.urandom(8).hex())
        self.stores: dict[int, Store] = {}
        self.running = True
        self.member = StreamsMember(
            args.url,
            args.group,
            topology(topic, args.group),
            process_id=process.read_text(),
            endpoint=("127.0.0.1", args.port),
            listener=self,
        )

    # --- the listener: open and close tasks' stores ---

    def on_tasks_revoked(self, tasks: StreamsTasks) -> None:
        print(f"revoked {tasks}", flush=True)
        for p in tasks.active.get(SUBTOPOLOGY, ()):
            self.store(p).save()  # state stays on disk: a standby of it here reuses it

    def on_tasks_assigned(self, tasks: StreamsTasks) -> None:
        print(f"assigned {tasks}", flush=True)
        for p in sorted(tasks.active.get(SUBTOPOLOGY, ())):
            # A standby (or warm-up) of the task here has kept its state: only the changelog's
            # tail is left to replay, where a cold start replays all of it.
            offset, total = self.store(p).changelog_offset, len(lines(self.changelog(p)))
            print(f"active {SUBTOPOLOGY}_{p}: state at changelog offset {offset} of {total}",
                  flush=True)  # fmt: skip

    def store(self, partition: int) -> Store:
        if partition not in self.stores:
            self.stores[partition] = Store(self.state / f"{SUBTOPOLOGY}_{partition}.json")
        return self.stores[partition]

    # --- the work ---

    def changelog(self, partition: int) -> Path:
        return self.data / "changelog" / f"{partition}.log"

    def restore(self, partition: int) -> Store:
        """Catch the store up with its changelog (all of it for a cold store)."""
        store = self.store(partition)
        records = lines(self.changelog(partition))
        for line in records[store.changelog_offset :]:
            record = json.loads(line)
            store.counts[record["key"]] = record["count"]
            store.input_offset = record["inputOffset"]
        store.changelog_offset = len(records)
        return store

    def process(self, partition: int) -> int:
        """Count the new input of an active task; every update goes to the changelog."""
        store = self.restore(partition)
        records = lines(self.data / "input" / f"{partition}.txt")
        with self.changelog(partition).open("a") as log:
            for offset in range(store.input_offset, len(records)):
                key = records[offset].strip()
                store.counts[key] = store.counts.get(key, 0) + 1
                store.input_offset = offset + 1
                update = {"key": key, "count": store.counts[key], "inputOffset": offset + 1}
                log.write(json.dumps(update) + "\n")
                store.changelog_offset += 1
        store.save()
        self.member.commit({(self.topic, partition): store.input_offset})
        return len(records) - store.input_offset

    def step(self, wait_s: float = 0.0) -> bool:
        """One round: heartbeat (waiting up to `wait_s` for one to be due, or for a push
        notice), process the active tasks, warm the others, report offsets. True while input
        is left."""
        tasks = self.member.poll(wait_s)
        left = sum(self.process(p) for p in sorted(tasks.active.get(SUBTOPOLOGY, ())))
        warm = {*tasks.standby.get(SUBTOPOLOGY, ()), *tasks.warmup.get(SUBTOPOLOGY, ())}
        for p in sorted(warm):
            self.restore(p).save()
        held = sorted({*tasks.active.get(SUBTOPOLOGY, ()), *warm})
        self.member.report_offsets(
            {(SUBTOPOLOGY, p): self.store(p).changelog_offset for p in held},
            {(SUBTOPOLOGY, p): len(lines(self.changelog(p))) for p in held},
        )
        return left > 0

    def run(self) -> int:
        server = self.serve()
        try:
            more = True
            while self.running:
                # Input left: on at once. Else the next round waits in poll(), which returns as
                # a notice's heartbeat is answered: a task moved here is served right away.
                more = self.step(0.0 if more else IDLE_S)
                if self.args.once and not more and self.member.tasks.active:
                    break
        finally:
            self.member.close()
            server.shutdown()
        for p, store in sorted(self.stores.items()):
            print(json.dumps({"partition": p, "counts": store.counts}), flush=True)
        return 0

    # --- interactive queries ---

    def serve(self) -> ThreadingHTTPServer:
        counter = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                parts = self.path.strip("/").split("/")
                if len(parts) != 3 or parts[0] != "count" or not parts[1].isdigit():
                    self.send_error(404)
                    return
                partition, key = int(parts[1]), parts[2]
                if partition in counter.member.tasks.active.get(SUBTOPOLOGY, ()):
                    body = json.dumps(
                        {"key": key, "count": counter.store(partition).counts.get(key, 0)}
                    )
                    self.send_response(200)
                    self.end_headers()
                    self.wfile.write(body.encode())
                    return
                owner = counter.member.route(counter.topic, partition)
                if owner is None:
                    self.send_error(503, "no owner known yet")
                    return
                self.send_response(307)
                self.send_header("Location", f"http://{owner[0]}:{owner[1]}{self.path}")
                self.end_headers()

            def log_message(self, *_: object) -> None:
                pass

        server = ThreadingHTTPServer(("127.0.0.1", self.args.port), Handler)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        return server


def ensure_topic(url: str, topic: str, partitions: int) -> None:
    Transport(url).call("create-topics", {"topics": [{"name": topic, "numPartitions": partitions}]})


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("data", type=Path, help="a folder with input/<partition>.txt")
    parser.add_argument("--url", default=os.environ.get("GROUPCOORD_URL", "http://127.0.0.1:8080"))
    parser.add_argument("--group", default="counter")
    parser.add_argument("--state", type=Path, required=True, help="this process's state folder")
    parser.add_argument("--port", type=int, default=7101, help="interactive queries (loopback)")
    parser.add_argument("--once", action="store_true", help="process what is there, then exit")
    args = parser.parse_args(argv)
    inputs = sorted((args.data / "input").glob("*.txt"))
    topic = f"{args.group}-input"
    ensure_topic(args.url, topic, len(inputs))
    counter = Counter(args, topic)
    signal.signal(signal.SIGTERM, lambda *_: setattr(counter, "running", False))
    signal.signal(signal.SIGINT, lambda *_: setattr(counter, "running", False))
    return counter.run()


if __name__ == "__main__":
    raise SystemExit(main())
