"""A consumer-protocol member as a client would drive it over HTTP, for the tests."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from typing import Any

from tests.support.api import Api

Owned = dict[str, set[int]]


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:10]}"


def create_topic(api: Api, name: str, partitions: int) -> str:
    body = api.ok("create-topics", {"topics": [{"name": name, "numPartitions": partitions}]})
    assert body["topics"][0]["errorCode"] == 0, body
    return body["topics"][0]["topicId"]


def as_owned(assignment: dict[str, Any] | None) -> Owned:
    return {
        tp["topicId"]: set(tp["partitions"])
        for tp in (assignment or {}).get("topicPartitions", [])
        if tp["partitions"]
    }


def wire(owned: Owned) -> list[dict[str, Any]]:
    return [{"topicId": t, "partitions": sorted(ps)} for t, ps in sorted(owned.items()) if ps]


class Member:
    """Keeps what the coordinator last gave it; `ack=True` reports it owns exactly that (a
    consumer that revokes at once), `ack=False` keeps reporting what it owned before."""

    def __init__(
        self,
        api: Api,
        group: str,
        topics: list[str] | None = None,
        regex: str | None = None,
        instance_id: str | None = None,
        assignor: str | None = None,
        rebalance_timeout_ms: int = 30000,
    ) -> None:
        self.api = api
        self.group = group
        self.member_id = str(uuid.uuid4())
        self.topics = topics
        self.regex = regex
        self.instance_id = instance_id
        self.assignor = assignor
        self.rebalance_timeout_ms = rebalance_timeout_ms
        self.epoch = 0
        self.owned: Owned = {}
        self.last: dict[str, Any] = {}

    def send(self, body: dict[str, Any]) -> dict[str, Any]:
        base = {"groupId": self.group, "memberId": self.member_id}
        if self.instance_id is not None:
            base["instanceId"] = self.instance_id
        response = self.api.ok("consumer-group-heartbeat", {**base, **body})
        self.last = response
        return response

    def join(self) -> dict[str, Any]:
        body: dict[str, Any] = {
            "memberEpoch": 0,
            "rebalanceTimeoutMs": self.rebalance_timeout_ms,
            "topicPartitions": [],
            "subscribedTopicNames": self.topics if self.topics is not None else None,
            "subscribedTopicRegex": self.regex,
            "serverAssignor": self.assignor,
        }
        response = self.send(body)
        self._take(response)
        return response

    def heartbeat(self, ack: bool = True, **extra: Any) -> dict[str, Any]:
        body: dict[str, Any] = {"memberEpoch": self.epoch, **extra}
        if ack:
            body["topicPartitions"] = wire(self.owned)
        response = self.send(body)
        self._take(response)
        return response

    def _take(self, response: dict[str, Any]) -> None:
        if response["errorCode"] == 0:
            self.epoch = response["memberEpoch"]
            if response.get("assignment") is not None:
                self.owned = as_owned(response["assignment"])

    def leave(self, epoch: int = -1) -> dict[str, Any]:
        return self.send({"memberEpoch": epoch})


def until(condition: Callable[[], Any], timeout_s: float = 20.0, interval_s: float = 0.05) -> Any:
    """Poll `condition` until it returns something truthy (or fail at the deadline)."""
    deadline = time.monotonic() + timeout_s
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"condition not met within {timeout_s}s: {condition}")
        time.sleep(interval_s)


def settle(members: list[Member], rounds: int = 30) -> None:
    """Heartbeat everyone (acknowledging) until two rounds change nothing."""
    quiet = 0
    for _ in range(rounds):
        before = [(m.epoch, {t: set(p) for t, p in m.owned.items()}) for m in members]
        for m in members:
            assert m.heartbeat()["errorCode"] == 0, m.last
        after = [(m.epoch, m.owned) for m in members]
        quiet = quiet + 1 if before == after else 0
        if quiet >= 2:
            return
    raise AssertionError("group did not settle")


def describe(api: Api, group: str) -> dict[str, Any]:
    return api.ok("consumer-group-describe", {"groupIds": [group]})["groups"][0]


def assert_no_partition_held_twice(members: list[Member]) -> None:
    seen: dict[tuple[str, int], str] = {}
    for m in members:
        for t, ps in m.owned.items():
            for p in ps:
                assert (t, p) not in seen, f"{(t, p)} held by {seen[(t, p)]} and {m.member_id}"
                seen[(t, p)] = m.member_id


def listed_state(api: Api, group: str) -> str:
    """The group's state as list-groups lists it (the group item's, not computed anew)."""
    listed = {g["groupId"]: g for g in api.ok("list-groups", {})["groups"]}
    return listed[group]["groupState"]
