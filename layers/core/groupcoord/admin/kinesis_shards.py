"""`groupcoord offsets show` for Kinesis-backed topics: what a KCL user reads in the lease
table, per shard: its id and parents, who owns it, its checkpoint (a sequence number, or
SHARD_END once the group finished it) and how far behind its owner said it was. A shard's
state says where it stands in the lineage: `done` (its end committed), `blocked` (a parent is
not done yet: not assignable), `closed` (split or merged, its tail still to read), `open`.
Standard library only, like the rest of the admin commands."""

from __future__ import annotations

import datetime
from collections.abc import Callable, Iterable
from typing import Any

from ..client.errors import GroupcoordError
from ..client.paging import metadata_all_pages

Call = Callable[[str, dict[str, Any]], dict[str, Any]]
Key = tuple[str, int]
# kafka-consumer-groups.sh's names where it has one (GROUP, TOPIC, PARTITION, CONSUMER-ID,
# HOST, CLIENT-ID), a lease table's for the rest.
COLUMNS = [
    *("GROUP", "TOPIC", "PARTITION", "SHARD-ID", "PARENTS", "STATE", "CHECKPOINT"),
    *("CONSUMER-ID", "HOST", "CLIENT-ID", "LAG-MS"),
]


def kinesis_shards(
    call: Call,
    group_call: Call,
    group: str,
    topics: Iterable[str],
    lags: dict[Key, int] | None = None,
) -> dict:
    """{(topic, partition): the shard's view} for every shard of those of `topics` that are
    Kinesis-backed (empty when none is). `lags`: the owners' reported lags when the caller
    has read them already (else describe-group-activity is asked)."""
    found = metadata_all_pages(call, [{"name": t} for t in sorted(set(topics))])
    shards = {
        (t["name"], p["partitionIndex"]): p["kinesisShard"]
        for t in found.get("topics", [])
        if t.get("kinesisStreamArn") and t.get("errorCode", 0) == 0
        for p in t.get("partitions", [])
        if p.get("kinesisShard")
    }
    if not shards:
        return {}
    positions = _positions(group_call, group, {t for t, _ in shards})
    lags = fetch_lags(group_call, group) if lags is None else lags
    known = {(t, shard["shardId"]) for (t, _), shard in shards.items()}
    ended = {
        (t, shards[(t, p)]["shardId"])
        for (t, p), at in positions.items()
        if (t, p) in shards and at.get("shardEnd")
    }
    views = {}
    for (topic, partition), shard in shards.items():
        at = positions.get((topic, partition))
        parents = shard.get("parentShardIds") or []
        # A parent not listed any more (expired) counts as done, as the coordinator counts it.
        left = [(topic, p) in known and (topic, p) not in ended for p in parents]
        views[(topic, partition)] = {
            "shardId": shard["shardId"],
            "parentShardIds": parents,
            "state": _state(shard, at, left),
            "kinesisPosition": at,
            "checkpoint": _checkpoint(at),
            "lagMs": lags.get((topic, partition)),
        }
    return views


def _state(shard: dict[str, Any], at: dict[str, Any] | None, parents_left: list[bool]) -> str:
    if at is not None and at.get("shardEnd"):
        return "done"
    if any(parents_left):
        return "blocked"  # a parent known here is not finished: not assignable yet
    return "closed" if shard.get("closed") else "open"


def _checkpoint(at: dict[str, Any] | None) -> str | None:
    if at is None:
        return None
    if at.get("shardEnd"):
        return "SHARD_END"
    if at.get("sequenceNumber") is None and at.get("atTimestampMs") is not None:
        return time_position_text(int(at["atTimestampMs"]))  # offsets reset --to-datetime
    return f"{at.get('sequenceNumber')}:{at.get('subSequenceNumber', 0)}"


def time_position_text(at_ms: int) -> str:
    """A reset to a time (offsets reset --to-datetime) as the tables show it:
    AT_TIMESTAMP:<UTC, to the millisecond>."""
    when = datetime.datetime.fromtimestamp(at_ms / 1000, datetime.UTC)
    return f"AT_TIMESTAMP:{when.isoformat(timespec='milliseconds').replace('+00:00', 'Z')}"


def _positions(group_call: Call, group: str, topics: set[str]) -> dict[Key, dict[str, Any]]:
    body = group_call("offset-fetch", {"groups": [{"groupId": group, "topics": None}]})
    return {
        (t["name"], p["partitionIndex"]): p["kinesisPosition"]
        for t in body["groups"][0].get("topics", [])
        if t["name"] in topics
        for p in t.get("partitions", [])
        if p.get("kinesisPosition")
    }


def fetch_lags(group_call: Call, group: str) -> dict[Key, int]:
    """The lags the owners last reported (describe-group-activity); none if it is refused."""
    try:
        body = group_call("describe-group-activity", {"groupIds": [group], "includeMembers": True})
    except GroupcoordError:  # not allowed, or an older coordinator: a view without lags
        return {}
    return reported_lags((body.get("groups") or [{}])[0])


def reported_lags(activity: dict[str, Any]) -> dict[Key, int]:
    """The lags of a describe-group-activity group (includeMembers), by partition."""
    return {
        (p["topicName"], p["partitionIndex"]): p["lagMs"]
        for p in activity.get("partitions", [])
        if p.get("lagMs") is not None
    }


def kinesis_row(group: str, key: Key, view: dict[str, Any], owner: dict[str, Any]) -> list[Any]:
    return [
        group,
        *key,
        view["shardId"],
        ",".join(view["parentShardIds"]),
        view["state"],
        view["checkpoint"],
        owner.get("memberId"),
        owner.get("host"),
        owner.get("clientId"),
        view["lagMs"],
    ]
