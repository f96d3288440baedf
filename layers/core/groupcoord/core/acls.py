"""Kafka's ACL authorization, pure: the ACL model, the StandardAuthorizer's decision, the checks
each API makes, and the validation of ACLs to create.

After Kafka's classes:

- `ResourceType`, `PatternType` (org.apache.kafka.common.resource), `AclOperation`,
  `PermissionType` (org.apache.kafka.common.acl.AclPermissionType), with Kafka's codes.
- `AclBinding`, `AclBindingFilter`: AclBinding and AclBindingFilter, whose `matches` is
  ResourcePatternFilter.matches and AccessControlEntryFilter.matches.
- `Authorizer`: the decision of org.apache.kafka.metadata.authorizer.StandardAuthorizerData
  (`authorize`, `findResult`); `authorized_operations` is kafka.server.AuthHelper's
  authorizedOperations over AclEntry.supportedOperations, `operations_bitfield`
  Utils.to32BitField.
- `validate_binding`: what CreateAcls refuses (kafka.server.AclApis.handleCreateAcls, then
  AclControlManager.validateNewAcl); `validate_filter`: what DescribeAcls and DeleteAcls refuse
  (the requests' UNKNOWN checks, AclControlManager.validateFilter).
- `API_AUTHORIZATION`: the checks kafka.server.KafkaApis makes for each API groupcoord serves.

The conversions to and from the messages of models/acls.py are service/acls.py's: the model
holds no pydantic, so that authorizing a request loads none at a function's init.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from enum import Enum, IntEnum
from types import MappingProxyType
from typing import Self

from ..errors import Errors

# Resource.CLUSTER_NAME: the one name of the CLUSTER resource.
CLUSTER_NAME = "kafka-cluster"
# ResourcePattern.WILDCARD_RESOURCE: a LITERAL "*" names every resource of its type.
WILDCARD_RESOURCE = "*"
# StandardAuthorizerData.WILDCARD_PRINCIPAL and WILDCARD (for hosts).
WILDCARD_PRINCIPAL = "User:*"
WILDCARD_HOST = "*"


class _Coded(IntEnum):
    @classmethod
    def from_code(cls, code: int) -> Self:
        """Kafka's fromCode: a code this version does not know is UNKNOWN (0), not an error."""
        try:
            return cls(code)
        except ValueError:
            return cls(0)


class ResourceType(_Coded):
    UNKNOWN = 0
    ANY = 1
    TOPIC = 2
    GROUP = 3
    CLUSTER = 4
    TRANSACTIONAL_ID = 5
    DELEGATION_TOKEN = 6
    USER = 7


class PatternType(_Coded):
    UNKNOWN = 0
    ANY = 1
    MATCH = 2
    LITERAL = 3
    PREFIXED = 4


class AclOperation(_Coded):
    UNKNOWN = 0
    ANY = 1
    ALL = 2
    READ = 3
    WRITE = 4
    CREATE = 5
    DELETE = 6
    ALTER = 7
    DESCRIBE = 8
    CLUSTER_ACTION = 9
    DESCRIBE_CONFIGS = 10
    ALTER_CONFIGS = 11
    IDEMPOTENT_WRITE = 12
    CREATE_TOKENS = 13
    DESCRIBE_TOKENS = 14


class PermissionType(_Coded):
    UNKNOWN = 0
    ANY = 1
    DENY = 2
    ALLOW = 3


_O = AclOperation
# AclEntry.supportedOperations: the operations authorizedOperations reports per resource type.
SUPPORTED_OPERATIONS: Mapping[ResourceType, frozenset[AclOperation]] = MappingProxyType(
    {
        ResourceType.TOPIC: frozenset(
            {_O.READ, _O.WRITE, _O.CREATE, _O.DESCRIBE, _O.DELETE, _O.ALTER}
            | {_O.DESCRIBE_CONFIGS, _O.ALTER_CONFIGS}
        ),
        ResourceType.GROUP: frozenset(
            {_O.READ, _O.DESCRIBE, _O.DELETE, _O.DESCRIBE_CONFIGS, _O.ALTER_CONFIGS}
        ),
        ResourceType.CLUSTER: frozenset(
            {_O.CREATE, _O.CLUSTER_ACTION, _O.DESCRIBE_CONFIGS, _O.ALTER_CONFIGS}
            | {_O.IDEMPOTENT_WRITE, _O.ALTER, _O.DESCRIBE}
        ),
        ResourceType.TRANSACTIONAL_ID: frozenset({_O.DESCRIBE, _O.WRITE}),
        ResourceType.DELEGATION_TOKEN: frozenset({_O.DESCRIBE}),
        ResourceType.USER: frozenset({_O.CREATE_TOKENS, _O.DESCRIBE_TOKENS}),
    }
)

