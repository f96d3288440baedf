"""Which Lambda function serves which API. template.yaml routes `POST /v1/<api>` the same way
(tests/integration/test_template.py checks it), and `groupcoord serve` dispatches by this table.
"""

from __future__ import annotations

FUNCTION_APIS: dict[str, tuple[str, ...]] = {
    # Group membership: the hot path (heartbeats), kept apart so it scales and is billed alone.
    "membership": (
        "join-group",
        "sync-group",
        "heartbeat",
        "leave-group",
        "consumer-group-heartbeat",
    ),
    "offsets": ("offset-commit", "offset-fetch", "offset-delete"),
    # Discovery, topic registry and group admin; also the API's $default route (404 / 405).
    "admin": (
        "find-coordinator",
        "metadata",
        "create-topics",
        "create-partitions",
        "delete-topics",
        "list-groups",
        "describe-groups",
        "consumer-group-describe",
        "delete-groups",
    ),
}

DEFAULT_ROUTE_FUNCTION = "admin"

API_FUNCTION: dict[str, str] = {
    api: function for function, apis in FUNCTION_APIS.items() for api in apis
}


def function_for_path(path: str) -> str:
    """The function API Gateway would invoke for `path` (any method)."""
    prefix = "/v1/"
    if path.startswith(prefix):
        return API_FUNCTION.get(path[len(prefix) :], DEFAULT_ROUTE_FUNCTION)
    return DEFAULT_ROUTE_FUNCTION
