"""Every error code of the classic protocol, each in its own test, over HTTP."""

from __future__ import annotations

import re
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from tests.support.api import Api
from tests.support.classic_client import (
    FAST_SETTINGS,
    ClassicClient,
    describe,
    unique,
    wait_until,
)
from tests.support.servers import running_service

pytestmark = pytest.mark.coordinator(FAST_SETTINGS, shared=True)


def member(url: str, group_id: str, **kwargs) -> ClassicClient:
    kwargs.setdefault("rebalance_timeout_ms", 10000)
    return ClassicClient(url, group_id, **kwargs)


def stable_member(url: str, group_id: str, **kwargs) -> ClassicClient:
    """A lone member that has joined and synced: the group is Stable."""
    client = member(url, group_id, **kwargs)
    assert client.join()["errorCode"] == 0
    assert client.sync({client.member_id: b"a"})["errorCode"] == 0
    return client


def register(client: ClassicClient) -> None:
    """The two-step join up to a registered join that the barrier holds (202)."""
    first = client.join_once()
    assert first.body["errorCode"] == 79
    client.member_id = first.body["memberId"]
    answer = client.join_once()
    assert answer.status == 202, answer.body


def grow(existing: list[ClassicClient], newcomer: ClassicClient) -> None:
    """A newcomer joins a Stable group: the others see 27 at their next heartbeat and rejoin,
    and everyone gets the next generation."""
    with ThreadPoolExecutor(len(existing) + 1) as pool:
        futures = [pool.submit(newcomer.join)]
        api = Api(newcomer.base_url)

        def registered() -> bool:
            members = describe(api, newcomer.group_id)["members"]
            return newcomer.member_id in {m["memberId"] for m in members}

        wait_until(registered, 10, "the newcomer's join")
        for client in existing:
            wait_until(lambda c=client: c.heartbeat() == 27, 10, "the rebalance")
            futures.append(pool.submit(client.join))
        for future in futures:
            assert future.result()["errorCode"] == 0
    assert len({c.generation for c in [*existing, newcomer]}) == 1


def two_joined_members(url: str, group_id: str, **kwargs) -> tuple[ClassicClient, ClassicClient]:
    """A leader and a follower that both joined one generation (CompletingRebalance)."""
    leader = stable_member(url, group_id, **kwargs)
    follower = member(url, group_id, **kwargs)
    grow([leader], follower)
    assert leader.is_leader and not follower.is_leader
    return leader, follower


def two_stable_members(url: str, group_id: str, **kwargs) -> tuple[ClassicClient, ClassicClient]:
    """A leader and a follower that both joined one generation and synced."""
    leader, follower = two_joined_members(url, group_id, **kwargs)
    assert leader.sync({leader.member_id: b"L", follower.member_id: b"F"})["errorCode"] == 0
    assert follower.sync()["errorCode"] == 0
    return leader, follower


def replace_static(url: str, old: ClassicClient) -> ClassicClient:
    """The same static instance rejoins with a new member id (a bounce)."""
    new = member(
        url,
        old.group_id,
        instance_id=old.instance_id,
        session_timeout_ms=old.session_timeout_ms,
        protocols=old.protocols,
    )
    assert new.join()["errorCode"] == 0
    assert new.member_id != old.member_id
    return new


# --- JoinGroup ---


def test_join_with_empty_group_id_is_invalid_group_id_24(api: Api, url: str) -> None:
    answer = member(url, "").join_once()
    assert (answer.status, answer.body["errorCode"]) == (200, 24)


@pytest.mark.parametrize("timeout_ms", [99, 1_800_001])
def test_join_with_session_timeout_out_of_bounds_is_26(url: str, timeout_ms: int) -> None:
    # The shared server runs with group.min.session.timeout.ms=100 and the default max.
    answer = member(url, unique("g"), session_timeout_ms=timeout_ms).join_once()
    assert answer.body["errorCode"] == 26


def test_join_with_known_member_id_on_missing_group_is_25(url: str) -> None:
    client = member(url, unique("g"), session_timeout_ms=1000)
    client.member_id = "classic-test-00000000-0000-0000-0000-000000000000"
    answer = client.join_once()
    assert answer.body["errorCode"] == 25


