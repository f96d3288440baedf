"""Sink tables for the tests of commits with writes (docs/exactly-once.md): made in the
coordinator's DynamoDB (its in-memory store, or the DynamoDB endpoint), read back directly."""

from __future__ import annotations

import uuid
from typing import Any

COUNT_KEY = "k"
COUNT_ATTRIBUTE = "n"


def sink_name() -> str:
    return f"sink-{uuid.uuid4().hex[:10]}"


def create_sink_table(client: Any, name: str) -> None:
    """A table keyed by the string `k` (boto3's low-level client, or the in-memory one)."""
    client.create_table(
        TableName=name,
        KeySchema=[{"AttributeName": COUNT_KEY, "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": COUNT_KEY, "AttributeType": "S"}],
        BillingMode="PAY_PER_REQUEST",
    )


def read_item(client: Any, table: str, key: str) -> dict[str, Any] | None:
    found = client.get_item(TableName=table, Key={COUNT_KEY: {"S": key}}, ConsistentRead=True)
    return found.get("Item")


def count_of(client: Any, table: str, key: str) -> int:
    """The counter at `key` (0 when the item is absent)."""
    found = read_item(client, table, key)
    return int(found[COUNT_ATTRIBUTE]["N"]) if found and COUNT_ATTRIBUTE in found else 0


def add_one(table: str, key: str, by: int = 1, condition: str | None = None) -> dict[str, Any]:
    """An Update adding `by` to the counter at `key` (DynamoDB's non-idempotent ADD)."""
    update: dict[str, Any] = {
        "TableName": table,
        "Key": {COUNT_KEY: {"S": key}},
        "UpdateExpression": "ADD #n :by",
        "ExpressionAttributeNames": {"#n": COUNT_ATTRIBUTE},
        "ExpressionAttributeValues": {":by": {"N": str(by)}},
    }
    if condition is not None:
        update["ConditionExpression"] = condition
    return {"Update": update}
