"""Crash points of the topic registry's changes and of the offsets' and groups' admin APIs
(test_crash_points.py says how the scenarios run): create-topics, create-partitions and
delete-topics, each fanning out to two groups (one subscribed by regex, one by name); an
offset commit of three chunks; offset-delete; delete-groups. After the crash the client re-sends
its request: the groups are told of the change (their epochs grow and their members converge on
the new partitions), no acknowledged commit is lost, a deletion that the retry reports done is
done, and the group is not stuck (a member joins it and commits)."""

from __future__ import annotations

from typing import Any

import pytest

from groupcoord.service.group_admin import CLEANUP_GRACE_MS
from tests.support.api import Answer, Api
from tests.support.consumer import Member, create_topic, settle, unique, until
from tests.support.crash_points import (
    PARTITIONS,
    SETTLE_S,
    SKEW,
    Run,
    Scenario,
    converge,
    crash_every_write,
    crashing_deployment,
    fresh_run,
    group_epoch,
)
from tests.support.servers import InProcessCoordinator

TOPIC_ALREADY_EXISTS = 36
INVALID_PARTITIONS = 37
UNKNOWN_TOPIC_OR_PARTITION = 3
GROUP_ID_NOT_FOUND = 69
GROWN = 6  # create-partitions: the first topic's new count
SECOND = 2  # the second topic's partitions
# Three transactions of at most 99 offsets (store/offsets.py: a guard and 99 puts each).
BIG = 250


# --- a topic change fanning out to two groups ---


def two_groups(run: Run, *, second_exists: bool, total: int) -> None:
    """Topics `<base>-a` (and `<base>-b`), a group subscribed to `<base>-.*` and another to
    both names, one member each, settled."""
    base = unique("rx")
    first, second = f"{base}-a", f"{base}-b"
    create_topic(run.api, first, PARTITIONS)
    if second_exists:
        create_topic(run.api, second, SECOND)
    by_regex = Member(run.api, run.group, regex=f"{base}-.*")
    by_name = Member(run.api, unique("crash"), topics=[first, second])
    for m in (by_regex, by_name):
        m.join()
        settle([m])
        assert sum(len(ps) for ps in m.owned.values()) == total, m.owned
    run.state.update(
        first=first,
        second=second,
        members=[by_regex, by_name],
        epochs={m.group: group_epoch(run.api, m.group) for m in (by_regex, by_name)},
    )


def create_topics_prefix(run: Run) -> None:
    two_groups(run, second_exists=False, total=PARTITIONS)


def create_topics(run: Run, url: str) -> Answer:
    topics = [{"name": run.state["second"], "numPartitions": SECOND}]
    return Api(url).call("create-topics", {"topics": topics})


def create_topics_recover(run: Run) -> None:
    answer = create_topics(run, run.api.base_url)  # the client's retry
    assert answer.status == 200, answer.body
    assert answer.body["topics"][0]["errorCode"] in (0, TOPIC_ALREADY_EXISTS), answer.body
    groups_told(run, PARTITIONS + SECOND)


def create_partitions_prefix(run: Run) -> None:
    two_groups(run, second_exists=False, total=PARTITIONS)


def create_partitions(run: Run, url: str) -> Answer:
    body = {"topics": [{"name": run.state["first"], "count": GROWN}]}
    return Api(url).call("create-partitions", body)


def create_partitions_recover(run: Run) -> None:
    answer = create_partitions(run, run.api.base_url)
    assert answer.status == 200, answer.body
    assert answer.body["results"][0]["errorCode"] in (0, INVALID_PARTITIONS), answer.body
    groups_told(run, GROWN)


def delete_topics_prefix(run: Run) -> None:
    two_groups(run, second_exists=True, total=PARTITIONS + SECOND)


def delete_topics(run: Run, url: str) -> Answer:
    return Api(url).call("delete-topics", {"topics": [{"name": run.state["second"]}]})


