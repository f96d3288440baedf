"""Kafka-style topic ids (topic_ids.py): Uuid.randomUuid() in Kafka's string form."""

from __future__ import annotations

import base64
import re
import uuid

import pytest

from groupcoord import topic_ids
from groupcoord.topic_ids import ZERO_UUID, new_topic_id

URL_SAFE_22 = re.compile(r"^[A-Za-z0-9_-]{22}$")


def decode(topic_id: str) -> bytes:
    return base64.urlsafe_b64decode(topic_id + "==")


def test_zero_uuid_is_kafkas_zero_id() -> None:
    assert decode(ZERO_UUID) == bytes(16)
    assert len(ZERO_UUID) == 22


def test_new_topic_id_is_22_url_safe_base64_chars_of_16_bytes() -> None:
    for _ in range(500):
        topic_id = new_topic_id()
        assert URL_SAFE_22.match(topic_id), topic_id
        raw = decode(topic_id)
        assert len(raw) == 16
        # Written back, it is the same string: no padding, URL-safe alphabet.
        assert base64.urlsafe_b64encode(raw).decode().rstrip("=") == topic_id


def test_new_topic_ids_are_random_version_4_uuids() -> None:
    ids = [new_topic_id() for _ in range(1000)]
    assert len(set(ids)) == len(ids)
    for topic_id in ids:
        assert uuid.UUID(bytes=decode(topic_id)).version == 4
        assert topic_id != ZERO_UUID
        assert not topic_id.startswith("-")


def _draws(monkeypatch: pytest.MonkeyPatch, draws: list[uuid.UUID]) -> None:
    """uuid.uuid4() hands out `draws`, in order."""
    queue = iter(draws)
    monkeypatch.setattr(topic_ids.uuid, "uuid4", lambda: next(queue))


def test_the_zero_id_is_redrawn(monkeypatch: pytest.MonkeyPatch) -> None:
    good = uuid.UUID("6f1c2b1e-8a5d-4f8e-9c3b-2d7e4a1f0b9c")
    _draws(monkeypatch, [uuid.UUID(int=0), good])
    assert new_topic_id() == base64.urlsafe_b64encode(good.bytes).decode().rstrip("=")


def test_an_id_starting_with_a_dash_is_redrawn(monkeypatch: pytest.MonkeyPatch) -> None:
    # 0xF8 = 0b111110_00: the first base64 digit is 62, "-" in the URL-safe alphabet.
    dashed = uuid.UUID(bytes=b"\xf8" + bytes(range(1, 16)))
    assert base64.urlsafe_b64encode(dashed.bytes).decode().startswith("-")
    good = uuid.UUID("0f1c2b1e-8a5d-4f8e-9c3b-2d7e4a1f0b9c")
    _draws(monkeypatch, [dashed, dashed, uuid.UUID(int=0), good])
    topic_id = new_topic_id()
    assert topic_id == base64.urlsafe_b64encode(good.bytes).decode().rstrip("=")
    assert not topic_id.startswith("-")


def test_an_underscore_start_is_fine(monkeypatch: pytest.MonkeyPatch) -> None:
    # 0xFC = 0b111111_00: digit 63, "_"; Kafka only redraws a leading "-".
    underscored = uuid.UUID(bytes=b"\xfc" + bytes(range(1, 16)))
    _draws(monkeypatch, [underscored])
    assert new_topic_id().startswith("_")
