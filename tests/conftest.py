"""Shared fixtures: a real DynamoDB API endpoint, the store on it, `groupcoord serve`.

The endpoint is, in order: LOCALSTACK_ENDPOINT (opt-in LocalStack runs),
GROUPCOORD_TEST_DYNAMODB_ENDPOINT (the DynamoDB Local `.ci/run` starts), else a DynamoDB Local
started for the session (Java and the npm package: groupcoord/local/dynamodb_local.py).

The store's own tests, the HTTP-contract tests and the fuzzer run on that endpoint. The service
tests (both protocols, offsets, migration, the client end to end) run `serve`'s local deployment
in this process on the store's in-memory adapter, which passes the same contract suite
(tests/contract): the fast path. Set GROUPCOORD_TEST_SERVICE_STORE=dynamodb to run them on a
`serve` process on the endpoint instead (a LocalStack run does).

A test calls its coordinator through `api` (and `url`): by default the service tests' shared
one; a module says which other one it wants with a marker, once, instead of fixtures of its
own: `pytestmark = pytest.mark.coordinator(SETTINGS, principal_header=...)` (its own, see
`Marked` for `shared`, `in_process` and `store`), or `pytest.mark.http_contract` (`serve` on the
DynamoDB endpoint).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import pytest

from groupcoord import runtime
from groupcoord.local.memory import MemoryDynamoClient, memory_store
from groupcoord.settings import Settings
from groupcoord.store import schema
from groupcoord.store.dynamo import Dynamo, make_client
from groupcoord.store.store import Store
from tests.support.api import Api
from tests.support.classic_client import shared_serve
from tests.support.clock import JumpClock
from tests.support.run_order import longest_first
from tests.support.servers import (
    IMMEDIATE_INSTALLS,
    InProcessCoordinator,
    running_coordinator,
    running_dynamodb,
    running_serve,
    running_service,
    running_service_and_store,
    unique_table,
)

os.environ.setdefault("AWS_ACCESS_KEY_ID", "testing")
os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "testing")
os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")
os.environ.setdefault("POWERTOOLS_METRICS_DISABLED", "true")
os.environ.setdefault("POWERTOOLS_TRACE_DISABLED", "true")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    longest_first(items)  # the order CI's workers take files in (tests/support/run_order.py)


@pytest.fixture(scope="session")
def dynamodb_endpoint() -> Iterator[str]:
    configured = os.environ.get("LOCALSTACK_ENDPOINT") or os.environ.get(
        "GROUPCOORD_TEST_DYNAMODB_ENDPOINT"
    )
    if configured:
        yield configured
        return
    with running_dynamodb() as url:
        yield url


@pytest.fixture(scope="session")
def kinesis_endpoint() -> Iterator[str]:
    """kinesis-local (kinesis-mock on Node.js, tools/kinesis-local): GROUPCOORD_TEST_KINESIS_
    ENDPOINT (the one `.ci/run` starts), else one started for the session. boto3's Kinesis
    clients, the coordinator's included, reach it through AWS_ENDPOINT_URL_KINESIS."""
    from groupcoord.local.kinesis_local import running_kinesis_local

    saved = os.environ.get("AWS_ENDPOINT_URL_KINESIS")
    with contextlib.ExitStack() as stack:
        url = os.environ.get("GROUPCOORD_TEST_KINESIS_ENDPOINT") or stack.enter_context(
            running_kinesis_local()
        )
        os.environ["AWS_ENDPOINT_URL_KINESIS"] = url
        try:
            yield url
        finally:
            if saved is None:
                os.environ.pop("AWS_ENDPOINT_URL_KINESIS", None)
            else:
                os.environ["AWS_ENDPOINT_URL_KINESIS"] = saved


@pytest.fixture(scope="session")
def dynamodb_engine() -> str:
    """What serves the endpoint: "dynamodb-local" (Amazon's DynamoDB Local, which LocalStack
    runs too: the default), or "dynamodb" (GROUPCOORD_TEST_DYNAMODB_ENGINE=dynamodb, a run
    against AWS)."""
    engine = os.environ.get("GROUPCOORD_TEST_DYNAMODB_ENGINE", "dynamodb-local")
    assert engine in ("dynamodb-local", "dynamodb"), engine
    return engine


@pytest.fixture(scope="session")
def service_endpoint(request: pytest.FixtureRequest) -> str | None:
    """Where the service tests' `serve` keeps its state: None for the in-memory adapter, else
    the DynamoDB endpoint (see the module docstring; started only then)."""
    on_dynamodb = os.environ.get("GROUPCOORD_TEST_SERVICE_STORE") == "dynamodb" or bool(
        os.environ.get("LOCALSTACK_ENDPOINT")
    )
    return request.getfixturevalue("dynamodb_endpoint") if on_dynamodb else None


@pytest.fixture
def store(dynamodb_endpoint: str) -> Store:
    """The store on a fresh table of the test endpoint."""
    # Installs at once: these tests drive the protocol step by step on a frozen clock
    # (test_consumer_join_storms.py covers the batching).
    settings = Settings.from_mapping(
        {"groupcoord.table.name": unique_table(), **IMMEDIATE_INSTALLS}
    )
    store = Store.connect(settings, endpoint_url=dynamodb_endpoint)
    store.ensure_table()
    return store


@pytest.fixture(scope="module")
def api_client(dynamodb_endpoint: str) -> Any:
    """One boto3 client for the module (making one takes a good part of a second)."""
    return make_client(endpoint_url=dynamodb_endpoint)


