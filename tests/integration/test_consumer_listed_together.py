"""Members that start together share their new group's first target, each answered STABLE by
its join (core/consumer/forming.py). None of those answers reads the group's other members
to settle its listing (they would all be read at once, and all but the last in vain): the
group is listed Stable once they acknowledge their assignments, still long before its next
check (every 60 s here: two heartbeat intervals of 30 s)."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest

from tests.support.api import Api
from tests.support.consumer import Member, create_topic, listed_state, unique

SETTINGS = {
    "group.consumer.heartbeat.interval.ms": "30000",
    "groupcoord.sweep.interval.ms": "60000",
}

pytestmark = pytest.mark.coordinator(SETTINGS)


def test_members_joining_together_list_their_group_stable_once_they_acknowledge(
    api: Api,
) -> None:
    group, topic = unique("g"), unique("t")
    create_topic(api, topic, 6)
    members = [Member(api, group, [topic]) for _ in range(3)]
    with ThreadPoolExecutor(len(members)) as pool:
        answers = list(pool.map(lambda m: m.join(), members))
    assert [a["errorCode"] for a in answers] == [0, 0, 0]
    assert len({a["memberEpoch"] for a in answers}) == 1  # one target for the three
    assert sorted(sum(len(p) for p in m.owned.values()) for m in members) == [2, 2, 2]
    for member in members:
        assert member.heartbeat()["errorCode"] == 0  # the acknowledgement
    assert listed_state(api, group) == "Stable"
