"""The coordinator record: which endpoint serves the groups, and its epoch.

find-coordinator hands out `coordinatorEpoch`; it grows when the configured endpoint changes
(a redeploy to a new URL), so clients can tell a moved coordinator from a stale answer.
"""

from __future__ import annotations

from ..retries import TryAgain, retry
from . import schema
from .dynamo import ConditionFailed, Dynamo, Update

# Attempts to record a new endpoint that another process moved meanwhile.
EPOCH_ATTEMPTS = 3


class CoordinatorRecord:
    def __init__(self, dynamo: Dynamo) -> None:
        self.dynamo = dynamo

    def epoch_for(self, endpoint: str, *, pinned: bool) -> int:
        """The current epoch. With a configured (`pinned`) endpoint, a change of it bumps it."""
        item = self.dynamo.get(schema.coordinator_key())
        if not pinned:
            return int(item["epoch"]) if item else 0
        found = item

        def attempt(_: int) -> int:
            nonlocal found
            item = found
            if item and item.get("endpoint") == endpoint:
                return int(item["epoch"])
            new_epoch = int(item["epoch"]) + 1 if item else 0
            try:
                if item is None:
                    condition = "attribute_not_exists(pk)"
                    values: dict = {":endpoint": endpoint, ":epoch": new_epoch}
                else:
                    condition = "#epoch = :old"
                    values = {":endpoint": endpoint, ":epoch": new_epoch, ":old": item["epoch"]}
                self.dynamo.update(
                    Update(
                        schema.coordinator_key(),
                        "SET #endpoint = :endpoint, #epoch = :epoch, #kind = :kind",
                        names={"#endpoint": "endpoint", "#epoch": "epoch", "#kind": "kind"},
                        values={**values, ":kind": schema.KIND_COORDINATOR},
                        condition=condition,
                    )
                )
                return new_epoch
            except ConditionFailed:
                found = self.dynamo.get(schema.coordinator_key(), consistent=True)
                raise TryAgain() from None

        def exhausted() -> int:
            return int(found["epoch"]) if found else 0

        return retry(attempt, lost=(), attempts=EPOCH_ATTEMPTS, exhausted=exhausted)
