"""Kafka's ACL authorization (core/acls.py) and the ACL messages (models/acls.py): the
StandardAuthorizer's decision against a brute-force reference, filters, validation, the
authorizedOperations bitfield and the table of checks per API."""

from __future__ import annotations

from collections.abc import Iterable

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from groupcoord.core.acls import (
    ANY_FILTER,
    API_AUTHORIZATION,
    CLUSTER_NAME,
    DENIED_ERROR,
    SUPPORTED_OPERATIONS,
    AclBinding,
    AclBindingFilter,
    AclOperation,
    Authorizer,
    AuthorizerConfig,
    Denial,
    PatternType,
    PermissionType,
    ResourceType,
    api_authorization,
    operations_bitfield,
    validate_binding,
    validate_filter,
)
from groupcoord.errors import Errors
from groupcoord.http.apis import APIS
from groupcoord.models.acls import (
    ACLS_PER_REQUEST_MAX,
    AclCreation,
    CreateAclsRequest,
    DeleteAclsFilter,
    DeleteAclsRequest,
    DescribeAclsRequest,
    DescribeAclsResponse,
)
from groupcoord.service.acls import (
    binding_from_creation,
    describe_resources,
    filter_from_request,
    matching_acl,
)

Op = AclOperation
TOPIC, GROUP, CLUSTER = ResourceType.TOPIC, ResourceType.GROUP, ResourceType.CLUSTER
LITERAL, PREFIXED = PatternType.LITERAL, PatternType.PREFIXED
ALLOW, DENY = PermissionType.ALLOW, PermissionType.DENY
ALICE, BOB = "User:alice", "User:bob"
HOST = "10.0.0.1"
DENY_BY_DEFAULT = AuthorizerConfig(frozenset(), allow_everyone_if_no_acl_found=False)
ALLOW_BY_DEFAULT = AuthorizerConfig(frozenset(), allow_everyone_if_no_acl_found=True)


def acl(
    operation: AclOperation = Op.READ,
    permission: PermissionType = ALLOW,
    *,
    rtype: ResourceType = TOPIC,
    name: str = "orders",
    pattern: PatternType = LITERAL,
    principal: str = ALICE,
    host: str = "*",
) -> AclBinding:
    return AclBinding(
        resource_type=rtype,
        resource_name=name,
        pattern_type=pattern,
        principal=principal,
        host=host,
        operation=operation,
        permission=permission,
    )


def allowed(
    bindings: Iterable[AclBinding],
    operation: AclOperation = Op.READ,
    *,
    principal: str = ALICE,
    name: str = "orders",
    rtype: ResourceType = TOPIC,
    host: str = HOST,
    config: AuthorizerConfig = DENY_BY_DEFAULT,
) -> bool:
    return Authorizer(bindings, config).authorize(principal, host, operation, rtype, name)


# --- Kafka's codes (org.apache.kafka.common.acl / .resource) ---


def test_the_enums_carry_kafkas_codes() -> None:
    assert [(m.name, int(m)) for m in ResourceType] == [
        ("UNKNOWN", 0), ("ANY", 1), ("TOPIC", 2), ("GROUP", 3), ("CLUSTER", 4),
        ("TRANSACTIONAL_ID", 5), ("DELEGATION_TOKEN", 6), ("USER", 7),
    ]  # fmt: skip
    assert [(m.name, int(m)) for m in PatternType] == [
        ("UNKNOWN", 0), ("ANY", 1), ("MATCH", 2), ("LITERAL", 3), ("PREFIXED", 4),
    ]  # fmt: skip
    assert [int(m) for m in AclOperation] == list(range(15))
    assert (Op.ALL, Op.READ, Op.DESCRIBE, Op.IDEMPOTENT_WRITE, Op.DESCRIBE_TOKENS) == (
        2, 3, 8, 12, 14,
    )  # fmt: skip
    assert [(m.name, int(m)) for m in PermissionType] == [
        ("UNKNOWN", 0), ("ANY", 1), ("DENY", 2), ("ALLOW", 3),
    ]  # fmt: skip


