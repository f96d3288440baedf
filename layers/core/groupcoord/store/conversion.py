"""A group's conversion between the protocols as one atomic step, whatever its size
(docs/consumer-protocol.md, "One atomic step, whatever the group's size").

A conversion is the new group item (a conditional Put on the version read) plus the writes of
its other items (member items rewritten, static claims moved, leavers deleted, topic
registrations). When they fit, they are one TransactWriteItems. When they do not (a 1,000-member
group is ~2,000 items; a transaction holds 100), they are staged and then flipped:

1. **begin**: the group item gets a marker `conversion = {token, phase: "staging", until}` on
   the version read (a lease; the version is not bumped, the group's requests go on).
2. **stage**: the other writes are saved as staged items under `G#<gid>#C<token>#<shard>`
   (BatchWriteItem; each carries `expiresAt`, so an abandoned stage goes by TTL).
3. **flip**: one conditional Put of the new group item, on the version read and the token,
   carrying `conversion = {token, phase: "flipped", until}`. This write is the conversion:
   before it the group is the old one, after it the new one.
4. **apply**: the staged writes go in place in transactions of at most 99 items, each renewing
   the lease on the group item (so an applier that lost the lease stops, and none writes after
   the marker is gone); then the marker goes, then the staged items.

Every read of a group item goes through `read_group_item`, which finishes what a crash left:
a marker in phase "staging" whose lease ran out is rolled back (the old group never changed);
one in phase "flipped" is applied by the reader (or, while another applier holds the lease,
waited for). So nobody ever sees the new group item with the old member items.

Staged writes are applied without the conditions they carry in the one-transaction form: the
flip's condition on the group version stands for them (a member joining, leaving or expiring,
or a new target, bumps the version and fails the flip; what members write without a version
bump, such as session deadlines, is rewritten by the conversion anyway).
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from . import schema
from .dynamo import ConditionFailed, Delete, Dynamo, Put, TransactionCanceled, TransactItem, Update
from .errors import Conflict, ConversionInProgress
from .stored_group import StoredGroup, stored

MARKER = "conversion"
STAGING = "staging"
FLIPPED = "flipped"
STAGING_SHARDS = 8
# One transaction of the apply step: its staged writes plus the lease renewal.
APPLY_CHUNK = 99
MAX_TRANSACTION_ITEMS = 100
# Abandoned staged items are removed by DynamoDB's TTL after this long (rollbacks and
# finished conversions delete theirs at once).
STAGED_TTL_S = 24 * 3600
# How often a request re-reads a group another request is applying.
WAIT_POLL_S = 0.05

Checkpoint = Callable[[str], None]


def _no_checkpoint(_: str) -> None:
    return None


@dataclass(frozen=True)
class Conversion:
    """What a conversion writes: the new group item (a Put whose condition pins the version
    read) and the other items' writes, each with the condition it has in one transaction."""

    group_id: str
    read_version: int
    group_put: Put
    writes: Sequence[Put | Delete]

    def fits_one_transaction(self, max_items: int = MAX_TRANSACTION_ITEMS) -> bool:
        return 1 + len(self.writes) <= max_items


def _marker(token: str, phase: str, until: int, lease_ms: int) -> dict[str, Any]:
    return {"token": token, "phase": phase, "until": until, "leaseMs": lease_ms}


