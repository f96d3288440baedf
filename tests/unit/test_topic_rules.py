"""Kafka's topic registry rules (core/topics.py): names, partition counts, duplicates, regexes."""

from __future__ import annotations

import re
import string

import pytest
from hypothesis import given
from hypothesis import strategies as st

from groupcoord.core.topics import (
    MAX_TOPIC_NAME_LENGTH,
    Refusal,
    check_partition_growth,
    check_topic_name,
    duplicates,
    partitions_to_create,
    regex_matches,
)
from groupcoord.errors import Errors

LEGAL_CHARS = string.ascii_letters + string.digits + "._-"
legal_names = st.text(alphabet=LEGAL_CHARS, min_size=1, max_size=MAX_TOPIC_NAME_LENGTH).filter(
    lambda n: n not in (".", "..")
)


def refused_with(result: object, error: Errors) -> bool:
    return isinstance(result, Refusal) and result.error == error and bool(result.message)


# --- topic names (Kafka's Topic.validate) ---


@pytest.mark.parametrize(
    "name",
    ["orders", "Orders.V2", "a", "payments_eu-west-1", "__consumer-like", "...", ".a", "a.."],
)
def test_legal_names(name: str) -> None:
    assert check_topic_name(name) is None


@given(legal_names)
def test_any_name_of_legal_characters_up_to_the_limit_is_legal(name: str) -> None:
    assert check_topic_name(name) is None


def test_empty_name_is_illegal() -> None:
    refusal = check_topic_name("")
    assert refused_with(refusal, Errors.INVALID_TOPIC_EXCEPTION)
    assert refusal is not None and "empty" in refusal.message


@pytest.mark.parametrize("name", [".", ".."])
def test_dot_and_dot_dot_are_illegal(name: str) -> None:
    refusal = check_topic_name(name)
    assert refused_with(refusal, Errors.INVALID_TOPIC_EXCEPTION)
    assert refusal is not None and '"." or ".."' in refusal.message


def test_249_characters_is_the_limit() -> None:
    assert MAX_TOPIC_NAME_LENGTH == 249
    assert check_topic_name("a" * 249) is None
    refusal = check_topic_name("a" * 250)
    assert refused_with(refusal, Errors.INVALID_TOPIC_EXCEPTION)
    assert refusal is not None and "249" in refusal.message


@given(st.integers(min_value=MAX_TOPIC_NAME_LENGTH + 1, max_value=2000))
def test_every_longer_name_is_illegal(length: int) -> None:
    assert refused_with(check_topic_name("t" * length), Errors.INVALID_TOPIC_EXCEPTION)


@pytest.mark.parametrize(
    "name",
    ["orders topic", "orders/eu", "orders#1", "ordérs", "orders:v1", "tab\there", "*", "a+b"],
)
def test_names_with_other_characters_are_illegal(name: str) -> None:
    refusal = check_topic_name(name)
    assert refused_with(refusal, Errors.INVALID_TOPIC_EXCEPTION)
    assert refusal is not None and "ASCII alphanumerics" in refusal.message


@given(
    st.text(alphabet=LEGAL_CHARS, max_size=20),
    # "\n" has its own test below: `$` would let it through at the end of a name.
    st.characters(exclude_characters=LEGAL_CHARS + "\n"),
    st.text(alphabet=LEGAL_CHARS, max_size=20),
)
def test_one_illegal_character_anywhere_makes_the_name_illegal(
    before: str, bad: str, after: str
) -> None:
    assert refused_with(check_topic_name(before + bad + after), Errors.INVALID_TOPIC_EXCEPTION)


def test_a_trailing_newline_is_illegal() -> None:
    assert refused_with(check_topic_name("orders\n"), Errors.INVALID_TOPIC_EXCEPTION)


# --- partition counts asked by create-topics ---

DEFAULT = 7
MAX = 100_000


def test_explicit_partition_count_is_taken() -> None:
    assert partitions_to_create(12, 3, 0, DEFAULT, MAX) == 12
    assert partitions_to_create(1, -1, 0, DEFAULT, MAX) == 1


def test_minus_one_partitions_takes_num_partitions_setting() -> None:
    assert partitions_to_create(-1, -1, 0, DEFAULT, MAX) == DEFAULT
    assert partitions_to_create(-1, 2, 0, 1, MAX) == 1


@pytest.mark.parametrize("count", [0, -2, -100])
def test_non_positive_partition_count_is_invalid_partitions(count: int) -> None:
    assert refused_with(partitions_to_create(count, -1, 0, DEFAULT, MAX), Errors.INVALID_PARTITIONS)


@pytest.mark.parametrize("factor", [0, -2, -32768])
def test_bad_replication_factor_is_invalid_replication_factor(factor: int) -> None:
    result = partitions_to_create(3, factor, 0, DEFAULT, MAX)
    assert refused_with(result, Errors.INVALID_REPLICATION_FACTOR)


def test_replication_factor_is_checked_before_partitions() -> None:
    # Kafka's ReplicationControlManager checks the factor first.
    assert refused_with(
        partitions_to_create(0, 0, 0, DEFAULT, MAX), Errors.INVALID_REPLICATION_FACTOR
    )