def test_a_code_kafka_does_not_know_is_unknown() -> None:
    assert AclOperation.from_code(99) is AclOperation.UNKNOWN
    assert ResourceType.from_code(-1) is ResourceType.UNKNOWN
    assert PatternType.from_code(4) is PREFIXED


# --- the decision (StandardAuthorizerData) ---


def test_an_allow_allows_and_nothing_else_does() -> None:
    bindings = [acl(Op.READ)]
    assert allowed(bindings, Op.READ)
    assert not allowed(bindings, Op.WRITE)
    assert not allowed(bindings, Op.READ, principal=BOB)
    assert not allowed(bindings, Op.READ, name="orders2")
    assert not allowed(bindings, Op.READ, rtype=GROUP)


def test_deny_wins_over_allow() -> None:
    bindings = [acl(Op.READ), acl(Op.READ, DENY, principal="User:*")]
    assert not allowed(bindings, Op.READ)
    # A DENY on a prefix beats an ALLOW on the literal name, and a DENY ALL beats everything.
    assert not allowed([acl(Op.ALL), acl(Op.READ, DENY, name="ord", pattern=PREFIXED)])
    assert not allowed([acl(Op.READ), acl(Op.ALL, DENY, name="*")])


def test_allow_of_read_write_delete_alter_implies_describe() -> None:
    for op in (Op.READ, Op.WRITE, Op.DELETE, Op.ALTER, Op.DESCRIBE):
        assert allowed([acl(op)], Op.DESCRIBE), op
    for op in (Op.CREATE, Op.ALTER_CONFIGS, Op.DESCRIBE_CONFIGS, Op.CLUSTER_ACTION):
        assert not allowed([acl(op)], Op.DESCRIBE), op
    # Only an ALLOW implies: a DENY of READ does not deny DESCRIBE.
    assert allowed([acl(Op.DESCRIBE), acl(Op.READ, DENY)], Op.DESCRIBE)
    assert not allowed([acl(Op.DESCRIBE), acl(Op.DESCRIBE, DENY)], Op.DESCRIBE)
    # ...and DESCRIBE implies nothing.
    assert not allowed([acl(Op.DESCRIBE)], Op.READ)


def test_allow_of_alter_configs_implies_describe_configs() -> None:
    assert allowed([acl(Op.ALTER_CONFIGS)], Op.DESCRIBE_CONFIGS)
    assert not allowed([acl(Op.DESCRIBE_CONFIGS)], Op.ALTER_CONFIGS)
    assert allowed([acl(Op.ALTER_CONFIGS), acl(Op.ALTER, DENY)], Op.DESCRIBE_CONFIGS)


def test_all_covers_every_operation() -> None:
    for op in SUPPORTED_OPERATIONS[TOPIC]:
        assert allowed([acl(Op.ALL)], op)
        assert not allowed([acl(Op.ALL, DENY), acl(op)], op)


def test_prefixed_and_wildcard_patterns() -> None:
    prefixed = [acl(Op.READ, name="team-a.", pattern=PREFIXED)]
    assert allowed(prefixed, name="team-a.orders")
    assert allowed(prefixed, name="team-a.")
    assert not allowed(prefixed, name="team-a")
    assert not allowed(prefixed, name="team-b.orders")
    # A literal name is not a prefix...
    assert not allowed([acl(Op.READ, name="team-a.")], name="team-a.orders")
    # ...and "*" is a wildcard only as a LITERAL; as a PREFIXED it is the character.
    assert allowed([acl(Op.READ, name="*")], name="anything")
    assert not allowed([acl(Op.READ, name="*", pattern=PREFIXED)], name="anything")
    assert allowed([acl(Op.READ, name="*", pattern=PREFIXED)], name="*odd")
    # Several prefix lengths of one name all apply.
    layered = [
        acl(Op.READ, name="t", pattern=PREFIXED),
        acl(Op.WRITE, name="team-a.", pattern=PREFIXED),
        acl(Op.READ, DENY, name="team-a.secret", pattern=PREFIXED),
    ]
    assert allowed(layered, Op.READ, name="team-a.orders")
    assert allowed(layered, Op.WRITE, name="team-a.orders")
    assert not allowed(layered, Op.READ, name="team-a.secrets")
    assert allowed(layered, Op.WRITE, name="team-a.secrets")


