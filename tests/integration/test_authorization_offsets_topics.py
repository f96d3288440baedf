"""Kafka's authorization checks in the offset and topic APIs, over HTTP against a coordinator
with the authorizer on: a caller without the ACL is refused with Kafka's code and the refusal
changes nothing (as the super user sees); a caller with it (LITERAL or PREFIXED; a DENY wins
over an ALLOW) is served; a request naming several topics is answered topic by topic; the
all-topics forms leave out what the caller may not describe.

Each test acts as principals of its own (`unique`), so one test's ACLs grant nothing to
another's callers."""

from __future__ import annotations

from typing import Any

import pytest

from tests.support.acls import (
    ALTER,
    CLUSTER,
    CREATE,
    DELETE,
    DENY,
    DESCRIBE,
    DESCRIBE_CONFIGS,
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
from tests.support.consumer import create_topic, unique

SETTINGS = authorizer_on()
ZERO_ID = "AAAAAAAAAAAAAAAAAAAAAA"
UNKNOWN_ID = "AAAAAAAAAAAAAAAAAAAAAQ"
UNKNOWN_TOPIC, UNKNOWN_TOPIC_ID = 3, 100


pytestmark = pytest.mark.coordinator(SETTINGS, principal_header=PRINCIPAL_HEADER)


def caller(url: str, name: str) -> tuple[str, Api]:
    """A principal of this test alone, and a client acting as it."""
    principal = unique(f"User:{name}")
    return principal, Api(url, principal=principal)


def topic_id_of(admin: Api, topic: str) -> str:
    (shown,) = admin.ok("metadata", {"topics": [{"name": topic}]})["topics"]
    assert shown["errorCode"] == 0, shown
    return shown["topicId"]


def partitions_of(admin: Api, topic: str) -> int | None:
    """The topic's partition count as the super user sees it; None when it does not exist."""
    (shown,) = admin.ok("metadata", {"topics": [{"name": topic}]})["topics"]
    if shown["errorCode"] == UNKNOWN_TOPIC:
        return None
    assert shown["errorCode"] == 0, shown
    return len(shown["partitions"])


# --- offsets ---


def commit_body(group: str, offsets: dict[str, dict[int, int]]) -> dict[str, Any]:
    """A commit from outside any group (generation -1, no member id)."""
    return {
        "groupId": group,
        "generationIdOrMemberEpoch": -1,
        "memberId": "",
        "topics": [
            {
                "name": topic,
                "partitions": [
                    {"partitionIndex": p, "committedOffset": o} for p, o in partitions.items()
                ],
            }
            for topic, partitions in offsets.items()
        ],
    }


def commit(api: Api, group: str, offsets: dict[str, dict[int, int]]) -> dict[str, list[int]]:
    """Each topic's partition error codes."""
    body = api.ok("offset-commit", commit_body(group, offsets))
    return {t["name"]: [p["errorCode"] for p in t["partitions"]] for t in body["topics"]}


def by_id_commit(group: str, topic_id: str) -> dict[str, Any]:
    partitions = [{"partitionIndex": 0, "committedOffset": 1}]
    return {**commit_body(group, {}), "topics": [{"topicId": topic_id, "partitions": partitions}]}


def fetch_request(group: str, topics: dict[str, list[int]] | None) -> dict[str, Any]:
    wanted = (
        None
        if topics is None
        else [{"name": t, "partitionIndexes": ps} for t, ps in topics.items()]
    )
    return {"groupId": group, "topics": wanted}


def fetch(api: Api, group: str, topics: dict[str, list[int]] | None) -> dict[str, Any]:
    (answer,) = api.ok("offset-fetch", {"groups": [fetch_request(group, topics)]})["groups"]
    return answer


def offsets_of(answer: dict[str, Any]) -> dict[str, dict[int, tuple[int, int]]]:
    """topic -> partition -> (committed offset, error code)."""
    return {
        t["name"]: {
            p["partitionIndex"]: (p["committedOffset"], p["errorCode"]) for p in t["partitions"]
        }
        for t in answer["topics"]
    }


def committed(admin: Api, group: str, topic: str, partitions: list[int]) -> list[int]:
    got = offsets_of(fetch(admin, group, {topic: partitions}))[topic]
    return [got[p][0] for p in partitions]


def test_offset_commit_needs_read_on_the_group(url: str, admin: Api) -> None:
    topic = unique("commit-t")
    topic_id = create_topic(admin, topic, 2)
    group = unique("commit-g")
    assert commit(admin, group, {topic: {0: 5, 1: 6}}) == {topic: [0, 0]}
    alice, as_alice = caller(url, "alice")

    # READ on the topic is not enough: every partition answers 30, nothing is written.
    grant(admin, acl(TOPIC, topic, alice, READ))
    assert commit(as_alice, group, {topic: {0: 9, 1: 9}}) == {topic: [GROUP_DENIED] * 2}
    assert committed(admin, group, topic, [0, 1]) == [5, 6]
    # The group is checked before any topic is read: one named by id alone answers as asked.
    (refused,) = as_alice.ok("offset-commit", by_id_commit(group, topic_id))["topics"]
    assert (refused["name"], refused["topicId"]) == ("", topic_id)
    assert [p["errorCode"] for p in refused["partitions"]] == [GROUP_DENIED]
    # A refused commit to a group that does not exist does not create it.
    fresh = unique("commit-g")
    assert commit(as_alice, fresh, {topic: {0: 1}}) == {topic: [GROUP_DENIED]}
    assert fetch(admin, fresh, None)["topics"] == []
    assert not any(g["groupId"] == fresh for g in admin.ok("list-groups", {})["groups"])

    # READ on the group by a PREFIXED ACL: served.
    grant(admin, acl(GROUP, group[:-4], alice, READ, pattern=PREFIXED))
    assert commit(as_alice, group, {topic: {0: 9, 1: 10}}) == {topic: [0, 0]}
    assert committed(admin, group, topic, [0, 1]) == [9, 10]

    # A LITERAL DENY on the group wins over the PREFIXED ALLOW.
    grant(admin, acl(GROUP, group, alice, READ, permission=DENY))
    assert commit(as_alice, group, {topic: {0: 11}}) == {topic: [GROUP_DENIED]}
    assert committed(admin, group, topic, [0, 1]) == [9, 10]


def test_offset_commit_answers_each_topic_and_commits_only_the_readable_ones(
    url: str, admin: Api
) -> None:
    prefix = unique("mixed")
    readable, denied, elsewhere = f"{prefix}.a", f"{prefix}.b", unique("elsewhere")
    for topic in (readable, denied, elsewhere):
        create_topic(admin, topic, 2)
    missing = unique("missing")  # no ACL names it, and it is not a topic
    group = unique("mixed-g")
    bob, as_bob = caller(url, "bob")
    grant(admin, acl(GROUP, group, bob, READ))
    grant(admin, acl(TOPIC, f"{prefix}.", bob, READ, pattern=PREFIXED))
    grant(admin, acl(TOPIC, denied, bob, READ, permission=DENY))

    answer = commit(
        as_bob,
        group,
        {readable: {0: 3, 1: 4}, denied: {0: 3}, elsewhere: {1: 3}, missing: {0: 3}},
    )
    assert answer == {
        readable: [0, 0],
        denied: [TOPIC_DENIED],
        elsewhere: [TOPIC_DENIED],
        # Denied answers 29 whether or not the topic exists: its existence stays private.
        missing: [TOPIC_DENIED],
    }
    assert committed(admin, group, readable, [0, 1]) == [3, 4]
    assert committed(admin, group, denied, [0]) == [-1]
    assert committed(admin, group, elsewhere, [1]) == [-1]

    # By id alone: a topic the caller may not read answers 29 without its name; an unknown id
    # is not secret (100).
    (refused,) = as_bob.ok("offset-commit", by_id_commit(group, topic_id_of(admin, denied)))[
        "topics"
    ]
    assert (refused["name"], refused["partitions"][0]["errorCode"]) == ("", TOPIC_DENIED)
    (unknown,) = as_bob.ok("offset-commit", by_id_commit(group, UNKNOWN_ID))["topics"]
    assert unknown["partitions"][0]["errorCode"] == UNKNOWN_TOPIC_ID
    # Allowed to read a topic that does not exist: Kafka's 3, as without the authorizer.
    grant(admin, acl(TOPIC, missing, bob, READ))
    assert commit(as_bob, group, {missing: {0: 1}}) == {missing: [UNKNOWN_TOPIC]}


def test_offset_fetch_needs_describe_on_the_group_and_each_topic(url: str, admin: Api) -> None:
    visible, hidden = unique("fetch-a"), unique("fetch-b")
    for topic in (visible, hidden):
        create_topic(admin, topic, 2)
    group, other_group = unique("fetch-g"), unique("fetch-g")
    for g in (group, other_group):
        assert commit(admin, g, {visible: {0: 1, 1: 2}, hidden: {0: 3}}) == {
            visible: [0, 0],
            hidden: [0],
        }
    carol, as_carol = caller(url, "carol")
    grant(admin, acl(TOPIC, visible, carol, DESCRIBE))

    # No DESCRIBE on the group: 30 for the group, named topics or all of them.
    for topics in ({visible: [0]}, None):
        answer = fetch(as_carol, group, topics)
        assert (answer["errorCode"], answer["topics"]) == (GROUP_DENIED, [])

    # READ implies DESCRIBE. Groups are answered one by one in one request.
    grant(admin, acl(GROUP, group, carol, READ))
    body = as_carol.ok(
        "offset-fetch",
        {"groups": [fetch_request(group, {visible: [0]}), fetch_request(other_group, None)]},
    )
    first, second = body["groups"]
    assert (first["errorCode"], offsets_of(first)) == (0, {visible: {0: (1, 0)}})
    assert (second["groupId"], second["errorCode"]) == (other_group, GROUP_DENIED)

    # Named topics: each answered on its own; one the caller may not describe is 29 and -1,
    # whether or not it exists.
    missing = unique("fetch-missing")
    answer = fetch(as_carol, group, {visible: [0, 1], hidden: [0], missing: [0]})
    assert answer["errorCode"] == 0
    assert offsets_of(answer) == {
        visible: {0: (1, 0), 1: (2, 0)},
        hidden: {0: (-1, TOPIC_DENIED)},
        missing: {0: (-1, TOPIC_DENIED)},
    }
    # All topics: the undescribable one is left out, silently.
    assert offsets_of(fetch(as_carol, group, None)) == {visible: {0: (1, 0), 1: (2, 0)}}
    assert set(offsets_of(fetch(admin, group, None))) == {visible, hidden}

    # A DENY of DESCRIBE on the topic wins over the ALLOW.
    grant(admin, acl(TOPIC, visible, carol, DESCRIBE, permission=DENY))
    assert offsets_of(fetch(as_carol, group, None)) == {}
    assert offsets_of(fetch(as_carol, group, {visible: [0]})) == {visible: {0: (-1, TOPIC_DENIED)}}


def offset_delete(api: Api, group: str, topics: dict[str, list[int]]) -> dict[str, Any]:
    return api.ok(
        "offset-delete",
        {
            "groupId": group,
            "topics": [
                {"name": t, "partitions": [{"partitionIndex": p} for p in ps]}
                for t, ps in topics.items()
            ],
        },
    )


def test_offset_delete_needs_delete_on_the_group_and_read_on_each_topic(
    url: str, admin: Api
) -> None:
    topic, other = unique("odel-a"), unique("odel-b")
    for t in (topic, other):
        create_topic(admin, t, 2)
    group = unique("odel-g")
    commit(admin, group, {topic: {0: 1, 1: 2}, other: {0: 3}})
    dave, as_dave = caller(url, "dave")
    grant(admin, acl(TOPIC, topic, dave, READ))
    grant(admin, acl(TOPIC, other, dave, DESCRIBE))  # not READ

    # READ on the group is not DELETE: 30 for the request, nothing deleted.
    grant(admin, acl(GROUP, group, dave, READ))
    refused = offset_delete(as_dave, group, {topic: [0], other: [0]})
    assert (refused["errorCode"], refused["topics"]) == (GROUP_DENIED, [])
    # Before the group is looked for: a missing one answers 30 too, not 69.
    assert offset_delete(as_dave, unique("odel-none"), {topic: [0]})["errorCode"] == GROUP_DENIED
    assert committed(admin, group, topic, [0, 1]) == [1, 2]

    grant(admin, acl(GROUP, "odel-", dave, DELETE, pattern=PREFIXED))
    answer = offset_delete(as_dave, group, {topic: [0], other: [0]})
    assert answer["errorCode"] == 0
    codes = {t["name"]: [p["errorCode"] for p in t["partitions"]] for t in answer["topics"]}
    assert codes == {topic: [0], other: [TOPIC_DENIED]}
    assert committed(admin, group, topic, [0, 1]) == [-1, 2]
    assert committed(admin, group, other, [0]) == [3]

    grant(admin, acl(GROUP, group, dave, DELETE, permission=DENY))
    assert offset_delete(as_dave, group, {topic: [1]})["errorCode"] == GROUP_DENIED
    assert committed(admin, group, topic, [1]) == [2]


# --- topics ---


def listed_topics(api: Api, limit: int) -> dict[str, int]:
    """Every page of the all-topics metadata: topic -> partitions answered."""
    listed: dict[str, int] = {}
    body: dict[str, Any] = {"topics": None, "responsePartitionLimit": limit}
    while True:
        answer = api.ok("metadata", body)
        for t in answer["topics"]:
            assert t["errorCode"] == 0, t
            listed[t["name"]] = listed.get(t["name"], 0) + len(t["partitions"])
        if answer["nextCursor"] is None:
            return listed
        body["cursor"] = answer["nextCursor"]


def test_metadata_answers_only_what_the_caller_may_describe(url: str, admin: Api) -> None:
    prefix = unique("meta")
    shown, hidden, also_shown = f"{prefix}.a", f"{prefix}.b", f"{prefix}.c"
    elsewhere = unique("meta-elsewhere")
    for topic in (shown, hidden, also_shown, elsewhere):
        create_topic(admin, topic, 2)
    hidden_id = topic_id_of(admin, hidden)
    erin, as_erin = caller(url, "erin")
    grant(admin, acl(TOPIC, f"{prefix}.", erin, DESCRIBE, pattern=PREFIXED))
    grant(admin, acl(TOPIC, hidden, erin, DESCRIBE, permission=DENY))

    missing, allowed_missing = unique("meta-missing"), f"{prefix}.none"
    answer = as_erin.ok(
        "metadata",
        {
            "topics": [
                {"name": shown},
                {"name": hidden},
                {"name": elsewhere},
                {"name": missing},
                {"name": allowed_missing},
                {"topicId": hidden_id},
                {"topicId": UNKNOWN_ID},
            ]
        },
    )
    got = sorted(
        (t["errorCode"], t["name"] or "", t["topicId"], len(t["partitions"]))
        for t in answer["topics"]
    )
    assert got == sorted(
        [
            (0, shown, topic_id_of(admin, shown), 2),
            # Denied by name: 29 under that name, no topic id, whether or not it exists.
            (TOPIC_DENIED, hidden, ZERO_ID, 0),
            (TOPIC_DENIED, elsewhere, ZERO_ID, 0),
            (TOPIC_DENIED, missing, ZERO_ID, 0),
            # Allowed, and not a topic: 3 as without the authorizer.
            (UNKNOWN_TOPIC, allowed_missing, ZERO_ID, 0),
            # Denied by id: 29 without the name (ids are not secret, names are).
            (TOPIC_DENIED, "", hidden_id, 0),
            (UNKNOWN_TOPIC_ID, "", UNKNOWN_ID, 0),
        ]
    )

    # All topics: only those the caller may describe, on every page (one partition a page:
    # no cursor names a hidden topic).
    assert listed_topics(as_erin, 1) == {shown: 2, also_shown: 2}
    everything = listed_topics(admin, 2000)
    assert {shown, hidden, also_shown, elsewhere} <= set(everything)
    # No ACL at all: nothing is listed.
    assert listed_topics(caller(url, "nobody")[1], 2000) == {}


def create_answers(api: Api, topics: list[str]) -> dict[str, dict[str, Any]]:
    body = api.ok("create-topics", {"topics": [{"name": t, "numPartitions": 3} for t in topics]})
    return {t["name"]: t for t in body["topics"]}


def test_create_topics_needs_create_on_the_cluster_or_the_topic(url: str, admin: Api) -> None:
    prefix = unique("create")
    existing = unique("create-existing")
    create_topic(admin, existing, 1)
    frank, as_frank = caller(url, "frank")

    # No ACL: 29 for each topic, none created; an existing one is 29 too, not 36.
    fresh = unique("create-fresh")
    answers = create_answers(as_frank, [fresh, existing])
    assert {n: a["errorCode"] for n, a in answers.items()} == {
        fresh: TOPIC_DENIED,
        existing: TOPIC_DENIED,
    }
    assert answers[fresh]["errorMessage"] == "Authorization failed."
    assert partitions_of(admin, fresh) is None

    # PREFIXED ALLOW, LITERAL DENY: the mixed request creates only the allowed topic.
    grant(admin, acl(TOPIC, f"{prefix}.", frank, CREATE, pattern=PREFIXED))
    grant(admin, acl(TOPIC, f"{prefix}.no", frank, CREATE, permission=DENY))
    allowed, refused, outside = f"{prefix}.yes", f"{prefix}.no", unique("create-outside")
    answers = create_answers(as_frank, [allowed, refused, outside])
    assert {n: a["errorCode"] for n, a in answers.items()} == {
        allowed: 0,
        refused: TOPIC_DENIED,
        outside: TOPIC_DENIED,
    }
    assert (partitions_of(admin, allowed), partitions_of(admin, refused)) == (3, None)
    assert partitions_of(admin, outside) is None
    # Created, but its settings are answered only to who may describe its configs (Kafka's
    # controller): -1 and topicConfigErrorCode 29.
    created = answers[allowed]
    assert (created["numPartitions"], created["topicConfigErrorCode"]) == (-1, TOPIC_DENIED)
    assert created["topicId"] not in (None, ZERO_ID)
    grant(admin, acl(TOPIC, f"{prefix}.", frank, DESCRIBE_CONFIGS, pattern=PREFIXED))
    described = create_answers(as_frank, [f"{prefix}.described"])[f"{prefix}.described"]
    assert (described["numPartitions"], described["topicConfigErrorCode"]) == (3, 0)

    # CREATE on the cluster creates any topic, whatever the topic's own ACLs.
    grace, as_grace = caller(url, "grace")
    grant(admin, acl(CLUSTER, "kafka-cluster", grace, CREATE))
    anywhere = unique("create-anywhere")
    assert create_answers(as_grace, [anywhere])[anywhere]["errorCode"] == 0
    assert partitions_of(admin, anywhere) == 3
    # ...and an existing topic answers 36 again, as the caller may know of it.
    assert create_answers(as_grace, [existing])[existing]["errorCode"] == 36


def test_create_partitions_needs_alter_on_each_topic(url: str, admin: Api) -> None:
    prefix = unique("grow")
    growable, refused = f"{prefix}.a", f"{prefix}.b"
    for topic in (growable, refused):
        create_topic(admin, topic, 2)
    missing = unique("grow-missing")
    heidi, as_heidi = caller(url, "heidi")

    def grow(api: Api, topics: list[str]) -> dict[str, dict[str, Any]]:
        body = {"topics": [{"name": t, "count": 4} for t in topics]}
        return {r["name"]: r for r in api.ok("create-partitions", body)["results"]}

    results = grow(as_heidi, [growable])
    assert (results[growable]["errorCode"], partitions_of(admin, growable)) == (TOPIC_DENIED, 2)

    grant(admin, acl(TOPIC, f"{prefix}.", heidi, ALTER, pattern=PREFIXED))
    grant(admin, acl(TOPIC, refused, heidi, ALTER, permission=DENY))
    results = grow(as_heidi, [growable, refused, missing])
    assert {n: r["errorCode"] for n, r in results.items()} == {
        growable: 0,
        refused: TOPIC_DENIED,
        missing: TOPIC_DENIED,  # whether or not it exists
    }
    assert results[refused]["errorMessage"] is None  # Kafka's controller gives none
    assert (partitions_of(admin, growable), partitions_of(admin, refused)) == (4, 2)
    assert partitions_of(admin, missing) is None


def test_delete_topics_needs_delete_on_each_topic(url: str, admin: Api) -> None:
    prefix = unique("del")
    deletable, kept, described = f"{prefix}.a", f"{prefix}.b", unique("del-described")
    elsewhere = unique("del-elsewhere")
    for topic in (deletable, kept, described, elsewhere):
        create_topic(admin, topic, 1)
    deletable_id, kept_id, described_id, elsewhere_id = (
        topic_id_of(admin, t) for t in (deletable, kept, described, elsewhere)
    )
    judy, as_judy = caller(url, "judy")
    grant(admin, acl(TOPIC, f"{prefix}.", judy, DELETE, pattern=PREFIXED))
    grant(admin, acl(TOPIC, kept, judy, DELETE, permission=DENY))
    grant(admin, acl(TOPIC, described, judy, DESCRIBE))
    missing = unique("del-missing")

    body = {
        "topics": [
            {"name": deletable},
            {"name": kept},
            {"name": missing},
            {"topicId": kept_id},
            {"topicId": described_id},
            {"topicId": elsewhere_id},
            {"topicId": UNKNOWN_ID},
        ]
    }
    responses = as_judy.ok("delete-topics", body)["responses"]
    got = [(r["errorCode"], r["name"], r["topicId"]) for r in responses]
    assert got == [
        (0, deletable, deletable_id),
        (TOPIC_DENIED, kept, ZERO_ID),
        (TOPIC_DENIED, missing, ZERO_ID),  # whether or not it exists
        # By id: named only to who may describe the topic (the DENY of DELETE leaves the
        # DESCRIBE its PREFIXED ALLOW implies).
        (TOPIC_DENIED, kept, kept_id),
        (TOPIC_DENIED, described, described_id),
        (TOPIC_DENIED, None, elsewhere_id),
        (UNKNOWN_TOPIC_ID, None, UNKNOWN_ID),
    ]
    assert responses[1]["errorMessage"] == "Topic authorization failed."
    assert partitions_of(admin, deletable) is None
    assert [partitions_of(admin, t) for t in (kept, described, elsewhere)] == [1, 1, 1]

    # DELETE on the cluster deletes any topic.
    kate, as_kate = caller(url, "kate")
    grant(admin, acl(CLUSTER, "kafka-cluster", kate, DELETE))
    (deleted,) = as_kate.ok("delete-topics", {"topics": [{"topicId": elsewhere_id}]})["responses"]
    assert (deleted["errorCode"], deleted["name"]) == (0, elsewhere)
    assert partitions_of(admin, elsewhere) is None


def test_metadata_fills_topic_authorized_operations_when_asked(url: str, admin: Api) -> None:
    topic = unique("authz-ops")
    create_topic(admin, topic, 1)
    alice, alice_api = caller(url, "alice")
    grant(admin, acl(TOPIC, topic, alice, READ))

    def operations(api: Api, asked: bool) -> int:
        body = {"topics": [{"name": topic}], "includeTopicAuthorizedOperations": asked}
        (shown,) = api.ok("metadata", body)["topics"]
        return shown["topicAuthorizedOperations"]

    assert operations(alice_api, False) == -(2**31)  # Kafka's "not asked"
    assert operations(alice_api, True) == (1 << READ) | (1 << DESCRIBE)  # READ implies DESCRIBE
    everything = operations(admin, True)  # a super user: every operation a topic has
    assert everything & (1 << DELETE) and everything & (1 << ALTER) and everything & (1 << READ)
