"""Kafka-style topic ids: a random UUID written as URL-safe base64 without padding (22 chars)."""

import base64
import uuid

ZERO_UUID = "AAAAAAAAAAAAAAAAAAAAAA"


def new_topic_id() -> str:
    # Kafka's Uuid.randomUuid() never hands out the zero id or one starting with '-'
    # (it would look like a command-line flag); redraw in those cases like Kafka does.
    while True:
        text = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode("ascii").rstrip("=")
        if text != ZERO_UUID and not text.startswith("-"):
            return text
