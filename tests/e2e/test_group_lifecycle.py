"""Five members of one group, as users run them: they converge to a balanced assignment and
commit; one crashes (no leave) and the coordinator's failure detector hands its partitions to
the others; its late commit is fenced; one closes and its partitions move at once."""

from __future__ import annotations

import time

import pytest

from groupcoord.client import CommitFailed, TopicPartition
from groupcoord.settings import Settings
from tests.e2e.helpers import (
    CONVERGE_S,
    SLACK_S,
    Polled,
    all_partitions,
    balanced,
    create_topic,
    heartbeat_interval_s,
    member_ids,
    no_errors,
    session_s,
    start_member,
    unique,
    wait_until,
)
from tests.support.servers import TEST_PUSH

PARTITIONS = 10
# The coordinator's disconnect grace (the e2e settings keep the default).
PUSH_GRACE_S = Settings().push_disconnect_grace_ms / 1000

# The classic protocol runs cooperative here (the more intricate member side); eager members
# go through the same coordinator paths in the static-member and restart tests.
MODES = [
    pytest.param("consumer", ("range",), id="consumer"),
    pytest.param("classic", ("cooperative-sticky",), id="classic-cooperative-sticky"),
]


def _offset(tp: TopicPartition) -> int:
    return 1000 + 10 * tp.partition


def _owners(members: list[Polled]) -> dict[TopicPartition, Polled]:
    return {tp: m for m in members for tp in m.owned}


@pytest.mark.parametrize(("protocol", "assignors"), MODES)
def test_five_members_balance_commit_survive_a_crash_fence_the_zombie_and_a_leave(
    coordinator: str, protocol: str, assignors: tuple[str, ...]
) -> None:
    topic, group = unique("orders"), unique("lifecycle")
    create_topic(coordinator, topic, PARTITIONS)
    everything = all_partitions(topic, PARTITIONS)
    members = [start_member(coordinator, group, [topic], protocol, assignors) for _ in range(5)]
    try:
        # 1. Converge: every partition owned by exactly one member, 2 each.
        wait_until(lambda: balanced(members, everything), CONVERGE_S, "five members balanced")
        assert sorted(len(m.owned) for m in members) == [2] * 5

        # ... and commit what each processed.
        for m in members:
            m.member.commit({tp: _offset(tp) for tp in m.owned})
        seen = members[0].member.committed(everything)
        assert seen == {tp: _offset(tp) for tp in everything}

        # 2. A crash: no leave, no more heartbeats. The coordinator notices after the
        # session timeout; the partitions reach the others within session + one heartbeat
        # interval (+ SLACK_S for the sweeper's period, the rebalance and busy CI cores).
        victim, survivors = members[0], members[1:]
        orphaned = set(victim.owned)
        victim.crash()
        crashed_at = time.monotonic()
        session, interval = session_s(protocol), heartbeat_interval_s(protocol)
        wait_until(
            lambda: balanced(survivors, everything),
            session + interval + SLACK_S,
            "the crashed member's partitions reached the other four",
        )
        took = time.monotonic() - crashed_at
        # Not before the session timeout (less the interval since the last heartbeat and a
        # second for that heartbeat's own latency): the failure detector moved them. With push
        # the crash closed the member's socket: not before the disconnect grace (its
        # `$disconnect` ran as the crash returned), far sooner than the session.
        earliest = PUSH_GRACE_S - 0.25 if TEST_PUSH else session - interval - 1.0
        assert took >= earliest, took
        for m in survivors:
            assert not m.recorder.since(crashed_at, "lost"), "a survivor lost its partitions"
        # The new owners resume from the crashed member's commits.
        new_owner = _owners(survivors)[next(iter(orphaned))]
        assert new_owner.member.committed(orphaned) == {tp: _offset(tp) for tp in orphaned}

        # 3. The zombie wakes up and commits: fenced, and nothing it wrote is kept.
        with pytest.raises(CommitFailed) as fenced:
            victim.member.commit({tp: 999_999 for tp in orphaned})
        assert fenced.value.error is not None
        assert new_owner.member.committed(orphaned) == {tp: _offset(tp) for tp in orphaned}

        # 4. A graceful close: the member is gone from the group at once (no session timeout
        # to wait for), and its partitions move on the others' next heartbeats (+ SLACK_S).
        leaver, rest = survivors[0], survivors[1:]
        leaver_id = leaver.member.member_id
        leaver.close()
        assert leaver_id not in member_ids(coordinator, group, protocol)
        wait_until(
            lambda: balanced(rest, everything),
            interval + SLACK_S,
            "the closed member's partitions reached the other three",
        )
        no_errors(members)
    finally:
        for m in members:
            m.close()
