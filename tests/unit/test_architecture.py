"""The layering rules import-linter cannot see (its contracts are in pyproject.toml and run by
.ci/run): only store/ touches the DynamoDB adapter, even through an attribute."""

from __future__ import annotations

import ast
from pathlib import Path

import groupcoord

PACKAGE = Path(groupcoord.__file__).parent
# The store owns the adapter; `serve` (local/) builds one to hand to the store.
OWNERS = {"store", "local"}


def _modules_outside_the_store() -> list[Path]:
    return [
        path
        for path in sorted(PACKAGE.rglob("*.py"))
        if path.relative_to(PACKAGE).parts[0] not in OWNERS
    ]


def test_no_module_outside_the_store_reaches_the_dynamodb_adapter() -> None:
    offenders = []
    for path in _modules_outside_the_store():
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Attribute) and node.attr == "dynamo":
                offenders.append(f"{path.relative_to(PACKAGE)}:{node.lineno}")
    assert offenders == []


def test_the_check_sees_the_modules_it_guards() -> None:
    names = {str(p.relative_to(PACKAGE)) for p in _modules_outside_the_store()}
    assert {"service/sweep.py", "service/offsets.py", "http/resolver.py"} <= names
