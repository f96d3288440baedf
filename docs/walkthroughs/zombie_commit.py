"""Prints a walk-through, with real requests and responses, of a zombie commit being
rejected after its partition moved while the new owner's commits are accepted.

    python docs/walkthroughs/zombie_commit.py > docs/walkthroughs/zombie-commit.md

It starts its own `groupcoord serve` (in-memory store) on a free loopback port.
"""

from __future__ import annotations

import json
import re
import urllib.request
from typing import Any

from groupcoord.local.processes import running_serve

STEPS: list[str] = []


def post(base: str, api: str, body: dict[str, Any], note: str) -> dict[str, Any]:
    request = urllib.request.Request(
        f"{base}/v1/{api}",
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json"},
        method="POST",
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        answer = json.loads(response.read())
    shown = {k: v for k, v in answer.items() if k != "throttleTimeMs"}
    STEPS.append(
        f"{note}\n\n```http\nPOST /v1/{api}\n{json.dumps(body, indent=2)}\n```\n\n"
        f"```json\n{json.dumps(shown, indent=2)}\n```\n"
    )
    return answer


def main() -> None:
    with running_serve(None) as base:
        run(base)
    text = "\n".join(STEPS)
    # Member ids and topic ids are random: name them for the reader.
    for placeholder, pattern in (("<topic-id>", r"[A-Za-z0-9_-]{22}"),):
        text = re.sub(rf'"{pattern}"', f'"{placeholder}"', text)
    print(HEADER + text)


def run(base: str) -> None:
    topic = post(
        base,
        "create-topics",
        {"topics": [{"name": "orders", "numPartitions": 2}]},
        "A topic with two partitions.",
    )["topics"][0]["topicId"]
    epochs: dict[str, int] = {}

    def heartbeat(member: str, note: str, owned: list[int] | None, join: bool = False) -> dict:
        body: dict[str, Any] = {"groupId": "billing", "memberId": member}
        if join:
            body |= {
                "memberEpoch": 0,
                "rebalanceTimeoutMs": 60000,
                "subscribedTopicNames": ["orders"],
                "topicPartitions": [],
            }
        else:
            body["memberEpoch"] = epochs[member]
            if owned is not None:
                body["topicPartitions"] = [{"topicId": topic, "partitions": owned}]
        answer = post(base, "consumer-group-heartbeat", body, note)
        epochs[member] = answer["memberEpoch"]
        return answer

    def commit(member: str, epoch: int, offset: int, note: str) -> None:
        post(
            base,
            "offset-commit",
            {
                "groupId": "billing",
                "generationIdOrMemberEpoch": epoch,
                "memberId": member,
                "topics": [
                    {
                        "name": "orders",
                        "partitions": [{"partitionIndex": 1, "committedOffset": offset}],
                    }
                ],
            },
            note,
        )

    heartbeat("member-a", "Member A joins (epoch 0) and is given both partitions.", None, True)
    a_old = epochs["member-a"]
    commit("member-a", a_old, 100, "A commits partition 1 with its epoch: accepted.")
    heartbeat(
        "member-b",
        "Member B joins: the group epoch moves on. Partition 1 is B's in the new target, but A "
        "still holds it, so B is given nothing yet.",
        None,
        True,
    )
    heartbeat(
        "member-a",
        "A heartbeats, still reporting both partitions: it must revoke partition 1 (the "
        "response lists only what it keeps).",
        [0, 1],
    )
    heartbeat(
        "member-a",
        "A acknowledges: it no longer owns partition 1, and moves to the new epoch.",
        [0],
    )
    heartbeat("member-b", "B heartbeats: partition 1 is released, B is given it.", [])
    commit("member-b", epochs["member-b"], 150, "B, the new owner, commits partition 1: accepted.")
    commit(
        "member-a",
        a_old,
        120,
        "A zombie: a late commit from A's old epoch for partition 1, which it no longer has. "
        "KIP-1251: an older epoch may commit only partitions held since then. Rejected whole "
        "with 113 STALE_MEMBER_EPOCH; nothing is written.",
    )
    post(
        base,
        "offset-fetch",
        {
            "groups": [
                {"groupId": "billing", "topics": [{"name": "orders", "partitionIndexes": [1]}]}
            ]
        },
        "The committed offset is still the new owner's.",
    )


HEADER = """# Walk-through: a zombie commit is rejected

Real requests and responses from `groupcoord serve`, produced by
`python docs/walkthroughs/zombie_commit.py > docs/walkthroughs/zombie-commit.md`.
Topic ids are replaced by `<topic-id>`.

"""

if __name__ == "__main__":
    main()
