"""The coordinator endpoint goes away and comes back (a new `groupcoord serve` on the same
port and the same table): every client rediscovers it through its bootstrap URL, rejoins,
and no committed offset is lost."""

from __future__ import annotations

import time

from groupcoord.client import TopicPartition
from tests.e2e.helpers import (
    CONVERGE_S,
    SETTINGS,
    Polled,
    all_partitions,
    balanced,
    beats_since,
    create_topic,
    free_port,
    no_errors,
    start_member,
    unique,
    wait_until,
)
from tests.support.servers import running_serve, unique_table

PARTITIONS = 6


def _offset(tp: TopicPartition) -> int:
    return 500 + tp.partition


def test_every_client_rediscovers_and_rejoins_a_restarted_coordinator_keeping_offsets(
    dynamodb_endpoint: str,
) -> None:
    table, port = unique_table(), free_port()

    def serve():  # the same port and table each time
        return running_serve(
            dynamodb_endpoint, settings=SETTINGS, table=table, extra_args=["--port", str(port)]
        )

    groups: dict[str, tuple[str, list[Polled]]] = {}
    members: list[Polled] = []
    with serve() as url:
        for protocol, assignors in (("consumer", ("range",)), ("classic", ("range",))):
            topic, group = unique(f"{protocol}-t"), unique(f"{protocol}-g")
            create_topic(url, topic, PARTITIONS)
            started = [start_member(url, group, [topic], protocol, assignors) for _ in range(3)]
            groups[protocol] = (topic, started)
            members += started
        for topic, started in groups.values():
            _wait_balanced(topic, started)
            for m in started:
                m.member.commit({tp: _offset(tp) for tp in m.owned})
    try:
        stopped_at = time.monotonic()
        with serve() as again:
            assert again == url
            restarted_at = time.monotonic()
            for topic, started in groups.values():
                # Every member talks to the new process (rediscovered through the bootstrap
                # URL), and the group is whole again.
                _wait_balanced(topic, started, since=restarted_at)
                everything = all_partitions(topic, PARTITIONS)
                committed = started[0].member.committed(everything)
                assert committed == {tp: _offset(tp) for tp in everything}
                # ... and the members can commit again with their new generation/epoch.
                for m in started:
                    m.member.commit({tp: _offset(tp) + 1 for tp in m.owned})
                committed = started[0].member.committed(everything)
                assert committed == {tp: _offset(tp) + 1 for tp in everything}
            no_errors(members)
            assert time.monotonic() - stopped_at < CONVERGE_S
            for m in members:
                m.close()
    finally:
        for m in members:
            m.close()


def _wait_balanced(topic: str, members: list[Polled], since: float | None = None) -> None:
    everything = all_partitions(topic, PARTITIONS)

    def back() -> bool:
        if since is not None and not all(beats_since(m.member, since) for m in members):
            return False
        return balanced(members, everything)

    wait_until(back, CONVERGE_S, f"{topic}: every member back and balanced")
