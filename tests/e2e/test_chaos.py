"""Kills and zombies: several `groupcoord serve` processes on one DynamoDB table (DynamoDB Local),
members of both protocols heartbeating and committing through random instances, while
instances are SIGKILLed and restarted and members stall past their session timeout and then
commit with their old generation or epoch; once with the instances' clocks in step and the push
channel off, once with them 1.5 s apart (-1.5 s, 0, +1.5 s: each instance writes and judges
deadlines on its own) and push on (GROUPCOORD_TEST_PUSH=on runs both with push on).

Checked as the run goes (tests/support/chaos.py): no partition given to a member while another
member's session still held it, and none listed under two members by the coordinator; every
zombie commit refused; acknowledged commits of a partition only move forward, and every
offset-fetch answer is at least what was acknowledged before it and never a zombie's offset; no
5xx answer from a live instance (a killed instance's cut connection is a transport error, and
the request is retried on another; a 503 REQUEST_TIMED_OUT, the request's own write budget run
out, and a 429 are retried and counted). After the faults: both groups converge, and
offset-fetch answers each partition's last acknowledged commit.

With push on the instances offer push and every member holds a push socket
(tests/support/chaos_push.py): it heartbeats at once on a notice, reopens its socket on a live
instance when its instance is killed, keeps it open and silent through a stall (a zombie its
session still expires, connected renewal slack and all) or, half the time, crashes it as it
stalls (expired by `$disconnect` after the grace: the report says how many were seen gone
before their session could have ended), and closes it, crashed or cleanly, when it stops. The
ownership check's lease is the same: a session from the last renewal sent, whatever the slack.

Seeded: the seed is printed; GROUPCOORD_CHAOS_SEED=<seed> replays the same fault schedule
(kill times and slots, stall times and members; thread timing still varies). About 45 s on
two shared cores, about 70 s with two CPU hogs beside it; every wait polls with a deadline.
"""

from __future__ import annotations

import os
import random
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

import pytest

from groupcoord.service.consumer.common import consumer_renewal_slack_ms
from groupcoord.settings import Settings
from tests.support.chaos import (
    Aborted,
    Caller,
    ClassicMember,
    Cluster,
    ConsumerMember,
    Journal,
    Member,
    Monitor,
    classic_view,
    consumer_view,
)
from tests.support.servers import TEST_PUSH, unique_table

INSTANCES = 3
MEMBERS_PER_GROUP = 3
PARTITIONS = 6
KILLS_S = 20.0  # instances are killed (and restarted) within this long: 3 to 6 kills
# ... and past it until this many were: a restart takes seconds on busy cores (16 s at load
# 18), and a first kill late in the window left room for no second one.
MIN_KILLS = 2
STALLS_S = 15.0  # stalls start within this long, and each runs to its end (a session or more)
CONVERGE_S = 45.0
KILL_EVERY_S = (3.0, 6.0)
DOWN_FOR_S = (0.3, 2.0)
STALL_GAP_S = (1.0, 3.0)
CLASSIC_SESSION_S = 10.0
CONSUMER_SESSION_S = 8.0
JOIN_S = 60.0  # a stopped member's thread ends within its request's deadline
INTERVAL_S = 1.0  # between a member's heartbeats
COMMIT_EVERY_S = 2.0  # a member commits what it holds this often

SETTINGS = {
    "group.consumer.heartbeat.interval.ms": "1000",
    "group.consumer.min.heartbeat.interval.ms": "100",
    "group.consumer.session.timeout.ms": str(int(CONSUMER_SESSION_S * 1000)),
    "group.consumer.min.session.timeout.ms": "1000",
    "group.min.session.timeout.ms": "100",
    # The first members' joins arrive seconds apart on busy cores: one first generation with
    # all of them, not a rebalance per late joiner.
    "group.initial.rebalance.delay.ms": "2000",
    "groupcoord.barrier.hold.ms": "300",
    # Every instance sweeps, one Query per deadline shard: 3 sweepers of 16 shards every
    # 500 ms would take a good part of the shared endpoint's capacity from the members.
    "groupcoord.sweep.interval.ms": "1000",
    "groupcoord.deadline.shards": "4",
}


def _seed() -> int:
    configured = os.environ.get("GROUPCOORD_CHAOS_SEED")
    return int(configured) if configured else random.SystemRandom().randrange(2**32)


@dataclass
class Group:
    protocol: str
    group: str
    topic: str
    topic_id: str
    members: list[Member]


# Per instance, how far its clock runs ahead of the others' (groupcoord.fault.clock.offset.ms):
# in step, and 1.5 s apart either way (3 s between the extremes; Lambda hosts' clocks, kept by
# the Amazon Time Sync Service, agree to within a millisecond or so).
CLOCKS = {"clocks-in-step": (0, 0, 0), "clocks-skewed": (-1500, 0, 1500)}
# Each run's clocks and push channel: the suite runs both ways with push, one case each (every
# combination passed by hand: a case takes about 30-50 s of CI's budget).
CASES = {"clocks-in-step": False, "clocks-skewed": True}


