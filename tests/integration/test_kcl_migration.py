"""`groupcoord kinesis import-kcl` and `export-kcl` against kinesis-local, a coordinator on
DynamoDB Local and KCL lease tables on DynamoDB Local, as an operator moves an application:
lease tables written in KCL 1.x, 2.x and 3.5 (multi-stream, its other entities in the lease
table) format over a stream with records
at known sequence numbers (a KPL aggregate checkpointed inside itself) and a split whose
parent is finished; a dry run writes nothing; the import; a second import changes nothing;
a KinesisConsumer then reads every record after the checkpoints once and none at or before
them; the export back into the lease table imports to the same positions. A live lease table
and a group with members are refused."""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import boto3
import pytest
from aws_kinesis_agg.aggregator import RecordAggregator

from groupcoord.admin.kcl import lease_table as kcl_lease_table
from groupcoord.cli import main
from groupcoord.client import GroupMember
from groupcoord.store.store import Store
from tests.support.api import Api
from tests.support.kinesis import (
    FAST_LOOP_SETTINGS,
    REGION,
    Streams,
    deployment_fixture,
    fetched_position,
    new_topic,
    resharded,
    streams_fixture,
)
from tests.support.kinesis_loop import Running

deployed = deployment_fixture(FAST_LOOP_SETTINGS)
streams = streams_fixture()
FAILOVER_MS = "300"  # the tests' failoverTimeMillis: two reads this far apart


@pytest.fixture(scope="module")
def dynamodb(dynamodb_endpoint: str) -> Any:
    return boto3.client("dynamodb", endpoint_url=dynamodb_endpoint, region_name=REGION)


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def kcl(
    api: Api, endpoint: str, capsys: pytest.CaptureFixture[str], action: str, *args: str
) -> tuple[int, Any, str]:
    """`groupcoord kinesis ACTION ... --json` as an operator runs it: (status, document, err)."""
    capsys.readouterr()
    argv = ["kinesis", action, "--url", api.base_url, "--json", "--dynamodb-endpoint", endpoint]
    code = main([*argv, "--failover-time-ms", FAILOVER_MS, *args])  # `args` may override
    out, err = capsys.readouterr()
    return code, json.loads(out) if code == 0 else None, err


def options(table: str, topic: str, group: str) -> list[str]:
    return ["--lease-table", table, "--topic", topic, "--group", group]


@dataclass
class Stream:
    """Shard 0 split into `low` and `high`; shard 1 open. `records[shard]`: (data,
    sequence, sub-sequence) in order; `after`: the data a group resuming from the
    checkpoints must read."""

    arn: str
    topic: str
    low: str = ""
    high: str = ""
    records: dict[str, list[tuple[str, str, int]]] = field(default_factory=dict)
    after: list[str] = field(default_factory=list)


def put(streams: Streams, stream: Stream, shard_id: str, *data: str) -> None:
    shard = next(s for s in streams.shards(stream.arn) if s["ShardId"] == shard_id)
    hash_key = shard["HashKeyRange"]["StartingHashKey"]
    for d in data:
        answer = streams.client.put_record(
            StreamARN=stream.arn, PartitionKey="k", Data=d.encode(), ExplicitHashKey=hash_key
        )
        stream.records.setdefault(shard_id, []).append((d, answer["SequenceNumber"], 0))


def put_aggregate(streams: Streams, stream: Stream, shard_id: str, *data: str) -> None:
    """A KPL aggregate of `data`: one Kinesis record, its user records by sub-sequence."""
    shard = next(s for s in streams.shards(stream.arn) if s["ShardId"] == shard_id)
    aggregator = RecordAggregator()
    for d in data:
        assert aggregator.add_user_record("k", d.encode()) is None
    key, _, blob = aggregator.clear_and_get().get_contents()
    answer = streams.client.put_record(
        StreamARN=stream.arn,
        PartitionKey=key,
        Data=blob,
        ExplicitHashKey=shard["HashKeyRange"]["StartingHashKey"],
    )
    records = stream.records.setdefault(shard_id, [])
    records.extend((d, answer["SequenceNumber"], i) for i, d in enumerate(data))