def test_the_wildcard_principal_and_host() -> None:
    assert allowed([acl(principal="User:*")], principal="User:anyone")
    # "User:*" is the only wildcard principal: another type's "*" is a name.
    assert not allowed([acl(principal="Group:*")], principal="Group:x")
    assert allowed([acl(host=HOST)])
    assert not allowed([acl(host="10.0.0.2")])
    assert not allowed([acl(host="10.0.0.2")], host="10.0.0.20")


def test_super_users_are_allowed_everything() -> None:
    config = AuthorizerConfig(frozenset({"User:admin"}), allow_everyone_if_no_acl_found=False)
    authorizer = Authorizer([acl(Op.ALL, DENY, principal="User:*", name="*")], config)
    assert authorizer.authorize("User:admin", HOST, Op.DELETE, TOPIC, "orders")
    assert authorizer.authorize_cluster("User:admin", HOST, Op.ALTER)
    assert not authorizer.authorize(ALICE, HOST, Op.DELETE, TOPIC, "orders")
    assert authorizer.authorized_operations("User:admin", HOST, TOPIC, "x") == set(
        SUPPORTED_OPERATIONS[TOPIC]
    )


def test_allow_everyone_if_no_acl_found_applies_only_to_resources_no_acl_names() -> None:
    assert not allowed([], config=DENY_BY_DEFAULT)
    assert allowed([], config=ALLOW_BY_DEFAULT)
    # An ACL for another principal, another operation or another host names the resource:
    # the default no longer applies, and nothing allows alice.
    for other in (acl(principal=BOB), acl(Op.WRITE), acl(host="10.9.9.9")):
        assert not allowed([other], Op.READ, config=ALLOW_BY_DEFAULT)
    # An ACL on another resource (type, name, or a prefix that does not apply) does not.
    for elsewhere in (
        acl(rtype=GROUP),
        acl(name="orders2"),
        acl(name="x", pattern=PREFIXED),
        acl(name="orders.", pattern=PREFIXED),
    ):
        assert allowed([elsewhere], Op.READ, config=ALLOW_BY_DEFAULT)
    # The wildcard names every resource of its type.
    assert not allowed([acl(Op.WRITE, name="*")], Op.READ, config=ALLOW_BY_DEFAULT)


def test_duplicate_bindings_are_one() -> None:
    authorizer = Authorizer([acl(), acl(), acl(Op.WRITE)], DENY_BY_DEFAULT)
    assert authorizer.bindings == (acl(), acl(Op.WRITE))


def test_authorized_operations_and_their_bitfield() -> None:
    authorizer = Authorizer(
        [acl(Op.READ, rtype=GROUP, name="g"), acl(Op.DELETE, rtype=GROUP, name="g")],
        DENY_BY_DEFAULT,
    )
    ops = authorizer.authorized_operations(ALICE, HOST, GROUP, "g")
    assert ops == {Op.READ, Op.DELETE, Op.DESCRIBE}
    assert operations_bitfield(ops) == (1 << 3) | (1 << 6) | (1 << 8) == 328
    assert authorizer.authorized_operations(ALICE, HOST, GROUP, "g", [Op.READ, Op.WRITE]) == {
        Op.READ
    }
    assert authorizer.authorized_operations(BOB, HOST, GROUP, "g") == set()


