"""The store's DynamoDB contract: one suite of tests of `Dynamo`, the store's one gateway to
DynamoDB, run on both of its adapters, DynamoDB's API (the test endpoint: Amazon's DynamoDB
Local, which LocalStack runs too) and the in-memory adapter (groupcoord/local/memory/).
Every test expects the same outcome of both: where they differed, the memory adapter was made
to do what DynamoDB does.

It covers what the store relies on: the values it writes, the condition and update expressions
it uses (grep store/ for them), conditional failures with the old item, transactions (all or
nothing, the failed items reported, one operation per item, at most 100 items), the 400 KB item
limit and the key size limits, reads after writes, queries of the table and of each index of
schema.table_definition (order, limits, pages, key conditions, sparse indexes and their
projections), batch reads and writes, scans, and keys with an empty part (`addressable`).
Dynamo sends no ClientRequestToken, so transaction idempotence is not part of the contract.

Where the engine is laxer than DynamoDB, the test names the difference (LAXER_THAN_DYNAMODB)
and asserts what the engine does; the in-memory adapter keeps DynamoDB's rule.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import pytest
from botocore.exceptions import ClientError

from groupcoord.store import capacity, schema
from groupcoord.store.dynamo import (
    Check,
    ConditionFailed,
    Delete,
    Dynamo,
    Put,
    TransactionCanceled,
    Update,
    serialize,
)

# `dynamo` (tests/conftest.py): the adapter on a fresh table of each backend, the DynamoDB
# endpoint and the in-memory store.

# Where the engine behind the test endpoint is laxer than DynamoDB, by engine
# (GROUPCOORD_TEST_DYNAMODB_ENGINE, tests/conftest.py): each is asserted as it is, and the
# in-memory adapter keeps DynamoDB's rule. DynamoDB Local 3.3 (LocalStack's engine too) takes
# reserved words as attribute names in expressions.
LAXER_THAN_DYNAMODB = {"dynamodb-local": {"reserved words"}, "dynamodb": set()}


def laxer_than_dynamodb(request: pytest.FixtureRequest, rule: str) -> bool:
    """Whether the backend of this test's `dynamo` is known to skip `rule` of DynamoDB's."""
    if request.node.callspec.params.get("dynamo") == "memory":
        return False
    engine = request.getfixturevalue("dynamodb_engine")
    return rule in LAXER_THAN_DYNAMODB[engine]


def key(sk: str, pk: str = "P") -> dict[str, str]:
    return {schema.PK: pk, schema.SK: sk}


def error_code(error: pytest.ExceptionInfo[ClientError]) -> str:
    return error.value.response["Error"]["Code"]


def refused(call: Callable[[], Any]) -> str:
    """The error code of a call DynamoDB refuses."""
    with pytest.raises(ClientError) as error:
        call()
    return error_code(error)


# --- tables ---


def test_ensure_table_is_idempotent(dynamo: Dynamo) -> None:
    assert dynamo.ensure_table(schema.table_definition(dynamo.table_name), "expiresAt") is False


# --- values ---

EVERY_VALUE = {
    "text": "hello, wörld ✓",
    "empty_text": "",
    "zero": 0,
    "number": 42,
    "negative": -7,
    "big": 2**63 + 1,
    "huge": 10**37,
    "negative_huge": -(10**30) - 1,
    "yes": True,
    "no": False,
    "nothing": None,
    "empty_list": [],
    "empty_map": {},
    "list": [1, "two", True, None, [4, [5]], {"six": 6}],
    "map": {"a": 1, "b": {"c": ["d", {"e": False}]}, "f": None, "g": "", "h": []},
}


def test_every_value_type_the_store_writes_reads_back_the_same(dynamo: Dynamo) -> None:
    item = {**key("values"), **EVERY_VALUE}
    dynamo.put(item)
    got = dynamo.get(key("values"), consistent=True)
    assert got == item
    # Typed as written: numbers as int (not Decimal), booleans as bool (not 1 and 0).
    for name in ("zero", "number", "negative", "big", "huge", "negative_huge"):
        assert type(got[name]) is int, name
    assert got["yes"] is True and got["no"] is False and got["nothing"] is None
    assert got["list"][2] is True and type(got["list"][0]) is int


def test_bytes_read_back_the_same(dynamo: Dynamo) -> None:
    item = {**key("bytes"), "data": b"\x00\x01\xfe\xff", "empty": b"", "in": [b"\x03"]}
    dynamo.put(item)
    assert dynamo.get(key("bytes"), consistent=True) == item


def test_a_read_after_a_write_sees_it(dynamo: Dynamo) -> None:
    assert dynamo.get(key("k"), consistent=True) is None
    dynamo.put({**key("k"), "v": 1})
    assert dynamo.get(key("k"), consistent=True) == {**key("k"), "v": 1}
    dynamo.update(Update(key("k"), "SET v = v + :one", values={":one": 1}))
    assert dynamo.get(key("k"), consistent=True) == {**key("k"), "v": 2}
    dynamo.put({**key("k"), "w": "x"})  # a put replaces the whole item
    assert dynamo.get(key("k"), consistent=True) == {**key("k"), "w": "x"}
    assert dynamo.delete(key("k")) == {**key("k"), "w": "x"}
    assert dynamo.get(key("k"), consistent=True) is None
    assert dynamo.delete(key("k")) is None


# --- keys ---


def test_a_key_with_an_empty_part_names_no_item(dynamo: Dynamo) -> None:
    dynamo.put({**key("x"), "v": 1})
    assert dynamo.get(key(""), consistent=True) is None
    assert dynamo.get({schema.PK: "", schema.SK: "x"}) is None
    assert dynamo.batch_get([key(""), key("x"), {schema.PK: "", schema.SK: ""}]) == [
        {**key("x"), "v": 1}
    ]
    # Nothing to delete under such a key, and no condition on it can hold.
    assert dynamo.delete(key("")) is None
    with pytest.raises(ConditionFailed):
        dynamo.delete(key(""), condition="attribute_exists(pk)")
    assert dynamo.get(key("x"), consistent=True) == {**key("x"), "v": 1}


def test_an_item_with_an_empty_key_part_is_refused(dynamo: Dynamo) -> None:
    assert refused(lambda: dynamo.put({**key(""), "v": 1})) == "ValidationException"
    assert refused(lambda: dynamo.put({schema.PK: "", schema.SK: "x"})) == "ValidationException"
    assert refused(lambda: list(dynamo.query("pk = :pk", {":pk": ""}))) == "ValidationException"


def test_key_values_over_dynamodbs_bounds_are_refused_and_name_no_item(dynamo: Dynamo) -> None:
    longest_sort, longest_partition = "é" * 512, "x" * 2048  # 1,024 and 2,048 bytes
    dynamo.put({**key(longest_sort, longest_partition), "v": 1})
    assert dynamo.get(key(longest_sort, longest_partition), consistent=True) is not None
    too_long_sort, too_long_partition = longest_sort + "x", longest_partition + "x"
    assert refused(lambda: dynamo.put(key(too_long_sort))) == "ValidationException"
    assert refused(lambda: dynamo.put(key("s", too_long_partition))) == "ValidationException"
    too_far = {":pk": "P", ":after": too_long_sort}
    assert refused(lambda: list(dynamo.query("pk = :pk AND sk > :after", too_far))) == (
        "ValidationException"
    )
    # The store reads and deletes nothing under such a key (no stored name is that long).
    assert dynamo.get(key(too_long_sort), consistent=True) is None
    assert dynamo.get(key("s", too_long_partition)) is None
    assert dynamo.batch_get([key(too_long_sort), key(longest_sort, longest_partition)]) == [
        {**key(longest_sort, longest_partition), "v": 1}
    ]
    assert dynamo.delete(key(too_long_sort)) is None


def test_a_batch_cannot_put_and_delete_one_key(dynamo: Dynamo) -> None:
    refusal = refused(lambda: dynamo.batch_write(puts=[key("a")], deletes=[key("a")]))
    assert refusal == "ValidationException"
    assert dynamo.get(key("a"), consistent=True) is None


def test_an_index_key_attribute_of_the_wrong_type_is_refused(dynamo: Dynamo) -> None:
    item = {**key("w"), schema.DEADLINE_SHARD: "DL#0", schema.DEADLINE: "not a number"}
    assert refused(lambda: dynamo.put(item)) == "ValidationException"
    assert dynamo.get(key("w"), consistent=True) is None


def test_an_index_key_attribute_cannot_be_empty(dynamo: Dynamo) -> None:
    item = {**key("g"), schema.LISTING_PK: "", schema.LISTING_SK: "g"}
    assert refused(lambda: dynamo.put(item)) == "ValidationException"
    assert dynamo.get(key("g"), consistent=True) is None


def test_a_key_of_the_wrong_type_or_incomplete_is_refused(dynamo: Dynamo) -> None:
    assert refused(lambda: dynamo.put({schema.PK: "P", schema.SK: 5})) == "ValidationException"
    assert refused(lambda: dynamo.put({schema.PK: "P"})) == "ValidationException"
    assert refused(lambda: dynamo.get({schema.PK: "P"})) == "ValidationException"
    assert refused(lambda: dynamo.get({**key("x"), "extra": "y"})) == "ValidationException"


# --- conditions ---

STORED = {
    **key("c"),
    "n": 5,
    "s": "abc",
    "t": True,
    "f": False,
    "m": {"a": 1, "b": {"c": "x"}},
    "installUntil": 100,
    "version": 3,
    "memberId": "m-1",
}
VALUES = {
    ":zero": 0,
    ":one": 1,
    ":five": 5,
    ":six": 6,
    ":abc": "abc",
    ":ab": "ab",
    ":abd": "abd",
    ":true": True,
    ":false": False,
    ":x": "x",
    ":now": 100,
    ":v": 3,
    ":m": "m-1",
}

# (condition, whether it holds of STORED); names and values come from NAMES and VALUES.
CONDITIONS = [
    ("attribute_exists(pk)", True),
    ("attribute_not_exists(pk)", False),
    ("attribute_exists(nope)", False),
    ("attribute_not_exists(nope)", True),
    ("n = :five", True),
    ("n = :six", False),
    ("n <> :five", False),
    ("n <> :six", True),
    ("n < :six", True),
    ("n < :five", False),
    ("n <= :five", True),
    ("n > :five", False),
    ("n > :one", True),
    ("n >= :five", True),
    ("n >= :six", False),
    ("s < :abd", True),
    ("s > :ab", True),
    ("s = :abc", True),
    ("nope = :five", False),
    ("nope <> :five", True),  # an attribute that is not there differs from every value
    ("nope < :five", False),
    ("nope >= :five", False),
    ("t = :true", True),
    ("t = :false", False),
    ("f = :false", True),
    ("t <> :false", True),
    ("attribute_exists(pk) AND n = :five", True),
    ("attribute_exists(pk) AND n = :six", False),
    ("attribute_not_exists(pk) OR memberId = :m", True),
    ("attribute_not_exists(pk) OR n = :six", False),
    ("NOT n = :six", True),
    ("NOT (n = :five)", False),
    ("NOT attribute_exists(nope) AND NOT n = :six", True),
    ("n = :six OR s = :abc AND t = :true", True),  # AND binds tighter than OR
    ("(n = :six OR s = :abc) AND t = :false", False),
    ("n = :five AND (attribute_not_exists(installId) OR installUntil <= :now)", True),
    ("#version = :v AND (attribute_not_exists(installId) OR installUntil < :now)", True),
    ("#version = :v AND attribute_exists(installId)", False),
    ("#n = :five", True),
    ("#m.#a = :one", True),
    ("#m.#b.#c = :x", True),
    ("#m.#a = :zero", False),
    ("#nope.#a = :one", False),
    ("attribute_exists(#m.#b)", True),
    ("attribute_not_exists(#m.#nope)", True),
    ("n BETWEEN :one AND :five", True),
    ("n BETWEEN :six AND :six", False),
    ("n IN (:six, :five)", True),
    ("n IN (:one, :six)", False),
    ("begins_with(s, :ab)", True),
    ("begins_with(s, :abd)", False),
]
NAMES = {
    "#n": "n",
    "#m": "m",
    "#a": "a",
    "#b": "b",
    "#c": "c",
    "#nope": "nope",
    "#version": "version",
}


def _used(text: str, given: dict[str, Any]) -> dict[str, Any] | None:
    """The placeholders a condition uses (DynamoDB refuses any given and unused)."""
    used = {k: v for k, v in given.items() if any(k == t for t in _placeholders(text))}
    return used or None


def _placeholders(text: str) -> list[str]:
    for mark in "(),.":
        text = text.replace(mark, " ")
    return [t for t in text.split() if t[0] in "#:"]


@pytest.mark.parametrize(("condition", "holds"), CONDITIONS, ids=[c for c, _ in CONDITIONS])
def test_conditions(dynamo: Dynamo, condition: str, holds: bool) -> None:
    dynamo.put(STORED)
    names, values = _used(condition, NAMES), _used(condition, VALUES)
    if holds:
        dynamo.put({**STORED, "seen": 1}, condition=condition, names=names, values=values)
        assert dynamo.get(key("c"), consistent=True) == {**STORED, "seen": 1}
    else:
        with pytest.raises(ConditionFailed) as failed:
            dynamo.put({**STORED, "seen": 1}, condition=condition, names=names, values=values)
        assert failed.value.old == STORED
        assert dynamo.get(key("c"), consistent=True) == STORED
    # The same condition, in a transaction.
    check = Check(key("c"), condition, names=names, values=values)
    if holds:
        dynamo.transact([check])
    else:
        with pytest.raises(TransactionCanceled) as canceled:
            dynamo.transact([check])
        assert canceled.value.failed_conditions() == [0]


def test_a_boolean_never_equals_a_number(dynamo: Dynamo) -> None:
    dynamo.put({**key("b"), "flag": True})
    with pytest.raises(ConditionFailed):
        dynamo.put({**key("b"), "flag": False}, condition="flag = :one", values={":one": 1})
    assert dynamo.get(key("b"), consistent=True) == {**key("b"), "flag": True}


def test_a_condition_on_a_missing_item_sees_no_attributes(dynamo: Dynamo) -> None:
    dynamo.put({**key("new"), "v": 1}, condition="attribute_not_exists(pk)")
    with pytest.raises(ConditionFailed) as failed:
        dynamo.update(
            Update(key("gone"), "SET v = :v", values={":v": 1}, condition="attribute_exists(pk)")
        )
    assert failed.value.old is None
    assert dynamo.get(key("gone"), consistent=True) is None


def test_a_failed_condition_returns_the_old_item_on_put_update_and_delete(dynamo: Dynamo) -> None:
    old = {**key("o"), "version": 2, "body": {"x": [1, 2]}}
    dynamo.put(old)
    v = {":v": 1}
    names = {"#v": "version"}
    with pytest.raises(ConditionFailed) as put:
        dynamo.put({**key("o")}, condition="#v = :v", names=names, values=v)
    with pytest.raises(ConditionFailed) as update:
        dynamo.update(Update(key("o"), "SET body = :v", names=names, values=v, condition="#v = :v"))
    with pytest.raises(ConditionFailed) as delete:
        dynamo.delete(key("o"), condition="#v = :v", names=names, values=v)
    assert put.value.old == update.value.old == delete.value.old == old
    assert dynamo.get(key("o"), consistent=True) == old


def test_the_old_item_comes_back_only_when_asked(dynamo: Dynamo) -> None:
    dynamo.put({**key("o"), "v": 1})
    args = {
        "TableName": dynamo.table_name,
        "Item": serialize(key("o")),
        "ConditionExpression": "attribute_not_exists(pk)",
    }
    with pytest.raises(ClientError) as plain:
        dynamo.client.put_item(**args)
    assert error_code(plain) == "ConditionalCheckFailedException"
    assert "Item" not in plain.value.response
    with pytest.raises(ClientError) as asked:
        dynamo.client.put_item(**args, ReturnValuesOnConditionCheckFailure="ALL_OLD")
    assert asked.value.response["Item"] == serialize({**key("o"), "v": 1})


def test_conditional_writes_are_atomic(dynamo: Dynamo) -> None:
    """Compare-and-set increments from several threads: none is lost."""
    dynamo.put({**key("counter"), "n": 0})
    wins: list[int] = []

    def increment_five_times() -> None:
        done = 0
        while done < 5:
            n = dynamo.get(key("counter"), consistent=True)["n"]
            try:
                dynamo.update(
                    Update(
                        key("counter"),
                        "SET n = :new",
                        values={":new": n + 1, ":old": n},
                        condition="n = :old",
                    )
                )
            except ConditionFailed:
                continue
            done += 1
            wins.append(n)

    threads = [threading.Thread(target=increment_five_times) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert dynamo.get(key("counter"), consistent=True)["n"] == 20
    assert sorted(wins) == list(range(20))


# --- expression names and values ---


def test_expression_names_and_values_must_all_be_used(dynamo: Dynamo) -> None:
    dynamo.put({**key("u"), "a": 1})
    unused_value = Update(key("u"), "SET a = :one", values={":one": 1, ":two": 2})
    assert refused(lambda: dynamo.update(unused_value)) == "ValidationException"
    unused_name = Update(key("u"), "SET a = :one", names={"#b": "b"}, values={":one": 1})
    assert refused(lambda: dynamo.update(unused_name)) == "ValidationException"
    assert (
        refused(lambda: dynamo.put(key("u"), condition="attribute_exists(pk)", names={"#b": "b"}))
        == "ValidationException"
    )
    assert dynamo.get(key("u"), consistent=True) == {**key("u"), "a": 1}


def test_a_reserved_word_must_go_through_expression_names(
    dynamo: Dynamo, request: pytest.FixtureRequest
) -> None:
    reserved = Update(key("r"), "SET size = :one", values={":one": 1})
    if laxer_than_dynamodb(request, "reserved words"):
        # A named difference: DynamoDB Local takes a reserved word as an attribute name
        # (DynamoDB refuses it: the in-memory adapter does). Asserted, so that a release that
        # checks reserved words tells us to drop the difference.
        dynamo.update(reserved)
    else:
        assert refused(lambda: dynamo.update(reserved)) == "ValidationException"
    dynamo.update(Update(key("r"), "SET #size = :one", names={"#size": "size"}, values={":one": 1}))
    assert dynamo.get(key("r"), consistent=True) == {**key("r"), "size": 1}


# --- update expressions (the forms store/ uses) ---


def test_update_set_values_creates_a_missing_item(dynamo: Dynamo) -> None:
    attrs = {"kind": "group", "groupId": "g", "members": ["a", "b"], "meta": {"k": 1}}
    update = Update(
        key("up"),
        "SET " + ", ".join(f"#a{i} = :v{i}" for i in range(len(attrs))),
        names={f"#a{i}": name for i, name in enumerate(attrs)},
        values={f":v{i}": value for i, value in enumerate(attrs.values())},
    )
    assert dynamo.update(update, return_new=True) == {**key("up"), **attrs}
    assert dynamo.get(key("up"), consistent=True) == {**key("up"), **attrs}
    assert dynamo.update(update) is None  # no return_new: nothing returned


def test_update_arithmetic(dynamo: Dynamo) -> None:
    dynamo.put({**key("a"), "expiryMs": 45_000, "mver": 1, "version": 7, "n": 10})
    new = dynamo.update(
        Update(
            key("a"),
            "SET sessionDeadline = expiryMs + :now, mver = mver + :one, "
            "#version = #version + :one, n = n - :three",
            names={"#version": "version"},
            values={":now": 1_000_000, ":one": 1, ":three": 3},
        ),
        return_new=True,
    )
    assert new == {
        **key("a"),
        "expiryMs": 45_000,
        "sessionDeadline": 1_045_000,
        "mver": 2,
        "version": 8,
        "n": 7,
    }


def test_update_arithmetic_on_a_missing_attribute_is_refused(dynamo: Dynamo) -> None:
    dynamo.put({**key("a"), "n": 1})
    missing = Update(key("a"), "SET m = nope + :one", values={":one": 1})
    assert refused(lambda: dynamo.update(missing)) == "ValidationException"
    wrong_type = Update(key("b"), "SET m = :s + :one", values={":s": "x", ":one": 1})
    assert refused(lambda: dynamo.update(wrong_type)) == "ValidationException"
    assert dynamo.get(key("a"), consistent=True) == {**key("a"), "n": 1}
    assert dynamo.get(key("b"), consistent=True) is None


def test_update_every_operand_reads_the_item_before_the_update(dynamo: Dynamo) -> None:
    dynamo.put({**key("a"), "x": 1, "y": 2})
    new = dynamo.update(Update(key("a"), "SET x = y, y = x"), return_new=True)
    assert new == {**key("a"), "x": 2, "y": 1}


def test_update_nested_paths(dynamo: Dynamo) -> None:
    names = {"#c": "conversion", "#until": "until", "#token": "token"}
    dynamo.put({**key("n"), "conversion": {"token": "t1", "until": 5}})
    dynamo.update(
        Update(
            key("n"),
            "SET #c.#until = :until",
            names=names,
            values={":until": 9, ":token": "t1"},
            condition="#c.#token = :token",
        )
    )
    assert dynamo.get(key("n"), consistent=True) == {
        **key("n"),
        "conversion": {"token": "t1", "until": 9},
    }
    # A nested path under an attribute that is not there is refused.
    dynamo.put({**key("m")})
    nested = Update(
        key("m"),
        "SET #c.#until = :until",
        names={"#c": "conversion", "#until": "until"},
        values={":until": 9},
    )
    assert refused(lambda: dynamo.update(nested)) == "ValidationException"
    assert dynamo.get(key("m"), consistent=True) == key("m")


def test_update_remove(dynamo: Dynamo) -> None:
    dynamo.put(
        {
            **key("r"),
            "conversion": {"token": "t"},
            "installId": "i",
            "installUntil": 5,
            "version": 1,
            "keep": True,
        }
    )
    dynamo.update(Update(key("r"), "REMOVE #c", names={"#c": "conversion"}))
    dynamo.update(
        Update(
            key("r"),
            "REMOVE installId, installUntil SET #version = #version + :one",
            names={"#version": "version"},
            values={":id": "i", ":one": 1},
            condition="installId = :id",
        )
    )
    assert dynamo.get(key("r"), consistent=True) == {**key("r"), "version": 2, "keep": True}
    dynamo.update(Update(key("r"), "REMOVE nope"))  # removing what is not there is fine
    assert dynamo.get(key("r"), consistent=True) == {**key("r"), "version": 2, "keep": True}


def test_update_add(dynamo: Dynamo) -> None:
    one = {":one": 1}
    dynamo.update(Update(key("t"), "ADD topicChanges :one", values=one))
    dynamo.update(Update(key("t"), "ADD topicChanges :one", values=one))
    assert dynamo.get(key("t"), consistent=True) == {**key("t"), "topicChanges": 2}
    dynamo.update(
        Update(
            key("j"),
            "ADD #joins :d SET #kind = :kind, #group = :g, #ttl = :ttl",
            names={"#joins": "joins", "#kind": "kind", "#group": "groupId", "#ttl": "expiresAt"},
            values={":d": 3, ":kind": "join-count", ":g": "g", ":ttl": 99},
        )
    )
    assert dynamo.get(key("j"), consistent=True) == {
        **key("j"),
        "joins": 3,
        "kind": "join-count",
        "groupId": "g",
        "expiresAt": 99,
    }
    bad = Update(key("t"), "ADD topicChanges :s", values={":s": "x"})
    assert refused(lambda: dynamo.update(bad)) == "ValidationException"


def test_update_if_not_exists_and_list_append(dynamo: Dynamo) -> None:
    update = Update(
        key("l"),
        "SET n = if_not_exists(n, :zero) + :one, l = list_append(if_not_exists(l, :empty), :more)",
        values={":zero": 0, ":one": 1, ":empty": [], ":more": ["x"]},
    )
    assert dynamo.update(update, return_new=True) == {**key("l"), "n": 1, "l": ["x"]}
    assert dynamo.update(update, return_new=True) == {**key("l"), "n": 2, "l": ["x", "x"]}


def test_update_of_a_key_attribute_or_of_one_path_twice_is_refused(dynamo: Dynamo) -> None:
    dynamo.put({**key("k"), "a": 1})
    rekey = Update(key("k"), "SET sk = :other", values={":other": "z"})
    assert refused(lambda: dynamo.update(rekey)) == "ValidationException"
    twice = Update(key("k"), "SET a = :one, a = :two", values={":one": 1, ":two": 2})
    assert refused(lambda: dynamo.update(twice)) == "ValidationException"
    assert dynamo.get(key("k"), consistent=True) == {**key("k"), "a": 1}


# --- item size ---

BIG = 390 * 1024


def test_an_item_over_400_kb_is_refused(dynamo: Dynamo) -> None:
    fits = {**key("big"), "blob": "x" * BIG}
    dynamo.put(fits)
    assert dynamo.get(key("big"), consistent=True) == fits
    too_big = {**key("big"), "blob": "x" * (401 * 1024)}
    assert refused(lambda: dynamo.put(too_big)) == "ValidationException"
    grow = Update(key("big"), "SET more = :more", values={":more": "y" * (20 * 1024)})
    assert refused(lambda: dynamo.update(grow)) == "ValidationException"
    assert refused(lambda: dynamo.transact([Put(too_big)])) == "ValidationException"
    assert refused(lambda: dynamo.batch_write(puts=[too_big])) == "ValidationException"
    assert dynamo.get(key("big"), consistent=True) == fits


# --- transactions ---


def test_a_transaction_writes_all_its_items(dynamo: Dynamo) -> None:
    dynamo.put({**key("upd"), "v": 1})
    dynamo.put({**key("del"), "v": 1})
    dynamo.put({**key("chk"), "v": 1})
    dynamo.transact(
        [
            Put({**key("put"), "v": 1}, condition="attribute_not_exists(pk)"),
            Update(key("upd"), "SET v = v + :one", values={":one": 1}, condition="v = :one"),
            Delete(key("del"), condition="attribute_exists(pk)"),
            Check(key("chk"), "v = :one", values={":one": 1}),
        ]
    )
    assert dynamo.get(key("put"), consistent=True) == {**key("put"), "v": 1}
    assert dynamo.get(key("upd"), consistent=True) == {**key("upd"), "v": 2}
    assert dynamo.get(key("del"), consistent=True) is None
    assert dynamo.get(key("chk"), consistent=True) == {**key("chk"), "v": 1}


def test_a_transaction_with_a_failed_condition_writes_nothing(dynamo: Dynamo) -> None:
    dynamo.put({**key("upd"), "v": 1})
    dynamo.put({**key("del"), "v": 1})
    dynamo.put({**key("chk"), "v": 5, "doc": {"a": [1]}})
    items = [
        Put({**key("put"), "v": 1}, condition="attribute_not_exists(pk)"),
        Update(key("upd"), "SET v = v + :one", values={":one": 1}),
        Check(key("chk"), "v = :one", values={":one": 1}),
        Delete(key("del")),
        Check(key("absent"), "attribute_exists(pk)"),
    ]
    with pytest.raises(TransactionCanceled) as canceled:
        dynamo.transact(items)
    assert canceled.value.failed_conditions() == [2, 4]
    assert canceled.value.reasons == [
        "None",
        "None",
        "ConditionalCheckFailed",
        "None",
        "ConditionalCheckFailed",
    ]
    assert canceled.value.old_items[2] == {**key("chk"), "v": 5, "doc": {"a": [1]}}
    assert canceled.value.old_items[4] is None
    assert dynamo.get(key("put"), consistent=True) is None
    assert dynamo.get(key("upd"), consistent=True) == {**key("upd"), "v": 1}
    assert dynamo.get(key("del"), consistent=True) == {**key("del"), "v": 1}


def test_a_transaction_cannot_hold_two_operations_on_one_item(dynamo: Dynamo) -> None:
    items = [Put({**key("a"), "v": 1}), Put({**key("b"), "v": 1}), Delete(key("a"))]
    assert refused(lambda: dynamo.transact(items)) == "ValidationException"
    check_and_put = [Check(key("b"), "attribute_not_exists(pk)"), Put({**key("b"), "v": 2})]
    assert refused(lambda: dynamo.transact(check_and_put)) == "ValidationException"
    assert dynamo.get(key("a"), consistent=True) is None
    assert dynamo.get(key("b"), consistent=True) is None


def test_a_transaction_holds_at_most_100_items(dynamo: Dynamo) -> None:
    hundred = [Put({**key(f"i{i:03d}"), "v": i}) for i in range(100)]
    dynamo.transact(hundred)
    assert len(list(dynamo.query("pk = :pk", {":pk": "P"}, consistent=True))) == 100
    over = [Put({**key(f"j{i:03d}"), "v": i}) for i in range(101)]
    with pytest.raises(ValueError):
        dynamo.transact(over)
    raw = [{"Put": {"TableName": dynamo.table_name, "Item": serialize(p.item)}} for p in over]
    assert refused(lambda: dynamo.client.transact_write_items(TransactItems=raw)) == (
        "ValidationException"
    )
    assert list(dynamo.query("pk = :pk AND begins_with(sk, :j)", {":pk": "P", ":j": "j"})) == []


# --- queries of the table ---


def _partition(dynamo: Dynamo, pk: str, sks: list[str]) -> list[dict[str, Any]]:
    items = [{**key(sk, pk), "n": i} for i, sk in enumerate(sks)]
    dynamo.batch_write(puts=items)
    return sorted(items, key=lambda i: i[schema.SK])


def sks(items: Any) -> list[str]:
    return [i[schema.SK] for i in items]


def test_query_a_partition_in_sort_key_order(dynamo: Dynamo) -> None:
    items = _partition(dynamo, "T", ["b", "a", "d#2", "c", "d#1", "e", "B", "é"])
    _partition(dynamo, "U", ["a", "z"])
    q = {"values": {":pk": "T"}}
    assert list(dynamo.query("pk = :pk", consistent=True, **q)) == items
    assert sks(dynamo.query("pk = :pk", forward=False, **q)) == sks(items)[::-1]
    assert sks(dynamo.query("pk = :pk", limit=3, **q)) == ["B", "a", "b"]
    assert sks(dynamo.query("pk = :pk", limit=3, forward=False, **q)) == ["é", "e", "d#2"]
    assert list(dynamo.query("pk = :pk", {":pk": "nobody"})) == []


@pytest.mark.parametrize(
    ("condition", "values", "expected"),
    [
        ("pk = :pk AND sk = :s", {":s": "c"}, ["c"]),
        ("pk = :pk AND sk >= :start", {":start": "c"}, ["c", "d#1", "d#2", "e"]),
        ("pk = :pk AND sk > :after", {":after": "c"}, ["d#1", "d#2", "e"]),
        ("pk = :pk AND sk < :s", {":s": "b"}, ["a"]),
        ("pk = :pk AND sk <= :s", {":s": "b"}, ["a", "b"]),
        ("pk = :pk AND sk BETWEEN :lo AND :hi", {":lo": "b", ":hi": "d#1"}, ["b", "c", "d#1"]),
        ("pk = :pk AND begins_with(sk, :p)", {":p": "d#"}, ["d#1", "d#2"]),
        ("pk = :pk AND begins_with(sk, :p)", {":p": "x"}, []),
        ("#k = :pk AND #s > :after", {":after": "d#2"}, ["e"]),
    ],
)
def test_query_key_conditions(
    dynamo: Dynamo, condition: str, values: dict[str, Any], expected: list[str]
) -> None:
    _partition(dynamo, "T", ["a", "b", "c", "d#1", "d#2", "e"])
    names = {"#k": "pk", "#s": "sk"} if "#" in condition else None
    found = dynamo.query(condition, {":pk": "T", **values}, names=names, consistent=True)
    assert sks(found) == expected


def test_a_projected_query_returns_only_the_attributes_named(dynamo: Dynamo) -> None:
    """Reserved words (`state`) included: the adapter names every projected attribute through
    a placeholder; an attribute an item lacks is simply absent."""
    dynamo.put({"pk": "P", "sk": "a", "state": "Stable", "memberEpoch": 3, "big": "x" * 500})
    dynamo.put({"pk": "P", "sk": "b", "memberEpoch": 4})
    found = list(
        dynamo.query(
            "#k = :pk", {":pk": "P"}, names={"#k": "pk"}, consistent=True,
            projection=("state", "memberEpoch"),
        )
    )  # fmt: skip
    assert found == [{"state": "Stable", "memberEpoch": 3}, {"memberEpoch": 4}]


def test_query_follows_the_pages(dynamo: Dynamo) -> None:
    """Over 1 MB of items comes back over several pages, which `query` follows."""
    blobs = [{**key(f"s{i}", "BIG"), "blob": "x" * (300 * 1024)} for i in range(5)]
    for blob in blobs:
        dynamo.put(blob)
    assert list(dynamo.query("pk = :pk", {":pk": "BIG"}, consistent=True)) == blobs
    assert sks(dynamo.query("pk = :pk", {":pk": "BIG"}, forward=False)) == sks(blobs)[::-1]
    assert sks(dynamo.query("pk = :pk", {":pk": "BIG"}, limit=4)) == sks(blobs)[:4]


def _pages(call: Callable[..., dict[str, Any]], **args: Any) -> list[list[str]]:
    """Every page of a raw query or scan, following LastEvaluatedKey."""
    pages = []
    while True:
        response = call(**args)
        pages.append([i[schema.SK]["S"] for i in response["Items"]])
        if "LastEvaluatedKey" not in response:
            return [p for p in pages if p]  # DynamoDB may end on an empty page
        args["ExclusiveStartKey"] = response["LastEvaluatedKey"]


def test_query_pages_with_limit_and_exclusive_start_key(dynamo: Dynamo) -> None:
    _partition(dynamo, "T", [f"s{i}" for i in range(7)])
    args = {
        "TableName": dynamo.table_name,
        "KeyConditionExpression": "pk = :pk",
        "ExpressionAttributeValues": serialize({":pk": "T"}),
        "Limit": 3,
    }
    assert _pages(dynamo.client.query, **args) == [["s0", "s1", "s2"], ["s3", "s4", "s5"], ["s6"]]
    backwards = _pages(dynamo.client.query, **args, ScanIndexForward=False)
    assert backwards == [["s6", "s5", "s4"], ["s3", "s2", "s1"], ["s0"]]
    first = dynamo.client.query(**args)
    assert first["LastEvaluatedKey"] == serialize(key("s2", "T"))


# --- queries of the indexes ---


def _deadline_item(sk: str, shard: str, dl: int) -> dict[str, Any]:
    return {
        **key(sk, "D"),
        schema.DEADLINE_SHARD: shard,
        schema.DEADLINE: dl,
        "kind": "member",
        "groupId": f"g-{sk}",
        "other": "not projected",
    }


def _overdue(dynamo: Dynamo, shard: str, now: int, **kwargs: Any) -> list[dict[str, Any]]:
    """The sweeper's query (DeadlineIndex.overdue)."""
    return list(
        dynamo.query(
            "#shard = :shard AND #dl <= :now",
            {":shard": shard, ":now": now},
            names={"#shard": schema.DEADLINE_SHARD, "#dl": schema.DEADLINE},
            index=schema.DEADLINE_INDEX,
            **kwargs,
        )
    )


