"""The store's in-memory adapter: DynamoDB in a dict, for fast tests and benchmarks.

`MemoryDynamoClient` stands in for boto3's low-level DynamoDB client under the store's one
DynamoDB gateway, `dynamo.Dynamo`, so that serialization, retries and usage accounting are the
production code's: `Store(Dynamo(MemoryDynamoClient(), table), settings)` is the whole store,
in memory. The store has two adapters, this one and DynamoDB's (`dynamo.make_client`), and both
pass one contract suite (tests/contract/test_dynamo_contract.py, which runs it against Amazon's
DynamoDB Local as well).

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
difference). What it does not implement (ProjectionExpression, FilterExpression, ReturnValues
UPDATED_*, ClientRequestToken, size() and the other functions) raises NotImplementedError
rather than behaving differently.

`fail_after_writes` makes it raise Crash (as a crashed Lambda would stop) after that many more
successful writes (a transaction or a batch item is one), to test that a crash between any two
writes leaves a recoverable state. `largest_item` and `largest_transaction` record the largest
seen, for the benchmarks.
"""

from __future__ import annotations

import bisect
import copy
import functools
import re
import threading
from collections.abc import Callable, Iterable
from decimal import Decimal
from typing import Any

from botocore.exceptions import ClientError

from . import capacity
from .dynamo import deserialize, serialize

ITEM_LIMIT = 400 * 1024
PARTITION_KEY_LIMIT = 2048
SORT_KEY_LIMIT = 1024
PAGE_LIMIT = 1024 * 1024  # Query and Scan
BATCH_GET_RESPONSE_LIMIT = 16 * 1024 * 1024
TRANSACTION_LIMIT = 100
BATCH_GET_LIMIT = 100
BATCH_WRITE_LIMIT = 25

_MISSING: Any = object()


class Crash(Exception):
    """The process 'died' here (fail_after_writes reached)."""


# --- values ---


def _kind(value: Any) -> str:
    """The DynamoDB type of a stored (Python) value."""
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return "BOOL"
    if isinstance(value, int | float | Decimal):
        return "N"
    if isinstance(value, str):
        return "S"
    if isinstance(value, bytes | bytearray):
        return "B"
    if isinstance(value, list):
        return "L"
    if isinstance(value, dict):
        return "M"
    if isinstance(value, set | frozenset):
        return {"N": "NS", "B": "BS"}.get(_kind(next(iter(value))) if value else "S", "SS")
    raise TypeError(f"not a DynamoDB value: {value!r}")


def _same(a: Any, b: Any) -> bool:
    """DynamoDB's equality: typed (True is not 1), element by element in lists and maps."""
    kind = _kind(a)
    if kind != _kind(b):
        return False
    if kind == "L":
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if kind == "M":
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    return bool(a == b)


def _compare(op: str, a: Any, b: Any) -> bool:
    if a is _MISSING or b is _MISSING:
        return op == "<>"
    if op == "=":
        return _same(a, b)
    if op == "<>":
        return not _same(a, b)
    kind = _kind(a)
    if kind != _kind(b) or kind not in ("N", "S", "B"):
        return False
    if op == "<":
        return bool(a < b)
    if op == "<=":
        return bool(a <= b)
    if op == ">":
        return bool(a > b)
    return bool(a >= b)


def _get(item: Any, path: tuple) -> Any:
    for step in path:
        if isinstance(step, int):
            if not isinstance(item, list) or step >= len(item):
                return _MISSING
        elif not isinstance(item, dict) or step not in item:
            return _MISSING
        item = item[step]
    return item


# --- errors ---


class _Refused(Exception):
    """A request DynamoDB refuses; the API wrapper turns it into botocore's ClientError."""

    def __init__(self, code: str, message: str, **extra: Any) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.extra = extra


def _invalid(message: str) -> _Refused:
    return _Refused("ValidationException", message)


def _api(operation: str) -> Callable[[Callable[..., dict]], Callable[..., dict]]:
    """A client method: keyword arguments only (as boto3's), under the lock, errors as
    botocore raises them."""

    def wrap(method: Callable[..., dict]) -> Callable[..., dict]:
        @functools.wraps(method)
        def call(self: MemoryDynamoClient, **args: Any) -> dict:
            with self.lock:
                try:
                    return method(self, args)
                except _Refused as refused:
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


# --- expressions ---

