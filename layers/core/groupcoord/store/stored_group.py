"""A group item as a read hands it to the services: typed, never a dict. Its header says what
any code may know of a group of any type (its type, members, deadline, topics); its type's
model is decoded on demand (`classic()`, `consumer()`, `streams()`), so a read that only
routes on the type decodes nothing. The item itself stays the store's (`raw`: only store/
reads it, to write over the version read)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..core.classic.model import ClassicGroup
from ..core.consumer.model import ConsumerGroup
from ..core.streams.group import StreamsGroup
from .codecs.classic import group_from_item as classic_group
from .codecs.consumer import group_from_item as consumer_group
from .codecs.streams import group_from_item as streams_group
from .groups import GroupHeader, header


@dataclass(frozen=True)
class StoredGroup:
    header: GroupHeader
    version: int
    raw: dict[str, Any] = field(repr=False, compare=False)

    @property
    def group_id(self) -> str:
        return self.header.group_id

    @property
    def group_type(self) -> str:
        return self.header.group_type

    def classic(self) -> ClassicGroup:
        return classic_group(self.raw)

    def consumer(self) -> ConsumerGroup:
        return consumer_group(self.raw)

    def streams(self) -> StreamsGroup:
        return streams_group(self.raw)


def stored(item: dict[str, Any] | None) -> StoredGroup | None:
    """The typed view of a group item as read (None: no group)."""
    if item is None:
        return None
    return StoredGroup(header(item), int(item.get("version", 0)), item)
