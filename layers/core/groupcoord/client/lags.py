"""What a heartbeat carries of the lags a member reported (GroupMember.report_lags): every
owned partition's, as `partitionLags` by topic id, only when they changed since the last
answered heartbeat (or on a full heartbeat); the coordinator keeps the last report."""

from __future__ import annotations

from collections.abc import Callable, Mapping

from .assignors import TopicPartition


class LagReports:
    def __init__(self, topic_id: Callable[[str], str | None]) -> None:
        self.topic_id = topic_id
        self._sent: dict[TopicPartition, int] | None = None

    def body(
        self, lags: Mapping[TopicPartition, int], owned: set[TopicPartition], full: bool
    ) -> tuple[list[dict] | None, dict[TopicPartition, int]]:
        """The `partitionLags` to send (None: unchanged) and the lags it stands for."""
        mine = {tp: ms for tp, ms in lags.items() if tp in owned}
        if not mine or (not full and mine == self._sent):
            return None, mine
        by_topic: dict[str, list[dict]] = {}
        for tp, ms in sorted(mine.items()):
            tid = self.topic_id(tp.topic)
            if tid is not None:
                by_topic.setdefault(tid, []).append({"partition": tp.partition, "lagMs": ms})
        entries = [{"topicId": tid, "partitions": ps} for tid, ps in sorted(by_topic.items())]
        return entries, mine

    def answered(self, sent: dict[TopicPartition, int]) -> None:
        """The coordinator answered a heartbeat that carried `sent`."""
        self._sent = dict(sent)

    def reset(self) -> None:
        self._sent = None
