"""KCL's lease items read into leases, mapped to a group's positions and written back
(groupcoord.admin.kcl.leases): the three KCL versions' items, the sentinels, sub-sequences, the
parents KCL deleted, liveness by leaseCounter alone."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from groupcoord.admin.kcl.leases import (
    FIRST_RECORD,
    Lease,
    LeaseFormatError,
    Position,
    Shard,
    export_items,
    finished_ancestors,
    leases_of_stream,
    lineage,
    moved_leases,
    parse_lease,
    parse_leases,
    plan_import,
    unknown_leases,
    written_already,
)

ARN = "arn:aws:kinesis:us-east-1:123456789012:stream/orders"
SEQ = "49590338271490256608559692538361571095921575989136588898"


def item(key: str, checkpoint: str, **extra: Any) -> dict[str, Any]:
    """A KCL 1.x lease item; 2.x and 3.x add attributes (extra)."""
    found = {
        "leaseKey": {"S": key},
        "leaseOwner": {"S": "worker-1"},
        "leaseCounter": {"N": "42"},
        "ownerSwitchesSinceCheckpoint": {"N": "0"},
        "checkpoint": {"S": checkpoint},
        "checkpointSubSequenceNumber": {"N": "0"},
    }
    found.update(extra)
    return found


# A stream: 0 split into 2 and 3; 1 open; 3 and 1 merged into 4.
SHARDS = [
    Shard(0, "shardId-000000000000", (), closed=True),
    Shard(1, "shardId-000000000001", (), closed=True),
    Shard(2, "shardId-000000000002", ("shardId-000000000000",)),
    Shard(3, "shardId-000000000003", ("shardId-000000000000",), closed=True),
    Shard(4, "shardId-000000000004", ("shardId-000000000001", "shardId-000000000003")),
]


# The attributes KCL's lease serializers write (DynamoDBLeaseSerializer, and the multi-stream
# one's streamName and shardId), with their DynamoDB types: an export writes no other.
KCL_ATTRIBUTES = {
    "leaseKey": "S",
    "leaseOwner": "S",
    "leaseCounter": "N",
    "ownerSwitchesSinceCheckpoint": "N",
    "checkpoint": "S",
    "checkpointSubSequenceNumber": "N",
    "parentShardId": "SS",
    "childShardIds": "SS",
    "startingHashKey": "S",
    "endingHashKey": "S",
    "entityType": "S",
    "streamName": "S",
    "shardId": "S",
}


def lease(shard_id: str, checkpoint: str, sub: int = 0, counter: int = 1) -> Lease:
    return Lease(shard_id, shard_id, None, "w", counter, checkpoint, sub, ())


def test_every_kcl_versions_item_reads_into_the_same_lease() -> None:
    parents = {"parentShardId": {"SS": ["shardId-000000000000"]}}
    v1 = item("shardId-000000000002", SEQ, **parents)
    v2 = {
        **v1,
        "childShardIds": {"SS": ["shardId-000000000009"]},
        "startingHashKey": {"S": "0"},
        "endingHashKey": {"S": "1"},
    }
    v3 = {**v2, "checkpointOwner": {"S": "worker-1"}, "throughputKBps": {"N": "1.5"}}
    stream = "123456789012:orders:1700000000"
    multi = {
        **v3,
        "leaseKey": {"S": f"{stream}:shardId-000000000002"},
        "streamName": {"S": stream},
        "shardId": {"S": "shardId-000000000002"},
    }
    keyed_only = {**v1, "leaseKey": {"S": f"{stream}:shardId-000000000002"}}
    read = [parse_lease(i) for i in (v1, v2, v3, multi, keyed_only)]
    assert {(r.shard_id, r.checkpoint, r.counter, r.owner, r.parents) for r in read} == {
        ("shardId-000000000002", SEQ, 42, "worker-1", ("shardId-000000000000",))
    }
    assert [r.stream for r in read] == [None, None, None, stream, stream]


def test_a_kcl_3_5_single_tables_other_entities_are_not_leases() -> None:
    """KCL 3.5 may keep its worker metrics, leader lock, migration states and stream info in
    the lease table, tagged `entityType` (no checkpoint); it tags its leases LEASE. Those
    others are passed over, as KCL's lease serializer passes them over, not refused."""
    tagged = item("shardId-000000000002", SEQ, entityType={"S": "LEASE"})
    untagged = item("shardId-000000000001", "SHARD_END")  # KCL before 3.5
    others = [
        {"leaseKey": {"S": "worker-1"}, "entityType": {"S": "WORKER_METRIC_STATS"}},
        {"leaseKey": {"S": "Leader"}, "entityType": {"S": "LEADER"}},
        {"leaseKey": {"S": "Migration3.0"}, "entityType": {"S": "CLIENT_VERSION_MIGRATION"}},
        {"leaseKey": {"S": "TableMigration3.5"}, "entityType": {"S": "TABLE_MIGRATION"}},
        {"leaseKey": {"S": "123456789012:orders:1"}, "entityType": {"S": "STREAM"}},
    ]
    read = parse_leases([others[0], tagged, *others[1:], untagged])
    assert [(r.shard_id, r.checkpoint) for r in read] == [
        ("shardId-000000000002", SEQ),
        ("shardId-000000000001", "SHARD_END"),
    ]
    with pytest.raises(LeaseFormatError):  # a lease KCL would read must still be one
        parse_leases([{**others[0], "entityType": {"S": "LEASE"}}])


