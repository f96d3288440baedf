"""Writes the sample events of this directory: one API Gateway HTTP API (payload 2.0) event per
API (`<api>.json`), one Lambda function URL event per API (`function-url/<api>.json`, the
router's, FrontDoor=FunctionUrl) and the sweeper's EventBridge Scheduled Event
(`sweeper-schedule.json`).

    python events/generate.py            # rewrite the files next to this script
    python events/generate.py --out DIR  # write them elsewhere (the tests compare)

The output is deterministic (fixed request ids and times), so regenerating changes nothing
unless the code or the bodies below changed. Use the files with, e.g.:

    sam local invoke AdminFunction -e events/metadata.json
    sam local invoke RouterFunction -e events/function-url/heartbeat.json \
        --parameter-overrides FrontDoor=FunctionUrl
    sam local invoke SweeperFunction -e events/sweeper-schedule.json
"""

from __future__ import annotations

import argparse
import base64
import json
import struct
import sys
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

try:
    import groupcoord  # noqa: F401
except ImportError:  # run from a checkout without the package installed
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "layers" / "core"))

from groupcoord.http.apis import API_BY_NAME, API_NAMES
from groupcoord.local.events import function_url_event, http_api_event, scheduled_event

HERE = Path(__file__).resolve().parent
SWEEPER_EVENT = "sweeper-schedule"
FUNCTION_URL_DIR = "function-url"

# Fixed values, so that the files are the same every time they are generated.
TIME = datetime(2025, 1, 15, 12, 0, 0, tzinfo=UTC)
API_ID = "a1b2c3d4e5"
DOMAIN_NAME = f"{API_ID}.execute-api.us-east-1.amazonaws.com"
# A function URL's id is 32 lower-case letters and digits.
URL_ID = "abcdefghij0123456789klmnopqrstuv"
URL_DOMAIN_NAME = f"{URL_ID}.lambda-url.us-east-1.on.aws"
SOURCE_IP = "203.0.113.25"  # TEST-NET-3 (RFC 5737)
USER_AGENT = "groupcoord-client/0.1.0 (python)"
CLIENT_ID = "orders-service-1"
NAMESPACE = uuid.UUID("6f1c2b1e-8a5d-4f8e-9c3b-2d7e4a1f0b9c")

GROUP = "orders-consumers"
TOPIC = "orders"
MEMBER_ID = f"{CLIENT_ID}-5b0d6c4e-3f2a-4b7e-9d1c-8a6f2e4b1c3d"
CONSUMER_MEMBER_ID = "mQ3kR7vT2xY9zA1bC5dE8f"  # KIP-848 members name themselves (a Uuid)
# The caller, as API Gateway's IAM authorization describes it: a session of the consumers'
# role (its principal is User:<ROLE_ARN>, http/resolver.py).
ACCOUNT = "000000000000"
ROLE_ARN = f"arn:aws:iam::{ACCOUNT}:role/orders-service"
ROLE_ID = "AROAEXAMPLEROLEID0001"
IAM_IDENTITY = {
    "accessKey": "ASIAEXAMPLEACCESSKEY",
    "accountId": ACCOUNT,
    "callerId": f"{ROLE_ID}:{CLIENT_ID}",
    "cognitoIdentity": None,
    "principalOrgId": None,
    "userArn": f"arn:aws:sts::{ACCOUNT}:assumed-role/orders-service/{CLIENT_ID}",
    "userId": f"{ROLE_ID}:{CLIENT_ID}",
}


# --- Kafka's ConsumerProtocol bytes (classic protocol metadata and assignments) ---


def _string(text: str) -> bytes:
    raw = text.encode("utf-8")
    return struct.pack(">h", len(raw)) + raw


def consumer_subscription(topics: list[str]) -> str:
    """ConsumerProtocolSubscription v0 (version, topics, null userData), base64."""
    body = struct.pack(">h", 0) + struct.pack(">i", len(topics))
    body += b"".join(_string(t) for t in topics) + struct.pack(">i", -1)
    return base64.b64encode(body).decode("ascii")


def consumer_assignment(partitions: dict[str, list[int]]) -> str:
    """ConsumerProtocolAssignment v0 (version, topic partitions, null userData), base64."""
    body = struct.pack(">h", 0) + struct.pack(">i", len(partitions))
    for topic, indexes in partitions.items():
        body += _string(topic) + struct.pack(">i", len(indexes))
        body += b"".join(struct.pack(">i", p) for p in indexes)
    body += struct.pack(">i", -1)
    return base64.b64encode(body).decode("ascii")


# --- the request bodies, one realistic valid request per API ---