# StandardAuthorizerData: only an ALLOW implies; a DENY of READ does not deny DESCRIBE.
_IMPLIES_DESCRIBE = frozenset({_O.DESCRIBE, _O.READ, _O.WRITE, _O.DELETE, _O.ALTER})
_IMPLIES_DESCRIBE_CONFIGS = frozenset({_O.DESCRIBE_CONFIGS, _O.ALTER_CONFIGS})


@dataclass(frozen=True, kw_only=True)
class AclBinding:
    """One ACL as stored: a resource pattern (LITERAL or PREFIXED) and an access control entry.
    `principal` is "Type:name" (core/principals.py); `host` an address or "*"."""

    resource_type: ResourceType
    resource_name: str
    pattern_type: PatternType
    principal: str
    host: str = WILDCARD_HOST
    operation: AclOperation
    permission: PermissionType


@dataclass(frozen=True, kw_only=True)
class AclBindingFilter:
    """AclBindingFilter: ANY (or None for the strings) matches anything; pattern type MATCH
    matches every binding that applies to `resource_name` (the literal name, the literal "*",
    any prefix of it), as the authorizer would apply it. UNKNOWN matches nothing."""

    resource_type: ResourceType = ResourceType.ANY
    resource_name: str | None = None
    pattern_type: PatternType = PatternType.ANY
    principal: str | None = None
    host: str | None = None
    operation: AclOperation = AclOperation.ANY
    permission: PermissionType = PermissionType.ANY

    def matches(self, binding: AclBinding) -> bool:
        return self._matches_pattern(binding) and self._matches_entry(binding)

    def _matches_pattern(self, binding: AclBinding) -> bool:
        # ResourcePatternFilter.matches
        if self.resource_type not in (ResourceType.ANY, binding.resource_type):
            return False
        if self.pattern_type not in (PatternType.ANY, PatternType.MATCH, binding.pattern_type):
            return False
        name = self.resource_name
        if name is None:
            return True
        if self.pattern_type in (PatternType.ANY, binding.pattern_type):
            return name == binding.resource_name
        if binding.pattern_type == PatternType.LITERAL:
            return binding.resource_name in (name, WILDCARD_RESOURCE)
        if binding.pattern_type == PatternType.PREFIXED:
            return name.startswith(binding.resource_name)
        return False

    def _matches_entry(self, binding: AclBinding) -> bool:
        # AccessControlEntryFilter.matches
        return (
            self.principal in (None, binding.principal)
            and self.host in (None, binding.host)
            and self.operation in (AclOperation.ANY, binding.operation)
            and self.permission in (PermissionType.ANY, binding.permission)
        )


ANY_FILTER = AclBindingFilter()


@dataclass(frozen=True)
class AuthorizerConfig:
    """Kafka's `super.users` (principals allowed everything) and
    `allow.everyone.if.no.acl.found` (the answer for a resource no ACL names at all)."""

    super_users: frozenset[str] = frozenset()
    allow_everyone_if_no_acl_found: bool = False


# principal -> the ACLs of one resource pattern naming that principal
_ByPrincipal = dict[str, tuple[AclBinding, ...]]


@dataclass
class _Section:
    """The ACLs of one resource type, indexed so that a decision reads only the patterns that
    apply to the name: the literal name, the literal "*", and one lookup per distinct length of
    the prefixes (a few in practice, at most the name's length), never every ACL. Under each
    pattern the ACLs are indexed by principal, so thousands of principals on one pattern cost
    two lookups."""

    literal: dict[str, _ByPrincipal] = field(default_factory=dict)
    prefixed: dict[str, _ByPrincipal] = field(default_factory=dict)
    prefix_lengths: list[int] = field(default_factory=list)

    def patterns(self, name: str) -> Iterator[_ByPrincipal]:
        for key in (name, WILDCARD_RESOURCE) if name != WILDCARD_RESOURCE else (name,):
            if (entry := self.literal.get(key)) is not None:
                yield entry
        for length in self.prefix_lengths:
            if length > len(name):
                break
            if (entry := self.prefixed.get(name[:length])) is not None:
                yield entry


