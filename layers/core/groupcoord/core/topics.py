"""Topic registry rules (pure): Kafka's name validation, the partition-count decisions, and
the evaluation of subscribedTopicRegex."""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from typing import Any

import re2

from ..errors import Errors
from ..models.limits import REGEX_MAX_CHARS, TOPIC_NAME_MAX_CHARS
from .kinesis.binding import KinesisBinding
from .modern.refusal import Refusal

MAX_TOPIC_NAME_LENGTH = TOPIC_NAME_MAX_CHARS
_LEGAL_TOPIC_NAME = re.compile(r"^[a-zA-Z0-9._-]+$")


@dataclass(frozen=True)
class TopicRecord:
    name: str
    topic_id: str
    partitions: int
    replication_factor: int = -1
    created_at_ms: int = 0
    # A Kinesis-backed topic's stream (its partitions are the stream's shards), and when its
    # shard registry was last synced.
    kinesis: KinesisBinding | None = None
    shard_sync_at_ms: int = 0


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


def check_partition_limit(count: int, max_partitions: int) -> Refusal | None:
    """groupcoord.topic.max.partitions: metadata and the assignors build one object per
    partition, so a topic's size is bounded (37 INVALID_PARTITIONS past it)."""
    if count > max_partitions:
        return Refusal(
            Errors.INVALID_PARTITIONS,
            f"Number of partitions {count} is over the limit of {max_partitions} "
            "(groupcoord.topic.max.partitions).",
        )
    return None


def partitions_to_create(
    num_partitions: int,
    replication_factor: int,
    assignment_count: int,
    default_partitions: int,
    max_partitions: int,
) -> int | Refusal:
    """The partition count a CreateTopics entry asks for, or why it is refused."""
    count = _partitions_asked(
        num_partitions, replication_factor, assignment_count, default_partitions
    )
    if isinstance(count, Refusal):
        return count
    return check_partition_limit(count, max_partitions) or count


def _partitions_asked(
    num_partitions: int, replication_factor: int, assignment_count: int, default_partitions: int
) -> int | Refusal:
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


def check_partition_growth(current: int, requested: int, max_partitions: int) -> Refusal | None:
    """CreatePartitions: counts only grow, up to the limit (37 INVALID_PARTITIONS otherwise)."""
    if requested == current:
        return Refusal(Errors.INVALID_PARTITIONS, f"Topic already has {current} partitions.")
    if requested < current:
        return Refusal(
            Errors.INVALID_PARTITIONS,
            f"Topic currently has {current} partitions, which is higher than the requested "
            f"{requested}.",
        )
    return check_partition_limit(requested, max_partitions)


def duplicates(names: list[str]) -> set[str]:
    seen: set[str] = set()
    repeated: set[str] = set()
    for name in names:
        (repeated if name in seen else seen).add(name)
    return repeated


# --- subscribedTopicRegex ---
#
# Kafka evaluates subscribedTopicRegex with RE2/J; here it is RE2 (google-re2): the same syntax
# (no backreferences, no lookaround) and matching in time linear in the topic name, so no
# pattern can stall a request. A pattern is never evaluated with Python's backtracking `re`.
#
# RE2's memory budget per compiled pattern (its default is 8 MiB). A pattern whose program
# does not fit is refused (128 INVALID_REGULAR_EXPRESSION) instead of taking the memory; a
# pattern of REGEX_MAX_CHARS that a topic name could match fits easily (`.{1000}` needs about
# 100 KiB). Past the budget the DFA falls back to RE2's NFA: slower, still linear.
REGEX_MAX_MEM_BYTES = 1 << 20
# Compiled patterns kept per process, so that a pass over many topics (or over the regex
# subscribers for one topic) compiles each pattern once. The re2 module keeps its own LRU of
# 128 more; together they hold at most ~256 x REGEX_MAX_MEM_BYTES, which a 512 MB function
# can afford even if every pattern filled its budget (in practice a few KiB each).
REGEX_CACHE_SIZE = 128


def _re2_options() -> re2.Options:
    options = re2.Options()
    options.max_mem = REGEX_MAX_MEM_BYTES
    options.log_errors = False  # a refused pattern is an answer, not a log line on stderr
    return options


_RE2_OPTIONS = _re2_options()


@dataclass(frozen=True)
class CompiledRegex:
    regex: Any | None  # a compiled re2 pattern; None when RE2 refuses the pattern
    error: str | None  # why RE2 refused it


@functools.lru_cache(maxsize=REGEX_CACHE_SIZE)
def compile_regex(pattern: str) -> CompiledRegex:
    """The pattern compiled by RE2 under REGEX_MAX_MEM_BYTES, or why it cannot be (cached)."""
    try:
        return CompiledRegex(re2.compile(pattern, _RE2_OPTIONS), None)
    except re2.error as error:
        detail = error.args[0] if error.args else error
        if isinstance(detail, bytes):
            detail = detail.decode("utf-8", "replace")
        return CompiledRegex(None, str(detail))


def regex_error(pattern: str) -> str | None:
    """Why a subscribedTopicRegex is refused (128 INVALID_REGULAR_EXPRESSION), or None: longer
    than REGEX_MAX_CHARS, or not a pattern RE2 compiles within its memory budget."""
    if len(pattern) > REGEX_MAX_CHARS:
        return f"it is longer than {REGEX_MAX_CHARS} characters"
    return compile_regex(pattern).error


def regex_matches(pattern: str, topic: str) -> bool:
    """Full-match of a group's subscribedTopicRegex, evaluated by RE2 in linear time;
    a pattern RE2 refuses matches nothing."""
    compiled = compile_regex(pattern).regex
    return compiled is not None and compiled.fullmatch(topic) is not None