def _projected(item: dict[str, Any], projection: list[str], *index_keys: str) -> dict[str, Any]:
    names = [schema.PK, schema.SK, *index_keys, *projection]
    return {k: v for k, v in item.items() if k in names}


def test_the_deadline_index(dynamo: Dynamo) -> None:
    late = _deadline_item("late", "DL#0", 300)
    early = _deadline_item("early", "DL#0", 100)
    middle = _deadline_item("middle", "DL#0", 200)
    other_shard = _deadline_item("other", "DL#1", 50)
    for item in (late, early, middle, other_shard):
        dynamo.put(item)
    dynamo.put({**key("no-deadline", "D"), schema.DEADLINE_SHARD: "DL#0", "kind": "x"})
    dynamo.put({**key("no-shard", "D"), schema.DEADLINE: 10, "kind": "x"})

    def project(item: dict[str, Any]) -> dict[str, Any]:
        return _projected(item, schema.DEADLINE_PROJECTION, schema.DEADLINE_SHARD, schema.DEADLINE)

    assert _overdue(dynamo, "DL#0", 250) == [project(early), project(middle)]
    assert "other" not in _overdue(dynamo, "DL#0", 1000)[0]  # only the projected attributes
    assert _overdue(dynamo, "DL#0", 1000) == [project(early), project(middle), project(late)]
    assert _overdue(dynamo, "DL#0", 99) == []
    assert _overdue(dynamo, "DL#1", 1000) == [project(other_shard)]
    assert _overdue(dynamo, "DL#0", 1000, limit=2) == [project(early), project(middle)]
    assert _overdue(dynamo, "DL#0", 1000, forward=False) == [
        project(late),
        project(middle),
        project(early),
    ]

    # Writes move items in the index, and out of it (a sparse index).
    dynamo.update(
        Update(key("late", "D"), "SET #dl = :dl", names={"#dl": schema.DEADLINE}, values={":dl": 1})
    )
    dynamo.update(
        Update(
            key("middle", "D"),
            "REMOVE #dl, #shard",
            names={"#dl": schema.DEADLINE, "#shard": schema.DEADLINE_SHARD},
        )
    )
    dynamo.update(
        Update(
            key("early", "D"),
            "SET #shard = :s",
            names={"#shard": schema.DEADLINE_SHARD},
            values={":s": "DL#1"},
        )
    )
    moved_late = {**project(late), schema.DEADLINE: 1}
    moved_early = {**project(early), schema.DEADLINE_SHARD: "DL#1"}
    assert _overdue(dynamo, "DL#0", 1000) == [moved_late]
    assert _overdue(dynamo, "DL#1", 1000) == [project(other_shard), moved_early]
    dynamo.delete(key("other", "D"))
    dynamo.batch_write(deletes=[key("early", "D")])
    assert _overdue(dynamo, "DL#1", 1000) == []