@pytest.fixture(scope="module")
def stream(deployed: tuple[Api, Store], streams: Streams) -> Stream:
    """Records in shards 0 and 1, shard 0 split, records in its children and in 1."""
    api, store = deployed
    arn = streams.create(2)
    made = Stream(arn, new_topic(api, arn))
    zero, one = (s["ShardId"] for s in streams.shards(arn))
    put(streams, made, zero, "zero-0", "zero-1", "zero-2")
    put(streams, made, one, "one-0", "one-1")
    put_aggregate(streams, made, one, "agg-0", "agg-1", "agg-2", "agg-3")
    streams.split(arn, zero)
    resharded(store, made.topic)
    children = [s for s in streams.shards(arn) if s.get("ParentShardId") == zero]
    made.low, made.high = (s["ShardId"] for s in children)
    put(streams, made, made.low, "low-0", "low-1", "low-2")
    put(streams, made, made.high, "high-0", "high-1")
    put(streams, made, one, "one-2")
    return made


def checkpoints(stream: Stream) -> dict[str, tuple[str, int]]:
    """The KCL application's checkpoints: shard 1 inside the aggregate (after agg-1), the
    low child after its first record, the high child not started; shard 0 finished."""
    (zero, one) = sorted(stream.records)[:2]
    _, aggregate, _ = stream.records[one][3]
    return {
        zero: ("SHARD_END", 0),
        one: (aggregate, 1),
        stream.low: (stream.records[stream.low][0][1], 0),
        stream.high: ("TRIM_HORIZON", 0),
    }


EXPECTED_AFTER = {"agg-2", "agg-3", "one-2", "low-1", "low-2", "high-0", "high-1"}
# What a single-table KCL 3.5 application keeps in its lease table beside the leases (tagged
# `entityType`, no checkpoint): a worker's metrics, the leader lock, the migration states.
KCL_3_5_ENTITIES = [
    {
        "leaseKey": {"S": "worker-a"},
        "entityType": {"S": "WORKER_METRIC_STATS"},
        "lut": {"N": "1700000000"},
        "sts": {"M": {"cpu": {"L": [{"N": "12.5"}]}}},
    },
    {
        "leaseKey": {"S": "Leader"},
        "entityType": {"S": "LEADER"},
        "ownerName": {"S": "worker-a"},
        "leaseDuration": {"S": "20000"},
        "recordVersionNumber": {"S": "0f1e2d3c"},
    },
    {
        "leaseKey": {"S": "Migration3.0"},
        "entityType": {"S": "CLIENT_VERSION_MIGRATION"},
        "cv": {"S": "CLIENT_VERSION_3X"},
    },
    {"leaseKey": {"S": "TableMigration3.5"}, "entityType": {"S": "TABLE_MIGRATION"}},
]


def is_lease(item: dict[str, Any]) -> bool:
    return item.get("entityType", {"S": "LEASE"})["S"] == "LEASE"


def canonical(item: dict[str, Any]) -> str:
    return json.dumps(item, sort_keys=True)


