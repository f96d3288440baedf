"""A classic group too big for one transaction: its barrier still completes atomically enough
(idempotent member writes first, the group flip last)."""

from __future__ import annotations

from groupcoord.core.classic.model import (
    COMPLETING_REBALANCE,
    PREPARING_REBALANCE,
    ClassicGroup,
    ClassicMember,
    Protocol,
)
from groupcoord.service.classic.common import classic_store, load, settle
from groupcoord.store.classic_groups import ClassicTransition, member_to_item
from groupcoord.store.store import Store

MEMBERS = 250


def test_a_join_barrier_of_250_members_completes(store: Store) -> None:
    now = 1_000_000
    group = ClassicGroup(
        group_id="big",
        state=PREPARING_REBALANCE,
        generation=4,
        protocol_type="consumer",
        member_count=MEMBERS,
        joined_count=MEMBERS,
        protocol_counts={"range": MEMBERS},
        rebalance_timeout_ms=60_000,
        rebalance_started_ms=now - 10,
        join_deadline_ms=now + 60_000,
        member_shards=store.settings.member_shards,
        next_check_ms=now + 60_000,
    )
    members = [
        ClassicMember(
            member_id=f"m-{i:04d}",
            session_timeout_ms=30_000,
            rebalance_timeout_ms=60_000,
            expiry_ms=30_000,
            protocol_type="consumer",
            protocols=(Protocol("range", b""),),
            joined_generation=5,
            joined_at_ms=now - 1000 + i,
            session_deadline_ms=now + 100,
        )
        for i in range(MEMBERS)
    ]
    groups = classic_store(store)
    groups.commit(ClassicTransition(group=group, expected_version=None))
    store.dynamo.batch_write(puts=[member_to_item(group, m) for m in members])

    loaded = load(store, "big")
    assert loaded is not None
    settled = settle(store, loaded, now)

    assert settled.state == COMPLETING_REBALANCE
    assert settled.generation == 5
    assert settled.member_count == MEMBERS
    assert settled.leader == "m-0000"  # the first to join
    after = {m.member_id: m for m in groups.members(settled)}
    assert len(after) == MEMBERS
    # Every member's session restarted with the new generation, beyond one transaction's reach.
    assert all(m.session_deadline_ms == now + 30_000 for m in after.values())
    assert all(m.joined_generation == 5 for m in after.values())
