"""The write of a group item as the difference from the one read, for the families whose group
item holds a fixed set of fields (store/codecs/consumer.py, store/codecs/streams.py): every
write is conditioned on the `version` read and bumps it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from . import schema
from .dynamo import Update


def version_update(
    group_id: str,
    before: Mapping[str, Any],
    after: Mapping[str, Any],
    expected_version: int,
    adds: Mapping[str, int] | None = None,
) -> Update:
    """The group item's write of what changed from `before` to `after` (attribute name ->
    value, None: absent; SET, or REMOVE what became absent), `adds` ADDed, and `version`
    bumped, on the version read."""
    names = {"#version": "version"}
    values: dict[str, Any] = {":expected": expected_version, ":one": 1}
    sets, removes = [], []
    for i, (name, value) in enumerate(after.items()):
        if value == before[name]:
            continue
        names[f"#a{i}"] = name
        if value is None:
            removes.append(f"#a{i}")
        else:
            values[f":a{i}"] = value
            sets.append(f"#a{i} = :a{i}")
    sets.append("#version = #version + :one")
    expression = "SET " + ", ".join(sets)
    if removes:
        expression += " REMOVE " + ", ".join(removes)
    if adds:
        for i, (name, delta) in enumerate(adds.items()):
            names[f"#d{i}"], values[f":d{i}"] = name, delta
        expression += " ADD " + ", ".join(f"#d{i} :d{i}" for i in range(len(adds)))
    return Update(
        schema.group_key(group_id),
        expression,
        names=names,
        values=values,
        condition="#version = :expected",
    )
