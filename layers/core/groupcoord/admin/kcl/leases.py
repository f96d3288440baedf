"""KCL's lease table as data (pure): a lease item read into a `Lease`, a lease mapped to the
group's position in its shard, and a position written back as a lease a stopped KCL
application resumes from.

The schema is the same in KCL 1.x, 2.x and 3.x (DynamoDB items, hash key `leaseKey`):
`leaseKey` is the shard id, or `account:stream:creationEpoch:shardId` for a multi-stream
application (which also writes `streamName` and `shardId`); `leaseOwner` the worker holding it
(kept after the application stops); `leaseCounter` bumped at every renewal; `checkpoint` a
sequence number or one of the sentinels below; `checkpointSubSequenceNumber` the record's place
in a KPL aggregate; `parentShardId` a string set; `childShardIds` (2.x on) a string set, never
relied on here. A checkpoint means "processed up to and including this record", as a
groupcoord position does: nothing shifts by one. KCL 3.5 may keep its other entities (worker
metrics, leader lock, migration state, stream info) in the lease table too, each tagged by
`entityType`, and tags its leases `LEASE`; an item without the tag is a lease (as KCL reads it).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

TRIM_HORIZON = "TRIM_HORIZON"
LATEST = "LATEST"
AT_TIMESTAMP = "AT_TIMESTAMP"
SHARD_END = "SHARD_END"
STARTS = (TRIM_HORIZON, LATEST, AT_TIMESTAMP)  # no record processed yet
_SEQUENCE = re.compile(r"[0-9]{1,129}")
_SHARD_ID = re.compile(r"[A-Za-z0-9_.-]{1,128}")  # Kinesis' ShardId
_INT64_MAX = 2**63 - 1
ENTITY_TYPE = "entityType"  # KCL 3.5's tag of what an item of the lease table is
LEASE_ENTITY = "LEASE"

Item = dict[str, dict[str, Any]]  # a DynamoDB item in the low-level client's typed form


class LeaseFormatError(ValueError):
    """An item that is not a KCL lease KCL itself would read."""


@dataclass(frozen=True)
class Position:
    """A group's position in a shard: after the record (sequence, sub_sequence), or the end."""

    sequence: str | None = None
    sub_sequence: int = 0
    shard_end: bool = False
    # A reset to a time (offsets reset --to-datetime): no KCL checkpoint can hold it.
    timestamp_ms: int | None = None

    @classmethod
    def from_api(cls, raw: Mapping[str, Any] | None) -> Position | None:
        """offset-fetch's kinesisPosition (None: the group has no position)."""
        if not raw:
            return None
        if raw.get("shardEnd"):
            return cls(shard_end=True)
        if raw.get("sequenceNumber") is None and raw.get("atTimestampMs") is not None:
            return cls(timestamp_ms=int(raw["atTimestampMs"]))
        return cls(str(raw["sequenceNumber"]), int(raw.get("subSequenceNumber") or 0))

    def to_api(self, children: Iterable[str] = ()) -> dict[str, Any]:
        """offset-commit's kinesisPosition; a shard's end names its children where known."""
        if self.shard_end:
            named = sorted(children)
            return {"shardEnd": True, **({"childShardIds": named} if named else {})}
        return {"sequenceNumber": self.sequence, "subSequenceNumber": self.sub_sequence}

    def text(self) -> str:
        if self.shard_end:
            return SHARD_END
        if self.timestamp_ms is not None:
            return f"AT_TIMESTAMP:{self.timestamp_ms}"
        if self.sequence is not None and int(self.sequence) == 0:
            return TRIM_HORIZON  # sequence number 0: from the shard's first record
        return f"{self.sequence}:{self.sub_sequence}"


FIRST_RECORD = Position("0")  # Kinesis' sequence numbers are positive: before every record


@dataclass(frozen=True)
class Shard:
    """A partition of the Kinesis-backed topic (metadata's kinesisShard)."""

    partition: int
    shard_id: str
    parents: tuple[str, ...] = ()
    closed: bool = False
    hash_key_range: tuple[str, str] | None = None