def _build_index(bindings: Iterable[AclBinding]) -> dict[ResourceType, _Section]:
    grouped: dict[tuple[ResourceType, PatternType, str], dict[str, list[AclBinding]]] = defaultdict(
        lambda: defaultdict(list)
    )
    for b in dict.fromkeys(bindings):  # a binding is a set member, as in Kafka's AclCache
        # Only LITERAL and PREFIXED can be stored (validate_binding); anything else would
        # never apply to a literal resource, so it is not indexed.
        if b.pattern_type in (PatternType.LITERAL, PatternType.PREFIXED):
            grouped[(b.resource_type, b.pattern_type, b.resource_name)][b.principal].append(b)
    sections: dict[ResourceType, _Section] = {}
    for (rtype, ptype, name), by_principal in grouped.items():
        section = sections.setdefault(rtype, _Section())
        entry = {p: tuple(acls) for p, acls in by_principal.items()}
        if ptype == PatternType.LITERAL:
            section.literal[name] = entry
        else:
            section.prefixed[name] = entry
    for section in sections.values():
        section.prefix_lengths = sorted({len(name) for name in section.prefixed})
    return sections


def _result(acl: AclBinding, operation: AclOperation) -> PermissionType | None:
    """StandardAuthorizerData.findResult once principal and host matched: ALLOW, DENY, or
    None when the ACL's operation does not cover `operation`."""
    if acl.operation != AclOperation.ALL:
        if acl.permission == PermissionType.ALLOW:
            if operation == AclOperation.DESCRIBE:
                covered = acl.operation in _IMPLIES_DESCRIBE
            elif operation == AclOperation.DESCRIBE_CONFIGS:
                covered = acl.operation in _IMPLIES_DESCRIBE_CONFIGS
            else:
                covered = acl.operation == operation
        else:
            covered = acl.operation == operation
        if not covered:
            return None
    return PermissionType.ALLOW if acl.permission == PermissionType.ALLOW else PermissionType.DENY


class Authorizer:
    """StandardAuthorizer over a fixed set of ACLs: build one per ACL snapshot, ask it as often
    as needed. Super users are allowed everything; otherwise the ACLs that apply to the
    resource (LITERAL equal name, LITERAL "*", PREFIXED prefix of the name) and to the caller
    (its principal or "User:*", its host or "*") decide: any DENY denies, else any ALLOW allows
    (an ALLOW of READ, WRITE, DELETE or ALTER implies DESCRIBE, of ALTER_CONFIGS
    DESCRIBE_CONFIGS; ALL covers every operation); when no ACL at all names the resource, for
    any principal, `allow_everyone_if_no_acl_found` answers; else deny."""

    def __init__(self, bindings: Iterable[AclBinding], config: AuthorizerConfig) -> None:
        self._bindings = tuple(dict.fromkeys(bindings))
        self._config = config
        self._sections = _build_index(self._bindings)

    @property
    def bindings(self) -> tuple[AclBinding, ...]:
        return self._bindings

    @property
    def config(self) -> AuthorizerConfig:
        return self._config

    def acls(self, acl_filter: AclBindingFilter) -> list[AclBinding]:
        """The ACLs the filter matches (describe-acls, delete-acls)."""
        return [b for b in self._bindings if acl_filter.matches(b)]

    def authorize(
        self,
        principal: str,
        host: str,
        operation: AclOperation,
        resource_type: ResourceType,
        resource_name: str,
    ) -> bool:
        if principal in self._config.super_users:
            return True
        named, acls = self._applicable(principal, host, resource_type, resource_name)
        return self._decide(named, acls, operation)

    def authorize_cluster(self, principal: str, host: str, operation: AclOperation) -> bool:
        return self.authorize(principal, host, operation, ResourceType.CLUSTER, CLUSTER_NAME)

    def authorized_operations(
        self,
        principal: str,
        host: str,
        resource_type: ResourceType,
        resource_name: str,
        candidates: Iterable[AclOperation] | None = None,
    ) -> set[AclOperation]:
        """The operations of `candidates` (default: AclEntry.supportedOperations of the type)
        the caller is allowed on the resource: describe answers' authorizedOperations, encoded
        with `operations_bitfield`."""
        ops = SUPPORTED_OPERATIONS[resource_type] if candidates is None else set(candidates)
        if principal in self._config.super_users:
            return set(ops)
        named, acls = self._applicable(principal, host, resource_type, resource_name)
        return {op for op in ops if self._decide(named, acls, op)}

    def _applicable(
        self, principal: str, host: str, resource_type: ResourceType, resource_name: str
    ) -> tuple[bool, list[AclBinding]]:
        """Whether any ACL names the resource, and those of them that apply to the caller."""
        section = self._sections.get(resource_type)
        if section is None:
            return False, []
        named = False
        acls: list[AclBinding] = []
        principals = (
            (principal,) if principal == WILDCARD_PRINCIPAL else (principal, WILDCARD_PRINCIPAL)
        )
        for by_principal in section.patterns(resource_name):
            named = True  # entries are never empty
            for p in principals:
                for acl in by_principal.get(p, ()):
                    if acl.host == WILDCARD_HOST or acl.host == host:
                        acls.append(acl)
        return named, acls

    def _decide(self, named: bool, acls: list[AclBinding], operation: AclOperation) -> bool:
        allowed = False
        for acl in acls:
            result = _result(acl, operation)
            if result == PermissionType.DENY:
                return False
            allowed = allowed or result == PermissionType.ALLOW
        if allowed:
            return True
        return not named and self._config.allow_everyone_if_no_acl_found


