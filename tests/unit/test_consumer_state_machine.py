"""The consumer protocol's core as a state machine (hypothesis): members join, leave and change
subscriptions in random order; each change installs new targets from the server assignor
(uniform or range, previous targets for stickiness, as the install does); members heartbeat
through the core's reconciliation, acknowledging revocations or not, their responses sometimes
lost, their reports sometimes claiming a partition they do not have (a stale or conflicting
claim). The clients are modelled too: a client consumes what a response assigned it and stops
consuming a partition only when it acknowledges the revocation in its next heartbeat.

After every step: no partition is held (assigned or pending revocation) by two members as the
coordinator records it, none is consumed by two clients, and a client consumes only what the
coordinator records it holding, so a partition reaches its new owner only after its previous
owner acknowledged the revocation. When every member keeps acknowledging, the group converges
on its targets."""

from __future__ import annotations

from dataclasses import dataclass, field

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from groupcoord.core.consumer.assignment import Assignment, intersect, pairs, union
from groupcoord.core.consumer.assignors import ASSIGNORS, AssignorMember
from groupcoord.core.consumer.reconciliation import MemberAssignment, reconcile

TOPICS = {"tA": 4, "tB": 3, "tC": 2}
subscriptions = st.frozensets(st.sampled_from(sorted(TOPICS)), min_size=1)
EVERY_PARTITION = sorted((t, p) for t, n in TOPICS.items() for p in range(n))


@dataclass
class Member:
    topics: frozenset[str]
    state: MemberAssignment = field(default_factory=MemberAssignment)
    target: Assignment = field(default_factory=dict)
    consuming: Assignment = field(default_factory=dict)  # what the client really holds
    told: Assignment = field(default_factory=dict)  # what its last response assigned
    wait_on: tuple[str, ...] = ()  # who held part of the target when it was installed


class ConsumerGroupMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.members: dict[str, Member] = {}
        self.epoch = 0
        self.next_id = 0
        self.assignor = "uniform"
        self.ask_all = True

    @initialize(assignor=st.sampled_from(sorted(ASSIGNORS)), ask_all=st.booleans())
    def configure(self, assignor: str, ask_all: bool) -> None:
        """`ask_all`: reconciliation sees what every other member holds; else, as the
        service reads it, only what the members the install said to wait on hold."""
        self.assignor = assignor
        self.ask_all = ask_all

    def _install(self) -> None:
        """A new group epoch and the targets computed for it (service/consumer/install.py)."""
        self.epoch += 1
        members = [AssignorMember(m, s.topics, s.target) for m, s in sorted(self.members.items())]
        targets = ASSIGNORS[self.assignor](members, TOPICS)
        holder = {tp: m for m, s in self.members.items() for tp in pairs(s.state.holds)}
        for member_id, member in self.members.items():
            member.target = targets.get(member_id, {})
            needed = pairs(member.target) - pairs(member.state.holds)
            member.wait_on = tuple(sorted({holder[tp] for tp in needed if tp in holder}))

    @rule(topics=subscriptions)
    def join(self, topics: frozenset[str]) -> None:
        if len(self.members) >= 5:
            return
        self.next_id += 1
        self.members[f"m{self.next_id}"] = Member(topics)
        self._install()

    @precondition(lambda self: self.members)
    @rule(data=st.data())
    def leave(self, data: st.DataObject) -> None:
        """A leave (or a session expiry): the member and its client stop at once."""
        del self.members[data.draw(st.sampled_from(sorted(self.members)))]
        self._install()

    @precondition(lambda self: self.members)
    @rule(data=st.data(), topics=subscriptions)
    def change_subscription(self, data: st.DataObject, topics: frozenset[str]) -> None:
        self.members[data.draw(st.sampled_from(sorted(self.members)))].topics = topics
        self._install()

    @precondition(lambda self: self.members)
    @rule(data=st.data(), ack=st.booleans(), report=st.booleans(), lost=st.booleans())
    def heartbeat(self, data: st.DataObject, ack: bool, report: bool, lost: bool) -> None:
        """`ack`: the client finished revoking what it was told to give up before sending;
        `report`: it sends its owned partitions (else null, "unchanged"); `lost`: the
        response never reaches it."""
        member_id = data.draw(st.sampled_from(sorted(self.members)))
        self._heartbeat(member_id, ack, report or ack, lost)

    @precondition(lambda self: self.members)
    @rule(data=st.data(), ack=st.booleans(), conflicting=st.booleans())
    def heartbeat_with_a_stale_claim(
        self, data: st.DataObject, ack: bool, conflicting: bool
    ) -> None:
        """A stale or conflicting claim (a zombie, or a client behind on what it gave up):
        the report names a partition the client does not consume, often one another member
        holds. The coordinator must go by what it assigned, not by what a member says."""
        member_id = data.draw(st.sampled_from(sorted(self.members)))
        held_elsewhere = sorted(
            tp
            for other, m in self.members.items()
            if other != member_id
            for tp in pairs(m.state.holds)
        )
        choices = held_elsewhere if conflicting and held_elsewhere else EVERY_PARTITION
        self._heartbeat(member_id, ack, True, False, data.draw(st.sampled_from(choices)))

    def _heartbeat(
        self,
        member_id: str,
        ack: bool,
        report: bool,
        lost: bool,
        claimed: tuple[str, int] | None = None,
    ) -> None:
        member = self.members[member_id]
        if ack:
            member.consuming = intersect(member.consuming, member.told)
        others: Assignment = {}
        asked = set(self.members) if self.ask_all else set(member.wait_on) & set(self.members)
        for other_id in asked - {member_id}:
            others = union(others, self.members[other_id].state.holds)
        owned = member.consuming if report else None
        if owned is not None and claimed is not None:
            owned = union(owned, {claimed[0]: frozenset({claimed[1]})})
        member.state = reconcile(member.state, self.epoch, member.target, owned, others)
        if not lost:
            member.told = member.state.assigned
            member.consuming = union(member.consuming, member.told)

    @precondition(lambda self: self.members)
    @rule()
    def everyone_acknowledges_until_stable(self) -> None:
        for _ in range(2 * len(self.members) + 2):
            for member_id in sorted(self.members):
                self._heartbeat(member_id, ack=True, report=True, lost=False)
        for member_id, member in self.members.items():
            assert member.state.epoch == self.epoch, member_id
            assert member.state.assigned == member.target, member_id
            assert member.consuming == member.target, member_id

    @invariant()
    def no_partition_held_by_two_members(self) -> None:
        seen: dict[tuple[str, int], str] = {}
        for member_id, member in self.members.items():
            for tp in pairs(member.state.holds):
                assert tp not in seen, f"{tp} held by {seen[tp]} and {member_id}"
                seen[tp] = member_id

    @invariant()
    def no_partition_consumed_by_two_clients(self) -> None:
        seen: dict[tuple[str, int], str] = {}
        for member_id, member in self.members.items():
            for tp in pairs(member.consuming):
                assert tp not in seen, f"{tp} consumed by {seen[tp]} and {member_id}"
                seen[tp] = member_id

    @invariant()
    def a_client_consumes_only_what_its_member_holds(self) -> None:
        for member_id, member in self.members.items():
            assert pairs(member.consuming) <= pairs(member.state.holds), member_id

    @invariant()
    def epochs_never_run_ahead(self) -> None:
        for member in self.members.values():
            assert member.state.epoch <= self.epoch


ConsumerGroupMachine.TestCase.settings = settings(
    max_examples=60, stateful_step_count=30, deadline=None
)
test_consumer_group_state_machine = ConsumerGroupMachine.TestCase
