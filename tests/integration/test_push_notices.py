"""The push channel's notices of what no member's request of its own brings (docs/sessions.md,
"Push"): a streams member's shutdown request (the other members) and released tasks (the
members waiting on them, no other), a topic grown (every member of the consumer and streams
groups subscribed to it), a Kinesis shard's end committed (its group: the children are
assignable). Each over a member's real socket on
`groupcoord serve` (or the in-process coordinator, for kinesis-local) on DynamoDB Local, with
a heartbeat interval of 15 s: a notice within PUSHED_S is push, not a heartbeat's answer.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator

import pytest
from websockets.sync.client import ClientConnection

from groupcoord.settings import Settings
from groupcoord.store.store import Store
from tests.support.api import Api
from tests.support.consumer import (
    Member,
    assert_no_partition_held_twice,
    create_topic,
    settle,
    unique,
)
from tests.support.kinesis import Streams, new_topic, owned, resharded, streams_fixture
from tests.support.kinesis import commit_position as commit
from tests.support.push_sockets import PUSHED_S, member_socket, next_notice, told
from tests.support.servers import (
    IMMEDIATE_INSTALLS,
    InProcessCoordinator,
    running_serve,
    unique_table,
)
from tests.support.streams import STREAMS_SETTINGS, StreamsMember, counter
from tests.support.streams import settle as settle_streams

SHUTDOWN_APPLICATION = 4
# How long a member not concerned hears nothing (a notice comes within milliseconds).
QUIET_S = 2.0
SETTINGS = {
    **STREAMS_SETTINGS,
    **IMMEDIATE_INSTALLS,
    "group.consumer.heartbeat.interval.ms": "15000",
    "group.streams.heartbeat.interval.ms": "15000",
}


@pytest.fixture(scope="module")
def api(dynamodb_endpoint: str) -> Iterator[Api]:
    with running_serve(dynamodb_endpoint, SETTINGS, push=True) as url:
        yield Api(url)


def streams_pair(api: Api) -> tuple[StreamsMember, StreamsMember]:
    """Two streams members of a new group on a 4-partition topic, settled."""
    words, group = unique("push-words"), unique("push-streams")
    create_topic(api, words, 4)
    members = [StreamsMember(api, group, counter(words, group)) for _ in range(2)]
    for member in members:
        assert member.join()["errorCode"] == 0, member.last
    settle_streams(members)
    return members[0], members[1]


def test_a_streams_shutdown_request_tells_the_other_members(api: Api) -> None:
    requester, other = streams_pair(api)
    with member_socket(api, other.group, other.member_id) as socket:
        assert requester.heartbeat(shutdownApplication=True)["errorCode"] == 0
        told(socket, other.group)
        other.heartbeat()
        assert SHUTDOWN_APPLICATION in other.statuses()


def test_released_streams_tasks_tell_the_member_waiting_on_them(api: Api) -> None:
    words, group = unique("push-words"), unique("push-streams")
    create_topic(api, words, 4)
    holder = StreamsMember(api, group, counter(words, group))
    holder.join()
    settle_streams([holder])
    assert len(holder.active["0"]) == 4
    joiner = StreamsMember(api, group, counter(words, group))
    joiner.join()  # its target has active tasks the holder still holds
    with member_socket(api, group, joiner.member_id) as socket:
        holder.heartbeat()  # told to revoke some
        assert len(holder.active["0"]) < 4
        holder.heartbeat()  # reports them gone: released
        told(socket, group)
        joiner.heartbeat()
        assert joiner.active.get("0"), joiner.last


def test_released_streams_tasks_tell_no_member_that_does_not_wait_on_them(api: Api) -> None:
    """As the consumer protocol's releases (below): a streams release is told to whoever waits
    on its tasks, not to the whole group. Three processes, so the bystander's standbys wait on
    no other process."""
    first, second = streams_pair(api)  # two active tasks each, and standbys
    joiner = StreamsMember(api, first.group, first.topology)
    joiner.join()  # its target has an active task one of them still holds
    before = {m.member_id: len(m.active["0"]) for m in (first, second)}
    for member in (first, second):
        member.heartbeat()  # told to revoke what moves
    releasers = [m for m in (first, second) if len(m.active["0"]) < before[m.member_id]]
    assert len(releasers) == 1, (first.last, second.last)
    releaser = releasers[0]
    bystander = second if releaser is first else first
    with (
        member_socket(api, joiner.group, joiner.member_id) as waiting,
        member_socket(api, joiner.group, bystander.member_id) as idle,
    ):
        releaser.heartbeat()  # reports it gone: released
        told(waiting, joiner.group)
        with pytest.raises(TimeoutError):
            idle.recv(timeout=QUIET_S)
    settle_streams([first, second, joiner])
    assert joiner.active.get("0"), joiner.last


def test_released_partitions_tell_the_member_waiting_on_them_and_no_other(api: Api) -> None:
    """A release is told to whoever waits on its partitions, not to the whole group: every
    member heartbeating at once on each release queued the waiter's own heartbeat behind
    theirs (a joiner's share came about 1 s late)."""
    wanted, other, group = unique("push-wanted"), unique("push-other"), unique("push-group")
    create_topic(api, wanted, 4)
    create_topic(api, other, 2)
    holder = Member(api, group, topics=[wanted])
    bystander = Member(api, group, topics=[other])  # its target never has `wanted`'s
    for member in (holder, bystander):
        member.join()
    settle([holder, bystander])
    joiner = Member(api, group, topics=[wanted])
    joiner.join()  # its target has partitions the holder still holds
    with (
        member_socket(api, group, joiner.member_id) as waiting,
        member_socket(api, group, bystander.member_id) as idle,
    ):
        holder.heartbeat()  # told to revoke two
        assert sum(len(p) for p in holder.owned.values()) == 2, holder.last
        holder.heartbeat()  # reports them gone: released
        told(waiting, group)
        with pytest.raises(TimeoutError):
            idle.recv(timeout=QUIET_S)
        settle([holder, joiner])
        assert sum(len(p) for p in joiner.owned.values()) == 2, joiner.last


def test_a_grown_topic_tells_a_consumer_groups_members(api: Api) -> None:
    topic, group = unique("push-topic"), unique("push-group")
    create_topic(api, topic, 2)
    member = Member(api, group, topics=[topic])
    member.join()
    settle([member])
    with member_socket(api, group, member.member_id) as socket:
        grown = api.ok("create-partitions", {"topics": [{"name": topic, "count": 4}]})
        assert grown["results"][0]["errorCode"] == 0, grown
        told(socket, group)
        settle([member])
        assert sum(len(p) for p in member.owned.values()) == 4


def test_a_grown_topic_tells_a_streams_groups_members(api: Api) -> None:
    first, _ = streams_pair(api)
    words = first.topology["subtopologies"][0]["sourceTopics"][0]
    with member_socket(api, first.group, first.member_id) as socket:
        grown = api.ok("create-partitions", {"topics": [{"name": words, "count": 6}]})
        assert grown["results"][0]["errorCode"] == 0, grown
        told(socket, first.group)


# --- a Kinesis shard's end: the children assignable ---------------------------------------------

streams = streams_fixture()
KINESIS_SETTINGS = {
    "groupcoord.kinesis.shard.sync.interval.ms": "60000",
    "group.consumer.assignment.interval.ms": "60000",
    "group.consumer.heartbeat.interval.ms": "15000",
}


@pytest.fixture(scope="module")
def kinesis_deployed(dynamodb_endpoint: str, kinesis_endpoint: str) -> Iterator[tuple[Api, Store]]:
    """The in-process coordinator with its push channel, on DynamoDB Local and kinesis-local."""
    mapping = {"groupcoord.table.name": unique_table(), **KINESIS_SETTINGS}
    store = Store.connect(Settings.from_mapping(mapping), endpoint_url=dynamodb_endpoint)
    store.ensure_table()
    coordinator = InProcessCoordinator(mapping, store=store, push=True)
    try:
        yield Api(coordinator.url), coordinator.store
    finally:
        coordinator.stop()


def test_a_committed_shard_end_tells_the_group(
    kinesis_deployed: tuple[Api, Store], streams: Streams
) -> None:
    api, store = kinesis_deployed
    arn = streams.create(1)
    topic = new_topic(api, arn)
    member = Member(api, unique("push-kinesis"), topics=[topic])
    member.join()
    settle([member])
    streams.split(arn, streams.shards(arn)[0]["ShardId"])
    resharded(store, topic)  # partitions 1 and 2, the children, not assignable yet
    member.heartbeat()  # takes the reshard in
    assert owned(member) == {0}
    with member_socket(api, member.group, member.member_id) as socket:
        assert commit(api, member, topic, 0, {"shardEnd": True}) == 0
        told(socket, member.group)
        member.heartbeat()  # the parent revoked first
        member.heartbeat()
        assert owned(member) == {1, 2}


# --- a crashed member's disconnect grace ---------------------------------------------------------

# No sweeps: a request past the grace comes only from a member told of it.
NO_SWEEPS = {**SETTINGS, "groupcoord.sweep.interval.ms": "3600000"}


@pytest.fixture
def unswept(dynamodb_endpoint: str) -> Iterator[Api]:
    """The in-process coordinator with its push channel and no sweeper, on DynamoDB Local."""
    mapping = {"groupcoord.table.name": unique_table(), **NO_SWEEPS}
    store = Store.connect(Settings.from_mapping(mapping), endpoint_url=dynamodb_endpoint)
    store.ensure_table()
    coordinator = InProcessCoordinator(mapping, store=store, push=True)
    try:
        yield Api(coordinator.url)
    finally:
        coordinator.stop()


def notices_until(sockets: dict[str, ClientConnection], enough: int, then_s: float) -> dict:
    """The notices on `sockets` (by member), read until `enough` members have one (or
    PUSHED_S passed), and then_s longer."""
    found: dict[str, list[dict]] = {}
    deadline, quiet_until = time.monotonic() + PUSHED_S, None
    while time.monotonic() < (quiet_until or deadline):
        for member_id, socket in sockets.items():
            with contextlib.suppress(TimeoutError):
                found.setdefault(member_id, []).append(next_notice(socket, 0.02))
        found = {m: n for m, n in found.items() if n}
        if quiet_until is None and len(found) >= enough:
            quiet_until = time.monotonic() + then_s
    return found


def test_a_crashed_members_grace_tells_two_others_whose_heartbeat_expires_it(
    unswept: Api,
) -> None:
    """A member's socket dropped without a close frame (its process killed): two of the
    others hear of the grace (`afterMs`), not the whole group (every member heartbeating into
    the group as the grace ended queued the expiry and the install: a kill's partitions were
    owned again 2-2.4 s p99 at 16 members), and one heartbeat of theirs past the grace expires
    the member; its partitions' new owners are told."""
    api = unswept
    topic, group = unique("push-topic"), unique("push-group")
    create_topic(api, topic, 12)
    members = [Member(api, group, topics=[topic]) for _ in range(6)]
    for member in members:
        member.join()
    settle(members)
    victim, survivors = members[0], {m.member_id: m for m in members[1:]}
    sockets = {m.member_id: member_socket(api, group, m.member_id) for m in members}
    try:
        sockets.pop(victim.member_id).close_socket()  # as a killed process's: no close frame
        graced = notices_until(sockets, 2, then_s=1.0)
        assert len(graced) == 2, graced
        assert all("afterMs" in n for told_ in graced.values() for n in told_), graced
        time.sleep(max(n["afterMs"] for told_ in graced.values() for n in told_) / 1000)
        before = {m: {t: set(p) for t, p in survivors[m].owned.items()} for m in survivors}
        for member_id in graced:  # as a client does, as the grace ends
            assert survivors[member_id].heartbeat()["errorCode"] == 0
        retargeted = notices_until(sockets, 1, then_s=1.0)
        settle(list(survivors.values()))
        assert sum(len(p) for m in survivors.values() for p in m.owned.values()) == 12
        assert_no_partition_held_twice(list(survivors.values()))
        gainers = {m for m in survivors if survivors[m].owned != before[m]}
        assert gainers and gainers <= set(retargeted), (gainers, retargeted)
    finally:
        for socket in sockets.values():
            socket.close()
