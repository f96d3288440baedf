"""A KCL application's lease table in DynamoDB, read and written with boto3 (the `kinesis`
extra, imported only when a command runs): the endpoint from `--dynamodb-endpoint`, else
boto3's own settings (AWS_ENDPOINT_URL_DYNAMODB, the profile, the region)."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from .leases import Item

_BATCH = 25  # BatchWriteItem's most
_CREATE_WAIT_S = 50.0
# The most leases a command reads from a table: a bound on its memory and time whatever the
# table holds (a KCL application of 100,000 shards is far beyond any stream's shard quota).
MAX_LEASES = 100_000
_PAGE = 1000  # items per Scan page


class LeaseTableError(Exception):
    """DynamoDB refused or could not be reached: one line for the command to print."""


@contextmanager
def _dynamodb_errors(table: str) -> Iterator[None]:
    from botocore.exceptions import BotoCoreError, ClientError

    try:
        yield
    except ClientError as error:
        code = error.response.get("Error", {})
        raise LeaseTableError(
            f"lease table {table}: {code.get('Code', 'error')}: {code.get('Message', '')}"
        ) from None
    except BotoCoreError as error:
        raise LeaseTableError(f"lease table {table}: {error}") from None


class LeaseTable:
    def __init__(self, name: str, endpoint_url: str | None, region: str | None) -> None:
        try:
            import boto3
        except ImportError:
            raise LeaseTableError(
                "reading a KCL lease table needs boto3: pip install 'groupcoord[kinesis]'"
            ) from None
        self.name = name
        with _dynamodb_errors(name):
            self.client: Any = boto3.client(
                "dynamodb", endpoint_url=endpoint_url, region_name=region
            )

    def exists(self) -> bool:
        with _dynamodb_errors(self.name):
            try:
                self.client.describe_table(TableName=self.name)
            except self.client.exceptions.ResourceNotFoundException:
                return False
        return True

    def scan(self) -> list[Item]:
        """Every item, strongly consistent (a renewal just made is seen); refused past
        MAX_LEASES, read no further than one item over it."""
        items: list[Item] = []
        request: dict[str, Any] = {"TableName": self.name, "ConsistentRead": True}
        with _dynamodb_errors(self.name):
            while True:
                request["Limit"] = min(_PAGE, MAX_LEASES + 1 - len(items))
                page = self.client.scan(**request)
                items.extend(page.get("Items", []))
                if len(items) > MAX_LEASES:
                    raise LeaseTableError(
                        f"lease table {self.name} holds more than {MAX_LEASES:,} leases, the "
                        "most a KCL import or export reads"
                    )
                if "LastEvaluatedKey" not in page:
                    return items
                request["ExclusiveStartKey"] = page["LastEvaluatedKey"]

    def create(self, sleep: Callable[[float], None] = time.sleep) -> None:
        """KCL's table: hash key leaseKey (a string), on-demand; returns once ACTIVE."""
        with _dynamodb_errors(self.name):
            self.client.create_table(
                TableName=self.name,
                AttributeDefinitions=[{"AttributeName": "leaseKey", "AttributeType": "S"}],
                KeySchema=[{"AttributeName": "leaseKey", "KeyType": "HASH"}],
                BillingMode="PAY_PER_REQUEST",
            )
            deadline = time.monotonic() + _CREATE_WAIT_S
            while self.client.describe_table(TableName=self.name)["Table"]["TableStatus"] != (
                "ACTIVE"
            ):
                if time.monotonic() > deadline:
                    raise LeaseTableError(f"lease table {self.name}: not ACTIVE after creation")
                sleep(0.5)

    def put(self, items: list[Item], sleep: Callable[[float], None] = time.sleep) -> None:
        """Every item written (BatchWriteItem, its unprocessed items retried)."""
        with _dynamodb_errors(self.name):
            for start in range(0, len(items), _BATCH):
                pending = [{"PutRequest": {"Item": i}} for i in items[start : start + _BATCH]]
                delay = 0.05
                while pending:
                    answer = self.client.batch_write_item(RequestItems={self.name: pending})
                    pending = answer.get("UnprocessedItems", {}).get(self.name, [])
                    if pending:
                        sleep(delay)
                        delay = min(delay * 2, 2.0)
