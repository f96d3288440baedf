"""streams-group-heartbeat over HTTP on DynamoDB Local: validation, a join, a second member's
join and the revocation dance, standbys on the other process, topology errors and NotReady
groups, fenced and unknown members, and streams-group-describe."""

from __future__ import annotations

import pytest

from tests.support.api import Api
from tests.support.consumer import create_topic, unique
from tests.support.streams import HB, StreamsMember, describe, settle, streams_serve, word_count

ALL_TASKS = {(s, p) for s in "01" for p in range(4)}


@pytest.fixture(scope="module")
def url(dynamodb_endpoint: str) -> str:
    """The streams tests' shared `serve` on DynamoDB Local (not the in-memory adapter)."""
    return streams_serve(dynamodb_endpoint)


def join_body(group: str, **fields: object) -> dict:
    body = {
        "groupId": group,
        "memberId": "m",
        "memberEpoch": 0,
        "rebalanceTimeoutMs": 30000,
        "topology": word_count("words", "x"),
        "activeTasks": [],
        "standbyTasks": [],
        "warmupTasks": [],
    }
    return {**body, **fields}


def pairs(tasks: dict[str, set[int]]) -> set[tuple[str, int]]:
    return {(s, p) for s, ps in tasks.items() for p in ps}


def test_invalid_requests_answer_42_and_130_and_create_nothing(api: Api) -> None:
    group = unique("g")
    bad_changelog = {
        "epoch": 1,
        "subtopologies": [
            {"subtopologyId": "0", "sourceTopics": ["in"],
             "stateChangelogTopics": [{"name": "c", "partitions": 2}]}
        ],
    }  # fmt: skip
    cases = [
        ({"topology": None}, 42, "Topology must be non-null when (re-)joining."),
        ({"rebalanceTimeoutMs": -1}, 42, "RebalanceTimeoutMs must be provided in first request."),
        ({"activeTasks": None}, 42, "ActiveTasks must be empty when (re-)joining."),
        ({"memberEpoch": -3, "topology": None}, 42,
         "MemberEpoch is -3, but must be greater than or equal to -2."),
        ({"memberEpoch": 2}, 42, "Topology can only be provided when (re-)joining."),
        ({"topology": bad_changelog}, 130,
         "Changelog topic c must have an undefined partition count, but it is set to 2."),
    ]  # fmt: skip
    for fields, code, message in cases:
        body = api.ok(HB, join_body(group, **fields))
        assert (body["errorCode"], body["errorMessage"]) == (code, message), fields
    assert describe(api, group)["errorCode"] == 69


def test_a_schema_violation_is_400_naming_the_field(api: Api) -> None:
    answer = api.call(HB, {**join_body(unique("g")), "memberEpoch": "0"})
    assert answer.status == 400 and "memberEpoch" in answer.body["errorMessage"]


def test_a_topology_loop_is_130(api: Api) -> None:
    loop = {
        "epoch": 1,
        "subtopologies": [
            {"subtopologyId": "0", "sourceTopics": ["b"], "repartitionSinkTopics": ["a"],
             "repartitionSourceTopics": [{"name": "b"}]},
            {"subtopologyId": "1", "sourceTopics": ["a"], "repartitionSinkTopics": ["b"],
             "repartitionSourceTopics": [{"name": "a"}]},
        ],
    }  # fmt: skip
    group = unique("g")
    body = api.ok(HB, join_body(group, topology=loop))
    assert body["errorCode"] == 130 and "loops" in body["errorMessage"]
    assert describe(api, group)["errorCode"] == 69


def test_one_member_gets_every_task_and_internal_topics_are_created(api: Api) -> None:
    words, prefix = unique("words"), unique("app")
    create_topic(api, words, 4)
    member = StreamsMember(api, unique("g"), word_count(words, prefix))
    answer = member.join()
    assert answer["errorCode"] == 0, answer
    assert answer["status"] == []
    assert pairs(member.active) == ALL_TASKS and not member.standby
    assert answer["heartbeatIntervalMs"] == 5000
    assert answer["acceptableRecoveryLag"] == 10000 and answer["taskOffsetIntervalMs"] == 60000
    internal = [{"name": f"{prefix}-rep"}, {"name": f"{prefix}-counts-changelog"}]
    topics = api.ok("metadata", {"topics": internal})["topics"]
    assert [(t["errorCode"], len(t["partitions"])) for t in topics] == [(0, 4), (0, 4)]
    # A steady heartbeat answers the same epoch and no task lists (unchanged).
    steady = member.heartbeat()
    assert (steady["errorCode"], steady["memberEpoch"]) == (0, answer["memberEpoch"])
    assert steady["activeTasks"] is None
    group = describe(api, member.group)
    assert group["groupState"] == "Stable" and group["topology"]["epoch"] == 1
    assert [m["processId"] for m in group["members"]] == [member.process_id]