@pytest.fixture(params=["dynamodb-api", "memory"])
def dynamo(request: pytest.FixtureRequest) -> Dynamo:
    """The store's adapter (`Dynamo`) on a fresh table of each backend: the DynamoDB endpoint
    and the in-memory store, for the tests that hold both to one contract."""
    table = unique_table()
    if request.param == "memory":
        client: Any = MemoryDynamoClient()
    else:
        client = request.getfixturevalue("api_client")
    dynamo = Dynamo(client, table)
    assert dynamo.ensure_table(schema.table_definition(table), schema.TTL_ATTRIBUTE)
    return dynamo


@pytest.fixture
def service_store(service_endpoint: str | None) -> Store:
    """The store on a fresh table where the service tests keep their state: the in-memory
    adapter, or the DynamoDB endpoint (see the module docstring)."""
    settings = Settings.from_mapping(
        {"groupcoord.table.name": unique_table(), **IMMEDIATE_INSTALLS}
    )
    if service_endpoint is None:
        store = memory_store(settings)
    else:
        store = Store.connect(settings, endpoint_url=service_endpoint)
    store.ensure_table()
    return store


@contextmanager
def _runtime_on(store: Store) -> Iterator[Store]:
    saved = (runtime._settings, runtime._store)
    runtime.configure(store.settings, store)
    try:
        yield store
    finally:
        runtime._settings, runtime._store = saved


@pytest.fixture
def configured(store: Store) -> Iterator[Store]:
    """The process-wide runtime on a fresh table of the DynamoDB endpoint (for in-process
    handler calls), restored afterwards."""
    with _runtime_on(store) as found:
        yield found


@pytest.fixture
def service_configured(service_store: Store) -> Iterator[Store]:
    """As `configured`, on the service tests' store."""
    with _runtime_on(service_store) as found:
        yield found


@pytest.fixture(scope="session")
def served(service_endpoint: str | None) -> Iterator[str]:
    """One coordinator for the service tests that share it (they use unique names)."""
    with running_service(service_endpoint) as url:
        yield url


@pytest.fixture(scope="session")
def served_on_dynamodb(dynamodb_endpoint: str) -> Iterator[str]:
    """One `groupcoord serve` on the DynamoDB endpoint, for the HTTP-contract tests."""
    with running_serve(dynamodb_endpoint) as url:
        yield url


# --- the coordinator a module's tests call: `url` and `api` ---


@dataclass(frozen=True)
class Marked:
    """A module's `coordinator` marker (pyproject.toml registers it): its own coordinator with
    `settings` (and `principal_header`, serve's --principal-header); `shared`, the one
    shared_serve keeps for those settings; `in_process`, the `coordinator` fixture's (this
    process, whatever the service store); `store`, the `deployment` fixture's (with its store)."""

    settings: dict[str, str] | None = None
    principal_header: str | None = None
    shared: bool = False
    in_process: bool = False
    store: bool = False
    # In process, on a clock the test jumps (tests/support/clock.py JumpClock: `jump_clock`).
    jumps: bool = False


def marked(request: pytest.FixtureRequest) -> Marked | None:
    marker = request.node.get_closest_marker("coordinator")
    return None if marker is None else Marked(*marker.args, **marker.kwargs)


@pytest.fixture(scope="module")
def coordinator(request: pytest.FixtureRequest) -> Iterator[InProcessCoordinator]:
    """The module's coordinator in this process, with its `coordinator` marker's settings."""
    found = marked(request) or Marked()
    with running_coordinator(
        found.settings,
        principal_header=found.principal_header,
        clock=JumpClock() if found.jumps else None,
    ) as started:
        yield started


@pytest.fixture(scope="module")
def jump_clock(coordinator: InProcessCoordinator) -> JumpClock:
    """The clock of a module marked `coordinator(..., jumps=True)`: jump it past a timer."""
    assert isinstance(coordinator.clock, JumpClock), "mark the module coordinator(jumps=True)"
    return coordinator.clock


@pytest.fixture(scope="module")
def deployment(
    request: pytest.FixtureRequest, service_endpoint: str | None
) -> Iterator[tuple[str, Store]]:
    """The module's coordinator (its `coordinator` marker's settings) and the store it runs on,
    for the tests that look at (or age) items directly."""
    found = marked(request) or Marked()
    with running_service_and_store(
        service_endpoint, found.settings, found.principal_header
    ) as started:
        yield started


@pytest.fixture(scope="module")
def url(request: pytest.FixtureRequest, service_endpoint: str | None) -> Iterator[str]:
    """The base URL of the coordinator the module's tests call: for an `http_contract` module,
    `serve` on the DynamoDB endpoint; for one marked `coordinator(...)`, the one it describes
    (`Marked`); for any other, the service tests' shared one (`served`)."""
    found = marked(request)
    if request.node.get_closest_marker("http_contract"):
        yield request.getfixturevalue("served_on_dynamodb")
    elif found is None:
        yield request.getfixturevalue("served")
    elif found.shared:
        yield shared_serve(service_endpoint, found.settings)
    elif found.in_process or found.jumps:
        yield request.getfixturevalue("coordinator").url
    elif found.store:
        yield request.getfixturevalue("deployment")[0]
    else:
        with running_service(
            service_endpoint, found.settings, principal_header=found.principal_header
        ) as base:
            yield base


@pytest.fixture
def api(url: str) -> Api:
    return Api(url)
