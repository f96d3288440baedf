"""The whole contract fuzzed: every operation of docs/openapi.json driven
with generated valid and invalid bodies against a running `groupcoord serve`.

Every answer must keep the document's promises:

1. never a 5xx;
2. every 4xx carries the documented error shape, {"errorCode": int, "errorMessage": str};
3. every answer (200, 202, 4xx) is a status the document lists for the operation, and its body
   (and the headers the document gives it) validate against what the document says for that
   operation and status;
4. a rejected request (any 4xx) changes nothing: a full Scan of the server's table, sorted, is
   the same before and after it.

The requests: first a fixed table, in the order a group lives, so that what one request stores
under a hostile key is read back by the next ones (test_lifecycle_requests): each operation's
skeleton request (SKELETONS); the skeleton with hostile ids ('#', '%', '/', NUL, emoji, a lone
surrogate, 300 characters, empty) in each of its id fields, and in Kafka-Client-Id; the skeleton
with each of its lists holding an entry twice. Then each operation fuzzed by Hypothesis
(test_fuzz_operation) with a mix of schemathesis's positive and negative generation from the
document itself and hand-made requests built on the skeleton: hostile ids, wrong types, missing
fields, huge and non-integral numbers, over-long strings and lists, bodies that are not (quite)
JSON, an empty body, a body over 1 MiB.

Each phase has a `groupcoord serve` of its own on a table of its own (so the table's snapshot is
only its requests'), with the sweeper and the barrier holds off: nothing but the requests
changes the table, and no request waits. Hypothesis runs derandomized, so CI sees the same requests
every run.
"""

from __future__ import annotations

import base64
import copy
import json
import os
import shlex
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import boto3
import pytest
import requests
import schemathesis
from botocore.config import Config as BotoConfig
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator
from referencing import Registry
from referencing.jsonschema import DRAFT202012
from schemathesis import GenerationMode

from tests.support.servers import IMMEDIATE_INSTALLS, running_serve, unique_table

DOC_PATH = Path(__file__).resolve().parents[2] / "docs" / "openapi.json"
DOC: dict[str, Any] = json.loads(DOC_PATH.read_text())
PREFIX = "/v1/"

# Requests are sent in the order a group lives, so that the state one leaves is read by the next.
LIFECYCLE = [
    "create-topics",
    "create-partitions",
    "metadata",
    "find-coordinator",
    "join-group",
    "sync-group",
    "heartbeat",
    "consumer-group-heartbeat",
    "streams-group-heartbeat",
    "offset-commit",
    "offset-fetch",
    "offset-delete",
    "list-groups",
    "describe-groups",
    "consumer-group-describe",
    "streams-group-describe",
    "describe-group-activity",
    "leave-group",
    "delete-groups",
    "delete-topics",
]
DOCUMENTED = sorted(path[len(PREFIX) :] for path in DOC["paths"])
# Every documented operation is fuzzed, including one added after this file was written.
OPERATIONS = [api for api in LIFECYCLE if api in DOCUMENTED] + [
    api for api in DOCUMENTED if api not in LIFECYCLE
]

SERVE_SETTINGS = {
    **IMMEDIATE_INSTALLS,
    # Nothing but the requests may change the table: no sweeps during the run ...
    "groupcoord.sweep.interval.ms": "3600000",
    # ... and no request waits at a barrier (a join answers 202 at once instead of holding).
    "groupcoord.barrier.hold.ms": "0",
    "group.initial.rebalance.delay.ms": "0",
    "group.min.session.timeout.ms": "1000",
    # Every request through the authorizer (the fuzzer's requests carry no identity: they are
    # User:ANONYMOUS, made a super user, so that every API is served and the ACL APIs too).
    "groupcoord.authorizer.enabled": "true",
    "super.users": "User:ANONYMOUS",
}

EXAMPLES_PER_OPERATION = 25
FUZZ_SETTINGS = settings(
    max_examples=EXAMPLES_PER_OPERATION,
    deadline=None,
    derandomize=True,
    database=None,
    print_blob=False,
    phases=[Phase.explicit, Phase.reuse, Phase.generate, Phase.shrink],
    suppress_health_check=[
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
        HealthCheck.large_base_example,
        HealthCheck.filter_too_much,
    ],
)

# ---------------------------------------------------------------------------------------------
# The document: which answers each operation may give, and the validators of their bodies.

DOC_URI = "urn:groupcoord:openapi"
REGISTRY = Registry().with_resource(DOC_URI, DRAFT202012.create_resource(DOC))


def _pointer(*parts: str) -> str:
    return "#/" + "/".join(part.replace("~", "~0").replace("/", "~1") for part in parts)


def _deref(node: dict[str, Any], where: tuple[str, ...]) -> tuple[dict[str, Any], tuple[str, ...]]:
    """An OpenAPI object that may be a $ref, resolved, with its location in the document."""
    while "$ref" in node:
        ref = node["$ref"]
        assert ref.startswith("#/"), ref
        where = tuple(part.replace("~1", "/").replace("~0", "~") for part in ref[2:].split("/"))
        node = DOC
        for part in where:
            node = node[part]
    return node, where


@dataclass(frozen=True)
class Documented:
    """What the document says one status of one operation answers."""

    validator: Draft202012Validator | None  # None: the document gives no body
    headers: frozenset[str]


