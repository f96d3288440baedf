"""Request deadlines, piece by piece: the header's parsing, the deadline a request gets, the
store adapter's write gate (on the in-memory adapter and a controlled clock), and the budget
the client's transport sends."""

from __future__ import annotations

import http.server
import threading
from collections.abc import Iterator
from typing import Any

import pytest
from botocore.exceptions import ClientError

from groupcoord import clock, deadline, faults
from groupcoord.client import transport
from groupcoord.client.transport import Transport
from groupcoord.local.memory import MemoryDynamoClient
from groupcoord.settings import Settings
from groupcoord.store import schema
from groupcoord.store.dynamo import Delete, Dynamo, Put, Update
from groupcoord.store.errors import DeadlinePassed

# --- the header ---


@pytest.mark.parametrize(("value", "expected"), [(None, None), ("1", 1), ("8000", 8000)])
def test_header_values(value: str | None, expected: int | None) -> None:
    assert deadline.parse_timeout_ms(value) == expected


def test_header_bounds() -> None:
    assert deadline.parse_timeout_ms(str(deadline.MAX_TIMEOUT_MS)) == 900_000
    for value in ("0", "900001"):
        with pytest.raises(ValueError, match=r"within 1\.\.900000"):
            deadline.parse_timeout_ms(value)


MALFORMED = ["", "abc", "-5", "+5", "1.5", "5_000", "1e3", "\u0665", "9" * 30]


@pytest.mark.parametrize("value", MALFORMED)
def test_header_malformed(value: str) -> None:
    with pytest.raises(ValueError, match="integer number of milliseconds"):
        deadline.parse_timeout_ms(value)


def test_the_earlier_of_the_client_budget_and_the_function_time() -> None:
    margin = deadline.WRITE_MARGIN_MS
    assert deadline.request_deadline(1_000, None, None) is None
    assert deadline.request_deadline(1_000, 500, None) == 1_500
    assert deadline.request_deadline(1_000, None, 29_000) == 1_000 + 29_000 - margin
    assert deadline.request_deadline(1_000, 8_000, 29_000) == 9_000
    assert deadline.request_deadline(1_000, 8_000, 5_000) == 1_000 + 5_000 - margin


def test_the_client_and_the_server_agree() -> None:
    # The client cannot import the server's module (packaging): the two constants are kept equal.
    assert transport.TIMEOUT_HEADER == deadline.HEADER
    assert transport.WRITE_MARGIN_S * 1000 == deadline.WRITE_MARGIN_MS


# --- the write gate ---


class Recording:
    """A DynamoDB client that records the operations sent, and can run a hook on one."""

    def __init__(self) -> None:
        self.inner = MemoryDynamoClient()
        self.sent: list[str] = []
        self.before: dict[str, Any] = {}

    def __getattr__(self, operation: str) -> Any:
        method = getattr(self.inner, operation)

        def call(**args: Any) -> Any:
            self.sent.append(operation)
            hook = self.before.pop(operation, None)
            if hook is not None:
                hook()
            return method(**args)

        return call


@pytest.fixture
def now() -> Iterator[list[int]]:
    """The clock, at 1,000 ms until the test moves it."""
    time = [1_000]
    with clock.use(lambda: time[0]):
        yield time


@pytest.fixture
def dynamo() -> tuple[Dynamo, Recording]:
    client = Recording()
    table = "deadlines"
    Dynamo(client.inner, table).ensure_table(schema.table_definition(table), schema.TTL_ATTRIBUTE)
    return Dynamo(client, table, Settings().store_max_attempts), client


def key(name: str) -> dict[str, Any]:
    return {"pk": name, "sk": "x"}


WRITES = {
    "put": lambda d: d.put({**key("a"), "v": 1}),
    "update": lambda d: d.update(Update(key("a"), "SET v = :v", values={":v": 2})),
    "delete": lambda d: d.delete(key("a")),
    "transact": lambda d: d.transact([Put({**key("b"), "v": 1}), Delete(key("a"))]),
    "batch_write": lambda d: d.batch_write(puts=[{**key("c"), "v": 1}]),
}


@pytest.mark.parametrize("write", sorted(WRITES))
def test_a_write_past_the_deadline_is_not_sent(
    write: str, now: list[int], dynamo: tuple[Dynamo, Recording]
) -> None:
    store, client = dynamo
    store.put({**key("a"), "v": 0})
    client.sent.clear()
    with deadline.scoped(1_000):
        WRITES[write](store)  # at the deadline: still in time
        store.put({**key("a"), "v": 0})
        now[0] = 1_001
        sent = len(client.sent)
        with pytest.raises(DeadlinePassed):
            WRITES[write](store)
        assert len(client.sent) == sent
        # Reads are not gated.
        assert store.get(key("a"), consistent=True) == {**key("a"), "v": 0}
    # Outside the request's scope there is no deadline (the sweeper's case).
    WRITES[write](store)


