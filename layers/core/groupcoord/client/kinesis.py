"""groupcoord.client.kinesis: consume a Kinesis-backed topic (docs/kinesis.md) as a member of a
consumer group, in place of the Kinesis Client Library.

    consumer = KinesisConsumer(url, "billing", "orders", handle)   # handle(tp, records)
    consumer.run(stop)                                             # until stop is set

Per shard this member owns (kinesis_shard.py reads it): an iterator from the group's checkpoint
(at the sequence number, skipping the records at or below it; a child shard from TRIM_HORIZON,
a shard without a checkpoint from the topic's initial position), GetRecords at most once a
`fetch_interval_s` (1 s) with jittered back-off when Kinesis throttles, a new iterator after
one expired or a pause of over five minutes (after the last record handed over), KPL
aggregates split into their records (kinesis_records.py, with the `aws-kinesis-agg` package of
the extra; without it an aggregate is an error, not a record), commits on an interval and on
revocation, and the shard's end committed with its children once GetRecords has no next
iterator. `handle` may return DynamoDB writes (groupcoord.client.sink): with
`exactly_once=True` each batch is committed with its writes in one transaction
(docs/exactly-once.md), so no record's writes land twice. `lag_ms()` is each shard's
MillisBehindLatest, also reported to the coordinator (GroupMember.report_lags: the dashboard
shows it, and the uniform assignor moves the shards least behind). boto3 comes with the
`kinesis` extra; nothing here is imported by the rest of the client.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .assignors import TopicPartition
from .errors import CommitFailed, GroupcoordError
from .kinesis_records import KinesisRecord, position_order, user_records
from .kinesis_shard import (
    AT_TIMESTAMP,
    FETCH_INTERVAL_S,
    LATEST,
    LATEST_CLOCK_MARGIN_MS,
    MIN_FETCH_INTERVAL_S,
    Pacing,
    ShardReader,
    StartAt,
    topic_start,
)
from .local_aws import client_arguments
from .member import GroupMember
from .transport import Transport

__all__ = [
    "FETCH_INTERVAL_S",
    "MIN_FETCH_INTERVAL_S",
    "Handler",
    "KinesisConsumer",
    "KinesisRecord",
    "user_records",
]

log = logging.getLogger(__name__)

Handler = Callable[[TopicPartition, list[KinesisRecord]], Sequence[Mapping[str, Any]] | None]


@dataclass
class _Shard:
    partition: TopicPartition
    reader: ShardReader
    done_upto: dict[str, Any] | None = None  # processed, not yet committed
    lag_ms: int | None = None


class KinesisConsumer:
    """A GroupMember of `group_id` on the Kinesis-backed `topic` that reads its shards and
    hands their records to `handler` (see the module's docstring). `member_options` go to
    GroupMember (protocol, session_timeout_ms, ...); `kinesis` is a boto3 Kinesis client
    (default: one for the stream's region). `initial_position` (`TRIM_HORIZON`, `LATEST`,
    `AT_TIMESTAMP:<epoch ms>`), where a shard without a checkpoint starts, defaults to the
    topic's (`groupcoord.kinesis.initial.position`, from metadata); `fetch_interval_s` is the
    least pause between two GetRecords of a shard (at least 0.2 s), `limit` the records an
    answer holds at most (1 to 10,000)."""

    def __init__(
        self,
        bootstrap_url: str,
        group_id: str,
        topic: str,
        handler: Handler,
        *,
        kinesis: Any = None,
        initial_position: str | None = None,
        commit_interval_s: float = 5.0,
        fetch_interval_s: float = FETCH_INTERVAL_S,
        limit: int = 1000,
        exactly_once: bool = False,
        **member_options: Any,
    ) -> None:
        self.topic = topic
        self.handler = handler
        self.commit_interval_s = commit_interval_s
        self.pacing = Pacing(fetch_interval_s, limit)
        asked = StartAt.parse(initial_position) if initial_position is not None else None
        self.exactly_once = exactly_once
        self._metadata = Transport(bootstrap_url)
        self._stream_arn, self._shard_info, topics = self._read_shards()
        self.initial_position = _initial_position(topic, asked, topics)
        self._kinesis = kinesis if kinesis is not None else _client_for(self._stream_arn)
        self._shards: dict[TopicPartition, _Shard] = {}
        self._finished: set[TopicPartition] = set()
        self._group_started: StartAt | None = None  # where a LATEST group started
        self._last_commit = time.monotonic()
        self.member = GroupMember(
            bootstrap_url, group_id, topics=[topic], listener=self, **member_options
        )

    # --- the group's side (GroupMember's listener, run inside poll) ---

    def on_partitions_revoked(self, partitions: set[TopicPartition]) -> None:
        """Stop fetching, commit what was processed, hand the shards over."""
        self.commit(only=partitions)
        for tp in partitions:
            self._shards.pop(tp, None)
        self._progress("handed over", partitions)

    def on_partitions_assigned(self, partitions: set[TopicPartition]) -> None:
        self._progress("assigned", partitions)  # opened by the next step

    def on_partitions_lost(self, partitions: set[TopicPartition]) -> None:
        for tp in partitions:  # another member has them: nothing to commit
            self._shards.pop(tp, None)
        self._progress("lost", partitions)

    def _progress(self, what: str, partitions: Iterable[TopicPartition]) -> None:
        """One line of progress (logged at INFO): which shards, now owning which."""
        mine = [tp for tp in partitions if tp.topic == self.topic]
        if mine:
            owned = sorted(
                tp.partition for tp in self.member.assignment() if tp.topic == self.topic
            )
            log.info("%s %s; owns partitions %s", what, self._shard_names(mine), owned)

    def _shard_names(self, partitions: Iterable[TopicPartition]) -> str:
        return ", ".join(
            f"{self._shard_info.get(tp.partition, ('?',))[0]} (partition {tp.partition})"
            for tp in sorted(partitions)
        )

    # --- the loop ---

    def run(self, stop: threading.Event) -> None:
        """Consume until `stop` is set, then commit and leave the group."""
        log.info(
            "joining group %s on topic %s (%s, %d shards known)",
            self.member.group_id, self.topic, self._stream_arn, len(self._shard_info),
        )  # fmt: skip
        try:
            while not stop.is_set():
                self.step()
                # Until a shard is due, unless the coordinator sends an assignment first: a
                # shard handed over is opened at once, not a GetRecords pause later.
                self.member.wait_for_work(max(0.0, self._next_fetch() - time.monotonic()), stop)
        finally:
            self.close()

    def step(self) -> None:
        """One round: poll the group, open new shards, fetch the due ones, commit if due."""
        owned = {tp for tp in self.member.poll(0.0) if tp.topic == self.topic}
        self._finished &= owned
        opened = sorted(owned - set(self._shards) - self._finished)
        for tp in opened:
            self._open(tp)
        now = time.monotonic()
        # The shards just handed over first: their records waited through the handoff, and
        # whoever handed them over waits on them (the others were read a moment ago).
        first = [self._shards[tp] for tp in opened if tp in self._shards]
        for shard in first + [s for s in self._shards.values() if s not in first]:
            if shard.reader.due_at <= now and shard.partition in self._shards:
                self._fetch(shard)
        if time.monotonic() - self._last_commit >= self.commit_interval_s:
            self.commit()

    def commit(self, only: set[TopicPartition] | None = None) -> None:
        """Commit the processed positions (of `only`'s shards, or all); a shard this member
        lost is dropped (poll() rejoins)."""
        due = {
            tp: s.done_upto
            for tp, s in self._shards.items()
            if s.done_upto is not None and (only is None or tp in only)
        }
        self._last_commit = time.monotonic()
        if not due:
            return
        try:
            self.member.commit({}, positions=due)
        except CommitFailed as refused:
            _log_refused(refused, due)
            for tp in due:
                self._shards.pop(tp, None)
            return
        for tp, upto in due.items():
            if tp in self._shards:
                self._shards[tp].done_upto = None
            _log_checkpoint(self._shard_names([tp]), upto)

    def lag_ms(self) -> dict[TopicPartition, int | None]:
        """Each owned shard's MillisBehindLatest at its last GetRecords."""
        return {tp: s.lag_ms for tp, s in self._shards.items()}

    def close(self) -> None:
        self.commit()
        self.member.close()

    # --- shards ---

    def _read_shards(self) -> tuple[str, dict[int, tuple[str, bool]], StartAt | None]:
        """The stream's ARN, each partition's (shard id, has parents) and the topic's initial
        position (if the coordinator tells it), from metadata (a page at a time: an answer
        holds at most 2,000 partitions)."""
        body: dict[str, Any] = {"topics": [{"name": self.topic}]}
        shards: dict[int, tuple[str, bool]] = {}
        arn: str | None = None
        start: StartAt | None = None
        while True:
            answer = self._metadata.call("metadata", body).body
            for found in answer["topics"]:
                if found.get("kinesisStreamArn") is None:
                    raise GroupcoordError(
                        f"topic {self.topic} is not backed by a Kinesis stream", -1
                    )
                arn = found["kinesisStreamArn"]
                start = topic_start(found)
                for p in found["partitions"]:
                    shard = p["kinesisShard"]
                    shards[p["partitionIndex"]] = (shard["shardId"], bool(shard["parentShardIds"]))
            if answer.get("nextCursor") is None:
                break
            body = {**body, "cursor": answer["nextCursor"]}
        assert arn is not None
        return arn, shards, start

    def _open(self, tp: TopicPartition) -> None:
        if tp.partition not in self._shard_info:
            self._stream_arn, self._shard_info, _ = self._read_shards()  # a reshard since
        shard_id, has_parents = self._shard_info[tp.partition]
        checkpoint = self.member.committed_positions([tp]).get(tp)
        if checkpoint is not None and checkpoint.get("shardEnd"):
            self._finished.add(tp)  # done: the coordinator moves on to its children
            return
        start = self.initial_position
        if checkpoint is None and not has_parents and start.kind == LATEST:
            start = self._group_start() or start
        reader = ShardReader(
            self._kinesis,
            self._stream_arn,
            shard_id,
            has_parents=has_parents,
            start=start,
            read_upto=checkpoint,
            pacing=self.pacing,
        )
        self._shards[tp] = _Shard(tp, reader)  # its iterator: at its first fetch, this step
        at = _checkpoint_text(checkpoint) if checkpoint else str(start)
        log.info("reading %s from %s", self._shard_names([tp]), at)

    def _group_start(self) -> StartAt | None:
        """For a LATEST start: AT_TIMESTAMP of the group's creation, which metadata asked with
        the group id tells (None from a coordinator that does not). Where LATEST put the
        group's start, so a shard that changes hands before its first checkpoint is read from
        there by its next owner too, not from a later LATEST that would skip what came since."""
        if self._group_started is None:
            body = {"topics": [{"name": self.topic}], "groupId": self.member.group_id,
                    "responsePartitionLimit": 1}  # fmt: skip
            (found,) = self._metadata.call("metadata", body).body["topics"]
            at_ms = (found.get("kinesisInitialPosition") or {}).get("timestampMs")
            if at_ms is None:
                return None  # no such group yet, or an older coordinator: ask again next time
            # Less the margin a LATEST start keeps for clocks that disagree (kinesis_shard).
            self._group_started = StartAt(AT_TIMESTAMP, int(at_ms) - LATEST_CLOCK_MARGIN_MS)
        return self._group_started

    def _fetch(self, shard: _Shard) -> None:
        answer = shard.reader.fetch()
        if answer is None:  # throttled or expired: due again later
            return
        shard.lag_ms = answer.get("MillisBehindLatest")
        if shard.lag_ms is not None:
            self.member.report_lags({shard.partition: int(shard.lag_ms)})
        self._hand_over(shard, answer.get("Records", []))
        if shard.reader.ended and shard.partition in self._shards:
            self._end(shard, [c["ShardId"] for c in answer.get("ChildShards") or []])

    def _hand_over(self, shard: _Shard, raw: list[dict[str, Any]]) -> None:
        """The records after the last one handed over (or the checkpoint) to the handler."""
        reader = shard.reader
        after = position_order(reader.read_upto) if reader.read_upto else None
        records = [
            r
            for r in user_records(reader.shard_id, raw)
            if after is None or position_order(r.position) > after
        ]
        if not records:
            return
        writes = self.handler(shard.partition, records)
        reader.read_upto = upto = records[-1].position
        if self.exactly_once:
            # The batch's writes with its position, in one transaction: all or nothing.
            try:
                self.member.commit({}, writes=list(writes or []), positions={shard.partition: upto})
            except CommitFailed as refused:
                _log_refused(refused, [shard.partition])
                self._shards.pop(shard.partition, None)
                return
            _log_checkpoint(self._shard_names([shard.partition]), upto, len(records))
            return
        if writes:
            raise GroupcoordError("the handler returned writes: use exactly_once=True", -1)
        shard.done_upto = upto

    def _end(self, shard: _Shard, children: list[str]) -> None:
        """The shard's end, with its children, committed at once: they may start."""
        end: dict[str, Any] = {"shardEnd": True, "childShardIds": children}
        upto = shard.reader.read_upto
        if upto and upto.get("sequenceNumber") is not None:
            end["sequenceNumber"] = upto["sequenceNumber"]
            end["subSequenceNumber"] = upto.get("subSequenceNumber", 0)
        shard.done_upto = end
        self.commit(only={shard.partition})
        self._shards.pop(shard.partition, None)
        self._finished.add(shard.partition)
        # The end moved the group (its children are assignable, preferably to this member):
        # hear of it now, not at the next heartbeat.
        self.member.heartbeat_soon()

    def _next_fetch(self) -> float:
        due = [s.reader.due_at for s in self._shards.values()]
        return min([*due, time.monotonic() + self.pacing.interval_s])


def _checkpoint_text(checkpoint: Mapping[str, Any]) -> str:
    reset_to = checkpoint.get("atTimestampMs")
    if checkpoint.get("sequenceNumber") is None and reset_to is not None:
        return f"{AT_TIMESTAMP}:{reset_to} (a reset to a time)"
    return f"after checkpoint {checkpoint.get('sequenceNumber')}"


def _log_checkpoint(shard: str, upto: Mapping[str, Any], records: int | None = None) -> None:
    with_writes = f" with the writes of {records} record(s)" if records is not None else ""
    if upto.get("shardEnd"):
        children = ", ".join(upto.get("childShardIds") or []) or "none"
        log.info("checkpoint %s: SHARD_END (children: %s)", shard, children)
    else:
        log.info("checkpoint %s at %s%s", shard, upto.get("sequenceNumber"), with_writes)


def _log_refused(refused: CommitFailed, shards: Iterable[TopicPartition]) -> None:
    """A refused commit is not an error of the loop (the shards moved, or a parent is not
    done yet: the next poll rejoins and the shards reopen at their checkpoints), but the user
    should see why their work will be read again."""
    code = refused.error.name if refused.error is not None else "?"
    names = ", ".join(f"{tp.topic}-{tp.partition}" for tp in shards)
    log.warning("commit of %s refused (%s): reopening from the checkpoint", names, code)


def _client_for(stream_arn: str) -> Any:
    """A client for the stream's region; dummy credentials on a loopback endpoint
    (AWS_ENDPOINT_URL_KINESIS) where the environment has none."""
    import boto3

    arguments, note = client_arguments("kinesis", region=stream_arn.split(":")[3])
    if note:
        log.info("%s", note)
    return boto3.client("kinesis", **arguments)


def _initial_position(topic: str, asked: StartAt | None, topics: StartAt | None) -> StartAt:
    """The argument if given, else the topic's, else TRIM_HORIZON (the topic config's default,
    for a coordinator that does not tell it)."""
    if asked is not None and topics is not None and asked != topics:
        log.warning(
            "KinesisConsumer(initial_position=%s) overrides topic %s's initial position %s",
            asked,
            topic,
            topics,
        )
    return asked or topics or StartAt()