def test_the_bitfield_is_kafkas_to32bitfield() -> None:
    assert operations_bitfield([]) == 0
    assert operations_bitfield([Op.UNKNOWN]) == 1
    assert operations_bitfield([Op.READ, Op.READ]) == 8
    # Every operation a group supports: READ 3, DELETE 6, DESCRIBE 8, DESCRIBE_CONFIGS 10,
    # ALTER_CONFIGS 11.
    assert operations_bitfield(SUPPORTED_OPERATIONS[GROUP]) == 0b1101_0100_1000
    assert operations_bitfield(AclOperation) == (1 << 15) - 1
    with pytest.raises(ValueError):
        operations_bitfield([32])  # type: ignore[list-item]


def test_supported_operations_are_kafkas() -> None:
    assert SUPPORTED_OPERATIONS[GROUP] == {
        Op.READ, Op.DESCRIBE, Op.DELETE, Op.DESCRIBE_CONFIGS, Op.ALTER_CONFIGS,
    }  # fmt: skip
    assert SUPPORTED_OPERATIONS[CLUSTER] == {
        Op.CREATE, Op.CLUSTER_ACTION, Op.DESCRIBE_CONFIGS, Op.ALTER_CONFIGS,
        Op.IDEMPOTENT_WRITE, Op.ALTER, Op.DESCRIBE,
    }  # fmt: skip
    assert len(SUPPORTED_OPERATIONS[TOPIC]) == 8


def test_many_acls_on_one_pattern() -> None:
    bindings = [acl(principal=f"User:u{i}", name="*") for i in range(5000)]
    bindings += [acl(Op.READ, DENY, principal="User:u42", name=f"t{i}") for i in range(5000)]
    authorizer = Authorizer(bindings, DENY_BY_DEFAULT)
    assert authorizer.authorize("User:u7", HOST, Op.READ, TOPIC, "t42")
    assert not authorizer.authorize("User:u42", HOST, Op.READ, TOPIC, "t42")
    assert authorizer.authorize("User:u42", HOST, Op.READ, TOPIC, "t5000")
    assert not authorizer.authorize("User:nobody", HOST, Op.READ, TOPIC, "t1")


# --- the indexed authorizer against a brute-force reading of Kafka's rules ---


def reference_authorize(
    bindings: list[AclBinding],
    config: AuthorizerConfig,
    principal: str,
    host: str,
    operation: AclOperation,
    rtype: ResourceType,
    name: str,
) -> bool:
    if principal in config.super_users:
        return True
    on_resource = [
        b
        for b in bindings
        if b.resource_type == rtype
        and (
            (b.pattern_type == LITERAL and b.resource_name in (name, "*"))
            or (b.pattern_type == PREFIXED and name.startswith(b.resource_name))
        )
    ]
    mine = [
        b for b in on_resource if b.principal in (principal, "User:*") and b.host in (host, "*")
    ]

    def covers(b: AclBinding) -> bool:
        if b.operation == Op.ALL:
            return True
        if b.permission == ALLOW and operation == Op.DESCRIBE:
            return b.operation in (Op.DESCRIBE, Op.READ, Op.WRITE, Op.DELETE, Op.ALTER)
        if b.permission == ALLOW and operation == Op.DESCRIBE_CONFIGS:
            return b.operation in (Op.DESCRIBE_CONFIGS, Op.ALTER_CONFIGS)
        return b.operation == operation

    if any(b.permission == DENY and covers(b) for b in mine):
        return False
    if any(b.permission == ALLOW and covers(b) for b in mine):
        return True
    return not on_resource and config.allow_everyone_if_no_acl_found