def _documented_answers(api: str) -> dict[int, Documented]:
    operation_where = ("paths", PREFIX + api, "post")
    operation = DOC["paths"][PREFIX + api]["post"]
    answers = {}
    for status, response in operation["responses"].items():
        response, where = _deref(response, (*operation_where, "responses", status))
        validator = None
        if "application/json" in response.get("content", {}):
            pointer = _pointer(*where, "content", "application/json", "schema")
            validator = Draft202012Validator({"$ref": DOC_URI + pointer}, registry=REGISTRY)
        headers = frozenset(name.lower() for name in response.get("headers", {}))
        answers[int(status)] = Documented(validator, headers)
    return answers


ANSWERS = {api: _documented_answers(api) for api in DOCUMENTED}
REQUEST_VALIDATORS = {
    api: Draft202012Validator(
        {
            "$ref": DOC_URI
            + _pointer("paths", PREFIX + api, "post", "requestBody", "content")
            + "/application~1json/schema"
        },
        registry=REGISTRY,
    )
    for api in DOCUMENTED
}

# ---------------------------------------------------------------------------------------------
# One meaningful request of each operation, and the paths of its fields that name something
# (groups, members, instances, topics): the fields that end up in DynamoDB keys.

GROUP = "fuzz-g"
MEMBER = "fuzz-m"
INSTANCE = "fuzz-i"
TOPIC = "fuzz-t"
OFFSETS_GROUP = "fuzz-o"

Path_ = tuple[str | int, ...]


@dataclass(frozen=True)
class Skeleton:
    body: dict[str, Any]
    ids: tuple[Path_, ...]
    # Id fields whose hostile values are sent in the first join of a group of their own (a new
    # groupId), where the group is written with them; in the skeleton's group they would only
    # meet an in-band error (a protocol that does not match the group's, say).
    fresh: tuple[Path_, ...] = ()


