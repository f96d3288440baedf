"""find-coordinator: every group is coordinated by this endpoint."""

from __future__ import annotations

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
    epoch = ctx.store.coordinator.epoch_for(ctx.endpoint, pinned=bool(ctx.settings.endpoint))
    return FindCoordinatorResponse(
        coordinators=[
            Coordinator(
                key=key,
                node_id=0,
                host=host,
                port=port,
                endpoint=ctx.endpoint,
                coordinator_epoch=epoch,
            )
            for key in request.coordinator_keys
        ]
    )