def lease_items(
    stream: Stream, version: str, marks: dict[str, tuple[str, int]] | None = None
) -> list[dict[str, Any]]:
    """The lease table a stopped KCL application of `version` left at `marks` (default
    `checkpoints`): owners still named; 3.5's other entities beside the leases."""
    zero = sorted(stream.records)[0]
    account, name = stream.arn.split(":")[4], stream.arn.rsplit("/", 1)[1]
    identifier = f"{account}:{name}:1700000000"
    items = []
    for shard_id, (checkpoint, sub) in (marks or checkpoints(stream)).items():
        if version == "1.x" and shard_id == zero:
            continue  # KCL deleted the finished parent's lease once its children ran
        item: dict[str, Any] = {
            "leaseKey": {"S": shard_id},
            "leaseOwner": {"S": "worker-a"},
            "leaseCounter": {"N": "17"},
            "ownerSwitchesSinceCheckpoint": {"N": "1"},
            "checkpoint": {"S": checkpoint},
            "checkpointSubSequenceNumber": {"N": str(sub)},
        }
        if shard_id in (stream.low, stream.high):
            item["parentShardId"] = {"SS": [zero]}
        if version != "1.x":
            item["startingHashKey"] = {"S": "0"}
            item["endingHashKey"] = {"S": "1"}
            if checkpoint == "SHARD_END":
                item["childShardIds"] = {"SS": [stream.low, stream.high]}
        if version == "3.5-multi":
            item["leaseKey"] = {"S": f"{identifier}:{shard_id}"}
            item["streamName"] = {"S": identifier}
            item["shardId"] = {"S": shard_id}
            item["checkpointOwner"] = {"S": "worker-a"}
            item["entityType"] = {"S": "LEASE"}
        items.append(item)
    return items + (KCL_3_5_ENTITIES if version == "3.5-multi" else [])


def lease_table(dynamodb: Any, items: list[dict[str, Any]]) -> str:
    name = unique("kcl-app")
    dynamodb.create_table(
        TableName=name,
        AttributeDefinitions=[{"AttributeName": "leaseKey", "AttributeType": "S"}],
        KeySchema=[{"AttributeName": "leaseKey", "KeyType": "HASH"}],
        BillingMode="PAY_PER_REQUEST",
    )
    for item in items:
        dynamodb.put_item(TableName=name, Item=item)
    return name


def positions(api: Api, group: str, topic: str) -> dict[int, Any]:
    found = api.ok("metadata", {"topics": [{"name": topic}]})["topics"][0]["partitions"]
    return {
        p["partitionIndex"]: fetched_position(api, group, topic, p["partitionIndex"]) for p in found
    }


@pytest.fixture
def run(
    deployed: tuple[Api, Store], dynamodb_endpoint: str, capsys: pytest.CaptureFixture[str]
) -> Iterator[Callable[..., tuple[int, Any, str]]]:
    yield lambda action, *args: kcl(deployed[0], dynamodb_endpoint, capsys, action, *args)