SKELETONS: dict[str, Skeleton] = {
    "create-topics": Skeleton(
        {
            "topics": [
                {
                    "name": TOPIC,
                    "numPartitions": 2,
                    "replicationFactor": -1,
                    "configs": [{"name": "retention.ms", "value": "60000"}],
                }
            ],
            "timeoutMs": 1000,
            "validateOnly": False,
        },
        (("topics", 0, "name"),),
    ),
    "create-partitions": Skeleton(
        {"topics": [{"name": TOPIC, "count": 3}], "timeoutMs": 1000, "validateOnly": False},
        (("topics", 0, "name"),),
    ),
    "metadata": Skeleton(
        {"topics": [{"name": TOPIC}], "allowAutoTopicCreation": True},
        (("topics", 0, "name"),),
    ),
    "find-coordinator": Skeleton(
        {"keyType": 0, "coordinatorKeys": [GROUP]}, (("coordinatorKeys", 0),)
    ),
    "join-group": Skeleton(
        {
            "groupId": GROUP,
            "memberId": "",
            "groupInstanceId": INSTANCE,
            "protocolType": "consumer",
            "protocols": [{"name": "range", "metadata": ""}],
            "sessionTimeoutMs": 10000,
            "rebalanceTimeoutMs": 10000,
            "reason": "fuzz",
        },
        (("groupId",), ("memberId",), ("groupInstanceId",), ("protocols", 0, "name")),
        fresh=(("protocols", 0, "name"),),
    ),
    "sync-group": Skeleton(
        {
            "groupId": GROUP,
            "generationId": 1,
            "memberId": MEMBER,
            "groupInstanceId": INSTANCE,
            "protocolType": "consumer",
            "protocolName": "range",
            "assignments": [{"memberId": MEMBER, "assignment": ""}],
        },
        (("groupId",), ("memberId",), ("groupInstanceId",), ("assignments", 0, "memberId")),
    ),
    "heartbeat": Skeleton(
        {"groupId": GROUP, "generationId": 1, "memberId": MEMBER, "groupInstanceId": INSTANCE},
        (("groupId",), ("memberId",), ("groupInstanceId",)),
    ),
    "consumer-group-heartbeat": Skeleton(
        {
            "groupId": GROUP + "-c",
            "memberId": MEMBER,
            "memberEpoch": 0,
            "instanceId": INSTANCE,
            "rackId": "rack-a",
            "rebalanceTimeoutMs": 10000,
            "serverAssignor": "uniform",
            "subscribedTopicNames": [TOPIC],
            "topicPartitions": [],
        },
        (("groupId",), ("memberId",), ("instanceId",), ("subscribedTopicNames", 0)),
    ),
    "streams-group-heartbeat": Skeleton(
        {
            "groupId": GROUP + "-s",
            "memberId": MEMBER,
            "memberEpoch": 0,
            "rackId": "rack-a",
            "rebalanceTimeoutMs": 10000,
            "processId": "process-1",
            "userEndpoint": {"host": "127.0.0.1", "port": 7070},
            "clientTags": [{"key": "zone", "value": "a"}],
            "topology": {
                "epoch": 1,
                "subtopologies": [
                    {
                        "subtopologyId": "0",
                        "sourceTopics": [TOPIC],
                        "stateChangelogTopics": [{"name": "fuzz-store-changelog"}],
                    }
                ],
            },
            "activeTasks": [],
            "standbyTasks": [],
            "warmupTasks": [],
        },
        (
            ("groupId",),
            ("memberId",),
            ("processId",),
            ("topology", "subtopologies", 0, "sourceTopics", 0),
        ),
    ),
    # Offsets of a group without members (committed from outside it, as a tool or a consumer
    # assigning itself partitions does); the delete leaves partition 1's offset, so the group
    # is still there for the requests after it.
    "offset-commit": Skeleton(
        {
            "groupId": OFFSETS_GROUP,
            "generationIdOrMemberEpoch": -1,
            "memberId": "",
            "topics": [
                {
                    "name": TOPIC,
                    "partitions": [
                        {"partitionIndex": 0, "committedOffset": 7, "committedMetadata": "md"},
                        {"partitionIndex": 1, "committedOffset": 9},
                    ],
                }
            ],
        },
        (("groupId",), ("topics", 0, "name")),
    ),
    "offset-fetch": Skeleton(
        {
            "groups": [
                {"groupId": OFFSETS_GROUP, "topics": None},
                {
                    "groupId": OFFSETS_GROUP,
                    "memberId": None,
                    "memberEpoch": -1,
                    "topics": [{"name": TOPIC, "partitionIndexes": [0, 1]}],
                },
                {"groupId": GROUP, "topics": [{"name": TOPIC, "partitionIndexes": [0]}]},
            ],
            "requireStable": False,
        },
        (("groups", 0, "groupId"), ("groups", 1, "groupId"), ("groups", 1, "topics", 0, "name")),
    ),
    "offset-delete": Skeleton(
        {
            "groupId": OFFSETS_GROUP,
            "topics": [{"name": TOPIC, "partitions": [{"partitionIndex": 0}]}],
        },
        (("groupId",), ("topics", 0, "name")),
    ),
    "list-groups": Skeleton(
        {"statesFilter": ["Empty"], "typesFilter": ["classic"]},
        (("statesFilter", 0), ("typesFilter", 0)),
    ),
    "describe-groups": Skeleton(
        {"groups": [GROUP, GROUP + "-c", OFFSETS_GROUP], "includeAuthorizedOperations": False},
        (("groups", 0),),
    ),
    "consumer-group-describe": Skeleton(
        {"groupIds": [GROUP + "-c", GROUP], "includeAuthorizedOperations": False},
        (("groupIds", 0),),
    ),
    "streams-group-describe": Skeleton(
        {"groupIds": [GROUP + "-s", GROUP], "includeAuthorizedOperations": True},
        (("groupIds", 0),),
    ),
    "describe-group-activity": Skeleton(
        {"groupIds": [GROUP], "includeMembers": True}, (("groupIds", 0),)
    ),
    "leave-group": Skeleton(
        {"groupId": GROUP, "members": [{"memberId": MEMBER, "groupInstanceId": INSTANCE}]},
        (("groupId",), ("members", 0, "memberId"), ("members", 0, "groupInstanceId")),
    ),
    # The group with offsets only is deleted; the one with a static member is not empty.
    "delete-groups": Skeleton({"groupsNames": [OFFSETS_GROUP, GROUP]}, (("groupsNames", 0),)),
    "delete-topics": Skeleton(
        {"topics": [{"name": TOPIC}], "timeoutMs": 1000}, (("topics", 0, "name"),)
    ),
    # The ACL APIs (the coordinator's caller is a super user: they are served).
    "create-acls": Skeleton(
        {
            "creations": [
                {
                    "resourceType": 3,
                    "resourceName": GROUP,
                    "resourcePatternType": 4,
                    "principal": "User:fuzz",
                    "host": "*",
                    "operation": 3,
                    "permissionType": 3,
                }
            ]
        },
        (
            ("creations", 0, "resourceName"),
            ("creations", 0, "principal"),
            ("creations", 0, "host"),
        ),
    ),
    "describe-acls": Skeleton(
        {
            "resourceTypeFilter": 1,
            "resourceNameFilter": GROUP,
            "patternTypeFilter": 2,
            "principalFilter": "User:fuzz",
            "hostFilter": None,
            "operation": 1,
            "permissionType": 1,
        },
        (("resourceNameFilter",), ("principalFilter",)),
    ),
    "delete-acls": Skeleton(
        {
            "filters": [
                {
                    "resourceTypeFilter": 3,
                    "resourceNameFilter": GROUP,
                    "patternTypeFilter": 4,
                    "principalFilter": "User:fuzz",
                    "hostFilter": "*",
                    "operation": 3,
                    "permissionType": 3,
                }
            ]
        },
        (("filters", 0, "resourceNameFilter"), ("filters", 0, "principalFilter")),
    ),
}

# More requests of an operation for the lifecycle table, where one skeleton does not reach all
# its paths: a classic LeaveGroup on the consumer-protocol group (it takes another code path).
VARIANTS: dict[str, dict[str, Skeleton]] = {
    "leave-group": {
        "consumer-group": Skeleton(
            {
                "groupId": GROUP + "-c",
                "members": [{"memberId": MEMBER, "groupInstanceId": INSTANCE}],
            },
            (("members", 0, "memberId"), ("members", 0, "groupInstanceId")),
        ),
    },
}

# The strings that reached DynamoDB keys and caused 500s before, and their kin. "fuzz-g#fuzz-m"
# reads like a group key followed by a member's.
HOSTILE_IDS: dict[str, str] = {
    "hash": f"{GROUP}#{MEMBER}",
    "percent-slash": "%23%25%00%/../g/",
    "nul-emoji": "nul\x00\U0001f984",
    "300-emoji": "\U0001f984" * 300,
    "lone-surrogate": "fuzz\ud800",
    "empty": "",
}
# HTTP header values are latin-1 without control characters: no NUL, emoji or surrogate here.
HOSTILE_CLIENT_IDS = ["#", f"{GROUP}#{MEMBER}", "%23/%", "a/b", "c" * 300, ""]

