"""GroupMember: what a consumer author uses. Join a group, keep the membership alive in the
background, learn which partitions you own through a rebalance listener, commit safely.

    member = GroupMember("http://127.0.0.1:8080", "billing", topics=["orders"])
    try:
        while running:
            for tp in member.poll(timeout_s=1.0):
                ...process tp, then member.commit({tp: next_offset})
    finally:
        member.close()

Listener callbacks run inside poll() (and close()), on the caller's thread, in the order
Kafka's consumer calls them: revoked before a partition is given up, assigned after new ones
arrive, lost when the membership was lost (the partitions may already belong to someone else).

Threads: poll() and close() belong to one thread (the user's); commit(), commit_async(),
committed() and assignment() may be called from any thread. A daemon thread sends the
heartbeats; it shares a lock with poll(), so it never runs while poll() rebalances or calls
the listener (keep callbacks shorter than the session timeout).
"""

from __future__ import annotations

import contextlib
import logging
import random
import re
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

from ..errors import Errors
from .assignors import Blocked, TopicPartition
from .classic import ClassicMembership, RejoinNeeded
from .consumer import ConsumerMembership, RejoinRequired
from .errors import (
    FENCING_ERRORS,
    REDISCOVER_ERRORS,
    RETRIABLE_ERRORS,
    CommitFailed,
    CoordinatorUnavailable,
    FencedInstance,
    GroupcoordError,
    WriteConditionFailed,
)
from .listener import RebalanceListener
from .member_push import MemberPush
from .options import MemberOptions
from .paging import metadata_all_pages
from .transport import Reply, Transport

log = logging.getLogger("groupcoord.client")

COMMIT_ATTEMPTS = 3


# How often the heartbeat thread looks again while the member is not joined (before the first
# poll, while lost or failed): it has nothing to send then.
IDLE_BEAT_CHECK_S = 0.05
# How often wait_for_work() looks at its caller's stop event.
STOP_CHECK_S = 0.02


class _NoListener:
    def on_partitions_revoked(self, partitions: set[TopicPartition]) -> None:
        pass

    def on_partitions_assigned(self, partitions: set[TopicPartition]) -> None:
        pass

    def on_partitions_lost(self, partitions: set[TopicPartition]) -> None:
        pass


