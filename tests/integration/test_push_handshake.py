"""The push channel's handshake (docs/sessions.md, "Push"), through both front doors
(template.yaml's FrontDoor: HttpApi's functions, FunctionUrl's router; the WebSocket API is the
same beside either): a `$connect` is bound to the caller's principal and its group as the member's
heartbeats are, READ on the group first, then the member's owner. `groupcoord serve` on the
DynamoDB endpoint names the caller by a header; in AWS API Gateway verifies the SigV4-signed
handshake ($connect's AWS_IAM) and the push function reads the caller's IAM identity, which
must name the same principal as the front door's requests do (an assumed role's session, the
role).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from websockets.exceptions import InvalidStatus

from groupcoord import runtime
from groupcoord.http.websocket import make_push_handler
from groupcoord.local.events import LambdaContext
from groupcoord.settings import Settings
from groupcoord.store.store import Store
from tests.support.acls import ADMIN, DENY, GROUP, GROUP_DENIED, READ, acl, authorizer_on, grant
from tests.support.api import PRINCIPAL_HEADER, Api
from tests.support.consumer import Member, create_topic, unique
from tests.support.push_sockets import member_socket, open_socket, push_url
from tests.support.servers import running_serve, unique_table

ALICE, BOB = "User:alice", "User:bob"
ACCOUNT = "123456789012"
ROLE = f"arn:aws:iam::{ACCOUNT}:role/orders-service"
# Members belong to their creator (core/ownership.py) only with the authorizer on; with no
# ACL on a resource everyone may use it, so alice and bob need none.
SETTINGS = {**authorizer_on(ADMIN), "allow.everyone.if.no.acl.found": "true"}


@dataclass
class Coordinator:
    url: str
    store: Store  # the same table, for the push function called as API Gateway calls it
    admin: Api


@pytest.fixture(scope="module", params=["HttpApi", "FunctionUrl"])
def coordinator(request: pytest.FixtureRequest, dynamodb_endpoint: str) -> Iterator[Coordinator]:
    table = unique_table()
    extra = ["--principal-header", PRINCIPAL_HEADER, "--front-door", request.param]
    with running_serve(dynamodb_endpoint, SETTINGS, table, extra, push=True) as url:
        settings = Settings.from_mapping({"groupcoord.table.name": table, **SETTINGS})
        store = Store.connect(settings, endpoint_url=dynamodb_endpoint)
        yield Coordinator(url, store, Api(url, principal=ADMIN))


def joined(url: str, principal: str) -> Member:
    """A consumer-protocol member of a group of its own, created by `principal`."""
    api = Api(url, principal=principal)
    topic, group = unique("handshake-topic"), unique("handshake-group")
    create_topic(api, topic, 1)
    member = Member(api, group, topics=[topic])
    member.join()
    return member


def member_push_url(member: Member) -> str:
    url = push_url(member.api, member.group)
    assert url is not None
    return url


def refused_status(url: str, member: Member, principal: str | None) -> int:
    with pytest.raises(InvalidStatus) as refused:
        open_socket(url, member.group, member.member_id, principal).close()
    return refused.value.response.status_code


def test_only_the_members_principal_may_connect(coordinator: Coordinator) -> None:
    member = joined(coordinator.url, ALICE)
    url = member_push_url(member)
    assert refused_status(url, member, BOB) == 403
    assert refused_status(url, member, None) == 403  # ANONYMOUS
    # As a heartbeat of bob's naming alice's member is refused.
    bob = Member(Api(coordinator.url, principal=BOB), member.group)
    bob.member_id, bob.epoch = member.member_id, member.epoch
    assert bob.heartbeat()["errorCode"] == GROUP_DENIED
    member_socket(member.api, member.group, member.member_id).close()  # pinged: pong


def test_a_principal_refused_the_group_may_not_connect_its_own_member(
    coordinator: Coordinator,
) -> None:
    """READ on the group is checked first, as a heartbeat checks it: once alice may no longer
    read her group her heartbeats are refused (30), and so is her socket."""
    member = joined(coordinator.url, ALICE)
    url = member_push_url(member)  # asked while alice may still see the group
    grant(coordinator.admin, acl(GROUP, member.group, ALICE, READ, permission=DENY))
    assert member.heartbeat()["errorCode"] == GROUP_DENIED
    assert refused_status(url, member, ALICE) == 403


# --- as API Gateway calls the push function: the caller's verified IAM identity ---------------


def connect_event(group: str, member_id: str, user_arn: str | None) -> dict[str, Any]:
    """A `$connect` of a WebSocket API whose $connect route is AWS_IAM-authorized, as API
    Gateway hands it to the function (the identity it verified from the SigV4 signature)."""
    identity: dict[str, Any] = {"sourceIp": "127.0.0.1", "userAgent": "groupcoord-test"}
    if user_arn is not None:
        session = user_arn.rsplit("/", 1)[-1]
        identity |= {
            "accountId": ACCOUNT,
            "caller": f"AROAEXAMPLEID:{session}",
            "user": f"AROAEXAMPLEID:{session}",
            "userArn": user_arn,
            "accessKey": "ASIAEXAMPLEKEY",
        }
    return {
        "headers": {"Host": "a1b2c3d4e5.execute-api.us-east-1.amazonaws.com"},
        "queryStringParameters": {"groupId": group, "memberId": member_id},
        "requestContext": {
            "routeKey": "$connect",
            "eventType": "CONNECT",
            "messageDirection": "IN",
            "stage": "push",
            "connectionId": f"conn-{unique('c')}=",
            "connectedAt": 1_700_000_000_000,
            "requestTimeEpoch": 1_700_000_000_000,
            "identity": identity,
            "domainName": "a1b2c3d4e5.execute-api.us-east-1.amazonaws.com",
            "apiId": "a1b2c3d4e5",
        },
        "isBase64Encoded": False,
    }


def test_an_iam_connect_binds_the_role_that_created_the_member(coordinator: Coordinator) -> None:
    """A member created by the role's requests (the front door names the role, whichever
    session signed) may be connected by any session of that role, and by no other role."""
    member = joined(coordinator.url, f"User:{ROLE}")
    handler = make_push_handler()
    sessions = {
        f"arn:aws:sts::{ACCOUNT}:assumed-role/orders-service/worker-2": 200,
        f"arn:aws:sts::{ACCOUNT}:assumed-role/billing-service/worker-1": 403,
        None: 403,  # no identity: ANONYMOUS
        "not an arn": 403,
    }
    with runtime.scoped(coordinator.store.settings, coordinator.store):
        for user_arn, status in sessions.items():
            event = connect_event(member.group, member.member_id, user_arn)
            answer = handler(event, LambdaContext("push"))
            assert answer["statusCode"] == status, (user_arn, answer)
