"""The streams heartbeat's request checks (core/streams/validation.py and the topology's,
core/streams/topology.py): 42 naming the field, 130 for a topology that can never be valid,
and the member epoch check (110)."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from groupcoord.core.streams.member import StreamsGroupMember
from groupcoord.core.streams.reconciliation import MemberTasks
from groupcoord.core.streams.tasks import TasksTuple
from groupcoord.core.streams.validation import check_member_epoch, owned_tasks, validate_heartbeat
from groupcoord.errors import Errors
from groupcoord.models.limits import TOPOLOGY_MAX_CHARS
from groupcoord.models.streams import StreamsGroupHeartbeatRequest

SUB = {"subtopologyId": "0", "sourceTopics": ["in"]}


def request(epoch: int = 0, **fields: Any) -> StreamsGroupHeartbeatRequest:
    body: dict[str, Any] = {"groupId": "g", "memberId": "m", "memberEpoch": epoch}
    if epoch == 0:
        body |= {
            "rebalanceTimeoutMs": 30000,
            "topology": {"epoch": 1, "subtopologies": [SUB]},
            "activeTasks": [],
            "standbyTasks": [],
            "warmupTasks": [],
        }
    return StreamsGroupHeartbeatRequest.model_validate(body | fields)


def refusal(**kwargs: Any) -> tuple[int, str] | None:
    found = validate_heartbeat(request(**kwargs))
    return None if found is None else (found.error, found.message)


def test_a_well_formed_join_passes() -> None:
    assert refusal() is None
    assert refusal(epoch=3) is None


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"memberId": ""}, "MemberId can't be empty."),
        ({"rackId": ""}, "RackId can't be empty."),
        ({"rebalanceTimeoutMs": -1}, "RebalanceTimeoutMs must be provided in first request."),
        ({"topology": None}, "Topology must be non-null when (re-)joining."),
        ({"activeTasks": [{"subtopologyId": "0", "partitions": [1]}]},
         "ActiveTasks must be empty when (re-)joining."),
        ({"warmupTasks": None}, "WarmupTasks must be empty when (re-)joining."),
    ],
)  # fmt: skip
def test_join_mistakes_are_42_naming_the_field(fields: dict, message: str) -> None:
    assert refusal(**fields) == (Errors.INVALID_REQUEST, message)


def test_epoch_and_task_list_mistakes_are_42() -> None:
    assert refusal(epoch=-3) == (
        Errors.INVALID_REQUEST,
        "MemberEpoch is -3, but must be greater than or equal to -2.",
    )
    assert refusal(epoch=-2) == (Errors.INVALID_REQUEST, "InstanceId can't be null.")
    assert refusal(epoch=2, topology={"epoch": 1, "subtopologies": [SUB]}) == (
        Errors.INVALID_REQUEST,
        "Topology can only be provided when (re-)joining.",
    )
    assert refusal(epoch=2, activeTasks=[]) == (
        Errors.INVALID_REQUEST,
        "If one task-type is non-null, all must be non-null.",
    )


@pytest.mark.parametrize(
    ("sub", "words"),
    [
        (SUB | {"stateChangelogTopics": [{"name": "c", "partitions": 3}]},
         "Changelog topic c must have an undefined partition count, but it is set to 3."),
        ({"subtopologyId": "0", "sourceTopics": ["__consumer_offsets"]}, "internal topic"),
        ({"subtopologyId": "0", "sourceTopics": ["bad name"]}, "illegal"),
        ({"subtopologyId": "0"}, "has no source topics"),
        ({"subtopologyId": "0", "sourceTopicRegex": ["("]}, "Source topic regex"),
        (SUB | {"copartitionGroups": [{"sourceTopics": [3]}]}, "out of range"),
    ],
)  # fmt: skip
def test_an_invalid_topology_is_130(sub: dict, words: str) -> None:
    found = refusal(topology={"epoch": 1, "subtopologies": [sub]})
    assert found is not None and found[0] == Errors.STREAMS_INVALID_TOPOLOGY
    assert words in found[1]


def test_a_subtopology_reading_only_repartition_topics_is_accepted() -> None:
    # Kafka Streams sends a repartition topic only in repartitionSourceTopics.
    repartitioned = {
        "subtopologyId": "1",
        "repartitionSourceTopics": [{"name": "app-rep", "replicationFactor": -1}],
        "stateChangelogTopics": [{"name": "app-store-changelog", "replicationFactor": -1}],
    }
    writer = SUB | {"repartitionSinkTopics": ["app-rep"]}
    assert refusal(topology={"epoch": 1, "subtopologies": [writer, repartitioned]}) is None


def test_a_duplicate_subtopology_is_130() -> None:
    found = refusal(topology={"epoch": 1, "subtopologies": [SUB, SUB]})
    assert found is not None and found[0] == Errors.STREAMS_INVALID_TOPOLOGY


def test_a_topology_past_its_size_bound_is_refused_by_the_model() -> None:
    many = [f"t{i:0240d}" for i in range(TOPOLOGY_MAX_CHARS // 240 + 1)]
    subs = [
        {"subtopologyId": str(i), "sourceTopics": many[i * 200 : (i + 1) * 200]}
        for i in range(len(many) // 200 + 1)
    ]
    with pytest.raises(ValidationError, match="subtopologies"):
        request(topology={"epoch": 1, "subtopologies": subs})


def test_the_member_epoch_check() -> None:
    held = TasksTuple.of(active={"0": {0, 1}})
    member = StreamsGroupMember("m", tasks=MemberTasks(epoch=5, previous_epoch=4, assigned=held))
    assert check_member_epoch(member, 5, None) is None
    assert check_member_epoch(member, 6, None).error == Errors.FENCED_MEMBER_EPOCH  # type: ignore[union-attr]
    assert check_member_epoch(member, 4, TasksTuple.of(active={"0": {1}})) is None
    assert check_member_epoch(member, 4, None).error == Errors.FENCED_MEMBER_EPOCH  # type: ignore[union-attr]


def test_owned_tasks_merge_entries_and_null_means_unreported() -> None:
    assert owned_tasks(request(epoch=3)) is None
    sent = request(
        epoch=3,
        activeTasks=[{"subtopologyId": "0", "partitions": [1]},
                     {"subtopologyId": "0", "partitions": [2]}],
        standbyTasks=[],
        warmupTasks=[],
    )  # fmt: skip
    assert owned_tasks(sent) == TasksTuple.of(active={"0": {1, 2}})
