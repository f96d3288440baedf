"""The binding of a topic to a Kinesis data stream (create-topics' configs): which stream, where
a group that has no checkpoint starts, and the stream's creation time, which tells a stream
deleted and re-created under the same name from the one the topic was bound to."""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import StrEnum

from ...errors import Errors
from ..modern.refusal import Refusal

STREAM_ARN = "groupcoord.kinesis.stream.arn"
INITIAL_POSITION = "groupcoord.kinesis.initial.position"
_CONFIGS = (STREAM_ARN, INITIAL_POSITION)
_PREFIX = "groupcoord.kinesis."

# arn:<partition>:kinesis:<region>:<account>:stream/<name> (Kinesis: names of 1 to 128 of
# [a-zA-Z0-9_.-]).
_STREAM_ARN = re.compile(
    r"^arn:aws[a-z-]{0,16}:kinesis:[a-z0-9-]{1,32}:[0-9]{12}:stream/[a-zA-Z0-9_.-]{1,128}$"
)
# AT_TIMESTAMP:<epoch ms>: up to 13 digits (the year 2286).
_AT_TIMESTAMP = re.compile(r"^AT_TIMESTAMP:([0-9]{1,13})$")


class StartingPoint(StrEnum):
    TRIM_HORIZON = "TRIM_HORIZON"
    LATEST = "LATEST"
    AT_TIMESTAMP = "AT_TIMESTAMP"


@dataclass(frozen=True)
class InitialPosition:
    """Where a group without a checkpoint starts reading the stream."""

    point: StartingPoint = StartingPoint.TRIM_HORIZON
    timestamp_ms: int | None = None  # AT_TIMESTAMP's

    def encode(self) -> str:
        if self.point is StartingPoint.AT_TIMESTAMP:
            return f"{self.point.value}:{self.timestamp_ms}"
        return self.point.value

    @classmethod
    def decode(cls, text: str) -> InitialPosition | None:
        """The position a config value names, or None if it names none."""
        found = _AT_TIMESTAMP.fullmatch(text)
        if found:
            return cls(StartingPoint.AT_TIMESTAMP, int(found.group(1)))
        if text in (StartingPoint.TRIM_HORIZON.value, StartingPoint.LATEST.value):
            return cls(StartingPoint(text))
        return None


@dataclass(frozen=True)
class KinesisBinding:
    stream_arn: str
    initial_position: InitialPosition = InitialPosition()
    # The stream's StreamCreationTimestamp (ms) when the topic was bound to it.
    stream_created_ms: int = 0

    @property
    def stream_name(self) -> str:
        return self.stream_arn.rsplit("/", 1)[1]


@dataclass(frozen=True)
class BindingAsked:
    """What a create-topics entry asks for: a stream and a starting point (its creation time
    is read from Kinesis before the topic is written)."""

    stream_arn: str
    initial_position: InitialPosition


def binding_asked(
    configs: list[tuple[str, str | None]],
    num_partitions: int,
    assignment_count: int,
    allowed_streams: frozenset[str],
) -> BindingAsked | Refusal | None:
    """The Kinesis binding a create-topics entry asks for, why it is refused (40
    INVALID_CONFIG, 37 INVALID_PARTITIONS), or None for a topic that is not Kinesis-backed.
    `allowed_streams`: the stream ARNs this deployment may list (empty: any)."""
    values = {name: value for name, value in configs if name.startswith(_PREFIX)}
    if not values:
        return None
    unknown = sorted(set(values) - set(_CONFIGS))
    if unknown:
        return Refusal(Errors.INVALID_CONFIG, f"Unknown topic config {unknown[0]}.")
    arn = values.get(STREAM_ARN)
    if arn is None:
        return Refusal(Errors.INVALID_CONFIG, f"{STREAM_ARN} is required for a Kinesis topic.")
    if not _STREAM_ARN.fullmatch(arn):
        return Refusal(Errors.INVALID_CONFIG, f"{STREAM_ARN} is not a Kinesis stream ARN.")
    if allowed_streams and arn not in allowed_streams:
        return Refusal(
            Errors.INVALID_CONFIG,
            f"{STREAM_ARN}: this coordinator may not read that stream "
            "(groupcoord.kinesis.streams).",
        )
    position_text = values.get(INITIAL_POSITION) or StartingPoint.TRIM_HORIZON.value
    position = InitialPosition.decode(position_text)
    if position is None:
        return Refusal(
            Errors.INVALID_CONFIG,
            f"{INITIAL_POSITION} must be TRIM_HORIZON, LATEST or AT_TIMESTAMP:<epoch ms>.",
        )
    if num_partitions != -1 or assignment_count:
        return Refusal(
            Errors.INVALID_PARTITIONS,
            "A Kinesis topic's partitions are its stream's shards: numPartitions must be -1 "
            "and assignments empty.",
        )
    return BindingAsked(arn, position)


def stream_matches(binding: KinesisBinding, created_ms: int) -> bool:
    """Whether the stream Kinesis shows now is the one the topic was bound to (a stream
    deleted and created again under the name has a later creation time)."""
    return created_ms == binding.stream_created_ms
