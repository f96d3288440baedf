"""bench/assignors.py at a small size: every assignor runs its cold assignment and both
reassignments (the benchmark itself runs at Kafka's sizes: python -m bench.assignors)."""

from __future__ import annotations

import pytest

from bench.assignors import ASSIGNORS, OPERATIONS, measure, shapes


@pytest.mark.parametrize("name", ASSIGNORS)
def test_every_assignor_runs_cold_and_after_a_join_and_a_leave(name: str) -> None:
    for shape in shapes(partitions=300, consumers=12, topic_count=5):
        figures = measure(ASSIGNORS[name], shape, repeat=1, limit=60)
        assert all(figures[op] is not None for op in OPERATIONS), figures
