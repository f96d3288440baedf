"""The one DynamoDB table: its keys, indexes and item key formats (docs/table-layout.md).

template.yaml declares the same table; tests/integration/test_template.py deploys the template
into moto's CloudFormation and checks it against `table_definition()`.
"""

from __future__ import annotations

import hashlib
from typing import Any

PK = "pk"
SK = "sk"
TTL_ATTRIBUTE = "expiresAt"

# Sparse index of absolute deadlines (session expiry, rebalance timeouts, offset retention).
# The sweeper queries every shard for `dl <= now` instead of scanning the table.
DEADLINE_INDEX = "deadlines"
DEADLINE_SHARD = "dlShard"
DEADLINE = "dl"
# A group item's recent epoch or generation moves (core/rebalances.py), any group type.
REBALANCES = "rebalances"

# Sparse index that lists groups (list-groups) without a scan, over a few shards so that
# group state changes never pile onto one index partition.
LISTING_INDEX = "listing"
LISTING_PK = "lsPk"
LISTING_SK = "lsSk"
GROUP_LISTING_SHARDS = 4

# Topics are few and rarely written: they share one partition key, so `metadata` lists them
# in name order with strongly consistent Queries, a page at a time.
TOPICS_PK = "TOPICS"
TOPIC_IDS_PK = "TOPIC-IDS"

# Item kinds (attribute `kind` on every item), for humans reading the table and for the docs.
KIND_TOPIC = "topic"
KIND_TOPIC_ID = "topic-id"
KIND_TOPIC_SUBSCRIBER = "topic-subscriber"
KIND_REGEX_SUBSCRIBER = "regex-subscriber"
KIND_GROUP = "group"
KIND_MEMBER = "member"
KIND_MEMBER_PAYLOAD = "member-payload"
KIND_JOIN_COUNT = "join-count"
KIND_OFFSET = "offset"
KIND_COORDINATOR = "coordinator"
KIND_SINK_MARKER = "sink-marker"
KIND_LISTING_CURSOR = "listing-cursor"
KIND_STREAMS_TOPOLOGY = "streams-topology"
KIND_STREAMS_REPORT = "streams-report"
KIND_PUSH_CONNECTION = "push-connection"
KIND_PUSH_SOCKET = "push-socket"
# A member-based group's (consumer protocol, streams) static instance claim.
KIND_STATIC_INSTANCE = "static-instance"

GROUP_LISTING_PROJECTION = ["kind", "groupId", "groupType", "groupState", "protocolType"]
DEADLINE_PROJECTION = ["kind", "groupId"]


def stable_shard(text: str, shards: int) -> int:
    """A shard number that is the same in every process (Python's hash() is salted)."""
    digest = hashlib.blake2b(text.encode("utf-8"), digest_size=8).digest()
    return int.from_bytes(digest, "big") % shards


# --- key formats ---
#
# Every user-supplied name (group id, topic name) enters a partition key through `escaped`,
# which leaves no raw `#` in it: the `#` that separates a key's parts can then only be ours, so
# the map from (kind, names) to keys is injective and no key of one group is a key of another
# (a group `foo#M3` is `G#foo%23M3`, never group `foo`'s member shard 3). Names outside
# partition keys (member ids, instance ids as sort keys under their group's partition key) are
# whole sort keys that no query walks by prefix, so they need no escaping.


def escaped(name: str) -> str:
    """`name` with `%` and `#` percent-encoded: injective, and free of `#`. Names without
    either character (every legal topic name, most group ids) are unchanged, so items written
    before the escaping keep their keys (docs/table-layout.md, "Upgrading")."""
    return name.replace("%", "%25").replace("#", "%23")


def group_pk(group_id: str) -> str:
    return f"G#{escaped(group_id)}"


def topic_key(name: str) -> dict[str, str]:
    return {PK: TOPICS_PK, SK: name}


def topic_id_key(topic_id: str) -> dict[str, str]:
    return {PK: TOPIC_IDS_PK, SK: topic_id}


def shard_rows_pk(topic_id: str) -> str:
    # Under the topic's id: a topic deleted and created again never sees the old rows.
    return f"KSHARDS#{escaped(topic_id)}"


def shard_row_sk(index: int) -> str:
    return f"{index:010d}"


