"""The suite's file order for CI's workers (tests/support/run_order.py): every file it names
exists (a renamed file would silently lose its place), and the sort moves only whole files."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from tests.support.run_order import LONGEST_FIRST, ROOT, longest_first


def test_every_file_named_exists_once() -> None:
    assert len(set(LONGEST_FIRST)) == len(LONGEST_FIRST)
    missing = [path for path in LONGEST_FIRST if not (ROOT / path).is_file()]
    assert missing == []


@dataclass
class _Item:
    path: Path
    name: str


def test_the_longest_files_come_first_and_each_file_keeps_its_order() -> None:
    slow, slower = (ROOT / p for p in LONGEST_FIRST[1::-1])  # the second, then the first
    other = ROOT / "tests/unit/test_run_order.py"
    items = [_Item(other, "a"), _Item(slow, "b"), _Item(slower, "c"), _Item(other, "d"),
             _Item(slow, "e")]  # fmt: skip
    longest_first(items)  # type: ignore[arg-type]
    assert [i.name for i in items] == ["c", "b", "e", "a", "d"]