# ---------------------------------------------------------------------------------------------
# Sending a request and checking the answer against the four promises.


class ContractViolation(AssertionError):
    """An answer breaks a promise of the document (one subclass per promise, so that
    Hypothesis reports each kind of failure on its own)."""


class ServerError(ContractViolation):
    """Promise 1: never a 5xx."""


class UndocumentedAnswer(ContractViolation):
    """Promise 3: a status the document does not list for the operation, or no JSON body."""


class BadErrorShape(ContractViolation):
    """Promise 2: a 4xx body that is not {"errorCode": int, "errorMessage": str}."""


class SchemaMismatch(ContractViolation):
    """Promise 3: a body or header the document's schema for the status does not accept."""


class RejectedButChanged(ContractViolation):
    """Promise 4: a 4xx after which the table is not what it was."""


class TableUnreadable(ContractViolation):
    """The request left an item in the table that cannot be read back (so no later request
    can read it either), e.g. a map with an empty key, which a lax engine may store mangled and
    DynamoDB refuses ("Empty attribute name")."""


@dataclass
class Sent:
    api: str
    body: bytes
    headers: dict[str, str] = field(default_factory=dict)
    note: str = ""


def json_body(value: Any) -> bytes:
    """As a client library sends JSON: ASCII, lone surrogates escaped as \\udXXX."""
    return json.dumps(value).encode()


def _printf_quoted(body: bytes) -> str:
    out = []
    for byte in body:
        char = chr(byte)
        if 0x20 <= byte < 0x7F and char not in "'%\\":
            out.append(char)
        else:
            out.append(f"\\{byte:03o}")
    return "'" + "".join(out) + "'"


def curl_command(base_url: str, sent: Sent) -> str:
    parts = ["curl -sS -X POST", shlex.quote(f"{base_url}{PREFIX}{sent.api}")]
    headers = {"Content-Type": "application/json", **sent.headers}
    parts += [f"-H {shlex.quote(f'{name}: {value}')}" for name, value in headers.items()]
    if len(sent.body) > 4000:
        return (
            " ".join(parts) + f" --data-binary @body  # body: {len(sent.body)} bytes, "
            f"starting {sent.body[:300]!r} ... ending {sent.body[-100:]!r}"
        )
    printable = all(0x20 <= byte < 0x7F for byte in sent.body)
    if printable and sent.body:
        return " ".join([*parts, "--data-raw", shlex.quote(sent.body.decode())])
    return f"printf {_printf_quoted(sent.body)} | " + " ".join([*parts, "--data-binary @-"])


def _item_key(item: dict[str, Any]) -> str:
    return json.dumps(
        {name: item[name] for name in sorted(item) if name in ("pk", "sk")}, default=_jsonable
    )


def _jsonable(value: Any) -> Any:
    if isinstance(value, bytes | bytearray):
        return "b64:" + base64.b64encode(value).decode()
    if isinstance(value, set | frozenset):
        return sorted(value, key=repr)
    raise TypeError(type(value))


def _canonical(value: Any) -> Any:
    """A DynamoDB attribute value with the members of its sets in order (a set has none)."""
    if isinstance(value, dict):
        result = {}
        for name, inner in value.items():
            if name in ("SS", "NS", "BS"):
                result[name] = sorted(inner, key=repr)
            else:
                result[name] = _canonical(inner)
        return result
    if isinstance(value, list):
        return [_canonical(inner) for inner in value]
    return value


def _find_serve_log(table: str) -> Path | None:
    """The log file (stdout and stderr) of the `groupcoord serve` on `table`: running_serve
    keeps it in a temporary directory of its own; the process's fd 1 points at it."""
    marker = f"groupcoord.table.name={table}".encode()
    for pid in os.listdir("/proc") if os.path.isdir("/proc") else []:
        if not pid.isdigit():
            continue
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
            if marker in cmdline and b"serve" in cmdline:
                return Path(os.readlink(f"/proc/{pid}/fd/1"))
        except OSError:
            continue
    return None


def _log_line(line: str) -> str:
    """A line of serve's log, its JSON records cut to what tells a failure: the message and
    the end of the traceback."""
    try:
        record = json.loads(line)
    except ValueError:
        return line[:500]
    if not isinstance(record, dict):
        return line[:500]
    head = f"{record.get('level')} {record.get('message')!r} (api {record.get('api')})"
    trace = str(record.get("exception") or "").splitlines()
    if not trace:
        return head
    frames = [
        t.strip() for t in trace if t.strip().startswith("File ") and "site-packages" not in t
    ]
    return "\n".join([head, *("  " + frame for frame in frames[-6:]), "  " + trace[-1][:600]])