def test_join_with_other_protocol_type_is_23(url: str) -> None:
    group_id = unique("g")
    stable_member(url, group_id)
    other = member(url, group_id, protocol_type="connect")
    assert other.join()["errorCode"] == 23


def test_join_with_no_protocol_in_common_is_23(url: str) -> None:
    group_id = unique("g")
    stable_member(url, group_id, protocols=[("range", b""), ("roundrobin", b"")])
    other = member(url, group_id, protocols=[("sticky", b"")])
    assert other.join()["errorCode"] == 23
    # One protocol in common is enough.
    fine = member(url, group_id, protocols=[("sticky", b""), ("roundrobin", b"")])
    first = fine.join_once()
    assert first.body["errorCode"] == 79


def test_two_step_join_hands_out_a_member_id_with_79(url: str) -> None:
    group_id = unique("g")
    client = member(url, group_id, client_id="my-app")
    first = client.join_once()
    assert first.status == 200
    assert first.body["errorCode"] == 79
    assert re.fullmatch(r"my-app-[0-9a-f-]{36}", first.body["memberId"])
    client.member_id = first.body["memberId"]
    joined = client.join()
    assert joined["errorCode"] == 0
    assert joined["memberId"] == first.body["memberId"]
    assert joined["generationId"] == 1
    assert joined["leader"] == client.member_id
    assert [m["memberId"] for m in joined["members"]] == [client.member_id]


def test_expired_pending_member_id_is_25(url: str) -> None:
    client = member(url, unique("g"), session_timeout_ms=200)
    first = client.join_once()
    assert first.body["errorCode"] == 79
    client.member_id = first.body["memberId"]
    # The pending id lives for the session timeout of the first join (200 ms).
    time.sleep(0.4)
    assert client.join_once().body["errorCode"] == 25


def test_join_of_a_full_group_is_81(service_endpoint: str | None) -> None:
    with running_service(service_endpoint, {**FAST_SETTINGS, "group.max.size": "2"}) as small:
        group_id = unique("g")
        leader, follower = two_stable_members(small, group_id)
        third = member(small, group_id)
        assert third.join()["errorCode"] == 81
        # A static newcomer is refused too; the members in the group are not disturbed.
        static = member(small, group_id, instance_id="i-3")
        assert static.join()["errorCode"] == 81
        assert leader.heartbeat() == 0 and follower.heartbeat() == 0
        # Once a member leaves, there is room again.
        follower.leave()
        grow([leader], third)


# --- SyncGroup ---


def test_sync_of_unknown_member_is_25(url: str) -> None:
    group_id = unique("g")
    known = stable_member(url, group_id)
    stranger = member(url, group_id)
    stranger.member_id, stranger.generation = "nobody", known.generation
    assert stranger.sync_once().body["errorCode"] == 25
    missing = member(url, unique("missing"))
    missing.member_id, missing.generation = "nobody", 1
    assert missing.sync_once().body["errorCode"] == 25


def test_sync_of_fenced_static_member_is_82(url: str) -> None:
    group_id = unique("g")
    old = stable_member(url, group_id, instance_id="instance-1")
    replace_static(url, old)
    assert old.sync_once().body["errorCode"] == 82


def test_sync_with_wrong_generation_is_22(url: str) -> None:
    client = stable_member(url, unique("g"))
    client.generation += 1
    assert client.sync_once().body["errorCode"] == 22


def test_sync_with_other_protocol_type_or_name_is_23(url: str) -> None:
    client = stable_member(url, unique("g"))
    client.protocol_name = "roundrobin"
    assert client.sync_once().body["errorCode"] == 23
    client.protocol_name, client.protocol_type = "range", "connect"
    assert client.sync_once().body["errorCode"] == 23


def test_sync_during_preparing_rebalance_is_27(url: str) -> None:
    group_id = unique("g")
    old = stable_member(url, group_id)
    register(member(url, group_id))  # the newcomer's join starts a rebalance
    assert describe(Api(url), group_id)["groupState"] == "PreparingRebalance"
    assert old.sync_once().body["errorCode"] == 27


# --- Heartbeat ---


def test_heartbeat_of_missing_group_is_25(url: str) -> None:
    client = member(url, unique("missing"))
    client.member_id, client.generation = "nobody", 1
    assert client.heartbeat() == 25


