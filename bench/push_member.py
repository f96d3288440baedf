"""One member process of bench/push.py: an OS process of its own (so that a SIGKILL is real)
that joins a group when told, and says on stdout, as JSON lines stamped with
`time.monotonic()` (one clock for every process of the machine), what it owns whenever that
changes. The parent writes commands on stdin, one JSON object a line:

- `{"op": "join", "system": "groupcoord", "url": ..., "group": ..., "topic": ...,
  "session_ms": ...}`: a GroupMember (the Python client, as a user runs it: push when the
  coordinator offers it) polled on this process's main thread; its rebalance listener's calls
  are the events;
- `{"op": "join", "system": "zookeeper", "hosts": ..., "group": ..., "partitions": ...,
  "session_ms": ..., "time_boundary_s": ...}`: a kazoo client running the SetPartitioner
  recipe in its documented loop (release when told, then acquire);
- `{"op": "leave"}`: leave the group gracefully (GroupMember.close(), or the partitioner's
  finish() and the session closed); the process stays, idle, for another join;
- `{"op": "exit"}`.

Events: `ready` (imports done), `joining`, `assigned`/`revoked`/`lost` with the partitions
(`p`), `leaving`, `left`, `error` (with `msg`). Run as `python -m bench.push_member` from the
repository root. Imports only the client (and kazoo for ZooKeeper), never the server side.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import queue
import sys
import threading
import time
import traceback
from typing import Any, Protocol

_out_lock = threading.Lock()
POLL_S = 0.05


def emit(event: str, partitions: set[int] | None = None, **fields: Any) -> None:
    """One event on stdout, stamped now."""
    record: dict[str, Any] = {"t": time.monotonic(), "ev": event, **fields}
    if partitions is not None:
        record["p"] = sorted(partitions)
    with _out_lock:
        sys.stdout.write(json.dumps(record) + "\n")
        sys.stdout.flush()


class Member(Protocol):
    def step(self) -> None:
        """Do the group's pending work, waiting up to about POLL_S for some."""

    def close(self) -> None:
        """Leave the group gracefully."""


class Listener:
    """GroupMember's rebalance listener, telling the parent each change."""

    def on_partitions_revoked(self, partitions: set[Any]) -> None:
        emit("revoked", {tp.partition for tp in partitions})

    def on_partitions_assigned(self, partitions: set[Any]) -> None:
        emit("assigned", {tp.partition for tp in partitions})

    def on_partitions_lost(self, partitions: set[Any]) -> None:
        emit("lost", {tp.partition for tp in partitions})


class GroupcoordMember:
    def __init__(self, command: dict[str, Any]) -> None:
        from groupcoord.client.member import GroupMember

        self.member = GroupMember(
            command["url"],
            command["group"],
            topics=[command["topic"]],
            listener=Listener(),
            session_timeout_ms=command["session_ms"],
        )

    def step(self) -> None:
        self.member.poll(POLL_S)

    def close(self) -> None:
        self.member.close()


class ZookeeperMember:
    """kazoo's SetPartitioner in the loop its documentation gives: on RELEASE give the set up
    and release it, on ACQUIRED work on it, while ALLOCATING wait."""

    def __init__(self, command: dict[str, Any]) -> None:
        from kazoo.client import KazooClient

        self.changed = threading.Event()
        self.client = KazooClient(command["hosts"], timeout=command["session_ms"] / 1000)
        self.client.start(timeout=30)
        self.owned: set[int] = set()
        self.failed = False
        self.partitioner = self.client.SetPartitioner(
            path=f"/bench/{command['group']}",
            set=list(range(command["partitions"])),
            identifier=f"member-{os.getpid()}",
            time_boundary=command["time_boundary_s"],
            state_change_event=self.changed,
        )

    def step(self) -> None:
        partitioner = self.partitioner
        if partitioner.failed:
            if not self.failed:  # said once; the member stays out of the party from then on
                self.failed = True
                self._give_up("lost")
                raise RuntimeError("the partitioner failed (its session was lost)")
            time.sleep(POLL_S)
            return
        if partitioner.release:
            self._give_up("revoked")
            partitioner.release_set()
        elif partitioner.acquired:
            acquired = set(partitioner)
            if acquired != self.owned:
                self._give_up("revoked")
                self.owned = acquired
                if acquired:
                    emit("assigned", acquired)
        self.changed.wait(POLL_S)
        self.changed.clear()

    def _give_up(self, event: str) -> None:
        if self.owned:
            emit(event, self.owned)
            self.owned = set()

    def close(self) -> None:
        self._give_up("revoked")
        self.partitioner.finish()
        self.client.stop()
        self.client.close()


def start(command: dict[str, Any]) -> Member:
    if command["system"] == "zookeeper":
        return ZookeeperMember(command)
    return GroupcoordMember(command)


def read_commands(commands: queue.Queue[dict[str, Any]]) -> None:
    for line in sys.stdin:
        if line.strip():
            commands.put(json.loads(line))
    commands.put({"op": "exit"})  # the parent went away


def main() -> None:
    # The client's warnings (a fallback to polling, a socket that dropped) on stderr, which
    # the parent keeps (bench/push_cluster.py: $GROUPCOORD_BENCH_PUSH_LOGS).
    level = os.environ.get("GROUPCOORD_BENCH_PUSH_LOG_LEVEL", "INFO")
    logging.basicConfig(level=level, stream=sys.stderr,
                        format="%(asctime)s %(name)s %(levelname)s %(message)s")  # fmt: skip
    commands: queue.Queue[dict[str, Any]] = queue.Queue()
    threading.Thread(target=read_commands, args=(commands,), daemon=True).start()
    # Imported before `ready`, so that a join is timed without the imports.
    import groupcoord.client.member  # noqa: F401

    with contextlib.suppress(ImportError):  # ZooKeeper's members run only where it is there
        import kazoo.client  # noqa: F401

    emit("ready")
    member: Member | None = None
    while True:
        try:
            command = commands.get(timeout=POLL_S) if member is None else commands.get_nowait()
        except queue.Empty:
            command = None
        try:
            if command is not None and command["op"] == "exit":
                return
            if command is not None and command["op"] == "join" and member is None:
                emit("joining")
                member = start(command)
            elif command is not None and command["op"] == "leave" and member is not None:
                emit("leaving")
                member, leaving = None, member
                leaving.close()
                emit("left")
            elif member is not None:
                member.step()
        except Exception as error:  # told to the parent, which counts it against the run
            emit("error", msg=f"{type(error).__name__}: {error}", trace=traceback.format_exc())
            time.sleep(POLL_S)


if __name__ == "__main__":
    main()