class Coordinator:
    """The `groupcoord serve` under test, its table, and the checks of every answer."""

    def __init__(self, base_url: str, table: str, dynamodb: Any, log: Path | None) -> None:
        self.base_url = base_url.rstrip("/")
        self.table = table
        self.dynamodb = dynamodb
        self.log = log
        self.session = requests.Session()
        # The table as the last exchange left it. Only the requests change the table (no
        # sweeps, no held requests), so it is also the table before the next request: one Scan
        # per request instead of two (a Scan costs about what the request it checks does).
        self._table: list[str] | None = None

    def snapshot(self) -> list[str]:
        """Every item of the table, sorted, nothing left out."""
        items: list[str] = []
        start: dict[str, Any] = {}
        while True:
            page = self.dynamodb.scan(TableName=self.table, ConsistentRead=True, **start)
            items += [
                json.dumps(_canonical(item), sort_keys=True, default=_jsonable)
                for item in page["Items"]
            ]
            if "LastEvaluatedKey" not in page:
                return sorted(items)
            start = {"ExclusiveStartKey": page["LastEvaluatedKey"]}

    def quarantine(self) -> list[str]:
        """Delete the items that cannot be read back, so that the run can go on after a
        TableUnreadable; returns their keys."""
        keys: list[dict[str, Any]] = []
        start: dict[str, Any] = {}
        while True:
            page = self.dynamodb.scan(
                TableName=self.table, ConsistentRead=True, ProjectionExpression="pk, sk", **start
            )
            keys += page["Items"]
            if "LastEvaluatedKey" not in page:
                break
            start = {"ExclusiveStartKey": page["LastEvaluatedKey"]}
        removed = []
        for key in keys:
            try:
                self.dynamodb.get_item(TableName=self.table, Key=key, ConsistentRead=True)
            except Exception:
                self.dynamodb.delete_item(TableName=self.table, Key=key)
                removed.append(json.dumps(key))
        return removed

    def _log_mark(self) -> int:
        try:
            return self.log.stat().st_size if self.log else 0
        except OSError:
            return 0

    def _log_since(self, mark: int) -> str:
        if self.log is None:
            return "(serve's log not found)"
        try:
            with self.log.open("rb") as log:
                log.seek(mark)
                text = log.read().decode("utf-8", "replace")
        except OSError as error:
            return f"(serve's log unreadable: {error})"
        lines = [_log_line(line) for line in text.splitlines() if line.strip()]
        return "\n".join(lines) or "(nothing logged)"

    def exchange(self, sent: Sent) -> tuple[int, Any]:
        """Send one request, check the answer against the document; returns (status, body)."""
        __tracebackhide__ = True
        before = self._table if self._table is not None else self.snapshot()
        self._table = None
        mark = self._log_mark()
        headers = {"Content-Type": "application/json", **sent.headers}
        response = self.session.post(
            f"{self.base_url}{PREFIX}{sent.api}", data=sent.body, headers=headers, timeout=120
        )
        status = response.status_code
        try:
            after = self._table = self.snapshot()
        except Exception as error:  # botocore cannot parse an item the request wrote
            unreadable = error
        else:
            unreadable = None

        def report(problem: str) -> str:
            return self._report(sent, response, mark, problem)

        if unreadable is not None:
            removed = self.quarantine()
            raise TableUnreadable(
                report(
                    f"after this request the table cannot be read back ({unreadable!r}); the "
                    f"items that cannot be read, deleted so that the run goes on: {removed}"
                )
            )

        # Promise 1: never a 5xx.
        if status >= 500:
            raise ServerError(report(f"a {status}: a server error"))

        body = _documented_answer(sent, response, report)

        # Promise 4: a rejected request changes nothing.
        if 400 <= status < 500 and after != before:
            raise RejectedButChanged(
                report("rejected, yet the table changed:\n" + _describe_change(before, after))
            )
        return status, body

    def _report(self, sent: Sent, response: requests.Response, mark: int, problem: str) -> str:
        """A broken promise, with the request as a curl command, the answer and serve's log."""
        text = response.text
        if len(text) > 2000:
            text = text[:2000] + f"... ({len(response.text)} characters)"
        lines = [
            f"{sent.api}: {problem}",
            f"  request:  {curl_command(self.base_url, sent)}",
        ]
        if sent.note:
            lines.append(f"  (request: {sent.note})")
        lines += [
            f"  answer:   {response.status_code} {text}",
            "  serve's log during the request:",
            *("    " + line for line in self._log_since(mark).splitlines()[-40:]),
        ]
        return "\n".join(lines)


def _documented_answer(
    sent: Sent, response: requests.Response, report: Callable[[str], str]
) -> Any:
    """The answer's JSON body, once its status, shape, headers and schema are the document's
    (promises 2 and 3)."""
    __tracebackhide__ = True
    status = response.status_code
    # Promise 3: a status the document lists for the operation, with a JSON body.
    documented = ANSWERS[sent.api].get(status)
    if documented is None:
        raise UndocumentedAnswer(
            report(
                f"{status} is not an answer the document lists for {sent.api} "
                f"({sorted(ANSWERS[sent.api])})"
            )
        )
    try:
        body = response.json()
    except ValueError:
        raise UndocumentedAnswer(report("the answer's body is not JSON")) from None
    if not response.headers.get("Content-Type", "").startswith("application/json"):
        raise UndocumentedAnswer(report("the answer's Content-Type is not application/json"))

    # Promise 2: a 4xx carries {"errorCode": int, "errorMessage": str}.
    if 400 <= status < 500 and not (
        isinstance(body, dict)
        and type(body.get("errorCode")) is int
        and type(body.get("errorMessage")) is str
    ):
        raise BadErrorShape(report("a 4xx without the documented error shape"))

    # Promise 3: the body and headers validate against the document's answer.
    if documented.validator is not None:
        errors = sorted(documented.validator.iter_errors(body), key=lambda e: e.json_path)
        if errors:
            described = "; ".join(f"{e.json_path}: {e.message[:300]}" for e in errors[:5])
            raise SchemaMismatch(report(f"the {status} body breaks its schema: {described}"))
    correlation = sent.headers.get("Kafka-Correlation-Id")
    if correlation is not None and "kafka-correlation-id" in documented.headers:
        echoed = response.headers.get("Kafka-Correlation-Id")
        if echoed is None or echoed.strip() != correlation.strip():
            raise SchemaMismatch(
                report(f"Kafka-Correlation-Id {correlation!r} came back as {echoed!r}")
            )
    if status == 429:
        retry_after = response.headers.get("Retry-After", "")
        if not (retry_after.isdigit()):
            raise SchemaMismatch(report(f"a 429 with Retry-After {retry_after!r}"))
    return body


