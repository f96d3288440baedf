"""Binding a topic to a Kinesis stream needs a right over the stream (issue 42 point 7,
core/kinesis/binders.py): with the authorizer on, CREATE on the topic's name is not enough;
the deployment's `groupcoord.kinesis.stream.binders` names who may bind which streams. bob,
allowed to create `tb-` topics, may not bind alice's stream (and learns nothing of it: no
topic, no shards); alice may bind hers; a super user any. Through both front doors, on
kinesis-local."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from tests.support.acls import (
    ADMIN,
    CREATE,
    PREFIXED,
    READ,
    TOPIC,
    TOPIC_DENIED,
    acl,
    authorizer_on,
    grant,
)
from tests.support.api import PRINCIPAL_HEADER, Api
from tests.support.kinesis import Streams, kinesis_topic, streams_fixture
from tests.support.servers import running_coordinator

ALICE, BOB = "User:alice", "User:bob"
UNKNOWN_TOPIC = 3

streams = streams_fixture()


@dataclass
class Deployment:
    admin: Api
    alice: Api
    bob: Api
    alices_stream: str
    bobs_stream: str


@pytest.fixture(scope="module", params=["HttpApi", "FunctionUrl"])
def deployment(request: pytest.FixtureRequest, streams: Streams) -> Iterator[Deployment]:
    suffix = uuid.uuid4().hex[:8]
    alices = streams.create(1, f"ta-orders-{suffix}")
    bobs = streams.create(1, f"tb-orders-{suffix}")
    prefix = alices.rsplit("/", 1)[0] + "/"
    settings = {
        **authorizer_on(ADMIN),
        "groupcoord.kinesis.stream.binders": f"{ALICE}={prefix}ta-*;{BOB}={bobs}",
    }
    with running_coordinator(
        settings, principal_header=PRINCIPAL_HEADER, front_door=request.param
    ) as coordinator:
        admin = Api(coordinator.url, principal=ADMIN)
        grant(
            admin,
            *(
                acl(TOPIC, name, who, operation, pattern=PREFIXED)
                for who, name in ((ALICE, "ta-"), (BOB, "tb-"))
                for operation in (CREATE, READ)
            ),
        )
        yield Deployment(
            admin,
            Api(coordinator.url, principal=ALICE),
            Api(coordinator.url, principal=BOB),
            alices,
            bobs,
        )
    for arn in (alices, bobs):
        streams.delete(arn.rsplit("/", 1)[1])


def _exists(admin: Api, topic: str) -> bool:
    found = admin.ok("metadata", {"topics": [{"name": topic}]})["topics"][0]
    return found["errorCode"] != UNKNOWN_TOPIC


def test_binding_a_stream_needs_a_right_over_the_stream(deployment: Deployment) -> None:
    d = deployment
    # bob may create tb- topics, but not bind alice's stream: refused before Kinesis is asked.
    refused = kinesis_topic(d.bob, "tb-mirror", d.alices_stream)
    assert refused["errorCode"] == TOPIC_DENIED, refused
    assert refused["numPartitions"] == -1 and refused["topicId"] == "AAAAAAAAAAAAAAAAAAAAAA"
    assert not _exists(d.admin, "tb-mirror")
    # ... validate-only alike.
    probe = kinesis_topic(d.bob, "tb-mirror", d.alices_stream, validateOnly=True)
    assert probe["errorCode"] == TOPIC_DENIED, probe

    # Each binds a stream its entry names.
    assert kinesis_topic(d.bob, "tb-own", d.bobs_stream)["errorCode"] == 0
    assert kinesis_topic(d.alice, "ta-own", d.alices_stream)["errorCode"] == 0
    # alice's entry does not reach bob's stream either.
    assert kinesis_topic(d.alice, "ta-theirs", d.bobs_stream)["errorCode"] == TOPIC_DENIED
    # A super user binds any stream.
    assert kinesis_topic(d.admin, "tb-by-admin", d.alices_stream)["errorCode"] == 0