PRINCIPALS = ["User:alice", "User:bob", "User:*", "Group:*", "User:admin"]
HOSTS = ["10.0.0.1", "10.0.0.2", "*"]
CONCRETE_OPS = [op for op in AclOperation if op >= Op.ALL]
names = st.text(alphabet="ab*", max_size=4)
bindings_strategy = st.builds(
    acl,
    st.sampled_from(CONCRETE_OPS),
    st.sampled_from([ALLOW, DENY]),
    rtype=st.sampled_from([TOPIC, GROUP, CLUSTER]),
    name=names,
    pattern=st.sampled_from([LITERAL, PREFIXED]),
    principal=st.sampled_from(PRINCIPALS),
    host=st.sampled_from(HOSTS),
)
configs = st.builds(
    AuthorizerConfig,
    st.frozensets(st.sampled_from(["User:admin", "User:bob"]), max_size=1),
    st.booleans(),
)
queries = st.tuples(
    st.sampled_from([*PRINCIPALS, "User:carol"]),
    st.sampled_from(HOSTS[:2]),
    st.sampled_from([TOPIC, GROUP, CLUSTER]),
    names,
)


@settings(max_examples=300, deadline=None)
@given(st.lists(bindings_strategy, max_size=25), configs, st.lists(queries, min_size=1, max_size=8))
def test_the_index_decides_as_a_scan_of_every_acl(
    bindings: list[AclBinding],
    config: AuthorizerConfig,
    asked: list[tuple[str, str, ResourceType, str]],
) -> None:
    authorizer = Authorizer(bindings, config)
    for principal, host, rtype, name in asked:
        expected = {
            op
            for op in CONCRETE_OPS
            if reference_authorize(bindings, config, principal, host, op, rtype, name)
        }
        for op in CONCRETE_OPS:
            assert authorizer.authorize(principal, host, op, rtype, name) == (op in expected)
        assert authorizer.authorized_operations(principal, host, rtype, name, CONCRETE_OPS) == (
            expected
        )


# --- filters (describe-acls, delete-acls) ---

LIT_FOO = acl(name="foo")
LIT_FOOBAR = acl(name="foobar")
LIT_STAR = acl(name="*")
PRE_FOO = acl(name="foo", pattern=PREFIXED)
PRE_FOOBARZ = acl(name="foobarz", pattern=PREFIXED)
GROUP_FOO = acl(rtype=GROUP, name="foo")
ALL_BINDINGS = [LIT_FOO, LIT_FOOBAR, LIT_STAR, PRE_FOO, PRE_FOOBARZ, GROUP_FOO]


@pytest.mark.parametrize(
    ("acl_filter", "expected"),
    [
        (ANY_FILTER, ALL_BINDINGS),
        (AclBindingFilter(resource_type=TOPIC), ALL_BINDINGS[:-1]),
        # LITERAL: that literal name only ("*" is matched only by "*").
        (AclBindingFilter(resource_name="foo", pattern_type=LITERAL), [LIT_FOO, GROUP_FOO]),
        (AclBindingFilter(resource_name="*", pattern_type=LITERAL), [LIT_STAR]),
        (AclBindingFilter(resource_name="foo", pattern_type=PREFIXED), [PRE_FOO]),
        # ANY with a name: that exact name, whatever the pattern type.
        (AclBindingFilter(resource_name="foo"), [LIT_FOO, PRE_FOO, GROUP_FOO]),
        # MATCH: every ACL that applies to the name.
        (
            AclBindingFilter(
                resource_type=TOPIC, resource_name="foobar", pattern_type=PatternType.MATCH
            ),
            [LIT_FOOBAR, LIT_STAR, PRE_FOO],
        ),
        (AclBindingFilter(pattern_type=PatternType.MATCH), ALL_BINDINGS),
        # UNKNOWN matches nothing.
        (AclBindingFilter(resource_type=ResourceType.UNKNOWN), []),
        (AclBindingFilter(pattern_type=PatternType.UNKNOWN), []),
    ],
)
def test_resource_pattern_filters(acl_filter: AclBindingFilter, expected: list[AclBinding]) -> None:
    authorizer = Authorizer(ALL_BINDINGS, DENY_BY_DEFAULT)
    assert authorizer.acls(acl_filter) == expected


