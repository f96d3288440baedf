"""The dashboard's view of one coordinator: the APIs it calls, over the client's transport.

Only this process talks to the coordinator, signing with the user's AWS credentials when the
API needs IAM auth (client/sigv4.py); the browser talks to this process alone.

Calls are cached for a short while per question, so that any number of open tabs cost the
coordinator (and DynamoDB) what one does, and each watched group's timeline is fed from its
detailed reads.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..admin.kinesis_shards import kinesis_shards, reported_lags
from ..client.local_aws import is_loopback
from ..client.paging import list_groups_all_pages
from ..client.transport import Transport
from .timeline import Snapshot, Timeline

# describe-group-activity's bound on the groups one summary request names.
SUMMARY_BATCH = 100
# The overview shows (and reads summaries of) at most this many groups, after the search.
OVERVIEW_MAX_GROUPS = 200
# Timelines kept: the groups most recently watched.
TIMELINES_MAX = 100


@dataclass
class GroupDetail:
    group: dict[str, Any]
    now_ms: int
    timeline: Timeline
    # Kinesis-backed topics' shards: {(topic, partition): admin/kinesis_shards.py's view}.
    shards: dict[tuple[str, int], dict[str, Any]] = field(default_factory=dict)


@dataclass
class Overview:
    groups: list[dict[str, Any]]
    total: int  # groups matching the search, shown or not
    now_ms: int


@dataclass
class _Cached:
    at: float
    value: Any


@dataclass
class CoordinatorSource:
    """What the dashboard pages show, read from the coordinator at `endpoint`."""

    transport: Transport
    # How long an answer is reused: the pages poll at about this pace.
    detail_ttl_s: float = 2.0
    overview_ttl_s: float = 5.0
    clock: Callable[[], float] = time.monotonic
    calls: int = 0  # coordinator calls made (the tests and docs/dashboard.md count them)
    _cache: dict[tuple[str, str], _Cached] = field(default_factory=dict)
    _timelines: OrderedDict[str, Timeline] = field(default_factory=OrderedDict)
    # Whether each topic seen is Kinesis-backed (a topic keeps its binding for its life):
    # learned once, so a group without one costs no more calls per refresh.
    _streams: dict[str, bool] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @classmethod
    def connect(
        cls, endpoint: str, *, sign: bool | None = None, region: str | None = None, **kw: Any
    ) -> CoordinatorSource:
        """`sign` None: sign unless the endpoint is a loopback address (a local `serve`)."""
        transport = Transport(
            endpoint,
            client_id="groupcoord-dashboard",
            timeout_s=5.0,
            retries=2,
            sign=not is_loopback(endpoint) if sign is None else sign,
            region=region,
        )
        return cls(transport, **kw)

    @property
    def endpoint(self) -> str:
        return self.transport.base_url

    def _call(self, api: str, body: dict[str, Any]) -> dict[str, Any]:
        self.calls += 1
        return self.transport.call(api, body).body

    def _cached(self, key: tuple[str, str], ttl_s: float, read: Callable[[], Any]) -> Any:
        # One reader at a time: tabs polling together share one coordinator call.
        with self._lock:
            hit = self._cache.get(key)
            if hit is not None and self.clock() - hit.at < ttl_s:
                return hit.value
            value = read()
            self._cache[key] = _Cached(self.clock(), value)
            if len(self._cache) > 4 * TIMELINES_MAX:  # bounded: drop the oldest answers
                for old in sorted(self._cache, key=lambda k: self._cache[k].at)[:TIMELINES_MAX]:
                    del self._cache[old]
            return value

    # --- the overview ---

    def overview(self, search: str = "") -> Overview:
        return self._cached(
            ("overview", search), self.overview_ttl_s, lambda: self._overview(search)
        )

    def _overview(self, search: str) -> Overview:
        listed = list_groups_all_pages(self._call)
        needle = search.strip().lower()
        matching = [g for g in listed.get("groups") or () if needle in g["groupId"].lower()]
        shown = matching[:OVERVIEW_MAX_GROUPS]
        summaries: dict[str, dict[str, Any]] = {}
        now_ms = 0
        for start in range(0, len(shown), SUMMARY_BATCH):
            ids = [g["groupId"] for g in shown[start : start + SUMMARY_BATCH]]
            answer = self._call("describe-group-activity", {"groupIds": ids})
            now_ms = answer.get("nowMs", now_ms)
            summaries.update({g["groupId"]: g for g in answer.get("groups") or ()})
        groups = [{**g, **summaries.get(g["groupId"], {})} for g in shown]
        return Overview(groups=groups, total=len(matching), now_ms=now_ms)

    # --- one group ---

    def group(self, group_id: str) -> GroupDetail:
        return self._cached(("group", group_id), self.detail_ttl_s, lambda: self._group(group_id))

    def _group(self, group_id: str) -> GroupDetail:
        answer = self._call(
            "describe-group-activity", {"groupIds": [group_id], "includeMembers": True}
        )
        (group,) = answer.get("groups") or [{"groupId": group_id, "errorCode": -1}]
        now_ms = int(answer.get("nowMs", 0))
        timeline = self._timeline(group_id)
        shards: dict[tuple[str, int], dict[str, Any]] = {}
        if group.get("errorCode", 0) == 0:
            timeline.observe(Snapshot.of(group, now_ms))
            shards = self._kinesis_shards(group_id, group)
        return GroupDetail(group=group, now_ms=now_ms, timeline=timeline, shards=shards)

    def _kinesis_shards(self, group_id: str, group: dict[str, Any]) -> dict:
        """The shards of the group's Kinesis-backed topics, with lineage and checkpoints
        (admin/kinesis_shards.py, as `groupcoord offsets show` lists them)."""
        names = {p.get("topicName") for p in group.get("partitions") or ()} - {None, ""}
        unknown = sorted(names - self._streams.keys())
        if unknown:
            body = {"topics": [{"name": n} for n in unknown], "responsePartitionLimit": 1}
            for topic in self._call("metadata", body).get("topics") or ():
                self._streams[topic["name"]] = bool(topic.get("kinesisStreamArn"))
            if len(self._streams) > 4 * TIMELINES_MAX:  # bounded: forget, learn again
                self._streams.clear()
        streams = [n for n in names if self._streams.get(n)]
        if not streams:
            return {}
        return kinesis_shards(self._call, self._call, group_id, streams, lags=reported_lags(group))

    def _timeline(self, group_id: str) -> Timeline:
        timeline = self._timelines.pop(group_id, None) or Timeline()
        self._timelines[group_id] = timeline  # most recently watched last
        while len(self._timelines) > TIMELINES_MAX:
            self._timelines.popitem(last=False)
        return timeline
