"""The store's in-memory adapter: DynamoDB in a dict, for fast tests, benchmarks and `serve`'s
default store. Test equipment: the Lambda layer ships none of it (local/ is left out of the
layer, and an import-linter contract forbids the layer's code to import this package).

`MemoryDynamoClient` stands in for boto3's low-level DynamoDB client under the store's one
DynamoDB gateway, `dynamo.Dynamo`, so that serialization, retries and usage accounting are the
production code's: `Store(Dynamo(MemoryDynamoClient(), table), settings)` (`memory_store`) is
the whole store, in memory. The store has two adapters, this one and DynamoDB's
(`dynamo.make_client`), and both pass one contract suite (tests/contract/test_dynamo_contract.py,
which runs it against Amazon's DynamoDB Local as well).

It implements the operations `Dynamo` calls (CreateTable and DescribeTable, GetItem, PutItem,
UpdateItem and DeleteItem with conditions, TransactWriteItems, BatchGetItem, BatchWriteItem,
Query on the table and its secondary indexes, Scan) with DynamoDB's rules:

- every request is atomic: requests are served one at a time under a lock, so a condition is
  checked and its write made as one step;
- a transaction is all or nothing, holds 1 to 100 distinct items, and is cancelled with one
  reason per item (and the old item of a failed condition, when
  ReturnValuesOnConditionCheckFailure asks for it, as for a single write);
- an item is at most 400 KB (measured with the store's capacity.item_size); its key attributes
  are present, of their declared type, not empty and within DynamoDB's key sizes (2,048 bytes
  a partition key, 1,024 a sort key), and so are the key attributes of an index
  when the item has them; a key attribute cannot be updated;
- expressions follow DynamoDB's grammar and typing: comparisons (a number never equals a
  boolean; an order between different types is false), BETWEEN, IN, AND / OR / NOT,
  attribute_exists, attribute_not_exists, begins_with, document paths (`a.b`, `a[0]`), SET
  with `+`, `-`, if_not_exists and list_append, REMOVE, ADD, DELETE; reserved words must go
  through ExpressionAttributeNames, and every name and value given must be used, and defined;
- Query and Scan return pages of at most Limit items and 1 MB, with LastEvaluatedKey (also
  when the page ended on the Limit with nothing after it, as DynamoDB does) and
  ExclusiveStartKey; a global secondary index holds only the items that have its key
  attributes, returns only the attributes it projects, and refuses consistent reads;
- BatchGetItem takes at most 100 keys, BatchWriteItem 25 requests, neither a key twice.

Each index (the table's key and every secondary index) keeps its items by partition key value,
sorted by sort key, up to date on every write: a Query costs O(log n + items returned), not
O(table), so the sweeper's queries of the deadline index every second stay fast however large
the table is.

Where DynamoDB Local (the tests' DynamoDB endpoint) is laxer than DynamoDB, this follows
DynamoDB: reserved words must go through ExpressionAttributeNames (the contract suite names the
difference). What it does not implement (FilterExpression, a ProjectionExpression past
top-level names, ReturnValues UPDATED_*, ClientRequestToken, size() and the other functions)
raises NotImplementedError rather than behaving differently.

Its modules, one concern each: values.py (DynamoDB's types, equality, order, document paths),
errors.py (refusals), expressions.py (parsing), evaluation.py (conditions and updates on an
item), tables.py (items, indexes, key and size rules), reads.py (Query and Scan pages),
instruments.py (crash injection: `fail_after_writes`, and the benchmarks' `largest_item` and
`largest_transaction`), client.py (the boto3-like client).
"""

from __future__ import annotations

from ...clock import SYSTEM, Clock
from ...settings import Settings
from ...store.dynamo import Dynamo
from ...store.store import Store
from .client import MemoryDynamoClient
from .instruments import Crash

__all__ = ["Crash", "MemoryDynamoClient", "memory_store"]


def memory_store(settings: Settings, clock: Clock = SYSTEM) -> Store:
    """The store on a fresh in-memory adapter, on `clock`: tests, benchmarks, `serve`'s
    default."""
    dynamo = Dynamo(MemoryDynamoClient(), settings.table_name, settings.store_max_attempts, clock)
    return Store(dynamo, settings)
