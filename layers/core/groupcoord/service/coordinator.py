"""find-coordinator: every group is coordinated by this endpoint. As Kafka, a group key the caller
may not DESCRIBE answers 30 in its entry, with no coordinator."""

from __future__ import annotations

from ..core.acls import AclOperation
from ..errors import Errors
from ..models.coordinator import Coordinator, FindCoordinatorRequest, FindCoordinatorResponse
from .context import ApiContext

GROUP_KEY_TYPE = 0


def find_coordinator(request: FindCoordinatorRequest, ctx: ApiContext) -> FindCoordinatorResponse:
    host, port = ctx.host_and_port
    if request.key_type != GROUP_KEY_TYPE:
        # Transaction (1) and share (2) coordinators are not served here.
        return FindCoordinatorResponse(
            coordinators=[
                Coordinator(
                    key=key,
                    node_id=-1,
                    port=-1,
                    error_code=Errors.INVALID_REQUEST,
                    error_message=f"keyType {request.key_type} is not supported: only 0 (group)",
                )
                for key in request.coordinator_keys
            ]
        )
    keys = request.coordinator_keys
    permitted = [ctx.caller.may_on_group(AclOperation.DESCRIBE, key) for key in keys]
    # Nothing is read for a request whose every key is refused.
    epoch = (
        ctx.store.coordinator.epoch_for(ctx.endpoint, pinned=bool(ctx.settings.endpoint))
        if any(permitted) or not keys
        else 0
    )
    return FindCoordinatorResponse(
        coordinators=[
            Coordinator(
                key=key,
                node_id=0,
                host=host,
                port=port,
                endpoint=ctx.endpoint,
                coordinator_epoch=epoch,
                push_url=ctx.settings.push_url or None,
            )
            if may
            # Kafka's Node.noNode, and no endpoint either.
            else Coordinator(
                key=key, node_id=-1, port=-1, error_code=Errors.GROUP_AUTHORIZATION_FAILED
            )
            for key, may in zip(keys, permitted, strict=True)
        ]
    )