def operations_bitfield(operations: Iterable[AclOperation]) -> int:
    """Utils.to32BitField: bit `code` set for each operation, as Kafka's signed int32."""
    value = 0
    for op in operations:
        if not 0 <= op <= 31:
            raise ValueError(f"operation code out of range: {int(op)}")
        value |= 1 << op
    return value - (1 << 32) if value >= 1 << 31 else value


# --- validation (create-acls, describe-acls, delete-acls) ---


@dataclass(frozen=True)
class AclRefusal:
    """An in-band answer: the error code and message of one creation or filter."""

    error: Errors
    message: str


def check_principal(principal: str) -> str | None:
    """What is wrong with a principal string, or None: SecurityUtils.parseKafkaPrincipal wants
    "Type:name"; groupcoord also wants both parts non-empty."""
    kind, sep, name = principal.partition(":")
    if not sep or not kind or not name:
        return "expected a string in format principalType:principalName but got " + principal
    return None


def validate_binding(binding: AclBinding) -> AclRefusal | None:
    """Why CreateAcls refuses this ACL (42 INVALID_REQUEST, Kafka's messages), or None; the
    checks of AclApis.handleCreateAcls first, then AclControlManager.validateNewAcl's."""

    def refuse(message: str) -> AclRefusal:
        return AclRefusal(Errors.INVALID_REQUEST, message)

    if binding.resource_type == ResourceType.CLUSTER and binding.resource_name != CLUSTER_NAME:
        return refuse(f"The only valid name for the CLUSTER resource is {CLUSTER_NAME}")
    if not binding.resource_name:
        return refuse("Invalid empty resource name")
    if binding.resource_type in (ResourceType.UNKNOWN, ResourceType.ANY):
        return refuse(f"Invalid resourceType {binding.resource_type.name}")
    if binding.pattern_type not in (PatternType.LITERAL, PatternType.PREFIXED):
        return refuse(f"Invalid patternType {binding.pattern_type.name}")
    if binding.operation in (AclOperation.UNKNOWN, AclOperation.ANY):
        return refuse(f"Invalid operation {binding.operation.name}")
    if binding.permission not in (PermissionType.DENY, PermissionType.ALLOW):
        return refuse(f"Invalid permissionType {binding.permission.name}")
    if (problem := check_principal(binding.principal)) is not None:
        return refuse(problem)
    return None


def validate_filter(acl_filter: AclBindingFilter) -> AclRefusal | None:
    """Why DescribeAcls (the whole request) or DeleteAcls (this filter) is refused: a filter
    with an UNKNOWN part (42 INVALID_REQUEST), or None."""
    unknown = [
        label
        for label, value in (
            ("resourceType", acl_filter.resource_type),
            ("patternType", acl_filter.pattern_type),
            ("operation", acl_filter.operation),
            ("permissionType", acl_filter.permission),
        )
        if value == 0
    ]
    if unknown:
        return AclRefusal(
            Errors.INVALID_REQUEST, "The filter contains UNKNOWN elements: " + ", ".join(unknown)
        )
    return None


