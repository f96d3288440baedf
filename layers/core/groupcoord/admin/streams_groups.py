"""`groupcoord groups describe` for streams groups (KIP-1071), as Kafka 4.2's
kafka-streams-groups.sh shows them: the group's state and epochs, its members with their
processes and tasks by role (active, standby, warm-up), the topology, and each task's lag as
its members report it (the document is client/group_views.py's streams_group). Standard
library only, like the rest of the admin commands."""

from __future__ import annotations

from typing import Any

from ..client.group_views import ROLES

Table = tuple[list[str], list[list[Any]]]


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
