"""The offsets CSV of `kafka-consumer-groups.sh --reset-offsets --export` (Kafka's
ConsumerGroupCommand, CsvUtils): no header, one line per partition, `topic,partition,offset`
for one group and `group,topic,partition,offset` for several; read by `--from-file`. Read and
written here for `groupcoord offsets import|export` (offsets_transfer.py), with bounds on
everything the file carries: its size, its rows, each name and number. Standard library only
(the admin commands run without the server's dependencies)."""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Iterable
from dataclasses import dataclass

MAX_FILE_BYTES = 8 * 1024 * 1024
MAX_ROWS = 100_000  # a topic's partitions at most (the coordinator's partition-count ceiling)
TOPIC_MAX_CHARS = 249  # Kafka's topic names: up to 249 of [a-zA-Z0-9._-]
GROUP_MAX_CHARS = 255
PARTITION_MAX = 2**31 - 1
OFFSET_MAX = 2**63 - 1
_TOPIC = re.compile(r"^[a-zA-Z0-9._-]{1,249}$")
_NUMBER = re.compile(r"^(0|[1-9][0-9]{0,18})$")


class CsvError(ValueError):
    """A file that is not an offsets CSV, with where and why."""


@dataclass(frozen=True)
class OffsetRow:
    line: int  # 1-based, for messages
    topic: str
    partition: int
    offset: int


def parse_offsets(text: str, group: str) -> list[OffsetRow]:
    """The rows of `group` in an offsets CSV (three columns; or four, the group first, when
    Kafka exported several groups: the other groups' rows are left out). Blank lines are
    skipped. CsvError names the line of the first bad row, of a partition given twice, or
    says that no row names the group."""
    rows: list[OffsetRow] = []
    seen: dict[tuple[str, int], int] = {}
    others = 0
    for line, fields in _records(text):
        if len(fields) == 4:
            if len(fields[0]) > GROUP_MAX_CHARS:
                raise CsvError(f"line {line}: the group id is longer than {GROUP_MAX_CHARS}")
            if fields[0] != group:
                others += 1
                continue
            fields = fields[1:]
        elif len(fields) != 3:
            raise CsvError(
                f"line {line}: expected topic,partition,offset (or group,topic,partition,"
                f"offset), found {len(fields)} field(s)"
            )
        row = _row(line, *fields)
        first = seen.setdefault((row.topic, row.partition), line)
        if first != line:
            raise CsvError(f"line {line}: {row.topic}-{row.partition} is already on line {first}")
        rows.append(row)
        if len(rows) + others > MAX_ROWS:
            raise CsvError(f"line {line}: more than {MAX_ROWS} rows")
    if not rows:
        found = f" ({others} row(s) of other groups)" if others else ""
        raise CsvError(f"no row for group {group}{found}")
    return rows


def _records(text: str) -> Iterable[tuple[int, list[str]]]:
    """(line number, fields) of each non-blank line; quoting as Jackson's CSV writes it."""
    for number, raw in enumerate(text.split("\n"), start=1):
        line = raw.rstrip("\r")
        if not line.strip():
            continue
        try:
            (fields,) = list(csv.reader([line], strict=True))
        except (csv.Error, ValueError) as error:
            raise CsvError(f"line {number}: not CSV ({error})") from None
        yield number, fields


def _row(line: int, topic: str, partition: str, offset: str) -> OffsetRow:
    topic, partition, offset = topic.strip(), partition.strip(), offset.strip()
    if not _TOPIC.fullmatch(topic):
        raise CsvError(
            f"line {line}: {topic[:60]!r} is not a topic name (1 to {TOPIC_MAX_CHARS} of "
            "a-z A-Z 0-9 . _ -)"
        )
    if not _NUMBER.fullmatch(partition) or int(partition) > PARTITION_MAX:
        raise CsvError(f"line {line}: partition {partition[:30]!r} is not an integer >= 0")
    if not _NUMBER.fullmatch(offset) or int(offset) > OFFSET_MAX:
        raise CsvError(f"line {line}: offset {offset[:30]!r} is not an integer >= 0")
    return OffsetRow(line, topic, int(partition), int(offset))


def read_offsets_file(path: str, group: str) -> list[OffsetRow]:
    """`parse_offsets` of a file of at most MAX_FILE_BYTES of UTF-8. OSError as raised."""
    with open(path, "rb") as file:
        data = file.read(MAX_FILE_BYTES + 1)
    if len(data) > MAX_FILE_BYTES:
        raise CsvError(f"{path}: larger than {MAX_FILE_BYTES} bytes")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        raise CsvError(f"{path}: not UTF-8 (byte {error.start})") from None
    return parse_offsets(text, group)


def format_offsets(offsets: Iterable[tuple[str, int, int]]) -> str:
    """`topic,partition,offset` lines, as Kafka exports one group (no header)."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    for topic, partition, offset in offsets:
        writer.writerow([topic, partition, offset])
    return out.getvalue()
