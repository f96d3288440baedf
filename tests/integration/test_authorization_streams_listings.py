"""Authorization, round two (issue 42), over HTTP with the authorizer on, through both front
doors (template.yaml's FrontDoor: HttpApi's three functions, FunctionUrl's router): alice runs
groups `a-*` on topics `ta-*`, bob `b-*` on `tb-*`, and nothing bob does changes alice's state
or names anything of hers.

- a refused streams join (alice's member id, or her static instance) changes nothing;
- a streams regex source resolves only over the topics the members may describe, and moves
  the group only when that visible set changes;
- list-groups takes only sealed cursors from a filtered caller, and its page count follows
  the groups the caller sees, not the table;
- describe-group-activity and streams-group-describe answer 29 for a group whose topics the
  caller may not describe, and describe shows a regex's resolved topics (issue 44).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from groupcoord.store.store import Store
from tests.support.acls import (
    ADMIN,
    CREATE,
    DESCRIBE,
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
from tests.support.api import PRINCIPAL_HEADER, Api
from tests.support.classic_client import ClassicClient, encode_subscription
from tests.support.consumer import Member, create_topic
from tests.support.servers import IMMEDIATE_INSTALLS, running_coordinator
from tests.support.streams import STREAMS_SETTINGS, StreamsMember, counter, describe, settle

ALICE, BOB = "User:alice", "User:bob"
MISSING_SOURCE_TOPICS = 1
UNKNOWN_TOPIC = 3
# Streams groups of one member at most (every group here has one; a second is refused, 81).
SETTINGS = {
    **STREAMS_SETTINGS,
    **IMMEDIATE_INSTALLS,
    **authorizer_on(ADMIN),
    "group.streams.max.size": "1",
}
GROUP_MAX_SIZE_REACHED = 81


@dataclass
class Tenants:
    url: str
    store: Store
    admin: Api
    alice: Api
    bob: Api


@pytest.fixture(scope="module", params=["HttpApi", "FunctionUrl"])
def tenants(request: pytest.FixtureRequest) -> Iterator[Tenants]:
    with running_coordinator(
        SETTINGS, principal_header=PRINCIPAL_HEADER, front_door=request.param
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
        yield Tenants(
            url, coordinator.store, admin, Api(url, principal=ALICE), Api(url, principal=BOB)
        )


def _suffix() -> str:
    return uuid.uuid4().hex[:8]


def _exists(admin: Api, topic: str) -> bool:
    found = admin.ok("metadata", {"topics": [{"name": topic}]})["topics"][0]
    assert found["errorCode"] in (0, UNKNOWN_TOPIC), found
    return found["errorCode"] == 0


# --- 1. a refused streams join changes nothing ---


def _snapshot(admin: Api, group: str) -> dict[str, Any]:
    found = describe(admin, group)
    return {
        "groupEpoch": found["groupEpoch"],
        "assignmentEpoch": found["assignmentEpoch"],
        "topology": found["topology"],
        "members": [(m["memberId"], m["instanceId"], m["memberEpoch"]) for m in found["members"]],
    }


@pytest.mark.parametrize("static", [False, True], ids=["member-id", "static-takeover"])
def test_a_refused_streams_join_changes_nothing(tenants: Tenants, static: bool) -> None:
    s = _suffix()
    words, group = f"ta-words-{s}", f"a-streams-{s}"
    create_topic(tenants.admin, words, 2)
    fields = {"instanceId": f"i-{s}"} if static else {}
    alice = StreamsMember(tenants.alice, group, counter(words, f"ta-app-{s}"), **fields)
    assert alice.join()["errorCode"] == 0
    settle([alice])
    # bob may READ alice's group (only ownership stops him) and describe his own topics.
    grant(tenants.admin, acl(GROUP, group, BOB, READ))
    own = f"tb-src-{s}"
    create_topic(tenants.admin, own, 1)
    evil = f"tb-evil-{s}-changelog"
    topology = {
        "epoch": 2,
        "subtopologies": [
            {
                "subtopologyId": "0",
                "sourceTopics": [own],
                "stateChangelogTopics": [{"name": evil}],
            }
        ],
    }
    before = _snapshot(tenants.admin, group)

    bob = StreamsMember(tenants.bob, group, topology)
    if not static:
        bob.member_id = alice.member_id
    for _ in range(2):  # the retry of a refused join too
        answer = bob.join(**fields)
        assert answer["errorCode"] == GROUP_DENIED, answer

    assert _snapshot(tenants.admin, group) == before
    assert not _exists(tenants.admin, evil)
    assert alice.heartbeat()["errorCode"] == 0 and alice.epoch == before["members"][0][2]

    # A new member of bob's own, refused by the full group, leaves the topology alone too.
    bob = StreamsMember(tenants.bob, group, topology)
    assert bob.join()["errorCode"] == GROUP_MAX_SIZE_REACHED
    assert _snapshot(tenants.admin, group) == before
    assert not _exists(tenants.admin, evil)


def _classic(url: str, group: str, principal: str, topic: str, names: list[str], **fields: Any):
    client = ClassicClient(
        url,
        group,
        protocols=[(n, encode_subscription([topic])) for n in names],
        session_timeout_ms=6000,
        **fields,
    )
    client.api.session.headers[PRINCIPAL_HEADER] = principal
    return client


def test_a_refused_join_does_not_upgrade_a_classic_group(tenants: Tenants) -> None:
    """bob's consumer-protocol join under alice's classic member id would upgrade her classic
    group before its binding is checked: refused first, the group stays classic."""
    s = _suffix()
    topic, group = f"ta-up-{s}", f"a-up-{s}"
    create_topic(tenants.admin, topic, 2)
    alice = _classic(tenants.url, group, ALICE, topic, ["range"])
    assert alice.join()["errorCode"] == 0
    assert alice.sync({alice.member_id: b""})["errorCode"] == 0
    grant(tenants.admin, acl(GROUP, group, BOB, READ))
    bob = Member(tenants.bob, group, topics=[f"tb-up-{s}"])
    bob.member_id = alice.member_id
    assert bob.join()["errorCode"] == GROUP_DENIED
    found = tenants.admin.ok("describe-groups", {"groups": [group]})["groups"][0]
    assert (found["protocolType"], found["groupState"]) == ("consumer", "Stable"), found
    assert alice.heartbeat() == 0


def test_a_refused_classic_join_leaves_a_mixed_group_as_it_was(tenants: Tenants) -> None:
    """bob's classic join under alice's classic member id of a consumer group: refused before
    the group's common classic protocols are narrowed to his (a write of the group item)."""
    s = _suffix()
    topic, group = f"ta-mixed-{s}", f"a-mixed-{s}"
    create_topic(tenants.admin, topic, 2)
    alice = _classic(tenants.url, group, ALICE, topic, ["range", "roundrobin"])
    assert alice.join()["errorCode"] == 0
    assert alice.sync({alice.member_id: b""})["errorCode"] == 0
    assert Member(tenants.alice, group, topics=[topic]).join()["errorCode"] == 0  # upgrades
    grant(tenants.admin, acl(GROUP, group, BOB, READ))
    before = tenants.store.consumer.group_item(group, consistent=True)
    own = f"tb-mixed-{s}"
    create_topic(tenants.admin, own, 1)
    bob = _classic(tenants.url, group, BOB, own, ["range"], member_id=alice.member_id)
    assert bob.join_once().body["errorCode"] == GROUP_DENIED
    assert tenants.store.consumer.group_item(group, consistent=True) == before