# DynamoDB's reserved words (its documentation, "Reserved words in DynamoDB"): an expression
# names an attribute called one of them only through ExpressionAttributeNames.
_RESERVED_WORDS = """
ABORT ABSOLUTE ACTION ADD AFTER AGENT AGGREGATE ALL ALLOCATE ALTER ANALYZE AND ANY ARCHIVE ARE
ARRAY AS ASC ASCII ASENSITIVE ASSERTION ASYMMETRIC AT ATOMIC ATTACH ATTRIBUTE AUTH AUTHORIZATION
AUTHORIZE AUTO AVG BACK BACKUP BASE BATCH BEFORE BEGIN BETWEEN BIGINT BINARY BIT BLOB BLOCK
BOOLEAN BOTH BREADTH BUCKET BULK BY BYTE CALL CALLED CALLING CAPACITY CASCADE CASCADED CASE CAST
CATALOG CHAR CHARACTER CHECK CLASS CLOB CLOSE CLUSTER CLUSTERED CLUSTERING CLUSTERS COALESCE
COLLATE COLLATION COLLECTION COLUMN COLUMNS COMBINE COMMENT COMMIT COMPACT COMPILE COMPRESS
CONDITION CONFLICT CONNECT CONNECTION CONSISTENCY CONSISTENT CONSTRAINT CONSTRAINTS CONSTRUCTOR
CONSUMED CONTINUE CONVERT COPY CORRESPONDING COUNT COUNTER CREATE CROSS CUBE CURRENT CURSOR
CYCLE DATA DATABASE DATE DATETIME DAY DEALLOCATE DEC DECIMAL DECLARE DEFAULT DEFERRABLE DEFERRED
DEFINE DEFINED DEFINITION DELETE DELIMITED DEPTH DEREF DESC DESCRIBE DESCRIPTOR DETACH
DETERMINISTIC DIAGNOSTICS DIRECTORIES DISABLE DISCONNECT DISTINCT DISTRIBUTE DO DOMAIN DOUBLE
DROP DUMP DURATION DYNAMIC EACH ELEMENT ELSE ELSEIF EMPTY ENABLE END EQUAL EQUALS ERROR ESCAPE
ESCAPED EVAL EVALUATE EXCEEDED EXCEPT EXCEPTION EXCEPTIONS EXCLUSIVE EXEC EXECUTE EXISTS EXIT
EXPLAIN EXPLODE EXPORT EXPRESSION EXTENDED EXTERNAL EXTRACT FAIL FALSE FAMILY FETCH FIELDS FILE
FILTER FILTERING FINAL FINISH FIRST FIXED FLATTERN FLOAT FOR FORCE FOREIGN FORMAT FORWARD FOUND
FREE FROM FULL FUNCTION FUNCTIONS GENERAL GENERATE GET GLOB GLOBAL GO GOTO GRANT GREATER GROUP
GROUPING HANDLER HASH HAVE HAVING HEAP HIDDEN HOLD HOUR IDENTIFIED IDENTITY IF IGNORE IMMEDIATE
IMPORT IN INCLUDING INCLUSIVE INCREMENT INCREMENTAL INDEX INDEXED INDEXES INDICATOR INFINITE
INITIALLY INLINE INNER INNTER INOUT INPUT INSENSITIVE INSERT INSTEAD INT INTEGER INTERSECT
INTERVAL INTO INVALIDATE IS ISOLATION ITEM ITEMS ITERATE JOIN KEY KEYS LAG LANGUAGE LARGE LAST
LATERAL LEAD LEADING LEAVE LEFT LENGTH LESS LEVEL LIKE LIMIT LIMITED LINES LIST LOAD LOCAL
LOCALTIME LOCALTIMESTAMP LOCATION LOCATOR LOCK LOCKS LOG LOGED LONG LOOP LOWER MAP MATCH
MATERIALIZED MAX MAXLEN MEMBER MERGE METHOD METRICS MIN MINUS MINUTE MISSING MOD MODE MODIFIES
MODIFY MODULE MONTH MULTI MULTISET NAME NAMES NATIONAL NATURAL NCHAR NCLOB NEW NEXT NO NONE NOT
NULL NULLIF NUMBER NUMERIC OBJECT OF OFFLINE OFFSET OLD ON ONLINE ONLY OPAQUE OPEN OPERATOR
OPTION OR ORDER ORDINALITY OTHER OTHERS OUT OUTER OUTPUT OVER OVERLAPS OVERRIDE OWNER PAD
PARALLEL PARAMETER PARAMETERS PARTIAL PARTITION PARTITIONED PARTITIONS PATH PERCENT PERCENTILE
PERMISSION PERMISSIONS PIPE PIPELINED PLAN POOL POSITION PRECISION PREPARE PRESERVE PRIMARY
PRIOR PRIVATE PRIVILEGES PROCEDURE PROCESSED PROJECT PROJECTION PROPERTY PROVISIONING PUBLIC PUT
QUERY QUIT QUORUM RAISE RANDOM RANGE RANK RAW READ READS REAL REBUILD RECORD RECURSIVE REDUCE
REF REFERENCE REFERENCES REFERENCING REGEXP REGION REINDEX RELATIVE RELEASE REMAINDER RENAME
REPEAT REPLACE REQUEST RESET RESIGNAL RESOURCE RESPONSE RESTORE RESTRICT RESULT RETURN RETURNING
RETURNS REVERSE REVOKE RIGHT ROLE ROLES ROLLBACK ROLLUP ROUTINE ROW ROWS RULE RULES SAMPLE
SATISFIES SAVE SAVEPOINT SCAN SCHEMA SCOPE SCROLL SEARCH SECOND SECTION SEGMENT SEGMENTS SELECT
SELF SEMI SENSITIVE SEPARATE SEQUENCE SERIALIZABLE SESSION SET SETS SHARD SHARE SHARED SHORT
SHOW SIGNAL SIMILAR SIZE SKEWED SMALLINT SNAPSHOT SOME SOURCE SPACE SPACES SPARSE SPECIFIC
SPECIFICTYPE SPLIT SQL SQLCODE SQLERROR SQLEXCEPTION SQLSTATE SQLWARNING START STATE STATIC
STATUS STORAGE STORE STORED STREAM STRING STRUCT STYLE SUB SUBMULTISET SUBPARTITION SUBSTRING
SUBTYPE SUM SUPER SYMMETRIC SYNONYM SYSTEM TABLE TABLESAMPLE TEMP TEMPORARY TERMINATED TEXT THAN
THEN THROUGHPUT TIME TIMESTAMP TIMEZONE TINYINT TO TOKEN TOTAL TOUCH TRAILING TRANSACTION
TRANSFORM TRANSLATE TRANSLATION TREAT TRIGGER TRIM TRUE TRUNCATE TTL TUPLE TYPE UNDER UNDO UNION
UNIQUE UNIT UNKNOWN UNLOGGED UNNEST UNPROCESSED UNSIGNED UNTIL UPDATE UPPER URL USAGE USE USER
USERS USING UUID VACUUM VALUE VALUED VALUES VARCHAR VARIABLE VARIANCE VARINT VARYING VIEW VIEWS
VIRTUAL VOID WAIT WHEN WHENEVER WHERE WHILE WINDOW WITH WITHIN WITHOUT WORK WRAPPED WRITE YEAR
ZONE
"""
_RESERVED = frozenset(_RESERVED_WORDS.split())

