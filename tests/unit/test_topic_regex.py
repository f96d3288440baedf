"""subscribedTopicRegex is evaluated by RE2: full match, linear time, compiled once
per pattern, and a pattern RE2 refuses (or one over REGEX_MAX_CHARS) is 128
INVALID_REGULAR_EXPRESSION before anything is stored."""

from __future__ import annotations

import time

import pytest

from groupcoord.core import topics
from groupcoord.core.consumer.group import (
    COMBINED_REGEX_MAX_CHARS,
    MATCH_ANY,
    combined_regex,
    subscribed_topic_ids,
    validate_heartbeat,
)
from groupcoord.core.consumer.member import ConsumerGroupMember
from groupcoord.core.topics import compile_regex, regex_error, regex_matches
from groupcoord.errors import Errors
from groupcoord.models.consumer import ConsumerGroupHeartbeatRequest
from groupcoord.models.limits import REGEX_MAX_CHARS

# Python's `re` backtracks on this one: 2 s against a 14-character name on this machine, about
# 3.4 times longer per added character (hours, then years, at 40).
PATHOLOGICAL = "(.*.*)*x"
# A generous bound for a busy (2-core, loaded) machine: RE2 takes microseconds here; the point
# is only that backtracking would take hours.
QUICK_S = 1.0
ASSIGNORS = ("uniform", "range")


def heartbeat(regex: str) -> ConsumerGroupHeartbeatRequest:
    # model_construct: the request model may bound the field on its own (models/limits.py);
    # this checks the coordinator's own refusal.
    return ConsumerGroupHeartbeatRequest.model_construct(
        group_id="g",
        member_id="m",
        member_epoch=0,
        instance_id=None,
        rack_id=None,
        rebalance_timeout_ms=1000,
        subscribed_topic_names=None,
        subscribed_topic_regex=regex,
        server_assignor=None,
        topic_partitions=[],
    )


# --- full match ---


@pytest.mark.parametrize(
    ("pattern", "topic", "expected"),
    [
        ("orders", "orders", True),
        ("ord.*", "orders", True),
        ("ord", "orders", False),  # a pattern matching a prefix does not match
        ("rders", "orders", False),  # nor one matching a suffix
        ("orders|pay", "payments", False),  # the alternation is anchored as a whole
        ("orders", "orders.dlq", False),
        ("(?i)ORDERS", "orders", True),
        (r"orders-\d+", "orders-12", True),
        (r"orders\.v[0-9]", "orders.v2", True),
        (r"orders\.v[0-9]", "ordersXv2", False),
    ],
)
def test_regex_matches_in_full(pattern: str, topic: str, expected: bool) -> None:
    assert regex_matches(pattern, topic) is expected


# --- linear time ---


def test_a_pathological_pattern_is_evaluated_in_linear_time() -> None:
    names = [f"t{i:03d}-" + "a" * 35 for i in range(500)]  # 40 characters each
    names += [f"t{i:03d}-" + "a" * 34 + "x" for i in range(500, 600)]  # ... ending with x
    assert all(len(n) == 40 for n in names)
    compile_regex.cache_clear()
    start = time.perf_counter()
    assert regex_matches(PATHOLOGICAL, "a" * 40) is False
    matched = sum(regex_matches(PATHOLOGICAL, n) for n in names)
    elapsed = time.perf_counter() - start
    assert matched == 100  # full match: exactly the names that end with "x"
    assert elapsed < QUICK_S, elapsed


def test_a_member_regex_is_compiled_once_for_all_topics(monkeypatch: pytest.MonkeyPatch) -> None:
    compiled: list[str] = []
    real = topics.re2.compile

    def counting(pattern, options=None):
        compiled.append(pattern)
        return real(pattern, options)

    monkeypatch.setattr(topics.re2, "compile", counting)
    compile_regex.cache_clear()
    ids = {f"topic-{i:04d}-" + "a" * 25: f"id{i}" for i in range(2000)}
    ids["topic-x"] = "idx"
    member = ConsumerGroupMember("m", subscribed_topic_regex=PATHOLOGICAL)
    start = time.perf_counter()
    for _ in range(3):  # three evaluation passes
        assert subscribed_topic_ids(member, ids) == frozenset({"idx"})
    assert time.perf_counter() - start < QUICK_S
    assert compiled == [PATHOLOGICAL]