def test_a_checkpoint_means_after_that_record_with_its_sub_sequence() -> None:
    aggregated = parse_lease(item("s", SEQ, checkpointSubSequenceNumber={"N": "3"}))
    assert aggregated.position() == Position(SEQ, 3)
    assert aggregated.position().to_api() == {"sequenceNumber": SEQ, "subSequenceNumber": 3}
    assert parse_lease(item("s", "SHARD_END")).position() == Position(shard_end=True)
    # TRIM_HORIZON is the shard's first record, whatever the topic's initial position.
    assert parse_lease(item("s", "TRIM_HORIZON")).position() == FIRST_RECORD == Position("0")
    assert FIRST_RECORD.text() == "TRIM_HORIZON"
    for start in ("LATEST", "AT_TIMESTAMP"):  # KCL's initial position: the topic's applies
        assert parse_lease(item("s", start)).position() is None


@pytest.mark.parametrize(
    "bad",
    [
        {"leaseKey": {"N": "1"}},
        {"checkpoint": {"S": "12a"}},
        {"checkpoint": {"S": "9" * 130}},
        {"checkpointSubSequenceNumber": {"N": "-1"}},
        {"leaseCounter": {"N": str(2**63)}},
        {"leaseCounter": {"S": "x"}, "checkpoint": {"S": "LATE"}},
        {"leaseKey": {"S": "a:b"}},
        {"leaseKey": {"S": "shard/1"}},
        {"parentShardId": {"SS": ["x" * 129]}},
    ],
)
def test_an_item_kcl_would_not_read_is_refused(bad: dict[str, Any]) -> None:
    with pytest.raises(LeaseFormatError):
        parse_lease({**item("shardId-1", SEQ), **bad})


def test_a_multi_stream_table_gives_only_the_topics_streams_leases() -> None:
    mine = Lease("k", "s1", "123456789012:orders:1", None, 1, SEQ, 0, ())
    other_name = Lease("k2", "s1", "123456789012:orders2:1", None, 1, SEQ, 0, ())
    other_account = Lease("k3", "s1", "999999999999:orders:1", None, 1, SEQ, 0, ())
    assert leases_of_stream([mine, other_name, other_account], ARN) == (
        [mine],
        "123456789012:orders:1",
    )
    single = lease("s1", SEQ)
    assert leases_of_stream([single], ARN) == ([single], None)
    again = Lease("k4", "s1", "123456789012:orders:2", None, 1, SEQ, 0, ())
    with pytest.raises(ValueError, match="2 incarnations"):
        leases_of_stream([mine, again], ARN)
    with pytest.raises(ValueError, match="mixes"):
        leases_of_stream([mine, single], ARN)


