"""The ACL repository (store/acls.py) on both adapters, the test endpoint's DynamoDB API and the
in-memory one: round trips of every field, idempotent creation, deletion, the version a cache
polls, loads past a Query page, the limit on the set's size, and keys no name can forge."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from groupcoord.core.acls import (
    AclBinding,
    AclOperation,
    PatternType,
    PermissionType,
    ResourceType,
)
from groupcoord.local.memory import MemoryDynamoClient, memory_store
from groupcoord.settings import Settings
from groupcoord.store import capacity, schema
from groupcoord.store.acls import MAX_ACLS, AclLimitReached, AclStore
from groupcoord.store.dynamo import Dynamo, TransactItem
from tests.support.servers import unique_table

# `dynamo` (tests/conftest.py): the adapter on a fresh table of each backend, the DynamoDB
# endpoint and the in-memory store.


@pytest.fixture
def acls(dynamo: Dynamo) -> AclStore:
    return AclStore(dynamo)


def binding(
    name: str = "orders",
    principal: str = "User:alice",
    host: str = "*",
    *,
    resource_type: ResourceType = ResourceType.TOPIC,
    pattern_type: PatternType = PatternType.LITERAL,
    operation: AclOperation = AclOperation.READ,
    permission: PermissionType = PermissionType.ALLOW,
) -> AclBinding:
    return AclBinding(
        resource_type=resource_type,
        resource_name=name,
        pattern_type=pattern_type,
        principal=principal,
        host=host,
        operation=operation,
        permission=permission,
    )


def many(count: int, prefix: str = "t") -> list[AclBinding]:
    return [binding(f"{prefix}{i:05d}") for i in range(count)]


def stored(acls: AclStore) -> set[AclBinding]:
    snapshot = acls.load()
    assert len(set(snapshot.bindings)) == len(snapshot.bindings), "a binding stored twice"
    return set(snapshot.bindings)


def intercept_transact(
    dynamo: Dynamo, monkeypatch: pytest.MonkeyPatch, before: Callable[[int], None]
) -> None:
    """Call `before(n)` ahead of the n-th transaction (from 1) the store sends."""
    original = dynamo.transact
    calls = itertools.count(1)

    def transact(items: Sequence[TransactItem]) -> None:
        before(next(calls))
        original(items)

    monkeypatch.setattr(dynamo, "transact", transact)


# --- round trips ---

HOSTILE = [
    "#",
    "%",
    "%23",
    "%25",
    "a#b",
    "a%23b",
    "#%#%",
    "2#3#x",
    "wörld ✓ 日本語",
    "\U0001f600",
    "nul\x00byte",
    "n" * 255,
    "#" * 255,
    "%" * 255,
    "\U0001f600" * 255,
]


def test_an_empty_set_is_version_zero(acls: AclStore) -> None:
    assert acls.version() == 0
    snapshot = acls.load()
    assert (snapshot.version, snapshot.bindings) == (0, ())
    assert acls.count() == 0


def test_every_field_reads_back_the_same_hostile_strings_included(acls: AclStore) -> None:
    created = [binding(name) for name in HOSTILE]
    created += [binding(principal="User:" + name) for name in HOSTILE]
    created += [binding(host=name) for name in HOSTILE]
    # The longest strings the models let through, in the worst encoding: over DynamoDB's
    # 1,024-byte sort key written out, so these take the digest form of the key.
    created.append(binding("\U0001f600" * 255, "User:" + "#" * 507, "\U0001f600" * 255))
    created.append(binding("#" * 255, "User:" + "\U0001f600" * 507, "#" * 255))
    # Every code of every enum, in every position.
    codes = zip(
        itertools.cycle(ResourceType),
        itertools.cycle(PatternType),
        AclOperation,
        itertools.cycle(PermissionType),
        strict=False,
    )
    for rtype, ptype, op, perm in codes:
        created.append(
            binding(
                "every-code",
                resource_type=rtype,
                pattern_type=ptype,
                operation=op,
                permission=perm,
            )
        )
    acls.create(created)
    snapshot = acls.load()
    assert len(snapshot.bindings) == len(created)
    assert set(snapshot.bindings) == set(created)
    for got in snapshot.bindings:
        assert type(got.resource_type) is ResourceType
        assert type(got.pattern_type) is PatternType
        assert type(got.operation) is AclOperation
        assert type(got.permission) is PermissionType
    assert acls.count() == len(created)


def test_the_key_fits_dynamodbs_limits_and_is_readable_when_it_can() -> None:
    short = schema.acl_key(
        resource_type=2,
        resource_name="a#b",
        pattern_type=3,
        principal="User:x%y",
        host="*",
        operation=3,
        permission=3,
    )
    assert short[schema.SK] == "2#3#a%23b#User:x%25y#*#3#3"
    assert short[schema.PK] in schema.acl_pks()
    longest = schema.acl_key(
        resource_type=2,
        resource_name="#" * 255,
        pattern_type=3,
        principal="User:" + "\U0001f600" * 507,
        host="#" * 255,
        operation=3,
        permission=3,
    )
    assert longest[schema.SK].startswith("H#")
    assert len(longest[schema.SK].encode()) <= schema.ACL_SORT_KEY_MAX_BYTES


# --- creation, deletion, the version ---


def test_creating_a_binding_twice_leaves_one(acls: AclStore) -> None:
    acls.create([binding(), binding()])  # the same one twice in one call
    assert stored(acls) == {binding()}
    version = acls.version()
    acls.create([binding()])
    acls.create([binding(), binding("other")])
    assert stored(acls) == {binding(), binding("other")}
    assert acls.count() == 2
    assert acls.version() == version + 1  # only the call that stored something moved it


def test_deleting_missing_bindings_is_fine(acls: AclStore) -> None:
    acls.delete([binding()])  # on an empty set
    assert acls.version() == 0
    acls.create([binding("a"), binding("b")])
    version = acls.version()
    acls.delete([binding("missing"), binding("c")])
    assert acls.version() == version  # nothing changed
    acls.delete([binding("a"), binding("a"), binding("missing")])
    assert stored(acls) == {binding("b")}
    assert acls.count() == 1
    assert acls.version() == version + 1


def test_the_version_moves_on_every_change_and_not_on_reads(acls: AclStore) -> None:
    seen = [acls.version()]

    def changed() -> None:
        version = acls.version()
        assert version > seen[-1]
        assert acls.load().version == version
        seen.append(version)

    acls.create([binding("a")])
    changed()
    acls.create([binding("b"), binding("c")])
    changed()
    acls.delete([binding("a")])
    changed()
    acls.create([binding("a")])
    changed()
    acls.delete([binding("a"), binding("b"), binding("c")])
    changed()
    assert stored(acls) == set()
    for _ in range(3):
        acls.version()
        acls.load()
        acls.count()
    assert acls.version() == seen[-1]


def test_a_large_change_bumps_the_version_with_every_chunk(
    acls: AclStore, dynamo: Dynamo, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A process that dies between two chunks leaves the chunks written so far announced.
    class Died(Exception):
        pass

    def die_at_the_third(n: int) -> None:
        if n == 3:
            raise Died

    intercept_transact(dynamo, monkeypatch, die_at_the_third)
    with pytest.raises(Died):
        acls.create(many(250))
    snapshot = acls.load()
    assert len(snapshot.bindings) == 198 == acls.count()
    assert snapshot.version == acls.version() == 2
    monkeypatch.undo()

    acls.create(many(250))  # the retry completes it
    assert stored(acls) == set(many(250))
    assert acls.count() == 250
    assert acls.version() == 3

    intercept_transact(dynamo, monkeypatch, die_at_the_third)
    with pytest.raises(Died):
        acls.delete(many(250))
    snapshot = acls.load()
    assert len(snapshot.bindings) == 52 == acls.count()
    assert snapshot.version == 5


def test_a_load_reads_past_a_query_page(acls: AclStore) -> None:
    # About 3 KB a binding: 9 MB over the shards, so each shard takes several 1 MB pages.
    created = [
        binding(f"{i:05d}" + "日" * 250, f"User:{i:05d}" + "名" * 500, "主" * 255)
        for i in range(3000)
    ]
    acls.create(created)
    with capacity.metered() as usage:
        snapshot = acls.load()
    assert len(snapshot.bindings) == 3000
    assert set(snapshot.bindings) == set(created)
    assert usage.by_operation["query"] > 2 * len(schema.acl_pks())


# --- the limit ---


def test_a_creation_past_the_limit_writes_nothing(dynamo: Dynamo) -> None:
    acls = AclStore(dynamo, max_acls=150)
    acls.create(many(140))
    version = acls.version()
    with pytest.raises(AclLimitReached) as refused:
        acls.create(many(20, "new"))
    assert refused.value.created == ()
    assert stored(acls) == set(many(140))
    assert acls.count() == 140
    assert acls.version() == version
    # Bindings already there do not count again; up to the limit is fine.
    acls.create(many(140) + many(10, "new"))
    assert acls.count() == 150
    with pytest.raises(AclLimitReached):
        acls.create([binding("one-too-many")])
    acls.create(many(5))
    assert len(stored(acls)) == 150 == acls.count()
    # Deleting makes room again.
    acls.delete(many(1))
    acls.create([binding("one-more")])
    assert acls.count() == 150


def test_the_limit_holds_against_a_concurrent_creation(
    dynamo: Dynamo, monkeypatch: pytest.MonkeyPatch
) -> None:
    acls = AclStore(dynamo, max_acls=300)
    other = AclStore(dynamo, max_acls=300)

    def race(n: int) -> None:
        if n == 2:  # after our first chunk: another writer stores 100 bindings
            other.create(many(100, "other"))

    intercept_transact(dynamo, monkeypatch, race)
    # Checked up front: 0 + 250 fits. The third chunk no longer does.
    with pytest.raises(AclLimitReached) as refused:
        acls.create(many(250))
    assert set(refused.value.created) == set(many(250)[:198])
    monkeypatch.undo()
    assert stored(acls) == set(many(250)[:198]) | set(many(100, "other"))
    assert acls.count() == 298


def test_the_default_limit() -> None:
    assert MAX_ACLS == 10_000
    settings = Settings.from_mapping({"groupcoord.table.name": unique_table()})
    assert memory_store(settings).acls.max_acls == MAX_ACLS


def test_the_default_limit_refuses_the_ten_thousand_and_first() -> None:
    dynamo = Dynamo(MemoryDynamoClient(), unique_table())
    dynamo.ensure_table(schema.table_definition(dynamo.table_name), schema.TTL_ATTRIBUTE)
    acls = AclStore(dynamo)
    acls.create(many(MAX_ACLS - 1))
    with pytest.raises(AclLimitReached):
        acls.create([binding("a"), binding("b")])
    acls.create([binding("a")])
    with pytest.raises(AclLimitReached):
        acls.create([binding("b")])
    assert acls.count() == MAX_ACLS == len(acls.load().bindings)


# --- races on the same bindings keep the count exact ---


def test_a_concurrent_creation_of_the_same_binding_is_counted_once(
    acls: AclStore, dynamo: Dynamo, monkeypatch: pytest.MonkeyPatch
) -> None:
    other = AclStore(dynamo)

    def race(n: int) -> None:
        if n == 1:  # between our read and our write, another writer stores one of ours
            other.create([binding("b")])

    intercept_transact(dynamo, monkeypatch, race)
    acls.create([binding("a"), binding("b"), binding("c")])
    monkeypatch.undo()
    assert stored(acls) == {binding("a"), binding("b"), binding("c")}
    assert acls.count() == 3


def test_a_concurrent_deletion_of_the_same_binding_is_counted_once(
    acls: AclStore, dynamo: Dynamo, monkeypatch: pytest.MonkeyPatch
) -> None:
    acls.create([binding("a"), binding("b"), binding("c"), binding("d")])
    other = AclStore(dynamo)

    def race(n: int) -> None:
        if n == 1:  # between our read and our write, another writer deletes one of ours
            other.delete([binding("b")])

    intercept_transact(dynamo, monkeypatch, race)
    version = acls.version()
    acls.delete([binding("a"), binding("b"), binding("c")])
    monkeypatch.undo()
    assert stored(acls) == {binding("d")}
    assert acls.count() == 1
    assert acls.version() == version + 2  # the other delete's bump, and ours


# --- keys no name can forge ---


def test_a_principal_holding_the_separator_cannot_collide(acls: AclStore) -> None:
    # Written out naively, "<name>#<principal>" of these two is the same string.
    a = binding("x#User:y", "User:z")
    b = binding("x", "User:y#User:z")
    assert f"{a.resource_name}#{a.principal}" == f"{b.resource_name}#{b.principal}"
    c = binding("x", "User:y", "*#3#3")  # a host that spells the codes after it
    d = binding("x", "User:y#*", "3#3")
    acls.create([a, b, c, d])
    assert stored(acls) == {a, b, c, d}
    acls.delete([a, c])
    assert stored(acls) == {b, d}


_PIECES = st.sampled_from(["#", "%", "%23", "%25", "H", "2", "3", "*", "User:", "\U0001f600"])
_hostile = st.lists(st.one_of(_PIECES, st.text(max_size=4)), max_size=8).map("".join)
_fields = st.tuples(
    st.sampled_from(ResourceType),
    _hostile,
    st.sampled_from(PatternType),
    _hostile,
    _hostile,
    st.sampled_from(AclOperation),
    st.sampled_from(PermissionType),
)


def _key_of(fields: tuple[Any, ...]) -> dict[str, str]:
    rtype, name, ptype, principal, host, op, perm = fields
    return schema.acl_key(
        resource_type=rtype,
        resource_name=name,
        pattern_type=ptype,
        principal=principal,
        host=host,
        operation=op,
        permission=perm,
    )


@given(_fields, _fields)
def test_distinct_bindings_have_distinct_keys(a: tuple[Any, ...], b: tuple[Any, ...]) -> None:
    if a == b:
        assert _key_of(a) == _key_of(b)
    else:
        assert _key_of(a)[schema.SK] != _key_of(b)[schema.SK]
