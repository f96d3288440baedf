"""Target installs' writes for consumer groups (service/consumer/install.py): the shared
install lease (store/install_lease.py) over the consumer group item and its members' targets."""

from __future__ import annotations

from ...core.consumer.member import ConsumerGroupMember
from ...core.consumer.model import ConsumerGroup
from ..codecs.consumer import CODEC
from ..install_lease import CHUNK, InstallLease

__all__ = ["CHUNK", "TargetInstalls"]


class TargetInstalls(InstallLease[ConsumerGroup, ConsumerGroupMember]):
    codec = CODEC