# --- 2. a regex resolves over what the members may describe ---


def _regex_topology(regex: str) -> dict[str, Any]:
    return {"epoch": 1, "subtopologies": [{"subtopologyId": "0", "sourceTopicRegex": [regex]}]}


def _endpoint_topics(answer: dict[str, Any]) -> set[str]:
    return {
        tp["topic"]
        for line in answer.get("partitionsByUserEndpoint") or ()
        for tp in (*line["activePartitions"], *line["standbyPartitions"])
    }


def test_a_streams_regex_resolves_only_topics_the_member_may_describe(tenants: Tenants) -> None:
    s = _suffix()
    secret, own = f"ta-rx-{s}-secret", f"tb-rx-{s}-own"
    create_topic(tenants.admin, secret, 3)
    create_topic(tenants.admin, own, 1)
    endpoint = {"userEndpoint": {"host": "127.0.0.1", "port": 9000}}
    bob = StreamsMember(tenants.bob, f"b-rx-{s}", _regex_topology(f"t[ab]-rx-{s}-.*"), **endpoint)
    assert bob.join()["errorCode"] == 0
    settle([bob])
    # Tasks sized by bob's one-partition topic alone; the endpoints map names only it.
    assert bob.active == {"0": {0}}
    assert _endpoint_topics(bob.heartbeat()) == {own}
    epoch = bob.epoch

    # alice's topic grows, and a new one of hers matches: bob's group hears of none of it.
    grown = tenants.admin.ok("create-partitions", {"topics": [{"name": secret, "count": 5}]})
    assert grown["results"][0]["errorCode"] == 0
    create_topic(tenants.admin, f"ta-rx-{s}-more", 4)
    settle([bob])
    assert (bob.epoch, bob.active) == (epoch, {"0": {0}})

    # One of bob's own does move it on.
    create_topic(tenants.admin, f"tb-rx-{s}-two", 2)
    settle([bob])
    assert bob.epoch > epoch and bob.active == {"0": {0, 1}}

    # No existence oracle: a regex that names only alice's topic answers as one naming none.
    statuses = []
    for regex in (f"ta-rx-{s}-secret", f"ta-rx-{s}-nothing"):
        probe = StreamsMember(
            tenants.bob, f"b-probe-{uuid.uuid4().hex[:8]}", _regex_topology(regex)
        )
        assert probe.join()["errorCode"] == 0
        probe.heartbeat()
        statuses.append((probe.statuses(), probe.active))
    assert statuses[0] == statuses[1] == ([MISSING_SOURCE_TOPICS], {}), statuses


