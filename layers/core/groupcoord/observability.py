"""Powertools Logger, Tracer and Metrics: module-level singletons shared by every function.

The Tracer is built only where tracing is on (`tracing_enabled()`): Powertools' Tracer imports
the X-Ray SDK even when disabled, and that import alone is most of a cold start
(docs/performance.md, "Cold start"). Where tracing is off `tracer` is a stand-in whose
decorators return the function unchanged, which is all a disabled Tracer does.

Outside Lambda (serve, tests) tracing is off; serve turns EMF metrics off unless asked
(POWERTOOLS_METRICS_DISABLED), since they would flood the terminal.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from aws_lambda_powertools.logging import Logger
from aws_lambda_powertools.metrics import Metrics

SERVICE = "groupcoord"

F = TypeVar("F", bound=Callable[..., Any])

logger = Logger(service=SERVICE)
metrics = Metrics(namespace=SERVICE, service=SERVICE)


def tracing_enabled(environ: Mapping[str, str] = os.environ) -> bool:
    """Powertools' own rule (Tracer._is_tracer_disabled): on in Lambda unless
    POWERTOOLS_TRACE_DISABLED is truthy; off outside Lambda and under `sam local`.
    template.yaml sets POWERTOOLS_TRACE_DISABLED from its Tracing parameter."""
    disabled = environ.get("POWERTOOLS_TRACE_DISABLED", "false").strip().lower()
    if disabled in ("1", "true", "yes", "on", "y", "t"):
        return False
    in_lambda = bool(environ.get("LAMBDA_TASK_ROOT"))
    emulated = bool(environ.get("AWS_SAM_LOCAL") or environ.get("AWS_CHALICE_CLI_MODE"))
    return in_lambda and not emulated


class NoTracer:
    """What a disabled Powertools Tracer does, without importing the X-Ray SDK: nothing."""

    disabled = True

    def capture_lambda_handler(self, handler: F) -> F:
        return handler

    def capture_method(self, method: F) -> F:
        return method

    def put_annotation(self, key: str, value: Any) -> None:
        return None

    def put_metadata(self, key: str, value: Any, namespace: str | None = None) -> None:
        return None


def _make_tracer() -> Any:
    if not tracing_enabled():
        return NoTracer()
    from aws_lambda_powertools.tracing import Tracer

    return Tracer(service=SERVICE)


# Decided once, at import (the Lambda init phase), from the environment Lambda sets.
tracer: Any = _make_tracer()
