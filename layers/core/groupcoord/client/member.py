"""GroupMember: what a consumer author uses. Join a group, keep the membership alive in the
background, learn which partitions you own through a rebalance listener, commit safely.

    member = GroupMember("http://127.0.0.1:8080", "billing", topics=["orders"])
    while running:
        for tp in member.poll(timeout_s=1.0):
            ...process tp, then member.commit({tp: next_offset})
    member.close()

Listener callbacks run inside poll(), on the caller's thread, in the order Kafka's consumer
calls them: revoked before a partition is given up, assigned after new ones arrive, lost when
the membership was lost (the partitions may already belong to someone else).
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Iterable, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Protocol

from ..errors import Errors
from .assignors import TopicPartition
from .classic import ClassicMembership, RejoinNeeded
from .consumer import ConsumerMembership, RejoinRequired
from .errors import FENCING_ERRORS, CommitFailed, CoordinatorUnavailable, FencedInstance
from .transport import Reply, Transport

REDISCOVER_ERRORS = {Errors.NOT_COORDINATOR, Errors.COORDINATOR_NOT_AVAILABLE}


class RebalanceListener(Protocol):
    def on_partitions_revoked(self, partitions: set[TopicPartition]) -> None: ...
    def on_partitions_assigned(self, partitions: set[TopicPartition]) -> None: ...
    def on_partitions_lost(self, partitions: set[TopicPartition]) -> None: ...


class _NoListener:
    def on_partitions_revoked(self, partitions: set[TopicPartition]) -> None:
        pass

    def on_partitions_assigned(self, partitions: set[TopicPartition]) -> None:
        pass

    def on_partitions_lost(self, partitions: set[TopicPartition]) -> None:
        pass


class GroupMember:
    def __init__(
        self,
        bootstrap_url: str,
        group_id: str,
        *,
        topics: Iterable[str] | None = None,
        pattern: str | None = None,
        protocol: str = "consumer",
        assignors: Iterable[str] = ("range",),
        server_assignor: str | None = None,
        listener: RebalanceListener | None = None,
        instance_id: str | None = None,
        session_timeout_ms: int = 45000,
        rebalance_timeout_ms: int = 300000,
        metadata_refresh_ms: int = 5000,
        client_id: str = "groupcoord-client",
        request_timeout_s: float = 10.0,
    ) -> None:
        if (topics is None) == (pattern is None):
            raise ValueError("subscribe with exactly one of topics=[...] or pattern='...'")
        if protocol not in ("consumer", "classic"):
            raise ValueError("protocol must be 'consumer' or 'classic'")
        self.group_id = group_id
        self.protocol = protocol
        self.listener: RebalanceListener = listener or _NoListener()
        self._bootstrap = Transport(bootstrap_url, client_id=client_id, timeout_s=request_timeout_s)
        self._coordinator: Transport | None = None
        self._topics = sorted(topics) if topics is not None else None
        self._pattern = re.compile(pattern) if pattern is not None else None
        self._metadata_refresh_s = metadata_refresh_ms / 1000
        self._topic_cache: dict[str, tuple[str, int]] = {}  # name -> (id, partitions)
        self._topic_cache_at = 0.0
        self._owned: set[TopicPartition] = set()
        self._lock = threading.RLock()
        self._rejoin = threading.Event()
        self._wake = threading.Event()
        self._closed = threading.Event()
        self._fatal: Exception | None = None
        self._lost = False
        self._last_ok = time.monotonic()
        self._session_s = session_timeout_ms / 1000
        self._pending_target: set[TopicPartition] | None = None
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="commit")
        if protocol == "classic":
            self._classic: ClassicMembership | None = ClassicMembership(
                self._transport,
                group_id,
                self._subscribed_topics,
                self._partition_counts,
                assignors=list(assignors),
                session_timeout_ms=session_timeout_ms,
                rebalance_timeout_ms=rebalance_timeout_ms,
                instance_id=instance_id,
            )
            self._consumer: ConsumerMembership | None = None
        else:
            self._classic = None
            self._consumer = ConsumerMembership(
                self._transport,
                group_id,
                topics=self._topics,
                pattern=pattern,
                assignor=server_assignor,
                rebalance_timeout_ms=rebalance_timeout_ms,
                instance_id=instance_id,
                topic_name=self._topic_name,
                topic_id=self._topic_id,
            )
        self._joined = False
        self._heartbeats = threading.Thread(target=self._heartbeat_loop, daemon=True)
        self._heartbeats.start()

    # --- the user's side ---

    def poll(self, timeout_s: float = 0.0) -> set[TopicPartition]:
        """Run pending rebalance work (and the listener) on this thread; return what this
        member owns. Waits up to `timeout_s` for something to happen once it is stable."""
        self._raise_if_fatal()
        if self._joined and not self._rejoin.is_set() and self._pending_target is None:
            self._wake.wait(timeout_s)
            self._wake.clear()
        self._raise_if_fatal()
        with self._lock:
            if self._classic is not None:
                self._poll_classic()
            else:
                self._poll_consumer()
        return set(self._owned)

    def assignment(self) -> set[TopicPartition]:
        return set(self._owned)

    def commit(self, offsets: Mapping[TopicPartition, int], metadata: str | None = None) -> None:
        """Commit offsets (the next offset to read) for owned partitions. Raises CommitFailed
        when the coordinator fenced the commit: the partitions moved on."""
        by_topic: dict[str, list[dict]] = {}
        for tp, offset in sorted(offsets.items()):
            by_topic.setdefault(tp.topic, []).append(
                {
                    "partitionIndex": tp.partition,
                    "committedOffset": offset,
                    "committedMetadata": metadata,
                }
            )
        membership = self._classic or self._consumer
        assert membership is not None
        body = {
            "groupId": self.group_id,
            **membership.commit_fields(),
            "topics": [{"name": t, "partitions": parts} for t, parts in by_topic.items()],
        }
        reply = self._call("offset-commit", body)
        codes = {
            Errors(p["errorCode"]) for t in reply.body.get("topics", []) for p in t["partitions"]
        }
        codes.discard(Errors.NONE)
        if not codes:
            return
        fenced = codes & FENCING_ERRORS
        if fenced:
            self._rejoin.set()
            error = sorted(fenced)[0]
            raise CommitFailed(f"commit fenced: {error.name}", error)
        raise CommitFailed(f"commit failed: {', '.join(sorted(c.name for c in codes))}")

    def commit_async(
        self, offsets: Mapping[TopicPartition, int], metadata: str | None = None
    ) -> Future[None]:
        return self._executor.submit(self.commit, dict(offsets), metadata)

    def committed(self, partitions: Iterable[TopicPartition]) -> dict[TopicPartition, int | None]:
        by_topic: dict[str, list[int]] = {}
        for tp in partitions:
            by_topic.setdefault(tp.topic, []).append(tp.partition)
        reply = self._call(
            "offset-fetch",
            {
                "groups": [
                    {
                        "groupId": self.group_id,
                        "topics": [
                            {"name": t, "partitionIndexes": sorted(ps)}
                            for t, ps in by_topic.items()
                        ],
                    }
                ]
            },
        )
        result: dict[TopicPartition, int | None] = {}
        for topic in reply.body["groups"][0]["topics"]:
            for p in topic["partitions"]:
                offset = p["committedOffset"]
                result[TopicPartition(topic["name"], p["partitionIndex"])] = (
                    None if offset < 0 else offset
                )
        return result

    def close(self) -> None:
        """Give up the partitions (listener: revoked) and leave the group; a static member
        leaves temporarily, keeping its assignment for its session timeout."""
        if self._closed.is_set():
            return
        with self._lock:
            if self._owned:
                self.listener.on_partitions_revoked(set(self._owned))
            try:
                if self._classic is not None:
                    self._classic.leave()
                elif self._consumer is not None:
                    self._consumer.leave()
            except CoordinatorUnavailable:
                pass  # the session timeout frees the partitions anyway
            self._owned = set()
            self._closed.set()
            self._wake.set()
        self._heartbeats.join(timeout=5)
        self._executor.shutdown(wait=True)

    def __enter__(self) -> GroupMember:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- classic protocol ---

    def _poll_classic(self) -> None:
        assert self._classic is not None
        # Wildcards (seed 000): poll metadata and rejoin when the matching set changes.
        matching = self._pattern is not None and self._joined
        if matching and self._subscribed_topics(refresh=False) != self._classic.subscribed:
            self._rejoin.set()
        if self._lost:
            self._give_up_lost()
        attempts = 0
        while not self._joined or self._rejoin.is_set():
            self._rejoin.clear()
            attempts += 1
            try:
                result = self._classic.rejoin(self.listener.on_partitions_revoked)
            except RejoinNeeded as needed:
                if needed.lost:
                    self._give_up_lost()
                self._backoff(attempts)
                continue
            except CoordinatorUnavailable:
                self._coordinator = None
                self._backoff(attempts)
                continue
            self._joined = True
            self._last_ok = time.monotonic()
            if result.revoked and self._classic.cooperative:
                self.listener.on_partitions_revoked(result.revoked)
            self._owned = set(self._classic.owned)
            if result.assigned:
                self.listener.on_partitions_assigned(result.assigned)
            if result.rejoin:
                self._rejoin.set()

    # --- consumer protocol ---

    def _poll_consumer(self) -> None:
        assert self._consumer is not None
        if self._lost:
            self._give_up_lost()
        if not self._joined:
            self._consumer_heartbeat()
            self._joined = True
        target = self._pending_target
        if target is None:
            return
        self._pending_target = None
        revoked = self._owned - target
        if revoked:
            self.listener.on_partitions_revoked(revoked)
            self._owned -= revoked
        added = target - self._owned
        self._owned = set(target)
        if added:
            self.listener.on_partitions_assigned(added)
        self._wake.set()
        self._consumer_heartbeat()  # acknowledge at once: the next owner may be waiting

    def _consumer_heartbeat(self) -> None:
        assert self._consumer is not None
        try:
            target = self._consumer.heartbeat(set(self._owned))
        except RejoinRequired:
            self._lost = True
            self._wake.set()
            return
        self._last_ok = time.monotonic()
        if target is not None and target != self._owned:
            self._pending_target = target
            self._wake.set()

    # --- shared machinery ---

    def _give_up_lost(self) -> None:
        self._lost = False
        if self._owned:
            self.listener.on_partitions_lost(set(self._owned))
        self._owned = set()
        if self._classic is not None:
            self._classic.owned = set()
            self._classic.reset()
        self._joined = False

    def _heartbeat_loop(self) -> None:
        last_beat = time.monotonic()
        while not self._closed.is_set():
            # Re-read the interval each tick: the coordinator's answer may have changed it.
            due = last_beat + self._interval_s()
            if self._closed.wait(max(0.0, min(due - time.monotonic(), 0.05))):
                return
            if time.monotonic() < due:
                continue
            if not self._joined or not self._lock.acquire(blocking=False):
                continue  # not joined yet, or a rebalance is running on the user's thread
            last_beat = time.monotonic()
            try:
                self._beat_once()
            except FencedInstance as fenced:
                self._fatal = fenced
                self._wake.set()
            except CoordinatorUnavailable:
                self._coordinator = None
            except Exception as error:
                self._fatal = error
                self._wake.set()
            finally:
                self._lock.release()
            if time.monotonic() - self._last_ok > self._session_s:
                # No successful heartbeat within the session: the coordinator has surely
                # expired us. Rediscover it and rejoin (seed 000).
                self._coordinator = None
                self._lost = True
                self._wake.set()

    def _beat_once(self) -> None:
        if self._consumer is not None:
            self._consumer_heartbeat()
            return
        assert self._classic is not None
        error = self._classic.heartbeat()
        if error == Errors.NONE:
            self._last_ok = time.monotonic()
        elif error in (Errors.REBALANCE_IN_PROGRESS, Errors.ILLEGAL_GENERATION):
            self._last_ok = time.monotonic()
            self._rejoin.set()
            self._wake.set()
        elif error == Errors.UNKNOWN_MEMBER_ID:
            self._lost = True
            self._wake.set()
        elif error == Errors.FENCED_INSTANCE_ID:
            raise FencedInstance("another member took this groupInstanceId", error)
        elif error in REDISCOVER_ERRORS:
            self._coordinator = None

    def _interval_s(self) -> float:
        membership = self._classic or self._consumer
        assert membership is not None
        return max(0.01, membership.heartbeat_interval_ms / 1000)

    def _backoff(self, attempt: int) -> None:
        self._raise_if_fatal()
        time.sleep(min(1.0, 0.02 * 2**attempt))

    def _raise_if_fatal(self) -> None:
        if self._fatal is not None:
            raise self._fatal

    def _transport(self) -> Transport:
        """The coordinator's transport, discovered with find-coordinator (and again after
        NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE or a lost connection)."""
        if self._coordinator is None:
            reply = self._bootstrap.call(
                "find-coordinator", {"keyType": 0, "coordinatorKeys": [self.group_id]}
            )
            entry = reply.body["coordinators"][0]
            if entry["errorCode"] != 0 or not entry.get("endpoint"):
                raise CoordinatorUnavailable(
                    f"find-coordinator: {entry.get('errorMessage')}", Errors(entry["errorCode"])
                )
            self._coordinator = self._bootstrap.with_base_url(entry["endpoint"])
        return self._coordinator

    def _call(self, api: str, body: dict) -> Reply:
        try:
            return self._transport().call(api, body)
        except CoordinatorUnavailable:
            self._coordinator = None
            return self._transport().call(api, body)

    def _refresh_topics(self, force: bool = False) -> None:
        if not force and time.monotonic() - self._topic_cache_at < self._metadata_refresh_s:
            return
        reply = self._call("metadata", {"topics": None})
        self._topic_cache = {
            t["name"]: (t["topicId"], len(t["partitions"])) for t in reply.body["topics"]
        }
        self._topic_cache_at = time.monotonic()

    def _subscribed_topics(self, refresh: bool = True) -> list[str]:
        if self._topics is not None:
            return list(self._topics)
        assert self._pattern is not None
        self._refresh_topics(force=refresh)
        return sorted(t for t in self._topic_cache if self._pattern.fullmatch(t))

    def _partition_counts(self, topics: list[str]) -> dict[str, int]:
        self._refresh_topics(force=True)
        return {t: self._topic_cache[t][1] for t in topics if t in self._topic_cache}

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
