"""Crash injection and the benchmarks' counters, kept by the client (`MemoryDynamoClient`
inherits them): `fail_after_writes` makes it raise Crash, as a crashed Lambda would stop, after
that many more successful writes (a transaction or a batch item is one), to test that a crash
between any two writes leaves a recoverable state; `largest_item` and `largest_transaction`
record the largest seen."""

from __future__ import annotations


class Crash(Exception):
    """The process 'died' here (fail_after_writes reached)."""


class Instruments:
    def __init__(self) -> None:
        self.fail_after_writes: int | None = None
        self.largest_item = 0
        self.largest_transaction = 0

    def _written(self) -> None:
        """Count a write about to be made; Crash instead when none is left."""
        if self.fail_after_writes is not None:
            if self.fail_after_writes <= 0:
                raise Crash("crashed before this write")
            self.fail_after_writes -= 1

    def _stored(self, size: int) -> None:
        self.largest_item = max(self.largest_item, size)

    def _transaction(self, items: int) -> None:
        self.largest_transaction = max(self.largest_transaction, items)
