"""An in-memory DynamoDB client for fast property and scale tests of the store and service code.

It stands in for boto3's low-level client under the real `Dynamo` class, so serialization,
retries and usage accounting are the production code's. It implements the subset of the API
the store uses (items, conditional writes, transactions, key-condition queries on the table
and its indexes) with DynamoDB's rules where they matter to us: every condition is checked
atomically, a transaction is all or nothing and holds at most 100 distinct items, and an item
is at most 400 KB (measured with the store's capacity.item_size). Requests are served one at a
time under a lock, as the serialized moto server does.

`fail_after_writes` makes it raise (as a crashed Lambda would stop) after that many more
successful writes, to test that a crash between any two writes leaves a recoverable state.
"""

from __future__ import annotations

import re
import threading
from decimal import Decimal
from typing import Any

from boto3.dynamodb.types import TypeDeserializer, TypeSerializer
from botocore.exceptions import ClientError

from groupcoord.store import capacity

ITEM_LIMIT = 400 * 1024
_deserializer = TypeDeserializer()
_serializer = TypeSerializer()


class Crash(Exception):
    """The process 'died' here (fail_after_writes reached)."""


def _python(value: Any) -> Any:
    if isinstance(value, Decimal):
        return int(value) if value == value.to_integral_value() else float(value)
    if isinstance(value, dict):
        return {k: _python(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_python(v) for v in value]
    if isinstance(value, set):
        return {_python(v) for v in value}
    return value


def _load(attrs: dict[str, Any]) -> dict[str, Any]:
    return {k: _python(_deserializer.deserialize(v)) for k, v in attrs.items()}


def _dump(item: dict[str, Any]) -> dict[str, Any]:
    def conv(v: Any) -> Any:
        if isinstance(v, float):
            return Decimal(str(v))
        if isinstance(v, dict):
            return {k: conv(x) for k, x in v.items()}
        if isinstance(v, list):
            return [conv(x) for x in v]
        return v

    return {k: _serializer.serialize(conv(v)) for k, v in item.items()}


def _error(code: str, message: str = "", **extra: Any) -> ClientError:
    return ClientError({"Error": {"Code": code, "Message": message or code}, **extra}, "op")


_TOKEN = re.compile(r"\s*(<>|<=|>=|=|<|>|\(|\)|,|\+|-|[#:]?[A-Za-z_][A-Za-z0-9_]*)")


def _tokens(text: str) -> list[str]:
    out, pos = [], 0
    text = text.strip()
    while pos < len(text):
        match = _TOKEN.match(text, pos)
        if not match:
            raise _error("ValidationException", f"cannot parse expression at {text[pos:]!r}")
        out.append(match.group(1))
        pos = match.end()
    return out


class _Expr:
    """Parses and evaluates condition and update expressions over one item."""

    def __init__(self, names: dict[str, str] | None, values: dict[str, Any] | None) -> None:
        self.names = names or {}
        self.values = _load(values or {})

    def name(self, token: str) -> str:
        return self.names[token] if token.startswith("#") else token

    def operand(self, token: str, item: dict[str, Any]) -> Any:
        if token.startswith(":"):
            return self.values[token]
        return item.get(self.name(token))

    # condition := or ; or := and (OR and)* ; and := not (AND not)* ; not := NOT not | atom
    def check(self, text: str | None, item: dict[str, Any] | None) -> bool:
        if not text:
            return True
        toks = _tokens(text)
        pos = 0
        present = item or {}

        def peek() -> str | None:
            return toks[pos] if pos < len(toks) else None

        def take() -> str:
            nonlocal pos
            pos += 1
            return toks[pos - 1]

        def disjunction() -> bool:
            result = conjunction()
            while peek() is not None and peek().upper() == "OR":  # type: ignore[union-attr]
                take()
                right = conjunction()
                result = result or right
            return result

        def conjunction() -> bool:
            result = negation()
            while peek() is not None and peek().upper() == "AND":  # type: ignore[union-attr]
                take()
                right = negation()
                result = result and right
            return result

        def negation() -> bool:
            if peek() is not None and peek().upper() == "NOT":  # type: ignore[union-attr]
                take()
                return not negation()
            return atom()

        def atom() -> bool:
            token = take()
            if token == "(":
                result = disjunction()
                assert take() == ")"
                return result
            if token in ("attribute_exists", "attribute_not_exists"):
                assert take() == "("
                attr = self.name(take())
                assert take() == ")"
                return (attr in present) == (token == "attribute_exists")
            op = take()
            left, right = self.operand(token, present), self.operand(take(), present)
            if op == "=":
                return left is not None and left == right
            if op == "<>":
                return left != right
            if left is None or right is None:
                return False
            return {"<": left < right, "<=": left <= right, ">": left > right,
                    ">=": left >= right}[op]  # fmt: skip

        result = disjunction()
        assert pos == len(toks), text
        return result

    def apply(self, text: str, item: dict[str, Any]) -> dict[str, Any]:
        toks = _tokens(text)
        out = dict(item)
        clause, pos = None, 0
        while pos < len(toks):
            token = toks[pos]
            if token.upper() in ("SET", "REMOVE", "ADD"):
                clause = token.upper()
                pos += 1
                continue
            if token == ",":
                pos += 1
                continue
            if clause == "SET":
                attr = self.name(token)
                assert toks[pos + 1] == "="
                value = self.operand(toks[pos + 2], item)
                pos += 3
                while pos < len(toks) and toks[pos] in ("+", "-"):
                    other = self.operand(toks[pos + 1], item)
                    value = value + other if toks[pos] == "+" else value - other
                    pos += 2
                out[attr] = value
            elif clause == "REMOVE":
                out.pop(self.name(token), None)
                pos += 1
            elif clause == "ADD":
                attr = self.name(token)
                out[attr] = out.get(attr, 0) + self.operand(toks[pos + 1], item)
                pos += 2
            else:
                raise _error("ValidationException", f"bad update expression {text}")
        return out


class MemoryDynamoClient:
    """The boto3 DynamoDB client methods the store calls, on a dict of items."""

    def __init__(self) -> None:
        self.tables: dict[str, dict[str, Any]] = {}
        self.lock = threading.RLock()
        self.fail_after_writes: int | None = None
        self.largest_item = 0
        self.largest_transaction = 0

    # --- tables ---

    def describe_table(self, TableName: str) -> dict[str, Any]:
        if TableName not in self.tables:
            raise _error("ResourceNotFoundException")
        return {"Table": {"TableName": TableName}}

    def create_table(self, **definition: Any) -> dict[str, Any]:
        name = definition["TableName"]
        keys = [k["AttributeName"] for k in definition["KeySchema"]]
        indexes = {
            i["IndexName"]: [k["AttributeName"] for k in i["KeySchema"]]
            for i in definition.get("GlobalSecondaryIndexes", [])
        }
        self.tables[name] = {"keys": keys, "indexes": indexes, "items": {}}
        return {}

    def get_waiter(self, name: str) -> Any:
        class Waiter:
            def wait(self, **kwargs: Any) -> None:
                pass

        return Waiter()

    def update_time_to_live(self, **kwargs: Any) -> dict[str, Any]:
        return {}

    # --- helpers ---

    def _table(self, name: str) -> dict[str, Any]:
        return self.tables[name]

    def _key(self, table: dict[str, Any], key: dict[str, Any]) -> tuple:
        return tuple(key[k] for k in table["keys"])

    def _written(self) -> None:
        if self.fail_after_writes is not None:
            if self.fail_after_writes <= 0:
                raise Crash("crashed before this write")
            self.fail_after_writes -= 1

    def _store(self, table: dict[str, Any], item: dict[str, Any] | None, key: tuple) -> None:
        if item is None:
            table["items"].pop(key, None)
            return
        size = capacity.item_size(item)
        if size > ITEM_LIMIT:
            raise _error("ValidationException", "Item size has exceeded the maximum allowed size")
        self.largest_item = max(self.largest_item, size)
        table["items"][key] = item

    def _condition_failed(self, old: dict[str, Any] | None) -> ClientError:
        extra = {"Item": _dump(old)} if old is not None else {}
        return _error("ConditionalCheckFailedException", "The conditional request failed", **extra)

    # --- single items ---

    def get_item(self, TableName: str, Key: dict, ConsistentRead: bool = False, **_: Any) -> dict:
        with self.lock:
            table = self._table(TableName)
            item = table["items"].get(self._key(table, _load(Key)))
            return {"Item": _dump(item)} if item is not None else {}

    def _prepare(self, TableName: str, op: str, args: dict[str, Any]) -> tuple:
        table = self._table(TableName)
        expr = _Expr(args.get("ExpressionAttributeNames"), args.get("ExpressionAttributeValues"))
        if op == "Put":
            new_item = _load(args["Item"])
            key = self._key(table, new_item)
        else:
            key_attrs = _load(args["Key"])
            key = self._key(table, key_attrs)
        old = table["items"].get(key)
        if not expr.check(args.get("ConditionExpression"), old):
            return table, key, old, None, False
        if op == "Put":
            new = new_item
        elif op == "Update":
            new = expr.apply(args["UpdateExpression"], old if old is not None else key_attrs)
        elif op == "Delete":
            new = None
        else:  # ConditionCheck
            new = old
        return table, key, old, new, True

    def put_item(self, **args: Any) -> dict:
        return self._single("Put", args)

    def update_item(self, **args: Any) -> dict:
        return self._single("Update", args)

    def delete_item(self, **args: Any) -> dict:
        return self._single("Delete", args)

    def _single(self, op: str, args: dict[str, Any]) -> dict[str, Any]:
        with self.lock:
            table, key, old, new, ok = self._prepare(args["TableName"], op, args)
            if not ok:
                raise self._condition_failed(old)
            self._written()
            self._store(table, new, key)
            returned = args.get("ReturnValues", "NONE")
            if returned == "ALL_NEW" and new is not None:
                return {"Attributes": _dump(new)}
            if returned == "ALL_OLD" and old is not None:
                return {"Attributes": _dump(old)}
            return {}

    # --- several items ---

    def transact_write_items(self, TransactItems: list[dict], **_: Any) -> dict:
        if len(TransactItems) > 100:
            raise _error("ValidationException", "transaction over 100 items")
        with self.lock:
            self.largest_transaction = max(self.largest_transaction, len(TransactItems))
            prepared, reasons, seen = [], [], set()
            for entry in TransactItems:
                ((op, args),) = entry.items()
                op = {"ConditionCheck": "Check"}.get(op, op)
                table, key, old, new, ok = self._prepare(args["TableName"], op, args)
                if (args["TableName"], key) in seen:
                    raise _error("ValidationException", "two operations on one item")
                seen.add((args["TableName"], key))
                prepared.append((op, table, key, new))
                reason: dict[str, Any] = {"Code": "None"}
                if not ok:
                    reason = {"Code": "ConditionalCheckFailed"}
                    if old is not None:
                        reason["Item"] = _dump(old)
                reasons.append(reason)
            if any(r["Code"] != "None" for r in reasons):
                raise _error(
                    "TransactionCanceledException",
                    "Transaction cancelled",
                    CancellationReasons=reasons,
                )
            for _, _, _, new in prepared:
                if new is not None and capacity.item_size(new) > ITEM_LIMIT:
                    raise _error("ValidationException", "Item size exceeded in a transaction")
            self._written()
            for op, table, key, new in prepared:
                if op != "Check":
                    self._store(table, new, key)
            return {}

    def batch_get_item(self, RequestItems: dict, **_: Any) -> dict:
        with self.lock:
            responses: dict[str, list] = {}
            for name, request in RequestItems.items():
                table = self._table(name)
                found = []
                for key in request["Keys"]:
                    item = table["items"].get(self._key(table, _load(key)))
                    if item is not None:
                        found.append(_dump(item))
                responses[name] = found
            return {"Responses": responses, "UnprocessedKeys": {}}

    def batch_write_item(self, RequestItems: dict, **_: Any) -> dict:
        with self.lock:
            for name, requests in RequestItems.items():
                table = self._table(name)
                for request in requests:
                    self._written()
                    if "PutRequest" in request:
                        item = _load(request["PutRequest"]["Item"])
                        self._store(table, item, self._key(table, item))
                    else:
                        key = self._key(table, _load(request["DeleteRequest"]["Key"]))
                        self._store(table, None, key)
            return {"UnprocessedItems": {}}

    def query(self, **args: Any) -> dict:
        with self.lock:
            table = self._table(args["TableName"])
            keys = table["indexes"][args["IndexName"]] if "IndexName" in args else table["keys"]
            expr = _Expr(
                args.get("ExpressionAttributeNames"), args.get("ExpressionAttributeValues")
            )
            condition = args["KeyConditionExpression"]
            simple = re.fullmatch(r"(\S+) = (:\w+)", condition.strip())
            if simple:  # the common "pk = :pk": no per-item parsing
                attr, wanted = expr.name(simple.group(1)), expr.values[simple.group(2)]
                items = [
                    i for i in table["items"].values()
                    if i.get(attr) == wanted and all(k in i for k in keys)
                ]  # fmt: skip
            else:
                items = [
                    i
                    for i in table["items"].values()
                    if all(k in i for k in keys) and expr.check(condition, i)
                ]
            items.sort(key=lambda i: tuple(i[k] for k in keys))
            if not args.get("ScanIndexForward", True):
                items.reverse()
            return {"Items": [_dump(i) for i in items]}
