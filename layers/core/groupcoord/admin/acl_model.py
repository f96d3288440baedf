"""Kafka's ACLs by name, as kafka-acls.sh writes them: the code tables of ResourceType,
PatternType, AclOperation and AclPermissionType, an ACL (or a filter of them), and the ACLs
`acls add` creates and `acls remove` deletes with, from the command's options."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from .output import CommandError

# Kafka's codes, by position: ResourceType, PatternType, AclOperation, AclPermissionType.
# core/acls.py has them as enums, but it imports the server's models (pydantic).
RESOURCE_TYPES = (
    "UNKNOWN", "ANY", "TOPIC", "GROUP", "CLUSTER", "TRANSACTIONAL_ID", "DELEGATION_TOKEN", "USER",
)  # fmt: skip
PATTERN_TYPES = ("UNKNOWN", "ANY", "MATCH", "LITERAL", "PREFIXED")
OPERATIONS = (
    "UNKNOWN", "ANY", "ALL", "READ", "WRITE", "CREATE", "DELETE", "ALTER", "DESCRIBE",
    "CLUSTER_ACTION", "DESCRIBE_CONFIGS", "ALTER_CONFIGS", "IDEMPOTENT_WRITE", "CREATE_TOKENS",
    "DESCRIBE_TOKENS",
)  # fmt: skip
PERMISSION_TYPES = ("UNKNOWN", "ANY", "DENY", "ALLOW")
ACL_OPERATIONS = OPERATIONS[2:]  # what an ACL may name: not UNKNOWN, not the filter's ANY
CLUSTER_NAME = "kafka-cluster"  # the one name of the CLUSTER resource
WILDCARD_HOST = "*"
# AclEntry.supportedOperations of the types the CLI names: kafka-acls.sh refuses to add an ACL
# (other than ALL) that no check of its resource type would ever read.
SUPPORTED_OPERATIONS: dict[str, frozenset[str]] = {
    "TOPIC": frozenset(
        {"READ", "WRITE", "CREATE", "DESCRIBE", "DELETE", "ALTER"}
        | {"DESCRIBE_CONFIGS", "ALTER_CONFIGS"}
    ),
    "GROUP": frozenset({"READ", "DESCRIBE", "DELETE", "DESCRIBE_CONFIGS", "ALTER_CONFIGS"}),
    "TRANSACTIONAL_ID": frozenset({"DESCRIBE", "WRITE"}),
    "CLUSTER": frozenset(
        {"CREATE", "CLUSTER_ACTION", "DESCRIBE_CONFIGS", "ALTER_CONFIGS", "IDEMPOTENT_WRITE"}
        | {"ALTER", "DESCRIBE"}
    ),
}
# kafka-acls.sh --consumer.
CONSUMER_OPERATIONS = {"TOPIC": ("READ", "DESCRIBE"), "GROUP": ("READ",)}
ACL_COLUMNS = [
    "RESOURCE-TYPE", "RESOURCE-NAME", "PATTERN-TYPE", "PRINCIPAL", "HOST", "OPERATION",
    "PERMISSION",
]  # fmt: skip


def pascal(name: str) -> str:
    """kafka-acls.sh's spelling of an operation: DESCRIBE_CONFIGS is DescribeConfigs."""
    return "".join(word.capitalize() for word in name.split("_"))


def acl_operation(text: str) -> str:
    """An --operation as kafka-acls.sh takes it (Read, DescribeConfigs, any case) or as the
    enum names it (DESCRIBE_CONFIGS)."""
    key = text.strip().upper().replace("_", "").replace("-", "")
    for name in ACL_OPERATIONS:
        if name.replace("_", "") == key:
            return name
    raise argparse.ArgumentTypeError(
        f"unknown operation {text!r}: one of {', '.join(pascal(o) for o in ACL_OPERATIONS)}"
    )


def _code_name(names: tuple[str, ...], code: int) -> str:
    return names[code] if 0 <= code < len(names) else str(code)


