"""Settings under Kafka's broker config names: `-c name=value` for serve, environment variables
(upper case, dots as underscores) for Lambda (README.md, "Configuration")."""

from __future__ import annotations

import dataclasses

import pytest

from groupcoord.settings import MIGRATION_POLICIES, Settings, SettingsError, env_var_name

# The settings the contract promises, with Kafka's names and defaults.
DOCUMENTED_DEFAULTS = {
    "group.initial.rebalance.delay.ms": 3000,
    "group.min.session.timeout.ms": 6000,
    "group.max.session.timeout.ms": 1_800_000,
    "group.consumer.session.timeout.ms": 45000,
    "group.consumer.heartbeat.interval.ms": 5000,
    "group.consumer.assignors": "uniform,range",
    "group.consumer.migration.policy": "bidirectional",
    "offsets.retention.minutes": 10080,
    "offset.metadata.max.bytes": 4096,
    "groupcoord.sweep.interval.ms": 1000,
    "group.streams.session.timeout.ms": 45000,
    "group.streams.min.session.timeout.ms": 45000,
    "group.streams.max.session.timeout.ms": 60000,
    "group.streams.heartbeat.interval.ms": 5000,
    "group.streams.min.heartbeat.interval.ms": 5000,
    "group.streams.max.heartbeat.interval.ms": 15000,
    "group.streams.num.standby.replicas": 0,
    "group.streams.max.standby.replicas": 2,
    "group.streams.initial.rebalance.delay.ms": 3000,
    "group.streams.num.warmup.replicas": 2,
    "group.streams.acceptable.recovery.lag": 10000,
    "group.streams.task.offset.interval.ms": 60000,
    "group.streams.assignment.interval.ms": 1000,
    "groupcoord.consumer.first.assignment.delay.ms": 250,
}
DOCUMENTED_NAMES = {
    *DOCUMENTED_DEFAULTS,
    "group.max.size",
    "group.consumer.min.session.timeout.ms",
    "group.consumer.max.session.timeout.ms",
    "group.consumer.min.heartbeat.interval.ms",
    "group.consumer.max.heartbeat.interval.ms",
    "group.consumer.max.size",
    "groupcoord.barrier.hold.ms",
}


BINDERS_SAMPLE = "User:a=arn:aws:kinesis:us-east-1:123456789012:stream/a-*"


def attribute_for(name: str) -> str:
    samples = {
        "group.consumer.migration.policy": "disabled",
        "groupcoord.conversion.transaction.items": "50",
        "groupcoord.sink.idempotency.ms": "120000",
        "groupcoord.session.renewal.skips": "3",
        "groupcoord.consumer.first.assignment.delay.ms": "500",
        "groupcoord.authorizer.enabled": "true",
        "allow.everyone.if.no.acl.found": "true",
        # Streams settings within their bounds (each one changed alone).
        "group.streams.session.timeout.ms": "50000",
        "group.streams.max.session.timeout.ms": "70000",
        "group.streams.min.heartbeat.interval.ms": "4000",
        "group.streams.num.standby.replicas": "1",
        "groupcoord.kinesis.stream.binders": BINDERS_SAMPLE,
    }
    sample = samples.get(name, "12345")
    settings = Settings.from_mapping({name: sample})
    changed = [
        f.name
        for f in dataclasses.fields(Settings)
        if getattr(settings, f.name) != getattr(Settings(), f.name)
    ]
    assert len(changed) == 1, (name, changed)
    return changed[0]


def test_names_cover_the_documented_settings() -> None:
    assert set(Settings.names()) >= DOCUMENTED_NAMES


@pytest.mark.parametrize(("name", "default"), sorted(DOCUMENTED_DEFAULTS.items()))
def test_defaults_are_kafkas(name: str, default: object) -> None:
    assert getattr(Settings(), attribute_for(name)) == default


def test_every_name_sets_its_own_attribute_and_every_attribute_has_a_name() -> None:
    attributes = [attribute_for(name) for name in Settings.names()]
    assert len(set(attributes)) == len(attributes)
    assert set(attributes) == {f.name for f in dataclasses.fields(Settings)}


def test_empty_mapping_gives_the_defaults() -> None:
    assert Settings.from_mapping({}) == Settings()


def test_from_mapping_parses_integers_and_keeps_strings() -> None:
    settings = Settings.from_mapping(
        {
            "group.min.session.timeout.ms": "200",
            "group.max.size": "5",
            "groupcoord.table.name": "my-table",
            "group.consumer.assignors": "range",
        }
    )
    assert settings.group_min_session_timeout_ms == 200
    assert settings.group_max_size == 5
    assert settings.table_name == "my-table"
    assert settings.consumer_assignors == ("range",)


def test_a_low_session_timeout_is_allowed_for_tests() -> None:
    settings = Settings.from_mapping(
        {"group.min.session.timeout.ms": "1", "group.consumer.session.timeout.ms": "200"}
    )
    assert settings.group_consumer_session_timeout_ms == 200