@dataclass(frozen=True)
class Lease:
    key: str
    shard_id: str
    stream: str | None  # multi-stream: `account:stream:creationEpoch`; None single-stream
    owner: str | None
    counter: int
    checkpoint: str
    sub_sequence: int
    parents: tuple[str, ...]

    def position(self) -> Position | None:
        """The group's position this checkpoint stands for. TRIM_HORIZON is sequence number
        0, the shard's first record (what `offsets reset --to-sequence 0` stores), whatever
        the topic's initial position; LATEST and AT_TIMESTAMP (KCL's initial position, on a
        shard it never read) none: the topic's initial position applies."""
        if self.checkpoint == SHARD_END:
            return Position(shard_end=True)
        if self.checkpoint == TRIM_HORIZON:
            return FIRST_RECORD
        if self.checkpoint in STARTS:
            return None
        return Position(self.checkpoint, self.sub_sequence)


def is_lease(item: Item) -> bool:
    """Whether KCL reads the item as a lease: untagged, or tagged `LEASE` (DynamoDBLeaseSerializer's
    rule); a single-table KCL 3.5 application's worker metrics, leader lock, migration state and
    stream info share its lease table under other tags."""
    tag = item.get(ENTITY_TYPE, {}).get("S")
    return tag is None or tag == LEASE_ENTITY


def parse_leases(items: Iterable[Item]) -> list[Lease]:
    """The leases among a lease table's items (`is_lease`), each `parse_lease`d."""
    return [parse_lease(item) for item in items if is_lease(item)]


def parse_lease(item: Item) -> Lease:
    """A lease item of any KCL version; LeaseFormatError for one KCL would not read."""
    key = _string(item, "leaseKey")
    if key is None:
        raise LeaseFormatError("an item without a string leaseKey")
    checkpoint = _string(item, "checkpoint")
    if checkpoint is None or not (
        checkpoint in (*STARTS, SHARD_END) or _SEQUENCE.fullmatch(checkpoint)
    ):
        raise LeaseFormatError(
            f"lease {key}: checkpoint {checkpoint!r} is not a sequence number or a sentinel"
        )
    sub_sequence = _number(item, key, "checkpointSubSequenceNumber")
    stream, shard_id = _stream_and_shard(item, key)
    parents = tuple(sorted(item.get("parentShardId", {}).get("SS", [])))
    if not all(isinstance(s, str) and _SHARD_ID.fullmatch(s) for s in (shard_id, *parents)):
        raise LeaseFormatError(f"lease {key}: a shard id that is not Kinesis'")
    return Lease(
        key=key,
        shard_id=shard_id,
        stream=stream,
        owner=_string(item, "leaseOwner"),
        counter=_number(item, key, "leaseCounter"),
        checkpoint=checkpoint,
        sub_sequence=sub_sequence,
        parents=parents,
    )


def _string(item: Item, name: str) -> str | None:
    value = item.get(name, {}).get("S")
    return value if isinstance(value, str) and value else None


def _number(item: Item, key: str, name: str) -> int:
    raw = item.get(name, {}).get("N", "0")
    try:
        value = int(raw)
    except (TypeError, ValueError):
        raise LeaseFormatError(f"lease {key}: {name} {raw!r} is not an integer") from None
    if not 0 <= value <= _INT64_MAX:
        raise LeaseFormatError(f"lease {key}: {name} {value} is out of range")
    return value


def _stream_and_shard(item: Item, key: str) -> tuple[str | None, str]:
    """A multi-stream lease's stream identifier and shard id (its `streamName` and `shardId`
    attributes, else its key's parts); a single-stream lease's key is its shard id."""
    shard_id, stream = _string(item, "shardId"), _string(item, "streamName")
    if shard_id and stream:
        return stream, shard_id
    parts = key.split(":")
    if len(parts) == 4:
        return ":".join(parts[:3]), parts[3]
    if len(parts) != 1:
        raise LeaseFormatError(f"lease {key}: neither a shard id nor account:stream:epoch:shard")
    return None, key


def stream_of_arn(arn: str) -> tuple[str, str]:
    """(account, stream name) of `arn:aws:kinesis:REGION:ACCOUNT:stream/NAME`."""
    fields = arn.split(":", 5)
    if len(fields) != 6 or not fields[5].startswith("stream/"):
        raise ValueError(f"not a Kinesis stream ARN: {arn}")
    return fields[4], fields[5].removeprefix("stream/")


