"""`MemoryDynamoClient`: the boto3 DynamoDB client methods `Dynamo` calls, on the tables of
tables.py: every request atomic under one lock, DynamoDB's request limits and its errors as
botocore raises them."""

from __future__ import annotations

import bisect
import functools
import threading
from collections.abc import Callable, Iterable
from typing import Any

from botocore.exceptions import ClientError

from ...store.dynamo import deserialize, serialize
from .errors import Refused, invalid
from .evaluation import Evaluation
from .expressions import parse, placeholders
from .instruments import Instruments
from .reads import key_condition, page, projection, sort_range
from .tables import Table

BATCH_GET_RESPONSE_LIMIT = 16 * 1024 * 1024
TRANSACTION_LIMIT = 100
BATCH_GET_LIMIT = 100
BATCH_WRITE_LIMIT = 25


def _api(operation: str) -> Callable[[Callable[..., dict]], Callable[..., dict]]:
    """A client method: keyword arguments only (as boto3's), under the lock, errors as
    botocore raises them."""

    def wrap(method: Callable[..., dict]) -> Callable[..., dict]:
        @functools.wraps(method)
        def call(self: MemoryDynamoClient, **args: Any) -> dict:
            with self.lock:
                try:
                    return method(self, args)
                except Refused as refused:
                    response = {
                        "Error": {"Code": refused.code, "Message": refused.message},
                        **refused.extra,
                    }
                    raise ClientError(response, operation) from None  # type: ignore[arg-type]

        return call

    return wrap


def _only(operation: str, args: dict[str, Any], allowed: Iterable[str]) -> None:
    unknown = set(args) - {"ReturnConsumedCapacity", "ReturnItemCollectionMetrics", *allowed}
    if unknown:
        raise NotImplementedError(
            f"MemoryDynamoClient {operation} does not implement {', '.join(sorted(unknown))}"
        )


_WRITE_PARAMETERS = (
    "TableName",
    "ConditionExpression",
    "ExpressionAttributeNames",
    "ExpressionAttributeValues",
    "ReturnValuesOnConditionCheckFailure",
)
_OP_PARAMETERS = {
    "Put": ("Item", "ReturnValues"),
    "Update": ("Key", "UpdateExpression", "ReturnValues"),
    "Delete": ("Key", "ReturnValues"),
    "Check": ("Key",),
}


