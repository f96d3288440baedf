"""`groupcoord groups describe` for streams groups (KIP-1071), as Kafka 4.2's
kafka-streams-groups.sh shows them: the group's state and epochs, its members with their
processes and tasks by role (active, standby, warm-up), the topology, and each task's lag as
its members report it (KIP-1071's task offsets against their end offsets). Standard library
only, like the rest of the admin commands."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

Table = tuple[list[str], list[list[Any]]]
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


def task_text(tasks: dict[str, list[int]]) -> str:
    """Tasks as kafka-streams-groups.sh writes them: `0:[0,1] 1:[2]`."""
    return " ".join(f"{s}:[{','.join(map(str, ps))}]" for s, ps in sorted(tasks.items())) or "-"


def streams_tables(group: dict[str, Any]) -> list[Table]:
    """The group, its members and tasks by role, its topology, its task lags."""
    members = group["members"]
    return [
        (
            [
                "GROUP",
                "TYPE",
                "STATE",
                "GROUP-EPOCH",
                "TARGET-ASSIGNMENT-EPOCH",
                "TOPOLOGY-EPOCH",
                "MEMBERS",
                "PROCESSES",
            ],
            [
                [
                    group["groupId"],
                    "streams",
                    group["state"],
                    group["epoch"],
                    group["assignmentEpoch"],
                    group["topologyEpoch"],
                    len(members),
                    group["processes"],
                ]
            ],
        ),
        (
            [
                "MEMBER-ID",
                "PROCESS",
                "CLIENT-ID",
                "HOST",
                "ENDPOINT",
                "EPOCH",
                "ACTIVE",
                "STANDBY",
                "WARMUP",
            ],
            [
                [
                    m["memberId"],
                    m["processId"],
                    m["clientId"],
                    m["host"],
                    m["endpoint"] or "-",
                    m["epoch"],
                    *(task_text(m["tasks"][role]) for role in ROLES),
                ]
                for m in members
            ],
        ),
        (
            ["SUBTOPOLOGY", "SOURCE-TOPICS", "REPARTITION-SINKS", "CHANGELOGS"],
            [
                [
                    s["subtopologyId"],
                    ",".join(s["sourceTopics"]) or "-",
                    ",".join(s["repartitionSinkTopics"]) or "-",
                    ",".join(s["stateChangelogTopics"]) or "-",
                ]
                for s in group["topology"]
            ],
        ),
        (
            ["MEMBER-ID", "TASK", "OFFSET", "END-OFFSET", "LAG"],
            [
                [
                    m["memberId"],
                    lag["task"],
                    lag["offset"],
                    _shown(lag["endOffset"]),
                    _shown(lag["lag"]),
                ]
                for m in members
                for lag in m["lags"]
            ],
        ),
    ]


def _shown(value: Any) -> Any:
    return "-" if value is None else value
