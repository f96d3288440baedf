"""Coordinator settings under Kafka's broker config names (README.md, "Configuration").

Lambda reads them from environment variables (upper case, dots as underscores:
GROUP_INITIAL_REBALANCE_DELAY_MS); `groupcoord serve` takes repeatable `-c name=value`.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, fields

from .core.consumer.forming import FIRST_TARGET_HOLD_MAX_MS
from .core.kinesis.binders import parse_binders
from .models.limits import (
    OFFSET_METADATA_MAX_BYTES_CEILING,
    SINK_TABLES_MAX,
    TOPIC_PARTITIONS_DEFAULT_MAX,
)

# Kafka config name -> (attribute, default). Defaults are Kafka 4.x's.
_INT_SETTINGS: dict[str, tuple[str, int]] = {
    "group.initial.rebalance.delay.ms": ("group_initial_rebalance_delay_ms", 3000),
    "group.min.session.timeout.ms": ("group_min_session_timeout_ms", 6000),
    "group.max.session.timeout.ms": ("group_max_session_timeout_ms", 1_800_000),
    # Kafka's default for both group sizes is unbounded; ours is bounded (models/limits.py).
    "group.max.size": ("group_max_size", 10_000),
    "group.consumer.session.timeout.ms": ("group_consumer_session_timeout_ms", 45000),
    "group.consumer.min.session.timeout.ms": ("group_consumer_min_session_timeout_ms", 45000),
    "group.consumer.max.session.timeout.ms": ("group_consumer_max_session_timeout_ms", 60000),
    "group.consumer.heartbeat.interval.ms": ("group_consumer_heartbeat_interval_ms", 5000),
    "group.consumer.min.heartbeat.interval.ms": ("group_consumer_min_heartbeat_interval_ms", 5000),
    "group.consumer.max.heartbeat.interval.ms": ("group_consumer_max_heartbeat_interval_ms", 15000),
    "group.consumer.max.size": ("group_consumer_max_size", 10_000),
    "group.consumer.assignment.interval.ms": ("group_consumer_assignment_interval_ms", 1000),
    # Ours: a new consumer group's first target waits until no member joined for this long
    # (core/consumer/forming.py), so that members starting together share one target.
    "groupcoord.consumer.first.assignment.delay.ms": (
        "consumer_first_assignment_delay_ms",
        250,
    ),
    # Streams groups (KIP-1071): Kafka's names and defaults; the min/max bounds are settings
    # too, as Kafka's are, so that tests may run short timers.
    "group.streams.session.timeout.ms": ("group_streams_session_timeout_ms", 45000),
    "group.streams.min.session.timeout.ms": ("group_streams_min_session_timeout_ms", 45000),
    "group.streams.max.session.timeout.ms": ("group_streams_max_session_timeout_ms", 60000),
    "group.streams.heartbeat.interval.ms": ("group_streams_heartbeat_interval_ms", 5000),
    "group.streams.min.heartbeat.interval.ms": ("group_streams_min_heartbeat_interval_ms", 5000),
    "group.streams.max.heartbeat.interval.ms": ("group_streams_max_heartbeat_interval_ms", 15000),
    "group.streams.max.size": ("group_streams_max_size", 10_000),
    "group.streams.num.standby.replicas": ("group_streams_num_standby_replicas", 0),
    "group.streams.max.standby.replicas": ("group_streams_max_standby_replicas", 2),
    "group.streams.initial.rebalance.delay.ms": ("group_streams_initial_rebalance_delay_ms", 3000),
    "group.streams.num.warmup.replicas": ("group_streams_num_warmup_replicas", 2),
    "group.streams.acceptable.recovery.lag": ("group_streams_acceptable_recovery_lag", 10000),
    "group.streams.task.offset.interval.ms": ("group_streams_task_offset_interval_ms", 60000),
    "group.streams.assignment.interval.ms": ("group_streams_assignment_interval_ms", 1000),
    "offsets.retention.minutes": ("offsets_retention_minutes", 10080),
    "offset.metadata.max.bytes": ("offset_metadata_max_bytes", 4096),
    # Ours: a retention in ms that, when > 0, replaces offsets.retention.minutes (for tests).
    "groupcoord.offsets.retention.ms": ("offsets_retention_ms", 0),
    "num.partitions": ("num_partitions", 1),
    "groupcoord.topic.max.partitions": ("topic_max_partitions", TOPIC_PARTITIONS_DEFAULT_MAX),
    "groupcoord.sweep.interval.ms": ("sweep_interval_ms", 1000),
    # How long a member whose push connection closed keeps its session before it is expired
    # as at its session's end (a reconnect or a heartbeat within it cancels that).
    "groupcoord.push.disconnect.grace.ms": ("push_disconnect_grace_ms", 1000),
    "groupcoord.barrier.hold.ms": ("barrier_hold_ms", 2000),
    "groupcoord.member.shards": ("member_shards", 8),
    "groupcoord.deadline.shards": ("deadline_shards", 16),
    "groupcoord.store.max.attempts": ("store_max_attempts", 5),
    # Protocol conversions: the lease of a staged conversion, and the largest one
    # written as a single transaction (DynamoDB's limit; lower it to exercise staging).
    "groupcoord.conversion.lease.ms": ("conversion_lease_ms", 15000),
    "groupcoord.conversion.transaction.items": ("conversion_transaction_items", 100),
    # How stale a function instance's copy of the ACLs may get: a changed ACL takes effect
    # within this long (each instance re-reads the ACLs' version at most this often).
    "groupcoord.acl.cache.ms": ("acl_cache_ms", 5000),
    # How long a commit with writes remembers its idempotencyKey (docs/exactly-once.md).
    "groupcoord.sink.idempotency.ms": ("sink_idempotency_ms", 86_400_000),
    # Heartbeats after a session renewal that are answered from reads alone, without writing
    # the member's deadline (core/session_renewal.py); 0 writes it on every heartbeat.
    "groupcoord.session.renewal.skips": ("session_renewal_skips", 2),
    # For fault tests only: this deployment's clock runs this many ms ahead (or, negative,
    # behind) the system's, as a Lambda host's may (groupcoord/clock.py, docs/sessions.md).
    "groupcoord.fault.clock.offset.ms": ("fault_clock_offset_ms", 0),
    # How often the sweeper syncs a Kinesis-backed topic's shards (and how old a sync may be
    # before a join syncs again), docs/kinesis.md.
    "groupcoord.kinesis.shard.sync.interval.ms": ("kinesis_shard_sync_interval_ms", 60000),
    # How long metadata still lists a shard after a sync found it expired past the stream's
    # retention (a consumer reading its tail sees its partition go), docs/kinesis.md.
    "groupcoord.kinesis.expired.shard.grace.ms": ("kinesis_expired_shard_grace_ms", 86_400_000),
}
_BOOL_SETTINGS: dict[str, tuple[str, bool]] = {
    # Off: every principal may do everything, as a Kafka cluster without an authorizer.
    "groupcoord.authorizer.enabled": ("authorizer_enabled", False),
    "allow.everyone.if.no.acl.found": ("allow_everyone_if_no_acl_found", False),
}
_STR_SETTINGS: dict[str, tuple[str, str]] = {
    "group.consumer.assignors": ("group_consumer_assignors", "uniform,range"),
    "group.consumer.migration.policy": ("group_consumer_migration_policy", "bidirectional"),
    "groupcoord.table.name": ("table_name", "groupcoord"),
    # Base URL that find-coordinator hands out; empty = derived from the request's host.
    "groupcoord.endpoint": ("endpoint", ""),
    # The push channel (docs/sessions.md, "Push"): the WebSocket URL find-coordinator tells
    # members (wss://... on AWS), and the `@connections` management endpoint the coordinator
    # posts notices to (https://<api id>.execute-api.<region>.amazonaws.com/<stage>). Both
    # empty: no push channel, nothing posted and nothing read for it.
    "groupcoord.push.url": ("push_url", ""),
    "groupcoord.push.connections.endpoint": ("push_connections_endpoint", ""),
    # Principals allowed everything when the authorizer is on, separated by `;` (Kafka's).
    "super.users": ("super_users", ""),
    # Tables an offset-commit's `writes` may write, comma-separated names; empty = none.
    "groupcoord.sink.tables": ("sink_tables", ""),
    # Kinesis streams a topic may be bound to, comma-separated ARNs (the template passes those
    # its IAM policy lets the coordinator list); empty = any.
    "groupcoord.kinesis.streams": ("kinesis_streams", ""),
    # With the authorizer on, who may bind a topic to which Kinesis streams:
    # PRINCIPAL=ARN[,ARN...] entries separated by ';' (core/kinesis/binders.py).
    "groupcoord.kinesis.stream.binders": ("kinesis_stream_binders", ""),
    # For crash tests only: comma-separated points where a request dies (see faults.py).
    "groupcoord.fault.crash.at": ("fault_crash_at", ""),
}
# A silent member outlives its session by up to (skips + 1/2) heartbeat intervals, and by no
# more than a third of it (core/session_renewal.py).
SESSION_RENEWAL_SKIPS_MAX = 4
CLOCK_OFFSET_MAX_MS = 3_600_000
# A Kinesis topic's shard sync: at least once a second (tests), at most once a day apart.
KINESIS_SYNC_MIN_MS = 1000
KINESIS_SYNC_MAX_MS = 86_400_000
# An expired shard's grace in metadata: none at all up to a week.
KINESIS_GRACE_MAX_MS = 7 * 86_400_000
# A disconnect grace longer than a minute would be no faster than the session.
PUSH_GRACE_MAX_MS = 60_000
MIGRATION_POLICIES = ("bidirectional", "upgrade", "downgrade", "disabled")


class SettingsError(ValueError):
    """A setting that is unknown or has a value of the wrong kind."""


@dataclass(frozen=True)
class Settings:
    group_initial_rebalance_delay_ms: int = 3000
    group_min_session_timeout_ms: int = 6000
    group_max_session_timeout_ms: int = 1_800_000
    group_max_size: int = 10_000
    group_consumer_session_timeout_ms: int = 45000
    group_consumer_min_session_timeout_ms: int = 45000
    group_consumer_max_session_timeout_ms: int = 60000
    group_consumer_heartbeat_interval_ms: int = 5000
    group_consumer_assignment_interval_ms: int = 1000
    group_consumer_min_heartbeat_interval_ms: int = 5000
    group_consumer_max_heartbeat_interval_ms: int = 15000
    group_consumer_max_size: int = 10_000
    consumer_first_assignment_delay_ms: int = 250
    group_streams_session_timeout_ms: int = 45000
    group_streams_min_session_timeout_ms: int = 45000
    group_streams_max_session_timeout_ms: int = 60000
    group_streams_heartbeat_interval_ms: int = 5000
    group_streams_min_heartbeat_interval_ms: int = 5000
    group_streams_max_heartbeat_interval_ms: int = 15000
    group_streams_max_size: int = 10_000
    group_streams_num_standby_replicas: int = 0
    group_streams_max_standby_replicas: int = 2
    group_streams_initial_rebalance_delay_ms: int = 3000
    group_streams_num_warmup_replicas: int = 2
    group_streams_acceptable_recovery_lag: int = 10000
    group_streams_task_offset_interval_ms: int = 60000
    group_streams_assignment_interval_ms: int = 1000
    offsets_retention_minutes: int = 10080
    offset_metadata_max_bytes: int = 4096
    offsets_retention_ms: int = 0
    num_partitions: int = 1
    topic_max_partitions: int = TOPIC_PARTITIONS_DEFAULT_MAX
    sweep_interval_ms: int = 1000
    push_disconnect_grace_ms: int = 1000
    barrier_hold_ms: int = 2000
    member_shards: int = 8
    deadline_shards: int = 16
    store_max_attempts: int = 5
    conversion_lease_ms: int = 15000
    conversion_transaction_items: int = 100
    acl_cache_ms: int = 5000
    sink_idempotency_ms: int = 86_400_000
    session_renewal_skips: int = 2
    fault_clock_offset_ms: int = 0
    kinesis_shard_sync_interval_ms: int = 60000
    kinesis_expired_shard_grace_ms: int = 86_400_000
    authorizer_enabled: bool = False
    allow_everyone_if_no_acl_found: bool = False
    super_users: str = ""
    group_consumer_assignors: str = "uniform,range"
    group_consumer_migration_policy: str = "bidirectional"
    table_name: str = "groupcoord"
    endpoint: str = ""
    push_url: str = ""
    push_connections_endpoint: str = ""
    sink_tables: str = ""
    kinesis_streams: str = ""
    kinesis_stream_binders: str = ""
    fault_crash_at: str = ""

    @property
    def offsets_retention(self) -> int:
        """How long offsets are kept, in ms (docs/offsets.md, "Retention")."""
        return self.offsets_retention_ms or self.offsets_retention_minutes * 60_000

    @property
    def consumer_assignors(self) -> tuple[str, ...]:
        return tuple(a.strip() for a in self.group_consumer_assignors.split(",") if a.strip())

    @property
    def sink_table_names(self) -> frozenset[str]:
        """The tables a commit's writes may write: names, or the name part of table ARNs (the
        template passes the ARNs its IAM policy grants)."""
        names = (t.strip().rsplit(":table/", 1)[-1] for t in self.sink_tables.split(","))
        return frozenset(n for n in names if n)

    @property
    def kinesis_stream_arns(self) -> frozenset[str]:
        """The streams a topic may be bound to; empty: any."""
        return frozenset(a.strip() for a in self.kinesis_streams.split(",") if a.strip())

    @property
    def kinesis_binders(self) -> dict[str, tuple[str, ...]]:
        """Who may bind which Kinesis streams (authorizer on); checked by `check`."""
        return parse_binders(self.kinesis_stream_binders)

    @property
    def super_user_principals(self) -> frozenset[str]:
        return frozenset(p.strip() for p in self.super_users.split(";") if p.strip())

    @classmethod
    def names(cls) -> list[str]:
        """Every Kafka-style setting name this coordinator reads."""
        return sorted([*_INT_SETTINGS, *_BOOL_SETTINGS, *_STR_SETTINGS])

    @classmethod
    def from_mapping(cls, values: Mapping[str, str], base: Settings | None = None) -> Settings:
        """Settings from `name=value` pairs under Kafka names; unknown names are an error."""
        current = {f.name: getattr(base or cls(), f.name) for f in fields(cls)}
        for name, raw in values.items():
            if name in _INT_SETTINGS:
                attr = _INT_SETTINGS[name][0]
                try:
                    current[attr] = int(raw)
                except ValueError:
                    raise SettingsError(f"{name} must be an integer, got {raw!r}") from None
            elif name in _BOOL_SETTINGS:
                flag = str(raw).strip().lower()
                if flag not in ("true", "false"):
                    raise SettingsError(f"{name} must be true or false, got {raw!r}")
                current[_BOOL_SETTINGS[name][0]] = flag == "true"
            elif name in _STR_SETTINGS:
                current[_STR_SETTINGS[name][0]] = str(raw)
            else:
                raise SettingsError(f"unknown setting {name!r}")
        settings = cls(**current)
        settings.check()
        return settings

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> Settings:
        """Settings from environment variables named like GROUP_MAX_SIZE (Lambda)."""
        environ = os.environ if environ is None else environ
        found = {}
        for name in [*_INT_SETTINGS, *_BOOL_SETTINGS, *_STR_SETTINGS]:
            env_name = env_var_name(name)
            if env_name in environ and environ[env_name] != "":
                found[name] = environ[env_name]
        return cls.from_mapping(found)

    def check(self) -> None:
        try:
            parse_binders(self.kinesis_stream_binders)
        except ValueError as malformed:
            raise SettingsError(str(malformed)) from None
        if self.group_consumer_migration_policy not in MIGRATION_POLICIES:
            raise SettingsError(
                "group.consumer.migration.policy must be one of " + ", ".join(MIGRATION_POLICIES)
            )
        at_least_one = (
            "member_shards",
            "deadline_shards",
            "store_max_attempts",
            "sweep_interval_ms",
            "group_max_size",
            "group_consumer_max_size",
            "group_streams_max_size",
            "num_partitions",
        )
        for attr in at_least_one:
            if getattr(self, attr) < 1:
                raise SettingsError(f"{attr} must be at least 1")
        if self.table_name in self.sink_table_names:
            raise SettingsError(
                "groupcoord.sink.tables: the coordinator's own table is never a sink"
            )
        if len(self.sink_table_names) > SINK_TABLES_MAX:
            raise SettingsError(f"groupcoord.sink.tables: at most {SINK_TABLES_MAX} tables")
        if self.sink_idempotency_ms < 60_000:
            raise SettingsError("groupcoord.sink.idempotency.ms must be at least 60000")
        if not 2 <= self.conversion_transaction_items <= 100:
            raise SettingsError("groupcoord.conversion.transaction.items must be from 2 to 100")
        if not 1 <= self.topic_max_partitions <= TOPIC_PARTITIONS_DEFAULT_MAX:
            raise SettingsError(
                f"groupcoord.topic.max.partitions must be from 1 to {TOPIC_PARTITIONS_DEFAULT_MAX}"
            )
        if not 0 <= self.offset_metadata_max_bytes <= OFFSET_METADATA_MAX_BYTES_CEILING:
            raise SettingsError(
                "offset.metadata.max.bytes must be from 0 to "
                f"{OFFSET_METADATA_MAX_BYTES_CEILING} (offset items stay far below 400 KB)"
            )
        if self.acl_cache_ms < 0:
            raise SettingsError("groupcoord.acl.cache.ms must be at least 0")
        if self.conversion_lease_ms < 1:
            raise SettingsError("groupcoord.conversion.lease.ms must be at least 1")
        if abs(self.fault_clock_offset_ms) > CLOCK_OFFSET_MAX_MS:
            raise SettingsError(
                f"groupcoord.fault.clock.offset.ms must be within ±{CLOCK_OFFSET_MAX_MS}"
            )
        if not KINESIS_SYNC_MIN_MS <= self.kinesis_shard_sync_interval_ms <= KINESIS_SYNC_MAX_MS:
            raise SettingsError(
                f"groupcoord.kinesis.shard.sync.interval.ms must be from {KINESIS_SYNC_MIN_MS} "
                f"to {KINESIS_SYNC_MAX_MS}"
            )
        if not 0 <= self.kinesis_expired_shard_grace_ms <= KINESIS_GRACE_MAX_MS:
            raise SettingsError(
                "groupcoord.kinesis.expired.shard.grace.ms must be from 0 to "
                f"{KINESIS_GRACE_MAX_MS}"
            )
        self._check_streams()
        if not 0 <= self.consumer_first_assignment_delay_ms <= FIRST_TARGET_HOLD_MAX_MS:
            raise SettingsError(
                "groupcoord.consumer.first.assignment.delay.ms must be from 0 to "
                f"{FIRST_TARGET_HOLD_MAX_MS}"
            )
        if not 0 <= self.push_disconnect_grace_ms <= PUSH_GRACE_MAX_MS:
            raise SettingsError(
                f"groupcoord.push.disconnect.grace.ms must be from 0 to {PUSH_GRACE_MAX_MS}"
            )
        if not 0 <= self.session_renewal_skips <= SESSION_RENEWAL_SKIPS_MAX:
            raise SettingsError(
                f"groupcoord.session.renewal.skips must be from 0 to {SESSION_RENEWAL_SKIPS_MAX}"
            )

    def _check_streams(self) -> None:
        """Kafka's bounds of the streams group settings (GroupCoordinatorConfig)."""
        bounded = (
            ("session.timeout.ms", self.group_streams_min_session_timeout_ms,
             self.group_streams_session_timeout_ms, self.group_streams_max_session_timeout_ms),
            ("heartbeat.interval.ms", self.group_streams_min_heartbeat_interval_ms,
             self.group_streams_heartbeat_interval_ms,
             self.group_streams_max_heartbeat_interval_ms),
            ("num.standby.replicas", 0, self.group_streams_num_standby_replicas,
             self.group_streams_max_standby_replicas),
        )  # fmt: skip
        for name, low, value, high in bounded:
            if not low <= value <= high:
                raise SettingsError(f"group.streams.{name} must be from {low} to {high}")
        if self.group_streams_heartbeat_interval_ms >= self.group_streams_session_timeout_ms:
            raise SettingsError(
                "group.streams.heartbeat.interval.ms must be less than "
                "group.streams.session.timeout.ms"
            )
        non_negative = (
            ("initial.rebalance.delay.ms", self.group_streams_initial_rebalance_delay_ms),
            ("num.warmup.replicas", self.group_streams_num_warmup_replicas),
            ("acceptable.recovery.lag", self.group_streams_acceptable_recovery_lag),
            ("task.offset.interval.ms", self.group_streams_task_offset_interval_ms),
            ("assignment.interval.ms", self.group_streams_assignment_interval_ms),
        )
        for name, value in non_negative:
            if value < 0:
                raise SettingsError(f"group.streams.{name} must be at least 0")


def env_var_name(setting: str) -> str:
    return setting.upper().replace(".", "_")