class MemoryDynamoClient(Instruments):
    """The boto3 DynamoDB client methods `Dynamo` calls, on dicts of items."""

    def __init__(self) -> None:
        super().__init__()
        self.tables: dict[str, Table] = {}
        self.lock = threading.RLock()

    # --- tables ---

    def _table(self, name: str) -> Table:
        if name not in self.tables:
            raise Refused(
                "ResourceNotFoundException",
                f"Requested resource not found: Table: {name} not found",
            )
        return self.tables[name]

    @_api("DescribeTable")
    def describe_table(self, args: dict[str, Any]) -> dict[str, Any]:
        _only("DescribeTable", args, ["TableName"])
        table = self._table(args["TableName"])
        return {
            "Table": {**table.definition, "TableStatus": "ACTIVE", "ItemCount": len(table.items)}
        }

    @_api("CreateTable")
    def create_table(self, args: dict[str, Any]) -> dict[str, Any]:
        name = args["TableName"]
        if name in self.tables:
            raise Refused("ResourceInUseException", f"Table already exists: {name}")
        self.tables[name] = Table(args)
        return {"TableDescription": {**args, "TableStatus": "ACTIVE"}}

    def get_waiter(self, name: str) -> Any:
        client = self

        class Waiter:  # a table is created at once: waiting only checks that it is there
            def wait(self, TableName: str, **_: Any) -> None:
                client.describe_table(TableName=TableName)

        return Waiter()

    @_api("UpdateTimeToLive")
    def update_time_to_live(self, args: dict[str, Any]) -> dict[str, Any]:
        # Recorded, not acted on: DynamoDB takes up to days, and the sweeper does not wait.
        _only("UpdateTimeToLive", args, ["TableName", "TimeToLiveSpecification"])
        spec = args["TimeToLiveSpecification"]
        table = self._table(args["TableName"])
        table.ttl_attribute = spec["AttributeName"] if spec.get("Enabled") else None
        return {"TimeToLiveSpecification": spec}

    # --- helpers ---

    def _store(self, table: Table, key: tuple, item: dict[str, Any] | None, size: int) -> None:
        if item is not None:
            self._stored(size)
        table.write(key, item, size)

    @staticmethod
    def _old_for_failure(old: dict[str, Any] | None, args: dict[str, Any]) -> dict[str, Any]:
        """The old item, for a failed condition's error, when the request asked for it."""
        if old is not None and args.get("ReturnValuesOnConditionCheckFailure") == "ALL_OLD":
            return {"Item": serialize(old)}
        return {}

    def _plan(self, op: str, args: dict[str, Any]) -> tuple:
        """Check a write request (Put, Update, Delete, Check) and parse it: (table, key, the
        Put's item and size, condition, update, evaluation)."""
        _only(op, args, [*_WRITE_PARAMETERS, *_OP_PARAMETERS[op]])
        table = self._table(args["TableName"])
        condition = update = None
        if args.get("ConditionExpression"):
            condition = parse("ConditionExpression", args["ConditionExpression"])
        if op == "Update":
            update = parse("UpdateExpression", args["UpdateExpression"])
        names, values = args.get("ExpressionAttributeNames"), args.get("ExpressionAttributeValues")
        placeholders(names, values, [condition, update])
        put: tuple[dict[str, Any], int] | None = None
        if op == "Put":
            item = deserialize(args["Item"])
            key, size = table.check(item)
            put = (item, size)
        else:
            key = table.key(deserialize(args["Key"]))
        return table, key, put, condition, update, Evaluation(names, values)

    @staticmethod
    def _outcome(op: str, plan: tuple) -> tuple[bool, Any, Any, int]:
        """Whether the condition holds, the old item, the new one (None: deleted), its size."""
        table, key, put, condition, update, evaluation = plan
        old = table.items.get(key)
        if condition is not None and not evaluation.holds(condition.tree, old or {}):
            return False, old, old, 0
        if op == "Put":
            return True, old, put[0], put[1]
        if op == "Update":
            base = old if old is not None else dict(zip(table.key_names, key, strict=True))
            new = evaluation.apply(update.tree, base, table.key_names)
            _, size = table.check(new, updated=True)
            return True, old, new, size
        if op == "Delete":
            return True, old, None, 0
        return True, old, old, 0  # a ConditionCheck writes nothing

    # --- single items ---

    @_api("GetItem")
    def get_item(self, args: dict[str, Any]) -> dict[str, Any]:
        _only("GetItem", args, ["TableName", "Key", "ConsistentRead"])
        table = self._table(args["TableName"])
        item = table.items.get(table.key(deserialize(args["Key"])))
        return {"Item": serialize(item)} if item is not None else {}

    @_api("PutItem")
    def put_item(self, args: dict[str, Any]) -> dict[str, Any]:
        return self._single("Put", args, ("NONE", "ALL_OLD"))

    @_api("UpdateItem")
    def update_item(self, args: dict[str, Any]) -> dict[str, Any]:
        return self._single("Update", args, ("NONE", "ALL_OLD", "ALL_NEW"))

    @_api("DeleteItem")
    def delete_item(self, args: dict[str, Any]) -> dict[str, Any]:
        return self._single("Delete", args, ("NONE", "ALL_OLD"))

    def _single(self, op: str, args: dict[str, Any], returns: tuple[str, ...]) -> dict[str, Any]:
        returned = args.get("ReturnValues", "NONE")
        if returned in ("UPDATED_OLD", "UPDATED_NEW"):
            raise NotImplementedError(f"MemoryDynamoClient does not implement {returned}")
        if returned not in returns:
            raise invalid("Return values set to invalid value")
        plan = self._plan(op, args)
        holds, old, new, size = self._outcome(op, plan)
        if not holds:
            raise Refused(
                "ConditionalCheckFailedException",
                "The conditional request failed",
                **self._old_for_failure(old, args),
            )
        self._written()
        self._store(plan[0], plan[1], new, size)
        if returned == "ALL_NEW" and new is not None:
            return {"Attributes": serialize(new)}
        if returned == "ALL_OLD" and old is not None:
            return {"Attributes": serialize(old)}
        return {}

    # --- several items ---

    @_api("TransactWriteItems")
    def transact_write_items(self, args: dict[str, Any]) -> dict[str, Any]:
        _only("TransactWriteItems", args, ["TransactItems"])
        entries = args["TransactItems"]
        if not 1 <= len(entries) <= TRANSACTION_LIMIT:
            raise invalid(
                "1 validation error detected at 'transactItems' failed to satisfy constraint: "
                f"Member must have length less than or equal to {TRANSACTION_LIMIT}."
            )
        self._transaction(len(entries))
        plans, seen = [], set()
        for entry in entries:
            if len(entry) != 1:
                raise invalid("TransactItems can only contain one of Check, Put, Update or Delete")
            ((op, request),) = entry.items()
            op = {"ConditionCheck": "Check"}.get(op, op)
            if op not in ("Put", "Update", "Delete", "Check"):
                raise invalid(f"Unsupported transaction operation: {op}")
            if op == "Check" and not request.get("ConditionExpression"):
                raise invalid("A ConditionCheck needs a ConditionExpression")
            plan = self._plan(op, request)
            if (request["TableName"], plan[1]) in seen:
                raise invalid("Transaction request cannot include multiple operations on one item")
            seen.add((request["TableName"], plan[1]))
            plans.append((op, request, plan))
        # Every condition reads the items as they were before the transaction.
        outcomes, reasons = [], []
        for op, request, plan in plans:
            holds, old, new, size = self._outcome(op, plan)
            outcomes.append((op, plan, new, size))
            reason: dict[str, Any] = {"Code": "None"}
            if not holds:
                reason = {
                    "Code": "ConditionalCheckFailed",
                    "Message": "The conditional request failed",
                    **self._old_for_failure(old, request),
                }
            reasons.append(reason)
        if any(r["Code"] != "None" for r in reasons):
            codes = ", ".join(r["Code"] for r in reasons)
            raise Refused(
                "TransactionCanceledException",
                "Transaction cancelled, please refer cancellation reasons for specific reasons "
                f"[{codes}]",
                CancellationReasons=reasons,
            )
        self._written()
        for op, plan, new, size in outcomes:
            if op != "Check":
                self._store(plan[0], plan[1], new, size)
        return {}

    @_api("BatchGetItem")
    def batch_get_item(self, args: dict[str, Any]) -> dict[str, Any]:
        _only("BatchGetItem", args, ["RequestItems"])
        requests = args["RequestItems"]
        if sum(len(r["Keys"]) for r in requests.values()) > BATCH_GET_LIMIT:
            raise invalid("Too many items requested for the BatchGetItem call")
        planned = []
        for name, request in requests.items():
            _only("BatchGetItem", request, ["Keys", "ConsistentRead"])
            table = self._table(name)
            keys = [table.key(deserialize(k)) for k in request["Keys"]]
            if len(set(keys)) != len(keys):
                raise invalid("Provided list of item keys contains duplicates")
            planned.append((name, table, request, keys))
        responses: dict[str, list] = {}
        unprocessed: dict[str, Any] = {}
        total = 0
        for name, table, request, keys in planned:
            found = responses.setdefault(name, [])
            for at, key in enumerate(keys):
                if total >= BATCH_GET_RESPONSE_LIMIT:  # the rest is for the next request
                    unprocessed[name] = {**request, "Keys": request["Keys"][at:]}
                    break
                item = table.items.get(key)
                if item is not None:
                    found.append(serialize(item))
                    total += table.sizes[key]
        return {"Responses": responses, "UnprocessedKeys": unprocessed}

    @_api("BatchWriteItem")
    def batch_write_item(self, args: dict[str, Any]) -> dict[str, Any]:
        _only("BatchWriteItem", args, ["RequestItems"])
        requests = args["RequestItems"]
        if sum(len(r) for r in requests.values()) > BATCH_WRITE_LIMIT:
            raise invalid("Too many items requested for the BatchWriteItem call")
        planned: list[tuple[Table, tuple, dict[str, Any] | None, int]] = []
        seen = set()
        for name, table_requests in requests.items():
            table = self._table(name)
            for request in table_requests:
                if "PutRequest" in request:
                    item = deserialize(request["PutRequest"]["Item"])
                    key, size = table.check(item)
                    planned.append((table, key, item, size))
                else:
                    key = table.key(deserialize(request["DeleteRequest"]["Key"]))
                    planned.append((table, key, None, 0))
                if (name, key) in seen:
                    raise invalid("Provided list of item keys contains duplicates")
                seen.add((name, key))
        for table, key, item, size in planned:  # not atomic: a crash can stop it midway
            self._written()
            self._store(table, key, item, size)
        return {"UnprocessedItems": {}}

    # --- reads of many items ---

    @_api("Query")
    def query(self, args: dict[str, Any]) -> dict[str, Any]:
        _only("Query", args, ["TableName", "IndexName", "KeyConditionExpression",
              "ExpressionAttributeNames", "ExpressionAttributeValues", "ScanIndexForward",
              "Limit", "ExclusiveStartKey", "ConsistentRead", "ProjectionExpression"])  # fmt: skip
        table = self._table(args["TableName"])
        index = table.index(args.get("IndexName"))
        if args.get("ConsistentRead") and index.name in table.global_indexes:
            raise invalid("Consistent reads are not supported on global secondary indexes")
        parsed = parse("KeyConditionExpression", args["KeyConditionExpression"])
        names, values = args.get("ExpressionAttributeNames"), args.get("ExpressionAttributeValues")
        projected, projecting = projection(args.get("ProjectionExpression"), names)
        placeholders(names, values, [parsed, projecting])
        partition, sort = key_condition(table, index, parsed.tree, Evaluation(names, values))
        entries = index.partitions.get(partition, [])
        low, high = sort_range(entries, sort)
        forward = args.get("ScanIndexForward", True)
        if "ExclusiveStartKey" in args:
            start = deserialize(args["ExclusiveStartKey"])
            if set(start) != {*table.key_names, *index.key_names}:
                raise invalid("The provided starting key is invalid")
            sort_value = start[index.range_key] if index.range_key else ()
            mark = (sort_value, table.key({name: start[name] for name in table.key_names}))
            if forward:
                low = max(low, bisect.bisect_right(entries, mark, low, high))
            else:
                high = min(high, bisect.bisect_left(entries, mark, low, high))
        order = range(low, high) if forward else range(high - 1, low - 1, -1)
        found = page(table, index, (entries[i][1] for i in order), args.get("Limit"))
        if projected is not None:  # after the page: its 1 MB counts whole items, as DynamoDB's
            found["Items"] = [
                {k: v for k, v in i.items() if k in projected} for i in found["Items"]
            ]
        return found

    @_api("Scan")
    def scan(self, args: dict[str, Any]) -> dict[str, Any]:
        """Every item, in key order (DynamoDB's is its own: no caller may rely on one), a page
        at a time."""
        _only("Scan", args, ["TableName", "Limit", "ExclusiveStartKey", "ConsistentRead"])
        table = self._table(args["TableName"])
        keys = sorted(table.items)
        start = 0
        if "ExclusiveStartKey" in args:
            start = bisect.bisect_right(keys, table.key(deserialize(args["ExclusiveStartKey"])))
        return page(table, table.primary, keys[start:], args.get("Limit"))
