"""The offsets CSV of `kafka-consumer-groups.sh --reset-offsets --export` (admin/offsets_csv.py):
Kafka writes `topic,partition,offset` lines without a header for one group and puts the group
first for several; every field, the row count and the file size are bounded, and a bad row is
named by its line."""

from __future__ import annotations

from pathlib import Path

import pytest

from groupcoord.admin.offsets_csv import (
    MAX_FILE_BYTES,
    MAX_ROWS,
    CsvError,
    OffsetRow,
    format_offsets,
    parse_offsets,
    read_offsets_file,
)


def test_kafka_s_single_group_export_reads_and_writes_back_the_same() -> None:
    text = "orders,0,100\norders,1,101\naudit,0,7\n"
    rows = parse_offsets(text, "g")
    assert rows == [
        OffsetRow(1, "orders", 0, 100),
        OffsetRow(2, "orders", 1, 101),
        OffsetRow(3, "audit", 0, 7),
    ]
    assert format_offsets((r.topic, r.partition, r.offset) for r in rows) == text


def test_the_several_groups_form_keeps_the_group_s_rows_only() -> None:
    text = 'g,orders,0,5\n"other,group",orders,0,9\r\n\ng,orders,1,6\n'
    assert [(r.line, r.partition, r.offset) for r in parse_offsets(text, "g")] == [
        (1, 0, 5),
        (4, 1, 6),
    ]
    with pytest.raises(CsvError, match=r"no row for group h \(3 row\(s\) of other groups\)"):
        parse_offsets(text, "h")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("t,0,1\nt,1\n", "line 2: expected topic,partition,offset"),
        ("t,0,1\nt,0,2\n", "line 2: t-0 is already on line 1"),
        ("t,-1,1\n", "line 1: partition '-1'"),
        ("t,2147483648,1\n", "line 1: partition '2147483648'"),
        ("t,0,9223372036854775808\n", "line 1: offset '9223372036854775808'"),
        ("t,0,01\n", "line 1: offset '01'"),
        ("t,0,1.5\n", "line 1: offset '1.5'"),
        ("topic,partition,offset\n", "line 1: partition 'partition'"),  # a header: not Kafka's
        (f"{'t' * 250},0,1\n", "line 1: 'tttt"),
        ("t t,0,1\n", "line 1: 't t' is not a topic name"),
        (f"{'g' * 256},t,0,1\n", "line 1: the group id is longer than 255"),
        ('"t,0,1\n', "line 1: not CSV"),
        ("\n\n", "no row for group g"),
    ],
)
def test_a_bad_row_is_named_by_its_line(text: str, message: str) -> None:
    with pytest.raises(CsvError) as raised:
        parse_offsets(text, "g")
    assert message in str(raised.value)


def test_rows_and_file_size_are_bounded(tmp_path: Path) -> None:
    many = "".join(f"t,{p},0\n" for p in range(MAX_ROWS + 1))
    with pytest.raises(CsvError, match=f"line {MAX_ROWS + 1}: more than {MAX_ROWS} rows"):
        parse_offsets(many, "g")
    assert len(parse_offsets(many.rsplit("t,", 1)[0], "g")) == MAX_ROWS
    big = tmp_path / "big.csv"
    big.write_bytes(b"t,0,1\n" + b" " * MAX_FILE_BYTES)
    with pytest.raises(CsvError, match="larger than"):
        read_offsets_file(str(big), "g")
    latin = tmp_path / "latin.csv"
    latin.write_bytes(b"t\xe9,0,1\n")
    with pytest.raises(CsvError, match="not UTF-8"):
        read_offsets_file(str(latin), "g")
    bom = tmp_path / "bom.csv"
    bom.write_bytes(b"\xef\xbb\xbft,0,1\n")  # a spreadsheet's save
    assert read_offsets_file(str(bom), "g") == [OffsetRow(1, "t", 0, 1)]