def test_entry_filters() -> None:
    bindings = [
        acl(Op.READ, ALLOW, principal=ALICE, host="*"),
        acl(Op.WRITE, DENY, principal=BOB, host=HOST),
        acl(Op.ALL, ALLOW, principal="User:*", host="*"),
    ]
    authorizer = Authorizer(bindings, DENY_BY_DEFAULT)
    assert authorizer.acls(AclBindingFilter(principal=BOB)) == [bindings[1]]
    # A filter matches the stored strings, not what they would apply to.
    assert authorizer.acls(AclBindingFilter(host=HOST)) == [bindings[1]]
    assert authorizer.acls(AclBindingFilter(host="*")) == [bindings[0], bindings[2]]
    assert authorizer.acls(AclBindingFilter(operation=Op.READ)) == [bindings[0]]
    assert authorizer.acls(AclBindingFilter(permission=DENY)) == [bindings[1]]
    assert authorizer.acls(AclBindingFilter(operation=Op.ALL, permission=DENY)) == []


def test_filters_with_unknown_parts_are_refused() -> None:
    assert validate_filter(ANY_FILTER) is None
    assert validate_filter(AclBindingFilter(pattern_type=PatternType.MATCH)) is None
    for bad in (
        AclBindingFilter(resource_type=ResourceType.UNKNOWN),
        AclBindingFilter(pattern_type=PatternType.UNKNOWN),
        AclBindingFilter(operation=Op.UNKNOWN),
        AclBindingFilter(permission=PermissionType.UNKNOWN),
    ):
        refusal = validate_filter(bad)
        assert refusal is not None and refusal.error == Errors.INVALID_REQUEST and refusal.message


# --- validation of an ACL to create (AclApis, AclControlManager.validateNewAcl) ---


def test_a_valid_binding_passes() -> None:
    assert validate_binding(acl()) is None
    assert validate_binding(acl(Op.ALTER, rtype=CLUSTER, name=CLUSTER_NAME)) is None
    assert validate_binding(acl(name="team-", pattern=PREFIXED, principal="User:*")) is None
    assert validate_binding(acl(principal="User:arn:aws:iam::123456789012:role/r")) is None


@pytest.mark.parametrize(
    ("binding", "message"),
    [
        (acl(rtype=CLUSTER, name="other"), "The only valid name for the CLUSTER resource is"),
        (acl(name=""), "Invalid empty resource name"),
        (acl(rtype=ResourceType.ANY), "Invalid resourceType ANY"),
        (acl(rtype=ResourceType.UNKNOWN), "Invalid resourceType UNKNOWN"),
        (acl(pattern=PatternType.MATCH), "Invalid patternType MATCH"),
        (acl(pattern=PatternType.ANY), "Invalid patternType ANY"),
        (acl(Op.ANY), "Invalid operation ANY"),
        (acl(Op.UNKNOWN), "Invalid operation UNKNOWN"),
        (acl(permission=PermissionType.ANY), "Invalid permissionType ANY"),
        (acl(principal="alice"), "principalType:principalName"),
        (acl(principal="User:"), "principalType:principalName"),
        (acl(principal=":alice"), "principalType:principalName"),
    ],
)
def test_invalid_bindings_are_refused_in_band(binding: AclBinding, message: str) -> None:
    refusal = validate_binding(binding)
    assert refusal is not None
    assert refusal.error == Errors.INVALID_REQUEST
    assert message in refusal.message


def test_a_creation_with_codes_kafka_does_not_know_is_refused() -> None:
    creation = AclCreation.model_validate(
        {
            "resourceType": 42,
            "resourceName": "orders",
            "principal": ALICE,
            "host": "*",
            "operation": 3,
            "permissionType": 3,
        }
    )
    binding = binding_from_creation(creation)
    assert binding.resource_type is ResourceType.UNKNOWN
    assert binding.pattern_type is LITERAL  # Kafka's default
    refusal = validate_binding(binding)
    assert refusal is not None and refusal.error == Errors.INVALID_REQUEST