def _describe_change(before: list[str], after: list[str]) -> str:
    old = {_item_key(json.loads(item)): item for item in before}
    new = {_item_key(json.loads(item)): item for item in after}
    lines = []
    for key in sorted(old.keys() - new.keys()):
        lines.append(f"    removed {old[key][:400]}")
    for key in sorted(new.keys() - old.keys()):
        lines.append(f"    added   {new[key][:400]}")
    for key in sorted(old.keys() & new.keys()):
        if old[key] != new[key]:
            lines.append(f"    changed {old[key][:400]}\n         to {new[key][:400]}")
    return "\n".join(lines[:30]) or "    (the same items, in another multiplicity)"


@contextmanager
def serving(dynamodb_endpoint: str) -> Iterator[Coordinator]:
    """A `groupcoord serve` of its own on a table of its own."""
    table = unique_table()
    with running_serve(dynamodb_endpoint, settings=SERVE_SETTINGS, table=table) as url:
        dynamodb = boto3.client(
            "dynamodb",
            endpoint_url=dynamodb_endpoint,
            region_name="us-east-1",
            aws_access_key_id=os.environ.get("AWS_ACCESS_KEY_ID", "testing"),
            aws_secret_access_key=os.environ.get("AWS_SECRET_ACCESS_KEY", "testing"),
            config=BotoConfig(retries={"max_attempts": 10, "mode": "standard"}),
        )
        yield Coordinator(url, table, dynamodb, _find_serve_log(table))


# The two phases run on a server and table each: every exchange Scans the table, and
# the lifecycle table leaves dozens of items (groups with hostile ids) behind.
@pytest.fixture(scope="module")
def lifecycle_coordinator(dynamodb_endpoint: str) -> Iterator[Coordinator]:
    with serving(dynamodb_endpoint) as coordinator:
        yield coordinator


@pytest.fixture(scope="module")
def fuzz_coordinator(dynamodb_endpoint: str) -> Iterator[Coordinator]:
    with serving(dynamodb_endpoint) as coordinator:
        yield coordinator


# ---------------------------------------------------------------------------------------------
# Requests generated by schemathesis from the document: valid ones and ones that break it.

SCHEMA = schemathesis.openapi.from_dict(DOC)
# Headers schemathesis adds for itself; the Kafka headers it generates are kept.
_OWN_HEADERS = {
    "user-agent",
    "accept",
    "accept-encoding",
    "connection",
    "x-schemathesis-testcaseid",
}


def _from_case(api: str, case: schemathesis.Case) -> Sent:
    kwargs = case.as_transport_kwargs(base_url="http://fuzz.invalid")
    if "json" in kwargs:
        body = json.dumps(kwargs["json"]).encode()
    elif kwargs.get("data") is not None:
        data = kwargs["data"]
        body = data.encode("utf-8", "surrogatepass") if isinstance(data, str) else bytes(data)
    else:
        body = b""
    headers = {
        name: value
        for name, value in (kwargs.get("headers") or {}).items()
        if name.lower() not in _OWN_HEADERS and name.lower() != "content-type"
    }
    mode = case.meta.generation.mode.value if case.meta is not None else "?"
    return Sent(api, body, headers, note=f"schemathesis, {mode}")


# ---------------------------------------------------------------------------------------------
# Hand-made requests: each operation's skeleton with hostile ids, broken in every way a body
# breaks, or not JSON at all.


def _get(body: Any, path: Path_) -> Any:
    for part in path:
        body = body[part]
    return body


def _set(body: Any, path: Path_, value: Any) -> Any:
    """A copy of body with the value at path replaced."""
    body = copy.deepcopy(body)
    _get(body, path[:-1])[path[-1]] = value
    return body


def _paths(body: Any, prefix: Path_ = ()) -> Iterator[tuple[Path_, Any]]:
    """Every (path, value) in body, the containers included (not the root)."""
    if isinstance(body, dict):
        items: Iterator[tuple[str | int, Any]] = iter(body.items())
    elif isinstance(body, list):
        items = iter(enumerate(body))
    else:
        return
    for key, value in items:
        yield (*prefix, key), value
        yield from _paths(value, (*prefix, key))


def _describe_path(path: Path_) -> str:
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else part)
    return out


