"""Authorization round two (issue 42) with a Kinesis stream each for alice and bob, through
both front doors (template.yaml's FrontDoor: HttpApi's three functions, FunctionUrl's router).

Point 7, binding a topic to a Kinesis stream needs a right over the stream (core/kinesis/
binders.py): with the authorizer on, CREATE on the topic's name is not enough; the
deployment's `groupcoord.kinesis.stream.binders` names who may bind which streams. bob,
allowed to create `tb-` topics, may not bind alice's stream (and learns nothing of it: no
topic, no shards); alice may bind hers; a super user any. On kinesis-local.

The two-tenant attack run again, in one pass: alice runs a streams group (a static member), a
consumer group with a committed offset, a classic group and a consumer group on a topic bound
to her Kinesis stream, all on `ta-*` topics; bob, allowed READ on each of those groups (only
member ownership and topic rights stop him), replays the issue's seven attacks against them.
Afterwards alice's state, read as the super user (each group of hers described, her offsets,
every topic), is as it was before, her members heartbeat on at their epochs, and no answer bob
got names a topic of hers or a group he may not see. The attacks one by one, through both
front doors, are in test_authorization_streams_listings.py; the replay runs through the
router (FunctionUrl) only, to keep CI's time."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from tests.support.acls import (
    ADMIN,
    CREATE,
    GROUP,
    GROUP_DENIED,
    PREFIXED,
    READ,
    TOPIC,
    TOPIC_DENIED,
    acl,
    authorizer_on,
    grant,
)
from tests.support.api import PRINCIPAL_HEADER, Answer, Api
from tests.support.classic_client import ClassicClient, encode_subscription
from tests.support.consumer import Member, create_topic
from tests.support.consumer import settle as settle_members
from tests.support.kinesis import Streams, kinesis_topic, streams_fixture
from tests.support.servers import IMMEDIATE_INSTALLS, running_coordinator
from tests.support.streams import STREAMS_SETTINGS, StreamsMember, counter, describe, settle

ALICE, BOB = "User:alice", "User:bob"
MISSING_SOURCE_TOPICS = 1
UNKNOWN_TOPIC = 3
SESSION_MS = 30000  # alice's classic member outlives the replay on a busy machine

streams = streams_fixture()


class Recorded(Api):
    """An Api that keeps every answer it got: what bob learnt."""

    def __init__(self, base_url: str, principal: str) -> None:
        super().__init__(base_url, principal=principal)
        self.heard: list[Any] = []

    def call(self, api: str, body: Any = None, **kwargs: Any) -> Answer:
        answer = super().call(api, body, **kwargs)
        self.heard.append(answer.body)
        return answer


@dataclass
class Deployment:
    url: str
    front_door: str
    admin: Api
    alice: Api
    bob: Recorded
    alices_stream: str
    bobs_stream: str


@pytest.fixture(scope="module", params=["HttpApi", "FunctionUrl"])
def deployment(request: pytest.FixtureRequest, streams: Streams) -> Iterator[Deployment]:
    suffix = uuid.uuid4().hex[:8]
    alices = streams.create(1, f"ta-orders-{suffix}")
    bobs = streams.create(1, f"tb-orders-{suffix}")
    prefix = alices.rsplit("/", 1)[0] + "/"
    settings = {
        **STREAMS_SETTINGS,
        **IMMEDIATE_INSTALLS,
        **authorizer_on(ADMIN),
        "groupcoord.kinesis.stream.binders": f"{ALICE}={prefix}ta-*;{BOB}={bobs}",
    }
    with running_coordinator(
        settings, principal_header=PRINCIPAL_HEADER, front_door=request.param
    ) as coordinator:
        url = coordinator.url
        admin = Api(url, principal=ADMIN)
        grant(
            admin,
            *(
                acl(kind, name, who, operation, pattern=PREFIXED)
                for who, groups, topics in ((ALICE, "a-", "ta-"), (BOB, "b-", "tb-"))
                for kind, name, operation in (
                    (GROUP, groups, READ),
                    (TOPIC, topics, READ),
                    (TOPIC, topics, CREATE),
                )
            ),
        )
        alice, bob = Api(url, principal=ALICE), Recorded(url, BOB)
        yield Deployment(url, request.param, admin, alice, bob, alices, bobs)
    for arn in (alices, bobs):
        streams.delete(arn.rsplit("/", 1)[1])


def _exists(admin: Api, topic: str) -> bool:
    found = admin.ok("metadata", {"topics": [{"name": topic}]})["topics"][0]
    return found["errorCode"] != UNKNOWN_TOPIC


# --- 7. binding a stream ---


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


# --- the replay ---


@dataclass
class Alice:
    """alice's running state: her members, her topics and groups."""

    streams: StreamsMember
    consumer: Member
    classic: ClassicClient
    kinesis: Member
    topics: list[str]
    groups: list[str]
    hidden_group: str


def _classic(url: str, group: str, api: Api, topic: str, **fields: Any) -> ClassicClient:
    client = ClassicClient(
        url,
        group,
        protocols=[("range", encode_subscription([topic]))],
        session_timeout_ms=SESSION_MS,
        **fields,
    )
    client.api = api
    return client


