"""Item writes a store hands a service to apply with a group update, in its one transaction
(MemberGroupStore.update_group): built by the store's named operations (a member put, a
member's removal, a static takeover's hand-over, a claim), never cut or read by the service."""

from __future__ import annotations

from dataclasses import dataclass

from .dynamo import TransactItem


@dataclass(frozen=True)
class Writes:
    items: tuple[TransactItem, ...] = ()

    def __add__(self, other: Writes) -> Writes:
        return Writes(self.items + other.items)

    def __bool__(self) -> bool:
        return bool(self.items)


NO_WRITES = Writes()


def joined(parts: list[Writes]) -> Writes:
    """`parts` in one value, in order."""
    return Writes(tuple(item for part in parts for item in part.items))