@pytest.mark.timeout(240)  # a hung run is cut here; a normal one takes about a minute
@pytest.mark.parametrize(
    "clocks", sorted(CASES), ids=[f"{c}-push-{'on' if CASES[c] else 'off'}" for c in sorted(CASES)]
)
def test_kills_and_zombies_break_no_invariant(
    dynamodb_endpoint: str, capsys: pytest.CaptureFixture[str], clocks: str
) -> None:
    seed = _seed()
    print(f"chaos seed {seed} (GROUPCOORD_CHAOS_SEED={seed} replays its fault schedule)")
    offsets, push = CLOCKS[clocks], CASES[clocks] or TEST_PUSH
    print(f"instance clocks {offsets} ms from the system's; push {'on' if push else 'off'}")
    table = unique_table("gc-chaos")
    cluster = Cluster(
        dynamodb_endpoint, table, SETTINGS, INSTANCES, clock_offsets_ms=offsets, push=push
    )
    try:
        cluster.start()
        _run(cluster, seed)
    finally:
        cluster.stop()
        captured = capsys.readouterr()
        with capsys.disabled():  # the seed and the run's figures, always shown
            sys.stdout.write(captured.out)
            sys.stderr.write(captured.err)
    # running_serve prints the traceback of any request an instance answered 500 as it stops.
    assert '"unhandled error"' not in captured.err


def _run(cluster: Cluster, seed: int) -> None:
    journal = Journal(seed, skew_s=cluster.skew_s)
    rng = random.Random(seed)
    admin = Caller(cluster, journal, random.Random(seed + 1), "admin")
    groups = [
        _group(cluster, journal, admin, protocol, seed) for protocol in ("classic", "consumer")
    ]
    members = [m for g in groups for m in g.members]
    monitor = Monitor(
        cluster,
        journal,
        random.Random(seed + 2),
        [(g.protocol, g.group, g.topic, PARTITIONS) for g in groups],
    )
    try:
        for m in members:
            m.start()
        monitor.start()
        _phases(journal, admin, cluster, rng, groups, members)
    except Aborted:  # a call of this thread saw the run stop: the journal says why
        raise AssertionError(_failure(journal)) from None
    finally:
        monitor.stop.set()
        for m in members:
            m.stop.set()
        for m in [*members, monitor]:
            m.thread.join(timeout=JOIN_S)
        for m in members:
            m.hang_up()
    _final_offsets(journal, admin, groups)
    _report(journal, cluster, monitor)
    assert not journal.failures, _failure(journal)
    # The run did what it claims: kills, restarts and refused zombies of both protocols.
    assert cluster.kills >= MIN_KILLS and cluster.restarts >= MIN_KILLS, _failure(journal)
    assert {z.protocol for z in journal.zombies} == {"classic", "consumer"}, _failure(journal)
    if cluster.push:  # the members held sockets and heartbeated on notices
        assert journal.push["sockets opened"] and journal.push["notices"], _failure(journal)


def _disconnects(journal: Journal) -> str:
    """The zombies whose socket crashed as they stalled, and how many of them were seen gone
    before their session could have ended (expired by `$disconnect` after the grace, about
    1 s). Reported, not asserted: the watcher sees a removal up to its describe's latency late
    (5 s at load 18), clocks 3 s apart take that much off the session, and an instance killed
    at that moment loses the `$disconnect` (the session covers it); the grace itself is
    asserted in tests/integration/test_push.py."""
    crashed = [z for z in journal.zombies if z.socket == "crashed"]
    early = [z for z in crashed if z.stalled_s < z.lease_left_s - journal.skew_s]
    return f"{len(crashed)} crashed sockets, {len(early)} seen expired before their session"


def _phases(
    journal: Journal,
    admin: Caller,
    cluster: Cluster,
    rng: random.Random,
    groups: list[Group],
    members: list[Member],
) -> None:
    """Form the groups, run the faults, converge, and have every owner commit once more."""
    _until(journal, lambda: _converged(journal, admin, groups), CONVERGE_S, "the groups form")
    journal.mark("formed")
    _faults(cluster, journal, rng, groups)
    journal.mark("faults over")
    settled = _until(
        journal, lambda: _converged(journal, admin, groups), CONVERGE_S, "converge again"
    )
    journal.mark("converged")
    journal.note(f"holdings: {settled}")
    # Each partition's converged owner commits once more; then everyone stops.
    after = time.monotonic()
    _until(
        journal,
        lambda: all(m.last_commit_ok > after for m in members if m.owned),
        CONVERGE_S,
        "a commit by every converged owner",
    )