# --- what is refused ---


@pytest.mark.parametrize(
    ("pattern", "why"),
    [
        ("(", "missing )"),
        ("a{100000}", "invalid repetition size"),
        (r"(a)\1", "invalid escape sequence"),  # no backreferences in RE2
        ("orders(?=-v2)", "invalid perl operator"),  # nor lookarounds
        (r"orders\Z", "invalid escape sequence"),  # Python's \Z is RE2's \z
        (r"\pL{400}", "pattern too large"),  # over RE2's memory budget (max_mem)
    ],
)
def test_a_pattern_re2_refuses_is_128_and_matches_nothing(pattern: str, why: str) -> None:
    problem = regex_error(pattern)
    assert problem is not None and why in problem
    assert not regex_matches(pattern, "orders")
    refusal = validate_heartbeat(heartbeat(pattern), ASSIGNORS)
    assert refusal is not None
    assert refusal.error == Errors.INVALID_REGULAR_EXPRESSION == 128
    assert refusal.message == (
        f"SubscribedTopicRegex `{pattern}` is not a valid regular expression: {problem}."
    )


def test_the_pathological_pattern_is_valid_re2() -> None:
    assert regex_error(PATHOLOGICAL) is None
    assert validate_heartbeat(heartbeat(PATHOLOGICAL), ASSIGNORS) is None


def test_a_pattern_over_the_length_limit_is_128() -> None:
    assert REGEX_MAX_CHARS == 1024
    longest = "a" * REGEX_MAX_CHARS
    assert regex_error(longest) is None
    assert validate_heartbeat(heartbeat(longest), ASSIGNORS) is None
    too_long = "a" * (REGEX_MAX_CHARS + 1)
    assert regex_error(too_long) == "it is longer than 1024 characters"
    refusal = validate_heartbeat(heartbeat(too_long), ASSIGNORS)
    assert refusal is not None and refusal.error == 128
    assert too_long not in refusal.message  # not echoed back
    assert refusal.message == (
        "SubscribedTopicRegex is not a valid regular expression: it is longer than 1024 characters."
    )


def test_an_empty_regex_is_not_validated() -> None:
    # "" clears the member's regex (apply_request), as before.
    assert validate_heartbeat(heartbeat(""), ASSIGNORS) is None


# --- the group's registered union (topic-change notifications) ---


def test_the_union_leaves_out_what_re2_refuses() -> None:
    assert combined_regex(["b", r"(a)\1", "a.*", "a.*"]) == "(?:a.*)|(?:b)"
    assert combined_regex([r"(a)\1", "", "("]) is None
    union = combined_regex(["orders-.*", PATHOLOGICAL])
    assert union is not None
    assert regex_matches(union, "orders-1") and regex_matches(union, "box")
    assert not regex_matches(union, "payments")


def test_a_union_too_big_for_re2_notifies_on_every_topic() -> None:
    # Each fits RE2's memory budget alone; together they do not.
    first, second = r"\pL{40}", r"\pN\pL{39}"
    assert regex_error(first) is None and regex_error(second) is None
    assert compile_regex(f"(?:{first})|(?:{second})").regex is None
    assert combined_regex([first, second]) == MATCH_ANY
    assert regex_matches(MATCH_ANY, "any-topic")


def test_a_union_too_long_is_not_compiled() -> None:
    patterns = [f"topic-{i:05d}-" + "a" * 1000 for i in range(20)]
    assert all(regex_error(p) is None for p in patterns)
    assert sum(len(p) + 5 for p in patterns) > COMBINED_REGEX_MAX_CHARS
    assert combined_regex(patterns) == MATCH_ANY
