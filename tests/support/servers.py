"""Real servers for the tests: the DynamoDB endpoint and `groupcoord serve` as processes (from
groupcoord.local.processes, which bench/ and users' own tests use too), and the settings the
tests start them with."""

from __future__ import annotations

from groupcoord.local.processes import (
    STARTUP_DEADLINE_S,
    running_dynamodb,
    running_serve,
    unique_table,
)

__all__ = [
    "IMMEDIATE_INSTALLS",
    "STARTUP_DEADLINE_S",
    "running_dynamodb",
    "running_serve",
    "unique_table",
]

# Consumer-protocol targets installed at once instead of batched in time (KIP-1263's
# group.consumer.assignment.interval.ms): for tests that drive the protocol step by step.
IMMEDIATE_INSTALLS = {"group.consumer.assignment.interval.ms": "0"}