def _alice(d: Deployment, s: str) -> Alice:
    words, secret, hidden = f"ta-words-{s}", f"ta-secret-{s}", f"ta-hidden-{s}"
    for topic, partitions in ((words, 2), (secret, 2), (hidden, 3)):
        create_topic(d.admin, topic, partitions)
    kin = f"ta-kin-{s}"
    assert kinesis_topic(d.alice, kin, d.alices_stream)["errorCode"] == 0
    app = f"ta-app-{s}"
    groups = [f"a-streams-{s}", f"a-cons-{s}", f"a-classic-{s}", f"a-kin-{s}"]
    stream = StreamsMember(d.alice, groups[0], counter(words, app), instanceId=f"i-{s}")
    assert stream.join()["errorCode"] == 0
    settle([stream])
    consumer = Member(d.alice, groups[1], topics=[secret])
    assert consumer.join()["errorCode"] == 0
    consumer.heartbeat()
    commit = {
        "groupId": groups[1],
        "memberId": consumer.member_id,
        "generationIdOrMemberEpoch": consumer.epoch,
        "topics": [{"name": secret, "partitions": [{"partitionIndex": 0, "committedOffset": 7}]}],
    }
    assert d.alice.ok("offset-commit", commit)["topics"][0]["partitions"][0]["errorCode"] == 0
    classic = _classic(d.url, groups[2], d.alice, secret)
    assert classic.join()["errorCode"] == 0
    assert classic.sync({classic.member_id: b""})["errorCode"] == 0
    kinesis = Member(d.alice, groups[3], topics=[kin])
    assert kinesis.join()["errorCode"] == 0
    kinesis.heartbeat()
    settle_members([consumer, kinesis])
    # A group of hers bob may not see at all (on a topic no group of hers reads: `hidden` is
    # the one that grows, below).
    hidden_group = f"a-private-{s}"
    assert Member(d.alice, hidden_group, topics=[secret]).join()["errorCode"] == 0
    topics = [words, secret, hidden, kin, f"{app}-counts-changelog"]
    return Alice(stream, consumer, classic, kinesis, topics, groups, hidden_group)


def _state(admin: Api, alice: Alice) -> dict[str, Any]:
    """Everything of alice's, as the super user reads it."""
    groups = [*alice.groups, alice.hidden_group]
    return {
        "streams": describe(admin, alice.groups[0]),
        "consumer": admin.ok("consumer-group-describe", {"groupIds": groups[1:]})["groups"],
        "classic": admin.ok("describe-groups", {"groups": [alice.groups[2]]})["groups"],
        "offsets": admin.ok(
            "offset-fetch", {"groups": [{"groupId": g, "topics": None} for g in groups]}
        )["groups"],
        "topics": sorted(
            (t["name"], len(t["partitions"])) for t in admin.ok("metadata", {})["topics"]
        ),
    }


def _pages(api: Api) -> list[list[str]]:
    pages: list[list[str]] = []
    body: dict[str, Any] = {"limit": 1}
    for _ in range(1000):
        page = api.ok("list-groups", body)
        pages.append([g["groupId"] for g in page["groups"]])
        if page.get("nextCursor") is None:
            return pages
        body = {"limit": 1, "cursor": page["nextCursor"]}
    raise AssertionError("list-groups never ended")


def _regex_topology(regex: str) -> dict[str, Any]:
    return {"epoch": 1, "subtopologies": [{"subtopologyId": "0", "sourceTopicRegex": [regex]}]}


def _regex_group(d: Deployment, alice: Alice, s: str) -> None:
    """2. bob's regex group matches alice's topics too: it is sized by his own alone, and
    alice's topic growing moves nothing of his (no epoch side channel)."""
    endpoint = {"userEndpoint": {"host": "127.0.0.1", "port": 9000}}
    regex = StreamsMember(d.bob, f"b-rx-{s}", _regex_topology(f"t[ab]-.*-{s}"), **endpoint)
    assert regex.join()["errorCode"] == 0
    settle([regex])
    epoch = regex.epoch
    grown = d.admin.ok("create-partitions", {"topics": [{"name": alice.topics[2], "count": 5}]})
    assert grown["results"][0]["errorCode"] == 0
    settle([regex])
    assert (regex.epoch, regex.active) == (epoch, {"0": {0}})