BODIES: dict[str, dict[str, Any]] = {
    "find-coordinator": {"keyType": 0, "coordinatorKeys": [GROUP]},
    "join-group": {
        "groupId": GROUP,
        "sessionTimeoutMs": 45000,
        "rebalanceTimeoutMs": 300000,
        "memberId": "",
        "groupInstanceId": None,
        "protocolType": "consumer",
        "protocols": [
            {"name": "range", "metadata": consumer_subscription([TOPIC])},
            {"name": "cooperative-sticky", "metadata": consumer_subscription([TOPIC])},
        ],
        "reason": None,
        "heartbeatFrequency": 3,
        "failedHeartbeatThreshold": 3,
    },
    "sync-group": {
        "groupId": GROUP,
        "generationId": 1,
        "memberId": MEMBER_ID,
        "groupInstanceId": None,
        "protocolType": "consumer",
        "protocolName": "range",
        "assignments": [
            {"memberId": MEMBER_ID, "assignment": consumer_assignment({TOPIC: [0, 1, 2]})}
        ],
    },
    "heartbeat": {
        "groupId": GROUP,
        "generationId": 1,
        "memberId": MEMBER_ID,
        "groupInstanceId": None,
    },
    "leave-group": {
        "groupId": GROUP,
        "members": [
            {
                "memberId": MEMBER_ID,
                "groupInstanceId": None,
                "reason": "the consumer is being closed",
            }
        ],
    },
    "consumer-group-heartbeat": {
        "groupId": GROUP,
        "memberId": CONSUMER_MEMBER_ID,
        "memberEpoch": 0,
        "instanceId": None,
        "rackId": None,
        "rebalanceTimeoutMs": 300000,
        "subscribedTopicNames": [TOPIC],
        "serverAssignor": "uniform",
        "topicPartitions": [],
    },
    "streams-group-heartbeat": {
        "groupId": "word-count",
        "memberId": CONSUMER_MEMBER_ID,
        "memberEpoch": 0,
        "rebalanceTimeoutMs": 300000,
        "processId": "b6f3c2e1-7d4a-4c9b-8e2f-1a3d5c7e9b0f",
        "userEndpoint": {"host": "127.0.0.1", "port": 8080},
        "topology": {
            "epoch": 1,
            "subtopologies": [
                {
                    "subtopologyId": "0",
                    "sourceTopics": ["words"],
                    "stateChangelogTopics": [{"name": "word-count-store-changelog"}],
                }
            ],
        },
        "activeTasks": [],
        "standbyTasks": [],
        "warmupTasks": [],
    },
    "offset-commit": {
        "groupId": GROUP,
        "generationIdOrMemberEpoch": -1,
        "memberId": "",
        "groupInstanceId": None,
        "topics": [
            {
                "name": TOPIC,
                "partitions": [
                    {
                        "partitionIndex": 0,
                        "committedOffset": 1024,
                        "committedLeaderEpoch": -1,
                        "committedMetadata": "",
                    },
                    {
                        "partitionIndex": 1,
                        "committedOffset": 2048,
                        "committedLeaderEpoch": -1,
                        "committedMetadata": None,
                    },
                ],
            }
        ],
    },
    "offset-fetch": {
        "groups": [
            {
                "groupId": GROUP,
                "memberId": None,
                "memberEpoch": -1,
                "topics": [{"name": TOPIC, "partitionIndexes": [0, 1, 2]}],
            }
        ],
        "requireStable": True,
    },
    "offset-delete": {
        "groupId": GROUP,
        "topics": [{"name": TOPIC, "partitions": [{"partitionIndex": 0}]}],
    },
    "metadata": {
        "topics": [{"name": TOPIC}],
        "allowAutoTopicCreation": False,
        "includeTopicAuthorizedOperations": False,
    },
    "list-groups": {"statesFilter": [], "typesFilter": ["classic", "consumer"]},
    "describe-groups": {"groups": [GROUP], "includeAuthorizedOperations": False},
    "consumer-group-describe": {"groupIds": [GROUP], "includeAuthorizedOperations": False},
    "streams-group-describe": {"groupIds": ["word-count"], "includeAuthorizedOperations": False},
    "delete-groups": {"groupsNames": [GROUP]},
    "describe-group-activity": {"groupIds": [GROUP], "includeMembers": True},
    "create-topics": {
        "topics": [
            {
                "name": TOPIC,
                "numPartitions": 6,
                "replicationFactor": 3,
                "assignments": [],
                "configs": [{"name": "retention.ms", "value": "604800000"}],
            }
        ],
        "timeoutMs": 30000,
        "validateOnly": False,
    },
    "create-partitions": {
        "topics": [{"name": TOPIC, "count": 12, "assignments": None}],
        "timeoutMs": 30000,
        "validateOnly": False,
    },
    "delete-topics": {"topics": [{"name": TOPIC, "topicId": None}], "timeoutMs": 30000},
    "create-acls": {
        "creations": [
            {
                "resourceType": 3,  # GROUP
                "resourceName": "orders-",
                "resourcePatternType": 4,  # PREFIXED
                "principal": f"User:{ROLE_ARN}",
                "host": "*",
                "operation": 3,  # READ
                "permissionType": 3,  # ALLOW
            }
        ]
    },
    "describe-acls": {
        "resourceTypeFilter": 1,  # ANY
        "resourceNameFilter": None,
        "patternTypeFilter": 1,  # ANY
        "principalFilter": f"User:{ROLE_ARN}",
        "hostFilter": None,
        "operation": 1,
        "permissionType": 1,
    },
    "delete-acls": {
        "filters": [
            {
                "resourceTypeFilter": 3,
                "resourceNameFilter": "orders-",
                "patternTypeFilter": 4,
                "principalFilter": f"User:{ROLE_ARN}",
                "hostFilter": "*",
                "operation": 3,
                "permissionType": 3,
            }
        ]
    },
}


