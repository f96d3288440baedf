"""A request's topic, given by name, topic id or both, as the topic registry has it."""

from __future__ import annotations

from ..core.topics import TopicRecord
from ..errors import BadRequest, Errors
from ..topic_ids import ZERO_UUID
from .context import ApiContext


def resolve_topic(
    ctx: ApiContext, name: str | None, topic_id: str | None, field: str
) -> tuple[TopicRecord | None, Errors]:
    """The registry's topic for a request topic given by name, id or both."""
    by_id = topic_id not in (None, ZERO_UUID)
    if by_id:
        assert topic_id is not None
        # Eventually consistent: every commit resolves its topics, and they all share the
        # TOPICS key; a topic created a moment ago may read as unknown (3) once.
        record = ctx.store.topics.get_by_id(topic_id, consistent=False)
        if record is not None and name is not None and record.name != name:
            raise BadRequest(field, f"topicId {topic_id} is topic {record.name!r}, not {name!r}")
        if record is None:
            if name is not None and ctx.store.topics.get(name, consistent=False) is not None:
                raise BadRequest(field, f"topic {name!r} does not have topicId {topic_id}")
            return None, Errors.UNKNOWN_TOPIC_ID
        return record, Errors.NONE
    if name is None:
        raise BadRequest(field, "a topic needs a name or a topicId")
    record = ctx.store.topics.get(name, consistent=False)
    return record, Errors.NONE if record else Errors.UNKNOWN_TOPIC_OR_PARTITION
