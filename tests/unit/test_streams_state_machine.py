"""The streams protocol's core as a state machine (hypothesis): members join and leave
(processes shared), targets are recomputed by the sticky assignor with standbys, and members
reconcile towards them one step at a time, acknowledging revocations or not. After every step,
as the coordinator records it: no task is active on two members, and on one process no two
members hold the same task (in any role)."""

from __future__ import annotations

from dataclasses import dataclass, field

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from groupcoord.core.streams.assignor import AssignorMember, assign
from groupcoord.core.streams.reconciliation import MemberTasks, holdings_of, reconcile
from groupcoord.core.streams.tasks import EMPTY, TasksTuple, task_ids

TASKS = {"0": 3, "1": 3}
STATEFUL = {"1"}


@dataclass
class Sim:
    process: str
    tasks: MemberTasks = field(default_factory=MemberTasks)
    target: TasksTuple = EMPTY


class StreamsGroupMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.members: dict[str, Sim] = {}
        self.epoch = 0
        self.next_id = 0

    def _rebalance(self) -> None:
        self.epoch += 1
        targets = assign(
            [AssignorMember(m, s.process, s.target) for m, s in sorted(self.members.items())],
            TASKS,
            STATEFUL,
            num_standby=1,
        )
        for member_id, sim in self.members.items():
            sim.target = targets[member_id]

    @rule(process=st.sampled_from(["p1", "p2", "p3"]))
    def join(self, process: str) -> None:
        if len(self.members) >= 5:
            return
        self.next_id += 1
        self.members[f"m{self.next_id}"] = Sim(process)
        self._rebalance()

    @precondition(lambda self: self.members)
    @rule(data=st.data())
    def leave(self, data: st.DataObject) -> None:
        member_id = data.draw(st.sampled_from(sorted(self.members)))
        del self.members[member_id]
        if self.members:
            self._rebalance()

    @precondition(lambda self: self.members)
    @rule(data=st.data(), ack=st.booleans())
    def step(self, data: st.DataObject, ack: bool) -> None:
        member_id = data.draw(st.sampled_from(sorted(self.members)))
        sim = self.members[member_id]
        others = holdings_of(
            (s.process, s.tasks.holds) for m, s in self.members.items() if m != member_id
        )
        owned = sim.tasks.assigned if ack else None  # what the member was last told it has
        sim.tasks = reconcile(sim.tasks, sim.process, self.epoch, sim.target, owned, others)

    @invariant()
    def no_task_active_twice(self) -> None:
        seen: dict[tuple[str, int], str] = {}
        for member_id, sim in self.members.items():
            for task in task_ids(sim.tasks.holds.active):
                assert task not in seen, f"{task} active on {seen.get(task)} and {member_id}"
                seen[task] = member_id

    @invariant()
    def no_two_members_of_a_process_share_a_task(self) -> None:
        seen: dict[tuple[str, tuple[str, int]], str] = {}
        for member_id, sim in self.members.items():
            for task in task_ids(sim.tasks.holds.all_tasks()):
                key = (sim.process, task)
                assert seen.get(key, member_id) == member_id, (key, seen[key], member_id)
                seen[key] = member_id

    @invariant()
    def epochs_never_go_back(self) -> None:
        for sim in self.members.values():
            assert sim.tasks.epoch <= self.epoch


StreamsGroupMachine.TestCase.settings = settings(
    max_examples=60, stateful_step_count=30, deadline=None
)
test_streams_group_state_machine = StreamsGroupMachine.TestCase