def test_liveness_is_a_moving_lease_counter_not_an_owner() -> None:
    stopped = [lease("a", SEQ, counter=5), lease("b", SEQ, counter=7)]
    assert moved_leases(stopped, list(stopped)) == []  # owners named, nothing renewed
    renewed = [lease("a", SEQ, counter=6), lease("b", SEQ, counter=7)]
    assert [m.key for m in moved_leases(stopped, renewed)] == ["a"]
    assert [m.key for m in moved_leases(stopped, stopped[:1])] == ["b"]  # one went
    assert [m.key for m in moved_leases(stopped[:1], stopped)] == ["b"]  # one came


def test_finished_ancestors_of_a_merge_and_a_split() -> None:
    parents = lineage(SHARDS)
    assert finished_ancestors(parents, ["shardId-000000000004"]) == {
        "shardId-000000000000",
        "shardId-000000000001",
        "shardId-000000000003",
    }
    assert finished_ancestors(parents, ["shardId-000000000002"]) == {"shardId-000000000000"}
    assert finished_ancestors(parents, ["shardId-000000000001"]) == set()


def test_import_maps_each_lease_and_finishes_the_parents_kcl_deleted() -> None:
    """KCL deletes a parent's lease once its children run: 0 (no lease, children leased) is
    finished; 3 has SHARD_END; 1 is mid-shard; 2 has not started (TRIM_HORIZON: its first
    record); 4 has no lease yet, below leased shards: KCL would lease it at TRIM_HORIZON."""
    leases = [
        lease("shardId-000000000001", SEQ, sub=2),
        lease("shardId-000000000002", "TRIM_HORIZON"),
        lease("shardId-000000000003", "SHARD_END"),
        lease("shardId-000000000099", SEQ),  # expired before the topic was bound
    ]
    steps = plan_import(SHARDS, leases)
    assert [(s.shard.partition, s.target) for s in steps] == [
        (0, Position(shard_end=True)),
        (1, Position(SEQ, 2)),
        (2, FIRST_RECORD),
        (3, Position(shard_end=True)),
        (4, FIRST_RECORD),
    ]
    assert [u.shard_id for u in unknown_leases(SHARDS, leases)] == ["shardId-000000000099"]
    # A LATEST lease on 2 alone: 0 above it finished; 2 at the topic's initial position; the
    # shards neither above nor below a lease keep no position.
    alone = plan_import(SHARDS, [lease("shardId-000000000002", "LATEST")])
    assert [s.target for s in alone] == [Position(shard_end=True), None, None, None, None]


def test_export_writes_a_lease_per_shard_kcl_resumes_from() -> None:
    positions = {
        "shardId-000000000000": Position(shard_end=True),
        "shardId-000000000001": Position(SEQ, 2),
        "shardId-000000000002": Position("0"),  # --to-sequence 0: from the first record
    }
    existing = {"shardId-000000000001": lease("shardId-000000000001", "LATEST", counter=9)}
    items = export_items(SHARDS, positions, ["shardId-000000000003"], existing, None)
    got = {i["leaseKey"]["S"]: i for i in items}
    assert [i["leaseKey"]["S"] for i in items] == [s.shard_id for s in SHARDS]
    checkpoints = {
        k: (i["checkpoint"]["S"], i["checkpointSubSequenceNumber"]["N"]) for k, i in got.items()
    }
    assert checkpoints == {
        "shardId-000000000000": ("SHARD_END", "0"),
        "shardId-000000000001": (SEQ, "2"),
        "shardId-000000000002": ("TRIM_HORIZON", "0"),
        "shardId-000000000003": ("TRIM_HORIZON", "0"),  # assignable, not started
        "shardId-000000000004": ("TRIM_HORIZON", "0"),  # waits for 1 and 3 in KCL too
    }
    assert got["shardId-000000000001"]["leaseCounter"] == {"N": "10"}  # past the old one
    assert got["shardId-000000000004"]["parentShardId"] == {
        "SS": ["shardId-000000000001", "shardId-000000000003"]
    }
    assert got["shardId-000000000000"]["childShardIds"] == {
        "SS": ["shardId-000000000002", "shardId-000000000003"]
    }
    assert all(
        "leaseOwner" not in i and i["ownerSwitchesSinceCheckpoint"] == {"N": "0"} for i in items
    )
    # Tagged a lease, as KCL 3.5 writes every lease (a single table holds other entities).
    assert all(i["entityType"] == {"S": "LEASE"} for i in items)
    assert "parentShardId" not in got["shardId-000000000000"]  # DynamoDB has no empty set


