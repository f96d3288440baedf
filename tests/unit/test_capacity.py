"""Capacity accounting (store/capacity.py): DynamoDB's item-size rules, read/write unit
rounding, and the per-call usage collector."""

from __future__ import annotations

import math
import threading
from decimal import Decimal

import pytest
from hypothesis import given
from hypothesis import strategies as st

from groupcoord.store import capacity
from groupcoord.store.capacity import (
    Usage,
    attribute_size,
    item_size,
    metered,
    read_units,
    write_units,
)

# --- item sizes ("Item sizes and formats" in the DynamoDB developer guide) ---


@pytest.mark.parametrize(
    ("text", "size"),
    [("", 0), ("a", 1), ("orders", 6), ("é", 2), ("€", 3), ("😀", 4), ("ab€", 5)],
)
def test_strings_count_utf8_bytes(text: str, size: int) -> None:
    assert attribute_size(text) == size


def test_binary_counts_its_bytes() -> None:
    assert attribute_size(b"") == 0
    assert attribute_size(b"\x00\x01\x02") == 3
    assert attribute_size(bytearray(100)) == 100


@pytest.mark.parametrize("value", [None, True, False])
def test_null_and_booleans_are_one_byte(value: object) -> None:
    assert attribute_size(value) == 1


@pytest.mark.parametrize(
    ("number", "size"),
    [
        (0, 2),
        (7, 2),  # 1 significant digit: 1 byte per two digits (rounded up) + 1
        (12, 2),
        (123, 3),
        (1234, 3),
        (12345, 4),
        (-12345, 4),
        (2**31 - 1, 6),  # 10 digits
        (Decimal("1.5"), 2),
        (Decimal("0.001"), 2),  # leading zeroes are trimmed
        (1.25, 3),
    ],
)
def test_numbers_cost_one_byte_per_two_significant_digits_plus_one(
    number: object, size: int
) -> None:
    assert attribute_size(number) == size


@pytest.mark.parametrize(("number", "size"), [(1000, 2), (10**20, 2), (Decimal("1.50"), 2)])
def test_trailing_zeroes_are_trimmed(number: object, size: int) -> None:
    assert attribute_size(number) == size


def test_maps_have_three_bytes_overhead_and_one_per_element() -> None:
    assert attribute_size({}) == 3
    # name "a" (1) + value "xy" (2) + 1 per element
    assert attribute_size({"a": "xy"}) == 3 + 1 + 2 + 1
    assert attribute_size({"a": "xy", "bb": 7}) == 3 + (1 + 2 + 1) + (2 + 2 + 1)


def test_lists_have_three_bytes_overhead_and_one_per_element() -> None:
    assert attribute_size([]) == 3
    assert attribute_size(["xy", 7, None]) == 3 + (2 + 1) + (2 + 1) + (1 + 1)
    assert attribute_size(("xy",)) == attribute_size(["xy"])


def test_nesting_adds_up() -> None:
    inner = {"p": [0, 1]}  # 3 + (1 + (3 + (2 + 1) + (2 + 1)) + 1) = 14
    assert attribute_size(inner) == 14
    assert attribute_size([inner, inner]) == 3 + 2 * (14 + 1)
    assert attribute_size({"m": {"n": {}}}) == 3 + (1 + (3 + (1 + 3 + 1)) + 1)


def test_sets_are_the_sum_of_their_members() -> None:
    assert attribute_size({"ab", "c"}) == 3
    assert attribute_size(frozenset({b"\x00\x00"})) == 2


def test_item_size_adds_attribute_names_and_values() -> None:
    assert item_size({}) == 0
    assert item_size({"pk": "G#a", "sk": "GROUP"}) == (2 + 3) + (2 + 5)
    # attribute names count in UTF-8 too
    assert item_size({"é": "é"}) == 4
    assert item_size({"pk": "x", "n": 12345, "m": {"k": True}}) == (2 + 1) + (1 + 4) + (
        1 + 3 + (1 + 1 + 1)
    )


text_or_number = st.one_of(
    st.text(max_size=20), st.integers(-(10**12), 10**12), st.booleans(), st.none()
)
values = st.recursive(
    text_or_number,
    lambda children: st.one_of(
        st.lists(children, max_size=4), st.dictionaries(st.text(max_size=5), children, max_size=4)
    ),
    max_leaves=12,
)


@given(st.dictionaries(st.text(min_size=1, max_size=8), values, max_size=6))
def test_item_size_is_additive_over_attributes(item: dict) -> None:
    assert item_size(item) == sum(item_size({k: v}) for k, v in item.items())
    assert item_size(item) >= sum(len(k.encode()) for k in item)