def test_from_mapping_starts_from_a_base() -> None:
    base = Settings.from_mapping({"group.max.size": "3", "groupcoord.table.name": "t1"})
    settings = Settings.from_mapping({"groupcoord.table.name": "t2"}, base=base)
    assert (settings.group_max_size, settings.table_name) == (3, "t2")
    assert base.table_name == "t1"  # frozen: the base is untouched


@pytest.mark.parametrize(
    "name", ["group.max.sise", "GROUP_MAX_SIZE", "group.max.size ", "", "num.partition"]
)
def test_unknown_setting_is_rejected(name: str) -> None:
    with pytest.raises(SettingsError, match="unknown setting"):
        Settings.from_mapping({name: "1"})


@pytest.mark.parametrize("raw", ["abc", "1.5", "", "10ms", "1e3"])
def test_non_integer_is_rejected_naming_the_setting(raw: str) -> None:
    with pytest.raises(SettingsError, match=r"group\.max\.size must be an integer"):
        Settings.from_mapping({"group.max.size": raw})


def test_settings_error_is_a_value_error() -> None:
    assert issubclass(SettingsError, ValueError)


@pytest.mark.parametrize("policy", MIGRATION_POLICIES)
def test_migration_policies(policy: str) -> None:
    settings = Settings.from_mapping({"group.consumer.migration.policy": policy})
    assert settings.group_consumer_migration_policy == policy


def test_migration_policies_are_kafkas() -> None:
    assert set(MIGRATION_POLICIES) == {"bidirectional", "upgrade", "downgrade", "disabled"}


@pytest.mark.parametrize("policy", ["sideways", "", "bi-directional"])
def test_unknown_migration_policy_is_rejected(policy: str) -> None:
    with pytest.raises(SettingsError, match=r"migration\.policy"):
        Settings.from_mapping({"group.consumer.migration.policy": policy})


def test_unknown_migration_policy_is_rejected_by_the_constructor_check() -> None:
    with pytest.raises(SettingsError):
        Settings(group_consumer_migration_policy="nope").check()


@pytest.mark.parametrize(
    "name",
    [
        "groupcoord.member.shards",
        "groupcoord.deadline.shards",
        "groupcoord.store.max.attempts",
        "groupcoord.sweep.interval.ms",
    ],
)
def test_counts_below_one_are_rejected(name: str) -> None:
    with pytest.raises(SettingsError, match="at least 1"):
        Settings.from_mapping({name: "0"})


@pytest.mark.parametrize("value", ["-1", "2001"])
def test_a_first_assignment_delay_past_its_hold_is_rejected(value: str) -> None:
    # The hold ends 2 s after the group's creation whatever the delay (core/consumer/forming).
    with pytest.raises(SettingsError, match="from 0 to 2000"):
        Settings.from_mapping({"groupcoord.consumer.first.assignment.delay.ms": value})


# --- environment variables (Lambda) ---


@pytest.mark.parametrize(
    ("name", "env"),
    [
        ("group.initial.rebalance.delay.ms", "GROUP_INITIAL_REBALANCE_DELAY_MS"),
        ("group.max.size", "GROUP_MAX_SIZE"),
        ("groupcoord.table.name", "GROUPCOORD_TABLE_NAME"),
        ("offsets.retention.minutes", "OFFSETS_RETENTION_MINUTES"),
    ],
)
def test_env_var_name(name: str, env: str) -> None:
    assert env_var_name(name) == env


def test_from_env_reads_upper_case_underscore_names() -> None:
    settings = Settings.from_env(
        {
            "GROUP_INITIAL_REBALANCE_DELAY_MS": "0",
            "GROUP_CONSUMER_MIGRATION_POLICY": "upgrade",
            "GROUPCOORD_TABLE_NAME": "stack-Table-ABC",
            "GROUPCOORD_STORE_MAX_ATTEMPTS": "2",
        }
    )
    assert settings.group_initial_rebalance_delay_ms == 0
    assert settings.group_consumer_migration_policy == "upgrade"
    assert settings.table_name == "stack-Table-ABC"
    assert settings.store_max_attempts == 2


def test_from_env_ignores_other_variables_and_empty_values() -> None:
    settings = Settings.from_env(
        {
            "PATH": "/usr/bin",
            "AWS_REGION": "eu-west-1",
            "group.max.size": "3",  # the Kafka spelling is not an environment name
            "GROUP_MAX_SIZE_": "4",
            "GROUP_MIN_SESSION_TIMEOUT_MS": "",
        }
    )
    assert settings == Settings()


def test_from_env_every_setting_round_trips() -> None:
    samples = {
        "group.consumer.migration.policy": "downgrade",
        "groupcoord.conversion.transaction.items": "77",
        "groupcoord.sink.idempotency.ms": "120000",
        "groupcoord.session.renewal.skips": "2",
        "groupcoord.authorizer.enabled": "true",
        "allow.everyone.if.no.acl.found": "true",
        "groupcoord.kinesis.shard.sync.interval.ms": "7777",
        "group.streams.session.timeout.ms": "50000",
        "group.streams.max.session.timeout.ms": "70000",
        "group.streams.min.heartbeat.interval.ms": "4000",
        "group.streams.heartbeat.interval.ms": "7000",
        "group.streams.max.heartbeat.interval.ms": "17000",
        "group.streams.num.standby.replicas": "1",
        "groupcoord.kinesis.stream.binders": BINDERS_SAMPLE,
    }
    for name in Settings.names():
        sample = samples.get(name, "777")
        from_env = Settings.from_env({env_var_name(name): sample})
        assert from_env == Settings.from_mapping({name: sample}), name