def shard_row_key(topic_id: str, index: int) -> dict[str, str]:
    """A Kinesis-backed topic's partition `index`: the shard it stands for."""
    return {PK: shard_rows_pk(topic_id), SK: shard_row_sk(index)}


def topic_subscribers_pk(topic: str) -> str:
    return f"TSUB#{escaped(topic)}"


def topic_subscriber_key(topic: str, group_id: str) -> dict[str, str]:
    # One partition key per topic: one Query lists the groups subscribed to it.
    return {PK: topic_subscribers_pk(topic), SK: group_id}


def regex_subscriber_key(group_id: str) -> dict[str, str]:
    return {PK: "REGEX-SUBSCRIBERS", SK: group_id}


def group_key(group_id: str) -> dict[str, str]:
    return {PK: group_pk(group_id), SK: "GROUP"}


def member_pk(group_id: str, shard: int) -> str:
    return f"{group_pk(group_id)}#M{shard}"


def member_key(group_id: str, member_id: str, shards: int) -> dict[str, str]:
    """Member items spread over `shards` partition keys per group (no hot key)."""
    return {PK: member_pk(group_id, stable_shard(member_id, shards)), SK: member_id}


def member_pks(group_id: str, shards: int) -> list[str]:
    return [member_pk(group_id, shard) for shard in range(shards)]


def payload_pk(group_id: str, shard: int) -> str:
    return f"{group_pk(group_id)}#P{shard}"


def payload_key(group_id: str, member_id: str, shards: int) -> dict[str, str]:
    """A classic member's payload item (its protocols' metadata and its assignment): under its
    own partition keys, sharded as the member items are, so that the member item a heartbeat
    rewrites stays small (one write unit per heartbeat)."""
    return {PK: payload_pk(group_id, stable_shard(member_id, shards)), SK: member_id}


def payload_pks(group_id: str, shards: int) -> list[str]:
    return [payload_pk(group_id, shard) for shard in range(shards)]


def join_count_pk(group_id: str, shard: int) -> str:
    return f"{group_pk(group_id)}#J{shard}"


def join_count_key(group_id: str, shard: int, barrier: str) -> dict[str, str]:
    """A classic join barrier's count of joins from the members of one member shard: one item
    per shard and barrier, under its own partition key (the joins of 5,000 members rejoining
    within 5 s spread over the shards instead of writing the group item)."""
    return {PK: join_count_pk(group_id, shard), SK: barrier}


# 100,000 partitions committed every 5 s is 20,000 writes/s: over 64 keys, ~310 each (of 1,000).
OFFSET_SHARDS = 64


def offset_pk(group_id: str, shard: int) -> str:
    return f"O#{escaped(group_id)}#{shard}"


def offset_key(group_id: str, topic: str, partition: int) -> dict[str, str]:
    """One item per committed partition, spread over OFFSET_SHARDS partition keys per group so
    that a group committing many partitions at once has no hot key."""
    shard = stable_shard(f"{topic}/{partition}", OFFSET_SHARDS)
    return {PK: offset_pk(group_id, shard), SK: f"{escaped(topic)}#{partition:010d}"}


def offset_pks(group_id: str) -> list[str]:
    return [offset_pk(group_id, shard) for shard in range(OFFSET_SHARDS)]


SINK_MARKER_SHARDS = 16


def sink_marker_key(group_id: str, idempotency_key: str) -> dict[str, str]:
    """A commit-with-writes' idempotency marker (store/sink_writes.py): written in the commit's
    transaction, so that a retry of a commit that landed finds it. Spread over a few partition
    keys per group; the key's characters (models/sink_writes.py) hold no `#`."""
    shard = stable_shard(idempotency_key, SINK_MARKER_SHARDS)
    return {PK: f"{group_pk(group_id)}#X{shard}", SK: idempotency_key}


def retention_key(group_id: str) -> dict[str, str]:
    """A group's offset-retention check, in the deadline index once it has committed."""
    return {PK: group_pk(group_id), SK: "RETENTION"}


def streams_topology_key(group_id: str) -> dict[str, str]:
    """A streams group's topology (store/streams/): apart from the group item, which every
    membership change rewrites, so that a 64 K topology is written once per topology epoch."""
    return {PK: group_pk(group_id), SK: "STREAMS-TOPOLOGY"}