def test_the_listing_index(dynamo: Dynamo) -> None:
    groups = []
    for i, group_id in enumerate(["c", "a", "d", "b", "e"]):
        item = {
            **key("GROUP", f"G#{group_id}"),
            schema.LISTING_PK: "GROUPS#0",
            schema.LISTING_SK: group_id,
            "kind": "group",
            "groupId": group_id,
            "groupType": "consumer",
            "groupState": "Stable",
            "protocolType": "consumer",
            "version": i,
            "members": ["m"] * i,
        }
        groups.append(item)
    dynamo.batch_write(puts=groups)
    dynamo.put(
        {
            **key("GROUP", "G#z"),
            schema.LISTING_PK: "GROUPS#1",
            schema.LISTING_SK: "z",
            "groupId": "z",
        }
    )

    def read_shard(after: str | None, limit: int) -> list[dict[str, Any]]:
        """groups.GroupDirectory._read_shard's query."""
        condition, names = "#pk = :pk", {"#pk": schema.LISTING_PK}
        values: dict[str, Any] = {":pk": "GROUPS#0"}
        if after is not None:
            condition += " AND #sk > :after"
            names["#sk"] = schema.LISTING_SK
            values[":after"] = after
        return list(
            dynamo.query(condition, values, names=names, index=schema.LISTING_INDEX, limit=limit)
        )

    def project(item: dict[str, Any]) -> dict[str, Any]:
        return _projected(
            item, schema.GROUP_LISTING_PROJECTION, schema.LISTING_PK, schema.LISTING_SK
        )

    by_id = {g["groupId"]: project(g) for g in groups}
    assert read_shard(None, 2) == [by_id["a"], by_id["b"]]
    assert read_shard("b", 2) == [by_id["c"], by_id["d"]]
    assert read_shard("d", 2) == [by_id["e"]]
    assert read_shard("e", 2) == []
    assert read_shard(None, 10) == [by_id[g] for g in "abcde"]