# --- the checks each API makes (kafka.server.KafkaApis) ---

# The error a denial answers, by the resource type checked.
DENIED_ERROR: Mapping[ResourceType, int] = MappingProxyType(
    {
        ResourceType.TOPIC: Errors.TOPIC_AUTHORIZATION_FAILED,
        ResourceType.GROUP: Errors.GROUP_AUTHORIZATION_FAILED,
        ResourceType.CLUSTER: Errors.CLUSTER_AUTHORIZATION_FAILED,
        ResourceType.TRANSACTIONAL_ID: Errors.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
    }
)


class Denial(Enum):
    """What a denied check does to the answer."""

    REQUEST = "request"  # the whole request answers DENIED_ERROR; nothing else is done
    ITEM = "item"  # that group or topic answers DENIED_ERROR; the others go on
    OMIT = "omit"  # that group or topic is left out of the answer, silently


@dataclass(frozen=True)
class Check:
    """One authorization check: `operation` on each resource of `resource_type` that the
    request field `names` names (a CLUSTER check is on "kafka-cluster")."""

    resource_type: ResourceType
    operation: AclOperation
    denial: Denial
    names: str
    # Skipped when the caller is allowed this operation on the cluster (Kafka's shortcut:
    # CREATE on the cluster creates any topic, DESCRIBE on it lists every group).
    unless_cluster: AclOperation | None = None
    # How a denial is answered instead when the request asks for everything (topics null):
    # Kafka does not disclose what the caller may not describe.
    denial_when_all: Denial | None = None

    @property
    def error(self) -> int:
        return DENIED_ERROR[self.resource_type]


@dataclass(frozen=True)
class ApiAuthorization:
    api: str
    # In Kafka's order: a REQUEST denial answers at once, before the later checks.
    checks: tuple[Check, ...]


_T, _G, _C = ResourceType.TOPIC, ResourceType.GROUP, ResourceType.CLUSTER
_REQ, _ITEM, _OMIT = Denial.REQUEST, Denial.ITEM, Denial.OMIT
_READ_GROUP = (Check(_G, _O.READ, _REQ, "groupId"),)