def delete_topics_recover(run: Run) -> None:
    answer = delete_topics(run, run.api.base_url)
    assert answer.status == 200, answer.body
    code = answer.body["responses"][0]["errorCode"]
    assert code in (0, UNKNOWN_TOPIC_OR_PARTITION), answer.body
    groups_told(run, PARTITIONS)


def groups_told(run: Run, partitions: int) -> None:
    """Each group's member converges on the topics as they now are (the sweeper tells a group
    the crashed request did not, once the change item is due), with a bumped group epoch."""
    for m in run.state["members"]:
        converge([m], partitions)
        assert group_epoch(run.api, m.group) > run.state["epochs"][m.group], m.group


# --- offsets: a commit of several chunks, offset-delete; delete-groups ---


def fetch(run: Run, topic: str, partitions: int) -> dict[int, int]:
    topics = [{"name": topic, "partitionIndexes": list(range(partitions))}]
    body = {"groupId": run.group, "topics": topics}
    group = run.api.ok("offset-fetch", {"groups": [body]})["groups"][0]
    assert group["errorCode"] == 0, group
    return {p["partitionIndex"]: p["committedOffset"] for p in group["topics"][0]["partitions"]}


def commit_body(
    group: str, topic: str, partitions: list[int], offset: int, member: Member | None = None
) -> dict[str, Any]:
    def offset_of(p: int) -> dict[str, int]:
        return {"partitionIndex": p, "committedOffset": offset}

    return {
        "groupId": group,
        "generationIdOrMemberEpoch": member.epoch if member else -1,
        "memberId": member.member_id if member else "",
        "topics": [{"name": topic, "partitions": [offset_of(p) for p in partitions]}],
    }


def acknowledged(answer: Answer) -> bool:
    return answer.status == 200 and all(
        p["errorCode"] == 0 for t in answer.body["topics"] for p in t["partitions"]
    )


def big_commit_prefix(run: Run) -> None:
    big = unique("big")
    create_topic(run.api, big, BIG)
    a = Member(run.api, run.group, topics=[big])
    a.join()
    settle([a])
    run.state.update(a=a, big=big)
    answer = run.api.call("offset-commit", big_commit_body(run, 5))
    assert acknowledged(answer), answer.body


def big_commit_body(run: Run, offset: int) -> dict[str, Any]:
    return commit_body(run.group, run.state["big"], list(range(BIG)), offset, run.state["a"])


def big_commit(run: Run, url: str) -> Answer:
    return Api(url).call("offset-commit", big_commit_body(run, 7))


def big_commit_recover(run: Run) -> None:
    # Whatever chunks the crash let land, each partition has the acknowledged 5 or the 7.
    offsets = fetch(run, run.state["big"], BIG)
    assert set(offsets.values()) <= {5, 7}, offsets
    answer = run.api.call("offset-commit", big_commit_body(run, 7))  # the client's retry
    assert acknowledged(answer), answer.body
    settle([run.state["a"]])
    assert set(fetch(run, run.state["big"], BIG).values()) == {7}


def offset_delete_prefix(run: Run) -> None:
    # An empty group (Kafka's simple group) with offsets: offset-delete needs no subscription.
    answer = run.api.call("offset-commit", commit_body(run.group, run.topic, [0, 1, 2, 3], 5))
    assert acknowledged(answer), answer.body


def offset_delete_body(run: Run) -> dict[str, Any]:
    partitions = [{"partitionIndex": p} for p in (0, 1)]
    return {"groupId": run.group, "topics": [{"name": run.topic, "partitions": partitions}]}


def offset_delete(run: Run, url: str) -> Answer:
    return Api(url).call("offset-delete", offset_delete_body(run))


def offset_delete_recover(run: Run) -> None:
    answer = offset_delete(run, run.api.base_url)  # the client's retry
    assert answer.status == 200, answer.body
    assert answer.body["errorCode"] == 0, answer.body
    assert all(p["errorCode"] == 0 for p in answer.body["topics"][0]["partitions"]), answer.body
    # The deleted ones are gone, the others' acknowledged commits stand.
    assert fetch(run, run.topic, PARTITIONS) == {0: -1, 1: -1, 2: 5, 3: 5}
    group_is_usable(run)


