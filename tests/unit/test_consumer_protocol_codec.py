"""Kafka's ConsumerProtocol encoding (wire/consumer_protocol.py): round trips of Subscription
and Assignment v0-v3, and kafka-python's encodings decoded."""

from __future__ import annotations

import struct

import pytest
from kafka.protocol.consumer.metadata import (
    ConsumerProtocolAssignment,
    ConsumerProtocolSubscription,
)

from groupcoord.wire.consumer_protocol import (
    Assignment,
    ConsumerProtocolError,
    Subscription,
    decode_assignment,
    decode_subscription,
    encode_assignment,
    encode_subscription,
)

OWNED = {"orders": [0, 2], "payments": [1]}


def subscription(version: int) -> Subscription:
    return Subscription(
        topics=["orders", "payments"],
        user_data=b"\x00user",
        owned_partitions=OWNED if version >= 1 else {},
        generation_id=7 if version >= 2 else -1,
        rack_id="rack-a" if version >= 3 else None,
        version=version,
    )


@pytest.mark.parametrize("version", [0, 1, 2, 3])
def test_subscription_round_trips(version: int) -> None:
    original = subscription(version)
    assert decode_subscription(encode_subscription(original)) == original


@pytest.mark.parametrize("version", [0, 1, 2, 3])
def test_assignment_round_trips(version: int) -> None:
    original = Assignment({"orders": [1, 3], "payments": []}, b"data", version)
    assert decode_assignment(encode_assignment(original)) == original


def test_null_user_data_and_rack_round_trip() -> None:
    original = Subscription(["t"], None, {}, -1, None, 3)
    assert decode_subscription(encode_subscription(original)) == original
    assignment = Assignment({"t": [0]}, None, 1)
    assert decode_assignment(encode_assignment(assignment)) == assignment


def _kafka_python_subscription(version: int) -> bytes:
    fields: dict = {"version": version, "topics": ["orders", "payments"], "user_data": b"\x00user"}
    if version >= 1:
        fields["owned_partitions"] = [
            ConsumerProtocolSubscription.TopicPartition(topic=t, partitions=p)
            for t, p in OWNED.items()
        ]
    if version >= 2:
        fields["generation_id"] = 7
    if version >= 3:
        fields["rack_id"] = "rack-a"
    return ConsumerProtocolSubscription(**fields).encode()


@pytest.mark.parametrize("version", [0, 1, 2, 3])
def test_decodes_kafka_pythons_subscriptions(version: int) -> None:
    assert decode_subscription(_kafka_python_subscription(version)) == subscription(version)


@pytest.mark.parametrize("version", [0, 1, 2, 3])
def test_kafka_python_decodes_our_subscriptions(version: int) -> None:
    decoded = ConsumerProtocolSubscription.decode(encode_subscription(subscription(version)))
    assert list(decoded.topics) == ["orders", "payments"]
    assert decoded.user_data == b"\x00user"
    if version >= 1:
        owned = {tp.topic: list(tp.partitions) for tp in decoded.owned_partitions}
        assert owned == OWNED
    if version >= 3:
        assert (decoded.generation_id, decoded.rack_id) == (7, "rack-a")


@pytest.mark.parametrize("version", [0, 1, 2, 3])
def test_decodes_kafka_pythons_assignments_both_ways(version: int) -> None:
    theirs = ConsumerProtocolAssignment(
        version,
        [("orders", [0, 1]), ("payments", [2])],
        b"ud",
    ).encode()
    decoded = decode_assignment(theirs)
    assert decoded == Assignment({"orders": [0, 1], "payments": [2]}, b"ud", version)
    back = ConsumerProtocolAssignment.decode(encode_assignment(decoded))
    assert sorted((tp.topic, tp.partition) for tp in back.partitions()) == [
        ("orders", 0),
        ("orders", 1),
        ("payments", 2),
    ]


def test_a_newer_version_is_read_as_v3_ignoring_trailing_fields() -> None:
    v3 = encode_subscription(subscription(3))
    v4 = struct.pack(">h", 4) + v3[2:] + b"\x00\x00\x00\x2a"  # a future field appended
    decoded = decode_subscription(v4)
    assert decoded.topics == ["orders", "payments"]
    assert (decoded.owned_partitions, decoded.generation_id, decoded.rack_id) == (
        OWNED,
        7,
        "rack-a",
    )


def test_a_v1_subscription_without_the_optional_tail_still_decodes() -> None:
    # Written by a client that stops after userData (the fields are "ignorable").
    truncated = encode_subscription(Subscription(["t"], b"", {}, -1, None, 0))
    decoded = decode_subscription(struct.pack(">h", 2) + truncated[2:])
    assert (decoded.topics, decoded.owned_partitions, decoded.generation_id) == (["t"], {}, -1)


def test_empty_assignment_bytes_are_no_partitions() -> None:
    assert decode_assignment(b"") == Assignment({})


@pytest.mark.parametrize(
    "data",
    [
        b"",
        b"\x00",
        b"\xff\xff\x00\x00\x00\x00",  # negative version
        b"\x00\x00\x00\x00\x00\x01\x00\x05ab",  # string shorter than its length
        b"\x00\x00\x7f\xff\xff\xff",  # an array longer than the data
    ],
)
def test_malformed_subscriptions_are_rejected(data: bytes) -> None:
    with pytest.raises(ConsumerProtocolError):
        decode_subscription(data)


def test_malformed_assignments_are_rejected() -> None:
    with pytest.raises(ConsumerProtocolError):
        decode_assignment(b"\x00\x00\x00\x00\x00\x01\x00")
