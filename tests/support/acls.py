"""ACLs in the tests: Kafka's codes (groupcoord.core.acls has them as enums; the tests speak the
wire's numbers), a coordinator's settings with the authorizer on, and ACLs as create-acls
takes them."""

from __future__ import annotations

from typing import Any

from tests.support.api import Api

ADMIN = "User:admin"
# Resource types, pattern types, operations, permissions (Kafka's codes; 1 is ANY in each).
ANY = 1
TOPIC, GROUP, CLUSTER = 2, 3, 4
LITERAL, PREFIXED = 3, 4
ALL, READ, WRITE, CREATE, DELETE, ALTER, DESCRIBE, DESCRIBE_CONFIGS = 2, 3, 4, 5, 6, 7, 8, 10
DENY, ALLOW = 2, 3
# Kafka's refusals.
TOPIC_DENIED, GROUP_DENIED, CLUSTER_DENIED = 29, 30, 31


def authorizer_on(super_user: str = ADMIN) -> dict[str, str]:
    """Settings of a coordinator that checks ACLs, with `super_user` allowed everything. Each
    request re-reads the ACLs' version: a change is seen by the very next request."""
    return {
        "groupcoord.authorizer.enabled": "true",
        "super.users": super_user,
        "groupcoord.acl.cache.ms": "0",
    }


def acl(
    resource_type: int,
    name: str,
    principal: str,
    operation: int,
    permission: int = ALLOW,
    pattern: int = LITERAL,
) -> dict[str, Any]:
    """One ACL binding as create-acls takes it (any host)."""
    return {
        "resourceType": resource_type,
        "resourceName": name,
        "resourcePatternType": pattern,
        "principal": principal,
        "host": "*",
        "operation": operation,
        "permissionType": permission,
    }


def grant(admin: Api, *creations: dict[str, Any]) -> None:
    """Create ACLs as `admin` (a super user), insisting that each is created."""
    results = admin.ok("create-acls", {"creations": list(creations)})["results"]
    assert [r["errorCode"] for r in results] == [0] * len(creations), results
