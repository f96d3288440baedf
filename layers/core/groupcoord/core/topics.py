"""Topic registry rules (pure): Kafka's name validation and the partition-count decisions."""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..errors import Errors

MAX_TOPIC_NAME_LENGTH = 249
_LEGAL_TOPIC_NAME = re.compile(r"^[a-zA-Z0-9._-]+$")


@dataclass(frozen=True)
class TopicRecord:
    name: str
    topic_id: str
    partitions: int
    replication_factor: int = -1
    created_at_ms: int = 0


@dataclass(frozen=True)
class Refusal:
    """A per-topic Kafka error answer."""

    error: Errors
    message: str


def check_topic_name(name: str) -> Refusal | None:
    """Kafka's Topic.validate: what makes a topic name illegal (17 INVALID_TOPIC_EXCEPTION)."""
    if not name:
        return Refusal(Errors.INVALID_TOPIC_EXCEPTION, "Topic name is illegal, it can't be empty")
    if name in (".", ".."):
        return Refusal(Errors.INVALID_TOPIC_EXCEPTION, 'Topic name cannot be "." or ".."')
    if len(name) > MAX_TOPIC_NAME_LENGTH:
        return Refusal(
            Errors.INVALID_TOPIC_EXCEPTION,
            f"Topic name is illegal, it can't be longer than {MAX_TOPIC_NAME_LENGTH} "
            f"characters, topic name: {name}",
        )
    if not _LEGAL_TOPIC_NAME.fullmatch(name):
        return Refusal(
            Errors.INVALID_TOPIC_EXCEPTION,
            f'Topic name "{name}" is illegal, it contains a character other than ASCII '
            "alphanumerics, '.', '_' and '-'",
        )
    return None


def partitions_to_create(
    num_partitions: int, replication_factor: int, assignment_count: int, default_partitions: int
) -> int | Refusal:
    """The partition count a CreateTopics entry asks for, or why it is refused."""
    if assignment_count:
        if num_partitions != -1 or replication_factor != -1:
            return Refusal(
                Errors.INVALID_REQUEST,
                "Both numPartitions or replicationFactor and replicasAssignments were set. "
                "Both cannot be used at the same time.",
            )
        return assignment_count
    if replication_factor == 0 or replication_factor < -1:
        return Refusal(
            Errors.INVALID_REPLICATION_FACTOR,
            "Replication factor must be larger than 0, or -1 to use the default value.",
        )
    if num_partitions == -1:
        return default_partitions
    if num_partitions <= 0:
        return Refusal(
            Errors.INVALID_PARTITIONS,
            "Number of partitions was set to an invalid non-positive value.",
        )
    return num_partitions


def check_partition_growth(current: int, requested: int) -> Refusal | None:
    """CreatePartitions: counts only grow (37 INVALID_PARTITIONS otherwise)."""
    if requested == current:
        return Refusal(Errors.INVALID_PARTITIONS, f"Topic already has {current} partitions.")
    if requested < current:
        return Refusal(
            Errors.INVALID_PARTITIONS,
            f"Topic currently has {current} partitions, which is higher than the requested "
            f"{requested}.",
        )
    return None


def duplicates(names: list[str]) -> set[str]:
    seen: set[str] = set()
    repeated: set[str] = set()
    for name in names:
        (repeated if name in seen else seen).add(name)
    return repeated


def regex_matches(pattern: str, topic: str) -> bool:
    """Full-match of a group's subscribedTopicRegex (API.md); a bad pattern matches nothing."""
    try:
        return re.fullmatch(pattern, topic) is not None
    except re.error:
        return False
