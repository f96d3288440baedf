"""The admin commands of `groupcoord`, in the spirit of Kafka's kafka-topics.sh,
kafka-consumer-groups.sh and kafka-acls.sh:

    groupcoord topics  create|list|describe|alter|delete      (admin/topics.py)
    groupcoord groups  list|describe|delete                   (admin/groups.py)
    groupcoord offsets show|reset|delete|import|export        (admin/offsets*.py)
    groupcoord acls    add|list|remove                        (admin/acls.py)
    groupcoord kinesis import-kcl|export-kcl                  (admin/kcl/commands.py)

Every command takes `--url` (default $GROUPCOORD_URL, else http://127.0.0.1:8080) and `--json`
(a JSON document instead of a table). A refusal or an unreachable coordinator is one line on
stderr and exit status 1; a usage error exit status 2. Requests go through the client's
admin API (client/admin.py) over its Transport: retries, timeouts, and SigV4 signing for an
https (deployed) URL. A local test aid, `--as-principal P --principal-header NAME`, names the
caller to a `groupcoord serve --principal-header NAME`.

This module builds the commands' parsers (each group's module adds its own) and runs the one
parsed: the commands parse, call the client and print.
"""

from __future__ import annotations

import argparse
import sys

from .admin.acl_model import OPERATIONS, PATTERN_TYPES, PERMISSION_TYPES, RESOURCE_TYPES
from .admin.acls import add_acl_commands
from .admin.common import DEFAULT_URL, common_options, transport_of
from .admin.groups import add_group_commands
from .admin.kcl.commands import add_kinesis_commands
from .admin.offsets import add_offset_commands
from .admin.output import CommandError, one_line, print_output
from .admin.topics import add_topic_commands
from .client.admin import AdminClient
from .client.errors import GroupcoordError

COMMANDS = ("topics", "groups", "offsets", "acls", "kinesis")
# Kafka's ACL codes by position (admin/acl_model.py), named here beside the commands.
__all__ = [
    "COMMANDS",
    "DEFAULT_URL",
    "OPERATIONS",
    "PATTERN_TYPES",
    "PERMISSION_TYPES",
    "RESOURCE_TYPES",
    "add_commands",
    "run",
]


def add_commands(sub: argparse._SubParsersAction) -> None:
    """Add `topics`, `groups`, `offsets`, `acls` and `kinesis` to the `groupcoord` parser."""
    common = common_options()
    add_topic_commands(sub, common)
    add_group_commands(sub, common)
    add_offset_commands(sub, common)
    add_acl_commands(sub, common)
    add_kinesis_commands(sub, common)


def run(args: argparse.Namespace) -> int:
    """Run a parsed admin command; print its output; return the exit status."""
    prog = f"groupcoord {args.command} {args.action}"
    try:
        admin = AdminClient(transport_of(args))
        output = args.handler(admin, args)
    except ValueError as error:  # a malformed --url, a misused --as-principal
        print(f"{prog}: {error}", file=sys.stderr)
        return 2
    except (CommandError, GroupcoordError) as error:
        print(f"{prog}: {one_line(str(error))}", file=sys.stderr)
        return 1
    print_output(output, args.json)
    for failure in output.failures:
        print(f"{prog}: {one_line(failure)}", file=sys.stderr)
    return 1 if output.failures else 0