def test_a_retry_past_the_deadline_is_not_sent(
    now: list[int], dynamo: tuple[Dynamo, Recording]
) -> None:
    store, client = dynamo

    def throttled_until_late() -> None:
        now[0] = 2_000
        raise ClientError(
            {"Error": {"Code": "ThrottlingException", "Message": "slow down"}}, "PutItem"
        )

    client.before["put_item"] = throttled_until_late
    with deadline.scoped(1_500), pytest.raises(DeadlinePassed):
        store.put({**key("a"), "v": 1})
    assert client.sent == ["put_item"]
    assert store.get(key("a"), consistent=True) is None


def test_the_refusal_says_whether_the_request_had_written(
    now: list[int], dynamo: tuple[Dynamo, Recording]
) -> None:
    store, _ = dynamo
    with faults.request_scope(Settings()), deadline.scoped(1_000):
        now[0] = 1_001
        store.get(key("a"), consistent=True)  # reading, late: not refused
        with pytest.raises(DeadlinePassed) as reading:
            store.put({**key("a"), "v": 1})
    assert reading.value.writes_sent == 0
    assert reading.value.doing().startswith("while it was reading, before it wrote anything")
    now[0] = 1_000
    with faults.request_scope(Settings()), deadline.scoped(1_000):
        store.put({**key("a"), "v": 1})
        store.put({**key("b"), "v": 1})
        now[0] = 1_001
        with pytest.raises(DeadlinePassed) as writing:
            store.update(Update(key("a"), "SET v = :v", values={":v": 2}))
    assert writing.value.writes_sent == 2
    assert writing.value.operation == "update_item"
    assert writing.value.doing().startswith("after 2 of its writes: the next was not sent")


def test_no_deadline_no_gate(now: list[int], dynamo: tuple[Dynamo, Recording]) -> None:
    store, _ = dynamo
    now[0] = 10**12
    with deadline.scoped(None):
        store.put({**key("a"), "v": 1})
    assert store.get(key("a"), consistent=True) == {**key("a"), "v": 1}


# --- the client's budget ---


class _Capture(http.server.BaseHTTPRequestHandler):
    seen: list[dict[str, str]] = []

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        type(self).seen.append({k.lower(): v for k, v in self.headers.items()})
        body = b"{}"
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture
def capturing_server() -> Iterator[tuple[str, list[dict[str, str]]]]:
    handler = type("Capture", (_Capture,), {"seen": []})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", handler.seen
    finally:
        server.shutdown()
        server.server_close()


def test_the_transport_sends_its_budget(capturing_server: tuple[str, list[dict]]) -> None:
    url, seen = capturing_server
    Transport(url, sign=False).call("metadata", {})
    Transport(url, sign=False, timeout_s=2.5).call("metadata", {})
    Transport(url, sign=False).call("metadata", {}, timeout_s=30)
    Transport(url, sign=False, timeout_s=1).call("metadata", {})
    # Without retries the call's deadline is the attempt's own: its budget is still exact
    # (it was floored a ms short by the microseconds between two clock reads).
    Transport(url, sign=False, timeout_s=4.0, retries=0).call("metadata", {})
    header = deadline.HEADER.lower()
    assert [s[header] for s in seen] == ["8000", "500", "28000", "1", "2000"]


def test_the_budget_is_within_the_bounds() -> None:
    assert transport.budget_ms(0.05) == 1
    assert transport.budget_ms(10) == 10_000 - deadline.WRITE_MARGIN_MS
    assert transport.budget_ms(10_000) == deadline.MAX_TIMEOUT_MS


def test_the_lag_since_receipt_counts_against_the_clients_budget_only() -> None:
    # Received 1 s before it is handled, with a 5 s budget: 4 s left for the client's part;
    # the function's remaining time is measured from now.
    assert deadline.request_deadline(10_000, 5_000, None, lag_ms=1_000) == 14_000
    assert deadline.request_deadline(10_000, None, 60_000, lag_ms=1_000) == (
        10_000 + 60_000 - deadline.WRITE_MARGIN_MS
    )
    assert deadline.request_deadline(10_000, 5_000, 60_000, lag_ms=1_000) == 14_000