def test_index_pages_with_limit_and_exclusive_start_key(dynamo: Dynamo) -> None:
    for i in range(5):
        dynamo.put(_deadline_item(f"s{i}", "DL#3", 10 * i))
    args = {
        "TableName": dynamo.table_name,
        "IndexName": schema.DEADLINE_INDEX,
        "KeyConditionExpression": "dlShard = :s AND dl >= :zero",
        "ExpressionAttributeValues": serialize({":s": "DL#3", ":zero": 0}),
        "Limit": 2,
    }
    assert _pages(dynamo.client.query, **args) == [["s0", "s1"], ["s2", "s3"], ["s4"]]
    first = dynamo.client.query(**args)
    assert first["LastEvaluatedKey"] == serialize(
        {**key("s1", "D"), schema.DEADLINE_SHARD: "DL#3", schema.DEADLINE: 10}
    )


def test_an_index_refuses_consistent_reads(dynamo: Dynamo) -> None:
    args = {
        "TableName": dynamo.table_name,
        "IndexName": schema.DEADLINE_INDEX,
        "KeyConditionExpression": "dlShard = :s",
        "ExpressionAttributeValues": serialize({":s": "DL#0"}),
        "ConsistentRead": True,
    }
    assert refused(lambda: dynamo.client.query(**args)) == "ValidationException"