def leases_of_stream(leases: Iterable[Lease], arn: str) -> tuple[list[Lease], str | None]:
    """The leases of the topic's stream and the stream identifier they share (None for a
    single-stream table). A multi-stream table's leases of other streams are not the
    topic's; two incarnations of the stream (deleted and created again: the same shard ids,
    other records) cannot be told apart by shard id: ValueError."""
    account, name = stream_of_arn(arn)
    mine, identifiers = [], set()
    for lease in leases:
        if lease.stream is None:
            mine.append(lease)
        elif lease.stream.split(":")[:2] == [account, name]:
            mine.append(lease)
            identifiers.add(lease.stream)
    if len(identifiers) > 1:
        raise ValueError(
            f"leases of {len(identifiers)} incarnations of stream {name} "
            f"({', '.join(sorted(identifiers))}): delete the old one's leases first"
        )
    if identifiers and any(lease.stream is None for lease in mine):
        raise ValueError("the table mixes single-stream and multi-stream leases")
    return mine, next(iter(identifiers), None)


def moved_leases(before: Iterable[Lease], after: Iterable[Lease]) -> list[Lease]:
    """The leases whose leaseCounter moved between two reads, or that came or went: a live
    worker renews (or takes) its leases well within the failover time. A stopped
    application's leases still name their owners, so owners prove nothing."""
    earlier = {lease.key: lease.counter for lease in before}
    later = {lease.key: lease for lease in after}
    moved = [lease for key, lease in later.items() if earlier.get(key) != lease.counter]
    gone = [key for key in earlier if key not in later]
    return moved + [Lease(key, key, None, None, -1, TRIM_HORIZON, 0, ()) for key in gone]


def lineage(shards: Iterable[Shard], leases: Iterable[Lease] = ()) -> dict[str, tuple[str, ...]]:
    """Each shard's parents: the topic's, and a lease's `parentShardId` for a shard the topic
    does not list yet (a reshard the coordinator has not synced)."""
    parents = {shard.shard_id: shard.parents for shard in shards}
    for lease in leases:
        parents.setdefault(lease.shard_id, lease.parents)
    return parents


def descendants(parents: Mapping[str, tuple[str, ...]], of: Iterable[str]) -> set[str]:
    """Every shard below the shards `of` (`parents`: `lineage`)."""
    return _reached(children_of(parents), of)


def finished_ancestors(
    parents: Mapping[str, tuple[str, ...]], progressed: Iterable[str]
) -> set[str]:
    """Every ancestor of the `progressed` shards (`parents`: `lineage`): a shard is started
    only once its parents are finished (KCL and groupcoord alike), so all of these were read
    to their end."""
    return _reached(parents, progressed)


def _reached(edges: Mapping[str, Iterable[str]], start: Iterable[str]) -> set[str]:
    """The shards reached from `start` along `edges` in one step or more."""
    found: set[str] = set()
    stack = [n for shard_id in start for n in edges.get(shard_id, ())]
    while stack:
        shard_id = stack.pop()
        if shard_id not in found:
            found.add(shard_id)
            stack.extend(edges.get(shard_id, ()))
    return found


def children_of(parents: Mapping[str, tuple[str, ...]]) -> dict[str, list[str]]:
    """Each parent's children (`parents`: `lineage`)."""
    found: dict[str, list[str]] = {}
    for shard_id, of in parents.items():
        for parent in of:
            found.setdefault(parent, []).append(shard_id)
    return found


@dataclass(frozen=True)
class ImportStep:
    """What the import does to one shard's position: `target` None leaves none."""

    shard: Shard
    lease: Lease | None
    target: Position | None
    why: str
    children: tuple[str, ...] = ()  # at a shard's end: its children, to name in the commit


def plan_import(shards: Iterable[Shard], leases: Iterable[Lease]) -> list[ImportStep]:
    """The position each of the topic's shards takes from the lease table. A leased shard
    takes its checkpoint (Lease.position). A shard without a lease above a leased one was
    finished: KCL deletes a parent's lease once its children run, and starts a shard whose
    parent lease is missing. One below a leased shard is read from its first record, as KCL
    creates its lease at TRIM_HORIZON once it gets there (explicit: a LATEST or AT_TIMESTAMP
    group would count a shard closed before the import as behind its start). Any other
    shard keeps no position (the topic's initial position applies). A shard's end names its
    children, the leases' too: the coordinator then learns a reshard it has not synced."""
    shards = sorted(shards, key=lambda s: s.partition)
    leases = list(leases)
    by_shard = {lease.shard_id: lease for lease in leases}
    parents = lineage(shards, leases)
    finished = finished_ancestors(parents, by_shard)
    below = descendants(parents, by_shard)
    children = children_of(parents)
    steps = []
    for shard in shards:
        lease = by_shard.get(shard.shard_id)
        if lease is not None:
            target = lease.position()
            sub = f":{lease.sub_sequence}" if lease.checkpoint[0].isdigit() else ""
            why = f"lease {lease.checkpoint}{sub}"
        elif shard.shard_id in finished:
            target, why = Position(shard_end=True), "no lease, above a leased shard"
        elif shard.shard_id in below:
            target, why = FIRST_RECORD, "no lease, below a leased shard"
        else:
            target, why = None, "no lease"
        ended = target is not None and target.shard_end
        named = tuple(sorted(children.get(shard.shard_id, ()))) if ended else ()
        steps.append(ImportStep(shard, lease, target, why, named))
    return steps