def test_from_env_rejects_non_integers_naming_the_setting() -> None:
    with pytest.raises(SettingsError, match=r"group\.consumer\.heartbeat\.interval\.ms"):
        Settings.from_env({"GROUP_CONSUMER_HEARTBEAT_INTERVAL_MS": "fast"})


def test_from_env_checks_the_migration_policy() -> None:
    with pytest.raises(SettingsError, match=r"migration\.policy"):
        Settings.from_env({"GROUP_CONSUMER_MIGRATION_POLICY": "both"})


def test_from_env_defaults_to_the_process_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GROUP_MAX_SIZE", "42")
    monkeypatch.setenv("GROUPCOORD_TABLE_NAME", "from-env")
    settings = Settings.from_env()
    assert (settings.group_max_size, settings.table_name) == (42, "from-env")


@pytest.mark.parametrize("value", ["1", "101"])
def test_a_conversion_transaction_holds_2_to_100_items(value: str) -> None:
    with pytest.raises(SettingsError, match=r"conversion\.transaction\.items"):
        Settings.from_mapping({"groupcoord.conversion.transaction.items": value})


def test_authorizer_settings_take_kafkas_names_and_forms() -> None:
    settings = Settings.from_mapping(
        {
            "groupcoord.authorizer.enabled": "TRUE",
            "super.users": "User:alice; User:arn:aws:iam::123456789012:role/ops;",
            "allow.everyone.if.no.acl.found": "false",
        }
    )
    assert settings.authorizer_enabled and not settings.allow_everyone_if_no_acl_found
    assert settings.super_user_principals == {
        "User:alice",
        "User:arn:aws:iam::123456789012:role/ops",
    }
    assert not Settings().authorizer_enabled  # off unless configured, as Kafka without one
    with pytest.raises(SettingsError, match=r"groupcoord\.authorizer\.enabled"):
        Settings.from_mapping({"groupcoord.authorizer.enabled": "yes"})


def test_the_kinesis_shard_sync_interval_is_bounded() -> None:
    assert Settings().kinesis_shard_sync_interval_ms == 60000
    for refused in ("999", "86400001"):
        with pytest.raises(SettingsError, match=r"shard\.sync\.interval"):
            Settings.from_mapping({"groupcoord.kinesis.shard.sync.interval.ms": refused})
    assert Settings().kinesis_expired_shard_grace_ms == 86_400_000
    assert (
        Settings.from_mapping(
            {"groupcoord.kinesis.expired.shard.grace.ms": "0"}
        ).kinesis_expired_shard_grace_ms
        == 0
    )
    for refused in ("-1", str(7 * 86_400_000 + 1)):
        with pytest.raises(SettingsError, match=r"expired\.shard\.grace"):
            Settings.from_mapping({"groupcoord.kinesis.expired.shard.grace.ms": refused})
    a, b = (f"arn:aws:kinesis:us-east-1:000000000000:stream/{n}" for n in "ab")
    listed = Settings.from_mapping({"groupcoord.kinesis.streams": f" {a},,{b}"})
    assert listed.kinesis_stream_arns == {a, b}


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ({"group.streams.session.timeout.ms": "1000"}, "session.timeout.ms must be from 45000"),
        ({"group.streams.heartbeat.interval.ms": "20000"}, "heartbeat.interval.ms must be from"),
        ({"group.streams.num.standby.replicas": "3"}, "num.standby.replicas must be from 0 to 2"),
        ({"group.streams.min.session.timeout.ms": "100", "group.streams.session.timeout.ms": "200",
          "group.streams.min.heartbeat.interval.ms": "100",
          "group.streams.heartbeat.interval.ms": "300"}, "must be less than"),
        ({"group.streams.initial.rebalance.delay.ms": "-1"}, "at least 0"),
    ],
)  # fmt: skip
def test_streams_settings_keep_their_bounds(values: dict[str, str], message: str) -> None:
    with pytest.raises(SettingsError, match=message):
        Settings.from_mapping(values)


def test_streams_bounds_are_settings_so_tests_run_short_timers() -> None:
    settings = Settings.from_mapping(
        {
            "group.streams.min.session.timeout.ms": "100",
            "group.streams.session.timeout.ms": "600",
            "group.streams.min.heartbeat.interval.ms": "50",
            "group.streams.heartbeat.interval.ms": "100",
        }
    )
    assert (settings.group_streams_session_timeout_ms,
            settings.group_streams_heartbeat_interval_ms) == (600, 100)  # fmt: skip
