"""Kafka's ConsumerProtocol binary encoding (classic groups with protocolType "consumer").

Subscription v0-v3 (topics, userData, ownedPartitions, generationId, rackId) and Assignment
v0-v3 (assignedPartitions, userData), non-flexible encoding: big-endian ints, int16-length
strings, int32-length arrays and bytes (-1 = null). Later versions are read as v3, as Kafka
does: fields it does not know are ignored.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field


class ConsumerProtocolError(ValueError):
    pass


@dataclass(frozen=True)
class Subscription:
    topics: list[str]
    user_data: bytes | None = None
    owned_partitions: dict[str, list[int]] = field(default_factory=dict)
    generation_id: int = -1
    rack_id: str | None = None
    version: int = 0
    # Not on the wire: the member's groupInstanceId from the join response, which the leader
    # adds so that range and roundrobin order static members by it (as Kafka's Subscription).
    group_instance_id: str | None = None


@dataclass(frozen=True)
class Assignment:
    partitions: dict[str, list[int]]
    user_data: bytes | None = None
    version: int = 0


class _Reader:
    def __init__(self, data: bytes) -> None:
        self.data = data
        self.pos = 0

    def _take(self, size: int) -> bytes:
        if size < 0 or self.pos + size > len(self.data):
            raise ConsumerProtocolError("truncated ConsumerProtocol data")
        chunk = self.data[self.pos : self.pos + size]
        self.pos += size
        return chunk

    def int16(self) -> int:
        return struct.unpack(">h", self._take(2))[0]

    def int32(self) -> int:
        return struct.unpack(">i", self._take(4))[0]

    def string(self) -> str:
        size = self.int16()
        if size < 0:
            raise ConsumerProtocolError("null string where a string is required")
        return self._take(size).decode("utf-8")

    def nullable_string(self) -> str | None:
        size = self.int16()
        return None if size < 0 else self._take(size).decode("utf-8")

    def nullable_bytes(self) -> bytes | None:
        size = self.int32()
        return None if size < 0 else self._take(size)

    def array_length(self) -> int:
        size = self.int32()
        if size < 0:
            return 0
        if size > len(self.data):  # every element takes at least a byte
            raise ConsumerProtocolError("array longer than the data")
        return size

    def topic_partitions(self) -> dict[str, list[int]]:
        result: dict[str, list[int]] = {}
        for _ in range(self.array_length()):
            topic = self.string()
            result.setdefault(topic, []).extend(self.int32() for _ in range(self.array_length()))
        return result

    @property
    def at_end(self) -> bool:
        return self.pos >= len(self.data)


def decode_subscription(data: bytes) -> Subscription:
    reader = _Reader(data)
    version = reader.int16()
    if version < 0:
        raise ConsumerProtocolError(f"negative Subscription version {version}")
    topics = [reader.string() for _ in range(reader.array_length())]
    user_data = reader.nullable_bytes()
    owned: dict[str, list[int]] = {}
    generation_id, rack_id = -1, None
    if version >= 1 and not reader.at_end:
        owned = reader.topic_partitions()
    if version >= 2 and not reader.at_end:
        generation_id = reader.int32()
    if version >= 3 and not reader.at_end:
        rack_id = reader.nullable_string()
    return Subscription(topics, user_data, owned, generation_id, rack_id, version)


def decode_assignment(data: bytes) -> Assignment:
    if not data:
        return Assignment({})
    reader = _Reader(data)
    version = reader.int16()
    if version < 0:
        raise ConsumerProtocolError(f"negative Assignment version {version}")
    partitions = reader.topic_partitions()
    user_data = reader.nullable_bytes()
    return Assignment(partitions, user_data, version)


def _string(value: str) -> bytes:
    raw = value.encode("utf-8")
    return struct.pack(">h", len(raw)) + raw


def _nullable_bytes(value: bytes | None) -> bytes:
    return struct.pack(">i", -1) if value is None else struct.pack(">i", len(value)) + value


def _topic_partitions(value: dict[str, list[int]]) -> bytes:
    out = struct.pack(">i", len(value))
    for topic, partitions in sorted(value.items()):
        out += _string(topic) + struct.pack(f">i{len(partitions)}i", len(partitions), *partitions)
    return out


def encode_subscription(sub: Subscription) -> bytes:
    out = struct.pack(">h", sub.version) + struct.pack(">i", len(sub.topics))
    out += b"".join(_string(t) for t in sub.topics) + _nullable_bytes(sub.user_data)
    if sub.version >= 1:
        out += _topic_partitions(sub.owned_partitions)
    if sub.version >= 2:
        out += struct.pack(">i", sub.generation_id)
    if sub.version >= 3:
        rack = sub.rack_id
        out += struct.pack(">h", -1) if rack is None else _string(rack)
    return out


def encode_assignment(assignment: Assignment) -> bytes:
    return (
        struct.pack(">h", assignment.version)
        + _topic_partitions(assignment.partitions)
        + _nullable_bytes(assignment.user_data)
    )