# --- the checks of each API (KafkaApis) ---


def test_every_api_has_an_authorization_rule() -> None:
    for api in APIS:
        rule = api_authorization(api.name)
        assert rule.api == api.name and rule.checks
        for check in rule.checks:
            assert check.error in (29, 30, 31, 53)
            assert check.resource_type in DENIED_ERROR


def test_the_table_names_no_api_that_does_not_exist() -> None:
    acl_apis = {"create-acls", "describe-acls", "delete-acls"}
    assert set(API_AUTHORIZATION) - {api.name for api in APIS} <= acl_apis
    assert acl_apis <= set(API_AUTHORIZATION)


def test_an_unknown_api_has_no_rule() -> None:
    with pytest.raises(KeyError, match="no-such-api"):
        api_authorization("no-such-api")


def checks_of(api: str) -> list[tuple[ResourceType, AclOperation, Denial]]:
    return [(c.resource_type, c.operation, c.denial) for c in api_authorization(api).checks]


def test_the_checks_are_kafkas() -> None:
    req, item, omit = Denial.REQUEST, Denial.ITEM, Denial.OMIT
    for api in ("join-group", "sync-group", "heartbeat", "leave-group"):
        assert checks_of(api) == [(GROUP, Op.READ, req)]
    assert checks_of("consumer-group-heartbeat")[0] == (GROUP, Op.READ, req)
    # groupcoord's sink writes: WRITE on each written table's TRANSACTIONAL_ID (53).
    assert checks_of("offset-commit") == [
        (GROUP, Op.READ, req),
        (ResourceType.TRANSACTIONAL_ID, Op.WRITE, req),
        (TOPIC, Op.READ, item),
    ]
    assert checks_of("offset-fetch") == [(GROUP, Op.DESCRIBE, item), (TOPIC, Op.DESCRIBE, item)]
    assert api_authorization("offset-fetch").checks[1].denial_when_all is omit
    assert checks_of("offset-delete") == [(GROUP, Op.DELETE, req), (TOPIC, Op.READ, item)]
    assert checks_of("describe-groups") == [(GROUP, Op.DESCRIBE, item)]
    assert checks_of("consumer-group-describe")[0] == (GROUP, Op.DESCRIBE, item)
    assert checks_of("delete-groups") == [(GROUP, Op.DELETE, item)]
    assert checks_of("find-coordinator") == [(GROUP, Op.DESCRIBE, item)]
    assert checks_of("metadata") == [(TOPIC, Op.DESCRIBE, item)]
    assert checks_of("create-partitions") == [(TOPIC, Op.ALTER, item)]
    assert checks_of("delete-topics")[-1] == (TOPIC, Op.DELETE, item)
    (create,) = api_authorization("create-topics").checks
    assert (create.resource_type, create.operation, create.unless_cluster) == (
        TOPIC, Op.CREATE, Op.CREATE,
    )  # fmt: skip
    (listing,) = api_authorization("list-groups").checks
    assert (listing.operation, listing.denial, listing.unless_cluster) == (
        Op.DESCRIBE, omit, Op.DESCRIBE,
    )  # fmt: skip
    assert checks_of("create-acls") == [(CLUSTER, Op.ALTER, req)]
    assert checks_of("describe-acls") == [(CLUSTER, Op.DESCRIBE, req)]
    assert checks_of("delete-acls") == [(CLUSTER, Op.ALTER, req)]
    assert DENIED_ERROR == {TOPIC: 29, GROUP: 30, CLUSTER: 31, ResourceType.TRANSACTIONAL_ID: 53}


# --- the messages (models/acls.py) and the conversions ---

