"""The initial rebalance delay of an empty classic group is capped by the rebalance timeout,
as Kafka's InitialDelayedJoin caps it: members that keep arriving extend the delay
only within what is left of the first member's rebalance timeout."""

from __future__ import annotations

import threading
import time

import pytest

from tests.support.api import Api
from tests.support.classic_client import ClassicClient, describe, shared_serve, unique

INITIAL_DELAY_MS = 1000
REBALANCE_TIMEOUT_MS = 1500
# A bound, not a speed: the barrier must close by the cap plus this much slack for a busy
# machine (a request in flight, a 202 poll interval). Without the cap, the arrivals below keep
# the barrier open for ARRIVALS_S + the initial delay, well past the bound.
SLACK_S = 2.0
ARRIVALS_S = 6.0


@pytest.mark.parametrize("history", ["new group", "emptied group"])
def test_continuous_arrivals_do_not_hold_the_first_rebalance_past_its_rebalance_timeout(
    service_endpoint: str | None, history: str
) -> None:
    url = shared_serve(
        service_endpoint,
        {
            "group.initial.rebalance.delay.ms": str(INITIAL_DELAY_MS),
            "group.min.session.timeout.ms": "100",
            # The first member's join is held until its barrier closes (or 202 after this):
            # held, it is answered by the generation it joined, not a later one.
            "groupcoord.barrier.hold.ms": "4000",
        },
    )
    group = unique("initial-delay")
    first_generation = 1
    if history == "emptied group":
        # A member with a long rebalance timeout came and left: the group is Empty again, and
        # its next first rebalance is bounded by the new first member's timeout alone.
        old = ClassicClient(url, group, session_timeout_ms=10000, rebalance_timeout_ms=60000)
        assert old.join()["errorCode"] == 0
        assert old.leave()["errorCode"] == 0
        assert describe(Api(url), group)["groupState"] == "Empty"
        first_generation = 3  # 1 with the old member, 2 when it left
    stop = threading.Event()

    def arrive() -> None:
        # Newcomers every 250 ms, each with a rebalance timeout longer than the first's.
        while not stop.is_set():
            newcomer = ClassicClient(url, group, session_timeout_ms=10000)
            newcomer.member_id = newcomer.join_once().body["memberId"]  # 79, then the join
            newcomer.join_once()
            stop.wait(0.25)

    first = ClassicClient(url, group, session_timeout_ms=10000)
    first.rebalance_timeout_ms = REBALANCE_TIMEOUT_MS
    started = time.monotonic()
    first.join_once()  # 79: the two-step join hands out the member id
    arrivals = threading.Thread(target=arrive, daemon=True)
    arrivals.start()
    try:
        joined = first.join(deadline_s=ARRIVALS_S)
        closed_after = time.monotonic() - started
        assert joined["errorCode"] == 0 and joined["generationId"] == first_generation, joined
        assert closed_after <= REBALANCE_TIMEOUT_MS / 1000 + SLACK_S, closed_after
        # The delay still held the barrier open for newcomers (it was not skipped).
        assert closed_after >= INITIAL_DELAY_MS / 1000 * 0.9
    finally:
        stop.set()
        arrivals.join(timeout=10)