_TOKEN = re.compile(
    r"\s*(?:(<>|<=|>=|[=<>(),+\-.\[\]])|([#:][A-Za-z0-9_]+)|([A-Za-z_][A-Za-z0-9_]*)|(\d+))"
)
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_COMPARATORS = ("=", "<>", "<", "<=", ">", ">=")
_UNSUPPORTED_FUNCTIONS = ("size", "contains", "attribute_type")


class _Parsed:
    __slots__ = ("names", "tree", "values")

    def __init__(self, tree: Any, names: frozenset[str], values: frozenset[str]) -> None:
        self.tree = tree
        self.names = names
        self.values = values


class _Parser:
    """Condition, key condition and update expressions, parsed into tuples:

    condition: ("or"|"and", a, b) ("not", a) ("exists"|"not_exists", path)
               ("begins", x, y) ("cmp", op, x, y) ("between", x, lo, hi) ("in", x, (y...))
    operand:   ("path", (step...)) ("value", ":v") ("arith", "+"|"-", x, y)
               ("if_not_exists", path, x) ("list_append", x, y)
    update:    (("set", path, operand) | ("remove", path) | ("add"|"delete", path, operand)...)

    A path's steps are names (`#n` placeholders, resolved when evaluated) and list indexes.
    """

    def __init__(self, kind: str, text: str) -> None:
        self.kind = kind
        self.text = text
        self.tokens: list[str] = []
        pos, text = 0, text.rstrip()
        while pos < len(text):
            match = _TOKEN.match(text, pos)
            if not match:
                raise self.error(text[pos:].strip()[:20])
            self.tokens.append(match.group(match.lastindex or 0))
            pos = match.end()
        if not self.tokens:
            raise _invalid(f"Invalid {kind}: The expression can not be empty;")
        self.pos = 0
        self.names: set[str] = set()
        self.values: set[str] = set()

    def error(self, near: str | None = None) -> _Refused:
        token = near if near is not None else (self.peek() or "<EOF>")
        return _invalid(f'Invalid {self.kind}: Syntax error; token: "{token}", near: "{self.text}"')

    def peek(self, ahead: int = 0) -> str | None:
        at = self.pos + ahead
        return self.tokens[at] if at < len(self.tokens) else None

    def take(self) -> str:
        token = self.peek()
        if token is None:
            raise self.error()
        self.pos += 1
        return token

    def accept(self, token: str) -> bool:
        if self.peek() == token:
            self.pos += 1
            return True
        return False

    def expect(self, token: str) -> None:
        if not self.accept(token):
            raise self.error()

    def keyword(self, word: str) -> bool:
        token = self.peek()
        if token is not None and token.upper() == word:
            self.pos += 1
            return True
        return False

    def call(self, names: Iterable[str]) -> str | None:
        """A function name (followed by its parenthesis), or None."""
        token = self.peek()
        if token in names and self.peek(1) == "(":
            self.pos += 2
            return token
        return None

    def parsed(self, tree: Any) -> _Parsed:
        if self.pos != len(self.tokens):
            raise self.error()
        return _Parsed(tree, frozenset(self.names), frozenset(self.values))

    # paths and operands

    def name(self) -> str:
        token = self.take()
        if token.startswith("#"):
            self.names.add(token)
            return token
        if not _NAME.fullmatch(token):
            raise self.error(token)
        if token.upper() in _RESERVED:
            raise _invalid(
                f"Invalid {self.kind}: Attribute name is a reserved keyword; "
                f"reserved keyword: {token}"
            )
        return token

    def path(self) -> tuple:
        steps: list[Any] = [self.name()]
        while True:
            if self.accept("."):
                steps.append(self.name())
            elif self.accept("["):
                index = self.take()
                if not index.isdigit():
                    raise self.error(index)
                self.expect("]")
                steps.append(int(index))
            else:
                return tuple(steps)

    def operand(self) -> tuple:
        token = self.peek()
        if token is None:
            raise self.error()
        if token in _UNSUPPORTED_FUNCTIONS and self.peek(1) == "(":
            raise NotImplementedError(f"MemoryDynamoClient does not implement {token}()")
        if token.startswith(":"):
            self.pos += 1
            self.values.add(token)
            return ("value", token)
        return ("path", self.path())

    # conditions

    def condition(self) -> tuple:
        node = self.conjunction()
        while self.keyword("OR"):
            node = ("or", node, self.conjunction())
        return node

    def conjunction(self) -> tuple:
        node = self.negation()
        while self.keyword("AND"):
            node = ("and", node, self.negation())
        return node

    def negation(self) -> tuple:
        if self.keyword("NOT"):
            return ("not", self.negation())
        return self.primary()

    def primary(self) -> tuple:
        if self.accept("("):
            node = self.condition()
            self.expect(")")
            return node
        function = self.call(("attribute_exists", "attribute_not_exists", "begins_with"))
        if function == "begins_with":
            subject = self.operand()
            self.expect(",")
            prefix = self.operand()
            self.expect(")")
            return ("begins", subject, prefix)
        if function is not None:
            path = self.path()
            self.expect(")")
            return ("exists" if function == "attribute_exists" else "not_exists", path)
        subject = self.operand()
        if self.keyword("BETWEEN"):
            low = self.operand()
            if not self.keyword("AND"):
                raise self.error()
            return ("between", subject, low, self.operand())
        if self.keyword("IN"):
            self.expect("(")
            options = [self.operand()]
            while self.accept(","):
                options.append(self.operand())
            self.expect(")")
            return ("in", subject, tuple(options))
        op = self.take()
        if op not in _COMPARATORS:
            raise self.error(op)
        return ("cmp", op, subject, self.operand())

    # updates

    def update(self) -> tuple:
        actions: list[tuple] = []
        clauses: set[str] = set()
        while self.peek() is not None:
            clause = self.take().upper()
            if clause not in ("SET", "REMOVE", "ADD", "DELETE"):
                raise self.error(clause)
            if clause in clauses:
                raise _invalid(
                    f'Invalid UpdateExpression: The "{clause}" section can only be used once in '
                    "an update expression;"
                )
            clauses.add(clause)
            while True:
                path = self.path()
                if clause == "SET":
                    self.expect("=")
                    actions.append(("set", path, self.value()))
                elif clause == "REMOVE":
                    actions.append(("remove", path))
                else:
                    actions.append((clause.lower(), path, self.operand()))
                if not self.accept(","):
                    break
        return tuple(actions)

    def value(self) -> tuple:
        node = self.set_operand()
        while self.peek() in ("+", "-"):
            node = ("arith", self.take(), node, self.set_operand())
        return node

    def set_operand(self) -> tuple:
        function = self.call(("if_not_exists", "list_append"))
        if function == "if_not_exists":
            path = self.path()
            self.expect(",")
            default = self.set_operand()
            self.expect(")")
            return ("if_not_exists", path, default)
        if function == "list_append":
            first = self.set_operand()
            self.expect(",")
            second = self.set_operand()
            self.expect(")")
            return ("list_append", first, second)
        return self.operand()


