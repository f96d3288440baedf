"""A post answered Gone forgets the member's connection only when that connection was not made
current (its `$connect` or a ping) within the last GONE_SPARED_MS: API Gateway, like `serve`,
answers Gone for a connection whose handshake is still under way, and forgetting it then cut the
member off from every later notice (seen in bench.push: one member in several runs heard
nothing after a notice landed in its handshake). The store runs on the in-memory adapter and a
clock the test sets."""

from __future__ import annotations

from groupcoord.local.memory import memory_store
from groupcoord.service.push import notify_members
from groupcoord.settings import Settings
from groupcoord.store.push import GONE_SPARED_MS, ConnectionGone, PushConnection
from groupcoord.store.store import Store
from tests.support.clock import FakeClock

T0 = 1_800_000_000_000


class GonePoster:
    """Every post answered Gone, as for a socket whose handshake has not ended."""

    def __init__(self) -> None:
        self.posts: list[str] = []

    def post(self, connection_id: str, data: bytes) -> None:
        self.posts.append(connection_id)
        raise ConnectionGone(connection_id)


def _store_with_connection(clock: FakeClock) -> tuple[Store, GonePoster]:
    store = memory_store(Settings.from_mapping({"groupcoord.table.name": "push-gone"}))
    store.ensure_table()
    store.dynamo.clock = clock
    store.clock = clock
    poster = GonePoster()
    store.push_poster = poster
    store.push.open(PushConnection("g", "m", "c1", "User:alice"), clock.now_ms())
    return store, poster


def test_a_gone_answer_during_the_handshake_keeps_the_connection() -> None:
    clock = FakeClock(T0)
    store, poster = _store_with_connection(clock)
    clock.advance(GONE_SPARED_MS - 1)
    assert notify_members(store, "g", ["m"]) == 0
    assert [c.connection_id for c in store.push.of_members("g", ["m"])] == ["c1"]
    assert notify_members(store, "g", ["m"]) == 0  # a later notice is posted again
    assert poster.posts == ["c1", "c1"]


def test_a_ping_counts_as_seen_and_a_stale_gone_connection_is_forgotten() -> None:
    clock = FakeClock(T0)
    store, _ = _store_with_connection(clock)
    clock.advance(GONE_SPARED_MS + 1)
    assert store.push.reassert("c1")  # a ping: seen now
    notify_members(store, "g", ["m"])
    assert [c.connection_id for c in store.push.of_members("g", ["m"])] == ["c1"]
    clock.advance(GONE_SPARED_MS + 1)
    notify_members(store, "g", ["m"])
    assert store.push.of_members("g", ["m"]) == []
