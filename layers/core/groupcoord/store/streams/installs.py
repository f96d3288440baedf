"""A streams group's target installs (service/streams/install.py), as the consumer protocol's:
the shared install lease (store/install_lease.py) over the streams group item and its members'
task targets."""

from __future__ import annotations

from typing import Any

from ...core.streams.group import StreamsGroup
from ...core.streams.member import StreamsGroupMember
from ..dynamo import Update
from ..install_lease import CHUNK, InstallLease
from .codec import group_from_item, group_update, tasks_to_item

__all__ = ["CHUNK", "StreamsInstalls"]


class StreamsInstalls(InstallLease[StreamsGroup, StreamsGroupMember]):
    def group_update(self, old: StreamsGroup, new: StreamsGroup) -> Update:
        return group_update(old, new, self.deadline_shards)

    def group_from_item(self, item: dict[str, Any]) -> StreamsGroup:
        return group_from_item(item)

    def target_values(self, member: StreamsGroupMember) -> tuple[Any, list[Any]]:
        return tasks_to_item(member.target), list(member.wait_on)
