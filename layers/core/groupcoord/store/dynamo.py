"""The only code that calls DynamoDB: typed helpers for conditional writes and transactions,
bounded jittered retries on throttling and transaction conflicts, and usage accounting.

Values are plain Python (str, int, bool, bytes, list, dict); numbers come back as int.
A failed condition raises ConditionFailed (with the old item when DynamoDB returns it), a
cancelled transaction TransactionCanceled (with the per-item reasons), and throttling that
outlasts the retries StoreThrottled, which the HTTP layer answers with 429 and Retry-After.
No write is sent past the request's deadline (groupcoord/deadline.py): DeadlinePassed instead.
"""

from __future__ import annotations

import contextlib
import random
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from decimal import Decimal
from functools import cache
from typing import Any

from botocore.exceptions import ClientError, ParamValidationError

from .. import deadline, faults
from ..clock import SYSTEM, Clock
from . import capacity, schema
from .errors import (  # noqa: F401 - re-exported: the adapter's callers in store/ use them
    ConditionFailed,
    DeadlinePassed,
    SinkWritesRefused,
    StoreError,
    StoreThrottled,
    TransactionCanceled,
)

_RETRYABLE_CODES = {
    "ProvisionedThroughputExceededException",
    "ThrottlingException",
    "RequestLimitExceeded",
    "InternalServerError",
    "ServiceUnavailable",
    "TransactionConflictException",
    "TransactionInProgressException",
}
_RETRYABLE_CANCEL_REASONS = {
    "TransactionConflict",
    "ThrottlingError",
    "ProvisionedThroughputExceeded",
}
_BACKOFF_BASE_S = 0.02
_BACKOFF_CAP_S = 1.0
# Every operation that writes: the ones the request deadline gates. Reads are harmless late.
_WRITES = frozenset(
    {"put_item", "update_item", "delete_item", "transact_write_items", "batch_write_item"}
)


def _check_deadline(operation: str) -> None:
    if deadline.passed():
        raise DeadlinePassed(operation, faults.writes_so_far())


@contextlib.contextmanager
def _write_call(operation: str) -> Iterator[None]:
    """One write call of the request: refused past the request's deadline, and counted for its
    crash points (faults.py decides: before it is sent, and once DynamoDB answered, a refused
    condition included). Its accounting goes inside, so that a write never sent is not
    counted. (`_call` checks the deadline again before each attempt: a retry starts anew.)"""
    _check_deadline(operation)
    n = faults.write_sent()
    try:
        yield
    except (ConditionFailed, TransactionCanceled):
        faults.write_answered(n)
        raise
    faults.write_answered(n)


Item = dict[str, Any]


@dataclass(frozen=True)
class Update:
    """An UpdateItem: `expression` uses #names and :values given by `names` / `values`."""

    key: Item
    expression: str
    names: dict[str, str] | None = None
    values: dict[str, Any] | None = None
    condition: str | None = None


@dataclass(frozen=True)
class Put:
    item: Item
    condition: str | None = None
    names: dict[str, str] | None = None
    values: dict[str, Any] | None = None


@dataclass(frozen=True)
class Delete:
    key: Item
    condition: str | None = None
    names: dict[str, str] | None = None
    values: dict[str, Any] | None = None


@dataclass(frozen=True)
class Check:
    key: Item
    condition: str
    names: dict[str, str] | None = None
    values: dict[str, Any] | None = None


@dataclass(frozen=True)
class Foreign:
    """A TransactWriteItems element on another table, in the low-level client's form (typed
    attribute values, bytes for binaries): an offset-commit's sink write
    (store/sink_writes.py), sent as it is."""

    entry: dict[str, Any]

    @property
    def key_basis(self) -> Item:
        """What the write's size is estimated from: its item, or its key and values."""
        ((_, request),) = self.entry.items()
        basis = request.get("Item") or request.get("Key") or {}
        return deserialize({**basis, **request.get("ExpressionAttributeValues", {})})


TransactItem = Update | Put | Delete | Check | Foreign
# A whole transaction refused for what a sink write asks: the client's mistake, not ours.
_SINK_REFUSALS = {"ValidationException", "ResourceNotFoundException"}