def test_a_second_member_joins_through_the_revocation_dance_with_standbys(api: Api) -> None:
    words, prefix = unique("words"), unique("app")
    create_topic(api, words, 4)
    group = unique("g")
    a = StreamsMember(api, group, word_count(words, prefix))
    a.join()
    assert pairs(a.active) == ALL_TASKS
    b = StreamsMember(api, group, word_count(words, prefix))
    joined = b.join()
    assert joined["errorCode"] == 0 and joined["memberEpoch"] > a.epoch
    # A is asked to revoke first: its answer keeps only what stays, at its old epoch.
    before = a.epoch
    revoking = a.heartbeat()
    assert revoking["memberEpoch"] == before and revoking["activeTasks"] is not None
    assert 0 < len(pairs(a.active)) < len(ALL_TASKS)
    # B gets nothing A still holds.
    b.heartbeat()
    assert not pairs(b.active) & pairs(a.active)
    settle([a, b])
    assert a.epoch == b.epoch
    assert not pairs(a.active) & pairs(b.active)
    assert pairs(a.active) | pairs(b.active) == ALL_TASKS
    # Sub-topology 1 is stateful: each of its tasks has a standby on the other process.
    assert {("1", p) for p in range(4)} == pairs(a.standby) | pairs(b.standby)
    assert pairs(a.standby) == {t for t in pairs(b.active) if t[0] == "1"}
    assert describe(api, group)["groupState"] == "Stable"


def test_missing_source_topics_make_the_group_not_ready_until_they_exist(api: Api) -> None:
    words, prefix = unique("words"), unique("app")
    member = StreamsMember(api, unique("g"), word_count(words, prefix))
    answer = member.join()
    assert answer["errorCode"] == 0
    assert [(s["statusCode"], s["statusDetail"]) for s in answer["status"]] == [
        (1, f"Source topics {words} are missing.")
    ]
    assert not member.active
    assert describe(api, member.group)["groupState"] == "NotReady"
    listed = api.ok("list-groups", {"typesFilter": ["streams"], "statesFilter": ["not_ready"]})
    assert member.group in [g["groupId"] for g in listed["groups"]]
    assert member.heartbeat()["status"][0]["statusCode"] == 1
    create_topic(api, words, 4)
    settle([member])
    assert member.statuses() == [] and pairs(member.active) == ALL_TASKS


def test_copartitioned_topics_with_different_counts_are_status_2(api: Api) -> None:
    left, right = unique("left"), unique("right")
    create_topic(api, left, 2)
    create_topic(api, right, 3)
    join = {
        "epoch": 1,
        "subtopologies": [
            {"subtopologyId": "0", "sourceTopics": [left, right],
             "copartitionGroups": [{"sourceTopics": [0, 1]}]}
        ],
    }  # fmt: skip
    member = StreamsMember(api, unique("g"), join)
    answer = member.join()
    assert answer["status"][0]["statusCode"] == 2, answer
    assert left in answer["status"][0]["statusDetail"] and not member.active


def test_fenced_unknown_and_departed_members(api: Api) -> None:
    words = unique("words")
    create_topic(api, words, 2)
    member = StreamsMember(api, unique("g"), word_count(words, unique("app")))
    member.join()
    ahead = api.ok(HB, {"groupId": member.group, "memberId": member.member_id,
                        "memberEpoch": member.epoch + 1})  # fmt: skip
    assert ahead["errorCode"] == 110
    stranger = api.ok(HB, {"groupId": member.group, "memberId": "nobody", "memberEpoch": 1})
    assert stranger["errorCode"] == 25
    missing = api.ok(HB, {"groupId": unique("g"), "memberId": "m", "memberEpoch": 1})
    assert missing["errorCode"] == 69
    left = member.leave()
    assert (left["memberEpoch"], left["acceptableRecoveryLag"], left["status"]) == (-1, 10000, [])
    member.epoch = 1
    assert member.heartbeat()["errorCode"] == 25
    assert describe(api, member.group)["groupState"] == "Empty"


def test_a_changed_topology_under_the_same_epoch_is_131(api: Api) -> None:
    words = unique("words")
    create_topic(api, words, 2)
    group = unique("g")
    StreamsMember(api, group, word_count(words, "one")).join()
    other = StreamsMember(api, group, word_count(words, "two")).join()
    assert other["errorCode"] == 131