# --- batches ---


def test_batch_get(dynamo: Dynamo) -> None:
    items = [{**key(f"k{i:03d}", "B"), "v": i} for i in range(150)]
    dynamo.batch_write(puts=items)
    asked = [key(f"k{i:03d}", "B") for i in range(0, 150, 2)] + [key("missing", "B")]
    asked += asked[:10]  # asked twice: read once
    found = dynamo.batch_get(asked, consistent=True)
    assert sorted(found, key=lambda i: i[schema.SK]) == items[0:150:2]
    assert dynamo.batch_get([]) == []
    assert dynamo.batch_get([key("missing", "B")]) == []


def test_batch_get_refuses_a_key_twice(dynamo: Dynamo) -> None:
    twice = {dynamo.table_name: {"Keys": [serialize(key("a")), serialize(key("a"))]}}
    assert refused(lambda: dynamo.client.batch_get_item(RequestItems=twice)) == (
        "ValidationException"
    )


def test_batch_write(dynamo: Dynamo) -> None:
    items = [{**key(f"k{i:03d}", "W"), "v": i, "doc": {"i": [i]}} for i in range(60)]
    dynamo.batch_write(puts=items)
    assert list(dynamo.query("pk = :pk", {":pk": "W"}, consistent=True)) == items
    dynamo.batch_write(
        puts=[{**items[0], "v": -1}], deletes=[key(f"k{i:03d}", "W") for i in range(1, 60)]
    )
    assert list(dynamo.query("pk = :pk", {":pk": "W"}, consistent=True)) == [{**items[0], "v": -1}]
    dynamo.batch_write(deletes=[key("never-there", "W")])