@pytest.mark.parametrize("factor", [-1, 1, 3, 32767])
def test_any_positive_or_default_replication_factor_is_accepted(factor: int) -> None:
    assert partitions_to_create(4, factor, 0, DEFAULT, MAX) == 4


def test_assignments_give_the_partition_count() -> None:
    assert partitions_to_create(-1, -1, 5, DEFAULT, MAX) == 5


@pytest.mark.parametrize(("count", "factor"), [(3, -1), (-1, 3), (5, 2)])
def test_assignments_with_count_or_factor_is_invalid_request(count: int, factor: int) -> None:
    result = partitions_to_create(count, factor, 5, DEFAULT, MAX)
    assert refused_with(result, Errors.INVALID_REQUEST)
    assert isinstance(result, Refusal) and "cannot be used at the same time" in result.message


@given(
    st.integers(min_value=-(2**31), max_value=2**31 - 1),
    st.integers(min_value=-(2**15), max_value=2**15 - 1),
)
def test_partitions_to_create_is_positive_or_refused(count: int, factor: int) -> None:
    result = partitions_to_create(count, factor, 0, DEFAULT, MAX)
    assert isinstance(result, Refusal) or result >= 1
    if not isinstance(result, Refusal):
        assert result == (DEFAULT if count == -1 else count)


# --- create-partitions ---


def test_growth_is_accepted() -> None:
    assert check_partition_growth(3, 4, MAX) is None
    assert check_partition_growth(1, 1000, MAX) is None


def test_same_count_is_invalid_partitions() -> None:
    refusal = check_partition_growth(3, 3, MAX)
    assert refused_with(refusal, Errors.INVALID_PARTITIONS)
    assert refusal is not None and "already has 3 partitions" in refusal.message


def test_shrinking_is_invalid_partitions() -> None:
    refusal = check_partition_growth(6, 2, MAX)
    assert refused_with(refusal, Errors.INVALID_PARTITIONS)
    assert refusal is not None and "6" in refusal.message and "2" in refusal.message


@given(st.integers(1, 10_000), st.integers(-10, 10_000))
def test_only_growth_is_accepted(current: int, requested: int) -> None:
    refusal = check_partition_growth(current, requested, MAX)
    assert (refusal is None) == (requested > current)


# --- duplicates ---


def test_duplicates_are_the_names_seen_more_than_once() -> None:
    assert duplicates(["a", "b", "a", "c", "a", "c"]) == {"a", "c"}
    assert duplicates(["a", "b", "c"]) == set()
    assert duplicates([]) == set()


@given(st.lists(st.sampled_from(["a", "b", "c", "d", "e"]), max_size=12))
def test_duplicates_property(names: list[str]) -> None:
    assert duplicates(names) == {n for n in names if names.count(n) > 1}


# --- subscribedTopicRegex: full match ---


@pytest.mark.parametrize(
    ("pattern", "topic"),
    [
        ("ord.*", "orders"),
        ("orders", "orders"),
        ("orders|payments", "payments"),
        ("orders|payments", "orders"),
        ("[a-z]+-v[0-9]+", "orders-v2"),
        (".*", "anything"),
    ],
)
def test_regex_matches_the_whole_topic_name(pattern: str, topic: str) -> None:
    assert regex_matches(pattern, topic)


@pytest.mark.parametrize(
    ("pattern", "topic"),
    [
        ("ord", "orders"),  # a prefix is not a match
        ("rders", "orders"),  # nor a suffix
        ("der", "orders"),
        ("orders", "orders.dlq"),
        ("orders|pay", "payments"),  # the alternation is anchored as a whole
        ("orders", "orders\n"),
        ("Orders", "orders"),
    ],
)
def test_regex_partial_matches_do_not_count(pattern: str, topic: str) -> None:
    assert not regex_matches(pattern, topic)


@pytest.mark.parametrize("pattern", ["(", "[a-", "*orders", "orders(?", "a{2,1}"])
def test_a_bad_regex_matches_nothing(pattern: str) -> None:
    assert not regex_matches(pattern, "orders")
    assert not regex_matches(pattern, pattern)


@given(legal_names)
def test_a_topic_name_matches_itself_escaped(name: str) -> None:
    assert regex_matches(re.escape(name), name)
    assert not regex_matches(re.escape(name), name + "x")


@given(st.integers(min_value=1, max_value=MAX))
def test_a_count_up_to_the_partition_limit_is_created(count: int) -> None:
    assert partitions_to_create(count, -1, 0, DEFAULT, MAX) == count


@given(st.integers(min_value=MAX + 1, max_value=2**31 - 1))
def test_a_count_past_the_partition_limit_is_refused_with_37(count: int) -> None:
    refusal = partitions_to_create(count, -1, 0, DEFAULT, MAX)
    assert refused_with(refusal, Errors.INVALID_PARTITIONS)
    assert "groupcoord.topic.max.partitions" in refusal.message
    assert refused_with(check_partition_growth(1, count, MAX), Errors.INVALID_PARTITIONS)
    assert check_partition_growth(1, MAX, MAX) is None


def test_a_default_partition_count_past_the_limit_is_refused() -> None:
    assert refused_with(partitions_to_create(-1, -1, 0, 10, 5), Errors.INVALID_PARTITIONS)
