"""The order the suite's files are handed to pytest-xdist's workers: the longest first.

`.ci/run` runs the suite on four workers, each taking whole files (`--dist loadfile`), in
collection order (`--no-loadscope-reorder`; xdist would otherwise start with the files that
hold the most tests, which are the fast unit tests, and leave the long end-to-end files, a
few tests each, to the end). Taken longest first, a long file never starts last while the
other workers run out of work: the greedy order that keeps the workers' end times close.

Only the order changes, never what runs. A file not listed keeps its collection order after
these; the list need not be exact, only roughly right about which files take long.
"""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

# Each file's whole time in a clean-clone run of `.ci/run` (junit times, 2026-12-06), longest
# first: every file over about 20 s.
LONGEST_FIRST = (
    "tests/fuzz/test_contract_fuzz.py",  # 103 s
    "tests/e2e/test_kinesis_workers.py",  # 82 s
    "tests/integration/test_bench_smoke.py",  # 80 s
    "tests/e2e/test_chaos.py",  # 71 s
    "tests/e2e/test_exactly_once.py",  # 54 s
    "tests/integration/test_kcl_migration.py",  # 45 s
    "tests/integration/test_push.py",  # 37 s
    "tests/integration/test_crash_points.py",  # 32 s
    "tests/integration/test_consumer_downgrade.py",  # 30 s
    "tests/integration/test_kinesis_start_set.py",  # 29 s
    "tests/integration/test_streams_cost.py",  # 28 s
    "tests/integration/test_serve.py",  # 25 s
    "tests/integration/test_kinesis_record_loop.py",  # 24 s
    "tests/integration/test_acl_store.py",  # 24 s
    "tests/integration/test_consumer_staged_conversion.py",  # 23 s
    "tests/integration/test_kinesis_topics.py",  # 20 s
    "tests/integration/test_function_url.py",  # 20 s
)
_RANK = {path: rank for rank, path in enumerate(LONGEST_FIRST)}


def run_rank(item: pytest.Item) -> int:
    """Where `item`'s file comes: its place in LONGEST_FIRST, or after all of them."""
    try:
        path = item.path.resolve().relative_to(ROOT).as_posix()
    except ValueError:
        return len(LONGEST_FIRST)
    return _RANK.get(path, len(LONGEST_FIRST))


def longest_first(items: list[pytest.Item]) -> None:
    """Sort `items` in place, longest files first; stable, so each file's tests and the files
    not listed keep their order."""
    items.sort(key=run_rank)
