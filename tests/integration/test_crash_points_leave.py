"""Crash points of the leaves (test_crash_points.py says how the scenarios run): a consumer-protocol
member leaving (epoch -1), a static member leaving for a while (-2) and coming back under its
instance id, and classic leave-group of a dynamic and of a static member. After the crash the
client re-sends its leave (or its join); the members that stay converge without the leaver,
holding every partition once, with epochs and generations that never went back."""

from __future__ import annotations

import pytest

from tests.support.api import Answer, Api
from tests.support.consumer import Member, settle, unique
from tests.support.crash_points import (
    UNKNOWN_MEMBER_ID,
    Run,
    Scenario,
    classic_members,
    classic_recover,
    classic_settle,
    consumer_group_members,
    converge,
    crash_every_write,
    group_epoch,
    join_body,
    leave_body,
)
from tests.support.servers import InProcessCoordinator

LEAVE_EPOCH = -1
STATIC_LEAVE_EPOCH = -2


# --- consumer-group-heartbeat: leave (-1), static leave (-2), the static member's return ---


def two_members(run: Run, static: bool = False) -> None:
    a = Member(run.api, run.group, topics=[run.topic])
    b = Member(
        run.api, run.group, topics=[run.topic], instance_id=unique("static") if static else None
    )
    a.join()
    b.join()
    settle([a, b])
    run.state.update(a=a, b=b, epoch_a=a.epoch, group_epoch=group_epoch(run.api, run.group))


def leave_prefix(run: Run) -> None:
    two_members(run)


def static_prefix(run: Run) -> None:
    two_members(run, static=True)


def consumer_leave(run: Run, url: str) -> Answer:
    return Api(url).call("consumer-group-heartbeat", leave_body(run.state["b"], LEAVE_EPOCH))


def consumer_static_leave(run: Run, url: str) -> Answer:
    body = leave_body(run.state["b"], STATIC_LEAVE_EPOCH)
    return Api(url).call("consumer-group-heartbeat", body)


def resend_leave(run: Run, epoch: int) -> None:
    """The client's retry of its leave: done, or the member is already gone."""
    answer = run.api.call("consumer-group-heartbeat", leave_body(run.state["b"], epoch))
    assert answer.status == 200, (answer.status, answer.body)
    assert answer.body["errorCode"] in (0, UNKNOWN_MEMBER_ID), answer.body
    run.state["b"].owned = {}  # a member that left holds nothing


def leave_recover(run: Run) -> None:
    resend_leave(run, LEAVE_EPOCH)
    a = run.state["a"]
    converge([a])
    assert consumer_group_members(run.api, run.group) == {a.member_id}
    assert a.epoch >= run.state["epoch_a"]
    assert group_epoch(run.api, run.group) > run.state["group_epoch"]


def static_leave_recover(run: Run) -> None:
    resend_leave(run, STATIC_LEAVE_EPOCH)
    b = run.state["b"]
    # The instance restarts: a new member id under the same instance id takes b's place.
    back = Member(run.api, run.group, topics=[run.topic], instance_id=b.instance_id)
    back.join()
    static_return_converges(run, back)


def static_return_converges(run: Run, back: Member) -> None:
    a = run.state["a"]
    converge([a, back])
    assert consumer_group_members(run.api, run.group) == {a.member_id, back.member_id}
    assert a.epoch >= run.state["epoch_a"]
    assert group_epoch(run.api, run.group) >= run.state["group_epoch"]


def static_return_prefix(run: Run) -> None:
    two_members(run, static=True)
    b = run.state["b"]
    assert b.leave(STATIC_LEAVE_EPOCH)["errorCode"] == 0
    run.state["back"] = Member(run.api, run.group, topics=[run.topic], instance_id=b.instance_id)


def static_return(run: Run, url: str) -> Answer:
    return Api(url).call("consumer-group-heartbeat", join_body(run.state["back"]))


def static_return_recover(run: Run) -> None:
    back: Member = run.state["back"]
    back.join()  # the same join again, as a client does after a 500
    static_return_converges(run, back)


# --- classic leave-group: a dynamic member, and a static one (as the admin client removes it) ---


def classic_two(run: Run, static: bool) -> None:
    c1, c2 = classic_members(run, ["c1", "c2"])
    if static:
        c2.instance_id = unique("static")
    classic_settle(run, [c1, c2])
    c2._revoke(set(c2.owned))  # leaving: it gives its partitions up first
    run.state.update(c1=c1, c2=c2, generation=c1.generation, live=["c1"])


def classic_leave_prefix(run: Run) -> None:
    classic_two(run, static=False)


def classic_static_leave_prefix(run: Run) -> None:
    classic_two(run, static=True)


def classic_leave_body(run: Run) -> dict:
    c2 = run.state["c2"]
    member = {"memberId": c2.member_id, "groupInstanceId": c2.instance_id}
    return {"groupId": run.group, "members": [member]}


def classic_leave(run: Run, url: str) -> Answer:
    return Api(url, run.state["c2"].client_id).call("leave-group", classic_leave_body(run))


def classic_leave_recover(run: Run) -> None:
    answer = run.api.call("leave-group", classic_leave_body(run))  # the client's retry
    assert answer.status == 200, (answer.status, answer.body)
    assert answer.body["errorCode"] == 0, answer.body
    assert answer.body["members"][0]["errorCode"] in (0, UNKNOWN_MEMBER_ID), answer.body
    classic_recover(run)
    group = run.api.ok("describe-groups", {"groups": [run.group]})["groups"][0]
    assert [m["memberId"] for m in group["members"]] == [run.state["c1"].member_id], group


SCENARIOS = [
    Scenario("consumer-leave", leave_prefix, consumer_leave, leave_recover),
    Scenario("consumer-static-leave", static_prefix, consumer_static_leave, static_leave_recover),
    Scenario("consumer-static-return", static_return_prefix, static_return, static_return_recover),
    Scenario("classic-leave", classic_leave_prefix, classic_leave, classic_leave_recover),
    Scenario(
        "classic-static-leave", classic_static_leave_prefix, classic_leave, classic_leave_recover
    ),
]


@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda s: s.name)
def test_a_crash_at_any_write_of_a_leave_is_recovered(
    normal: InProcessCoordinator, scenario: Scenario
) -> None:
    crash_every_write(normal, scenario)
