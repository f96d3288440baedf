"""DynamoDB's expression grammar: condition, key condition and update expressions parsed into
trees (evaluation.py evaluates them), reserved words, and the check that every placeholder
given is used and every one used is given."""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable
from typing import Any

from .errors import Refused, invalid

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


class Parsed:
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
            raise invalid(f"Invalid {kind}: The expression can not be empty;")
        self.pos = 0
        self.names: set[str] = set()
        self.values: set[str] = set()

    def error(self, near: str | None = None) -> Refused:
        token = near if near is not None else (self.peek() or "<EOF>")
        return invalid(f'Invalid {self.kind}: Syntax error; token: "{token}", near: "{self.text}"')

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

    def parsed(self, tree: Any) -> Parsed:
        if self.pos != len(self.tokens):
            raise self.error()
        return Parsed(tree, frozenset(self.names), frozenset(self.values))

    # paths and operands

    def name(self) -> str:
        token = self.take()
        if token.startswith("#"):
            self.names.add(token)
            return token
        if not _NAME.fullmatch(token):
            raise self.error(token)
        if token.upper() in _RESERVED:
            raise invalid(
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
                raise invalid(
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
def parse(kind: str, text: str) -> Parsed:
    parser = _Parser(kind, text)
    if kind == "UpdateExpression":
        return parser.parsed(parser.update())
    return parser.parsed(parser.condition())


def placeholders(
    names: dict[str, str] | None, values: dict[str, Any] | None, parsed: Iterable[Parsed | None]
) -> None:
    """Every name and value given is used, and every one used is given."""
    expressions = [p for p in parsed if p is not None]
    used_names = frozenset().union(*(p.names for p in expressions))
    used_values = frozenset().union(*(p.values for p in expressions))
    for given, used, what in ((names, used_names, "Names"), (values, used_values, "Values")):
        if given is None:
            given = {}
        elif not expressions:
            raise invalid(f"ExpressionAttribute{what} can only be specified when using expressions")
        elif not given:
            raise invalid(f"ExpressionAttribute{what} must not be empty")
        unused = sorted(set(given) - used)
        if unused:
            raise invalid(
                f"Value provided in ExpressionAttribute{what} unused in expressions: "
                f"keys: {{{', '.join(unused)}}}"
            )
        undefined = sorted(used - set(given))
        if undefined and what == "Names":
            raise invalid(
                "An expression attribute name used in the document path is not defined; "
                f"attribute name: {undefined[0]}"
            )
        if undefined:
            raise invalid(
                "An expression attribute value used in expression is not defined; "
                f"attribute value: {undefined[0]}"
            )