SPECIAL_CHARACTERS = [
    "#", "%", "/", "\x00", "\U0001f984", "\ud800", "\udfff", "\\", "|", "$", ".", ":", " ",
    "\u00e9", "\u200b", "\U0010ffff", "*", "?", "\n", '"',
]  # fmt: skip
hostile_text = st.one_of(
    st.sampled_from(list(HOSTILE_IDS.values())),
    st.text(alphabet=st.sampled_from([*SPECIAL_CHARACTERS, "g", "m", "t"]), max_size=24),
    st.builds(
        lambda unit, count: unit * count,
        st.sampled_from(["x", "#", "\U0001f984", "%", "\u00e9"]),
        st.integers(200, 320),
    ),
)
WRONG_TYPES = [None, True, 0, -1.5, "s", [], {}]
HUGE_INTS = [2**31, -(2**31) - 1, 2**63, -(2**63) - 1, 2**64, 10**100]
LONG_STRINGS = [256, 1025, 4097, 100_000]
LONG_LISTS = [2, 17, 101, 1001, 10_001]
# Raw bodies whatever the operation.
RAW_BODIES: list[bytes] = [
    b"",
    b" ",
    b"{",
    b"}",
    b"null",
    b"true",
    b"0",
    b"[]",
    b'"text"',
    b"\xff\xfe",
    b"\xed\xa0\x80",
    b'{"a": 1,}',
    b"NaN",
    b"[" * 100_000 + b"]" * 100_000,
    b'{"a":' * 5_000 + b"1" + b"}" * 5_000,
    b'{"pad": "' + b"x" * (1024 * 1024) + b'"}',
]
LENIENT_NUMBERS = [
    b"1e400",
    b"-1e400",
    b"NaN",
    b"Infinity",
    b"1.5",
    b"1.0",
    b"-0",
    b"1E2",
    b"99999999999999999999999999999999999999",
]


@st.composite
def hostile_bodies(draw: st.DrawFn, api: str) -> Sent:
    """The skeleton with some of its id fields hostile."""
    skeleton = SKELETONS[api]
    body = copy.deepcopy(skeleton.body)
    chosen = draw(st.lists(st.sampled_from(skeleton.ids), min_size=1, unique=True))
    for path in chosen:
        body = _set(body, path, draw(hostile_text))
    headers = {}
    client_id = draw(st.none() | st.sampled_from(HOSTILE_CLIENT_IDS))
    if client_id is not None:
        headers["Kafka-Client-Id"] = client_id
    note = "ids " + ", ".join(_describe_path(path) for path in chosen) + " hostile"
    return Sent(api, json_body(body), headers, note)


@st.composite
def broken_bodies(draw: st.DrawFn, api: str) -> Sent:
    """The skeleton broken in one place: a wrong type, a missing field, a huge number, an
    over-long string or list, or a body that is not (quite) JSON."""
    skeleton = SKELETONS[api].body
    paths = list(_paths(skeleton))
    keys = [path for path, _ in paths if isinstance(path[-1], str)]
    ints = [path for path, value in paths if type(value) is int]
    strings = [path for path, value in paths if isinstance(value, str)]
    lists = [path for path, value in paths if isinstance(value, list) and value]
    kinds = ["wrong-type", "missing", "text"]
    kinds += ["huge-int", "lenient-number"] if ints else []
    kinds += ["long-string"] if strings else []
    kinds += ["long-list"] if lists else []
    kind = draw(st.sampled_from(sorted(kinds)))
    if kind == "wrong-type":
        path, value = draw(st.sampled_from(paths))
        wrong = draw(st.sampled_from([w for w in WRONG_TYPES if type(w) is not type(value)]))
        note = f"{_describe_path(path)} = {wrong!r}"
        return Sent(api, json_body(_set(skeleton, path, wrong)), note=note)
    if kind == "missing":
        path = draw(st.sampled_from(keys))
        body = copy.deepcopy(skeleton)
        del _get(body, path[:-1])[path[-1]]
        return Sent(api, json_body(body), note=f"{_describe_path(path)} missing")
    if kind == "huge-int":
        path = draw(st.sampled_from(ints))
        huge = draw(st.sampled_from(HUGE_INTS))
        note = f"{_describe_path(path)} = {huge}"
        return Sent(api, json_body(_set(skeleton, path, huge)), note=note)
    if kind == "lenient-number":
        path = draw(st.sampled_from(ints))
        literal = draw(st.sampled_from(LENIENT_NUMBERS))
        text = json_body(_set(skeleton, path, "__NUMBER__"))
        body = text.replace(b'"__NUMBER__"', literal)
        return Sent(api, body, note=f"{_describe_path(path)} = {literal.decode()}")
    if kind == "long-string":
        path = draw(st.sampled_from(strings))
        length = draw(st.sampled_from(LONG_STRINGS))
        unit = draw(st.sampled_from(["x", "\U0001f984"]))
        note = f"{_describe_path(path)} = {unit!r} * {length}"
        return Sent(api, json_body(_set(skeleton, path, unit * length)), note=note)
    if kind == "long-list":
        path = draw(st.sampled_from(lists))
        count = draw(st.sampled_from(LONG_LISTS))
        items = _get(skeleton, path)
        longer = [copy.deepcopy(items[index % len(items)]) for index in range(count)]
        note = f"{_describe_path(path)}: its items repeated to {count}"
        return Sent(api, json_body(_set(skeleton, path, longer)), note=note)
    # Not quite JSON: the skeleton's text with a byte-level defect.
    text = json_body(skeleton)
    first_key = next(iter(skeleton)).encode()
    defects: list[tuple[str, Callable[[], bytes]]] = [
        ("a UTF-8 BOM first", lambda: b"\xef\xbb\xbf" + text),
        ("trailing garbage", lambda: text + b" x"),
        ("truncated", lambda: text[:-1]),
        ("UTF-16", lambda: text.decode().encode("utf-16")),
        ("a duplicate first key", lambda: b'{"' + first_key + b'": [1], ' + text[1:]),
    ]
    if strings:
        path = draw(st.sampled_from(strings))
        marked = json_body(_set(skeleton, path, "__STRING__"))
        for name, raw in [
            ("an encoded surrogate", b"\xed\xa0\x80"),
            ("byte 0xff", b"\xff"),
            ("a raw NUL", b"\x00"),
            ("a raw newline", b"\n"),
        ]:
            defects.append(
                (
                    f"{_describe_path(path)} holding {name}",
                    lambda raw=raw, marked=marked: marked.replace(b"__STRING__", b"fuzz" + raw),
                )
            )
    name, build = draw(st.sampled_from(defects))
    return Sent(api, build(), note=name)