def _joins_and_commits(d: Deployment, alice: Alice, own: str, s: str) -> None:
    """1. Joins naming alice's members, in each family, each sent twice (a retry too); then
    commits into her groups, as her member and from outside."""
    bob, evil = d.bob, f"tb-evil-{s}-changelog"
    topology = {
        "epoch": 2,
        "subtopologies": [
            {"subtopologyId": "0", "sourceTopics": [own], "stateChangelogTopics": [{"name": evil}]}
        ],
    }
    by_id = StreamsMember(bob, alice.groups[0], topology)
    by_id.member_id = alice.streams.member_id
    by_instance = StreamsMember(bob, alice.groups[0], topology, instanceId=f"i-{s}")
    # Consumer-protocol joins under her consumer group's member, her Kinesis-backed group's,
    # and her classic member (which would upgrade her classic group).
    impostors = []
    for group, member_id in (
        (alice.groups[1], alice.consumer.member_id),
        (alice.groups[3], alice.kinesis.member_id),
        (alice.groups[2], alice.classic.member_id),
    ):
        impostors.append(Member(bob, group, topics=[own]))
        impostors[-1].member_id = member_id
    classic = _classic(d.url, alice.groups[2], bob, own, member_id=alice.classic.member_id)
    for _ in range(2):
        assert by_id.join()["errorCode"] == GROUP_DENIED
        assert by_instance.join()["errorCode"] == GROUP_DENIED
        assert [m.join()["errorCode"] for m in impostors] == [GROUP_DENIED] * 3
        assert classic.join_once().body["errorCode"] == GROUP_DENIED
    partitions = [{"partitionIndex": 0, "committedOffset": 99}]
    for group, member in ((alice.groups[1], alice.consumer), (alice.groups[3], alice.kinesis)):
        as_member = {"memberId": member.member_id, "generationIdOrMemberEpoch": member.epoch}
        for fields in (as_member, {}):
            body = {"groupId": group, "topics": [{"name": own, "partitions": partitions}], **fields}
            answer = bob.ok("offset-commit", body)
            assert answer["topics"][0]["partitions"][0]["errorCode"] != 0, answer


def _no_oracle(d: Deployment, s: str) -> None:
    """2. A regex matching only alice's topic answers as one matching nothing."""
    probes = []
    for pattern in (f"ta-hid+en-{s}", f"ta-nothing+-{s}"):
        probe = StreamsMember(d.bob, f"b-probe-{uuid.uuid4().hex[:8]}", _regex_topology(pattern))
        assert probe.join()["errorCode"] == 0
        probe.heartbeat()
        probes.append((probe.statuses(), probe.active))
    assert probes[0] == probes[1] == ([MISSING_SOURCE_TOPICS], {}), probes


def _listings(d: Deployment, alice: Alice) -> None:
    """3. A plain cursor (the super user's) presented by bob; 4. one page per group bob may
    see, whatever else the table holds."""
    plain = d.admin.ok("list-groups", {"limit": 1})["nextCursor"]
    assert plain is not None and plain.startswith("L1.")
    assert d.bob.call("list-groups", {"limit": 1, "cursor": plain}).status == 400
    pages = _pages(d.bob)
    listed = [g for page in pages for g in page]
    assert all(len(page) == 1 for page in pages), pages
    everything = [g for page in _pages(d.admin) for g in page]
    assert alice.hidden_group in everything and set(alice.groups) <= set(listed)
    assert listed == [g for g in everything if g.startswith("b-") or g in alice.groups]


def _descriptions(d: Deployment, alice: Alice) -> None:
    """5, 6. DESCRIBE on alice's groups and none on her topics: 29, with nothing of hers."""
    for group in alice.groups:
        body = {"groupIds": [group], "includeMembers": True}
        seen = d.bob.ok("describe-group-activity", body)["groups"][0]
        assert seen["errorCode"] == TOPIC_DENIED, seen
    seen = d.bob.ok("streams-group-describe", {"groupIds": [alice.groups[0]]})["groups"][0]
    assert seen["errorCode"] == TOPIC_DENIED and not seen["members"] and seen["topology"] is None


def test_bob_replays_the_seven_attacks_and_alice_s_state_is_unchanged(
    deployment: Deployment,
) -> None:
    d, s = deployment, uuid.uuid4().hex[:8]
    if d.front_door != "FunctionUrl":
        pytest.skip("the attacks one by one run through both front doors; the replay, the router")
    alice = _alice(d, s)
    grant(d.admin, *(acl(GROUP, g, BOB, READ) for g in alice.groups))
    own = f"tb-own-{s}"
    create_topic(d.admin, own, 1)
    _regex_group(d, alice, s)
    before = _state(d.admin, alice)

    _joins_and_commits(d, alice, own, s)
    assert _state(d.admin, alice) == before
    _no_oracle(d, s)
    _listings(d, alice)
    _descriptions(d, alice)
    # 7. Binding alice's stream to a topic of bob's (validate-only too).
    for extra in ({}, {"validateOnly": True}):
        refused = kinesis_topic(d.bob, f"tb-mirror-{s}", d.alices_stream, **extra)
        assert refused["errorCode"] == TOPIC_DENIED, refused

    # Nothing of alice's changed, and her members go on at their epochs.
    assert _state(d.admin, alice) == before
    assert alice.streams.heartbeat()["errorCode"] == 0
    assert alice.streams.epoch == before["streams"]["members"][0]["memberEpoch"]
    for member in (alice.consumer, alice.kinesis):
        epoch = member.epoch
        assert member.heartbeat()["errorCode"] == 0 and member.epoch == epoch
    assert alice.classic.heartbeat() == 0
    # No answer bob got names a topic of alice's or the group he may not see.
    heard = repr(d.bob.heard)
    leaked = [name for name in (*alice.topics, alice.hidden_group) if name in heard]
    assert not leaked, leaked
