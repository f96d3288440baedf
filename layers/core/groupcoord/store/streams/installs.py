"""A streams group's target installs (service/streams/install.py), as the consumer protocol's:
the shared install lease (store/install_lease.py) over the streams group item and its members'
task targets."""

from __future__ import annotations

from ...core.streams.group import StreamsGroup
from ...core.streams.member import StreamsGroupMember
from ..codecs.streams import CODEC
from ..install_lease import CHUNK, InstallLease

__all__ = ["CHUNK", "StreamsInstalls"]


class StreamsInstalls(InstallLease[StreamsGroup, StreamsGroupMember]):
    codec = CODEC
