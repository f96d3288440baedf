"""The ACL set: every ACL binding as one item, and one version item a cache polls.

A function instance keeps the whole set in memory and polls `version()` (one eventually
consistent read of a small item); it reloads the set with `load()` only when the version moved
past the one of its snapshot. For that to be safe, every write of bindings bumps the version
in the same transaction as the items it writes, and `load()` reads the version before the
items:

- no binding is written or deleted without its bump committing with it, so a crash between
  two chunks of a large create or delete leaves every chunk written so far announced;
- a change committed before `load()` read the version is in the items it reads next; one
  committed after has a higher version than the snapshot's, so the next `version()` that sees
  it (eventually consistent reads converge within a second or so) makes the cache reload. A
  snapshot may hold part of a newer change under an older version (a Query is not isolated
  from a transaction), never the other way round: a stale set is never cached for good.

The version item also counts the bindings (`aclCount`), maintained in the same transactions,
so `create` can refuse past `MAX_ACLS` without reading the set. The key layout is in
schema.py ("ACLs").
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from ..core.acls import AclBinding, AclOperation, PatternType, PermissionType, ResourceType
from ..retries import TryAgain, retry
from . import schema
from .dynamo import Delete, Dynamo, Item, Put, TransactionCanceled, Update
from .errors import Conflict

# How many bindings the table may hold in all: a full load stays a few MB, and an authorizer
# built from it stays small.
MAX_ACLS = 10_000
# A transaction holds at most 100 items: the bindings of one chunk and the version item.
_CHUNK = 99
# Attempts at one chunk whose condition lost to a concurrent create or delete of the same
# bindings; each loss means one of them changed, so a few attempts settle it.
_ATTEMPTS = 5

_VERSION = "version"
_COUNT = "aclCount"


class AclLimitReached(Exception):
    """`create` would take the set past its limit. Nothing of the refused chunk was written;
    `created` holds the bindings of earlier chunks of the same call that were (none unless a
    concurrent create filled the set between the call's check and its writes)."""

    def __init__(self, limit: int, created: Sequence[AclBinding] = ()) -> None:
        super().__init__(f"the ACL set holds at most {limit} bindings")
        self.limit = limit
        self.created = tuple(created)


@dataclass(frozen=True)
class AclSnapshot:
    """Every binding, and the version read before them (see the module docstring)."""

    version: int
    bindings: tuple[AclBinding, ...]


def _key(binding: AclBinding) -> Item:
    return schema.acl_key(
        resource_type=binding.resource_type,
        resource_name=binding.resource_name,
        pattern_type=binding.pattern_type,
        principal=binding.principal,
        host=binding.host,
        operation=binding.operation,
        permission=binding.permission,
    )


def _item(binding: AclBinding) -> Item:
    return {
        **_key(binding),
        "kind": schema.KIND_ACL,
        "resourceType": int(binding.resource_type),
        "resourceName": binding.resource_name,
        "patternType": int(binding.pattern_type),
        "principal": binding.principal,
        "host": binding.host,
        "operation": int(binding.operation),
        "permission": int(binding.permission),
    }


def _binding(item: Item) -> AclBinding:
    return AclBinding(
        resource_type=ResourceType.from_code(int(item["resourceType"])),
        resource_name=item["resourceName"],
        pattern_type=PatternType.from_code(int(item["patternType"])),
        principal=item["principal"],
        host=item["host"],
        operation=AclOperation.from_code(int(item["operation"])),
        permission=PermissionType.from_code(int(item["permission"])),
    )


def _identity(key: Item) -> tuple[str, str]:
    return key[schema.PK], key[schema.SK]


class AclStore:
    def __init__(self, dynamo: Dynamo, *, max_acls: int = MAX_ACLS) -> None:
        self.dynamo = dynamo
        self.max_acls = max_acls

    # --- reads ---

    def version(self) -> int:
        """The set's version (0: never written), eventually consistent: cheap enough to poll."""
        item = self.dynamo.get(schema.acl_version_key())
        return int(item.get(_VERSION, 0)) if item else 0

    def load(self) -> AclSnapshot:
        """Every binding, read consistently, under the version read before them."""
        header = self.dynamo.get(schema.acl_version_key(), consistent=True)
        version = int(header.get(_VERSION, 0)) if header else 0
        bindings = [
            _binding(item)
            for pk in schema.acl_pks()
            for item in self.dynamo.query(
                "#pk = :pk", {":pk": pk}, names={"#pk": schema.PK}, consistent=True
            )
        ]
        return AclSnapshot(version, tuple(bindings))

    def count(self) -> int:
        """How many bindings the set holds (a consistent read of the version item)."""
        header = self.dynamo.get(schema.acl_version_key(), consistent=True)
        return int(header.get(_COUNT, 0)) if header else 0

    # --- writes ---

    def create(self, bindings: Iterable[AclBinding]) -> None:
        """Store the bindings; one already stored stays one item. Raises AclLimitReached when
        the new ones would take the set past `max_acls`: checked before anything is written,
        and again by each chunk's transaction against concurrent creates, so the set never
        exceeds it. The version moves once per chunk that stores something, not at all when
        every binding was already there."""
        wanted = list(dict.fromkeys(bindings))
        new = self._absent(wanted)
        if self.count() + len(new) > self.max_acls:
            raise AclLimitReached(self.max_acls)
        created: list[AclBinding] = []
        for start in range(0, len(new), _CHUNK):
            chunk = new[start : start + _CHUNK]
            try:
                self._create_chunk(chunk)
            except AclLimitReached:
                raise AclLimitReached(self.max_acls, created) from None
            created += chunk

    def delete(self, bindings: Iterable[AclBinding]) -> None:
        """Delete the bindings' items; missing ones are fine. The version moves once per chunk
        that deletes something, not at all when none was there."""
        present = self._present(list(dict.fromkeys(bindings)))
        for start in range(0, len(present), _CHUNK):
            self._delete_chunk(present[start : start + _CHUNK])

    def _create_chunk(self, chunk: list[AclBinding]) -> None:
        fresh = chunk

        def attempt(_: int) -> None:
            nonlocal fresh
            try:
                self.dynamo.transact(
                    [
                        *(
                            Put(
                                _item(b),
                                condition="attribute_not_exists(#pk)",
                                names={"#pk": schema.PK},
                            )
                            for b in fresh
                        ),
                        self._bump(len(fresh), room=self.max_acls - len(fresh)),
                    ]
                )
                return
            except TransactionCanceled as canceled:
                if not canceled.failed_conditions():
                    raise
            # A concurrent create stored some of them, or filled the set: look again.
            fresh = self._absent(fresh)
            if not fresh:
                return
            if self.count() + len(fresh) > self.max_acls:
                raise AclLimitReached(self.max_acls)
            raise TryAgain()

        retry(attempt, lost=(), attempts=_ATTEMPTS, exhausted=_kept_changing("created"))

    def _delete_chunk(self, keys: list[Item]) -> None:
        def attempt(_: int) -> None:
            nonlocal keys
            try:
                self.dynamo.transact(
                    [
                        *(
                            Delete(key, condition="attribute_exists(#pk)", names={"#pk": schema.PK})
                            for key in keys
                        ),
                        self._bump(-len(keys)),
                    ]
                )
                return
            except TransactionCanceled as canceled:
                if not canceled.failed_conditions():
                    raise
            # A concurrent delete removed some of them: delete (and count) the rest.
            found = {_identity(item) for item in self.dynamo.batch_get(keys, consistent=True)}
            keys = [key for key in keys if _identity(key) in found]
            if not keys:
                return
            raise TryAgain()

        retry(attempt, lost=(), attempts=_ATTEMPTS, exhausted=_kept_changing("deleted"))

    def _bump(self, change: int, *, room: int | None = None) -> Update:
        """The version item's update: the version moves, the count follows the change, and
        with `room` the count must be at most that before (no arithmetic in a condition)."""
        values: dict[str, Any] = {
            ":zero": 0,
            ":one": 1,
            ":change": change,
            ":kind": schema.KIND_ACL_VERSION,
        }
        condition = None
        if room is not None:
            condition = "attribute_not_exists(#count) OR #count <= :room"
            values[":room"] = room
        return Update(
            schema.acl_version_key(),
            "SET #version = if_not_exists(#version, :zero) + :one, "
            "#count = if_not_exists(#count, :zero) + :change, #kind = :kind",
            names={"#version": _VERSION, "#count": _COUNT, "#kind": "kind"},
            values=values,
            condition=condition,
        )

    def _absent(self, bindings: list[AclBinding]) -> list[AclBinding]:
        """The bindings not stored (a consistent read), in their order."""
        found = {
            _identity(item)
            for item in self.dynamo.batch_get([_key(b) for b in bindings], consistent=True)
        }
        return [b for b in bindings if _identity(_key(b)) not in found]

    def _present(self, bindings: list[AclBinding]) -> list[Item]:
        """The keys of the bindings that are stored (a consistent read), in their order."""
        keys = [_key(b) for b in bindings]
        found = {_identity(item) for item in self.dynamo.batch_get(keys, consistent=True)}
        return [key for key in keys if _identity(key) in found]


def _kept_changing(done: str) -> Callable[[], None]:
    def exhausted() -> None:
        raise Conflict(f"ACLs kept changing while being {done}")

    return exhausted
