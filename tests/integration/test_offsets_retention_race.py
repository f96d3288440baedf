"""A commit that lands between the retention check's read and its delete is kept
(docs/offsets.md, "Retention"): the check's deletes are conditioned on what it read.
In-process, on the test endpoint, with the commit injected right after the check has read the
offsets."""

from __future__ import annotations

import time
from dataclasses import replace

import pytest

from groupcoord import runtime
from groupcoord.service import offset_retention
from groupcoord.store.deadlines import Overdue
from groupcoord.store.offsets import OffsetStore
from groupcoord.store.retention import KIND as RETENTION_CHECK
from groupcoord.store.store import Store
from tests.support import in_process
from tests.support.in_process import call

# Long enough that reads on the real clock see nothing expired; the checks run far past it.
RETENTION_MS = 60_000


def commit(group: str, offset: int) -> None:
    in_process.commit(group, "t", 0, offset)


def committed(group: str) -> int:
    return in_process.committed(group, "t", 0)


@pytest.fixture
def short_retention(service_configured: Store) -> Store:
    settings = replace(service_configured.settings, offsets_retention_ms=RETENTION_MS)
    store = Store(service_configured.dynamo, settings)
    runtime.configure(settings, store)  # `service_configured` restores the runtime afterwards
    return store


def retention_check(store: Store, group_id: str) -> Overdue:
    """The group's retention check, as the sweeper finds it once it is due."""
    (check,) = [
        due
        for due in store.deadlines.overdue(runtime.now_ms() + 10 * RETENTION_MS)
        if due.group_id == group_id and due.kind == RETENTION_CHECK
    ]
    return check


def test_a_commit_racing_the_expiry_is_kept(
    short_retention: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    call("create-topics", {"topics": [{"name": "t", "numPartitions": 1}]})
    commit("g", 1)
    check = retention_check(short_retention, "g")
    read_all = OffsetStore.fetch_all
    raced: list[int] = []

    def read_then_a_commit_lands(self: OffsetStore, group_id: str):
        found = read_all(self, group_id)
        if not raced:  # once: right after the check's first read, before any delete
            time.sleep(0.005)  # a later commit timestamp than the one read
            commit("g", 2)
            raced.append(2)
        return found

    monkeypatch.setattr(OffsetStore, "fetch_all", read_then_a_commit_lands)
    # Far past the retention: what the check read has expired.
    offset_retention.check_retention(short_retention, check, runtime.now_ms() + 10 * RETENTION_MS)
    monkeypatch.undo()
    assert committed("g") == 2


def test_an_expired_offset_nobody_touched_is_still_deleted(short_retention: Store) -> None:
    call("create-topics", {"topics": [{"name": "t", "numPartitions": 1}]})
    commit("h", 1)
    check = retention_check(short_retention, "h")
    offset_retention.check_retention(short_retention, check, runtime.now_ms() + 10 * RETENTION_MS)
    assert short_retention.offsets.fetch_all("h") == []
