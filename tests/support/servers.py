"""Real servers for the tests: the DynamoDB endpoint and `groupcoord serve` as processes (from
groupcoord.local.processes, which bench/ and users' own tests use too), the service tests'
coordinator in this process, and the settings the tests start them with."""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

from groupcoord.clock import Clock
from groupcoord.local.memory import memory_store
from groupcoord.local.processes import (
    STARTUP_DEADLINE_S,
    ServeUrl,
    running_dynamodb,
    unique_table,
)
from groupcoord.local.processes import running_serve as _running_serve
from groupcoord.local.server import LocalCoordinator
from groupcoord.settings import Settings
from groupcoord.store.store import Store

__all__ = [
    "IMMEDIATE_INSTALLS",
    "STARTUP_DEADLINE_S",
    "InProcessCoordinator",
    "running_beside",
    "running_coordinator",
    "running_dynamodb",
    "running_serve",
    "running_service",
    "running_service_and_store",
    "unique_table",
]

# The push channel (docs/sessions.md, Push) of the coordinators the tests start: off unless
# GROUPCOORD_TEST_PUSH=on (.ci/run runs the ownership and fencing suites both ways); a test
# that is about push asks for it (`push=True`).
TEST_PUSH = os.environ.get("GROUPCOORD_TEST_PUSH", "off") == "on"


@contextmanager
def running_serve(
    dynamodb_endpoint: str | None = None,
    settings: dict[str, str] | None = None,
    table: str | None = None,
    extra_args: Sequence[str] = (),
    push: bool | None = None,
) -> Iterator[ServeUrl]:
    """`groupcoord serve` (groupcoord.local.processes.running_serve), with the push channel
    of TEST_PUSH unless `push` says."""
    with _running_serve(
        dynamodb_endpoint, settings, table, extra_args, push=TEST_PUSH if push is None else push
    ) as url:
        yield url


# Consumer-protocol targets installed at once instead of batched in time (KIP-1263's
# group.consumer.assignment.interval.ms): for tests that drive the protocol step by step.
IMMEDIATE_INSTALLS = {"group.consumer.assignment.interval.ms": "0"}


class InProcessCoordinator:
    """`serve`'s whole local deployment (HTTP endpoint, handlers, sweeper) on threads of this
    process, on the store's in-memory adapter: no process to start, and the test can look
    at the store it runs on."""

    def __init__(
        self,
        settings: dict[str, str] | None = None,
        store: Store | None = None,
        principal_header: str | None = None,
        front_door: str = "HttpApi",
        clock: Clock | None = None,
        push: bool | None = None,
    ):
        mapping = {"groupcoord.table.name": unique_table(), **(settings or {})}
        if store is not None:  # the other deployment's table
            mapping["groupcoord.table.name"] = store.settings.table_name
        if clock is not None and store is None:  # its own store, on the test's clock
            store = memory_store(Settings.from_mapping(mapping), clock)
            store.ensure_table()
        self.clock = clock
        self.coordinator = LocalCoordinator(
            Settings.from_mapping(mapping),
            port=0,
            store=store,
            principal_header=principal_header,
            front_door=front_door,
            push=TEST_PUSH if push is None else push,
        ).start()
        self.url = self.coordinator.url
        self.store = self.coordinator.store

    def stop(self) -> None:
        self.coordinator.stop()


@contextmanager
def running_coordinator(
    settings: dict[str, str] | None = None,
    store: Store | None = None,
    principal_header: str | None = None,
    front_door: str = "HttpApi",
    clock: Clock | None = None,
) -> Iterator[InProcessCoordinator]:
    """An in-process coordinator (InProcessCoordinator); with `store`, on that store's table
    (e.g. a second deployment with a crash point, beside the first); `front_door` as
    template.yaml's FrontDoor (FunctionUrl: every API on the router, function URL events);
    `clock`, its store's (a test's JumpClock, say)."""
    coordinator = InProcessCoordinator(settings, store, principal_header, front_door, clock)
    try:
        yield coordinator
    finally:
        coordinator.stop()


@contextmanager
def running_service_and_store(
    service_endpoint: str | None,
    settings: dict[str, str] | None = None,
    principal_header: str | None = None,
) -> Iterator[tuple[str, Store]]:
    """As running_service, with the store it runs on, for tests that look at (or age) items
    directly: the in-process coordinator's own, or the same table on the DynamoDB endpoint."""
    if service_endpoint is None:
        with running_coordinator(settings, principal_header=principal_header) as coordinator:
            yield coordinator.url, coordinator.store
        return
    table = unique_table()
    extra = ["--principal-header", principal_header] if principal_header else []
    with running_serve(service_endpoint, settings=settings, table=table, extra_args=extra) as url:
        mapping = {"groupcoord.table.name": table, **(settings or {})}
        yield url, Store.connect(Settings.from_mapping(mapping), endpoint_url=service_endpoint)


@contextmanager
def running_beside(
    service_endpoint: str | None, store: Store, settings: dict[str, str] | None = None
) -> Iterator[str]:
    """Another deployment on `store`'s table (another Lambda function, say one with a crash
    point); yields its base URL."""
    if service_endpoint is None:
        with running_coordinator(settings, store=store) as coordinator:
            yield coordinator.url
        return
    table = store.settings.table_name
    with running_serve(service_endpoint, settings=settings, table=table) as url:
        yield url


@contextmanager
def running_service(
    service_endpoint: str | None,
    settings: dict[str, str] | None = None,
    principal_header: str | None = None,
) -> Iterator[str]:
    """The service tests' coordinator; yields its base URL. On the in-memory adapter (the
    `service_endpoint` fixture is None) it runs in this process; on a DynamoDB endpoint it is
    a `serve` process, as before."""
    if service_endpoint is not None:
        extra = ["--principal-header", principal_header] if principal_header else []
        with running_serve(service_endpoint, settings=settings, extra_args=extra) as url:
            yield url
        return
    with running_coordinator(settings, principal_header=principal_header) as coordinator:
        yield coordinator.url
