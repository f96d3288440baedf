"""Classic cooperative groups (cooperative-sticky, KIP-429) under random joins, leaves,
subscription changes, stale generations and conflicting claims. After every round: no partition
is held by two members, and nothing went to a member while another still held it (revoke before
reassign). After any change, one follow-up round settles the group: everything subscribed is
held exactly once, balanced."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, precondition, rule

from groupcoord.client.assignors import TopicPartition, assign_cooperative_sticky
from tests.support.classic_assignors import (
    assert_balanced,
    assert_nothing_moves_directly,
    assert_subscribed_only_and_once,
    assert_valid,
    sub,
)

COUNTS = {"a": 3, "b": 4, "c": 2, "d": 5}
SUBSCRIPTIONS = st.frozensets(st.sampled_from(sorted(COUNTS)), min_size=1)


@dataclass
class Member:
    topics: frozenset[str]
    # This client revokes a dropped topic's partitions before it joins (the Python client);
    # another may still claim them in its join, and the leader must not give them away.
    revokes_early: bool
    owned: set[TopicPartition] = field(default_factory=set)
    generation: int = -1


class CooperativeGroup(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.members: dict[str, Member] = {}
        self.generation = 0
        self.joined = 0

    def round(self) -> bool:
        """One join/sync round; whether anything was revoked (a follow-up round is due)."""
        for member in self.members.values():
            if member.revokes_early:
                member.owned = {tp for tp in member.owned if tp.topic in member.topics}
        subs = {n: sub(m.topics, m.owned, m.generation) for n, m in self.members.items()}
        plan = assign_cooperative_sticky(subs, COUNTS)
        assert_subscribed_only_and_once(subs, plan)
        assert_nothing_moves_directly(subs, plan)
        self.generation += 1
        revoked = False
        for name, member in self.members.items():
            revoked = revoked or bool(member.owned - set(plan[name]))
            member.owned, member.generation = set(plan[name]), self.generation
        held = Counter(tp for m in self.members.values() for tp in m.owned)
        assert not [tp for tp, holders in held.items() if holders > 1]
        self.last = (subs, plan)
        return revoked

    def pick(self, data: st.DataObject) -> str:
        return data.draw(st.sampled_from(sorted(self.members)))

    @rule(topics=SUBSCRIPTIONS, revokes_early=st.booleans())
    def join(self, topics: frozenset[str], revokes_early: bool) -> None:
        self.joined += 1
        self.members[f"m{self.joined}"] = Member(topics, revokes_early)
        self.round()

    @precondition(lambda self: self.members)
    @rule(data=st.data())
    def leave(self, data: st.DataObject) -> None:
        del self.members[self.pick(data)]  # its partitions are revoked as it leaves
        self.round()

    @precondition(lambda self: self.members)
    @rule(data=st.data(), topics=SUBSCRIPTIONS)
    def resubscribe(self, data: st.DataObject, topics: frozenset[str]) -> None:
        self.members[self.pick(data)].topics = topics
        self.round()

    @precondition(lambda self: self.members)
    @rule(data=st.data(), behind=st.integers(1, 3))
    def stale_generation(self, data: st.DataObject, behind: int) -> None:
        """A member joins with an older generation (or none), still holding what it has."""
        member = self.members[self.pick(data)]
        member.generation = max(-1, member.generation - behind)
        self.round()

    @precondition(
        lambda self: len(self.members) >= 2 and any(m.owned for m in self.members.values())
    )
    @rule(data=st.data(), same_generation=st.booleans())
    def conflicting_claim(self, data: st.DataObject, same_generation: bool) -> None:
        """A zombie: one member also claims (and reads) a partition another holds, in the same
        generation or an older one."""
        owner = data.draw(st.sampled_from(sorted(n for n, m in self.members.items() if m.owned)))
        tp = data.draw(st.sampled_from(sorted(self.members[owner].owned)))
        zombie = self.members[data.draw(st.sampled_from(sorted(set(self.members) - {owner})))]
        zombie.owned.add(tp)
        if not same_generation:
            zombie.generation -= 1
        self.round()

    @precondition(lambda self: self.members)
    @rule()
    def settle(self) -> None:
        self.round()
        assert not self.round(), "a second follow-up round revoked something"
        subs, plan = self.last
        assert_valid(subs, COUNTS, plan)
        assert_balanced(subs, plan)


CooperativeGroup.TestCase.settings = settings(
    max_examples=60, stateful_step_count=12, deadline=None
)
test_classic_cooperative_groups = CooperativeGroup.TestCase