@pytest.mark.parametrize("version", ["1.x", "2.x", "3.5-multi"])
def test_a_kcl_table_imported_resumes_after_every_checkpoint_and_exports_back(
    deployed: tuple[Api, Store],
    stream: Stream,
    dynamodb: Any,
    kinesis_endpoint: str,
    run: Callable[..., tuple[int, Any, str]],
    version: str,
) -> None:
    api, _ = deployed
    table = lease_table(dynamodb, lease_items(stream, version))
    group = unique("g")
    argv = options(table, stream.topic, group)

    code, dry, err = run("import-kcl", *argv, "--dry-run")
    assert code == 0, err
    wanted = {
        s: f"{c}:{sub}" if c[0].isdigit() else c for s, (c, sub) in checkpoints(stream).items()
    }
    assert {s["shardId"]: s["new"] for s in dry["shards"]} == wanted
    assert all(p is None for p in positions(api, group, stream.topic).values())  # nothing written

    code, done, err = run("import-kcl", *argv)
    assert code == 0, err
    imported = positions(api, group, stream.topic)
    assert {s["action"] for s in done["shards"]} == {"write"}
    code, again, err = run("import-kcl", *argv)
    assert code == 0, err
    assert {s["action"] for s in again["shards"]} == {"unchanged"}  # nothing to do
    assert positions(api, group, stream.topic) == imported

    reader = Running(
        api, group, stream.topic, kinesis_endpoint, commit_interval_s=0.5, fetch_interval_s=0.2
    )
    try:
        reader.until(
            lambda: len(reader.data()) >= len(EXPECTED_AFTER), f"{len(EXPECTED_AFTER)} records"
        )
        time.sleep(1.5)  # more GetRecords: nothing else comes
    finally:
        reader.close()  # commits, leaves
    assert sorted(reader.data()) == sorted(EXPECTED_AFTER)  # once each, none at or before

    # The way back: the group's positions into the application's own table, read again.
    code, _, err = run("export-kcl", *argv)
    assert code == 0, err
    scanned = dynamodb.scan(TableName=table)["Items"]
    code, again, err = run("export-kcl", *argv)  # run again: nothing to write
    assert code == 0 and {lease["action"] for lease in again["leases"]} == {"unchanged"}, err
    assert sorted(dynamodb.scan(TableName=table)["Items"], key=canonical) == sorted(
        scanned, key=canonical
    )
    items = {i["leaseKey"]["S"]: i for i in scanned if is_lease(i)}
    assert len(items) == 4 and all("leaseOwner" not in i for i in items.values())
    if version == "3.5-multi":
        assert all(key.count(":") == 3 for key in items)  # the table's own key format
        others = [i for i in scanned if not is_lease(i)]  # left alone
        assert sorted(others, key=canonical) == sorted(KCL_3_5_ENTITIES, key=canonical)
    last = {s: records[-1] for s, records in stream.records.items()}
    by_shard = {i.get("shardId", i["leaseKey"])["S"].rsplit(":", 1)[-1]: i for i in items.values()}
    zero, one = sorted(stream.records)[:2]
    assert by_shard[zero]["checkpoint"]["S"] == "SHARD_END"
    assert by_shard[stream.low]["parentShardId"]["SS"] == [zero]
    for shard_id in (one, stream.low, stream.high):
        assert by_shard[shard_id]["checkpoint"]["S"] == last[shard_id][1]
    resumed = unique("g")
    code, _, err = run("import-kcl", *options(table, stream.topic, resumed))
    assert code == 0, err
    assert positions(api, resumed, stream.topic) == positions(api, group, stream.topic)


@pytest.mark.parametrize("start", ["TRIM_HORIZON", "LATEST", "AT_TIMESTAMP"])
def test_a_parent_kcl_left_mid_way_is_read_to_its_end_at_every_initial_position(
    deployed: tuple[Api, Store],
    streams: Streams,
    stream: Stream,
    dynamodb: Any,
    kinesis_endpoint: str,
    run: Callable[..., tuple[int, Any, str]],
    start: str,
) -> None:
    """KCL stopped inside shard 0 (split before the topic was bound and before the group
    existed): a LATEST or AT_TIMESTAMP group's start rule would count shard 0 as done, closed
    before the group started; the imported position says the group is inside it."""
    api, _ = deployed
    at = {"AT_TIMESTAMP": f"AT_TIMESTAMP:{int(time.time() * 1000)}"}.get(start, start)
    topic = new_topic(api, stream.arn, configs={"groupcoord.kinesis.initial.position": at})
    zero, one = sorted(stream.records)[:2]
    marks = {
        zero: (stream.records[zero][0][1], 0),  # after zero-0
        one: (stream.records[one][-1][1], 0),  # shard 1 done to its last record
        stream.low: ("TRIM_HORIZON", 0),
        stream.high: ("TRIM_HORIZON", 0),
    }
    table = lease_table(dynamodb, lease_items(stream, "2.x", marks))
    group = unique("g")
    code, _, err = run("import-kcl", *options(table, topic, group))
    assert code == 0, err
    wanted = {"zero-1", "zero-2", "low-0", "low-1", "low-2", "high-0", "high-1"}
    reader = Running(
        api, group, topic, kinesis_endpoint, commit_interval_s=0.5, fetch_interval_s=0.2
    )
    try:
        reader.until(lambda: len(reader.data()) >= len(wanted), f"{len(wanted)} records")
        time.sleep(1.5)  # more GetRecords: nothing else comes
    finally:
        reader.close()
    assert sorted(reader.data()) == sorted(wanted)


