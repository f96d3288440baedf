"""Parsed expressions (expressions.py) evaluated on an item with one request's placeholder
names and values: whether a condition holds, and the item an update makes."""

from __future__ import annotations

import copy
from collections.abc import Iterable
from typing import Any

from ...store.dynamo import deserialize
from .errors import Refused, invalid
from .values import MISSING, compare, dynamo_type, lookup


class Evaluation:
    """Parsed expressions evaluated with one request's names and values."""

    def __init__(self, names: dict[str, str] | None, values: dict[str, Any] | None) -> None:
        self.names = names or {}
        self.values = deserialize(values) if values else {}

    def path(self, steps: tuple) -> tuple:
        return tuple(
            self.names[s] if isinstance(s, str) and s.startswith("#") else s for s in steps
        )

    def operand(self, node: tuple, item: dict[str, Any]) -> Any:
        if node[0] == "value":
            return self.values[node[1]]
        return lookup(item, self.path(node[1]))

    def holds(self, node: tuple, item: dict[str, Any]) -> bool:
        tag = node[0]
        if tag == "or":
            return self.holds(node[1], item) or self.holds(node[2], item)
        if tag == "and":
            return self.holds(node[1], item) and self.holds(node[2], item)
        if tag == "not":
            return not self.holds(node[1], item)
        if tag == "exists":
            return lookup(item, self.path(node[1])) is not MISSING
        if tag == "not_exists":
            return lookup(item, self.path(node[1])) is MISSING
        if tag == "cmp":
            return compare(node[1], self.operand(node[2], item), self.operand(node[3], item))
        if tag == "between":
            subject = self.operand(node[1], item)
            return compare(">=", subject, self.operand(node[2], item)) and compare(
                "<=", subject, self.operand(node[3], item)
            )
        if tag == "in":
            subject = self.operand(node[1], item)
            return any(compare("=", subject, self.operand(o, item)) for o in node[2])
        if tag == "begins":
            subject, prefix = self.operand(node[1], item), self.operand(node[2], item)
            if subject is MISSING or prefix is MISSING:
                return False
            kind = dynamo_type(subject)
            return kind in ("S", "B") and kind == dynamo_type(prefix) and subject.startswith(prefix)
        raise invalid(f"Invalid ConditionExpression: {tag}")

    # updates

    def value(self, node: tuple, item: dict[str, Any]) -> Any:
        tag = node[0]
        if tag == "value":
            return self.values[node[1]]
        if tag == "path":
            found = lookup(item, self.path(node[1]))
            if found is MISSING:
                raise invalid(
                    "The provided expression refers to an attribute that does not exist in the item"
                )
            return found
        if tag == "if_not_exists":
            found = lookup(item, self.path(node[1]))
            return self.value(node[2], item) if found is MISSING else found
        if tag == "list_append":
            first, second = self.value(node[1], item), self.value(node[2], item)
            for operand in (first, second):
                if not isinstance(operand, list):
                    raise invalid(
                        "Invalid UpdateExpression: Incorrect operand type for operator or "
                        "function; operator or function: list_append, operand type: "
                        f"{dynamo_type(operand)}"
                    )
            return [*first, *second]
        if tag == "arith":
            left, right = self.value(node[2], item), self.value(node[3], item)
            for operand in (left, right):
                if dynamo_type(operand) != "N":
                    raise invalid(
                        "Invalid UpdateExpression: Incorrect operand type for operator or "
                        f"function; operator or function: {node[1]}, operand type: "
                        f"{dynamo_type(operand)}"
                    )
            return left + right if node[1] == "+" else left - right
        raise invalid(f"Invalid UpdateExpression: {tag}")

    def apply(
        self, actions: tuple, item: dict[str, Any], key_names: Iterable[str]
    ) -> dict[str, Any]:
        """The item after the update; every operand is read from the item before it."""
        planned: list[tuple[str, tuple, Any]] = []
        for action in actions:
            verb, path = action[0], self.path(action[1])
            if path[0] in key_names:
                raise invalid(
                    "One or more parameter values were invalid: Cannot update attribute "
                    f"{path[0]}. This attribute is part of the key"
                )
            value = None
            if verb == "set":
                value = self.value(action[2], item)
            elif verb in ("add", "delete"):
                value = self._add_or_delete(verb, lookup(item, path), self.value(action[2], item))
            planned.append((verb, path, value))
        for i, (_, first, _) in enumerate(planned):
            for _, second, _ in planned[i + 1 :]:
                if first[: len(second)] == second or second[: len(first)] == first:
                    raise invalid(
                        "Invalid UpdateExpression: Two document paths overlap with each other; "
                        "must remove or rewrite one of these paths; "
                        f"path one: {list(first)}, path two: {list(second)}"
                    )
        new = dict(item)
        copied: set[str] = set()
        for verb, path, value in planned:
            top = path[0]
            if len(path) > 1 and top in new and top not in copied:
                new[top] = copy.deepcopy(new[top])  # never change the old item's values
                copied.add(top)
            if verb == "remove" or value is MISSING:
                _remove(new, path)
            else:
                _set(new, path, value)
        return new

    @staticmethod
    def _add_or_delete(verb: str, current: Any, operand: Any) -> Any:
        kind = dynamo_type(operand)
        if verb == "add" and kind == "N" and current is MISSING:
            return operand
        if verb == "add" and kind == "N" and dynamo_type(current) == "N":
            return current + operand
        if kind in ("SS", "NS", "BS") and current is MISSING:
            return operand if verb == "add" else MISSING
        if kind in ("SS", "NS", "BS") and dynamo_type(current) == kind:
            result = current | operand if verb == "add" else current - operand
            return result if result else MISSING
        raise invalid("An operand in the update expression has an incorrect data type")


def _invalid_path() -> Refused:
    return invalid("The document path provided in the update expression is invalid for update")


def _set(item: dict[str, Any], path: tuple, value: Any) -> None:
    if len(path) == 1:
        item[path[0]] = value
        return
    parent, last = lookup(item, path[:-1]), path[-1]
    if isinstance(last, int) and isinstance(parent, list):
        if last < len(parent):
            parent[last] = value
        else:
            parent.append(value)
    elif isinstance(last, str) and isinstance(parent, dict):
        parent[last] = value
    else:
        raise _invalid_path()


def _remove(item: dict[str, Any], path: tuple) -> None:
    if len(path) == 1:
        item.pop(path[0], None)
        return
    parent, last = lookup(item, path[:-1]), path[-1]
    if isinstance(last, int) and isinstance(parent, list):
        if last < len(parent):
            del parent[last]
    elif isinstance(last, str) and isinstance(parent, dict):
        parent.pop(last, None)
    else:
        raise _invalid_path()
