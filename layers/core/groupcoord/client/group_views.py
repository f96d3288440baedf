"""The admin client's one shape of a described group, whatever its type: {groupId, type, state,
protocol, epoch, members: [{memberId, instanceId, clientId, host, epoch, assignment: {topic:
[p...]}}]}; a streams group's (KIP-1071) adds what kafka-streams-groups.sh shows: its
processes, members' tasks by role (active, standby, warm-up), topology, and each task's lag as
its members report it (task offsets against their end offsets)."""

from __future__ import annotations

import base64
import binascii
from collections.abc import Iterable
from typing import Any

from ..wire.consumer_protocol import ConsumerProtocolError, decode_assignment

Body = dict[str, Any]
ROLES = ("active", "standby", "warmup")


def streams_group(described: dict[str, Any]) -> dict[str, Any]:
    """streams-group-describe's group as the admin commands' document: the common fields
    (groupId, type, state, protocol, epoch, members with an `assignment` of source topic
    partitions, the active tasks' input) plus the streams ones."""
    topology = described.get("topology") or {}
    subtopologies = topology.get("subtopologies") or []
    sources = {s["subtopologyId"]: _inputs(s) for s in subtopologies}
    members = [_member(m, sources) for m in described.get("members") or []]
    return {
        "groupId": described["groupId"],
        "type": "streams",
        "state": described.get("groupState", ""),
        "protocol": "streams",
        "epoch": described.get("groupEpoch"),
        "assignmentEpoch": described.get("assignmentEpoch"),
        "topologyEpoch": topology.get("epoch"),
        "processes": len({m["processId"] for m in members}),
        "topology": [
            {
                "subtopologyId": s["subtopologyId"],
                "sourceTopics": _inputs(s),
                "repartitionSinkTopics": sorted(s.get("repartitionSinkTopics") or []),
                "stateChangelogTopics": sorted(
                    t["name"] for t in s.get("stateChangelogTopics") or []
                ),
            }
            for s in sorted(subtopologies, key=lambda s: s["subtopologyId"])
        ],
        "members": sorted(members, key=lambda m: m["memberId"]),
    }


def _inputs(subtopology: dict[str, Any]) -> list[str]:
    repartitions = [t["name"] for t in subtopology.get("repartitionSourceTopics") or []]
    return sorted({*subtopology.get("sourceTopics", []), *repartitions})


def _tasks(assignment: dict[str, Any], role: str) -> dict[str, list[int]]:
    return {
        t["subtopologyId"]: sorted(t.get("partitions") or [])
        for t in assignment.get(f"{role}Tasks") or []
        if t.get("partitions")
    }


def _member(m: dict[str, Any], sources: dict[str, list[str]]) -> dict[str, Any]:
    assignment = m.get("assignment") or {}
    tasks = {role: _tasks(assignment, role) for role in ROLES}
    inputs: dict[str, set[int]] = {}
    for subtopology, partitions in tasks["active"].items():
        for topic in sources.get(subtopology, []):
            inputs.setdefault(topic, set()).update(partitions)
    endpoint = m.get("userEndpoint")
    return {
        "memberId": m["memberId"],
        "instanceId": m.get("instanceId"),
        "clientId": m.get("clientId", ""),
        "host": m.get("clientHost", ""),
        "epoch": m.get("memberEpoch"),
        "processId": m.get("processId", ""),
        "endpoint": f"{endpoint['host']}:{endpoint['port']}" if endpoint else None,
        "tasks": tasks,
        "targetTasks": {role: _tasks(m.get("targetAssignment") or {}, role) for role in ROLES},
        "assignment": {t: sorted(ps) for t, ps in sorted(inputs.items())},
        "lags": _lags(m.get("taskOffsets") or [], m.get("taskEndOffsets") or []),
    }


def _lags(offsets: Iterable[dict[str, Any]], ends: Iterable[dict[str, Any]]) -> list[dict]:
    """Per task the member reported: its offset, its end offset, the lag between them."""
    end_of = {(e["subtopologyId"], e["partition"]): e["offset"] for e in ends}
    lags = []
    for o in sorted(offsets, key=lambda o: (o["subtopologyId"], o["partition"])):
        end = end_of.get((o["subtopologyId"], o["partition"]))
        lags.append(
            {
                "task": f"{o['subtopologyId']}_{o['partition']}",
                "offset": o["offset"],
                "endOffset": end,
                "lag": None if end is None else max(0, end - o["offset"]),
            }
        )
    return lags


def consumer_group(group: str, described: Body) -> dict[str, Any]:
    return {
        "groupId": group,
        "type": "consumer",
        "state": described.get("groupState", ""),
        "protocol": described.get("assignorName", ""),
        "epoch": described.get("groupEpoch"),
        "assignmentEpoch": described.get("assignmentEpoch"),
        "members": [
            {
                "memberId": m["memberId"],
                "instanceId": m.get("instanceId"),
                "clientId": m.get("clientId", ""),
                "host": m.get("clientHost", ""),
                "epoch": m.get("memberEpoch"),
                "assignment": {
                    tp.get("topicName") or tp["topicId"]: sorted(tp["partitions"])
                    for tp in m.get("assignment", {}).get("topicPartitions", [])
                },
            }
            for m in described.get("members", [])
        ],
    }


def classic_group(group: str, described: Body, generation: int | None) -> dict[str, Any]:
    consumer = described.get("protocolType") == "consumer"
    return {
        "groupId": group,
        "type": "classic",
        "state": described.get("groupState", ""),
        "protocol": described.get("protocolData", ""),
        "epoch": generation,
        "assignmentEpoch": generation,
        "members": [
            {
                "memberId": m["memberId"],
                "instanceId": m.get("groupInstanceId"),
                "clientId": m.get("clientId", ""),
                "host": m.get("clientHost", ""),
                "epoch": None,
                "assignment": _classic_assignment(m.get("memberAssignment"), consumer),
            }
            for m in described.get("members", [])
        ],
    }


def _classic_assignment(raw: str | None, consumer: bool) -> dict[str, list[int]]:
    if not raw or not consumer:
        return {}
    try:
        decoded = decode_assignment(base64.b64decode(raw))
    except (ConsumerProtocolError, binascii.Error, ValueError):
        return {}
    return {t: sorted(ps) for t, ps in decoded.partitions.items()}