def test_export_creates_the_lease_table_kcl_expects(
    stream: Stream, dynamodb: Any, run: Callable[..., tuple[int, Any, str]]
) -> None:
    """A group with no position: every root from TRIM_HORIZON, the children waiting on it."""
    table = unique("kcl-new")
    code, dry, err = run("export-kcl", *options(table, stream.topic, unique("g")), "--dry-run")
    assert code == 0, err
    assert table not in dynamodb.list_tables()["TableNames"]  # the dry run made nothing
    assert len(dry["leases"]) == 4  # every shard printed
    assert {lease["checkpoint"] for lease in dry["leases"]} == {"TRIM_HORIZON"}
    code, _, err = run("export-kcl", *options(table, stream.topic, unique("g")))
    assert code == 0, err
    described = dynamodb.describe_table(TableName=table)["Table"]
    assert described["KeySchema"] == [{"AttributeName": "leaseKey", "KeyType": "HASH"}]
    assert described["BillingModeSummary"]["BillingMode"] == "PAY_PER_REQUEST"
    assert len(dynamodb.scan(TableName=table)["Items"]) == 4


def test_a_running_application_and_a_group_with_members_are_refused(
    deployed: tuple[Api, Store],
    stream: Stream,
    dynamodb: Any,
    run: Callable[..., tuple[int, Any, str]],
) -> None:
    api, _ = deployed
    table = lease_table(dynamodb, lease_items(stream, "2.x"))
    group = unique("g")
    stop = threading.Event()

    def renew() -> None:  # a live worker renews its leases every failoverTimeMillis / 3
        while not stop.wait(0.1):
            dynamodb.update_item(
                TableName=table,
                Key={"leaseKey": {"S": stream.low}},
                UpdateExpression="ADD leaseCounter :one",
                ExpressionAttributeValues={":one": {"N": "1"}},
            )

    renewer = threading.Thread(target=renew, daemon=True)
    renewer.start()
    try:
        for action in ("import-kcl", "export-kcl"):
            code, _, err = run(action, *options(table, stream.topic, group))
            assert code == 1 and f"KCL application {table} is running" in err, err
            assert "worker-a" in err
    finally:
        stop.set()
        renewer.join()
    assert all(p is None for p in positions(api, group, stream.topic).values())

    member = GroupMember(api.base_url, group, topics=[stream.topic])
    try:
        deadline = time.monotonic() + 30
        while not member.poll(0.2):
            assert time.monotonic() < deadline, "the member got no assignment"
        code, _, err = run("import-kcl", *options(table, stream.topic, group))
        assert code == 1 and "member" in err, err
    finally:
        member.close()


def test_what_cannot_be_imported_or_exported_is_refused_in_one_line(
    deployed: tuple[Api, Store],
    stream: Stream,
    dynamodb: Any,
    run: Callable[..., tuple[int, Any, str]],
) -> None:
    api, _ = deployed
    group = unique("g")
    plain = unique("plain")
    api.ok("create-topics", {"topics": [{"name": plain, "numPartitions": 1}]})
    other = lease_table(dynamodb, [{**lease_items(stream, "2.x")[0], "leaseKey": {"S": "x-1"}}])
    broken = lease_table(dynamodb, [{**lease_items(stream, "2.x")[0], "checkpoint": {"S": "1x"}}])
    refusals = {
        (unique("kcl-app"), unique("nope")): "UNKNOWN_TOPIC_OR_PARTITION",
        (unique("kcl-app"), plain): "not backed by a Kinesis stream",
        (unique("missing"), stream.topic): "no such table",
        (other, stream.topic): "none of its leases is a shard of topic",
        (broken, stream.topic): "is not a sequence number or a sentinel",
    }
    for (table, topic), words in refusals.items():
        code, _, err = run("import-kcl", *options(table, topic, group))
        assert code == 1 and words in err and len(err.strip().splitlines()) == 1, err
    # Another application's table is not overwritten.
    code, _, err = run("export-kcl", *options(other, stream.topic, group))
    assert code == 1 and "none of its leases is a shard of topic" in err, err
    assert [i["leaseKey"]["S"] for i in dynamodb.scan(TableName=other)["Items"]] == ["x-1"]
    # Nor a KCL 3.5 application's table that holds no lease of the stream.
    no_lease = lease_table(dynamodb, KCL_3_5_ENTITIES)
    code, _, err = run("export-kcl", *options(no_lease, stream.topic, group))
    assert code == 1 and "holds no lease of" in err, err
    assert len(dynamodb.scan(TableName=no_lease)["Items"]) == len(KCL_3_5_ENTITIES)
    code, _, err = run(
        "import-kcl", *options(other, stream.topic, group), "--failover-time-ms", "-1"
    )
    assert code == 1 and "--failover-time-ms" in err, err
    assert all(p is None for p in positions(api, group, stream.topic).values())


