"""create-acls, describe-acls and delete-acls over HTTP, as kafka-acls.sh would use them: who may
manage ACLs, what a bad binding answers, and that a change is seen by the next request."""

from __future__ import annotations

from typing import Any

import pytest

from tests.support.acls import (
    ADMIN,
    ALLOW,
    ALTER,
    ANY,
    CLUSTER,
    DENY,
    DESCRIBE,
    GROUP,
    PREFIXED,
    READ,
    TOPIC,
    acl,
    authorizer_on,
)
from tests.support.api import PRINCIPAL_HEADER, Api
from tests.support.servers import running_service

OPS = "User:arn:aws:iam::123456789012:role/ops"
MALLORY = "User:mallory"
SETTINGS = authorizer_on()
ANY_TYPE = ANY_PATTERN = ANY_OPERATION = ANY_PERMISSION = ANY


pytestmark = pytest.mark.coordinator(SETTINGS, principal_header=PRINCIPAL_HEADER)


def everything_about(name: str) -> dict[str, Any]:
    return {
        "resourceTypeFilter": ANY_TYPE,
        "resourceNameFilter": name,
        "patternTypeFilter": ANY_PATTERN,
        "principalFilter": None,
        "hostFilter": None,
        "operation": ANY_OPERATION,
        "permissionType": ANY_PERMISSION,
    }


def described(api: Api, name: str) -> list[dict[str, Any]]:
    answer = api.ok("describe-acls", everything_about(name))
    assert answer["errorCode"] == 0, answer
    return answer["resources"]


def test_without_the_authorizer_the_acl_apis_answer_security_disabled(
    service_endpoint: str | None,
) -> None:
    with running_service(service_endpoint, principal_header=PRINCIPAL_HEADER) as base:
        api = Api(base, principal=ADMIN)
        created = api.ok("create-acls", {"creations": [acl(GROUP, "g", OPS, READ)]})
        assert [r["errorCode"] for r in created["results"]] == [54]
        assert api.ok("describe-acls", everything_about("g"))["errorCode"] == 54
        deleted = api.ok("delete-acls", {"filters": [everything_about("g")]})
        assert [r["errorCode"] for r in deleted["filterResults"]] == [54]


def test_a_super_user_creates_describes_and_deletes_acls(url: str) -> None:
    admin = Api(url, principal=ADMIN)
    creations = [
        acl(GROUP, "team-a.", OPS, READ, pattern=PREFIXED),
        acl(TOPIC, "team-a.", OPS, DESCRIBE, pattern=PREFIXED),
        acl(GROUP, "team-a.", MALLORY, READ, permission=DENY, pattern=PREFIXED),
    ]
    created = admin.ok("create-acls", {"creations": creations})
    assert [r["errorCode"] for r in created["results"]] == [0, 0, 0]
    # Creating the same ACLs again changes nothing (one binding, one ACL).
    assert admin.ok("create-acls", {"creations": creations[:1]})["results"][0]["errorCode"] == 0

    resources = described(admin, "team-a.")
    by_type = {r["resourceType"]: r for r in resources}
    assert set(by_type) == {GROUP, TOPIC}
    assert by_type[GROUP]["patternType"] == PREFIXED
    assert sorted((a["principal"], a["permissionType"]) for a in by_type[GROUP]["acls"]) == [
        (OPS, ALLOW),
        (MALLORY, DENY),
    ]

    only_denials = {**everything_about("team-a."), "permissionType": DENY}
    deleted = admin.ok("delete-acls", {"filters": [only_denials]})
    (result,) = deleted["filterResults"]
    assert result["errorCode"] == 0
    assert [(m["principal"], m["permissionType"]) for m in result["matchingAcls"]] == [
        (MALLORY, DENY)
    ]
    left = [
        (r["resourceType"], a["principal"]) for r in described(admin, "team-a.") for a in r["acls"]
    ]
    assert sorted(left) == [(TOPIC, OPS), (GROUP, OPS)]
    admin.ok("delete-acls", {"filters": [everything_about("team-a.")]})
    assert described(admin, "team-a.") == []


def test_only_a_principal_allowed_on_the_cluster_may_manage_acls(url: str) -> None:
    admin, ops, mallory = (Api(url, principal=p) for p in (ADMIN, OPS, MALLORY))
    creation = acl(GROUP, "ops-only", MALLORY, READ)
    refused = mallory.ok("create-acls", {"creations": [creation]})
    assert [r["errorCode"] for r in refused["results"]] == [31]
    assert mallory.ok("describe-acls", everything_about("ops-only"))["errorCode"] == 31
    gone = mallory.ok("delete-acls", {"filters": [everything_about("ops-only")]})
    assert [r["errorCode"] for r in gone["filterResults"]] == [31]
    assert described(admin, "ops-only") == []  # the refusals changed nothing

    # ALTER on the cluster lets ops manage ACLs (and implies DESCRIBE, so it may list them);
    # the next request already sees it.
    grant = acl(CLUSTER, "kafka-cluster", OPS, ALTER)
    assert admin.ok("create-acls", {"creations": [grant]})["results"][0]["errorCode"] == 0
    assert ops.ok("create-acls", {"creations": [creation]})["results"][0]["errorCode"] == 0
    assert [r["resourceName"] for r in described(ops, "ops-only")] == ["ops-only"]

    # Revoked: refused again at once.
    admin.ok("delete-acls", {"filters": [everything_about("kafka-cluster")]})
    assert ops.ok("describe-acls", everything_about("ops-only"))["errorCode"] == 31
    admin.ok("delete-acls", {"filters": [everything_about("ops-only")]})


def test_a_bad_binding_is_refused_alone_and_a_bad_principal_is_403(url: str) -> None:
    admin = Api(url, principal=ADMIN)
    good = acl(GROUP, "bad-binding-test", OPS, READ)
    creations = [
        acl(ANY_TYPE, "x", OPS, READ),  # ANY is a filter, not a resource type
        acl(GROUP, "bad-binding-test", "nobody", READ),  # no `Type:` in the principal
        acl(CLUSTER, "not-the-cluster", OPS, ALTER),
        good,
    ]
    results = admin.ok("create-acls", {"creations": creations})["results"]
    assert [r["errorCode"] for r in results] == [42, 42, 42, 0]
    assert all(r["errorMessage"] for r in results[:3])
    assert [len(r["acls"]) for r in described(admin, "bad-binding-test")] == [1]
    admin.ok("delete-acls", {"filters": [everything_about("bad-binding-test")]})

    answer = Api(url).call(
        "describe-acls", everything_about("x"), headers={PRINCIPAL_HEADER: "not a principal"}
    )
    assert answer.status == 403, answer.body
