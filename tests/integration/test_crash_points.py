"""Every DynamoDB write of a request is a crash point (groupcoord/faults.py: `write.<n>.before`
and `write.<n>.after`), and a request that dies at any of them leaves a group that clients
recover by doing what they do after a 500 (tests/support/crash_points.py runs them). For each
scenario, a run on the normal deployment counts the writes W of the request under test; then,
for every k in 1..W and both sides, a fresh group runs the scenario's prefix, the request goes
to a deployment beside the normal one (same table) that dies at the point, and the clients carry
on on the normal one: the group converges, no partition has two owners, epochs and generations
never go back, and an acknowledged commit is never lost. In process, on the in-memory store.

The scenarios, by file (a file is one xdist worker's under `--dist loadfile`):

- here: a consumer joining a one-member group (with its target install), a consumer's
  heartbeat acknowledging a revocation (which frees partitions for another), the classic join
  that completes a barrier of two, a leader's sync-group alone and the leader's sync that
  completes the sync barrier of two, a consumer's offset commit;
- test_crash_points_leave.py: consumer-protocol leave (epoch -1), static leave (-2) and the
  static member's return (takeover of its instance id), classic leave-group of a dynamic and
  of a static member;
- test_crash_points_admin.py: create-topics, create-partitions and delete-topics fanning out
  to two groups (one subscribed by regex, one by name), an offset commit of three chunks,
  offset-delete, delete-groups;
- test_crash_points_sweep.py: the sweeper (its own points, `sweep.write.<n>.*`) expiring a dead
  consumer-protocol member and a dead classic member, and telling the groups of a topic change
  a crashed request left; each crashed sweep is followed by normal ones that finish the job.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.support.api import Answer, Api
from tests.support.classic_client import NONE, REBALANCE_IN_PROGRESS, b64
from tests.support.consumer import Member, settle
from tests.support.consumer import describe as describe_consumer
from tests.support.crash_points import (
    PARTITIONS,
    Run,
    Scenario,
    classic_members,
    classic_recover,
    consumer_group_members,
    converge,
    crash_every_write,
    group_epoch,
    heartbeat_body,
    join_body,
)
from tests.support.servers import InProcessCoordinator

# --- consumer-group-heartbeat: a second member joins a one-member group ---


def consumer_prefix(run: Run) -> None:
    a = Member(run.api, run.group, topics=[run.topic])
    a.join()
    settle([a])
    run.state.update(a=a, b=Member(run.api, run.group, topics=[run.topic]))
    run.state["epochs"] = {a.member_id: a.epoch}
    run.state["group_epoch"] = describe_consumer(run.api, run.group)["groupEpoch"]


def consumer_join(run: Run, url: str) -> Answer:
    return Api(url).call("consumer-group-heartbeat", join_body(run.state["b"]))


def consumer_recover(run: Run) -> None:
    a, b = run.state["a"], run.state["b"]
    b.join()  # the same join again, as a client does after a 500
    converge([a, b])
    owned = [p for m in (a, b) for ps in m.owned.values() for p in ps]
    assert sorted(owned) == list(range(PARTITIONS)), (a.owned, b.owned)
    assert a.owned and b.owned
    assert a.epoch >= run.state["epochs"][a.member_id]
    group = describe_consumer(run.api, run.group)
    assert group["groupEpoch"] > run.state["group_epoch"]
    assert {m["memberId"] for m in group["members"]} == {a.member_id, b.member_id}


# --- consumer-group-heartbeat: a member acknowledges a revocation, freeing partitions ---


def revocation_prefix(run: Run) -> None:
    consumer_prefix(run)
    a, b = run.state["a"], run.state["b"]
    b.join()  # a new target: a keeps half of what it owns
    held = sum(len(ps) for ps in a.owned.values())
    a.heartbeat()  # told to revoke: the client gives the rest up at once
    assert sum(len(ps) for ps in a.owned.values()) < held, a.last


def revocation_ack(run: Run, url: str) -> Answer:
    return Api(url).call("consumer-group-heartbeat", heartbeat_body(run.state["a"]))


def revocation_recover(run: Run) -> None:
    a, b = run.state["a"], run.state["b"]
    converge([a, b])
    assert a.epoch >= run.state["epochs"][a.member_id]
    assert group_epoch(run.api, run.group) > run.state["group_epoch"]
    assert consumer_group_members(run.api, run.group) == {a.member_id, b.member_id}


def barrier_prefix(run: Run) -> None:
    (c1,) = classic_members(run, ["c1"])
    c1.rebalance()  # alone, generation 1
    (c2,) = classic_members(run, ["c2"])
    first = c2.join_once()
    assert first.body["errorCode"] == 79, first.body
    c2.member_id = first.body["memberId"]
    pending = c2.join_once()  # registered: the barrier waits for c1
    assert pending.status == 202, pending.body
    assert c1.heartbeat() == REBALANCE_IN_PROGRESS
    c1.needs_rejoin = True
    run.state.update(c1=c1, c2=c2, generation=c1.generation)


def barrier_join(run: Run, url: str) -> Answer:
    c1 = run.state["c1"]
    c1._refresh_protocols()
    return Api(url, c1.client_id).call("join-group", c1.join_body())


def sync_prefix(run: Run) -> None:
    (c1,) = classic_members(run, ["c1"])
    joined = c1.join()
    assert joined["errorCode"] == NONE and c1.is_leader, joined
    assignments, _ = c1._assign(joined["members"])
    run.state.update(c1=c1, assignments=assignments, generation=c1.generation)


def sync_two_prefix(run: Run) -> None:
    barrier_prefix(run)
    c1, c2 = run.state["c1"], run.state["c2"]
    joined = c1.join()  # completes the join barrier of two
    assert joined["errorCode"] == NONE and c1.is_leader, joined
    assert c2.join()["errorCode"] == NONE  # its pending join, answered
    waiting = c2.sync_once()  # the follower waits for the leader's assignment
    assert waiting.status == 202, waiting.body
    assignments, _ = c1._assign(joined["members"])
    run.state.update(assignments=assignments, generation=c1.generation)


def leader_sync(run: Run, url: str) -> Answer:
    c1 = run.state["c1"]
    body = {
        "groupId": run.group,
        "generationId": c1.generation,
        "memberId": c1.member_id,
        "protocolType": c1.protocol_type,
        "protocolName": c1.protocol_name,
        "assignments": [
            {"memberId": m, "assignment": b64(a)} for m, a in run.state["assignments"].items()
        ],
    }
    return Api(url, c1.client_id).call("sync-group", body)


# --- offset-commit by a consumer member ---


def fetch_offsets(run: Run) -> dict[int, int]:
    body = {"groupId": run.group, "topics": [{"name": run.topic, "partitionIndexes": [0, 1]}]}
    group = run.api.ok("offset-fetch", {"groups": [body]})["groups"][0]
    return {p["partitionIndex"]: p["committedOffset"] for p in group["topics"][0]["partitions"]}


def commit_body(run: Run, offset: int) -> dict[str, Any]:
    a: Member = run.state["a"]
    partitions = [{"partitionIndex": p, "committedOffset": offset} for p in (0, 1)]
    return {
        "groupId": run.group,
        "generationIdOrMemberEpoch": a.epoch,
        "memberId": a.member_id,
        "topics": [{"name": run.topic, "partitions": partitions}],
    }


def acknowledged(answer: Answer) -> bool:
    return answer.status == 200 and all(
        p["errorCode"] == 0 for t in answer.body["topics"] for p in t["partitions"]
    )


def commit_prefix(run: Run) -> None:
    a = Member(run.api, run.group, topics=[run.topic])
    a.join()
    settle([a])
    run.state["a"] = a
    assert acknowledged(run.api.call("offset-commit", commit_body(run, 5)))
    run.state["acked"] = 5


def commit_request(run: Run, url: str) -> Answer:
    return Api(url).call("offset-commit", commit_body(run, 7))


def commit_recover(run: Run) -> None:
    # Whatever the crash left, the acknowledged 5 stands (or the crashed 7 landed).
    assert all(offset in (5, 7) for offset in fetch_offsets(run).values()), fetch_offsets(run)
    answer = run.api.call("offset-commit", commit_body(run, 7))  # the client's retry
    assert acknowledged(answer), answer.body
    assert fetch_offsets(run) == {0: 7, 1: 7}
    settle([run.state["a"]])
    assert fetch_offsets(run) == {0: 7, 1: 7}


SCENARIOS = [
    Scenario("consumer-join", consumer_prefix, consumer_join, consumer_recover),
    Scenario("consumer-revocation-ack", revocation_prefix, revocation_ack, revocation_recover),
    Scenario("classic-barrier-join", barrier_prefix, barrier_join, classic_recover),
    Scenario("classic-leader-sync", sync_prefix, leader_sync, classic_recover),
    Scenario("classic-sync-barrier-of-two", sync_two_prefix, leader_sync, classic_recover),
    Scenario("consumer-commit", commit_prefix, commit_request, commit_recover),
]


@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda s: s.name)
def test_a_crash_at_any_write_is_recovered(
    normal: InProcessCoordinator, scenario: Scenario
) -> None:
    crash_every_write(normal, scenario)