def streams_endpoints_key(group_id: str) -> dict[str, str]:
    """A streams group's endpoints map of one endpoint epoch (store/streams/endpoints.py):
    built once per epoch, so that a heartbeat behind the epoch reads one item, not every
    member."""
    return {PK: group_pk(group_id), SK: "STREAMS-ENDPOINTS"}


def streams_endpoints_chunk_key(group_id: str, write_id: str, chunk: int) -> dict[str, str]:
    """A further chunk of a large endpoints map, keyed by the write that made it (two writers
    of one epoch never overwrite each other's chunks)."""
    return {PK: group_pk(group_id), SK: f"STREAMS-ENDPOINTS#{write_id}#{chunk}"}


def streams_report_pk(group_id: str, shard: int) -> str:
    return f"{group_pk(group_id)}#R{shard}"


def streams_report_key(group_id: str, member_id: str, shards: int) -> dict[str, str]:
    """A streams member's latest changelog offsets report (warm-ups by lag): apart from the
    member item, which every heartbeat may rewrite, and sharded as member items are."""
    return {PK: streams_report_pk(group_id, stable_shard(member_id, shards)), SK: member_id}


def group_listing_pk(group_id: str) -> str:
    return group_listing_shard_pk(stable_shard(group_id, GROUP_LISTING_SHARDS))


def instance_pk(group_id: str) -> str:
    """A classic group's static instance claims (sort key: the instance id)."""
    return f"{group_pk(group_id)}#I"


def static_instance_pk(group_id: str, shard: int) -> str:
    """A member-based group's static instance claims, sharded (sort key: the instance id)."""
    return f"{group_pk(group_id)}#S{shard}"


def static_instance_key(group_id: str, instance_id: str, shards: int) -> dict[str, str]:
    """A static instance's claim in a member-based group: its instance id's shard."""
    return {PK: static_instance_pk(group_id, stable_shard(instance_id, shards)), SK: instance_id}


def staged_pk(group_id: str, token: str, shard: int) -> str:
    """Items staged by a protocol conversion too large for one transaction."""
    return f"{group_pk(group_id)}#C{token}#{shard}"


def group_listing_shard_pk(shard: int) -> str:
    return f"GROUPS#{shard}"


def listing_cursor_key(token: str) -> dict[str, str]:
    """A sealed list-groups cursor (store/groups.py). `token` is the coordinator's own random
    base64url string, checked before it is used here: no `#`, so no other item's key."""
    return {PK: f"LCURSOR#{token}", SK: "LCURSOR"}


# A group's push connections spread over this many partition keys (a hash of the member id):
# a reconnect storm of a big group writes each at a fraction of the rate.
PUSH_CONNECTION_SHARDS = 8


def push_connection_pk(group_id: str, shard: int) -> str:
    return f"{group_pk(group_id)}#W{shard}"


def push_connection_key(group_id: str, member_id: str) -> dict[str, str]:
    """A member's push connection (one per member, replaced on reconnect)."""
    shard = stable_shard(member_id, PUSH_CONNECTION_SHARDS)
    return {PK: push_connection_pk(group_id, shard), SK: member_id}


def push_connection_pks(group_id: str) -> list[str]:
    return [push_connection_pk(group_id, shard) for shard in range(PUSH_CONNECTION_SHARDS)]


def push_socket_key(connection_id: str) -> dict[str, str]:
    """Which member a connection was opened for: `$disconnect` knows only the connection id.
    API Gateway's ids are random, so each is a partition key of its own (no hot key)."""
    return {PK: f"WS#{escaped(connection_id)}", SK: "WS"}


def coordinator_key() -> dict[str, str]:
    return {PK: "COORDINATOR", SK: "COORDINATOR"}


def deadline_shard_value(owner: str, shards: int) -> str:
    return f"DL#{stable_shard(owner, shards)}"


