"""The coordinator's admin APIs as a small client: topics, groups, offsets and ACLs, each call one
method that sends the request (a group's to its coordinator, as Kafka's tools do) and returns
the coordinator's answer. `groupcoord topics|groups|offsets|acls|kinesis` (groupcoord/admin/)
parse, call these and print.

A call answers the response body as sent (Kafka's JSON field names); the few that read across
APIs (`topics`, `describe_group`, `committed`) answer one shape of their own. An entry's error
code is read with `error_of`; `raise_for` turns one into `Refused`. Standard library only."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, NotRequired, TypedDict

from ..errors import Errors
from .errors import GroupcoordError
from .group_views import classic_group, consumer_group, streams_group
from .paging import list_groups_all_pages, metadata_all_pages
from .transport import Transport

Body = dict[str, Any]
# {(topic, partition): (committed offset, its metadata)}
Committed = dict[tuple[str, int], tuple[int, str | None]]

# What an error code means to someone running the tool (Kafka's names stay in the message).
EXPLAIN: dict[Errors, str] = {
    Errors.UNKNOWN_TOPIC_OR_PARTITION: "no such topic or partition",
    Errors.TOPIC_ALREADY_EXISTS: "the topic already exists",
    Errors.INVALID_PARTITIONS: "invalid partition count",
    Errors.NON_EMPTY_GROUP: "the group still has members; stop them first",
    Errors.GROUP_ID_NOT_FOUND: "no such group",
    Errors.GROUP_SUBSCRIBED_TO_TOPIC: "the group still subscribes to the topic",
    Errors.COORDINATOR_NOT_AVAILABLE: "the coordinator is not available; retry",
    Errors.NOT_COORDINATOR: "the coordinator moved; retry",
    Errors.COORDINATOR_LOAD_IN_PROGRESS: "the coordinator is busy; retry",
    Errors.GROUP_AUTHORIZATION_FAILED: "not authorized for this group",
    Errors.TOPIC_AUTHORIZATION_FAILED: "not authorized for this topic",
    Errors.INVALID_REQUEST: "invalid request",
}


class Refused(GroupcoordError):
    """The coordinator answered an error code for what was asked: `what: NAME: reason`."""


class TopicView(TypedDict):
    name: str
    topicId: str | None
    partitions: int
    kinesisStreamArn: NotRequired[str]


def error_of(entry: Body) -> Errors | int:
    """An entry's error code: Kafka's, or the bare number of one this package does not name."""
    code = entry.get("errorCode", 0) or 0
    try:
        return Errors(code)
    except ValueError:
        return code


def describe_error(entry: Body) -> str:
    """`NAME: message`: the server's own words first, else what the code means."""
    error = error_of(entry)
    name = error.name if isinstance(error, Errors) else f"error {error}"
    explained = EXPLAIN.get(error) if isinstance(error, Errors) else None
    message = entry.get("errorMessage")
    return ": ".join(part for part in (name, message or explained) if part)


def raise_for(entry: Body, what: str) -> None:
    if error_of(entry) != Errors.NONE:
        raise Refused(f"{what}: {describe_error(entry)}")


def by_topic(entries: Iterable[tuple[str, Body]]) -> list[Body]:
    """[{name, partitions: [...]}] of (topic, partition entry) pairs, topics in first-seen order."""
    grouped: dict[str, list[Body]] = {}
    for topic, entry in entries:
        grouped.setdefault(topic, []).append(entry)
    return [{"name": t, "partitions": ps} for t, ps in grouped.items()]