def raw_bodies(api: str) -> st.SearchStrategy[Sent]:
    return st.sampled_from(RAW_BODIES).map(
        lambda raw: Sent(api, raw, note=f"raw body of {len(raw)} bytes")
    )


# ---------------------------------------------------------------------------------------------
# The tests. First a fixed table of requests in the order a group lives, so that what one
# request stores (under a hostile key, say) is read back by the next ones; then each operation
# fuzzed.


def _lifecycle_cases(api: str) -> Iterator[Any]:
    """The operation's skeleton (and its variants) as it is, so that its topic, groups and
    offsets exist for the requests after it; with each hostile id in each of its id fields; with
    each of its lists holding its first entry twice (the same partition committed, fetched or
    deleted twice, the same topic, group or member named twice in one request)."""
    skeletons = {"": SKELETONS[api]} | {f"-{n}": v for n, v in VARIANTS.get(api, {}).items()}
    for label, skeleton in skeletons.items():
        prefix = f"{api}{label}"
        yield pytest.param(Sent(api, json_body(skeleton.body), note="the skeleton"), id=prefix)
        for path in skeleton.ids:
            for name, value in HOSTILE_IDS.items():
                body = _set(skeleton.body, path, value)
                if path in skeleton.fresh:
                    body["groupId"] = f"{body['groupId']}-{_describe_path(path)}-{name}"
                note = f"{_describe_path(path)} = {value!r}"
                case = f"{prefix}-{_describe_path(path)}-{name}"
                yield pytest.param(Sent(api, json_body(body), note=note), id=case)
        if api == "join-group" and not label:  # a member id is `<Kafka-Client-Id>-<uuid>`
            for index, client_id in enumerate(HOSTILE_CLIENT_IDS):
                headers = {"Kafka-Client-Id": client_id}
                note = f"Kafka-Client-Id: {client_id!r}"
                sent = Sent(api, json_body(skeleton.body), headers, note)
                yield pytest.param(sent, id=f"{prefix}-client-id-{index}")
        for path, value in _paths(skeleton.body):
            if isinstance(value, list) and value:
                body = _set(skeleton.body, path, [value[0], *value])
                note = f"{_describe_path(path)}[0] twice"
                case = f"{prefix}-{_describe_path(path)}-twice"
                yield pytest.param(Sent(api, json_body(body), note=note), id=case)


LIFECYCLE_CASES = [case for api in OPERATIONS if api in SKELETONS for case in _lifecycle_cases(api)]


@pytest.mark.parametrize("sent", LIFECYCLE_CASES)
def test_lifecycle_requests(lifecycle_coordinator: Coordinator, sent: Sent) -> None:
    lifecycle_coordinator.exchange(sent)


@pytest.mark.parametrize("api", OPERATIONS)
def test_fuzz_operation(fuzz_coordinator: Coordinator, api: str) -> None:
    """The operation driven with schemathesis's valid and invalid requests and with the
    hand-made hostile, broken and raw ones."""
    assert api in SKELETONS, f"no skeleton request for {api}: add one to SKELETONS"
    operation = SCHEMA[PREFIX + api]["POST"]
    requests_ = st.one_of(
        operation.as_strategy(GenerationMode.POSITIVE).map(lambda case: _from_case(api, case)),
        operation.as_strategy(GenerationMode.NEGATIVE).map(lambda case: _from_case(api, case)),
        hostile_bodies(api),
        broken_bodies(api),
        raw_bodies(api),
    )

    @FUZZ_SETTINGS
    @given(sent=requests_)
    def exchange(sent: Sent) -> None:
        fuzz_coordinator.exchange(sent)

    exchange()


# ---------------------------------------------------------------------------------------------
# The fuzzing's own premises.


def test_every_operation_has_a_skeleton_that_is_a_valid_request() -> None:
    assert set(SKELETONS) == set(DOCUMENTED)
    assert set(VARIANTS) <= set(DOCUMENTED)
    every = [(api, skeleton) for api, skeleton in SKELETONS.items()] + [
        (api, skeleton) for api, variants in VARIANTS.items() for skeleton in variants.values()
    ]
    for api, skeleton in every:
        errors = list(REQUEST_VALIDATORS[api].iter_errors(skeleton.body))
        assert not errors, (api, [error.message for error in errors])
        for path in skeleton.ids:
            assert isinstance(_get(skeleton.body, path), str), (api, path)
        assert set(skeleton.fresh) <= set(skeleton.ids), api
        assert not skeleton.fresh or isinstance(skeleton.body.get("groupId"), str), api


def test_answers_are_checked_against_every_documented_status() -> None:
    for api in DOCUMENTED:
        assert {200, 400, 413, 429} <= set(ANSWERS[api]), api
        assert all(answer.validator is not None for answer in ANSWERS[api].values()), api
