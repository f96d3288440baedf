"""Bounds on everything a request carries (docs/limits.md).

Strings are bounded in characters (what JSON Schema's maxLength counts) and sized so that even
at four UTF-8 bytes a character, and with the key escaping of store/schema.py (3 bytes for an
escaped character), no key passes DynamoDB's limits (partition key 2,048 bytes, sort key 1,024)
and no item passes 400 KB. Lists are bounded so that one request's DynamoDB cost and answer
stay bounded. Over a limit a request gets 400 with errorCode 42 naming the field, or Kafka's
in-band error where Kafka has one.
"""

from __future__ import annotations

# --- names that go into keys (each ≤ 255 characters: ≤ 1,020 bytes) ---
GROUP_ID_MAX_CHARS = 255
MEMBER_ID_MAX_CHARS = 255
INSTANCE_ID_MAX_CHARS = 255
# Kafka's own topic-name limit (Topic.MAX_NAME_LENGTH). create-topics takes names up to
# TOPIC_NAME_TO_CREATE_MAX_CHARS so that a name over 249 gets Kafka's in-band 17 answer.
TOPIC_NAME_MAX_CHARS = 249
TOPIC_NAME_TO_CREATE_MAX_CHARS = 1024
# A classic member id is `<clientId>-<uuid>` (36 characters): it must fit MEMBER_ID_MAX_CHARS.
CLIENT_ID_MAX_CHARS = MEMBER_ID_MAX_CHARS - 37

# --- other strings ---
# "User:" plus an IAM ARN: a role ARN (written without its path, core/principals.py) is under
# 150 characters; an IAM user ARN with a long path may not fit and cannot be named in an ACL.
PRINCIPAL_MAX_CHARS = 512
RACK_ID_MAX_CHARS = 255
PROTOCOL_NAME_MAX_CHARS = 255  # protocol types, protocol (assignor) names, server assignors
REASON_MAX_CHARS = 1024
REGEX_MAX_CHARS = 1024
STATE_OR_TYPE_MAX_CHARS = 64  # list-groups filters
CONFIG_NAME_MAX_CHARS = 255
CONFIG_VALUE_MAX_CHARS = 4096

# --- bytes (classic protocol metadata and assignments, base64 on the wire) ---
# A classic member's payload item holds every protocol's metadata and its assignment:
# 16 x 32 KiB would pass 400 KB, so the sum over a join's protocols has its own bound.
PROTOCOLS_PER_JOIN_MAX = 16
PROTOCOL_METADATA_MAX_BYTES = 32 * 1024
JOIN_METADATA_TOTAL_MAX_BYTES = 64 * 1024
ASSIGNMENT_MAX_BYTES = 64 * 1024

# --- lists ---
GROUPS_PER_REQUEST_MAX = 100  # find-coordinator, describe, delete-groups, offset-fetch groups
# An offset-fetch of every topic (`topics: null`) reads all 64 offset shards of its group:
# fewer such groups per request keep one request's reads bounded (640 queries).
ALL_TOPICS_FETCHES_PER_REQUEST_MAX = 10
TOPICS_PER_REQUEST_MAX = 1000  # every list of topics in a request
SUBSCRIBED_TOPICS_MAX = 1000
MEMBERS_PER_LEAVE_MAX = 1000
SYNC_ASSIGNMENTS_MAX = 10_000  # a leader's assignments: at most one per member
CONFIGS_PER_TOPIC_MAX = 100
FILTERS_MAX = 16  # list-groups states/types filters
# A partition list in a request (commit, fetch, delete, heartbeat, replica assignment) never
# names more partitions than a topic may have; the setting's default and ceiling:
TOPIC_PARTITIONS_DEFAULT_MAX = 100_000
BROKER_IDS_MAX = 16
# Lags one heartbeat reports (partitionLags): one per partition a member holds, and a member
# item keeps them (about 20 bytes each), so a member holding more reports only some.
PARTITION_LAGS_MAX = 4096

# --- the DynamoDB writes an offset-commit may carry (models/sink_writes.py) ---
# One TransactWriteItems holds 100 items: the commit's fence and its idempotency marker take
# two, so writes + distinct committed partitions <= 98 (checked per request).
TRANSACTION_ITEMS_MAX = 100
SINK_WRITES_MAX = TRANSACTION_ITEMS_MAX - 2
SINK_EXPRESSION_MAX_CHARS = 4096  # DynamoDB: 4 KB per expression
SINK_VALUE_MAX_DEPTH = 32  # DynamoDB: 32 levels of nested attributes
SINK_NUMBER_MAX_DIGITS = 38  # DynamoDB: 38 digits of precision
SINK_ATTRIBUTE_NAME_MAX_BYTES = 65535
SINK_TABLES_MAX = 100  # groupcoord.sink.tables

# offset.metadata.max.bytes may be raised, but never so far that an offset item nears 400 KB.
OFFSET_METADATA_MAX_BYTES_CEILING = 64 * 1024

# Kinesis' own bound on a shard id (ShardId: 1 to 128 characters).
KINESIS_SHARD_ID_MAX_CHARS = 128
# --- streams groups (models/streams.py) ---
# Kafka Streams names sub-topologies "0", "1", ...; processes by a UUID.
SUBTOPOLOGY_ID_MAX_CHARS = 64
PROCESS_ID_MAX_CHARS = 255
ENDPOINT_HOST_MAX_CHARS = 255
CLIENT_TAG_MAX_CHARS = 255
CLIENT_TAGS_MAX = 16
SUBTOPOLOGIES_MAX = 256
TOPOLOGY_TOPICS_MAX = 256  # each topic list of a sub-topology
TOPOLOGY_REGEXES_MAX = 16
# A group's topology is one item: its names, regexes and configs together stay far below
# 400 KB even at four bytes a character.
TOPOLOGY_MAX_CHARS = 64 * 1024
# Changelog offsets a heartbeat reports (one per task it has state for).
TASK_OFFSETS_MAX = 4096
# A group item's record of its recent epoch (classic: generation) moves (core/rebalances.py,
# describe-group-activity's recentRebalances): the last this many.
REBALANCES_KEPT = 10
# A Kinesis position's time (atTimestampMs): up to the end of year 9999 (ms since the epoch).
KINESIS_TIMESTAMP_MAX_MS = 253_402_300_799_999
