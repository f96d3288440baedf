"""TransactWriteItems for moto that costs O(items), not O(table).

moto (5.x) snapshots the whole table with deepcopy once per item of a transaction so that it
can roll back, which makes every transaction slower as the table grows: `groupcoord serve`
would slow down over a day of use, and a 99-item transaction copies the table 99 times. This
version keeps an undo log of the items it touched instead. Conditions, the one-operation-per-
item rule, the per-item cancellation reasons and the all-or-nothing outcome are moto's.
"""

from __future__ import annotations

import copy
from typing import Any

_INSTALLED = False


def install() -> None:
    """Replace moto's DynamoDB transact_write_items (idempotent)."""
    global _INSTALLED
    if _INSTALLED:
        return
    from moto.dynamodb.models import DynamoDBBackend

    DynamoDBBackend.transact_write_items = _transact_write_items  # type: ignore[method-assign]
    _INSTALLED = True


def _transact_write_items(self: Any, transact_items: list[dict[str, Any]]) -> None:
    from moto.dynamodb.comparisons import get_filter_expression
    from moto.dynamodb.exceptions import (
        ConditionalCheckFailed,
        MockValidationException,
        MultipleTransactionsException,
        TooManyTransactionsException,
        TransactionCanceledException,
        TransactWriteSingleOpException,
    )

    if len(transact_items) > 100:
        raise TooManyTransactionsException()
    undo: list[tuple[str, dict[str, Any], Any]] = []  # (table, key, item before or None)
    targets: set[tuple[str, str]] = set()

    def rollback() -> None:
        for table_name, key, before in reversed(undo):
            if before is None:
                self.delete_item(table_name, key)
            else:
                self.put_item(table_name, before.to_json()["Attributes"])

    errors: list[tuple[Any, Any, Any]] = []
    for entry in transact_items:
        if len(entry) > 1:
            raise TransactWriteSingleOpException
        original_item = None
        try:
            op_type, op = next(iter(entry.items()))
            if op_type not in {"ConditionCheck", "Put", "Delete", "Update"}:
                raise ValueError("Unsupported transaction operation")
            table_name = op["TableName"]
            names = op.get("ExpressionAttributeNames")
            values = op.get("ExpressionAttributeValues")
            condition = op.get("ConditionExpression")
            if op_type == "Put":
                table = self.get_table(table_name)
                key = {table.hash_key_attr: op["Item"][table.hash_key_attr]}
                if table.range_key_attr is not None:
                    key[table.range_key_attr] = op["Item"][table.range_key_attr]
            else:
                key = op["Key"]
            target = (str(table_name), str(dict(sorted(key.items()))))
            if target in targets:
                raise MultipleTransactionsException()
            targets.add(target)
            current = self.get_item(table_name, key)
            holds = condition is None or get_filter_expression(condition, names, values).expr(
                current
            )
            if not holds:
                if op.get("ReturnValuesOnConditionCheckFailure") == "ALL_OLD" and current:
                    original_item = current.to_json()["Attributes"]
                raise ConditionalCheckFailed(item=original_item)
            if op_type != "ConditionCheck":
                undo.append((table_name, key, copy.deepcopy(current)))
            common = {
                "condition_expression": condition,
                "expression_attribute_names": names,
                "expression_attribute_values": values,
            }
            if op_type == "Put":
                self.put_item(table_name, op["Item"], **common)
            elif op_type == "Delete":
                self.delete_item(table_name, key, **common)
            elif op_type == "Update":
                self.update_item(
                    table_name, key, update_expression=op["UpdateExpression"], **common
                )
            errors.append((None, None, None))
        except (MultipleTransactionsException, MockValidationException):
            rollback()
            raise
        except ConditionalCheckFailed as failed:
            errors.append(("ConditionalCheckFailed", str(failed.message), original_item))
        except Exception as error:
            errors.append((type(error).__name__, str(error), original_item))
    if any(code is not None for code, _, _ in errors):
        rollback()
        raise TransactionCanceledException(errors)
