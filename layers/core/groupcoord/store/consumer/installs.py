"""Target installs' writes for consumer groups (service/consumer/install.py): the shared
install lease (store/install_lease.py) over the consumer group item and its members' targets."""

from __future__ import annotations

from typing import Any

from ...core.consumer.assignment import to_item
from ...core.consumer.member import ConsumerGroupMember
from ...core.consumer.model import ConsumerGroup
from ..dynamo import Update
from ..install_lease import CHUNK, InstallLease
from .codec import group_from_item, group_update

__all__ = ["CHUNK", "TargetInstalls"]


class TargetInstalls(InstallLease[ConsumerGroup, ConsumerGroupMember]):
    def group_update(self, old: ConsumerGroup, new: ConsumerGroup) -> Update:
        return group_update(old, new, self.deadline_shards)

    def group_from_item(self, item: dict[str, Any]) -> ConsumerGroup:
        return group_from_item(item)

    def target_values(self, member: ConsumerGroupMember) -> tuple[Any, list[Any]]:
        return to_item(member.target), [[h.member_id, h.instance_id or ""] for h in member.wait_on]