def test_export_finishes_what_lies_behind_the_group_and_keys_by_the_tables_stream() -> None:
    """A shard behind an assignable or positioned one is finished (closed before a LATEST
    group started, or expired) though the group never committed its end."""
    stream = "123456789012:orders:1700000000"
    items = export_items(SHARDS, {}, ["shardId-000000000004"], {}, stream)
    got = {i["shardId"]["S"]: i for i in items}
    assert {k for k, i in got.items() if i["checkpoint"]["S"] == "SHARD_END"} == {
        "shardId-000000000000",
        "shardId-000000000001",
        "shardId-000000000003",
    }
    assert got["shardId-000000000002"]["checkpoint"]["S"] == "TRIM_HORIZON"
    assert got["shardId-000000000004"]["leaseKey"]["S"] == f"{stream}:shardId-000000000004"
    assert got["shardId-000000000004"]["streamName"]["S"] == stream
    single = export_items(SHARDS, {}, ["shardId-000000000004"], {}, None)
    for written in (*items, *single):
        assert {name: kind for name, value in written.items() for kind in value} == {
            name: KCL_ATTRIBUTES[name] for name in written
        }


def test_an_exported_table_imports_back_to_the_same_positions() -> None:
    positions = {
        "shardId-000000000000": Position(shard_end=True),
        "shardId-000000000001": Position(SEQ, 2),
        "shardId-000000000003": Position(SEQ, 0),
    }
    items = export_items(SHARDS, positions, [], {}, None)
    steps = plan_import(SHARDS, [parse_lease(i) for i in items])
    not_started = {"shardId-000000000002": FIRST_RECORD, "shardId-000000000004": FIRST_RECORD}
    assert {s.shard.shard_id: s.target for s in steps} == {**positions, **not_started}


def test_a_reshard_the_coordinator_has_not_synced_is_learnt_from_the_leases() -> None:
    """The topic lists shard 1 open, the lease table already has its children (1 split into
    5 and 6): 1's lease deleted by KCL, 5 mid-way. Shard 1 is finished and its end names the
    children, which the coordinator then syncs."""
    unsynced = [SHARDS[0], Shard(1, "shardId-000000000001"), SHARDS[2], SHARDS[3]]
    child = Lease(
        "shardId-000000000005",
        "shardId-000000000005",
        None,
        "w",
        1,
        SEQ,
        0,
        ("shardId-000000000001",),
    )
    steps = {s.shard.shard_id: s for s in plan_import(unsynced, [child])}
    assert steps["shardId-000000000001"].target == Position(shard_end=True)
    assert steps["shardId-000000000001"].children == ("shardId-000000000005",)
    assert steps["shardId-000000000000"].target is None  # no lease below it
    assert steps["shardId-000000000000"].children == ()


def test_an_export_run_again_finds_every_lease_written_already() -> None:
    """Unowned, the same checkpoint and parents: nothing to write (the leaseCounter stays).
    An owner still named (a stopped application's), another checkpoint or other parents: the
    lease is written."""
    positions = {
        "shardId-000000000000": Position(shard_end=True),
        "shardId-000000000002": Position(SEQ, 2),
    }
    items = export_items(SHARDS, positions, [], {}, None)
    table = {lease.shard_id: lease for lease in (parse_lease(i) for i in items)}
    assert all(written_already(i, table[i["leaseKey"]["S"]]) for i in items)
    two = items[2]
    assert two["leaseKey"]["S"] == "shardId-000000000002"
    before = table["shardId-000000000002"]
    assert not written_already(two, None)
    assert not written_already(two, replace(before, owner="worker-1"))
    assert not written_already(two, replace(before, sub_sequence=1))
    assert not written_already(two, replace(before, checkpoint="TRIM_HORIZON", sub_sequence=0))
    assert not written_already(two, replace(before, parents=()))