# --- 3, 4. list-groups: sealed cursors only, and pages that follow what the caller sees ---


def _pages(api: Api, limit: int) -> list[list[str]]:
    pages: list[list[str]] = []
    body: dict[str, Any] = {"limit": limit}
    for _ in range(1000):
        page = api.ok("list-groups", body)
        pages.append([g["groupId"] for g in page["groups"]])
        if page.get("nextCursor") is None:
            return pages
        body = {"limit": limit, "cursor": page["nextCursor"]}
    raise AssertionError("list-groups never ended")


def test_a_filtered_caller_may_not_present_a_plain_cursor(tenants: Tenants) -> None:
    s = _suffix()
    topic = f"ta-plain-{s}"
    create_topic(tenants.admin, topic, 1)
    Member(tenants.alice, f"a-plain-{s}", topics=[topic]).join()
    plain = tenants.admin.ok("list-groups", {"limit": 1})["nextCursor"]
    assert plain is not None and plain.startswith("L1.")
    forged = tenants.bob.call("list-groups", {"limit": 1, "cursor": plain})
    assert forged.status == 400 and "cursor" in forged.body["errorMessage"], forged.body
    # The one who may see every group still may.
    assert tenants.admin.call("list-groups", {"limit": 1, "cursor": plain}).status == 200