def table_definition(table_name: str) -> dict[str, Any]:
    """CreateTable arguments for the table the store expects (used by `serve` and tests)."""
    return {
        "TableName": table_name,
        "BillingMode": "PAY_PER_REQUEST",
        "AttributeDefinitions": [
            {"AttributeName": PK, "AttributeType": "S"},
            {"AttributeName": SK, "AttributeType": "S"},
            {"AttributeName": DEADLINE_SHARD, "AttributeType": "S"},
            {"AttributeName": DEADLINE, "AttributeType": "N"},
            {"AttributeName": LISTING_PK, "AttributeType": "S"},
            {"AttributeName": LISTING_SK, "AttributeType": "S"},
        ],
        "KeySchema": [
            {"AttributeName": PK, "KeyType": "HASH"},
            {"AttributeName": SK, "KeyType": "RANGE"},
        ],
        "GlobalSecondaryIndexes": [
            {
                "IndexName": DEADLINE_INDEX,
                "KeySchema": [
                    {"AttributeName": DEADLINE_SHARD, "KeyType": "HASH"},
                    {"AttributeName": DEADLINE, "KeyType": "RANGE"},
                ],
                "Projection": {
                    "ProjectionType": "INCLUDE",
                    "NonKeyAttributes": DEADLINE_PROJECTION,
                },
            },
            {
                "IndexName": LISTING_INDEX,
                "KeySchema": [
                    {"AttributeName": LISTING_PK, "KeyType": "HASH"},
                    {"AttributeName": LISTING_SK, "KeyType": "RANGE"},
                ],
                "Projection": {
                    "ProjectionType": "INCLUDE",
                    "NonKeyAttributes": GROUP_LISTING_PROJECTION,
                },
            },
        ],
    }


# --- ACLs ---
#
# Each ACL binding is one item (kind `acl`) under one of ACL_SHARDS partition keys `ACL#<n>`,
# chosen by a stable hash of its sort key, so that function instances reloading the whole set
# at once spread their reads over a few partitions. Its sort key is the binding itself: the
# codes of its resource type, pattern type, operation and permission, and its resource name,
# principal and host through `escaped`, joined by `#` (seven parts, none holding a `#`, so the
# map from bindings to keys is injective: no name can forge another binding's key). When that
# exceeds DynamoDB's 1,024-byte sort key (a long unicode or `#`-rich name), the sort key is
# `H#` and a 256-bit digest of it: two parts, so it never equals a seven-part key. The item
# holds the binding's fields as attributes, so loading parses no key. One item (kind
# `acl-version`) holds the set's `version`, bumped in the same transaction as every change of
# the bindings, and `aclCount`, the number of bindings.

ACL_SHARDS = 4
ACL_VERSION_PK = "ACL-VERSION"
KIND_ACL = "acl"
KIND_ACL_VERSION = "acl-version"
ACL_SORT_KEY_MAX_BYTES = 1024


def acl_pk(shard: int) -> str:
    return f"ACL#{shard}"


def acl_pks() -> list[str]:
    return [acl_pk(shard) for shard in range(ACL_SHARDS)]


def acl_sort_key(
    *,
    resource_type: int,
    resource_name: str,
    pattern_type: int,
    principal: str,
    host: str,
    operation: int,
    permission: int,
) -> str:
    readable = "#".join(
        (
            str(int(resource_type)),
            str(int(pattern_type)),
            escaped(resource_name),
            escaped(principal),
            escaped(host),
            str(int(operation)),
            str(int(permission)),
        )
    )
    if len(readable.encode("utf-8")) <= ACL_SORT_KEY_MAX_BYTES:
        return readable
    return "H#" + hashlib.blake2b(readable.encode("utf-8"), digest_size=32).hexdigest()


def acl_key(
    *,
    resource_type: int,
    resource_name: str,
    pattern_type: int,
    principal: str,
    host: str,
    operation: int,
    permission: int,
) -> dict[str, str]:
    sk = acl_sort_key(
        resource_type=resource_type,
        resource_name=resource_name,
        pattern_type=pattern_type,
        principal=principal,
        host=host,
        operation=operation,
        permission=permission,
    )
    return {PK: acl_pk(stable_shard(sk, ACL_SHARDS)), SK: sk}


def acl_version_key() -> dict[str, str]:
    return {PK: ACL_VERSION_PK, SK: ACL_VERSION_PK}


# The deadline index's partition of quarantined items: items whose completion kept failing
# (core/sweeping.py). The sweeper reads only DL#0 .. DL#<shards - 1>, so an item here is never
# due; one Query of this partition lists them all, by their original due time.
QUARANTINE_SHARD = "DL#quarantined"
