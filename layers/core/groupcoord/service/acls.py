"""create-acls, describe-acls, delete-acls: Kafka's ACL admin APIs (kafka-acls.sh speaks them).

As in Kafka, they need the authorizer: with `groupcoord.authorizer.enabled` off they answer 54
SECURITY_DISABLED. Creating and deleting needs ALTER on the cluster, describing DESCRIBE on it
(31 CLUSTER_AUTHORIZATION_FAILED otherwise); `super.users` may always.
"""

from __future__ import annotations

from collections.abc import Iterable

from ..core.acls import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    PatternType,
    PermissionType,
    ResourceType,
    validate_binding,
    validate_filter,
)
from ..errors import Errors
from ..models.acls import (
    AclCreation,
    AclCreationResult,
    AclDescription,
    CreateAclsRequest,
    CreateAclsResponse,
    DeleteAclsFilter,
    DeleteAclsFilterResult,
    DeleteAclsMatchingAcl,
    DeleteAclsRequest,
    DeleteAclsResponse,
    DescribeAclsRequest,
    DescribeAclsResource,
    DescribeAclsResponse,
)
from ..store.acls import AclLimitReached
from .authorization import acl_cache
from .context import ApiContext

NO_AUTHORIZER = "No Authorizer is configured."
NOT_ALLOWED = "Cluster authorization failed."


def _refusal(ctx: ApiContext, operation: AclOperation) -> tuple[Errors, str] | None:
    if not ctx.settings.authorizer_enabled:
        return Errors.SECURITY_DISABLED, NO_AUTHORIZER
    if not ctx.caller.may_on_cluster(operation):
        return Errors.CLUSTER_AUTHORIZATION_FAILED, NOT_ALLOWED
    return None


def create_acls(request: CreateAclsRequest, ctx: ApiContext) -> CreateAclsResponse:
    refusal = _refusal(ctx, AclOperation.ALTER)
    if refusal is not None:
        error, message = refusal
        return CreateAclsResponse(
            results=[
                AclCreationResult(error_code=error, error_message=message)
                for _ in request.creations
            ]
        )
    results: list[AclCreationResult] = []
    valid: list[AclBinding] = []
    for creation in request.creations:
        binding = binding_from_creation(creation)
        invalid = validate_binding(binding)
        if invalid is None:
            valid.append(binding)
            results.append(AclCreationResult())
        else:
            results.append(
                AclCreationResult(error_code=invalid.error, error_message=invalid.message)
            )
    if valid:
        try:
            ctx.store.acls.create(valid)
        except AclLimitReached as full:
            created = set(full.created)
            message = f"The coordinator holds at most {full.limit} ACLs; delete some first."
            index = 0
            for result in results:
                if result.error_code != Errors.NONE:
                    continue
                if valid[index] not in created:
                    result.error_code, result.error_message = Errors.INVALID_REQUEST, message
                index += 1
        finally:
            acl_cache(ctx.store).invalidate()
    return CreateAclsResponse(results=results)


def describe_acls(request: DescribeAclsRequest, ctx: ApiContext) -> DescribeAclsResponse:
    refusal = _refusal(ctx, AclOperation.DESCRIBE)
    if refusal is not None:
        return DescribeAclsResponse(error_code=refusal[0], error_message=refusal[1])
    acl_filter = filter_from_request(request)
    invalid = validate_filter(acl_filter)
    if invalid is not None:
        return DescribeAclsResponse(error_code=invalid.error, error_message=invalid.message)
    found = [b for b in ctx.store.acls.load().bindings if acl_filter.matches(b)]
    return DescribeAclsResponse(resources=describe_resources(found))


def delete_acls(request: DeleteAclsRequest, ctx: ApiContext) -> DeleteAclsResponse:
    refusal = _refusal(ctx, AclOperation.ALTER)
    if refusal is not None:
        error, message = refusal
        return DeleteAclsResponse(
            filter_results=[
                DeleteAclsFilterResult(error_code=error, error_message=message)
                for _ in request.filters
            ]
        )
    bindings = ctx.store.acls.load().bindings
    results: list[DeleteAclsFilterResult] = []
    doomed: dict[AclBinding, None] = {}
    for entry in request.filters:
        acl_filter = filter_from_request(entry)
        invalid = validate_filter(acl_filter)
        if invalid is not None:
            results.append(
                DeleteAclsFilterResult(error_code=invalid.error, error_message=invalid.message)
            )
            continue
        matched = [b for b in bindings if acl_filter.matches(b)]
        doomed.update(dict.fromkeys(matched))
        results.append(DeleteAclsFilterResult(matching_acls=[matching_acl(b) for b in matched]))
    if doomed:
        try:
            ctx.store.acls.delete(list(doomed))
        finally:
            acl_cache(ctx.store).invalidate()
    return DeleteAclsResponse(filter_results=results)


# --- conversions between core/acls.py's model and the messages of models/acls.py ---


def binding_from_creation(creation: AclCreation) -> AclBinding:
    """A creation as a binding; unknown codes become UNKNOWN, refused by validate_binding."""
    return AclBinding(
        resource_type=ResourceType.from_code(creation.resource_type),
        resource_name=creation.resource_name,
        pattern_type=PatternType.from_code(creation.resource_pattern_type),
        principal=creation.principal,
        host=creation.host,
        operation=AclOperation.from_code(creation.operation),
        permission=PermissionType.from_code(creation.permission_type),
    )


def filter_from_request(request: DescribeAclsRequest | DeleteAclsFilter) -> AclBindingFilter:
    """The filter of a describe-acls request or of one delete-acls filter."""
    return AclBindingFilter(
        resource_type=ResourceType.from_code(request.resource_type_filter),
        resource_name=request.resource_name_filter,
        pattern_type=PatternType.from_code(request.pattern_type_filter),
        principal=request.principal_filter,
        host=request.host_filter,
        operation=AclOperation.from_code(request.operation),
        permission=PermissionType.from_code(request.permission_type),
    )


def describe_resources(bindings: Iterable[AclBinding]) -> list[DescribeAclsResource]:
    """DescribeAclsResponse.aclsResources: the ACLs grouped by resource pattern, in order of
    first appearance."""
    grouped: dict[tuple[ResourceType, str, PatternType], list[AclDescription]] = {}
    for b in bindings:
        grouped.setdefault((b.resource_type, b.resource_name, b.pattern_type), []).append(
            AclDescription(
                principal=b.principal,
                host=b.host,
                operation=int(b.operation),
                permission_type=int(b.permission),
            )
        )
    return [
        DescribeAclsResource(
            resource_type=int(rtype), resource_name=name, pattern_type=int(ptype), acls=acls
        )
        for (rtype, name, ptype), acls in grouped.items()
    ]


def matching_acl(binding: AclBinding) -> DeleteAclsMatchingAcl:
    """A deleted ACL as delete-acls answers it."""
    return DeleteAclsMatchingAcl(
        resource_type=int(binding.resource_type),
        resource_name=binding.resource_name,
        pattern_type=int(binding.pattern_type),
        principal=binding.principal,
        host=binding.host,
        operation=int(binding.operation),
        permission_type=int(binding.permission),
    )