@functools.lru_cache(maxsize=4096)
def _parse(kind: str, text: str) -> _Parsed:
    parser = _Parser(kind, text)
    if kind == "UpdateExpression":
        return parser.parsed(parser.update())
    return parser.parsed(parser.condition())


def _placeholders(
    names: dict[str, str] | None, values: dict[str, Any] | None, parsed: Iterable[_Parsed | None]
) -> None:
    """Every name and value given is used, and every one used is given."""
    expressions = [p for p in parsed if p is not None]
    used_names = frozenset().union(*(p.names for p in expressions))
    used_values = frozenset().union(*(p.values for p in expressions))
    for given, used, what in ((names, used_names, "Names"), (values, used_values, "Values")):
        if given is None:
            given = {}
        elif not expressions:
            raise _invalid(
                f"ExpressionAttribute{what} can only be specified when using expressions"
            )
        elif not given:
            raise _invalid(f"ExpressionAttribute{what} must not be empty")
        unused = sorted(set(given) - used)
        if unused:
            raise _invalid(
                f"Value provided in ExpressionAttribute{what} unused in expressions: "
                f"keys: {{{', '.join(unused)}}}"
            )
        undefined = sorted(used - set(given))
        if undefined and what == "Names":
            raise _invalid(
                "An expression attribute name used in the document path is not defined; "
                f"attribute name: {undefined[0]}"
            )
        if undefined:
            raise _invalid(
                "An expression attribute value used in expression is not defined; "
                f"attribute value: {undefined[0]}"
            )