class AdminClient:
    def __init__(self, transport: Transport) -> None:
        self.transport = transport
        self._coordinators: dict[str, Transport] = {}

    def call(self, api: str, body: Body) -> Body:
        return self.transport.call(api, body).body

    def group_call(self, group: str, api: str, body: Body) -> Body:
        """A group API goes to the group's coordinator (find-coordinator), as Kafka's tools
        do; for `serve` and a deployed API that is the same endpoint."""
        if group not in self._coordinators:
            reply = self.call("find-coordinator", {"keyType": 0, "coordinatorKeys": [group]})
            entry = (reply.get("coordinators") or [{}])[0]
            raise_for(entry, f"find-coordinator {group}")
            endpoint = entry.get("endpoint") or self.transport.base_url
            self._coordinators[group] = self.transport.with_base_url(endpoint)
        return self._coordinators[group].call(api, body).body

    # --- topics ---

    def metadata(self, topics: list[Body] | None, group: str | None = None) -> Body:
        """Every page of metadata of those topics (every topic when None), errors included;
        with `group`, only the partitions assignable to it."""

        def call(api: str, body: Body) -> Body:
            return self.call(api, {**body, **({"groupId": group} if group else {})})

        return metadata_all_pages(call, topics)

    def topics(self, names: Iterable[str] | None = None) -> list[TopicView]:
        """Topics by name; every topic when `names` is None. Refused for an unknown one."""
        wanted = None if names is None else [{"name": n} for n in names]
        found: list[TopicView] = []
        for topic in self.metadata(wanted).get("topics", []):
            raise_for(topic, f"topic {topic.get('name')}")
            view = TopicView(
                name=topic["name"],
                topicId=topic.get("topicId"),
                partitions=len(topic.get("partitions", [])),
            )
            if topic.get("kinesisStreamArn"):
                view["kinesisStreamArn"] = topic["kinesisStreamArn"]
            found.append(view)
        return sorted(found, key=lambda t: t["name"])

    def create_topic(self, topic: Body) -> Body:
        """create-topics of one topic ({name, numPartitions, configs?}): its result entry."""
        return self.call("create-topics", {"topics": [topic]})["topics"][0]

    def create_partitions(self, topic: str, count: int) -> Body:
        body = self.call("create-partitions", {"topics": [{"name": topic, "count": count}]})
        return body["results"][0]

    def delete_topics(self, names: Sequence[str]) -> list[Body]:
        body = self.call("delete-topics", {"topics": [{"name": n} for n in names]})
        return body.get("responses", [])

    # --- groups ---

    def list_groups(self, states: Sequence[str], types: Sequence[str]) -> Body:
        """Every page of list-groups; refused as a whole for the request's own error."""
        body = list_groups_all_pages(self.call, list(states), list(types))
        raise_for(body, "list-groups")
        return body

    def describe_group(self, group: str) -> dict[str, Any]:
        """One shape for every group type: {groupId, type, state, protocol, epoch,
        assignmentEpoch, members: [{memberId, instanceId, clientId, host, epoch, assignment:
        {topic: [p...]}}]}
        (streams groups: group_views.streams_group's, with their tasks)."""
        described = self._described(group, "consumer-group-describe", {"groupIds": [group]})
        if described is not None:
            return consumer_group(group, described)
        described = self._described(group, "streams-group-describe", {"groupIds": [group]})
        if described is not None:
            return streams_group(described)
        body = self.group_call(group, "describe-groups", {"groups": [group]})
        described = body["groups"][0]
        raise_for(described, f"group {group}")
        if described.get("groupState") == "Dead":
            raise Refused(f"group {group}: GROUP_ID_NOT_FOUND: no such group")
        return classic_group(group, described, self.generation(group))

    def _described(self, group: str, api: str, body: Body) -> Body | None:
        """The group as `api` describes it; None when that API does not know it."""
        described = self.group_call(group, api, body)["groups"][0]
        if described.get("errorCode", 0) == 0:
            return described
        if described.get("errorCode") != Errors.GROUP_ID_NOT_FOUND:
            raise_for(described, f"group {group}")
        return None

    def generation(self, group: str) -> int | None:
        """A classic group's generation, which describe-groups does not tell: from
        describe-group-activity's summary, as the dashboard shows it (None if refused)."""
        try:
            body = self.group_call(group, "describe-group-activity", {"groupIds": [group]})
        except GroupcoordError:
            return None
        found = (body.get("groups") or [{}])[0]
        return found.get("epoch") if found.get("errorCode", 0) == 0 else None

    def delete_group(self, group: str) -> Body:
        """delete-groups of one group: its result entry."""
        body = self.group_call(group, "delete-groups", {"groupsNames": [group]})
        return body["results"][0]

    # --- offsets ---

    def fetch_offsets(self, group: str, topics: list[Body] | None) -> Body:
        """offset-fetch of the group ([{name, partitionIndexes?}], every topic when None): the
        group's entry, refused for its error."""
        request = {"groups": [{"groupId": group, "topics": topics}]}
        fetched = self.group_call(group, "offset-fetch", request)["groups"][0]
        raise_for(fetched, f"group {group}")
        return fetched

    def committed(self, group: str, topics: Sequence[str] | None = None) -> Committed:
        """What the group committed, of those topics (every one when none)."""
        wanted = None if not topics else [{"name": t} for t in topics]
        result: Committed = {}
        for topic in self.fetch_offsets(group, wanted).get("topics", []):
            for p in topic.get("partitions", []):
                raise_for(p, f"{topic['name']}-{p['partitionIndex']}")
                if p["committedOffset"] >= 0:
                    key = (topic["name"], p["partitionIndex"])
                    result[key] = (p["committedOffset"], p.get("metadata"))
        return result

    def admin_commit(self, group: str, topics: list[Body]) -> Body:
        """offset-commit from outside the group (generation -1, no member id), which the
        coordinator admits only while the group is empty: an admin's reset."""
        return self.group_call(
            group,
            "offset-commit",
            {"groupId": group, "generationIdOrMemberEpoch": -1, "memberId": "", "topics": topics},
        )

    def delete_offsets(self, group: str, topics: list[Body]) -> Body:
        return self.group_call(group, "offset-delete", {"groupId": group, "topics": topics})

    # --- acls ---

    def create_acls(self, creations: list[Body]) -> list[Body]:
        return self.call("create-acls", {"creations": creations}).get("results", [])

    def describe_acls(self, acl_filter: Body) -> Body:
        return self.call("describe-acls", acl_filter)

    def delete_acls(self, filters: list[Body]) -> list[Body]:
        return self.call("delete-acls", {"filters": filters}).get("filterResults", [])