def test_batch_write_refuses_a_key_twice(dynamo: Dynamo) -> None:
    assert refused(lambda: dynamo.batch_write(deletes=[key("a"), key("a")])) == (
        "ValidationException"
    )


# --- scans ---


def test_scan_reads_every_item(dynamo: Dynamo) -> None:
    assert list(dynamo.scan()) == []
    small = [{**key(f"s{i}", f"P{i % 3}"), "v": i} for i in range(20)]
    big = [{**key(f"b{i}", "BIG"), "blob": "x" * (300 * 1024)} for i in range(5)]
    dynamo.batch_write(puts=small)
    for item in big:
        dynamo.put(item)
    found = list(dynamo.scan())
    assert len(found) == 25
    assert sorted(found, key=lambda i: (i[schema.PK], i[schema.SK])) == sorted(
        small + big, key=lambda i: (i[schema.PK], i[schema.SK])
    )


def test_scan_pages_with_limit_and_exclusive_start_key(dynamo: Dynamo) -> None:
    dynamo.batch_write(puts=[{**key(f"s{i}", f"P{i}"), "v": i} for i in range(7)])
    pages = _pages(dynamo.client.scan, TableName=dynamo.table_name, Limit=3)
    assert [len(p) for p in pages] == [3, 3, 1]
    assert sorted(sk for page in pages for sk in page) == [f"s{i}" for i in range(7)]


# --- what the adapters report ---


def test_usage_is_counted_the_same(dynamo: Dynamo) -> None:
    with capacity.metered() as usage:
        dynamo.put({**key("u"), "v": 1})
        dynamo.get(key("u"), consistent=True)
        dynamo.transact([Update(key("u"), "SET v = :two", values={":two": 2})])
        list(dynamo.query("pk = :pk", {":pk": "P"}))
    assert usage.by_operation == {
        "put_item": 1,
        "get_item": 1,
        "transact_write_items": 1,
        "query": 1,
    }
    assert usage.writes_by_key == {"P": 2}
