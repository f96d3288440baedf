"""The fault setting `groupcoord.fault.clock.offset.ms`: a deployment whose clock runs ahead of
(or behind) the system's writes and judges every deadline on its own clock, as a Lambda host
whose clock disagrees would. Two deployments on one table, one 10 minutes ahead: what one
writes, the other reads as that much later (tests/e2e/test_chaos.py runs members across
instances 1.5 s apart)."""

from __future__ import annotations

import pytest

from groupcoord import clock
from groupcoord.settings import Settings, SettingsError
from tests.support.api import Api
from tests.support.consumer import Member, create_topic, unique
from tests.support.servers import running_beside, running_service_and_store

AHEAD_MS = 600_000
SESSION_MS = 45_000
SLACK_MAX_MS = SESSION_MS // 3


def _session_deadline(store, group_id: str, member_id: str) -> int:  # type: ignore[no-untyped-def]
    from groupcoord.service.consumer.common import reload

    group = reload(store.consumer, group_id)
    assert group is not None
    member = store.consumer.member(group, member_id, consistent=True)
    assert member is not None
    return member.session_deadline


def test_a_deployment_ahead_writes_deadlines_on_its_own_clock(
    service_endpoint: str | None,
) -> None:
    with (
        running_service_and_store(service_endpoint) as (url, store),
        running_beside(
            service_endpoint, store, {"groupcoord.fault.clock.offset.ms": str(AHEAD_MS)}
        ) as ahead_url,
    ):
        topic = unique("t")
        create_topic(Api(url), topic, 2)
        in_step, ahead = Member(Api(url), unique("g"), [topic]), None
        before = clock.system_ms()
        assert in_step.join()["errorCode"] == 0
        ahead = Member(Api(ahead_url), unique("g"), [topic])
        assert ahead.join()["errorCode"] == 0
        after = clock.system_ms()
        # A join writes now + the session + the renewal slack (at most a third of the
        # session), each on its own clock.
        own = _session_deadline(store, in_step.group, in_step.member_id)
        assert before + SESSION_MS <= own <= after + SESSION_MS + SLACK_MAX_MS
        shifted = _session_deadline(store, ahead.group, ahead.member_id) - AHEAD_MS
        assert before + SESSION_MS <= shifted <= after + SESSION_MS + SLACK_MAX_MS
        # The deployment ahead sees the member of the one in step 10 minutes on: expired.
        # (Its heartbeat through the deployment ahead runs the group's due check.)
        answer = Member(Api(ahead_url), in_step.group, [topic])
        answer.member_id, answer.epoch = in_step.member_id, in_step.epoch
        assert answer.heartbeat()["errorCode"] == 25  # UNKNOWN_MEMBER_ID: fenced


def test_the_offset_is_bounded() -> None:
    assert (
        Settings.from_mapping({"groupcoord.fault.clock.offset.ms": "-1500"}).fault_clock_offset_ms
        == -1500
    )
    with pytest.raises(SettingsError, match="offset"):
        Settings.from_mapping({"groupcoord.fault.clock.offset.ms": str(10**10)})
