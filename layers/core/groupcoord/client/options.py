"""A GroupMember's options (client/member.py): what to subscribe to, which protocol, the
timeouts, how to reach the coordinator. Checked before anything is sent."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from .listener import RebalanceListener

PROTOCOLS = ("consumer", "classic")


@dataclass(frozen=True)
class MemberOptions:
    """GroupMember's keyword arguments, as one value (see GroupMember for their meaning)."""

    topics: tuple[str, ...] | None = None
    pattern: str | None = None
    protocol: str = "consumer"
    assignors: tuple[str, ...] = ("range",)
    server_assignor: str | None = None
    listener: RebalanceListener | None = field(default=None, compare=False)
    instance_id: str | None = None
    session_timeout_ms: int = 45000
    rebalance_timeout_ms: int = 300000
    heartbeat_interval_ms: int | None = None
    metadata_refresh_ms: int = 5000
    client_id: str = "groupcoord-client"
    request_timeout_s: float = 10.0
    sign: bool | None = None
    region: str | None = None
    # The push channel (docs/sessions.md, Push): used when the coordinator offers one. While
    # its socket is open, a consumer-protocol member heartbeats every
    # `push_heartbeat_interval_ms` (at most 3 of the coordinator's intervals), as a liveness
    # backup only: every change reaches it as a notice.
    push: bool = True
    push_heartbeat_interval_ms: int = 15000

    @classmethod
    def of(
        cls,
        *,
        topics: Iterable[str] | None = None,
        assignors: Iterable[str] = ("range",),
        **others: object,
    ) -> MemberOptions:
        """The options from GroupMember's keyword arguments, checked (ValueError says what is
        wrong); an unknown keyword is a TypeError, as for any function."""
        if isinstance(topics, str):
            raise ValueError("topics must be a list of names, not a string")
        options = cls(
            topics=tuple(sorted(set(topics))) if topics is not None else None,
            assignors=tuple(assignors),
            **others,  # type: ignore[arg-type]
        )
        options.check()
        return options

    def check(self) -> None:
        if (self.topics is None) == (self.pattern is None):
            raise ValueError("subscribe with exactly one of topics=[...] or pattern='...'")
        if self.protocol not in PROTOCOLS:
            raise ValueError("protocol must be 'consumer' or 'classic'")