@dataclass(frozen=True)
class Acl:
    """An ACL by Kafka's names (TOPIC, LITERAL, READ, ALLOW); as a filter (acls remove, list),
    None and ANY match anything."""

    resource_type: str
    resource_name: str | None
    pattern_type: str
    principal: str | None
    host: str | None
    operation: str
    permission: str

    @classmethod
    def of(cls, resource: dict[str, Any], acl: dict[str, Any]) -> Acl:
        """From describe-acls' resource and one of its ACLs, or delete-acls' matching ACL
        (both)."""
        return cls(
            _code_name(RESOURCE_TYPES, resource["resourceType"]),
            resource["resourceName"],
            _code_name(PATTERN_TYPES, resource.get("patternType", 3)),
            acl["principal"],
            acl["host"],
            _code_name(OPERATIONS, acl["operation"]),
            _code_name(PERMISSION_TYPES, acl["permissionType"]),
        )

    def creation(self) -> dict[str, Any]:
        return {
            "resourceType": RESOURCE_TYPES.index(self.resource_type),
            "resourceName": self.resource_name,
            "resourcePatternType": PATTERN_TYPES.index(self.pattern_type),
            "principal": self.principal,
            "host": self.host,
            "operation": OPERATIONS.index(self.operation),
            "permissionType": PERMISSION_TYPES.index(self.permission),
        }

    def filter(self) -> dict[str, Any]:
        return {
            "resourceTypeFilter": RESOURCE_TYPES.index(self.resource_type),
            "resourceNameFilter": self.resource_name,
            "patternTypeFilter": PATTERN_TYPES.index(self.pattern_type),
            "principalFilter": self.principal,
            "hostFilter": self.host,
            "operation": OPERATIONS.index(self.operation),
            "permissionType": PERMISSION_TYPES.index(self.permission),
        }

    def row(self) -> list[Any]:
        return [
            self.resource_type,
            self.resource_name,
            self.pattern_type,
            self.principal,
            self.host,
            self.operation,
            self.permission,
        ]

    def document(self) -> dict[str, Any]:
        return {
            "resourceType": self.resource_type,
            "resourceName": self.resource_name,
            "patternType": self.pattern_type,
            "principal": self.principal,
            "host": self.host,
            "operation": self.operation,
            "permissionType": self.permission,
        }

    def __str__(self) -> str:
        return (
            f"{self.permission} {self.principal} {self.operation} on {self.resource_type} "
            f"{self.resource_name} ({self.pattern_type}, host {self.host})"
        )


def named_resources(args: argparse.Namespace) -> list[tuple[str, str]]:
    cluster = [("CLUSTER", CLUSTER_NAME)] if args.cluster else []
    transactional = [("TRANSACTIONAL_ID", t) for t in args.transactional_id]
    named = [("TOPIC", t) for t in args.topic] + [("GROUP", g) for g in args.group]
    return named + transactional + cluster


def selected_acls(args: argparse.Namespace, *, adding: bool) -> list[Acl]:
    """What `acls add` creates, or the filters `acls remove` deletes with, as kafka-acls.sh
    pairs its options: each resource with each operation and each (principal, host). Removing,
    what is not given matches anything."""
    resources = named_resources(args)
    if not resources:
        raise CommandError(
            "name the resource: --topic T, --group G, --transactional-id T or --cluster"
        )
    for kind in ("allow", "deny"):
        if getattr(args, f"{kind}_host") and not getattr(args, f"{kind}_principal"):
            raise CommandError(f"--{kind}-host needs --{kind}-principal")
    default_host = WILDCARD_HOST if adding else None
    entries: list[tuple[str | None, str | None, str]] = [
        (principal, host, permission)
        for principals, hosts, permission in (
            (args.allow_principal, args.allow_host, "ALLOW"),
            (args.deny_principal, args.deny_host, "DENY"),
        )
        for principal in principals
        for host in hosts or [default_host]
    ]
    if not entries:
        if adding:
            raise CommandError("name who: --allow-principal P or --deny-principal P")
        entries = [(None, None, "ANY")]
    if args.consumer:
        misfits = args.operation or args.cluster or args.deny_principal
        if misfits or not (args.topic and args.group):
            raise CommandError(
                "--consumer takes --topic and --group, and no --operation, --cluster or "
                "--deny-principal"
            )
        operations: dict[str, Sequence[str]] = CONSUMER_OPERATIONS
    elif args.operation:
        operations = {rtype: args.operation for rtype, _ in resources}
    elif adding:
        raise CommandError("name the operations: --operation OP (repeatable), e.g. Read")
    else:
        operations = {rtype: ["ANY"] for rtype, _ in resources}
    if adding:
        for rtype, _ in resources:
            unsupported = sorted(set(operations[rtype]) - SUPPORTED_OPERATIONS[rtype] - {"ALL"})
            if unsupported:
                raise CommandError(
                    f"a {rtype} ACL cannot grant {', '.join(unsupported)}: it takes "
                    + ", ".join(sorted(SUPPORTED_OPERATIONS[rtype] | {"ALL"}))
                )
    pattern = args.resource_pattern_type.upper()
    return list(
        dict.fromkeys(
            Acl(rtype, name, pattern, principal, host, operation, permission)
            for rtype, name in resources
            for operation in operations[rtype]
            for principal, host, permission in entries
        )
    )
