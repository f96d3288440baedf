"""`groupcoord acls add|list|remove` against a coordinator with the authorizer on, a super user,
no ACL cache, and the local principal header: what they print (tables, --json), and their
refusals as one line on stderr (exit 1) or usage errors (exit 2)."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

from groupcoord import admin_cli
from groupcoord.cli import main
from groupcoord.core.acls import AclOperation, PatternType, PermissionType, ResourceType
from tests.e2e.helpers import unique
from tests.e2e.test_admin_cli import Ran
from tests.support.api import PRINCIPAL_HEADER
from tests.support.servers import running_service

ADMIN = "User:admin"
OPS = "User:arn:aws:iam::123456789012:role/ops"
TEAM_A = "User:arn:aws:iam::123456789012:role/team-a"
MALLORY = "User:mallory"
SETTINGS = {
    "groupcoord.authorizer.enabled": "true",
    "super.users": ADMIN,
    # Each request re-reads the ACLs' version: a change is seen by the very next request.
    "groupcoord.acl.cache.ms": "0",
}

Cli = Callable[..., Ran]


@pytest.fixture(scope="module")
def secured(service_endpoint: str | None) -> Iterator[str]:
    with running_service(service_endpoint, SETTINGS, principal_header=PRINCIPAL_HEADER) as url:
        yield url


def _runner(url: str, capsys: pytest.CaptureFixture[str]) -> Cli:
    def run(*args: str, principal: str | None = ADMIN) -> Ran:
        caller = [] if principal is None else ["--as-principal", principal]
        capsys.readouterr()
        try:
            code = main([*args, "--url", url, "--principal-header", PRINCIPAL_HEADER, *caller])
        except SystemExit as exit_:  # argparse usage errors
            code = int(exit_.code or 0)
        out, err = capsys.readouterr()
        return Ran(code, out, err)

    return run


@pytest.fixture
def cli(secured: str, capsys: pytest.CaptureFixture[str]) -> Cli:
    return _runner(secured, capsys)


def _listed(cli: Cli, *selectors: str) -> set[tuple[str, ...]]:
    """(type, name, pattern, principal, host, operation, permission) of each listed ACL."""
    return {
        (
            a["resourceType"],
            a["resourceName"],
            a["patternType"],
            a["principal"],
            a["host"],
            a["operation"],
            a["permissionType"],
        )
        for a in cli("acls", "list", *selectors, "--json").json()["acls"]
    }


def test_the_cli_s_codes_are_kafka_s() -> None:
    # The CLI keeps its own table: core/acls.py imports the server's models.
    for names, enum in (
        (admin_cli.RESOURCE_TYPES, ResourceType),
        (admin_cli.PATTERN_TYPES, PatternType),
        (admin_cli.OPERATIONS, AclOperation),
        (admin_cli.PERMISSION_TYPES, PermissionType),
    ):
        assert names == tuple(member.name for member in sorted(enum))


def test_add_list_and_remove_acls(cli: Cli) -> None:
    prefix = unique("a") + "."
    added = cli(
        "acls", "add", "--allow-principal", TEAM_A, "--operation", "Read",
        "--operation", "describe", "--group", prefix, "--topic", prefix,
        "--resource-pattern-type", "PREFIXED", "--json",
    ).json()["added"]  # fmt: skip
    # One ACL per resource, operation and principal.
    assert {(a["resourceType"], a["operation"]) for a in added} == {
        ("GROUP", "READ"),
        ("GROUP", "DESCRIBE"),
        ("TOPIC", "READ"),
        ("TOPIC", "DESCRIBE"),
    }
    assert all(
        a["principal"] == TEAM_A and a["host"] == "*" and a["permissionType"] == "ALLOW"
        for a in added
    )
    denied = cli(
        "acls", "add", "--deny-principal", MALLORY, "--deny-host", "10.0.0.9",
        "--operation", "All", "--group", prefix, "--resource-pattern-type", "prefixed",
    )  # fmt: skip
    assert denied.code == 0, denied.err
    table = denied.out.splitlines()
    assert table[0].split() == [
        "RESOURCE-TYPE", "RESOURCE-NAME", "PATTERN-TYPE", "PRINCIPAL", "HOST", "OPERATION",
        "PERMISSION",
    ]  # fmt: skip
    assert table[1].split() == ["GROUP", prefix, "PREFIXED", MALLORY, "10.0.0.9", "ALL", "DENY"]
    assert table[-1] == "Added 1 ACL(s)."

    # list: literal by default for a named resource, so the prefixed ACLs need the pattern
    # type (or match, which also finds the prefixes of a longer name).
    assert _listed(cli, "--group", prefix) == set()
    assert _listed(cli, "--group", prefix, "--resource-pattern-type", "prefixed") == {
        ("GROUP", prefix, "PREFIXED", TEAM_A, "*", "READ", "ALLOW"),
        ("GROUP", prefix, "PREFIXED", TEAM_A, "*", "DESCRIBE", "ALLOW"),
        ("GROUP", prefix, "PREFIXED", MALLORY, "10.0.0.9", "ALL", "DENY"),
    }
    applying = _listed(cli, "--topic", prefix + "orders", "--resource-pattern-type", "match")
    assert applying == {
        ("TOPIC", prefix, "PREFIXED", TEAM_A, "*", "READ", "ALLOW"),
        ("TOPIC", prefix, "PREFIXED", TEAM_A, "*", "DESCRIBE", "ALLOW"),
    }
    everything = _listed(cli)
    assert len([a for a in everything if a[1] == prefix]) == 5
    assert {a[3] for a in _listed(cli, "--principal", MALLORY) if a[1] == prefix} == {MALLORY}
    table = cli("acls", "list", "--topic", prefix, "--resource-pattern-type", "prefixed").out
    rows = [line.split() for line in table.splitlines()[1:]]
    assert sorted(rows) == [
        ["TOPIC", prefix, "PREFIXED", TEAM_A, "*", "DESCRIBE", "ALLOW"],
        ["TOPIC", prefix, "PREFIXED", TEAM_A, "*", "READ", "ALLOW"],
    ]

    # remove: what is not given matches anything; it prints what it removed.
    gone = cli(
        "acls", "remove", "--deny-principal", MALLORY, "--group", prefix,
        "--resource-pattern-type", "prefixed", "--json",
    ).json()["removed"]  # fmt: skip
    assert [(a["principal"], a["operation"], a["permissionType"]) for a in gone] == [
        (MALLORY, "ALL", "DENY")
    ]
    nothing = cli("acls", "remove", "--deny-principal", MALLORY, "--group", prefix)
    assert nothing.code == 0 and nothing.out.strip() == "No ACL matched: nothing removed."
    rest = cli(
        "acls", "remove", "--group", prefix, "--topic", prefix, "--resource-pattern-type",
        "prefixed",
    )  # fmt: skip
    assert rest.code == 0 and rest.out.splitlines()[-1] == "Removed 4 ACL(s).", rest.out
    assert not [a for a in _listed(cli) if a[1] == prefix]
    assert cli("acls", "list", "--group", prefix).out.strip() == "No ACLs."


def test_consumer_grants_what_a_kafka_consumer_needs(cli: Cli) -> None:
    topic, group = unique("orders"), unique("billing")
    added = cli(
        "acls", "add", "--consumer", "--allow-principal", TEAM_A, "--topic", topic,
        "--group", group, "--json",
    ).json()["added"]  # fmt: skip
    assert sorted((a["resourceType"], a["resourceName"], a["operation"]) for a in added) == [
        ("GROUP", group, "READ"),
        ("TOPIC", topic, "DESCRIBE"),
        ("TOPIC", topic, "READ"),
    ]
    cli("acls", "add", "--consumer", "--allow-principal", TEAM_A, "--topic", topic).refused(
        "--consumer", "--group"
    )
    removed = cli(
        "acls", "remove", "--consumer", "--allow-principal", TEAM_A, "--topic", topic,
        "--group", group, "--json",
    ).json()["removed"]  # fmt: skip
    assert len(removed) == 3


def test_a_sink_table_is_granted_as_a_transactional_id(cli: Cli) -> None:
    table = unique("order-totals")
    added = cli(
        "acls", "add", "--allow-principal", TEAM_A, "--operation", "Write",
        "--transactional-id", table, "--json",
    ).json()["added"]  # fmt: skip
    assert [(a["resourceType"], a["resourceName"], a["operation"]) for a in added] == [
        ("TRANSACTIONAL_ID", table, "WRITE")
    ]
    assert "TRANSACTIONAL_ID" in cli("acls", "list", "--transactional-id", table).out
    cli(
        "acls", "add", "--allow-principal", TEAM_A, "--operation", "Read",
        "--transactional-id", table,
    ).refused("READ")  # fmt: skip
    removed = cli("acls", "remove", "--transactional-id", table, "--json").json()["removed"]
    assert len(removed) == 1


def test_the_cluster_and_who_may_manage_acls(cli: Cli) -> None:
    group = unique("ops-only")
    # Not a super user, no ACL on the cluster: refused, saying who and what it needs.
    line = cli(
        "acls", "add", "--allow-principal", MALLORY, "--operation", "Read", "--group", group,
        principal=MALLORY,
    ).refused("CLUSTER_AUTHORIZATION_FAILED", MALLORY, "ALTER", "super.users")  # fmt: skip
    assert "acls add --cluster --operation Alter" in line
    cli("acls", "list", principal=OPS).refused("CLUSTER_AUTHORIZATION_FAILED", OPS, "DESCRIBE")
    cli("acls", "remove", "--group", group, principal=None).refused(
        "CLUSTER_AUTHORIZATION_FAILED", "User:ANONYMOUS", "--as-principal"
    )

    # ALTER on the cluster lets ops manage ACLs (and list them: ALTER implies DESCRIBE).
    granted = cli("acls", "add", "--allow-principal", OPS, "--operation", "Alter", "--cluster")
    assert granted.code == 0, granted.err
    assert granted.out.splitlines()[1].split() == [
        "CLUSTER", "kafka-cluster", "LITERAL", OPS, "*", "ALTER", "ALLOW",
    ]  # fmt: skip
    made = cli(
        "acls", "add", "--allow-principal", MALLORY, "--operation", "Read", "--group", group,
        principal=OPS,
    )  # fmt: skip
    assert made.code == 0, made.err
    assert _listed(cli, "--group", group) == {
        ("GROUP", group, "LITERAL", MALLORY, "*", "READ", "ALLOW")
    }
    assert cli("acls", "list", "--cluster", principal=OPS).code == 0
    assert cli("acls", "remove", "--group", group, principal=OPS).code == 0

    # Revoked: refused again at once (no cache here).
    assert cli("acls", "remove", "--cluster", "--allow-principal", OPS).code == 0
    cli("acls", "list", "--cluster", principal=OPS).refused("CLUSTER_AUTHORIZATION_FAILED")


def test_bad_acls_are_refused_with_kafka_s_message(cli: Cli) -> None:
    group = unique("bad")
    # The coordinator refuses each bad creation alone (42, Kafka's message); the others are
    # created.
    line = cli(
        "acls", "add", "--allow-principal", "nobody", "--allow-principal", TEAM_A,
        "--operation", "Read", "--group", group,
    ).refused("INVALID_REQUEST", "principalType:principalName", "added the other 1")  # fmt: skip
    assert TEAM_A not in line
    assert {a[3] for a in _listed(cli, "--group", group)} == {TEAM_A}
    assert cli("acls", "remove", "--group", group).code == 0

    # Refused before anything is sent.
    wrong = ("--allow-principal", TEAM_A, "--operation", "Write", "--group", group)
    cli("acls", "add", *wrong).refused("GROUP", "WRITE")
    cli("acls", "add", "--allow-principal", TEAM_A, "--group", group).refused("--operation")
    cli("acls", "add", "--operation", "Read", "--group", group).refused("--allow-principal")
    cli("acls", "add", "--allow-principal", TEAM_A, "--operation", "Read").refused("--topic")
    cli("acls", "remove", "--allow-principal", TEAM_A).refused("--group")
    cli("acls", "add", "--deny-host", "10.0.0.1", "--allow-principal", TEAM_A,
        "--operation", "Read", "--group", group).refused("--deny-principal")  # fmt: skip
    assert cli("acls", "add", "--operation", "Fly", "--group", group).code == 2
    assert cli("acls", "list", "--resource-pattern-type", "regex").code == 2


def test_without_the_authorizer_the_cli_says_how_to_turn_it_on(
    service_endpoint: str | None, capsys: pytest.CaptureFixture[str]
) -> None:
    with running_service(service_endpoint, principal_header=PRINCIPAL_HEADER) as url:
        cli = _runner(url, capsys)
        for args in (
            ("add", "--allow-principal", TEAM_A, "--operation", "Read", "--group", "g"),
            ("list",),
            ("remove", "--group", "g"),
        ):
            cli("acls", *args).refused("SECURITY_DISABLED", "groupcoord.authorizer.enabled=true")


def test_as_principal_is_a_local_aid(capsys: pytest.CaptureFixture[str]) -> None:
    def usage(*args: str) -> str:
        capsys.readouterr()
        assert main(["acls", "list", *args]) == 2
        return capsys.readouterr().err

    assert "--principal-header NAME" in usage("--as-principal", ADMIN)
    deployed = usage(
        "--url", "https://abc.execute-api.eu-west-1.amazonaws.com", "--as-principal", ADMIN,
        "--principal-header", PRINCIPAL_HEADER,
    )  # fmt: skip
    assert "IAM identity" in deployed
