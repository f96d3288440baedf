"""KinesisConsumer loops run by a test: a consumer on its own thread noting the records handed
to it (and counting its GetRecords calls), and records put on a shard of kinesis-local."""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable
from typing import Any

import boto3

from groupcoord.client import TopicPartition
from groupcoord.client.kinesis import KinesisConsumer, KinesisRecord
from tests.support.api import Api
from tests.support.kinesis import REGION, Streams


class Running:
    """A KinesisConsumer on its own thread (and its own boto3 client, whose GetRecords calls
    it counts), noting the records handed to it."""

    def __init__(self, api: Api, group: str, topic: str, endpoint: str, **options: Any) -> None:
        self.kinesis: Any = boto3.client("kinesis", endpoint_url=endpoint, region_name=REGION)
        self.get_records = 0
        self.kinesis.meta.events.register("provide-client-params.kinesis.GetRecords", self._count)
        self.records: list[KinesisRecord] = []
        self.lock = threading.Lock()
        self.failures: list[BaseException] = []
        self.stop = threading.Event()
        self.consumer = KinesisConsumer(
            api.base_url, group, topic, self._handle, kinesis=self.kinesis, **options
        )
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _count(self, **_: Any) -> None:
        self.get_records += 1

    def _handle(self, tp: TopicPartition, records: list[KinesisRecord]) -> None:
        with self.lock:
            self.records.extend(records)

    def _run(self) -> None:
        try:
            self.consumer.run(self.stop)
        except BaseException as error:  # shown by the test, not lost on the thread
            self.failures.append(error)

    def data(self) -> list[str]:
        with self.lock:
            return [r.data.decode() for r in self.records]

    def owned(self) -> set[int]:
        return {tp.partition for tp in self.consumer.member.assignment()}

    def until(self, condition: Callable[[], Any], what: str, timeout_s: float = 60.0) -> None:
        deadline = time.monotonic() + timeout_s
        while not condition():
            assert not self.failures, self.failures
            assert time.monotonic() < deadline, f"timed out waiting for {what}"
            time.sleep(0.05)

    def close(self) -> None:
        self.stop.set()
        self.thread.join(timeout=30)
        assert not self.thread.is_alive()
        assert not self.failures, self.failures


def group_name() -> str:
    return f"g-{uuid.uuid4().hex[:8]}"


def put(streams: Streams, arn: str, *data: str, hash_key: str | None = None) -> list[str]:
    """Put the records (on the shard of `hash_key`, if given); their sequence numbers."""
    where = {"ExplicitHashKey": hash_key} if hash_key is not None else {}
    return [
        streams.client.put_record(StreamARN=arn, PartitionKey="k", Data=d.encode(), **where)[
            "SequenceNumber"
        ]
        for d in data
    ]