def test_list_groups_pages_do_not_count_hidden_groups(tenants: Tenants) -> None:
    s = _suffix()
    topic, own = f"ta-count-{s}", f"tb-count-{s}"
    create_topic(tenants.admin, topic, 1)
    create_topic(tenants.admin, own, 1)
    for i in range(2):
        Member(tenants.bob, f"b-count-{s}-{i}", topics=[own]).join()
    for i in range(5):
        Member(tenants.alice, f"a-count-{s}-{i}", topics=[topic]).join()
    before = _pages(tenants.bob, limit=1)
    # One page per group bob may see, each holding one: every one of his once, in id order.
    assert all(len(page) == 1 for page in before), before
    listed = [g for page in before for g in page]
    assert listed == sorted(set(listed)) and {f"b-count-{s}-{i}" for i in range(2)} <= set(listed)
    assert [g for page in _pages(tenants.bob, limit=2) for g in page] == listed
    Member(tenants.alice, f"a-count-{s}-more", topics=[topic]).join()
    assert _pages(tenants.bob, limit=1) == before


# --- 5. describe-group-activity hides what the caller may not describe ---


def test_group_activity_answers_29_for_topics_the_caller_may_not_describe(
    tenants: Tenants,
) -> None:
    s = _suffix()
    secret, group = f"ta-act-{s}", f"a-act-{s}"
    create_topic(tenants.admin, secret, 2)
    alice = Member(tenants.alice, group, topics=[secret])
    assert alice.join()["errorCode"] == 0
    alice.heartbeat()
    grant(tenants.admin, acl(GROUP, group, BOB, DESCRIBE))
    for detail in (False, True):
        body = {"groupIds": [group], "includeMembers": detail}
        seen = tenants.bob.ok("describe-group-activity", body)["groups"][0]
        assert seen["errorCode"] == TOPIC_DENIED, seen
        assert secret not in str(seen)
        mine = tenants.alice.ok("describe-group-activity", body)["groups"][0]
        assert mine["errorCode"] == 0 and secret in mine["subscribedTopics"], mine


# --- 6. streams-group-describe: 29 unless every topic of the topology is describable ---


def test_streams_describe_answers_29_for_topics_the_caller_may_not_describe(
    tenants: Tenants,
) -> None:
    s = _suffix()
    words, group = f"ta-dw-{s}", f"a-ds-{s}"
    create_topic(tenants.admin, words, 2)
    alice = StreamsMember(tenants.alice, group, counter(words, f"ta-dapp-{s}"))
    assert alice.join()["errorCode"] == 0
    settle([alice])
    grant(tenants.admin, acl(GROUP, group, BOB, DESCRIBE))
    seen = tenants.bob.ok("streams-group-describe", {"groupIds": [group]})["groups"][0]
    assert seen["errorCode"] == TOPIC_DENIED, seen
    assert not seen["members"] and seen["topology"] is None
    assert words not in str(seen)
    assert describe(tenants.alice, group)["errorCode"] == 0


def test_streams_describe_shows_the_topics_a_regex_resolved(tenants: Tenants) -> None:
    s = _suffix()
    own, other = f"tb-drx-{s}-a", f"tb-drx-{s}-b"
    create_topic(tenants.admin, own, 1)
    create_topic(tenants.admin, other, 2)
    create_topic(tenants.admin, f"ta-drx-{s}-secret", 1)
    group = f"b-drx-{s}"
    bob = StreamsMember(tenants.bob, group, _regex_topology(f"t[ab]-drx-{s}-.*"))
    assert bob.join()["errorCode"] == 0
    settle([bob])
    sub = describe(tenants.bob, group)["topology"]["subtopologies"][0]
    assert sub["sourceTopics"] == [own, other]
    # The super user sees what the group resolved: bob's topics, never alice's.
    sub = describe(tenants.admin, group)["topology"]["subtopologies"][0]
    assert sub["sourceTopics"] == [own, other]
    # A caller who may describe the group and only one of its resolved topics sees that one.
    grant(tenants.admin, acl(GROUP, group, ALICE, DESCRIBE), acl(TOPIC, own, ALICE, DESCRIBE))
    sub = describe(tenants.alice, group)["topology"]["subtopologies"][0]
    assert sub["sourceTopics"] == [own]
