"""ACL admin APIs: create-acls (Kafka CreateAcls v3), describe-acls (DescribeAcls v3) and
delete-acls (DeleteAcls v3).

Resource types, pattern types, operations and permission types travel as Kafka's int8 codes
(org.apache.kafka.common.resource.ResourceType and PatternType,
org.apache.kafka.common.acl.AclOperation and AclPermissionType; core/acls.py has them as
enums). A code Kafka does not know is accepted here, as Kafka's parser accepts it, and answered
in band (42 INVALID_REQUEST) by core/acls.py's validation.
"""

from __future__ import annotations

from pydantic import Field

from .base import Int8, Int16, KafkaMessage, KafkaResponse, bounded
from .limits import PRINCIPAL_MAX_CHARS

# The bounds of this family (they belong with models/limits.py's).
# A resource name or prefix is at most the longest name the authorizer is ever asked about: a
# group id (255) or a topic name (249); "kafka-cluster" and "*" fit.
ACL_RESOURCE_NAME_MAX_CHARS = 255
# An IPv4 or IPv6 address (with a zone), or "*".
ACL_HOST_MAX_CHARS = 255
ACLS_PER_REQUEST_MAX = 1000  # creations in one create-acls, filters in one delete-acls

ResourceName = bounded(ACL_RESOURCE_NAME_MAX_CHARS)
Principal = bounded(PRINCIPAL_MAX_CHARS)
Host = bounded(ACL_HOST_MAX_CHARS)

_RESOURCE_TYPE = (
    "0 UNKNOWN, 1 ANY, 2 TOPIC, 3 GROUP, 4 CLUSTER, 5 TRANSACTIONAL_ID, 6 DELEGATION_TOKEN, 7 USER."
)
_PATTERN_TYPE = "0 UNKNOWN, 1 ANY, 2 MATCH, 3 LITERAL, 4 PREFIXED."
_OPERATION = (
    "0 UNKNOWN, 1 ANY, 2 ALL, 3 READ, 4 WRITE, 5 CREATE, 6 DELETE, 7 ALTER, 8 DESCRIBE, "
    "9 CLUSTER_ACTION, 10 DESCRIBE_CONFIGS, 11 ALTER_CONFIGS, 12 IDEMPOTENT_WRITE, "
    "13 CREATE_TOKENS, 14 DESCRIBE_TOKENS."
)
_PERMISSION_TYPE = "0 UNKNOWN, 1 ANY, 2 DENY, 3 ALLOW."


# --- create-acls (Kafka CreateAcls v3) ---


class AclCreation(KafkaMessage):
    resource_type: Int8 = Field(description=f"The resource type: 2 to 7 ({_RESOURCE_TYPE})")
    resource_name: ResourceName = Field(
        description="The resource name, or its prefix; `*` (LITERAL) names every resource of "
        "the type; a CLUSTER resource is `kafka-cluster`."
    )
    resource_pattern_type: Int8 = Field(3, description=f"3 LITERAL or 4 PREFIXED ({_PATTERN_TYPE})")
    principal: Principal = Field(
        description="`Type:name`, e.g. `User:arn:aws:iam::123456789012:role/team-a`; "
        "`User:*` is every principal."
    )
    host: Host = Field(description="The caller's source address, or `*` for any.")
    operation: Int8 = Field(description=f"The operation: 2 to 14 ({_OPERATION})")
    permission_type: Int8 = Field(description=f"2 DENY or 3 ALLOW ({_PERMISSION_TYPE})")


class CreateAclsRequest(KafkaMessage):
    creations: list[AclCreation] = Field(max_length=ACLS_PER_REQUEST_MAX)


class AclCreationResult(KafkaMessage):
    error_code: Int16 = 0
    error_message: str | None = None


class CreateAclsResponse(KafkaResponse):
    results: list[AclCreationResult] = Field(
        [], description="One per creation, in the request's order."
    )


# --- describe-acls (Kafka DescribeAcls v3) ---


class DescribeAclsRequest(KafkaMessage):
    resource_type_filter: Int8 = Field(description=f"1 ANY, or one type ({_RESOURCE_TYPE})")
    resource_name_filter: ResourceName | None = Field(None, description="null matches any name.")
    pattern_type_filter: Int8 = Field(
        3,
        description="1 ANY, 2 MATCH (every ACL that applies to resourceNameFilter: the literal "
        f"name, the `*` wildcard and matching prefixes), 3 LITERAL or 4 PREFIXED ({_PATTERN_TYPE})",
    )
    principal_filter: Principal | None = Field(None, description="null matches any principal.")
    host_filter: Host | None = Field(None, description="null matches any host.")
    operation: Int8 = Field(description=f"1 ANY, or one operation ({_OPERATION})")
    permission_type: Int8 = Field(description=f"1 ANY, 2 DENY or 3 ALLOW ({_PERMISSION_TYPE})")


class AclDescription(KafkaMessage):
    principal: str
    host: str
    operation: Int8
    permission_type: Int8


class DescribeAclsResource(KafkaMessage):
    resource_type: Int8
    resource_name: str
    pattern_type: Int8 = 3
    acls: list[AclDescription] = []


class DescribeAclsResponse(KafkaResponse):
    error_code: Int16 = 0
    error_message: str | None = None
    resources: list[DescribeAclsResource] = []


# --- delete-acls (Kafka DeleteAcls v3) ---


class DeleteAclsFilter(KafkaMessage):
    resource_type_filter: Int8 = Field(description=f"1 ANY, or one type ({_RESOURCE_TYPE})")
    resource_name_filter: ResourceName | None = Field(None, description="null matches any name.")
    pattern_type_filter: Int8 = Field(
        3, description=f"1 ANY, 2 MATCH, 3 LITERAL or 4 PREFIXED ({_PATTERN_TYPE})"
    )
    principal_filter: Principal | None = Field(None, description="null matches any principal.")
    host_filter: Host | None = Field(None, description="null matches any host.")
    operation: Int8 = Field(description=f"1 ANY, or one operation ({_OPERATION})")
    permission_type: Int8 = Field(description=f"1 ANY, 2 DENY or 3 ALLOW ({_PERMISSION_TYPE})")


class DeleteAclsRequest(KafkaMessage):
    filters: list[DeleteAclsFilter] = Field(max_length=ACLS_PER_REQUEST_MAX)


class DeleteAclsMatchingAcl(KafkaMessage):
    error_code: Int16 = 0
    error_message: str | None = None
    resource_type: Int8
    resource_name: str
    pattern_type: Int8 = 3
    principal: str
    host: str
    operation: Int8
    permission_type: Int8


class DeleteAclsFilterResult(KafkaMessage):
    error_code: Int16 = 0
    error_message: str | None = None
    matching_acls: list[DeleteAclsMatchingAcl] = []


class DeleteAclsResponse(KafkaResponse):
    filter_results: list[DeleteAclsFilterResult] = Field(
        [], description="One per filter, in the request's order."
    )