def api_event(api: str, front_door: str = "HttpApi") -> dict[str, Any]:
    """The sample request of `api` as API Gateway's HTTP API (`HttpApi`) or the router's
    function URL (`FunctionUrl`) hands it to the function."""
    body = json.dumps(BODIES[api]).encode("utf-8")
    # Checked here so that a bad sample never gets written.
    API_BY_NAME[api].request.model_validate_json(body)
    function_url = front_door == "FunctionUrl"
    domain_name = URL_DOMAIN_NAME if function_url else DOMAIN_NAME
    request_id = str(uuid.uuid5(NAMESPACE, f"{front_door}/{api}" if function_url else api))
    trace_id = f"Root=1-{int(TIME.timestamp()):08x}-{request_id.replace('-', '')[:24]}"
    headers = {
        "content-length": str(len(body)),
        "content-type": "application/json",
        "host": domain_name,
        "kafka-client-id": CLIENT_ID,
        "kafka-correlation-id": "7",
        "user-agent": USER_AGENT,
        "x-amzn-trace-id": trace_id,
        "x-forwarded-for": SOURCE_IP,
        "x-forwarded-port": "443",
        "x-forwarded-proto": "https",
    }
    if function_url:
        # What a function URL adds of the TLS session.
        headers["x-amzn-tls-cipher-suite"] = "TLS_AES_128_GCM_SHA256"
        headers["x-amzn-tls-version"] = "TLSv1.3"
        event = function_url_event(
            "POST",
            f"/v1/{api}",
            body,
            headers,
            source_ip=SOURCE_IP,
            domain_name=domain_name,
            account_id=ACCOUNT,  # the function's owner: the caller's own account
        )
    else:
        event = http_api_event(
            "POST", f"/v1/{api}", body, headers, source_ip=SOURCE_IP, domain_name=domain_name
        )
        event["requestContext"]["apiId"] = API_ID
    context = event["requestContext"]
    context["requestId"] = request_id
    context["time"] = TIME.strftime("%d/%b/%Y:%H:%M:%S +0000")
    context["timeEpoch"] = int(TIME.timestamp() * 1000)
    context["authorizer"] = {"iam": IAM_IDENTITY}
    return event


def sweeper_event() -> dict[str, Any]:
    event = scheduled_event()
    event["id"] = str(uuid.uuid5(NAMESPACE, SWEEPER_EVENT))
    event["time"] = TIME.strftime("%Y-%m-%dT%H:%M:%SZ")
    return event


def all_events() -> dict[str, dict[str, Any]]:
    """File stem -> event, for every file this script writes."""
    missing = set(API_NAMES) - set(BODIES)
    if missing:
        raise SystemExit(f"no sample body for: {', '.join(sorted(missing))}")
    events = {api: api_event(api) for api in API_NAMES}
    events[SWEEPER_EVENT] = sweeper_event()
    for api in API_NAMES:
        events[f"{FUNCTION_URL_DIR}/{api}"] = api_event(api, "FunctionUrl")
    return events


def render(event: dict[str, Any]) -> str:
    return json.dumps(event, indent=2) + "\n"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=HERE, help="directory to write into")
    args = parser.parse_args(argv)
    (args.out / FUNCTION_URL_DIR).mkdir(parents=True, exist_ok=True)
    events = all_events()
    for stem, event in events.items():
        (args.out / f"{stem}.json").write_text(render(event))
    print(f"wrote {len(events)} events to {args.out}")


if __name__ == "__main__":
    main()