@cache
def _codec() -> tuple[Any, Any, type]:
    """boto3's DynamoDB type (de)serializer and its Binary, imported with the first item: boto3
    (with s3transfer) is too large an import for a function's init (docs/performance.md,
    "Cold start"), and the client is built at the first request anyway (runtime.py)."""
    from boto3.dynamodb.types import Binary, TypeDeserializer, TypeSerializer

    return TypeSerializer(), TypeDeserializer(), Binary


def _to_python(value: Any) -> Any:
    if isinstance(value, _codec()[2]):
        return bytes(value)
    if isinstance(value, Decimal):
        return int(value) if value == value.to_integral_value() else float(value)
    if isinstance(value, dict):
        return {k: _to_python(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_to_python(v) for v in value]
    if isinstance(value, set):
        return {_to_python(v) for v in value}
    return value


def _to_dynamo_value(value: Any) -> Any:
    if isinstance(value, float):
        value = Decimal(repr(value))
    elif isinstance(value, dict):
        return {k: _to_dynamo_value(v) for k, v in value.items()}
    elif isinstance(value, list | tuple):
        return [_to_dynamo_value(v) for v in value]
    elif isinstance(value, set):
        return {_to_dynamo_value(v) for v in value}
    return value


# DynamoDB's bounds on a key's values, in UTF-8 bytes.
PARTITION_KEY_MAX_BYTES = 2048
SORT_KEY_MAX_BYTES = 1024


def addressable(key: Item) -> bool:
    """Whether an item can have this key: DynamoDB refuses an empty string in a key attribute,
    and a partition key over 2,048 bytes or a sort key over 1,024 (a ValidationException), so a
    name a client left empty (a topic "", an instance id "") or made longer than any stored
    name can be (a topic of 300 emoji) names no item, and a read of it finds nothing."""
    for name, value in key.items():
        if value == "":
            return False
        if isinstance(value, str):
            bound = SORT_KEY_MAX_BYTES if name == schema.SK else PARTITION_KEY_MAX_BYTES
            if len(value.encode("utf-8")) > bound:
                return False
    return True


def serialize(item: Item) -> dict[str, Any]:
    serializer = _codec()[0]
    return {k: serializer.serialize(_to_dynamo_value(v)) for k, v in item.items()}


def deserialize(item: dict[str, Any]) -> Item:
    deserializer = _codec()[1]
    return {k: _to_python(deserializer.deserialize(v)) for k, v in item.items()}


def _expression_args(names: dict[str, str] | None, values: dict[str, Any] | None) -> dict[str, Any]:
    args: dict[str, Any] = {}
    if names:
        args["ExpressionAttributeNames"] = names
    if values:
        args["ExpressionAttributeValues"] = serialize(values)
    return args


def make_client(endpoint_url: str | None = None, region: str | None = None) -> Any:
    """A low-level DynamoDB client with SDK retries off (the store retries itself)."""
    import boto3
    from botocore.config import Config

    config = Config(
        retries={"total_max_attempts": 1, "mode": "standard"},
        connect_timeout=2,
        read_timeout=10,
        max_pool_connections=50,
    )
    return boto3.session.Session().client(
        "dynamodb", endpoint_url=endpoint_url, region_name=region, config=config
    )


class Dynamo:
    """DynamoDB operations on one table, with retries and usage accounting."""

    def __init__(
        self, client: Any, table_name: str, max_attempts: int = 5, clock: Clock = SYSTEM
    ) -> None:
        self.client = client
        self.table_name = table_name
        self.max_attempts = max_attempts
        # The store's clock (Store.clock): what retries pause on, and what a Store on this
        # adapter hands its requests.
        self.clock = clock

    # --- the call loop ---

    def _call(self, operation: str, **kwargs: Any) -> dict[str, Any]:
        usage = capacity.current()
        method: Callable[..., dict[str, Any]] = getattr(self.client, operation)
        write = operation in _WRITES
        for attempt in range(1, self.max_attempts + 1):
            if write:
                # Before every attempt, retries included: a retry is a write started anew.
                _check_deadline(operation)
            if usage is not None:
                usage.count(operation)
            try:
                response = method(ReturnConsumedCapacity="TOTAL", **kwargs)
            except ClientError as error:
                if not self._retryable(error):
                    raise
                if attempt == self.max_attempts:
                    raise StoreThrottled(
                        f"DynamoDB {operation} still throttled or conflicting after "
                        f"{attempt} attempts"
                    ) from error
                self._pause(attempt)
                continue
            if usage is not None:
                self._record_reported(usage, response.get("ConsumedCapacity"))
            return response
        raise AssertionError("unreachable")

    def _pause(self, attempt: int) -> None:
        """Full jitter (AWS Architecture Blog, "Exponential Backoff and Jitter")."""
        self.clock.sleep(random.uniform(0, min(_BACKOFF_CAP_S, _BACKOFF_BASE_S * 2**attempt)))

    @staticmethod
    def _retryable(error: ClientError) -> bool:
        code = error.response.get("Error", {}).get("Code", "")
        if code in _RETRYABLE_CODES:
            return True
        if code == "TransactionCanceledException":
            reasons = error.response.get("CancellationReasons") or []
            return any(r.get("Code") in _RETRYABLE_CANCEL_REASONS for r in reasons)
        return False

    @staticmethod
    def _record_reported(usage: capacity.Usage, consumed: Any) -> None:
        entries = consumed if isinstance(consumed, list) else [consumed] if consumed else []
        for entry in entries:
            usage.reported_units += float(entry.get("CapacityUnits") or 0)

    @staticmethod
    def _wrote(key: Item) -> None:
        usage = capacity.current()
        if usage is not None:
            usage.wrote(str(key.get("pk", "")))

    @staticmethod
    def _estimate(
        read_bytes: int = 0,
        write_bytes: int = 0,
        *,
        consistent: bool = False,
        transactional: bool = False,
        reads: int = 0,
        writes: int = 0,
    ) -> None:
        usage = capacity.current()
        if usage is None:
            return
        if reads:
            usage.read_units += capacity.read_units(read_bytes, consistent, transactional)
        if writes:
            usage.write_units += capacity.write_units(write_bytes, transactional)

    # --- reads ---

    def get(self, key: Item, *, consistent: bool = False) -> Item | None:
        if not addressable(key):
            return None
        response = self._call(
            "get_item", TableName=self.table_name, Key=serialize(key), ConsistentRead=consistent
        )
        item = response.get("Item")
        result = deserialize(item) if item else None
        self._estimate(capacity.item_size(result or {}), consistent=consistent, reads=1)
        return result

    def query(
        self,
        key_condition: str,
        values: dict[str, Any],
        *,
        names: dict[str, str] | None = None,
        index: str | None = None,
        consistent: bool = False,
        limit: int | None = None,
        forward: bool = True,
        projection: Sequence[str] | None = None,
    ) -> Iterator[Item]:
        """All items matching the key condition, following pagination; with `projection`, only
        those top-level attributes of each (the units are the whole items', as DynamoDB's)."""
        returned = 0
        start: Item | None = None
        while True:
            items, start = self.query_page(
                key_condition, values, names=names, index=index, consistent=consistent,
                limit=limit, forward=forward, start=start, projection=projection,
            )  # fmt: skip
            for item in items:
                yield item
                returned += 1
                if limit and returned >= limit:
                    return
            if start is None:
                return

    def query_page(
        self,
        key_condition: str,
        values: dict[str, Any],
        *,
        names: dict[str, str] | None = None,
        index: str | None = None,
        consistent: bool = False,
        limit: int | None = None,
        forward: bool = True,
        start: Item | None = None,
        projection: Sequence[str] | None = None,
    ) -> tuple[list[Item], Item | None]:
        """One page of a query (at most `limit` items, or 1 MB) from `start` (a previous
        page's last key), and where the next page starts (None: no more)."""
        args: dict[str, Any] = {
            "TableName": self.table_name,
            "KeyConditionExpression": key_condition,
            "ScanIndexForward": forward,
        }
        if projection:
            # Placeholders for every name: some (`state`) are DynamoDB reserved words.
            projected = {f"#p{i}": name for i, name in enumerate(projection)}
            args["ProjectionExpression"] = ", ".join(projected)
            names = {**(names or {}), **projected}
        args.update(_expression_args(names, values))
        if index:
            args["IndexName"] = index
        else:
            args["ConsistentRead"] = consistent
        if limit:
            args["Limit"] = limit
        if start is not None:
            args["ExclusiveStartKey"] = start
        response = self._call("query", **args)
        items = [deserialize(i) for i in response.get("Items", [])]
        if projection:
            self._bill_projected(response.get("ConsumedCapacity"), consistent)
        else:
            self._estimate(
                sum(capacity.item_size(i) for i in items), consistent=consistent, reads=1
            )
        return items, response.get("LastEvaluatedKey") or None

    @staticmethod
    def _bill_projected(consumed: Any, consistent: bool) -> None:
        """A projected query is billed on its whole items, which it did not return: its units
        as the endpoint reported them (DynamoDB and DynamoDB Local report them), and at least
        a read's least (DynamoDB Local reports none for an empty result)."""
        usage = capacity.current()
        if usage is None:
            return
        reported = float(consumed.get("CapacityUnits") or 0) if isinstance(consumed, dict) else 0
        usage.read_units += max(reported, capacity.read_units(0, consistent, False))

    def scan(self) -> Iterator[Item]:
        """Every item of the table, page by page. For maintenance (store/rekey.py) only: no
        API or sweep scans the table."""
        args: dict[str, Any] = {"TableName": self.table_name, "ConsistentRead": True}
        while True:
            response = self._call("scan", **args)
            items = [deserialize(i) for i in response.get("Items", [])]
            self._estimate(sum(capacity.item_size(i) for i in items), consistent=True, reads=1)
            yield from items
            last = response.get("LastEvaluatedKey")
            if not last:
                return
            args["ExclusiveStartKey"] = last

    def batch_get(self, keys: Sequence[Item], *, consistent: bool = False) -> list[Item]:
        """Items for the keys that exist (order not kept), 100 keys per request."""
        # A key asked twice is read once (BatchGetItem refuses duplicates); none can be empty.
        unique = {tuple(sorted(k.items())): k for k in keys if addressable(k)}
        keys = list(unique.values())
        found: list[Item] = []
        for start in range(0, len(keys), 100):
            pending: dict[str, Any] = {
                self.table_name: {
                    "Keys": [serialize(k) for k in keys[start : start + 100]],
                    "ConsistentRead": consistent,
                }
            }
            for attempt in range(1, self.max_attempts + 2):
                asked = len(pending[self.table_name]["Keys"])
                response = self._call("batch_get_item", RequestItems=pending)
                items = [deserialize(i) for i in response["Responses"].get(self.table_name, [])]
                for item in items:
                    self._estimate(capacity.item_size(item), consistent=consistent, reads=1)
                found.extend(items)
                pending = response.get("UnprocessedKeys") or {}
                # A key that is not there is read all the same: the minimum read is billed.
                left = len(pending.get(self.table_name, {}).get("Keys", []))
                for _ in range(asked - left - len(items)):
                    self._estimate(0, consistent=consistent, reads=1)
                if not pending:
                    break
                if attempt > self.max_attempts:
                    raise StoreThrottled("DynamoDB BatchGetItem left keys unprocessed")
                self._pause(attempt)
        return found

    # --- single-item writes ---

    def put(
        self,
        item: Item,
        *,
        condition: str | None = None,
        names: dict[str, str] | None = None,
        values: dict[str, Any] | None = None,
    ) -> None:
        args: dict[str, Any] = {
            "TableName": self.table_name,
            "Item": serialize(item),
            **_expression_args(names, values),
        }
        if condition:
            args["ConditionExpression"] = condition
            args["ReturnValuesOnConditionCheckFailure"] = "ALL_OLD"
        with _write_call("put_item"):
            self._wrote(item)
            self._write("put_item", args, capacity.item_size(item))

    def update(self, update: Update, *, return_new: bool = False) -> Item | None:
        args: dict[str, Any] = {
            "TableName": self.table_name,
            "Key": serialize(update.key),
            "UpdateExpression": update.expression,
            **_expression_args(update.names, update.values),
        }
        if update.condition:
            args["ConditionExpression"] = update.condition
            args["ReturnValuesOnConditionCheckFailure"] = "ALL_OLD"
        # ALL_NEW costs no capacity and lets the estimate bill the whole item, as DynamoDB does.
        args["ReturnValues"] = "ALL_NEW"
        known = capacity.item_size({**update.key, **(update.values or {})})
        with _write_call("update_item"):
            self._wrote(update.key)
            response = self._write("update_item", args, known)
        attributes = response.get("Attributes")
        return deserialize(attributes) if attributes and return_new else None

    def delete(
        self,
        key: Item,
        *,
        condition: str | None = None,
        names: dict[str, str] | None = None,
        values: dict[str, Any] | None = None,
    ) -> Item | None:
        """Delete an item; returns the deleted item (None if there was none)."""
        if not addressable(key):
            # No such item can exist (DynamoDB refuses the key): nothing to delete, and a
            # condition on it cannot hold.
            if condition:
                raise ConditionFailed(None)
            return None
        args: dict[str, Any] = {
            "TableName": self.table_name,
            "Key": serialize(key),
            "ReturnValues": "ALL_OLD",
            **_expression_args(names, values),
        }
        if condition:
            args["ConditionExpression"] = condition
            args["ReturnValuesOnConditionCheckFailure"] = "ALL_OLD"
        with _write_call("delete_item"):
            self._wrote(key)
            response = self._write("delete_item", args, capacity.item_size(key))
        attributes = response.get("Attributes")
        return deserialize(attributes) if attributes else None

    def _write(self, operation: str, args: dict[str, Any], known_bytes: int) -> dict[str, Any]:
        try:
            response = self._call(operation, **args)
        except ClientError as error:
            if error.response.get("Error", {}).get("Code") == "ConditionalCheckFailedException":
                self._estimate(write_bytes=known_bytes, writes=1)
                old = error.response.get("Item")
                raise ConditionFailed(deserialize(old) if old else None) from None
            raise
        written = known_bytes
        indexes = 0
        if response.get("Attributes"):
            item = deserialize(response["Attributes"])
            written = max(written, capacity.item_size(item))
            indexes = capacity.index_writes(item)
        elif operation == "put_item":
            indexes = capacity.index_writes(deserialize(args["Item"]))
        self._estimate(write_bytes=written, writes=1)
        for _ in range(indexes):  # a GSI the item is in is written too (its projection is small)
            self._estimate(write_bytes=1, writes=1)
        return response

    # --- multi-item writes ---

    def transact(self, items: Sequence[TransactItem]) -> None:
        """One atomic TransactWriteItems (at most 100 items)."""
        if not items:
            return
        if len(items) > 100:
            raise ValueError("a DynamoDB transaction holds at most 100 items")
        entries = [self._transact_entry(i) for i in items]
        foreign = any(isinstance(i, Foreign) for i in items)
        with _write_call("transact_write_items"):
            try:
                self._call("transact_write_items", TransactItems=entries)
            except ClientError as error:
                code = error.response.get("Error", {}).get("Code")
                if foreign and code in _SINK_REFUSALS:
                    message = error.response.get("Error", {}).get("Message", code)
                    raise SinkWritesRefused(message) from None
                if code != "TransactionCanceledException":
                    raise
                reasons_raw = error.response.get("CancellationReasons") or []
                reasons = [r.get("Code", "None") for r in reasons_raw]
                messages = [r.get("Message", "") for r in reasons_raw]
                olds = [deserialize(r["Item"]) if r.get("Item") else None for r in reasons_raw]
                if not reasons:
                    reasons = self._parse_cancel_message(str(error))
                    olds = [None] * len(reasons)
                raise TransactionCanceled(reasons, olds, messages) from None
            except (ParamValidationError, NotImplementedError) as error:
                # botocore's own checks of a sink write, or what the in-memory store does not
                # implement (e.g. size() in a sink write's condition).
                if not foreign:
                    raise
                raise SinkWritesRefused(str(error)) from None
            finally:
                for item in items:
                    if not isinstance(item, Foreign):  # a sink item: not on our keys
                        self._wrote(item.item if isinstance(item, Put) else item.key)
                    self._estimate(
                        write_bytes=capacity.item_size(self._item_bytes_basis(item)),
                        transactional=True,
                        writes=1,
                    )
                    for _ in range(self._index_writes(item)):
                        self._estimate(write_bytes=1, writes=1)

    @staticmethod
    def _index_writes(item: TransactItem) -> int:
        """GSI writes a transaction item causes, as far as the request shows them: a Put of an
        indexed item, an Update that sets or removes an index key attribute."""
        if isinstance(item, Put):
            return capacity.index_writes(item.item)
        if isinstance(item, Update):
            touched = {name: True for name in (item.names or {}).values()}
            touched.update({word: True for word in item.expression.replace(",", " ").split()})
            return capacity.index_writes(touched)
        return 0

    @staticmethod
    def _parse_cancel_message(message: str) -> list[str]:
        # Some endpoints send the reasons only in the message: "... reasons [None, Cond...]".
        start, end = message.find("["), message.rfind("]")
        if start < 0 or end < start:
            return []
        return [part.strip() for part in message[start + 1 : end].split(",")]

    @staticmethod
    def _item_bytes_basis(item: TransactItem) -> Item:
        if isinstance(item, Foreign):
            return item.key_basis
        if isinstance(item, Put):
            return item.item
        if isinstance(item, Update):
            return {**item.key, **(item.values or {})}
        return item.key

    def _transact_entry(self, item: TransactItem) -> dict[str, Any]:
        if isinstance(item, Foreign):
            return item.entry
        common: dict[str, Any] = {
            "TableName": self.table_name,
            **_expression_args(item.names, item.values),
        }
        if item.condition:
            common["ConditionExpression"] = item.condition
            common["ReturnValuesOnConditionCheckFailure"] = "ALL_OLD"
        if isinstance(item, Put):
            return {"Put": {**common, "Item": serialize(item.item)}}
        if isinstance(item, Update):
            return {
                "Update": {
                    **common,
                    "Key": serialize(item.key),
                    "UpdateExpression": item.expression,
                }
            }
        if isinstance(item, Delete):
            return {"Delete": {**common, "Key": serialize(item.key)}}
        return {"ConditionCheck": {**common, "Key": serialize(item.key)}}

    def batch_write(self, puts: Sequence[Item] = (), deletes: Sequence[Item] = ()) -> None:
        """Unconditional puts and deletes, 25 per request, unprocessed items retried."""
        requests = [{"PutRequest": {"Item": serialize(i)}} for i in puts] + [
            {"DeleteRequest": {"Key": serialize(k)}} for k in deletes
        ]
        if not requests:
            return
        # One write call however many batches it takes: a crash point is per call.
        with _write_call("batch_write_item"):
            for written in [*puts, *deletes]:
                self._estimate(write_bytes=capacity.item_size(written), writes=1)
                self._wrote(written)
            for start in range(0, len(requests), 25):
                pending: dict[str, Any] = {self.table_name: requests[start : start + 25]}
                for attempt in range(1, self.max_attempts + 2):
                    response = self._call("batch_write_item", RequestItems=pending)
                    pending = response.get("UnprocessedItems") or {}
                    if not pending:
                        break
                    if attempt > self.max_attempts:
                        raise StoreThrottled("DynamoDB BatchWriteItem left items unprocessed")
                    self._pause(attempt)

    # --- table management (serve and tests) ---

    def ensure_table(self, definition: dict[str, Any], ttl_attribute: str) -> bool:
        """Create the table if missing; True when it was created."""
        try:
            self.client.describe_table(TableName=self.table_name)
            return False
        except ClientError as error:
            if error.response.get("Error", {}).get("Code") != "ResourceNotFoundException":
                raise
        try:
            self.client.create_table(**{**definition, "TableName": self.table_name})
        except ClientError as error:
            if error.response.get("Error", {}).get("Code") != "ResourceInUseException":
                raise
            return False
        self.client.get_waiter("table_exists").wait(
            TableName=self.table_name, WaiterConfig={"Delay": 1, "MaxAttempts": 60}
        )
        # Some local endpoints lack TTL; the sweeper expires items anyway.
        with contextlib.suppress(ClientError):
            self.client.update_time_to_live(
                TableName=self.table_name,
                TimeToLiveSpecification={"Enabled": True, "AttributeName": ttl_attribute},
            )
        return True