class _Evaluation:
    """Parsed expressions evaluated with one request's names and values."""

    def __init__(self, names: dict[str, str] | None, values: dict[str, Any] | None) -> None:
        self.names = names or {}
        self.values = deserialize(values) if values else {}

    def path(self, steps: tuple) -> tuple:
        return tuple(
            self.names[s] if isinstance(s, str) and s.startswith("#") else s for s in steps
        )

    def operand(self, node: tuple, item: dict[str, Any]) -> Any:
        if node[0] == "value":
            return self.values[node[1]]
        return _get(item, self.path(node[1]))

    def holds(self, node: tuple, item: dict[str, Any]) -> bool:
        tag = node[0]
        if tag == "or":
            return self.holds(node[1], item) or self.holds(node[2], item)
        if tag == "and":
            return self.holds(node[1], item) and self.holds(node[2], item)
        if tag == "not":
            return not self.holds(node[1], item)
        if tag == "exists":
            return _get(item, self.path(node[1])) is not _MISSING
        if tag == "not_exists":
            return _get(item, self.path(node[1])) is _MISSING
        if tag == "cmp":
            return _compare(node[1], self.operand(node[2], item), self.operand(node[3], item))
        if tag == "between":
            subject = self.operand(node[1], item)
            return _compare(">=", subject, self.operand(node[2], item)) and _compare(
                "<=", subject, self.operand(node[3], item)
            )
        if tag == "in":
            subject = self.operand(node[1], item)
            return any(_compare("=", subject, self.operand(o, item)) for o in node[2])
        if tag == "begins":
            subject, prefix = self.operand(node[1], item), self.operand(node[2], item)
            if subject is _MISSING or prefix is _MISSING:
                return False
            kind = _kind(subject)
            return kind in ("S", "B") and kind == _kind(prefix) and subject.startswith(prefix)
        raise _invalid(f"Invalid ConditionExpression: {tag}")

    # updates

    def value(self, node: tuple, item: dict[str, Any]) -> Any:
        tag = node[0]
        if tag == "value":
            return self.values[node[1]]
        if tag == "path":
            found = _get(item, self.path(node[1]))
            if found is _MISSING:
                raise _invalid(
                    "The provided expression refers to an attribute that does not exist in the item"
                )
            return found
        if tag == "if_not_exists":
            found = _get(item, self.path(node[1]))
            return self.value(node[2], item) if found is _MISSING else found
        if tag == "list_append":
            first, second = self.value(node[1], item), self.value(node[2], item)
            for operand in (first, second):
                if not isinstance(operand, list):
                    raise _invalid(
                        "Invalid UpdateExpression: Incorrect operand type for operator or "
                        "function; operator or function: list_append, operand type: "
                        f"{_kind(operand)}"
                    )
            return [*first, *second]
        if tag == "arith":
            left, right = self.value(node[2], item), self.value(node[3], item)
            for operand in (left, right):
                if _kind(operand) != "N":
                    raise _invalid(
                        "Invalid UpdateExpression: Incorrect operand type for operator or "
                        f"function; operator or function: {node[1]}, operand type: "
                        f"{_kind(operand)}"
                    )
            return left + right if node[1] == "+" else left - right
        raise _invalid(f"Invalid UpdateExpression: {tag}")

    def apply(
        self, actions: tuple, item: dict[str, Any], key_names: Iterable[str]
    ) -> dict[str, Any]:
        """The item after the update; every operand is read from the item before it."""
        planned: list[tuple[str, tuple, Any]] = []
        for action in actions:
            verb, path = action[0], self.path(action[1])
            if path[0] in key_names:
                raise _invalid(
                    "One or more parameter values were invalid: Cannot update attribute "
                    f"{path[0]}. This attribute is part of the key"
                )
            value = None
            if verb == "set":
                value = self.value(action[2], item)
            elif verb in ("add", "delete"):
                value = self._add_or_delete(verb, _get(item, path), self.value(action[2], item))
            planned.append((verb, path, value))
        for i, (_, first, _) in enumerate(planned):
            for _, second, _ in planned[i + 1 :]:
                if first[: len(second)] == second or second[: len(first)] == first:
                    raise _invalid(
                        "Invalid UpdateExpression: Two document paths overlap with each other; "
                        "must remove or rewrite one of these paths; "
                        f"path one: {list(first)}, path two: {list(second)}"
                    )
        new = dict(item)
        copied: set[str] = set()
        for verb, path, value in planned:
            top = path[0]
            if len(path) > 1 and top in new and top not in copied:
                new[top] = copy.deepcopy(new[top])  # never change the old item's values
                copied.add(top)
            if verb == "remove" or value is _MISSING:
                _remove(new, path)
            else:
                _set(new, path, value)
        return new

    @staticmethod
    def _add_or_delete(verb: str, current: Any, operand: Any) -> Any:
        kind = _kind(operand)
        if verb == "add" and kind == "N" and current is _MISSING:
            return operand
        if verb == "add" and kind == "N" and _kind(current) == "N":
            return current + operand
        if kind in ("SS", "NS", "BS") and current is _MISSING:
            return operand if verb == "add" else _MISSING
        if kind in ("SS", "NS", "BS") and _kind(current) == kind:
            result = current | operand if verb == "add" else current - operand
            return result if result else _MISSING
        raise _invalid("An operand in the update expression has an incorrect data type")


def _invalid_path() -> _Refused:
    return _invalid("The document path provided in the update expression is invalid for update")


def _set(item: dict[str, Any], path: tuple, value: Any) -> None:
    if len(path) == 1:
        item[path[0]] = value
        return
    parent, last = _get(item, path[:-1]), path[-1]
    if isinstance(last, int) and isinstance(parent, list):
        if last < len(parent):
            parent[last] = value
        else:
            parent.append(value)
    elif isinstance(last, str) and isinstance(parent, dict):
        parent[last] = value
    else:
        raise _invalid_path()


def _remove(item: dict[str, Any], path: tuple) -> None:
    if len(path) == 1:
        item.pop(path[0], None)
        return
    parent, last = _get(item, path[:-1]), path[-1]
    if isinstance(last, int) and isinstance(parent, list):
        if last < len(parent):
            del parent[last]
    elif isinstance(last, str) and isinstance(parent, dict):
        parent.pop(last, None)
    else:
        raise _invalid_path()


# --- tables and indexes ---


def _sort_value(entry: tuple[Any, tuple]) -> Any:
    return entry[0]


