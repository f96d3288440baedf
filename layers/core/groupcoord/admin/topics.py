"""`groupcoord topics create|list|describe|alter|delete`: the topic registry, as
kafka-topics.sh manages a cluster's topics."""

from __future__ import annotations

import argparse
from typing import Any

from ..client.admin import AdminClient, TopicView, describe_error, error_of, raise_for
from ..errors import Errors
from .output import CommandError, Output

COLUMNS = ["TOPIC", "TOPIC-ID", "PARTITIONS"]


def add_topic_commands(sub: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    topics = sub.add_parser("topics", help="manage the topic registry")
    tsub = topics.add_subparsers(dest="action", required=True, metavar="ACTION")
    create = tsub.add_parser("create", parents=[common], help="create a topic")
    create.add_argument("topic")
    create.add_argument(
        "--partitions", type=int, default=-1, help="default: the coordinator's num.partitions"
    )
    create.add_argument("--if-not-exists", action="store_true")
    create.add_argument(
        "--config",
        action="append",
        default=[],
        type=_config_pair,
        metavar="NAME=VALUE",
        help="a topic config, repeatable (as kafka-topics.sh's), e.g. "
        "groupcoord.kinesis.stream.arn=ARN to back the topic by a Kinesis stream",
    )
    create.set_defaults(handler=_topics_create)
    tsub.add_parser("list", parents=[common], help="list every topic").set_defaults(
        handler=_topics_list
    )
    describe = tsub.add_parser("describe", parents=[common], help="describe topics")
    describe.add_argument("topics", nargs="+", metavar="topic")
    describe.set_defaults(handler=_topics_describe)
    alter = tsub.add_parser("alter", parents=[common], help="grow a topic's partition count")
    alter.add_argument("topic")
    alter.add_argument("--partitions", type=int, required=True, help="the new (larger) count")
    alter.set_defaults(handler=_topics_alter)
    delete = tsub.add_parser("delete", parents=[common], help="delete topics")
    delete.add_argument("topics", nargs="+", metavar="topic")
    delete.set_defaults(handler=_topics_delete)


def _config_pair(text: str) -> tuple[str, str]:
    name, equals, value = text.partition("=")
    if not equals or not name.strip():
        raise argparse.ArgumentTypeError(f"expected NAME=VALUE, not {text!r}")
    return name.strip(), value


def _topics_create(admin: AdminClient, args: argparse.Namespace) -> Output:
    asked: dict[str, Any] = {"name": args.topic, "numPartitions": args.partitions}
    if args.config:
        asked["configs"] = [{"name": n, "value": v} for n, v in args.config]
    topic = admin.create_topic(asked)
    exists = error_of(topic) == Errors.TOPIC_ALREADY_EXISTS
    if exists and args.if_not_exists:
        shown = admin.topics([args.topic])[0]
        return Output({"topic": shown, "created": False}, [], [f"Topic {args.topic} exists."])
    raise_for(topic, f"topic {args.topic}")
    created = {
        "name": topic["name"],
        "topicId": topic.get("topicId"),
        "partitions": topic.get("numPartitions"),
        **({"configs": dict(args.config)} if args.config else {}),
    }
    note = (
        f"Created topic {args.topic} ({created['partitions']} partitions, id {created['topicId']})."
    )
    return Output({"topic": created, "created": True}, [], [note])


def _rows(topics: list[TopicView]) -> list[list[Any]]:
    return [[t["name"], t["topicId"], t["partitions"]] for t in topics]


def _topics_list(admin: AdminClient, args: argparse.Namespace) -> Output:
    topics = admin.topics()
    return Output({"topics": topics}, [(COLUMNS, _rows(topics))], [] if topics else ["No topics."])


def _topics_describe(admin: AdminClient, args: argparse.Namespace) -> Output:
    topics = admin.topics(args.topics)
    return Output({"topics": topics}, [(COLUMNS, _rows(topics))], [])


def _topics_alter(admin: AdminClient, args: argparse.Namespace) -> Output:
    raise_for(admin.create_partitions(args.topic, args.partitions), f"topic {args.topic}")
    shown = admin.topics([args.topic])[0]
    return Output(
        {"topic": shown}, [], [f"Topic {args.topic} now has {shown['partitions']} partitions."]
    )


def _topics_delete(admin: AdminClient, args: argparse.Namespace) -> Output:
    failures = [r for r in admin.delete_topics(args.topics) if error_of(r) != Errors.NONE]
    if failures:
        raise CommandError(
            "; ".join(f"topic {r.get('name')}: {describe_error(r)}" for r in failures)
        )
    return Output({"deleted": list(args.topics)}, [], [f"Deleted topic {n}." for n in args.topics])
