"""A consumer group's state in list-groups is Kafka's at once: Stable as soon as every member is
STABLE at the target epoch, not at the group's next check. The coordinator here checks its
groups every 60 s (two heartbeat intervals of 30 s) and sweeps rarely, so a Stable listing
seen within the test came from the member's own step."""

from __future__ import annotations

import pytest

from tests.support.api import Api
from tests.support.consumer import Member, create_topic, describe, listed_state, settle, unique
from tests.support.servers import IMMEDIATE_INSTALLS

SETTINGS = {
    **IMMEDIATE_INSTALLS,
    "group.consumer.heartbeat.interval.ms": "30000",
    "groupcoord.sweep.interval.ms": "60000",
}


pytestmark = pytest.mark.coordinator(SETTINGS)


def test_a_one_member_group_is_listed_stable_once_its_assignment_is_acknowledged(
    api: Api,
) -> None:
    group, topic = unique("g"), unique("t")
    create_topic(api, topic, 4)
    member = Member(api, group, [topic])
    assert member.join()["errorCode"] == 0
    # The join's own answer assigns every partition (nobody else holds any): Stable.
    assert listed_state(api, group) == "Stable"
    assert describe(api, group)["groupState"] == "Stable"
    member.heartbeat()
    assert listed_state(api, group) == "Stable"


def test_a_group_is_listed_reconciling_while_a_member_revokes_then_stable_at_once(
    api: Api,
) -> None:
    group, topic = unique("g"), unique("t")
    create_topic(api, topic, 4)
    first = Member(api, group, [topic])
    first.join()
    settle([first])
    second = Member(api, group, [topic])
    second.join()
    first.heartbeat(ack=False)  # told to revoke half, still owning it: Reconciling
    assert listed_state(api, group) == "Reconciling"
    assert describe(api, group)["groupState"] == "Reconciling"
    settle([first, second])
    assert listed_state(api, group) == "Stable"
    assert describe(api, group)["groupState"] == "Stable"
