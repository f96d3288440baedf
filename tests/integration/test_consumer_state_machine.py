"""A hypothesis state machine over the consumer protocol: random joins, leaves,
heartbeats with and without acknowledging revocations, member crashes (the process dies) and
request crashes (the coordinator dies between two DynamoDB writes: a Lambda timeout).

It runs the real service and store code (heartbeat, install, expiry, describe) on the
in-memory DynamoDB of groupcoord/local/memory/, with a model clock, so hundreds of
steps take a second. After every step:
- no partition is held (assigned or pending revocation) by two member items, and
- every live client that is still a member holds only what its member item holds, so no two
  live clients consume one partition.
`settle` then lets time pass (crashed members' sessions expire, crashed installs' leases run
out) with every live client heartbeating and acknowledging: once all have heartbeated twice
with nothing changing, the group must be Stable with every subscribed partition assigned,
each client holding exactly what the coordinator assigned it.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Any

import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from groupcoord import clock
from groupcoord.core.consumer.assignment import pairs
from groupcoord.core.topics import TopicRecord
from groupcoord.local.memory import Crash, MemoryDynamoClient
from groupcoord.models.consumer import (
    ConsumerGroupDescribeRequest,
    ConsumerGroupHeartbeatRequest,
)
from groupcoord.service import races
from groupcoord.service.consumer import heartbeat
from groupcoord.service.consumer.common import reload
from groupcoord.service.consumer.describe import consumer_group_describe
from groupcoord.service.context import ApiContext
from groupcoord.settings import Settings
from groupcoord.store.dynamo import Dynamo
from groupcoord.store.store import Store
from groupcoord.topic_ids import new_topic_id

SESSION_MS = 45_000
MAX_LIVE = 5
TP = tuple[str, int]


class Clock:
    """The store's clock (groupcoord/clock.py's port), moved by the machine's rules and by the
    waits of the code under test."""

    def __init__(self) -> None:
        self.now = 1_700_000_000_000

    def ms(self) -> int:
        return self.now

    def now_ms(self) -> int:
        return self.now

    def monotonic_s(self) -> float:
        return self.now / 1000

    def sleep(self, seconds: float) -> None:
        self.now += int(seconds * 1000)


@dataclass
class Client:
    member_id: str
    epoch: int = 0
    joined: bool = False
    assigned: set[TP] = field(default_factory=set)  # what the coordinator last sent
    holding: set[TP] = field(default_factory=set)  # what the process really consumes


def wire(parts: set[TP]) -> list[dict[str, Any]]:
    by_topic: dict[str, list[int]] = {}
    for t, p in sorted(parts):
        by_topic.setdefault(t, []).append(p)
    return [{"topicId": t, "partitions": ps} for t, ps in by_topic.items()]


def received(answer: dict[str, Any]) -> set[TP] | None:
    if answer.get("assignment") is None:
        return None
    return {(tp["topicId"], p) for tp in answer["assignment"]["topicPartitions"]
            for p in tp["partitions"]}  # fmt: skip


class ConsumerGroupMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.clock = Clock()
        self.client = MemoryDynamoClient()
        cfg = Settings.from_mapping({"groupcoord.table.name": "sm"})
        self.store = Store(Dynamo(self.client, cfg.table_name, clock=self.clock), cfg)
        self.store.ensure_table()
        self.cs = self.store.consumer
        self.group = "g"
        self.clients: list[Client] = []
        self.topic_names: list[str] = []
        self.all_partitions: set[TP] = set()
        self.patches = pytest.MonkeyPatch()
        self.controlled_clock = clock.use(self.clock.ms)
        self.controlled_clock.__enter__()
        # A lost race retries at once: the random pause would move the clock at random.
        self.patches.setattr(races, "back_off", lambda clock, attempt: None)

    def teardown(self) -> None:
        self.patches.undo()
        self.controlled_clock.__exit__(None, None, None)

    @initialize(counts=st.lists(st.integers(1, 7), min_size=1, max_size=2))
    def topics(self, counts: list[int]) -> None:
        for i, count in enumerate(counts):
            name, topic_id = f"topic-{i}", new_topic_id()
            self.store.topics.create(TopicRecord(name, topic_id, count), now_ms=0)
            self.topic_names.append(name)
            self.all_partitions |= {(topic_id, p) for p in range(count)}

    # --- talking to the coordinator ---

    def ctx(self) -> ApiContext:
        return ApiContext(
            settings=self.store.settings, store=self.store, now_ms=self.clock.now, endpoint="x"
        )

    def send(self, c: Client, body: dict[str, Any], crash_after: int | None = None) -> dict | None:
        request = ConsumerGroupHeartbeatRequest.model_validate(
            {"groupId": self.group, "memberId": c.member_id, **body}
        )
        self.client.fail_after_writes = crash_after
        try:
            return heartbeat.consumer_group_heartbeat(request, self.ctx()).to_json_dict()
        except Crash:
            return None  # the coordinator died mid-request: no answer
        finally:
            self.client.fail_after_writes = None

    def take(self, c: Client, answer: dict | None) -> None:
        if answer is None:
            return
        if answer["errorCode"] in (25, 110):  # fenced: abandon everything, rejoin later
            c.epoch, c.joined, c.assigned, c.holding = 0, False, set(), set()
            return
        if answer["errorCode"] == 14:  # retriable: as if there was no answer
            return
        assert answer["errorCode"] == 0, answer
        c.epoch, c.joined = answer["memberEpoch"], True
        got = received(answer)
        if got is not None:
            c.assigned = got
            c.holding |= got  # revoked ones are kept until the client acknowledges

    def join_client(self, c: Client, crash_after: int | None = None) -> None:
        body = {"memberEpoch": 0, "rebalanceTimeoutMs": 60_000,
                "subscribedTopicNames": self.topic_names, "topicPartitions": []}  # fmt: skip
        c.holding, c.assigned = set(), set()
        self.take(c, self.send(c, body, crash_after))

    def beat(self, c: Client, ack: bool, crash_after: int | None = None) -> None:
        body: dict[str, Any] = {"memberEpoch": c.epoch}
        if ack:
            c.holding = set(c.assigned)  # revoke first, then say so
            body["topicPartitions"] = wire(c.holding)
        self.take(c, self.send(c, body, crash_after))

    # --- rules ---

    @precondition(lambda self: len(self.clients) < MAX_LIVE)
    @rule(crash_after=st.none() | st.integers(0, 6))
    def join(self, crash_after: int | None) -> None:
        c = Client(str(uuid.uuid4()))
        self.clients.append(c)
        self.join_client(c, crash_after)

    @precondition(lambda self: self.clients)
    @rule(data=st.data(), ack=st.booleans(), crash_after=st.none() | st.integers(0, 6))
    def heartbeat(self, data: st.DataObject, ack: bool, crash_after: int | None) -> None:
        c = data.draw(st.sampled_from(self.clients))
        if c.joined:
            self.beat(c, ack, crash_after)
        else:
            self.join_client(c, crash_after)

    @precondition(lambda self: self.clients)
    @rule(data=st.data())
    def leave(self, data: st.DataObject) -> None:
        c = data.draw(st.sampled_from(self.clients))
        self.clients.remove(c)
        if c.joined:
            answer = self.send(c, {"memberEpoch": -1})
            assert answer is not None and answer["errorCode"] in (0, 25), answer

    @precondition(lambda self: self.clients)
    @rule(data=st.data())
    def crash(self, data: st.DataObject) -> None:
        """The member's process dies: it holds nothing and never heartbeats again."""
        self.clients.remove(data.draw(st.sampled_from(self.clients)))

    @rule(ms=st.integers(100, 20_000))
    def time_passes(self, ms: int) -> None:
        self.clock.now += ms

    @rule()
    def settle(self) -> None:
        # Long enough for crashed members' sessions and crashed installs' leases to run out,
        # in steps short enough that live members stay alive.
        for _ in range(6):
            for c in list(self.clients):
                self.beat(c, ack=True) if c.joined else self.join_client(c)
            self.clock.now += 10_000
        quiet = 0
        for _ in range(40):
            before = [(c.epoch, frozenset(c.holding)) for c in self.clients]
            for c in self.clients:
                self.beat(c, ack=True) if c.joined else self.join_client(c)
            after = [(c.epoch, frozenset(c.holding)) for c in self.clients]
            quiet = quiet + 1 if before == after else 0
            if quiet >= 2:
                break
        assert quiet >= 2, "the group did not settle"
        self.check_stable()

    def check_stable(self) -> None:
        request = ConsumerGroupDescribeRequest(group_ids=[self.group])
        (described,) = consumer_group_describe(request, self.ctx()).groups
        if not self.clients:
            assert described.error_code != 0 or described.group_state in ("Empty", "Stable")
            return
        assert described.group_state == "Stable", described
        assert described.group_epoch == described.assignment_epoch
        members = {m.member_id: m for m in described.members}
        assert set(members) == {c.member_id for c in self.clients}
        assigned: set[TP] = set()
        for c in self.clients:
            m = members[c.member_id]
            server = {(tp.topic_id, p) for tp in m.assignment.topic_partitions
                      for p in tp.partitions}  # fmt: skip
            assert c.holding == c.assigned == server
            assert m.member_epoch == described.group_epoch == c.epoch
            assert not assigned & server
            assigned |= server
        assert assigned == self.all_partitions

    # --- invariants ---

    @invariant()
    def no_partition_is_held_twice(self) -> None:
        group = reload(self.cs, self.group)
        if group is None:
            return
        members = {m.member_id: m for m in self.cs.members(group)}
        owner: dict[TP, str] = {}
        for m in members.values():
            for tp in pairs(m.assignment.holds):
                assert tp not in owner, f"{tp} held by {owner[tp]} and {m.member_id}"
                owner[tp] = m.member_id
        for c in self.clients:
            m = members.get(c.member_id)
            if m is not None and c.joined:
                assert c.holding <= set(pairs(m.assignment.holds)), (c, m)


ConsumerGroupMachine.TestCase.settings = settings(
    max_examples=40, stateful_step_count=30, deadline=None
)
test_consumer_group_state_machine = ConsumerGroupMachine.TestCase
