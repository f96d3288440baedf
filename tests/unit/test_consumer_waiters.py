"""The holder's side of `waitOn` (core/consumer/waiters.py): what an install records on each
member item, so that a release finds whom to tell without reading the whole group."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from groupcoord.core.consumer.waiters import WAITERS_LISTED_MAX, waiters_by_holder, waiters_grew

IDS = st.sampled_from([f"m{i}" for i in range(6)])


def test_each_holder_names_the_members_waiting_on_it() -> None:
    waits = {"joiner": ["a", "b"], "late": ["b"], "a": [], "b": []}
    assert waiters_by_holder(waits) == {"a": ("joiner",), "b": ("joiner", "late")}


@given(st.dictionaries(IDS, st.lists(IDS, max_size=4), max_size=WAITERS_LISTED_MAX))
def test_a_member_waits_on_a_holder_exactly_when_the_holder_names_it(
    waits: dict[str, list[str]],
) -> None:
    named = waiters_by_holder(waits)
    pairs = {(w, h) for w, holders in waits.items() for h in holders}
    assert pairs == {(w, h) for h, waiters in named.items() for w in waiters or ()}


def test_a_holder_that_many_wait_on_names_none_and_its_release_reads_the_group() -> None:
    """A cold start's first member holds every partition: naming each member waiting on it
    would bloat the item each of its heartbeats reads and writes."""
    few = {f"w{i}": ["first"] for i in range(WAITERS_LISTED_MAX)}
    assert waiters_by_holder(few) == {"first": tuple(sorted(few))}
    many = {**few, "one-more": ["first"]}
    assert waiters_by_holder(many) == {"first": None}


def test_only_a_waiter_the_item_does_not_name_needs_a_write() -> None:
    assert waiters_grew(("a",), ("a", "b"))
    assert waiters_grew((), ("a",))
    assert not waiters_grew(("a", "b"), ("b",))  # a stale name costs a read, not a notice
    assert not waiters_grew(("a",), ())
    assert waiters_grew(("a",), None)  # now too many to name: the item must say so
    assert not waiters_grew(None, ("a",))  # names none (reads the group): covers any