def test_heartbeat_to_empty_group_is_25(url: str) -> None:
    group_id = unique("g")
    client = stable_member(url, group_id)
    client.leave()
    assert describe(Api(url), group_id)["groupState"] == "Empty"
    assert client.heartbeat() == 25


def test_heartbeat_of_fenced_static_member_is_82(url: str) -> None:
    group_id = unique("g")
    old = stable_member(url, group_id, instance_id="instance-1")
    new = replace_static(url, old)
    assert old.heartbeat() == 82
    assert new.heartbeat() == 0


def test_heartbeat_with_wrong_generation_is_22(url: str) -> None:
    client = stable_member(url, unique("g"))
    client.generation -= 1
    assert client.heartbeat() == 22


def test_heartbeat_during_preparing_rebalance_is_27_and_renews_the_session(url: str) -> None:
    group_id = unique("g")
    # A 1 s session but a 10 s rebalance timeout: only its heartbeats keep `old` alive while
    # the newcomer's join holds the group in PreparingRebalance. Heartbeats every 100 ms leave
    # 900 ms of slack per beat on a busy machine.
    old = stable_member(url, group_id, session_timeout_ms=1000)
    newcomer = member(url, group_id, session_timeout_ms=10000)
    with ThreadPoolExecutor(1) as pool:
        joining = pool.submit(newcomer.join)
        while (code := old.heartbeat()) == 0:
            time.sleep(0.1)
        assert code == 27
        started = time.monotonic()
        while time.monotonic() - started < 2.5:  # two and a half session timeouts
            assert old.heartbeat() == 27
            time.sleep(0.1)
        members = {m["memberId"] for m in describe(Api(url), group_id)["members"]}
        assert old.member_id in members
        # It is still a member: its rejoin completes the barrier.
        assert old.join()["errorCode"] == 0
        assert joining.result()["generationId"] == old.generation


def test_heartbeat_in_stable_and_completing_rebalance_is_0(url: str) -> None:
    group_id = unique("g")
    first, second = two_joined_members(url, group_id)
    assert describe(Api(url), group_id)["groupState"] == "CompletingRebalance"
    assert first.heartbeat() == 0 and second.heartbeat() == 0
    assert first.sync({})["errorCode"] == 0
    assert describe(Api(url), group_id)["groupState"] == "Stable"
    assert first.heartbeat() == 0 and second.heartbeat() == 0


# --- LeaveGroup ---


def test_leave_of_unknown_member_is_25_per_member(url: str) -> None:
    group_id = unique("g")
    client = stable_member(url, group_id)
    body = Api(url).ok(
        "leave-group",
        {"groupId": group_id, "members": [{"memberId": "nobody"}, {"memberId": client.member_id}]},
    )
    assert [m["errorCode"] for m in body["members"]] == [25, 0]
    assert describe(Api(url), group_id)["groupState"] == "Empty"


def test_leave_of_fenced_static_member_is_82_per_member(url: str) -> None:
    group_id = unique("g")
    old = stable_member(url, group_id, instance_id="instance-1")
    new = replace_static(url, old)
    body = old.leave()
    assert [m["errorCode"] for m in body["members"]] == [82]
    assert new.heartbeat() == 0  # the current owner of the instance is untouched


def test_leave_by_instance_id_alone_is_an_admin_removal(url: str) -> None:
    group_id = unique("g")
    leader, follower = two_stable_members(url, group_id)
    static = member(url, group_id, instance_id="instance-9")
    grow([leader, follower], static)
    body = Api(url).ok(
        "leave-group", {"groupId": group_id, "members": [{"groupInstanceId": "instance-9"}]}
    )
    assert body["members"] == [{"memberId": "", "groupInstanceId": "instance-9", "errorCode": 0}]
    members = {m["memberId"] for m in describe(Api(url), group_id)["members"]}
    assert static.member_id not in members
    assert describe(Api(url), group_id)["groupState"] == "PreparingRebalance"
    assert static.heartbeat() == 25
    # An unknown instance id is 25 for that member.
    again = Api(url).ok(
        "leave-group", {"groupId": group_id, "members": [{"groupInstanceId": "instance-9"}]}
    )
    assert again["members"][0]["errorCode"] == 25