class GroupMember:
    """A member of consumer group `group_id`, subscribed to `topics` (or to the topics whose
    names fully match `pattern`).

    `protocol="consumer"` (KIP-848, the default): the coordinator assigns (`server_assignor`:
    uniform or range, default the group's); `session_timeout_ms` should be the coordinator's
    `group.consumer.session.timeout.ms`, which bounds how long this client keeps its partitions
    when it cannot reach the coordinator. `protocol="classic"`: the leader member assigns with
    the first of `assignors` that every member supports; the member rebalances cooperatively
    only if every listed assignor is cooperative (cooperative-sticky), eagerly otherwise (range,
    roundrobin, sticky, or a mix), as Kafka's consumer does; `session_timeout_ms` and
    `rebalance_timeout_ms` are sent with the join, and `heartbeat_interval_ms` (default a
    third of the session, as Kafka's) sets how often it heartbeats, which is also how soon it
    hears of a rebalance. The consumer protocol's interval is the coordinator's.
    `instance_id` makes the member static (KIP-345).

    `sign`/`region`: SigV4-sign the requests (default: for https URLs) with botocore's
    credentials, for a deployed API with IAM auth.
    """

    def __init__(
        self,
        bootstrap_url: str,
        group_id: str,
        options: MemberOptions | None = None,
        **keywords: Any,
    ) -> None:
        """The options as a MemberOptions (client/options.py), or as its fields in keywords:
        `topics` or `pattern`, `protocol`, `assignors`, `server_assignor`, `listener`,
        `instance_id`, `session_timeout_ms`, `rebalance_timeout_ms`, `heartbeat_interval_ms`,
        `metadata_refresh_ms`, `client_id`, `request_timeout_s`, `sign`, `region`."""
        if options is not None and keywords:
            raise ValueError("give the options as a MemberOptions or as keywords, not both")
        config = options if options is not None else MemberOptions.of(**keywords)
        config.check()
        if not group_id:
            raise ValueError("group_id must not be empty")
        self.group_id = group_id
        self.protocol = config.protocol
        self.listener: RebalanceListener = config.listener or _NoListener()
        self._bootstrap = Transport(
            bootstrap_url,
            client_id=config.client_id,
            timeout_s=config.request_timeout_s,
            sign=config.sign,
            region=config.region,
        )
        self._coordinator: Transport | None = None
        self._topics = list(config.topics) if config.topics is not None else None
        self._pattern = re.compile(config.pattern) if config.pattern is not None else None
        self._metadata_refresh_s = config.metadata_refresh_ms / 1000
        self._topic_cache: dict[str, tuple[str, int]] = {}  # name -> (id, partitions)
        self._topic_cache_at = -1e9
        self._owned: set[TopicPartition] = set()
        # Lags reported by report_lags, rebound (never mutated) so the heartbeat reads unlocked.
        self._lags: dict[TopicPartition, int] = {}
        self._lock = threading.RLock()
        self._rejoin = threading.Event()
        # Classic: a round failed and the next is due (Kafka's PREPARING_REBALANCE). No
        # heartbeats meanwhile: they carry a generation the group has left, and its
        # ILLEGAL_GENERATION would give the partitions up as lost.
        self._rejoining = False
        self._wake = threading.Event()
        self._closed = threading.Event()
        self._stop_beating = threading.Event()
        self._beat_now = threading.Event()  # heartbeat_soon(): the next beat goes at once
        self._fatal: BaseException | None = None
        self._listener_error: BaseException | None = None
        self._lost = False
        self._joined = False
        self._last_ok = time.monotonic()
        self._session_s = config.session_timeout_ms / 1000
        self._request_timeout_s = config.request_timeout_s
        self._pending_target: set[TopicPartition] | None = None
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="commit")
        self._classic, self._consumer = self._membership(config)
        # The push channel (client/member_push.py): a socket once the member has an id.
        self._push = MemberPush(
            group_id,
            lambda: self.member_id if self._joined else "",
            enabled=config.push,
            interval_s=config.push_heartbeat_interval_ms / 1000,
            headers_for=self._bootstrap.handshake_headers,
        )
        self._heartbeats = threading.Thread(
            target=self._heartbeat_loop, name=f"heartbeat-{group_id}", daemon=True
        )
        self._heartbeats.start()

    def _membership(
        self, config: MemberOptions
    ) -> tuple[ClassicMembership | None, ConsumerMembership | None]:
        """The protocol's side of the membership: exactly one of the two."""
        if config.protocol == "classic":
            classic = ClassicMembership(
                self._transport,
                self.group_id,
                self._subscribed_topics,
                self._leader_partitions,
                assignors=list(config.assignors),
                session_timeout_ms=config.session_timeout_ms,
                rebalance_timeout_ms=config.rebalance_timeout_ms,
                instance_id=config.instance_id,
                heartbeat_interval_ms=config.heartbeat_interval_ms,
                topic_id=self._topic_id,
            )
            return classic, None
        consumer = ConsumerMembership(
            self._transport,
            self.group_id,
            topics=self._topics,
            pattern=config.pattern,
            assignor=config.server_assignor,
            rebalance_timeout_ms=config.rebalance_timeout_ms,
            instance_id=config.instance_id,
            topic_name=self._topic_name,
            topic_id=self._topic_id,
        )
        return None, consumer

    # --- the user's side ---

    @property
    def member_id(self) -> str:
        """The member id the coordinator knows this member by ("" before a classic join)."""
        membership = self._classic or self._consumer
        assert membership is not None
        return membership.member_id

    def poll(self, timeout_s: float = 0.0) -> set[TopicPartition]:
        """Run pending group work (join, rebalance, the listener) on this thread and return
        what this member owns. When there is nothing to do, waits up to `timeout_s` for
        something to happen. While the coordinator is unreachable it keeps trying for up to
        `timeout_s` (at least once) and returns what the member still owns.

        Raises FencedInstance (another process took the static member's instance id),
        GroupcoordError for a fatal answer (bad session timeout, group full, ...), or
        whatever a listener callback raised (after the rebalance step completed)."""
        self._check_usable()
        deadline = time.monotonic() + max(0.0, timeout_s)
        if not self._work_due():
            self._wake.wait(timeout_s)
            self._wake.clear()
            self._check_usable()
        with self._lock:
            if self._classic is not None:
                self._poll_classic(deadline)
            else:
                self._poll_consumer(deadline)
            owned = set(self._owned)
        self._raise_listener_error()
        return owned

    def assignment(self) -> set[TopicPartition]:
        """What this member owns now (as of the last poll())."""
        return set(self._owned)

    def wait_for_work(self, timeout_s: float, stop: threading.Event | None = None) -> bool:
        """Wait up to `timeout_s` for news that poll() should act on (an assignment to take,
        the membership lost or refused), or until `stop` is set; whether news came. For a
        loop that waits on something else between polls (groupcoord.client.kinesis paces
        its GetRecords) and must still take a new assignment as soon as the coordinator sends
        it. Only news wakes it, not work that is merely still due (a join the coordinator has
        not answered yet): poll() retries that at the caller's pace. Same thread as poll()."""
        deadline = time.monotonic() + max(0.0, timeout_s)
        while self._pending_target is None:
            left = deadline - time.monotonic()
            if left <= 0 or (stop is not None and stop.is_set()):
                return False
            # A short slice: `stop` is another event, and a stop must not wait a whole pause.
            if self._wake.wait(min(left, STOP_CHECK_S)):
                self._wake.clear()  # poll() is not waiting (same thread): nothing is lost
                return True
        return True

    def heartbeat_soon(self) -> None:
        """Send the next heartbeat now rather than at its interval: the caller did something
        that moves the group (groupcoord.client.kinesis, after committing a shard's end: its
        children are assignable now, and this member is their preferred owner; a classic
        member hears of the rebalance). Any thread."""
        self._beat_now.set()

    def report_lags(self, lags: Mapping[TopicPartition, int]) -> None:
        """How far behind this member is on partitions it owns, in ms (a Kinesis consumer's
        MillisBehindLatest). The heartbeats carry them to the coordinator (the dashboard shows
        them; the consumer protocol's uniform assignor moves the partitions least behind)."""
        bad = [tp for tp, ms in lags.items() if not isinstance(ms, int) or ms < 0]
        if bad:
            raise ValueError(f"lags must be whole ms >= 0: {sorted(bad)}")
        self._lags = {**self._lags, **lags}

    def commit(
        self,
        offsets: Mapping[TopicPartition, int],
        metadata: str | None = None,
        writes: Sequence[Mapping[str, Any]] | None = None,
        positions: Mapping[TopicPartition, Mapping[str, Any]] | None = None,
    ) -> None:
        """Commit offsets (the next offset to read) for owned partitions, with this member's
        generation (classic) or epoch (consumer). Coordinator moves and "busy" answers are
        retried (a commit is idempotent). Raises CommitFailed when the coordinator fenced the
        commit (the partitions moved on: do not retry; poll() rejoins), GroupcoordError for
        other refusals (unknown topic, metadata too large, ...).

        `writes` (built with groupcoord.client.sink) are DynamoDB writes on the deployment's
        sink tables, applied in one transaction with the offsets and fenced like them: both
        land or neither does (docs/exactly-once.md). Its retries carry one idempotency key,
        so they never apply the writes twice. WriteConditionFailed: a write's own condition
        failed, and nothing was written.

        `positions`: Kinesis-backed topics' checkpoints (kinesisPosition's JSON: sequenceNumber,
        subSequenceNumber, shardEnd, childShardIds; docs/kinesis.md), committed with offset 0
        (groupcoord.client.kinesis builds them)."""
        if not offsets and not writes and not positions:
            return
        by_topic = _commit_partitions(offsets, metadata, positions or {})
        membership = self._classic or self._consumer
        assert membership is not None
        extension: dict[str, Any] = {}
        if writes:
            # One key for this commit and all its retries (transport ones included).
            extension = {"writes": [dict(w) for w in writes], "idempotencyKey": uuid.uuid4().hex}
        for attempt in range(1, COMMIT_ATTEMPTS + 1):
            body = {
                "groupId": self.group_id,
                **membership.commit_fields(),
                "topics": [{"name": t, "partitions": parts} for t, parts in by_topic.items()],
                **extension,
            }
            reply = self._call("offset-commit", body)
            codes = {_code(p) for t in reply.body.get("topics", []) for p in t["partitions"]}
            # The verdict on the whole commit: the one code a commit of writes alone carries.
            codes.add(_code(reply.body))
            codes.discard(Errors.NONE)
            if not codes:
                return
            failed_write = reply.body.get("failedWrite")
            if failed_write:
                raise WriteConditionFailed(
                    f"commit refused: writes[{failed_write['index']}]: {failed_write['reason']}",
                    failed_write["index"],
                    failed_write["reason"],
                )
            fenced = codes & FENCING_ERRORS
            if fenced:
                if self._classic is not None:
                    self._rejoin.set()  # the next poll() finds out where it stands
                    self._wake.set()
                error = sorted(fenced)[0]
                raise CommitFailed(f"commit fenced: {error.name}", error)
            if codes <= RETRIABLE_ERRORS and attempt < COMMIT_ATTEMPTS:
                if codes & REDISCOVER_ERRORS:
                    self._coordinator = None
                time.sleep(0.05 * 2**attempt * random.uniform(0.5, 1.0))
                continue
            names = ", ".join(sorted(c.name for c in codes))
            if codes <= RETRIABLE_ERRORS:
                raise CoordinatorUnavailable(f"commit failed: {names}", sorted(codes)[0])
            raise GroupcoordError(f"commit failed: {names}", sorted(codes)[0])

    def commit_async(
        self, offsets: Mapping[TopicPartition, int], metadata: str | None = None
    ) -> Future[None]:
        """commit() on a background thread, in call order; the future holds its outcome.
        close() waits for the pending ones before leaving the group."""
        return self._executor.submit(self.commit, dict(offsets), metadata)

    def committed(self, partitions: Iterable[TopicPartition]) -> dict[TopicPartition, int | None]:
        """The committed offsets of `partitions` (None where nothing is committed)."""
        return {
            tp: None if p["committedOffset"] < 0 else p["committedOffset"]
            for tp, p in self._fetched(partitions).items()
        }

    def committed_positions(
        self, partitions: Iterable[TopicPartition]
    ) -> dict[TopicPartition, dict[str, Any] | None]:
        """A Kinesis-backed topic's committed positions (kinesisPosition's JSON; None where
        nothing is committed)."""
        return {tp: p.get("kinesisPosition") for tp, p in self._fetched(partitions).items()}

    def _fetched(self, partitions: Iterable[TopicPartition]) -> dict[TopicPartition, dict]:
        """offset-fetch's answer for each of `partitions`."""
        by_topic: dict[str, set[int]] = {}
        for tp in partitions:
            by_topic.setdefault(tp.topic, set()).add(tp.partition)
        if not by_topic:
            return {}
        body = {
            "groups": [
                {
                    "groupId": self.group_id,
                    "topics": [
                        {"name": t, "partitionIndexes": sorted(ps)}
                        for t, ps in sorted(by_topic.items())
                    ],
                }
            ]
        }
        for attempt in range(1, COMMIT_ATTEMPTS + 1):
            reply = self._call("offset-fetch", body)
            group = reply.body["groups"][0]
            codes = {_code(group)} | {
                _code(p) for t in group.get("topics", []) for p in t["partitions"]
            }
            codes.discard(Errors.NONE)
            if codes <= RETRIABLE_ERRORS and codes and attempt < COMMIT_ATTEMPTS:
                if codes & REDISCOVER_ERRORS:
                    self._coordinator = None
                time.sleep(0.05 * 2**attempt)
                continue
            if codes:
                names = ", ".join(sorted(c.name for c in codes))
                raise GroupcoordError(f"offset-fetch failed: {names}", sorted(codes)[0])
            return {
                TopicPartition(topic["name"], p["partitionIndex"]): p
                for topic in group.get("topics", [])
                for p in topic["partitions"]
            }
        raise AssertionError("unreachable")

    def close(self) -> None:
        """Wait for pending commit_async() calls, give up the partitions (listener: revoked,
        or lost if the membership was already lost) and leave the group. A static member
        leaves temporarily: the coordinator keeps its partitions for its return until its
        session times out, without a rebalance. Idempotent."""
        if self._closed.is_set():
            return
        self._executor.shutdown(wait=True)
        if self._stopped_by_crash:
            self._closed.set()
            self._push.close()
            return
        with self._lock:
            self._closed.set()
            self._stop_beating.set()
            owned = set(self._owned)
            if owned:
                if self._lost:
                    self._call_listener(self.listener.on_partitions_lost, owned)
                else:
                    self._call_listener(self.listener.on_partitions_revoked, owned)
            # Unreachable: the session timeout frees the partitions anyway.
            with contextlib.suppress(GroupcoordError):
                self._leave()
            self._owned = set()
            self._joined = False
            self._wake.set()
        self._push.close()  # after the leave: its `$disconnect` then finds no member to expire
        self._heartbeats.join(timeout=5)
        self._raise_listener_error()

    def __enter__(self) -> GroupMember:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    _stopped_by_crash = False

    def _simulate_crash(self) -> None:
        """Test hook: stop as a killed process would. No more heartbeats, no leave; poll()
        refuses from now on, but commit() still sends (a zombie's commit). close() afterwards
        only releases the threads."""
        self._stopped_by_crash = True
        self._push.close(abort=True)  # a killed process's socket drops with it
        self._stop_beating.set()
        self._wake.set()
        self._heartbeats.join(timeout=5)

    # --- classic protocol ---

    def _poll_classic(self, deadline: float) -> None:
        classic = self._classic
        assert classic is not None
        if self._pattern is not None and self._joined and not self._rejoin.is_set():
            # Wildcards: poll metadata and rejoin when the matching set changes.
            try:
                if self._subscribed_topics(refresh=False) != classic.subscribed:
                    self._rejoin.set()
            except CoordinatorUnavailable as error:
                self._unavailable(error)
        attempt = 0
        while True:
            if self._lost:
                self._give_up_lost()
            if self._joined and not self._rejoin.is_set():
                return
            self._rejoin.clear()
            try:
                self._rejoining = True
                result = classic.rejoin(self._revoke_before_join)
            except RejoinNeeded as needed:
                self._lost = self._lost or needed.lost
                self._rejoin.set()
                attempt += 1
                # A rebalance that started meanwhile is joined at once; anything else backs off.
                pause = needed.error != Errors.REBALANCE_IN_PROGRESS
                if not self._retry_until(deadline, attempt, pause=pause):
                    return
                continue
            except CoordinatorUnavailable as error:
                self._rejoining = False
                self._unavailable(error)
                self._rejoin.set()
                attempt += 1
                if not self._retry_until(deadline, attempt):
                    return
                continue
            self._rejoining = False
            self._joined = True
            self._push.member_changed()
            self._last_ok = time.monotonic()
            if result.revoked:
                self._call_listener(self.listener.on_partitions_revoked, result.revoked)
            self._owned = set(classic.owned)
            if result.assigned:
                self._call_listener(self.listener.on_partitions_assigned, result.assigned)
            if result.rejoin:
                # Something was revoked (the next round hands it over), or the assignment
                # named a topic this member no longer subscribes to (refused).
                self._rejoin.set()

    def _revoke_before_join(self, partitions: set[TopicPartition]) -> None:
        """Before the join: eager rebalancing revokes everything, cooperative the partitions
        of topics no longer subscribed."""
        self._call_listener(self.listener.on_partitions_revoked, partitions)
        self._owned = self._owned - partitions

    # --- consumer protocol ---

    def _poll_consumer(self, deadline: float) -> None:
        consumer = self._consumer
        assert consumer is not None
        attempt = 0
        while True:
            try:
                if self._lost:
                    self._give_up_lost()
                if not self._joined:
                    self._look_up_topics_beside_the_join()
                    self._consumer_heartbeat()  # the join: epoch 0
                    self._joined = True
                    self._push.member_changed()
                if self._pending_target is not None:
                    self._reconcile_consumer()
                return
            except RejoinRequired:
                attempt += 1  # rejoin at once; back off if that keeps failing
                if not self._retry_until(deadline, attempt, pause=attempt > 1):
                    return
            except CoordinatorUnavailable as error:
                self._unavailable(error)
                attempt += 1
                if not self._retry_until(deadline, attempt):
                    return

    def _reconcile_consumer(self) -> None:
        """Move to the assignment the coordinator sent: revoke what is gone, take what is new,
        and acknowledge at once: here after a revocation (the next owner of a revoked
        partition is waiting for it), else on the heartbeat thread, so that poll() hands the
        new partitions over without waiting for the acknowledgement's answer."""
        target = self._pending_target
        self._pending_target = None
        if target is None:
            return
        revoked = self._owned - target
        if revoked:
            self._call_listener(self.listener.on_partitions_revoked, revoked)
            self._owned = self._owned - revoked  # rebound, never mutated: read unlocked
        added = target - self._owned
        self._owned = set(target)
        if added:
            self._call_listener(self.listener.on_partitions_assigned, added)
        if revoked:
            self._consumer_heartbeat()
        else:
            self.heartbeat_soon()

    def _look_up_topics_beside_the_join(self) -> None:
        """The subscribed topics' ids, asked while the join is answered (named topics not all
        known yet): the join's answer names its partitions by topic id, and looking them up
        after it would hold the first assignment back by a metadata round trip."""
        if self._topics is None or all(t in self._topic_cache for t in self._topics):
            return
        self._transport()  # the coordinator found once, before the two requests go
        threading.Thread(target=self._refresh_topics_quietly, name="topics", daemon=True).start()

    def _refresh_topics_quietly(self) -> None:
        try:
            self._refresh_topics(force=True)
        except Exception as error:  # the join's answer looks them up again
            log.debug("topics not looked up beside the join: %r", error)

    def _consumer_heartbeat(self, timeout_s: float | None = None) -> None:
        consumer = self._consumer
        assert consumer is not None
        try:
            owned = set(self._owned)
            lags = {tp: ms for tp, ms in self._lags.items() if tp in owned}
            target = consumer.heartbeat(owned, timeout_s, lags)
        except RejoinRequired:
            self._lost = True
            self._wake.set()
            raise
        self._last_ok = time.monotonic()
        if target is not None:
            # The newest answer wins: an assignment that went back to what this member owns
            # cancels a pending one.
            self._pending_target = target if target != self._owned else None
            if self._pending_target is not None:
                self._wake.set()

    # --- shared machinery ---

    def _leave(self) -> None:
        if self._classic is not None:
            self._classic.leave()
        elif self._consumer is not None:
            self._consumer.leave()

    def _give_up_lost(self) -> None:
        """The membership is gone: the listener hears `lost`, and the member rejoins afresh."""
        self._lost = False
        self._pending_target = None
        owned, self._owned = set(self._owned), set()
        if self._classic is not None:
            self._classic.owned = set()
            self._classic.reset()
        elif self._consumer is not None:
            self._consumer.reset()
        self._joined = False
        if owned:
            self._call_listener(self.listener.on_partitions_lost, owned)

    def _call_listener(
        self, callback: Callable[[set[TopicPartition]], None], partitions: set[TopicPartition]
    ) -> None:
        """Run a callback; an exception it raises is re-raised from poll()/close() once the
        step completed (as Kafka's consumer does), so the membership stays consistent."""
        try:
            callback(set(partitions))
        except Exception as error:
            if self._listener_error is None:
                self._listener_error = error

    def _raise_listener_error(self) -> None:
        error, self._listener_error = self._listener_error, None
        if error is not None:
            raise error

    def _heartbeat_loop(self) -> None:
        next_beat = time.monotonic()
        while not self._stop_beating.is_set():
            wait = next_beat - time.monotonic()
            if self._stop_beating.wait(min(max(0.0, wait), 0.05)):
                return
            if self._beat_now.is_set():
                self._beat_now.clear()
                next_beat = min(next_beat, time.monotonic())
            next_beat = min(next_beat, self._push.due_beat(time.monotonic()))
            if time.monotonic() < next_beat:
                continue
            if not self._joined or self._lost or self._rejoining or self._fatal is not None:
                # poll() has the next move: look again in a moment (a next_beat left in the
                # past would make this loop spin on wait(0)).
                next_beat = time.monotonic() + IDLE_BEAT_CHECK_S
                continue
            if not self._lock.acquire(timeout=0.05):
                continue  # poll() is rebalancing or running the listener
            started = time.monotonic()
            try:
                if self._stop_beating.is_set() or not self._joined or self._lost:
                    continue
                self._beat_once()
            except CoordinatorUnavailable as error:
                self._unavailable(error)
            except Exception as error:  # fatal: FencedInstance, a refused subscription, ...
                self._fatal = error
                self._wake.set()
            finally:
                self._lock.release()
            next_beat = started + self._interval_s()
            if self._joined and not self._lost and started - self._last_ok > self._session_s:
                # No successful heartbeat within the session timeout: the coordinator has
                # surely expired this member. Give the partitions up (lost), rediscover the
                # coordinator and rejoin (docs/client.md, "Discovery and rediscovery").
                self._coordinator = None
                self._lost = True
                self._wake.set()

    def _heartbeat_timeout_s(self) -> float:
        # One attempt per beat (the next beat is the retry), answered within the session.
        return max(1.0, min(self._request_timeout_s, self._session_s))

    def _beat_once(self) -> None:
        if self._consumer is not None:
            # RejoinRequired: poll() gives the partitions up (lost) and rejoins.
            with contextlib.suppress(RejoinRequired):
                self._consumer_heartbeat(self._heartbeat_timeout_s())
            return
        assert self._classic is not None
        error = self._classic.heartbeat(self._heartbeat_timeout_s(), self._lags)
        if error == Errors.NONE:
            self._last_ok = time.monotonic()
        elif error == Errors.REBALANCE_IN_PROGRESS:
            self._last_ok = time.monotonic()
            self._rejoin.set()
            self._wake.set()
        elif error in (Errors.UNKNOWN_MEMBER_ID, Errors.ILLEGAL_GENERATION):
            # Expired, or a generation went by without this member: as Kafka's consumer,
            # reset the generation, give the partitions up as lost and rejoin.
            self._lost = True
            self._wake.set()
        elif error == Errors.FENCED_INSTANCE_ID:
            raise FencedInstance("another member took this groupInstanceId", error)
        elif error in RETRIABLE_ERRORS:
            raise CoordinatorUnavailable(f"heartbeat: {error.name}", error)
        elif error in (Errors.GROUP_AUTHORIZATION_FAILED, Errors.INVALID_GROUP_ID):
            raise GroupcoordError(f"heartbeat: {error.name}", error)

    def _interval_s(self) -> float:
        membership = self._classic or self._consumer
        assert membership is not None
        interval = max(0.01, membership.heartbeat_interval_ms / 1000)
        if self._consumer is not None:
            return self._push.interval_s(interval)  # a third as often while push is on
        return interval

    @property
    def push_connected(self) -> bool:
        """Whether the member's push socket is open now (docs/client.md, "Push")."""
        return self._push.connected

    def _work_due(self) -> bool:
        if not self._joined or self._lost or self._rejoin.is_set():
            return True
        if self._pending_target is not None:
            return True
        stale = time.monotonic() - self._topic_cache_at >= self._metadata_refresh_s
        return self._classic is not None and self._pattern is not None and stale

    def _retry_until(self, deadline: float, attempt: int, pause: bool = True) -> bool:
        """Back off before another attempt; False when poll()'s time is up."""
        self._check_usable()
        if time.monotonic() >= deadline:
            return False
        if pause:
            delay = min(1.0, 0.05 * 2**attempt) * random.uniform(0.5, 1.0)
            time.sleep(max(0.0, min(delay, deadline - time.monotonic())))
        return True

    def _unavailable(self, error: CoordinatorUnavailable) -> None:
        if error.error != Errors.COORDINATOR_LOAD_IN_PROGRESS:
            self._coordinator = None  # rediscover (docs/client.md)

    def _check_usable(self) -> None:
        if self._fatal is not None:
            raise self._fatal
        if self._closed.is_set() or self._stopped_by_crash:
            raise RuntimeError("this GroupMember is closed")

    def _transport(self) -> Transport:
        """The coordinator's transport, discovered with find-coordinator (and again after
        NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE or a lost connection)."""
        coordinator = self._coordinator
        if coordinator is None:
            reply = self._bootstrap.call(
                "find-coordinator",
                {"keyType": 0, "coordinatorKeys": [self.group_id]},
                retries=2,
            )
            entries = reply.body.get("coordinators") or [{}]
            entry = entries[0]
            error = _code(entry)
            if error != Errors.NONE or not entry.get("endpoint"):
                raise CoordinatorUnavailable(
                    f"find-coordinator: {error.name}: {entry.get('errorMessage') or ''}",
                    error if error != Errors.NONE else Errors.COORDINATOR_NOT_AVAILABLE,
                )
            try:
                coordinator = self._bootstrap.with_base_url(entry["endpoint"])
            except ValueError as bad:
                raise CoordinatorUnavailable(f"find-coordinator: {bad}") from bad
            self._coordinator = coordinator
            self._push.offer(entry.get("pushUrl"))
        return coordinator

    def _call(self, api: str, body: dict[str, Any]) -> Reply:
        try:
            return self._transport().call(api, body)
        except CoordinatorUnavailable:
            self._coordinator = None
            return self._transport().call(api, body)

    def _refresh_topics(self, force: bool = False) -> None:
        if not force and time.monotonic() - self._topic_cache_at < self._metadata_refresh_s:
            return
        answer = metadata_all_pages(lambda api, body: self._call(api, body).body)
        self._topic_cache = {
            t["name"]: (t["topicId"], len(t["partitions"]))
            for t in answer.get("topics", [])
            if t.get("errorCode", 0) == 0 and t.get("name")
        }
        self._topic_cache_at = time.monotonic()

    def _subscribed_topics(self, refresh: bool = True) -> list[str]:
        if self._topics is not None:
            return list(self._topics)
        assert self._pattern is not None
        self._refresh_topics(force=refresh)
        return sorted(t for t in self._topic_cache if self._pattern.fullmatch(t))

    def _leader_partitions(self, topics: list[str]) -> tuple[dict[str, int], Blocked]:
        """A classic leader's view of `topics`: their partition counts and the partitions the
        group may not be assigned. Asked with the groupId, metadata lists only a Kinesis-backed
        topic's shards that are assignable to the group (docs/kinesis.md, "Lineage"); those it
        leaves out are blocked, so the assignment spreads what may be read and sync-group has
        nothing to strip. A coordinator that refuses the groupId (no DESCRIBE on the group)
        is asked without it: every partition, stripped at the sync as before."""
        if not topics:
            return {}, {}
        wanted = [{"name": t} for t in topics]
        answer = metadata_all_pages(
            lambda api, body: self._call(api, {**body, "groupId": self.group_id}).body, wanted
        )
        if answer.get("errorCode", 0) != 0:
            answer = metadata_all_pages(lambda api, body: self._call(api, body).body, wanted)
        counts: dict[str, int] = {}
        blocked: dict[str, frozenset[int]] = {}
        for topic in answer.get("topics", []):
            if topic.get("errorCode", 0) != 0 or not topic.get("name"):
                continue
            listed = {p["partitionIndex"] for p in topic["partitions"]}
            # Past the last one listed, nothing is assignable: the count may stop there.
            count = max(listed, default=-1) + 1
            counts[topic["name"]] = count
            blocked[topic["name"]] = frozenset(range(count)) - listed
        return counts, blocked

    def _topic_name(self, topic_id: str) -> str | None:
        for name, (tid, _) in self._topic_cache.items():
            if tid == topic_id:
                return name
        self._refresh_topics(force=True)
        return next((n for n, (tid, _) in self._topic_cache.items() if tid == topic_id), None)

    def _topic_id(self, name: str) -> str | None:
        if name not in self._topic_cache:
            self._refresh_topics(force=True)
        entry = self._topic_cache.get(name)
        return entry[0] if entry else None


def _code(entry: Mapping[str, Any]) -> Errors:
    try:
        return Errors(entry.get("errorCode", 0))
    except ValueError:
        return Errors.UNKNOWN_SERVER_ERROR


def _commit_partitions(
    offsets: Mapping[TopicPartition, int],
    metadata: str | None,
    positions: Mapping[TopicPartition, Mapping[str, Any]],
) -> dict[str, list[dict[str, Any]]]:
    """offset-commit's partitions per topic: the offsets, then the Kinesis positions (with
    offset 0: the position is the checkpoint)."""
    by_topic: dict[str, list[dict[str, Any]]] = {}
    for tp, offset in sorted(offsets.items()):
        by_topic.setdefault(tp.topic, []).append(
            {
                "partitionIndex": tp.partition,
                "committedOffset": offset,
                "committedMetadata": metadata,
            }
        )
    for tp, position in sorted(positions.items()):
        by_topic.setdefault(tp.topic, []).append(
            {
                "partitionIndex": tp.partition,
                "committedOffset": 0,
                "committedMetadata": metadata,
                "kinesisPosition": dict(position),
            }
        )
    return by_topic
