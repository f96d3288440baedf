"""Streams members heartbeating at once over HTTP: no task is ever active on two members (as
the members themselves see it, each releasing what it was told to revoke before it says so),
and the group converges to one Stable target covering every task."""

from __future__ import annotations

import random
import threading
import time

import pytest

from tests.support.api import Api
from tests.support.consumer import create_topic, unique
from tests.support.streams import STREAMS_SETTINGS, StreamsMember, describe, settle

pytestmark = pytest.mark.coordinator(STREAMS_SETTINGS)
MEMBERS, PARTITIONS, SECONDS = 4, 12, 3.0


def test_concurrent_members_never_share_an_active_task(api: Api) -> None:
    words = unique("words")
    create_topic(api, words, PARTITIONS)
    group = unique("g")
    topology = {"epoch": 1, "subtopologies": [{"subtopologyId": "0", "sourceTopics": [words]}]}
    members = [StreamsMember(Api(api.base_url), group, topology) for _ in range(MEMBERS)]
    owner: dict[int, str] = {}
    lock = threading.Lock()
    violations: list[str] = []

    def record(m: StreamsMember, before: set[int]) -> None:
        now = set(m.active.get("0", ()))
        with lock:
            for p in before - now:  # released (the member stops before it acknowledges)
                if owner.get(p) == m.member_id:
                    del owner[p]
            for p in now - before:
                if p in owner and owner[p] != m.member_id:
                    violations.append(f"task 0_{p} given to {m.member_id} held by {owner[p]}")
                owner[p] = m.member_id

    stop = time.monotonic() + SECONDS

    def run(m: StreamsMember, delay: float) -> None:
        time.sleep(delay)
        m.join()
        record(m, set())
        while time.monotonic() < stop:
            before = set(m.active.get("0", ()))
            if random.random() < 0.7:
                m.heartbeat()
            else:  # a heartbeat that reports nothing: its revocations stay pending
                m.call(activeTasks=None)
            record(m, before)
            time.sleep(random.uniform(0, 0.02))

    threads = [threading.Thread(target=run, args=(m, i * 0.2)) for i, m in enumerate(members)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not violations, violations[:5]
    settle(members, rounds=20)
    held = sorted(p for m in members for p in m.active.get("0", ()))
    assert held == list(range(PARTITIONS))
    described = describe(api, group)
    assert described["groupState"] == "Stable"
    assert described["groupEpoch"] == described["assignmentEpoch"]