def test_leave_starts_a_rebalance_that_the_survivor_sees_at_its_next_heartbeat(url: str) -> None:
    group_id = unique("g")
    leader, follower = two_stable_members(url, group_id)
    assert [m["errorCode"] for m in follower.leave()["members"]] == [0]
    assert leader.heartbeat() == 27
    joined = leader.join()
    assert joined["generationId"] == follower.generation + 1
    assert [m["memberId"] for m in joined["members"]] == [leader.member_id]


# --- describe-groups, delete-groups, list-groups ---


def test_describe_of_missing_group_is_69(api: Api) -> None:
    group = describe(api, unique("missing"))
    assert group["errorCode"] == 69
    assert group["groupState"] == "Dead"


def test_describe_shows_members_with_metadata_and_assignment_in_stable(url: str) -> None:
    group_id = unique("g")
    leader, follower = two_stable_members(
        url, group_id, protocols=[("range", b"meta"), ("roundrobin", b"other")]
    )
    group = describe(Api(url), group_id)
    assert group["errorCode"] == 0
    assert (group["groupState"], group["protocolType"], group["protocolData"]) == (
        "Stable",
        "consumer",
        "range",
    )
    by_id = {m["memberId"]: m for m in group["members"]}
    assert set(by_id) == {leader.member_id, follower.member_id}
    assert by_id[leader.member_id]["memberMetadata"] == "bWV0YQ=="  # b"meta"
    assert by_id[leader.member_id]["memberAssignment"] == "TA=="  # b"L"
    assert by_id[follower.member_id]["memberAssignment"] == "Rg=="  # b"F"
    assert by_id[leader.member_id]["clientId"] == "classic-test"
    assert by_id[leader.member_id]["clientHost"] == "127.0.0.1"


def test_delete_groups_68_while_members_69_when_missing_then_ok_once_empty(url: str) -> None:
    api = Api(url)
    group_id, missing = unique("g"), unique("missing")
    client = stable_member(url, group_id)
    results = api.ok("delete-groups", {"groupsNames": [group_id, missing]})["results"]
    assert [(r["groupId"], r["errorCode"]) for r in results] == [(group_id, 68), (missing, 69)]
    client.leave()
    results = api.ok("delete-groups", {"groupsNames": [group_id]})["results"]
    assert results == [{"groupId": group_id, "errorCode": 0, "errorMessage": None}]
    assert describe(api, group_id)["errorCode"] == 69
    assert group_id not in {g["groupId"] for g in api.ok("list-groups", {})["groups"]}
    # The id is free again: a new group starts from generation 1.
    fresh = member(url, group_id)
    assert fresh.join()["generationId"] == 1


def test_list_groups_shows_classic_groups_and_their_states(url: str) -> None:
    api = Api(url)
    group_id = unique("g")
    stable_member(url, group_id)
    listed = wait_until(
        lambda: [g for g in api.ok("list-groups", {})["groups"] if g["groupId"] == group_id],
        5,
        "the group in list-groups",
    )
    assert listed == [
        {
            "groupId": group_id,
            "protocolType": "consumer",
            "groupState": "Stable",
            "groupType": "classic",
        }
    ]
    filtered = api.ok("list-groups", {"statesFilter": ["stable"], "typesFilter": ["classic"]})
    assert group_id in {g["groupId"] for g in filtered["groups"]}


def test_an_empty_member_id_is_25_for_heartbeat_sync_and_leave(url: str) -> None:
    group_id = unique("g")
    known = stable_member(url, group_id)
    stranger = member(url, group_id)
    stranger.generation = known.generation
    assert stranger.heartbeat() == 25
    assert stranger.sync_once().body["errorCode"] == 25
    assert [m["errorCode"] for m in stranger.leave()["members"]] == [25]
    assert known.heartbeat() == 0


def test_heartbeat_sync_and_leave_with_an_empty_group_id_are_24(url: str) -> None:
    client = member(url, "")
    client.member_id, client.generation = "nobody", 1
    assert client.heartbeat() == 24
    assert client.sync_once().body["errorCode"] == 24
    assert client.leave()["errorCode"] == 24


def test_leave_of_a_missing_group_is_25_per_member_only(url: str) -> None:
    body = Api(url).ok(
        "leave-group",
        {"groupId": unique("missing"), "members": [{"memberId": "a"}, {"groupInstanceId": "i"}]},
    )
    assert body["errorCode"] == 0
    assert [m["errorCode"] for m in body["members"]] == [25, 25]