def group_is_usable(run: Run) -> None:
    """Not stuck: a member joins the group, gets every partition and commits."""
    a = Member(run.api, run.group, topics=[run.topic])
    a.join()
    converge([a])
    answer = run.api.call("offset-commit", commit_body(run.group, run.topic, [0], 9, a))
    assert acknowledged(answer), answer.body
    assert fetch(run, run.topic, PARTITIONS)[0] == 9


def delete_groups_prefix(run: Run) -> None:
    a = Member(run.api, run.group, topics=[run.topic])
    a.join()
    settle([a])
    answer = run.api.call("offset-commit", commit_body(run.group, run.topic, [0, 1, 2, 3], 5, a))
    assert acknowledged(answer), answer.body
    assert a.leave()["errorCode"] == 0  # an empty group may be deleted


def delete_groups(run: Run, url: str) -> Answer:
    return Api(url).call("delete-groups", {"groupsNames": [run.group]})


def delete_groups_recover(run: Run) -> None:
    answer = delete_groups(run, run.api.base_url)  # the client's retry
    assert answer.status == 200, answer.body
    code = answer.body["results"][0]["errorCode"]
    assert code in (0, GROUP_ID_NOT_FOUND), answer.body
    # Reported deleted (or not found): nothing of it is left, its offsets included.
    assert fetch(run, run.topic, PARTITIONS) == {p: -1 for p in range(PARTITIONS)}
    again = delete_groups(run, run.api.base_url)
    assert again.body["results"][0]["errorCode"] == GROUP_ID_NOT_FOUND, again.body
    group_is_usable(run)


def no_offsets_come_back(run: Run) -> None:
    delete_groups_recover(run)
    # The group of that id, created anew, has none of the deleted one's offsets.
    assert fetch(run, run.topic, PARTITIONS) == {0: 9, 1: -1, 2: -1, 3: -1}


SCENARIOS = [
    Scenario("create-topics", create_topics_prefix, create_topics, create_topics_recover),
    Scenario(
        "create-partitions", create_partitions_prefix, create_partitions, create_partitions_recover
    ),
    Scenario("delete-topics", delete_topics_prefix, delete_topics, delete_topics_recover),
    Scenario("commit-in-chunks", big_commit_prefix, big_commit, big_commit_recover),
    Scenario("offset-delete", offset_delete_prefix, offset_delete, offset_delete_recover),
    Scenario("delete-groups", delete_groups_prefix, delete_groups, delete_groups_recover),
]


@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda s: s.name)
def test_a_crash_at_any_write_of_an_admin_change_is_recovered(
    normal: InProcessCoordinator, scenario: Scenario
) -> None:
    crash_every_write(normal, scenario)


def test_a_crashed_delete_groups_leaves_no_offsets_behind(normal: InProcessCoordinator) -> None:
    scenario = Scenario(
        "delete-groups-reuse", delete_groups_prefix, delete_groups, no_offsets_come_back
    )
    crash_every_write(normal, scenario)


def test_a_dead_delete_groups_is_finished_by_the_sweeper(normal: InProcessCoordinator) -> None:
    """No retry: the group id is used again at once (a commit from outside re-creates it),
    and the sweeper finishes the dead deletion's cleanup: the deleted group's offsets go, the
    new group's commit stays."""
    run = fresh_run(normal.url, delete_groups_prefix)
    with crashing_deployment(normal, "write.1.after") as url:
        assert delete_groups(run, url).status == 500  # the group item went, nothing else
    answer = run.api.call("offset-commit", commit_body(run.group, run.topic, [1], 7))
    assert acknowledged(answer), answer.body
    SKEW.ahead_ms += CLEANUP_GRACE_MS  # the cleanup marker comes due; the sweeper takes it
    until(
        lambda: fetch(run, run.topic, PARTITIONS) == {0: -1, 1: 7, 2: -1, 3: -1},
        timeout_s=SETTLE_S,
    )
    assert normal.store.cleanups.read(run.group) is None