def test_endpoints_map_to_the_partitions_of_their_tasks(api: Api) -> None:
    words, prefix = unique("words"), unique("app")
    create_topic(api, words, 2)
    group = unique("g")
    a = StreamsMember(api, group, word_count(words, prefix),
                      userEndpoint={"host": "127.0.0.1", "port": 7001})  # fmt: skip
    b = StreamsMember(api, group, word_count(words, prefix),
                      userEndpoint={"host": "127.0.0.1", "port": 7002})  # fmt: skip
    a.join()
    b.join()
    settle([a, b])
    answer = a.heartbeat(endpointInformationEpoch=-1)
    by_port = {e["userEndpoint"]["port"]: e for e in answer["partitionsByUserEndpoint"]}
    assert set(by_port) == {7001, 7002}
    for member, port in ((a, 7001), (b, 7002)):
        active = {(tp["topic"], p) for tp in by_port[port]["activePartitions"]
                  for p in tp["partitions"]}  # fmt: skip
        topic = {"0": words, "1": f"{prefix}-rep"}
        assert active == {(topic[s], p) for s, p in pairs(member.active)}
    # With the group's epoch the map is not sent again.
    again = a.heartbeat(endpointInformationEpoch=answer["endpointInformationEpoch"])
    assert again["partitionsByUserEndpoint"] is None


def test_a_shutdown_request_reaches_every_member(api: Api) -> None:
    words = unique("words")
    create_topic(api, words, 2)
    group = unique("g")
    a = StreamsMember(api, group, word_count(words, unique("app")))
    b = StreamsMember(api, group, a.topology)
    a.join()
    b.join()
    a.heartbeat(shutdownApplication=True)
    assert 4 in a.statuses()
    b.heartbeat()
    assert 4 in b.statuses()


def test_a_shutdown_request_lasts_until_the_group_is_empty(api: Api) -> None:
    """Status 4 stays in every answer while any member is left, also once the member that
    asked has gone; the group's next life, after it emptied, does not hear it."""
    words = unique("words")
    create_topic(api, words, 2)
    group = unique("g")
    a = StreamsMember(api, group, word_count(words, unique("app")))
    b = StreamsMember(api, group, a.topology)
    a.join()
    b.join()
    settle([a, b])
    a.heartbeat(shutdownApplication=True)
    assert 4 in a.statuses()
    assert a.leave()["errorCode"] == 0
    for _ in range(2):
        assert b.heartbeat()["errorCode"] == 0
        assert 4 in b.statuses()
    assert b.leave()["errorCode"] == 0
    assert describe(api, group)["groupState"] == "Empty"
    c = StreamsMember(api, group, a.topology)
    assert c.join()["errorCode"] == 0
    assert 4 not in c.statuses()
    settle([c])
    assert 4 not in c.statuses() and c.active


def test_a_regex_source_is_resolved_and_re_resolved_when_topics_appear(api: Api) -> None:
    prefix = unique("orders")
    create_topic(api, f"{prefix}-eu", 2)
    topology = {
        "epoch": 1,
        "subtopologies": [{"subtopologyId": "0", "sourceTopicRegex": [f"{prefix}-.*"]}],
    }
    member = StreamsMember(api, unique("g"), topology)
    assert member.join()["errorCode"] == 0
    assert member.active == {"0": {0, 1}}
    create_topic(api, f"{prefix}-us", 3)
    settle([member])
    assert member.active == {"0": {0, 1, 2}}


def test_a_rolling_upgrade_updates_the_topology_in_place(api: Api) -> None:
    words, prefix = unique("words"), unique("app")
    create_topic(api, words, 4)
    group = unique("g")
    old = word_count(words, prefix)
    a, b = StreamsMember(api, group, old), StreamsMember(api, group, old)
    a.join()
    b.join()
    settle([a, b])
    epoch = describe(api, group)["groupEpoch"]
    # The new version changes sub-topology 1 (another store); sub-topology 0 is the same.
    new = word_count(words, prefix)
    new["epoch"] = 2
    new["subtopologies"][1]["stateChangelogTopics"] = [{"name": f"{prefix}-totals-changelog"}]
    c = StreamsMember(api, group, new)
    assert c.join()["errorCode"] == 0
    settle([a, b, c])
    described = describe(api, group)
    assert described["topology"]["epoch"] == 2 and described["groupEpoch"] > epoch
    assert 0 in a.statuses() and 0 in b.statuses() and 0 not in c.statuses()
    # The members on the old epoch keep only what both epochs share.
    assert set(a.active) | set(b.active) | set(a.standby) | set(b.standby) <= {"0"}
    assert c.active["1"] == {0, 1, 2, 3}
    assert pairs(a.active) | pairs(b.active) | pairs(c.active) == ALL_TASKS
    # a restarts on the new version: status 0 is gone and it may run sub-topology 1 again.
    a2 = StreamsMember(api, group, new, process_id=a.process_id)
    a.leave()
    assert a2.join()["errorCode"] == 0
    settle([a2, b, c])
    assert 0 not in a2.statuses() and 0 in b.statuses()
    assert pairs(a2.active) | pairs(b.active) | pairs(c.active) == ALL_TASKS
