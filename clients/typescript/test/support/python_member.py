"""A Python GroupMember (groupcoord.client) in its own process, for the TypeScript tests' mixed
group: Python and TypeScript members of one group, either protocol.

    python python_member.py '<json: url, group, topics, protocol, assignors, ...>'

Prints one JSON line per listener call ({"kind", "partitions", "memberId", "at"}: epoch
milliseconds, the clock the TypeScript members' lines use too) and polls until SIGTERM, then
closes (leaves).
"""

from __future__ import annotations

import json
import signal
import sys
import threading
import time
from typing import Any

from groupcoord.client import GroupMember, TopicPartition


def say(message: dict[str, Any]) -> None:
    print(json.dumps(message), flush=True)


class PrintingListener:
    member: GroupMember | None = None

    def _say(self, kind: str, partitions: set[TopicPartition]) -> None:
        parts = [{"topic": t, "partition": p} for t, p in sorted(partitions)]
        member_id = self.member.member_id if self.member else ""
        say({"kind": kind, "partitions": parts, "at": time.time() * 1000, "memberId": member_id})

    def on_partitions_assigned(self, partitions: set[TopicPartition]) -> None:
        self._say("assigned", partitions)

    def on_partitions_revoked(self, partitions: set[TopicPartition]) -> None:
        self._say("revoked", partitions)

    def on_partitions_lost(self, partitions: set[TopicPartition]) -> None:
        self._say("lost", partitions)


def main() -> int:
    config = json.loads(sys.argv[1])
    classic = config.get("protocol") == "classic"
    listener = PrintingListener()
    member = GroupMember(
        config["url"],
        config["group"],
        topics=config["topics"],
        protocol=config.get("protocol", "consumer"),
        assignors=config.get("assignors", ["range"]),
        listener=listener,
        session_timeout_ms=config["sessionTimeoutMs"],
        rebalance_timeout_ms=config.get("rebalanceTimeoutMs", 15000),
        heartbeat_interval_ms=config.get("heartbeatIntervalMs") if classic else None,
        client_id=config.get("clientId", "python-member"),
    )
    listener.member = member
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    try:
        while not stop.is_set():
            try:
                member.poll(timeout_s=0.1)
            except Exception as error:  # reported, as the TypeScript members' loops do
                say({"pollError": repr(error)})
                time.sleep(0.1)
    finally:
        member.close()
        say({"closed": True})
    return 0


if __name__ == "__main__":
    sys.exit(main())