@given(st.lists(values, max_size=5))
def test_a_list_costs_its_elements_plus_overhead(elements: list) -> None:
    assert attribute_size(elements) == 3 + sum(attribute_size(e) + 1 for e in elements)


# --- read units: 4 KB, eventually consistent halves, transactional doubles ---


@pytest.mark.parametrize(
    ("size", "strong"),
    [(0, 1), (1, 1), (4096, 1), (4097, 2), (8192, 2), (8193, 3), (400 * 1024, 100)],
)
def test_read_units_round_up_to_4kb(size: int, strong: float) -> None:
    assert read_units(size, consistent=True) == strong
    assert read_units(size, consistent=False) == strong / 2
    assert read_units(size, consistent=True, transactional=True) == strong * 2
    assert read_units(size, consistent=False, transactional=True) == strong * 2


@given(st.integers(0, 10**7))
def test_read_units_property(size: int) -> None:
    strong = read_units(size, consistent=True)
    assert strong == max(1, math.ceil(size / 4096))
    assert read_units(size, consistent=False) == strong / 2 >= 0.5


# --- write units: 1 KB, transactional doubles ---


@pytest.mark.parametrize(
    ("size", "units"), [(0, 1), (1, 1), (1024, 1), (1025, 2), (2048, 2), (400 * 1024, 400)]
)
def test_write_units_round_up_to_1kb(size: int, units: float) -> None:
    assert write_units(size) == units
    assert write_units(size, transactional=True) == units * 2


@given(st.integers(0, 10**7), st.integers(0, 10**7))
def test_write_units_are_monotonic_and_never_below_one(a: int, b: int) -> None:
    small, large = sorted((a, b))
    assert 1 <= write_units(small) <= write_units(large)
    assert write_units(small, transactional=True) <= write_units(large, transactional=True)
    assert write_units(large, transactional=True) == 2 * write_units(large)


@given(st.integers(0, 10**7), st.integers(0, 10**7))
def test_read_units_are_monotonic(a: int, b: int) -> None:
    small, large = sorted((a, b))
    for consistent in (False, True):
        assert read_units(small, consistent) <= read_units(large, consistent)


# --- usage collection ---


def test_nothing_is_collected_outside_metered() -> None:
    assert capacity.current() is None


def test_metered_collects_counts_per_operation() -> None:
    with metered() as usage:
        current = capacity.current()
        assert current is usage
        current.count("get_item")
        current.count("get_item")
        current.count("query")
    assert usage.requests == 3
    assert usage.by_operation == {"get_item": 2, "query": 1}
    assert capacity.current() is None


def test_metered_nests_and_the_outer_block_sees_everything() -> None:
    with metered() as outer:
        capacity.current().count("get_item")
        with metered() as inner:
            capacity.current().count("query")
            capacity.current().write_units += 2
            capacity.current().reported_units += 1.5
        assert capacity.current() is outer
        assert (inner.requests, inner.by_operation) == (1, {"query": 1})
        assert outer.by_operation == {"get_item": 1, "query": 1}
        capacity.current().read_units += 0.5
    assert outer.requests == 2
    assert (outer.read_units, outer.write_units, outer.reported_units) == (0.5, 2.0, 1.5)


def test_an_error_inside_metered_still_reaches_the_outer_block() -> None:
    with metered() as outer:
        with pytest.raises(RuntimeError), metered():
            capacity.current().count("transact_write_items")
            raise RuntimeError("boom")
        assert outer.by_operation == {"transact_write_items": 1}


def test_usage_is_per_thread() -> None:
    seen: list[object] = []
    with metered():
        thread = threading.Thread(target=lambda: seen.append(capacity.current()))
        thread.start()
        thread.join()
    assert seen == [None]


def test_usage_add() -> None:
    a = Usage(requests=1, read_units=0.5, by_operation={"get_item": 1})
    b = Usage(requests=2, write_units=3.0, reported_units=4.0, by_operation={"get_item": 1, "x": 1})
    a.add(b)
    assert a == Usage(
        requests=3,
        read_units=0.5,
        write_units=3.0,
        reported_units=4.0,
        by_operation={"get_item": 2, "x": 1},
    )


def test_writes_are_counted_per_partition_key_and_nest() -> None:
    with metered() as outer:
        capacity.current().wrote("G#g")
        with metered() as inner:
            capacity.current().wrote("G#g#M1")
            capacity.current().wrote("G#g#M1")
        assert inner.writes_by_key == {"G#g#M1": 2}
    assert outer.writes_by_key == {"G#g": 1, "G#g#M1": 2}