def test_a_lease_table_over_the_bound_is_refused_in_one_line_naming_it(
    deployed: tuple[Api, Store],
    stream: Stream,
    dynamodb: Any,
    run: Callable[..., tuple[int, Any, str]],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A table of more leases than the commands read is refused, import and export alike,
    and nothing is written; at the bound it is read whole. The bound (100,000) is lowered to
    the table's size here: a table that big would take minutes to write on DynamoDB Local."""
    api, _ = deployed
    items = lease_items(stream, "2.x")
    table = lease_table(dynamodb, items)
    group = unique("g")
    monkeypatch.setattr(kcl_lease_table, "MAX_LEASES", len(items) - 1)
    for action in ("import-kcl", "export-kcl"):
        code, _, err = run(action, *options(table, stream.topic, group))
        assert code == 1 and len(err.strip().splitlines()) == 1, err
        assert f"holds more than {len(items) - 1:,} leases" in err, err
    assert all(p is None for p in positions(api, group, stream.topic).values())
    assert len(dynamodb.scan(TableName=table)["Items"]) == len(items)
    monkeypatch.setattr(kcl_lease_table, "MAX_LEASES", len(items))
    code, _, err = run("import-kcl", *options(table, stream.topic, group))
    assert code == 0, err


def test_a_position_the_lease_table_no_longer_has_is_removed(
    deployed: tuple[Api, Store],
    stream: Stream,
    dynamodb: Any,
    run: Callable[..., tuple[int, Any, str]],
) -> None:
    """The lease table is the truth: a shard whose lease went back to a start sentinel loses
    the group's position there (offset-delete), and the next import finds nothing to do."""
    api, _ = deployed
    table = lease_table(dynamodb, lease_items(stream, "2.x"))
    group = unique("g")
    assert run("import-kcl", *options(table, stream.topic, group))[0] == 0
    one = sorted(stream.records)[1]
    (partition,) = [
        p
        for p, at in positions(api, group, stream.topic).items()
        if at and at.get("subSequenceNumber") == 1
    ]
    dynamodb.update_item(
        TableName=table,
        Key={"leaseKey": {"S": one}},
        UpdateExpression="SET #c = :latest",
        ExpressionAttributeNames={"#c": "checkpoint"},
        ExpressionAttributeValues={":latest": {"S": "LATEST"}},
    )
    code, done, err = run("import-kcl", *options(table, stream.topic, group))
    assert code == 0, err
    assert [s["shardId"] for s in done["shards"] if s["action"] == "delete"] == [one]
    assert positions(api, group, stream.topic)[partition] is None
    code, again, err = run("import-kcl", *options(table, stream.topic, group))
    assert code == 0 and "delete" not in {s["action"] for s in again["shards"]}, err


def test_a_reshard_the_coordinator_has_not_synced_is_imported_in_one_run(
    deployed: tuple[Api, Store],
    streams: Streams,
    dynamodb: Any,
    kinesis_endpoint: str,
    run: Callable[..., tuple[int, Any, str]],
) -> None:
    """KCL saw the split (its children's leases, the parent's deleted) before the coordinator
    synced it: the parent's end, naming the children from their leases, makes the coordinator
    sync, and the same run writes the children's positions."""
    api, _ = deployed
    arn = streams.create(1)
    made = Stream(arn, new_topic(api, arn))
    (zero,) = (s["ShardId"] for s in streams.shards(arn))
    put(streams, made, zero, "zero-0", "zero-1")
    streams.split(arn, zero)  # not synced: the topic still lists shard 0 alone, open
    made.low, made.high = (s["ShardId"] for s in streams.shards(arn) if s["ShardId"] != zero)
    put(streams, made, made.low, "low-0", "low-1", "low-2")
    put(streams, made, made.high, "high-0")
    marks = {made.low: (made.records[made.low][0][1], 0), made.high: ("TRIM_HORIZON", 0)}
    table = lease_table(dynamodb, lease_items(made, "2.x", marks))  # the children's leases
    group = unique("g")
    assert (
        len(api.ok("metadata", {"topics": [{"name": made.topic}]})["topics"][0]["partitions"]) == 1
    )

    code, done, err = run("import-kcl", *options(table, made.topic, group))
    assert code == 0, err
    assert {s["shardId"]: s["action"] for s in done["shards"]} == {
        zero: "write",
        made.low: "write",
        made.high: "write",
    }
    code, again, err = run("import-kcl", *options(table, made.topic, group))
    assert code == 0 and {s["action"] for s in again["shards"]} == {"unchanged"}, err
    reader = Running(
        api, group, made.topic, kinesis_endpoint, commit_interval_s=0.5, fetch_interval_s=0.2
    )
    try:
        reader.until(lambda: len(reader.data()) >= 3, "3 records")
        time.sleep(1.5)  # more GetRecords: nothing else comes
    finally:
        reader.close()
    assert sorted(reader.data()) == ["high-0", "low-1", "low-2"]


def test_the_shards_below_a_checkpoint_are_read_whole_whatever_closed_before_the_import(
    deployed: tuple[Api, Store],
    streams: Streams,
    dynamodb: Any,
    kinesis_endpoint: str,
    run: Callable[..., tuple[int, Any, str]],
) -> None:
    """KCL stopped inside shard 0 before it leased anything below it; since then 0's child
    `a` split too. A LATEST group created by the import would count `a` (closed before its
    start) as done and start a's children at LATEST; KCL would lease each at TRIM_HORIZON on
    its way down, so the import writes them from their first record."""
    api, _ = deployed
    arn = streams.create(1)
    made = Stream(arn, "")
    (zero,) = (s["ShardId"] for s in streams.shards(arn))
    put(streams, made, zero, "zero-0", "zero-1")
    streams.split(arn, zero)
    a, b = (s["ShardId"] for s in streams.open_shards(arn))
    put(streams, made, a, "a-0")
    put(streams, made, b, "b-0")
    streams.split(arn, a)
    a1, a2 = (s["ShardId"] for s in streams.open_shards(arn) if s["ShardId"] != b)
    put(streams, made, a1, "a1-0")
    put(streams, made, a2, "a2-0")
    made.topic = new_topic(api, arn, configs={"groupcoord.kinesis.initial.position": "LATEST"})
    marks = {zero: (made.records[zero][0][1], 0)}
    table = lease_table(dynamodb, lease_items(made, "2.x", marks))
    group = unique("g")
    code, done, err = run("import-kcl", *options(table, made.topic, group))
    assert code == 0, err
    assert {s["shardId"]: s["new"] for s in done["shards"] if s["shardId"] != zero} == {
        shard: "TRIM_HORIZON" for shard in (a, b, a1, a2)
    }
    reader = Running(
        api, group, made.topic, kinesis_endpoint, commit_interval_s=0.5, fetch_interval_s=0.2
    )
    try:
        reader.until(lambda: len(reader.data()) >= 5, "5 records")
        time.sleep(1.5)  # more GetRecords: nothing else comes
    finally:
        reader.close()
    assert sorted(reader.data()) == ["a-0", "a1-0", "a2-0", "b-0", "zero-1"]
