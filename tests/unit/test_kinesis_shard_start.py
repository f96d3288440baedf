"""Where KinesisConsumer opens a shard (groupcoord.client.kinesis_shard): at the checkpoint or
the last record handed over, a reset to sequence 0 from the shard's first record, a child from
TRIM_HORIZON, else the topic's initial position, read from its metadata entry; and the pacing
options' floor."""

from __future__ import annotations

import pytest

from groupcoord.client.errors import GroupcoordError
from groupcoord.client.kinesis_shard import (
    FETCH_INTERVAL_S,
    Pacing,
    StartAt,
    iterator_args,
    topic_start,
)

LATEST = StartAt.parse("LATEST")
SEQUENCE = "49590338271490256608559692538361571095921575989136588898"


def test_a_checkpoint_opens_at_its_sequence_number_whatever_the_topic_s_start() -> None:
    at = {"sequenceNumber": SEQUENCE, "subSequenceNumber": 2}
    for start, parents in [(StartAt(), False), (LATEST, False), (LATEST, True)]:
        assert iterator_args(at, parents, start, latest_ms=5) == {
            "ShardIteratorType": "AT_SEQUENCE_NUMBER",
            "StartingSequenceNumber": SEQUENCE,
        }


@pytest.mark.parametrize("reset", [{"sequenceNumber": "0", "subSequenceNumber": 0},
                                   {"sequenceNumber": "0", "subSequenceNumber": 3}])  # fmt: skip
def test_a_reset_to_sequence_0_opens_at_the_trim_horizon(reset: dict[str, object]) -> None:
    """`groupcoord offsets reset --to-sequence 0[:SUB]` stores sequence number 0, which
    Kinesis refuses as AT_SEQUENCE_NUMBER: it means the shard's first record."""
    assert iterator_args(reset, False, LATEST) == {"ShardIteratorType": "TRIM_HORIZON"}


def test_a_reset_to_a_time_opens_at_that_time_parents_or_not() -> None:
    """`groupcoord offsets reset --to-datetime` stores atTimestampMs: the shard's first record
    at or after it, whatever the topic's start and whether the shard has parents."""
    reset = {"atTimestampMs": 1700000000250, "subSequenceNumber": 0}
    for start, parents in [(StartAt(), False), (LATEST, False), (StartAt(), True)]:
        assert iterator_args(reset, parents, start, latest_ms=5) == {
            "ShardIteratorType": "AT_TIMESTAMP",
            "Timestamp": 1700000000.25,
        }


def test_without_a_checkpoint_a_child_starts_at_the_trim_horizon_a_root_at_the_topic_s() -> None:
    at_ms = StartAt.parse("AT_TIMESTAMP:1700000000123")
    assert iterator_args(None, True, at_ms) == {"ShardIteratorType": "TRIM_HORIZON"}
    assert iterator_args(None, False, StartAt()) == {"ShardIteratorType": "TRIM_HORIZON"}
    assert iterator_args(None, False, at_ms) == {
        "ShardIteratorType": "AT_TIMESTAMP",
        "Timestamp": 1700000000.123,
    }
    assert iterator_args(None, False, LATEST) == {"ShardIteratorType": "LATEST"}
    # Once a LATEST iterator was taken, a re-open goes back to when: never a later LATEST.
    assert iterator_args(None, False, LATEST, latest_ms=1700000000500) == {
        "ShardIteratorType": "AT_TIMESTAMP",
        "Timestamp": 1700000000.5,
    }
    assert iterator_args(None, False, StartAt(), latest_ms=5) == {
        "ShardIteratorType": "TRIM_HORIZON"
    }


def test_the_topic_s_initial_position_from_its_metadata_entry() -> None:
    assert topic_start({"name": "t"}) is None  # a coordinator that does not tell it
    assert topic_start({"name": "t", "kinesisInitialPosition": None}) is None
    assert (
        topic_start(
            {"name": "t", "kinesisInitialPosition": {"type": "LATEST", "timestampMs": None}}
        )
        == LATEST
    )
    assert topic_start(
        {"kinesisInitialPosition": {"type": "AT_TIMESTAMP", "timestampMs": 12}}
    ) == StartAt("AT_TIMESTAMP", 12)
    with pytest.raises(GroupcoordError, match="initial_position"):
        topic_start({"name": "t", "kinesisInitialPosition": {"type": "AT_SEQUENCE_NUMBER"}})


@pytest.mark.parametrize("text", ["latest", "AT_TIMESTAMP:", "AT_TIMESTAMP:12345678901234", ""])
def test_a_malformed_initial_position_is_refused(text: str) -> None:
    with pytest.raises(ValueError):
        StartAt.parse(text)
    assert str(StartAt.parse("AT_TIMESTAMP:42")) == "AT_TIMESTAMP:42"


def test_pacing_defaults_to_a_second_and_refuses_less_than_a_fifth() -> None:
    assert Pacing().interval_s == FETCH_INTERVAL_S == 1.0
    assert Pacing(0.2).interval_s == 0.2
    with pytest.raises(ValueError, match="5 calls a second"):
        Pacing(0.1)
    with pytest.raises(ValueError, match="limit"):
        Pacing(limit=10_001)