class Conversions:
    """Runs conversions and finishes the ones a crash interrupted."""

    def __init__(self, dynamo: Dynamo, lease_ms: int) -> None:
        self.dynamo = dynamo
        self.lease_ms = lease_ms
        self.clock = dynamo.clock

    # --- reads ---

    def read_group_item(self, group_id: str, *, consistent: bool) -> dict[str, Any] | None:
        """The group item, with any interrupted conversion finished first (see the module
        docstring): the item a request may act on."""
        item = self.dynamo.get(schema.group_key(group_id), consistent=consistent)
        if item is None or MARKER not in item:
            return item
        return self.settle(group_id, item if consistent else None)

    def read_group(self, group_id: str, *, consistent: bool) -> StoredGroup | None:
        """`read_group_item`'s item, typed (store/stored_group.py): what services act on."""
        return stored(self.read_group_item(group_id, consistent=consistent))

    def settle(self, group_id: str, item: dict[str, Any] | None) -> dict[str, Any] | None:
        """Roll back an abandoned stage, apply (or wait for) a flipped conversion; the group
        item once no conversion needs finishing (a live stage stays: the old group stands)."""
        deadline: float | None = None
        while True:
            if item is None:
                item = self.dynamo.get(schema.group_key(group_id), consistent=True)
            if item is None or MARKER not in item:
                return item
            marker = item[MARKER]
            now = self.clock.now_ms()
            if marker["phase"] == STAGING:
                if int(marker["until"]) > now:
                    return item
                self._roll_back(group_id, marker["token"])
            elif int(marker["until"]) <= now:
                self._take_over_and_apply(group_id, marker)
            else:
                # Another request is applying: wait for it, a little longer than its lease.
                if deadline is None:
                    deadline = self.clock.monotonic_s() + int(marker["leaseMs"]) / 1000 + 1
                if self.clock.monotonic_s() > deadline:
                    raise ConversionInProgress(group_id)
                self.clock.sleep(WAIT_POLL_S)
            item = None

    # --- the conversion ---

    def convert(
        self,
        conversion: Conversion,
        *,
        max_transaction_items: int = MAX_TRANSACTION_ITEMS,
        checkpoint: Checkpoint = _no_checkpoint,
    ) -> None:
        """Write `conversion` atomically. Conflict if the group moved (nothing
        changed then, or the change is rolled back by the next read)."""
        if conversion.fits_one_transaction(max_transaction_items):
            try:
                self.dynamo.transact([conversion.group_put, *conversion.writes])
            except TransactionCanceled:
                raise Conflict(conversion.group_id) from None
            return
        gid = conversion.group_id
        token = self._begin(gid, conversion.read_version)
        try:
            self._stage(gid, token, conversion.writes)
            checkpoint("conversion.staged")
            self._flip(conversion, token)
        except Conflict:
            self._roll_back(gid, token)
            raise
        checkpoint("conversion.flipped")
        self._apply(gid, token, checkpoint)

    def _until(self) -> int:
        return self.clock.now_ms() + self.lease_ms

    def _begin(self, group_id: str, version: int) -> str:
        token = uuid.uuid4().hex[:16]
        try:
            self.dynamo.update(
                Update(
                    schema.group_key(group_id),
                    "SET #c = :c",
                    names={"#c": MARKER, "#v": "version"},
                    values={
                        ":c": _marker(token, STAGING, self._until(), self.lease_ms),
                        ":v": version,
                    },
                    condition="#v = :v AND attribute_not_exists(#c)",
                )
            )
        except ConditionFailed:
            raise Conflict(group_id) from None
        return token

    def _stage(self, group_id: str, token: str, writes: Sequence[Put | Delete]) -> None:
        expires = self.clock.now_ms() // 1000 + STAGED_TTL_S
        staged = []
        for index, write in enumerate(writes):
            item: dict[str, Any] = {
                schema.PK: schema.staged_pk(group_id, token, index % STAGING_SHARDS),
                schema.SK: f"{index:08d}",
                "kind": "staged-write",
                schema.TTL_ATTRIBUTE: expires,
            }
            if isinstance(write, Put):
                item["put"] = write.item
            else:
                item["delete"] = write.key
            staged.append(item)
        self.dynamo.batch_write(puts=staged)

    def _flip(self, conversion: Conversion, token: str) -> None:
        put = conversion.group_put
        item = {
            **put.item,
            MARKER: _marker(token, FLIPPED, self._until(), self.lease_ms),
        }
        condition = "#conv.#token = :token"
        if put.condition:
            condition = f"({put.condition}) AND {condition}"
        try:
            self.dynamo.put(
                item,
                condition=condition,
                names={**(put.names or {}), "#conv": MARKER, "#token": "token"},
                values={**(put.values or {}), ":token": token},
            )
        except ConditionFailed:
            raise Conflict(conversion.group_id) from None

    def _staged(self, group_id: str, token: str) -> list[dict[str, Any]]:
        items: list[dict[str, Any]] = []
        for shard in range(STAGING_SHARDS):
            pk = schema.staged_pk(group_id, token, shard)
            items += self.dynamo.query("pk = :pk", {":pk": pk}, consistent=True)
        return sorted(items, key=lambda i: i[schema.SK])

    def _renewal(self, group_id: str, token: str) -> Update:
        return Update(
            schema.group_key(group_id),
            "SET #c.#until = :until",
            names={"#c": MARKER, "#until": "until", "#token": "token", "#phase": "phase"},
            values={":until": self._until(), ":token": token, ":flipped": FLIPPED},
            condition="#c.#token = :token AND #c.#phase = :flipped",
        )

    def _apply(self, group_id: str, token: str, checkpoint: Checkpoint = _no_checkpoint) -> None:
        staged = self._staged(group_id, token)
        writes: list[TransactItem] = [
            Put(s["put"]) if "put" in s else Delete(s["delete"]) for s in staged
        ]
        for start in range(0, len(writes), APPLY_CHUNK):
            chunk = writes[start : start + APPLY_CHUNK]
            try:
                self.dynamo.transact([*chunk, self._renewal(group_id, token)])
            except TransactionCanceled:
                return  # the lease was taken over (or the conversion finished): theirs now
            checkpoint("conversion.partly-applied")
        try:
            self.dynamo.update(
                Update(
                    schema.group_key(group_id),
                    "REMOVE #c",
                    names={"#c": MARKER, "#token": "token"},
                    values={":token": token},
                    condition="#c.#token = :token",
                )
            )
        except ConditionFailed:
            return
        self._delete_staged(staged)

    def _take_over_and_apply(self, group_id: str, marker: dict[str, Any]) -> None:
        """The applier's lease ran out (it crashed): take the lease and apply."""
        try:
            self.dynamo.update(
                Update(
                    schema.group_key(group_id),
                    "SET #c.#until = :until",
                    names={"#c": MARKER, "#until": "until", "#token": "token"},
                    values={
                        ":until": self._until(),
                        ":seen": int(marker["until"]),
                        ":token": marker["token"],
                    },
                    condition="#c.#token = :token AND #c.#until = :seen",
                )
            )
        except ConditionFailed:
            return  # someone else took it (or finished): decide again
        self._apply(group_id, marker["token"])

    def _roll_back(self, group_id: str, token: str) -> None:
        """Forget a stage that was never flipped: the marker (if still ours), the staged
        items. The old group item is untouched."""
        # Already gone when the group item was replaced or another request rolled it back.
        with contextlib.suppress(ConditionFailed):
            self.dynamo.update(
                Update(
                    schema.group_key(group_id),
                    "REMOVE #c",
                    names={"#c": MARKER, "#token": "token", "#phase": "phase"},
                    values={":token": token, ":staging": STAGING},
                    condition="#c.#token = :token AND #c.#phase = :staging",
                )
            )
        self._delete_staged(self._staged(group_id, token))

    def _delete_staged(self, staged: Sequence[dict[str, Any]]) -> None:
        self.dynamo.batch_write(
            deletes=[{schema.PK: s[schema.PK], schema.SK: s[schema.SK]} for s in staged]
        )