def _group(cluster: Cluster, journal: Journal, admin: Caller, protocol: str, seed: int) -> Group:
    suffix = f"{seed:x}-{protocol}"
    topic, group = f"chaos-t-{suffix}", f"chaos-g-{suffix}"
    body = {"topics": [{"name": topic, "numPartitions": PARTITIONS}]}
    created = admin.call("create-topics", body).body["topics"][0]
    assert created["errorCode"] == 0, created
    members: list[Member] = []
    for i in range(MEMBERS_PER_GROUP):
        args = (f"{protocol}-{i}", group, topic, PARTITIONS, cluster, journal)
        member_rng = random.Random(f"{seed}-{protocol}-{i}")
        if protocol == "classic":
            members.append(
                ClassicMember(
                    *args,
                    member_rng,
                    session_s=CLASSIC_SESSION_S,
                    interval_s=INTERVAL_S,
                    commit_every_s=COMMIT_EVERY_S,
                )
            )
        else:
            members.append(
                ConsumerMember(
                    *args,
                    member_rng,
                    session_s=CONSUMER_SESSION_S,
                    interval_s=INTERVAL_S,
                    commit_every_s=COMMIT_EVERY_S,
                    topic_id=created["topicId"],
                    renewal_slack_s=_consumer_renewal_slack_s(cluster.push),
                )
            )
    return Group(protocol, group, topic, created["topicId"], members)


def _consumer_renewal_slack_s(connected: bool) -> float:
    """How far past a session a consumer member's renewal may set its deadline: a connected
    member's slack with push on (the members hold sockets), else an unconnected one's.
    Classic members' heartbeats renew without slack."""
    return consumer_renewal_slack_ms(Settings.from_mapping(SETTINGS), connected=connected) / 1000


def _until(
    journal: Journal, condition: Callable[[], object], timeout_s: float, what: str
) -> object:
    """Poll `condition` until truthy; fail (with the run's journal) at the deadline or as soon
    as a failure is recorded."""
    deadline = time.monotonic() + timeout_s
    while True:
        if journal.failures:
            raise AssertionError(_failure(journal))
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {timeout_s:.0f}s: {what}\n{_failure(journal)}")
        journal.abort.wait(0.1)


def _converged(journal: Journal, admin: Caller, groups: list[Group]) -> str | None:
    """Both groups Stable with exactly their members, each member holding (by its own
    account and by the coordinator's) its share, every partition once; None otherwise (and
    the journal's `waiting` says what is missing)."""
    found = []
    for g in groups:
        mine = {m.name: (m.member_id[:8], m.identity(), sorted(m.owned)) for m in g.members}
        if any(m.stall_requested.is_set() for m in g.members):
            journal.waiting = f"{g.protocol}: a member is stalled"
            return None
        if not all(m.ready() for m in g.members):
            journal.waiting = f"{g.protocol}: members not all assigned: {mine}"
            return None
        ids = {m.member_id for m in g.members}
        if g.protocol == "classic":
            view = classic_view(admin, g.group, g.topic)
            in_step = len({m.synced_generation for m in g.members}) == 1  # type: ignore[attr-defined]
        else:
            view = consumer_view(admin, g.group)
            epochs = {m.epoch for m in g.members}  # type: ignore[attr-defined]
            in_step = epochs == {view["epoch"]} and view["target"] == view["epoch"]
        journal.waiting = f"{g.protocol}: members {mine}, coordinator {view}"
        if not in_step or view["state"] != "Stable" or set(view["owned"]) != ids:
            return None
        if any(view["owned"][m.member_id] != m.owned for m in g.members):
            return None
        held = sorted(p for m in g.members for p in m.owned)
        if held != list(range(PARTITIONS)):
            return None
        found.append(f"{g.protocol} {sorted(len(m.owned) for m in g.members)}")
    journal.waiting = ""
    return ", ".join(found)