CREATION = {
    "resourceType": 3,
    "resourceName": "team-a.",
    "resourcePatternType": 4,
    "principal": "User:arn:aws:iam::123456789012:role/team-a",
    "host": "*",
    "operation": 3,
    "permissionType": 3,
}
FILTER = {
    "resourceTypeFilter": 1,
    "resourceNameFilter": None,
    "patternTypeFilter": 1,
    "principalFilter": None,
    "hostFilter": None,
    "operation": 1,
    "permissionType": 1,
}


def test_messages_take_kafkas_json() -> None:
    request = CreateAclsRequest.model_validate({"creations": [CREATION]})
    binding = binding_from_creation(request.creations[0])
    assert binding == acl(
        Op.READ,
        rtype=GROUP,
        name="team-a.",
        pattern=PREFIXED,
        principal="User:arn:aws:iam::123456789012:role/team-a",
    )
    assert filter_from_request(DescribeAclsRequest.model_validate(FILTER)) == ANY_FILTER
    delete = DeleteAclsRequest.model_validate({"filters": [FILTER | {"resourceNameFilter": "x"}]})
    assert filter_from_request(delete.filters[0]) == AclBindingFilter(resource_name="x")


def test_describe_answers_group_acls_by_resource_pattern() -> None:
    bindings = [acl(Op.READ), acl(Op.WRITE, DENY, host=HOST), acl(name="o", pattern=PREFIXED)]
    response = DescribeAclsResponse(resources=describe_resources(bindings))
    assert response.to_json_dict()["resources"] == [
        {
            "resourceType": 2,
            "resourceName": "orders",
            "patternType": 3,
            "acls": [
                {"principal": ALICE, "host": "*", "operation": 3, "permissionType": 3},
                {"principal": ALICE, "host": HOST, "operation": 4, "permissionType": 2},
            ],
        },
        {
            "resourceType": 2,
            "resourceName": "o",
            "patternType": 4,
            "acls": [{"principal": ALICE, "host": "*", "operation": 3, "permissionType": 3}],
        },
    ]
    assert matching_acl(acl()).to_json_dict() == {
        "errorCode": 0,
        "errorMessage": None,
        "resourceType": 2,
        "resourceName": "orders",
        "patternType": 3,
        "principal": ALICE,
        "host": "*",
        "operation": 3,
        "permissionType": 3,
    }


@pytest.mark.parametrize(
    "change",
    [
        {"resourceName": "x" * 256},
        {"principal": "User:" + "x" * 508},
        {"host": "h" * 256},
        {"operation": 128},  # beyond int8
        {"operation": "3"},  # strict: no coercion
        {"resourceType": None},
    ],
)
def test_a_creation_out_of_bounds_is_refused(change: dict[str, object]) -> None:
    with pytest.raises(ValidationError):
        CreateAclsRequest.model_validate({"creations": [CREATION | change]})


def test_the_lists_are_bounded() -> None:
    CreateAclsRequest.model_validate({"creations": [CREATION] * ACLS_PER_REQUEST_MAX})
    with pytest.raises(ValidationError):
        CreateAclsRequest.model_validate({"creations": [CREATION] * (ACLS_PER_REQUEST_MAX + 1)})
    with pytest.raises(ValidationError):
        DeleteAclsRequest.model_validate({"filters": [FILTER] * (ACLS_PER_REQUEST_MAX + 1)})


@pytest.mark.parametrize(
    "change",
    [
        {"resourceNameFilter": "x" * 256},
        {"principalFilter": "User:" + "x" * 508},
        {"hostFilter": "h" * 256},
        {"permissionType": -129},
    ],
)
def test_a_filter_out_of_bounds_is_refused(change: dict[str, object]) -> None:
    with pytest.raises(ValidationError):
        DescribeAclsRequest.model_validate(FILTER | change)
    with pytest.raises(ValidationError):
        DeleteAclsFilter.model_validate(FILTER | change)
