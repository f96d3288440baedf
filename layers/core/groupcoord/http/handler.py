"""The Lambda entry points, wrapped in the observability decorators once for all functions.

A function imports only what it runs: at init, the plumbing (Powertools' logger and metrics,
an API function's resolver); an API's code with that API's first request (http/resolver.py),
the sweep with the sweeper's first invocation (tests/unit/test_cold_imports.py checks what each
function's `import app` loads).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from aws_lambda_powertools.logging import correlation_paths
from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.metrics.functions import is_metrics_disabled

from .. import clock, runtime
from ..observability import logger, metrics, tracer

if TYPE_CHECKING:
    from ..service.sweep import SweepReport

LambdaHandler = Callable[[dict[str, Any], Any], dict[str, Any]]


def make_api_handler(function_name: str) -> LambdaHandler:
    """The handler of an API function (membership, offsets, admin)."""
    from .resolver import build_resolver

    app = build_resolver(function_name)

    @logger.inject_lambda_context(correlation_id_path=correlation_paths.API_GATEWAY_HTTP)
    @tracer.capture_lambda_handler
    @metrics.log_metrics
    def lambda_handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
        logger.append_keys(function=function_name)
        settings, _ = runtime.current()
        with clock.shifted(settings.fault_clock_offset_ms):
            return app.resolve(event, context)

    return lambda_handler


# Of what a sweeper invocation has left when it starts, kept back from the sweep's budget:
# for the report and the metrics, and for a completion that overruns the sweep's margin.
SWEEP_SAFETY_MS = 5_000


def make_sweeper_handler(budget_ms: int | None = None) -> LambdaHandler:
    """The handler of the scheduled sweeper (EventBridge, every minute). Each sweep may take
    `budget_ms`, or, by default, what the invocation has left less SWEEP_SAFETY_MS; overdue
    items beyond it are the next sweep's."""

    @logger.inject_lambda_context
    @tracer.capture_lambda_handler
    @metrics.log_metrics
    def lambda_handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
        # With the first invocation, as an API's code with its first request: the sweep
        # reaches every group type's code, which the init need not load.
        from ..service.sweep import Budget, sweep

        settings, store = runtime.current()
        allowed_ms = (
            budget_ms
            if budget_ms is not None
            else context.get_remaining_time_in_millis() - SWEEP_SAFETY_MS
        )
        with clock.shifted(settings.fault_clock_offset_ms):
            # The budget runs on the deployment's clock: the system's in AWS, where the
            # invocation times out in real time.
            budget = Budget.of_ms(max(0, allowed_ms), timer=store.clock.monotonic_s)
            report = sweep(store, store.clock.now_ms(), budget=budget)
        _record_sweep(report)
        if report.overdue or report.remaining:
            logger.info("sweep done", extra=report.as_dict())
        return report.as_dict()

    return lambda_handler


def _record_sweep(report: SweepReport) -> None:
    if is_metrics_disabled():
        # Powertools never flushes a disabled Metrics (`serve`): adding would pile up and
        # spill a blob of them to stdout every hundred sweeps.
        return
    metrics.add_metric(name="SweepOverdue", unit=MetricUnit.Count, value=report.overdue)
    metrics.add_metric(name="SweepFailed", unit=MetricUnit.Count, value=report.failed)
    metrics.add_metric(name="SweepQuarantined", unit=MetricUnit.Count, value=report.quarantined)
    # Nonzero exactly when the sweep ran out of budget with overdue items left; nonzero run
    # after run means the sweeper does not keep up.
    metrics.add_metric(name="SweepDeferred", unit=MetricUnit.Count, value=report.deferred)