class _Index:
    """An index's items by partition key value, each partition a list of (sort key value,
    table key) kept sorted. The table's own key is an index too (`name` None)."""

    def __init__(
        self,
        name: str | None,
        key_schema: list[dict[str, str]],
        projection: dict[str, Any] | None,
        table_keys: tuple[str, ...],
    ) -> None:
        self.name = name
        self.hash_key = next(k["AttributeName"] for k in key_schema if k["KeyType"] == "HASH")
        ranges = [k["AttributeName"] for k in key_schema if k["KeyType"] == "RANGE"]
        self.range_key: str | None = ranges[0] if ranges else None
        self.key_names: tuple[str, ...] = (self.hash_key, *ranges)
        self.partitions: dict[Any, list[tuple[Any, tuple]]] = {}
        projection = projection or {"ProjectionType": "ALL"}
        self.projected: tuple[str, ...] | None = None  # None: every attribute
        if projection["ProjectionType"] != "ALL":
            extra = projection.get("NonKeyAttributes", [])
            self.projected = tuple(dict.fromkeys([*table_keys, *self.key_names, *extra]))

    def _entry(self, key: tuple, item: dict[str, Any]) -> tuple[Any, tuple[Any, tuple]] | None:
        partition = item.get(self.hash_key, _MISSING)
        if partition is _MISSING:
            return None
        if self.range_key is None:
            return partition, ((), key)
        sort = item.get(self.range_key, _MISSING)
        if sort is _MISSING:
            return None  # a sparse index: only the items with its key attributes
        return partition, (sort, key)

    def add(self, key: tuple, item: dict[str, Any]) -> None:
        found = self._entry(key, item)
        if found is not None:
            bisect.insort(self.partitions.setdefault(found[0], []), found[1])

    def remove(self, key: tuple, item: dict[str, Any]) -> None:
        found = self._entry(key, item)
        if found is None:
            return
        partition, entry = found
        entries = self.partitions[partition]
        at = bisect.bisect_left(entries, entry)
        assert entries[at] == entry, (self.name, entry)
        del entries[at]
        if not entries:
            del self.partitions[partition]

    def project(self, item: dict[str, Any]) -> dict[str, Any]:
        if self.projected is None:
            return item
        return {name: item[name] for name in self.projected if name in item}


def _too_long(value: Any, sort_key: bool) -> bool:
    """A string or binary key value over DynamoDB's bound (its UTF-8 bytes)."""
    if isinstance(value, str):
        size = len(value.encode("utf-8"))
    elif isinstance(value, bytes | bytearray):
        size = len(value)
    else:
        return False  # a number
    return size > (SORT_KEY_LIMIT if sort_key else PARTITION_KEY_LIMIT)


class _Table:
    def __init__(self, definition: dict[str, Any]) -> None:
        self.name: str = definition["TableName"]
        self.definition = definition
        self.types = {
            a["AttributeName"]: a["AttributeType"] for a in definition["AttributeDefinitions"]
        }
        self.primary = _Index(None, definition["KeySchema"], None, ())
        self.key_names = self.primary.key_names
        self.indexes: dict[str, _Index] = {}
        self.global_indexes: set[str] = set()
        for kind in ("GlobalSecondaryIndexes", "LocalSecondaryIndexes"):
            for index in definition.get(kind, []):
                name = index["IndexName"]
                self.indexes[name] = _Index(
                    name, index["KeySchema"], index["Projection"], self.key_names
                )
                if kind == "GlobalSecondaryIndexes":
                    self.global_indexes.add(name)
        self.all_indexes = (self.primary, *self.indexes.values())
        self.items: dict[tuple, dict[str, Any]] = {}
        self.sizes: dict[tuple, int] = {}
        self.ttl_attribute: str | None = None

    def key(self, attrs: dict[str, Any]) -> tuple:
        """The key a Key parameter names: exactly the key attributes, typed, not empty."""
        if set(attrs) != set(self.key_names):
            raise _invalid("The provided key element does not match the schema")
        for name in self.key_names:
            self._check_key_value(name, attrs[name])
        return tuple(attrs[name] for name in self.key_names)

    @property
    def range_key(self) -> str | None:
        return self.primary.range_key

    def _check_key_value(self, name: str, value: Any, index: str | None = None) -> None:
        expected, actual = self.types[name], _kind(value)
        if actual != expected and index is None:
            raise _invalid(
                "One or more parameter values were invalid: Type mismatch for key "
                f"{name} expected: {expected} actual: {actual}"
            )
        if actual != expected:
            raise _invalid(
                "One or more parameter values were invalid: Type mismatch for Index Key "
                f"{name} Expected: {expected} Actual: {actual} IndexName: {index}"
            )
        if actual in ("S", "B") and index is None and _too_long(value, name == self.range_key):
            raise _invalid(
                "Hash primary key values must be under 2048 bytes, and range primary key "
                "values must be under 1024 bytes"
            )
        if actual in ("S", "B") and not value and index is None:
            raise _invalid(
                "One or more parameter values are not valid. The AttributeValue for a key "
                f"attribute cannot contain an empty string value. Key: {name}"
            )
        if actual in ("S", "B") and not value:
            raise _invalid(
                "One or more parameter values are not valid. A value specified for a secondary "
                "index key is not supported. The AttributeValue for a key attribute cannot "
                f"contain an empty string value. IndexName: {index}, IndexKey: {name}"
            )

    def check(self, item: dict[str, Any], *, updated: bool = False) -> tuple[tuple, int]:
        """An item's key and size, if the table can hold it."""
        for name in self.key_names:
            if name not in item:
                raise _invalid(
                    f"One or more parameter values were invalid: Missing the key {name} in the item"
                )
            self._check_key_value(name, item[name])
        for index in self.indexes.values():
            for name in index.key_names:
                if name in item:
                    self._check_key_value(name, item[name], index.name)
        size = capacity.item_size(item)
        if size > ITEM_LIMIT:
            what = "Item size to update" if updated else "Item size"
            raise _invalid(f"{what} has exceeded the maximum allowed size")
        return tuple(item[name] for name in self.key_names), size

    def index(self, name: str | None) -> _Index:
        if name is None:
            return self.primary
        if name not in self.indexes:
            raise _invalid(f"The table does not have the specified index: {name}")
        return self.indexes[name]

    def write(self, key: tuple, item: dict[str, Any] | None, size: int) -> None:
        old = self.items.get(key)
        if old is not None:
            for index in self.all_indexes:
                index.remove(key, old)
        if item is None:
            self.items.pop(key, None)
            self.sizes.pop(key, None)
            return
        self.items[key] = item
        self.sizes[key] = size
        for index in self.all_indexes:
            index.add(key, item)

    def page_key(self, index: _Index, item: dict[str, Any]) -> dict[str, Any]:
        """LastEvaluatedKey: the table's key attributes and the index's."""
        return {name: item[name] for name in dict.fromkeys([*self.key_names, *index.key_names])}


