"""What an admin command answers and how it is printed: a table for people, a document for
--json, notes, and the failures that make the exit status 1."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

Table = tuple[list[str], list[list[Any]]]


class CommandError(Exception):
    """A refusal to report as one line on stderr (exit status 1)."""


@dataclass
class Output:
    """What a command prints: a table for people, a document for --json."""

    document: Any
    tables: list[Table]
    notes: list[str]
    # One line each, on stderr after the output, exit status 1: what failed while the rest
    # went on (one group of several, as kafka-consumer-groups.sh does).
    failures: list[str] = field(default_factory=list)


def one_line(text: str) -> str:
    return " ".join(text.split())


def cell(value: Any) -> str:
    return "-" if value is None or value == "" else str(value)


def format_table(header: list[str], rows: list[list[Any]]) -> str:
    cells = [header] + [[cell(v) for v in row] for row in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(header))]
    return "\n".join(
        "  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in cells
    )


def print_output(output: Output, as_json: bool) -> None:
    if as_json:
        print(json.dumps(output.document, indent=2, sort_keys=True))
        return
    blocks = [format_table(h, rows) for h, rows in output.tables if rows]
    blocks += output.notes
    print("\n\n".join(blocks))
