"""A staged protocol conversion's lease is the deployment's `groupcoord.conversion.lease.ms`
for every request that holds it: the one that began it, and one that takes over an abandoned
conversion through any repository's read of the group (store/conversion.py)."""

from __future__ import annotations

from typing import Any

import pytest

from groupcoord.local.memory import memory_store
from groupcoord.settings import Settings
from groupcoord.store import schema
from groupcoord.store.conversion import MARKER, Conversion
from groupcoord.store.dynamo import Put, Update
from groupcoord.store.store import Store
from tests.support.clock import FakeClock
from tests.support.servers import unique_table

LEASE_MS = 1_000  # far from the 15 s default


class Crashed(Exception):
    pass


def _crash_at(point: str):  # type: ignore[no-untyped-def]
    def checkpoint(reached: str) -> None:
        if reached == point:
            raise Crashed(point)

    return checkpoint


def _renewals(store: Store) -> list[int]:
    """The lease ends the store's transactions write from now on (`SET conversion.until`)."""
    seen: list[int] = []
    transact = store.dynamo.transact

    def recording(items: list[Any]) -> Any:
        for item in items:
            if isinstance(item, Update) and "#until" in (item.names or {}):
                seen.append(int((item.values or {})[":until"]))
        return transact(items)

    store.dynamo.transact = recording  # type: ignore[method-assign]
    return seen


def _abandoned_flip(store: Store, group_id: str) -> None:
    """A conversion too large for one transaction, flipped and then abandoned (its request
    died before applying it)."""
    store.dynamo.put({**schema.group_key(group_id), "groupId": group_id, "version": 1})
    conversion = Conversion(
        group_id=group_id,
        read_version=1,
        group_put=Put(
            {**schema.group_key(group_id), "groupId": group_id, "version": 2},
            condition="#v = :v",
            names={"#v": "version"},
            values={":v": 1},
        ),
        writes=[Put({schema.PK: f"{group_id}#X{i}", schema.SK: "x"}) for i in range(5)],
    )
    with pytest.raises(Crashed):
        store.conversions.convert(
            conversion, max_transaction_items=3, checkpoint=_crash_at("conversion.flipped")
        )


@pytest.mark.parametrize("reader", ["conversions", "classic", "consumer"])
def test_a_reader_taking_over_an_abandoned_conversion_holds_the_configured_lease(
    reader: str,
) -> None:
    fake = FakeClock(1_000_000_000)
    settings = Settings.from_mapping(
        {"groupcoord.table.name": unique_table(), "groupcoord.conversion.lease.ms": str(LEASE_MS)}
    )
    store = memory_store(settings, clock=fake)
    store.ensure_table()
    group_id = f"g-{reader}"
    _abandoned_flip(store, group_id)
    marker = store.dynamo.get(schema.group_key(group_id), consistent=True)[MARKER]
    assert int(marker["until"]) == fake.now_ms() + LEASE_MS
    fake.advance(LEASE_MS + 1)  # the applier's lease has run out

    renewals = _renewals(store)
    read = {
        "conversions": store.conversions.read_group_item,
        "classic": store.classic.group_item,
        "consumer": store.consumer.group_item,
    }[reader]
    item = read(group_id, consistent=True)

    assert item is not None and MARKER not in item and item["version"] == 2
    assert renewals, "the apply renews the lease with every chunk"
    assert set(renewals) == {fake.now_ms() + LEASE_MS}