API_AUTHORIZATION: Mapping[str, ApiAuthorization] = MappingProxyType(
    {
        a.api: a
        for a in (
            ApiAuthorization(
                "find-coordinator", (Check(_G, _O.DESCRIBE, _ITEM, "coordinatorKeys[]"),)
            ),
            ApiAuthorization("join-group", _READ_GROUP),
            ApiAuthorization("sync-group", _READ_GROUP),
            ApiAuthorization("heartbeat", _READ_GROUP),
            ApiAuthorization("leave-group", _READ_GROUP),
            # Kafka 4.0 also checks DESCRIBE on the subscribed topics: any denied name fails
            # the heartbeat (29); topics a regex matches are left out of the subscription.
            ApiAuthorization(
                "consumer-group-heartbeat",
                (
                    *_READ_GROUP,
                    Check(_T, _O.DESCRIBE, _REQ, "subscribedTopicNames[]"),
                    Check(_T, _O.DESCRIBE, _OMIT, "the topics subscribedTopicRegex matches"),
                ),
            ),
            # Kafka 4.2: READ on the group, DESCRIBE on every topic the topology names (any
            # denied one fails the heartbeat, 29).
            ApiAuthorization(
                "streams-group-heartbeat",
                (
                    *_READ_GROUP,
                    Check(_T, _O.DESCRIBE, _REQ, "topology.subtopologies[] topics"),
                    # Beyond Kafka, as a consumer group's regex: by every member's principal.
                    Check(_T, _O.DESCRIBE, _OMIT, "the topics sourceTopicRegex matches"),
                ),
            ),
            # As Kafka's handleStreamsGroupDescribe: 29 (no members, no topology) when a topic
            # of the topology is not describable; a regex's resolved topics are left out.
            ApiAuthorization(
                "streams-group-describe",
                (
                    Check(_G, _O.DESCRIBE, _ITEM, "groupIds[]"),
                    Check(_T, _O.DESCRIBE, _ITEM, "the topics of the described topology"),
                    Check(_T, _O.DESCRIBE, _OMIT, "the topics a sourceTopicRegex resolved"),
                ),
            ),
            # groupcoord's sink writes (docs/exactly-once.md): WRITE on the TRANSACTIONAL_ID
            # named as each table they write, as Kafka's TxnOffsetCommit checks its id.
            ApiAuthorization(
                "offset-commit",
                (
                    *_READ_GROUP,
                    Check(ResourceType.TRANSACTIONAL_ID, _O.WRITE, _REQ, "writes[].TableName"),
                    Check(_T, _O.READ, _ITEM, "topics[]"),
                ),
            ),
            ApiAuthorization(
                "offset-fetch",
                (
                    Check(_G, _O.DESCRIBE, _ITEM, "groups[].groupId"),
                    Check(_T, _O.DESCRIBE, _ITEM, "groups[].topics[]", denial_when_all=_OMIT),
                ),
            ),
            ApiAuthorization(
                "offset-delete",
                (Check(_G, _O.DELETE, _REQ, "groupId"), Check(_T, _O.READ, _ITEM, "topics[]")),
            ),
            ApiAuthorization(
                "metadata", (Check(_T, _O.DESCRIBE, _ITEM, "topics[]", denial_when_all=_OMIT),)
            ),
            ApiAuthorization(
                "list-groups",
                (Check(_G, _O.DESCRIBE, _OMIT, "the groups listed", unless_cluster=_O.DESCRIBE),),
            ),
            ApiAuthorization("describe-groups", (Check(_G, _O.DESCRIBE, _ITEM, "groups[]"),)),
            # Kafka 4.0 also fails a described consumer group (29) whose members' subscriptions
            # or assignments name a topic the caller may not describe.
            ApiAuthorization(
                "consumer-group-describe",
                (
                    Check(_G, _O.DESCRIBE, _ITEM, "groupIds[]"),
                    Check(_T, _O.DESCRIBE, _ITEM, "the topics of the described group"),
                ),
            ),
            # groupcoord's monitoring extension: as consumer-group-describe (29 for a group
            # whose answer names a topic the caller may not describe), and as offset-fetch the
            # partitions only a committed offset names are left out.
            ApiAuthorization(
                "describe-group-activity",
                (
                    Check(_G, _O.DESCRIBE, _ITEM, "groupIds[]"),
                    Check(_T, _O.DESCRIBE, _ITEM, "the topics the described group names"),
                    Check(_T, _O.DESCRIBE, _OMIT, "the topics of committed offsets alone"),
                ),
            ),
            ApiAuthorization("delete-groups", (Check(_G, _O.DELETE, _ITEM, "groupsNames[]"),)),
            ApiAuthorization(
                "create-topics",
                (Check(_T, _O.CREATE, _ITEM, "topics[].name", unless_cluster=_O.CREATE),),
            ),
            ApiAuthorization("create-partitions", (Check(_T, _O.ALTER, _ITEM, "topics[].name"),)),
            # DESCRIBE first: a topic named by id that the caller may not describe is answered
            # without its name.
            ApiAuthorization(
                "delete-topics",
                (
                    Check(
                        _T,
                        _O.DESCRIBE,
                        _ITEM,
                        "topics[] named by topicId",
                        unless_cluster=_O.DELETE,
                    ),
                    Check(_T, _O.DELETE, _ITEM, "topics[]", unless_cluster=_O.DELETE),
                ),
            ),
            ApiAuthorization("create-acls", (Check(_C, _O.ALTER, _REQ, "kafka-cluster"),)),
            ApiAuthorization("describe-acls", (Check(_C, _O.DESCRIBE, _REQ, "kafka-cluster"),)),
            ApiAuthorization("delete-acls", (Check(_C, _O.ALTER, _REQ, "kafka-cluster"),)),
        )
    }
)


def api_authorization(api: str) -> ApiAuthorization:
    """The checks of an API by its http/apis.py name; KeyError for a name without a rule, so
    that a new API cannot go unchecked by default."""
    try:
        return API_AUTHORIZATION[api]
    except KeyError:
        raise KeyError(f"no authorization rule for API {api!r}") from None