def unknown_leases(shards: Iterable[Shard], leases: Iterable[Lease]) -> list[Lease]:
    """Leases of shards the topic does not list (expired before the binding saw them)."""
    known = {shard.shard_id for shard in shards}
    return [lease for lease in leases if lease.shard_id not in known]


def export_checkpoint(
    shard: Shard, position: Position | None, finished: set[str]
) -> tuple[str, int]:
    """The (checkpoint, checkpointSubSequenceNumber) KCL resumes the shard from: SHARD_END for
    a shard the group finished (its end committed, or an ancestor of where it got to),
    TRIM_HORIZON where it has no position (or `--to-sequence 0`'s first record)."""
    if (position is not None and position.shard_end) or shard.shard_id in finished:
        return SHARD_END, 0
    if position is None or int(position.sequence or "0") == 0:
        return TRIM_HORIZON, 0
    assert position.sequence is not None
    return position.sequence, position.sub_sequence


def written_already(item: Item, before: Lease | None) -> bool:
    """Whether the table's lease `before` already resumes KCL where `item` would: unowned, the
    same checkpoint and parents. An export run again then changes nothing (not even the
    leaseCounter, which a rewrite moves past the lease it replaces)."""
    return (
        before is not None
        and before.owner is None
        and before.checkpoint == item["checkpoint"]["S"]
        and before.sub_sequence == int(item["checkpointSubSequenceNumber"]["N"])
        and before.parents == tuple(sorted(item.get("parentShardId", {}).get("SS", [])))
    )


def export_items(
    shards: Iterable[Shard],
    positions: Mapping[str, Position],
    assignable: Iterable[str],
    existing: Mapping[str, Lease],
    stream: str | None,
) -> list[Item]:
    """One lease per shard, closed parents included, unowned (a starting KCL worker takes it
    at once), its leaseCounter past the lease it replaces. `assignable`: the shards the
    coordinator would hand the group now (their ancestors are finished); `stream`: the
    multi-stream identifier to key the leases by (None: single-stream keys)."""
    shards = list(shards)
    parents = lineage(shards)
    finished = finished_ancestors(parents, [*positions, *assignable])
    children = children_of(parents)
    items = []
    for shard in sorted(shards, key=lambda s: s.partition):
        checkpoint, sub_sequence = export_checkpoint(shard, positions.get(shard.shard_id), finished)
        before = existing.get(shard.shard_id)
        item: Item = {
            "leaseKey": {"S": f"{stream}:{shard.shard_id}" if stream else shard.shard_id},
            "leaseCounter": {"N": str(before.counter + 1 if before else 1)},
            "ownerSwitchesSinceCheckpoint": {"N": "0"},
            "checkpoint": {"S": checkpoint},
            "checkpointSubSequenceNumber": {"N": str(sub_sequence)},
            ENTITY_TYPE: {"S": LEASE_ENTITY},  # as KCL 3.5 writes; earlier versions ignore it
        }
        if shard.parents:
            item["parentShardId"] = {"SS": list(shard.parents)}
        if checkpoint == SHARD_END and children.get(shard.shard_id):
            item["childShardIds"] = {"SS": children[shard.shard_id]}
        if shard.hash_key_range is not None:
            item["startingHashKey"] = {"S": shard.hash_key_range[0]}
            item["endingHashKey"] = {"S": shard.hash_key_range[1]}
        if stream:
            item["streamName"] = {"S": stream}
            item["shardId"] = {"S": shard.shard_id}
        items.append(item)
    return items