def _faults(cluster: Cluster, journal: Journal, rng: random.Random, groups: list[Group]) -> None:
    """For KILLS_S, and on until MIN_KILLS were done: SIGKILL one instance at a time at random
    intervals and restart it after a random time down. For STALLS_S: in each group, stall one
    random member at a time (it wakes up as a zombie once the coordinator has removed it).
    Returns once every instance is back and every stall is over. Every draw comes from
    generators seeded by `rng`."""
    kills = random.Random(rng.random())
    stalls = {g.protocol: random.Random(rng.random()) for g in groups}
    start = time.monotonic()
    kills_end, stalls_end = start + KILLS_S, start + STALLS_S
    next_kill = start + kills.uniform(*KILL_EVERY_S)
    down: int | None = None  # the slot killed and not back yet
    restart_at = 0.0
    restarting: threading.Thread | None = None
    next_stall = {g.protocol: start + stalls[g.protocol].uniform(*STALL_GAP_S) for g in groups}
    stalled: dict[str, Member | None] = {g.protocol: None for g in groups}
    while True:
        if journal.failures:
            raise AssertionError(_failure(journal))
        now = time.monotonic()
        if down is None:
            if now >= next_kill and (now < kills_end or cluster.kills < MIN_KILLS):
                down = kills.randrange(len(cluster.instances))
                cluster.kill(down)
                restart_at = now + kills.uniform(*DOWN_FOR_S)
                journal.note(f"SIGKILL serve slot {down}")
        elif restarting is None:
            if now >= restart_at:
                restarting = cluster.restart(down)
        elif not restarting.is_alive():
            instance = cluster.instances[down]
            if instance.state != "up":
                raise AssertionError(f"serve slot {down} did not restart\n{_failure(journal)}")
            journal.note(f"serve slot {down} back at {instance.url}")
            down, restarting = None, None
            next_kill = time.monotonic() + kills.uniform(*KILL_EVERY_S)
        for g in groups:
            current = stalled[g.protocol]
            if current is not None and not current.stall_requested.is_set():
                stalled[g.protocol] = current = None
                next_stall[g.protocol] = now + stalls[g.protocol].uniform(*STALL_GAP_S)
            if current is None and now >= next_stall[g.protocol] and now < stalls_end:
                member = stalls[g.protocol].choice(g.members)
                member.stall_requested.set()
                stalled[g.protocol] = member
        over = now >= kills_end and cluster.kills >= MIN_KILLS and now >= stalls_end
        if over and down is None and all(m is None for m in stalled.values()):
            return
        journal.abort.wait(0.05)


def _final_offsets(journal: Journal, admin: Caller, groups: list[Group]) -> None:
    """Everyone stopped: offset-fetch answers each partition's last acknowledged commit (or a
    newer commit whose answer was lost to a kill, which may have landed)."""
    if journal.failures:
        return
    for g in groups:
        body = {
            "groups": [
                {
                    "groupId": g.group,
                    "topics": [{"name": g.topic, "partitionIndexes": list(range(PARTITIONS))}],
                }
            ]
        }
        answer = admin.call("offset-fetch", body).body["groups"][0]["topics"][0]["partitions"]
        for p in answer:
            tp = (g.topic, p["partitionIndex"])
            offset, acked = p["committedOffset"], journal.acked.get(tp)
            landed_unanswered = {o for o in journal.maybe.get(tp, set()) if acked and o > acked}
            if acked is None:
                journal.fail(f"{tp}: no commit was ever acknowledged")
            elif offset != acked and offset not in landed_unanswered:
                journal.fail(f"{tp}: offset-fetch answers {offset}, the last acked was {acked}")


def _report(journal: Journal, cluster: Cluster, monitor: Monitor) -> None:
    seconds = sorted(journal.seconds) or [0.0]
    latency = "/".join(
        f"{seconds[min(len(seconds) - 1, int(q * len(seconds)))] * 1000:.0f}" for q in (0.5, 0.99)
    )
    zombies = ", ".join(
        f"{z.protocol}:{z.who} after {z.stalled_s:.1f}s"
        + (f" (socket {z.socket})" if z.socket else "")
        + f" -> {sorted(set(z.codes))}"
        for z in journal.zombies
    )
    push = ", ".join(f"{k} {v}" for k, v in sorted(journal.push.items())) or "off"
    if journal.push:
        push += f" ({_disconnects(journal)})"
    print(
        f"seed {journal.seed}: {journal.elapsed():.0f}s ("
        + ", ".join(f"{p} +{t:.0f}s" for p, t in journal.phases.items())
        + f"), {cluster.kills} kills, "
        f"{cluster.restarts} restarts, {journal.requests} requests (p50/p99 {latency} ms, max "
        f"{seconds[-1]:.1f} s), "
        f"transport errors {journal.transport_errors}, 503 deadline {journal.deadline_503}, "
        f"429 {journal.throttled_429}, {journal.acked_count} commits acked, "
        f"{journal.refused_commits} refused, monitor rounds {monitor.rounds}; "
        f"push: {push}; zombies refused: {zombies}"
    )


def _failure(journal: Journal) -> str:
    lines = [f"chaos seed {journal.seed} (GROUPCOORD_CHAOS_SEED={journal.seed} to replay)"]
    lines += ["failures:", *journal.failures] if journal.failures else []
    lines += [f"waiting for: {journal.waiting}"] if journal.waiting else []
    seconds = sorted(journal.seconds) or [0.0]
    lines.append(
        f"{journal.requests} requests, p50 {seconds[len(seconds) // 2]:.2f}s, max "
        f"{seconds[-1]:.2f}s, transport errors {journal.transport_errors}, 503 deadline "
        f"{journal.deadline_503}"
    )
    lines += ["journal:", *journal.log[-60:]]
    return "\n".join(lines)