# --- the client ---

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


class MemoryDynamoClient:
    """The boto3 DynamoDB client methods `Dynamo` calls, on dicts of items."""

    def __init__(self) -> None:
        self.tables: dict[str, _Table] = {}
        self.lock = threading.RLock()
        self.fail_after_writes: int | None = None
        self.largest_item = 0
        self.largest_transaction = 0

    # --- tables ---

    def _table(self, name: str) -> _Table:
        if name not in self.tables:
            raise _Refused(
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
            raise _Refused("ResourceInUseException", f"Table already exists: {name}")
        self.tables[name] = _Table(args)
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

    def _written(self) -> None:
        if self.fail_after_writes is not None:
            if self.fail_after_writes <= 0:
                raise Crash("crashed before this write")
            self.fail_after_writes -= 1

    def _store(self, table: _Table, key: tuple, item: dict[str, Any] | None, size: int) -> None:
        if item is not None:
            self.largest_item = max(self.largest_item, size)
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
            condition = _parse("ConditionExpression", args["ConditionExpression"])
        if op == "Update":
            update = _parse("UpdateExpression", args["UpdateExpression"])
        names, values = args.get("ExpressionAttributeNames"), args.get("ExpressionAttributeValues")
        _placeholders(names, values, [condition, update])
        put: tuple[dict[str, Any], int] | None = None
        if op == "Put":
            item = deserialize(args["Item"])
            key, size = table.check(item)
            put = (item, size)
        else:
            key = table.key(deserialize(args["Key"]))
        return table, key, put, condition, update, _Evaluation(names, values)

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
            raise _invalid("Return values set to invalid value")
        plan = self._plan(op, args)
        holds, old, new, size = self._outcome(op, plan)
        if not holds:
            raise _Refused(
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
            raise _invalid(
                "1 validation error detected at 'transactItems' failed to satisfy constraint: "
                f"Member must have length less than or equal to {TRANSACTION_LIMIT}."
            )
        self.largest_transaction = max(self.largest_transaction, len(entries))
        plans, seen = [], set()
        for entry in entries:
            if len(entry) != 1:
                raise _invalid("TransactItems can only contain one of Check, Put, Update or Delete")
            ((op, request),) = entry.items()
            op = {"ConditionCheck": "Check"}.get(op, op)
            if op not in ("Put", "Update", "Delete", "Check"):
                raise _invalid(f"Unsupported transaction operation: {op}")
            if op == "Check" and not request.get("ConditionExpression"):
                raise _invalid("A ConditionCheck needs a ConditionExpression")
            plan = self._plan(op, request)
            if (request["TableName"], plan[1]) in seen:
                raise _invalid("Transaction request cannot include multiple operations on one item")
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
            raise _Refused(
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
            raise _invalid("Too many items requested for the BatchGetItem call")
        planned = []
        for name, request in requests.items():
            _only("BatchGetItem", request, ["Keys", "ConsistentRead"])
            table = self._table(name)
            keys = [table.key(deserialize(k)) for k in request["Keys"]]
            if len(set(keys)) != len(keys):
                raise _invalid("Provided list of item keys contains duplicates")
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
            raise _invalid("Too many items requested for the BatchWriteItem call")
        planned: list[tuple[_Table, tuple, dict[str, Any] | None, int]] = []
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
                    raise _invalid("Provided list of item keys contains duplicates")
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
              "Limit", "ExclusiveStartKey", "ConsistentRead"])  # fmt: skip
        table = self._table(args["TableName"])
        index = table.index(args.get("IndexName"))
        if args.get("ConsistentRead") and index.name in table.global_indexes:
            raise _invalid("Consistent reads are not supported on global secondary indexes")
        parsed = _parse("KeyConditionExpression", args["KeyConditionExpression"])
        names, values = args.get("ExpressionAttributeNames"), args.get("ExpressionAttributeValues")
        _placeholders(names, values, [parsed])
        partition, sort = self._key_condition(table, index, parsed.tree, _Evaluation(names, values))
        entries = index.partitions.get(partition, [])
        low, high = self._sort_range(entries, sort)
        forward = args.get("ScanIndexForward", True)
        if "ExclusiveStartKey" in args:
            start = deserialize(args["ExclusiveStartKey"])
            if set(start) != {*table.key_names, *index.key_names}:
                raise _invalid("The provided starting key is invalid")
            sort_value = start[index.range_key] if index.range_key else ()
            mark = (sort_value, table.key({name: start[name] for name in table.key_names}))
            if forward:
                low = max(low, bisect.bisect_right(entries, mark, low, high))
            else:
                high = min(high, bisect.bisect_left(entries, mark, low, high))
        order = range(low, high) if forward else range(high - 1, low - 1, -1)
        return self._page(table, index, (entries[i][1] for i in order), args.get("Limit"))

    @staticmethod
    def _key_condition(
        table: _Table, index: _Index, tree: tuple, evaluation: _Evaluation
    ) -> tuple[Any, tuple | None]:
        """The partition key value, and the sort key condition: (op, value...) or None."""
        terms = [tree[1], tree[2]] if tree[0] == "and" else [tree]
        partition: Any = _MISSING
        sort: tuple | None = None
        for term in terms:
            if term[0] not in ("cmp", "between", "begins"):
                raise _invalid("Invalid KeyConditionExpression: unsupported key condition")
            subject = term[2] if term[0] == "cmp" else term[1]
            given = term[3:] if term[0] == "cmp" else term[2:]
            if subject[0] != "path" or any(o[0] != "value" for o in given):
                raise _invalid("Invalid KeyConditionExpression: unsupported key condition")
            attribute = evaluation.path(subject[1])
            operands = [evaluation.values[o[1]] for o in given]
            if term[0] == "cmp" and term[1] == "=" and attribute == (index.hash_key,):
                partition = operands[0]
            elif index.range_key is not None and attribute == (index.range_key,):
                if term[0] == "cmp" and term[1] == "<>":
                    raise _invalid("Invalid KeyConditionExpression: unsupported operator <>")
                sort = (term[1] if term[0] == "cmp" else term[0], *operands)
            else:
                raise _invalid(f"Query condition missed key schema element: {index.hash_key}")
            for value in operands:
                if attribute[0] == index.range_key and _too_long(value, sort_key=True):
                    raise _invalid(
                        "One or more parameter values were invalid: Aggregated size of all "
                        "range keys has exceeded the size limit of 1024 bytes"
                    )
                if _kind(value) != table.types[attribute[0]]:
                    raise _invalid(
                        "One or more parameter values were invalid: Condition parameter type "
                        "does not match schema type"
                    )
                if attribute[0] == index.hash_key and value in ("", b""):
                    raise _invalid(
                        "One or more parameter values are not valid. The AttributeValue for a "
                        f"key attribute cannot contain an empty string value. Key: {index.hash_key}"
                    )
        if partition is _MISSING:
            raise _invalid(f"Query condition missed key schema element: {index.hash_key}")
        if sort is not None and sort[0] == "between" and sort[1] > sort[2]:
            raise _invalid(
                "Invalid KeyConditionExpression: The BETWEEN operator requires upper bound to "
                "be greater than or equal to lower bound"
            )
        if sort is not None and sort[0] == "begins" and _kind(sort[1]) == "N":
            raise _invalid(
                "Invalid KeyConditionExpression: Incorrect operand type for operator or "
                "function; operator or function: begins_with, operand type: N"
            )
        return partition, sort

    @staticmethod
    def _sort_range(entries: list[tuple[Any, tuple]], sort: tuple | None) -> tuple[int, int]:
        """The slice of a partition's entries that the sort key condition selects."""
        if sort is None:
            return 0, len(entries)
        op, value = sort[0], sort[1]
        left = bisect.bisect_left(entries, value, key=_sort_value)
        if op == "begins":
            high = left
            while high < len(entries) and entries[high][0].startswith(value):
                high += 1
            return left, high
        right = bisect.bisect_right(entries, value, key=_sort_value)
        bounds = {"=": (left, right), "<": (0, left), "<=": (0, right),
                  ">": (right, len(entries)), ">=": (left, len(entries))}  # fmt: skip
        if op == "between":
            return left, bisect.bisect_right(entries, sort[2], key=_sort_value)
        return bounds[op]

    @staticmethod
    def _page(
        table: _Table, index: _Index, keys: Iterable[tuple], limit: int | None
    ) -> dict[str, Any]:
        """Items in order up to Limit or 1 MB; LastEvaluatedKey when the page stopped there."""
        if limit is not None and limit < 1:
            raise _invalid("Limit must be greater than or equal to 1")
        items: list[dict[str, Any]] = []
        read = 0
        last: dict[str, Any] | None = None
        for key in keys:
            item = table.items[key]
            projected = index.project(item)
            items.append(serialize(projected))
            read += table.sizes[key] if projected is item else capacity.item_size(projected)
            if (limit is not None and len(items) >= limit) or read >= PAGE_LIMIT:
                last = table.page_key(index, item)
                break
        response: dict[str, Any] = {"Items": items, "Count": len(items), "ScannedCount": len(items)}
        if last is not None:
            response["LastEvaluatedKey"] = serialize(last)
        return response

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
        return self._page(table, table.primary, keys[start:], args.get("Limit"))
