"""The Lambda entry points, wrapped in the observability decorators once for all functions."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from aws_lambda_powertools.logging import correlation_paths
from aws_lambda_powertools.metrics import MetricUnit

from .. import runtime
from ..observability import logger, metrics, tracer
from ..service.sweep import sweep
from .resolver import build_resolver

LambdaHandler = Callable[[dict[str, Any], Any], dict[str, Any]]


def make_api_handler(function_name: str) -> LambdaHandler:
    """The handler of an API function (membership, offsets, admin)."""
    app = build_resolver(function_name)

    @logger.inject_lambda_context(correlation_id_path=correlation_paths.API_GATEWAY_HTTP)
    @tracer.capture_lambda_handler
    @metrics.log_metrics
    def lambda_handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
        logger.append_keys(function=function_name)
        return app.resolve(event, context)

    return lambda_handler


def make_sweeper_handler() -> LambdaHandler:
    """The handler of the scheduled sweeper (EventBridge, every minute)."""

    @logger.inject_lambda_context
    @tracer.capture_lambda_handler
    @metrics.log_metrics
    def lambda_handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
        _, store = runtime.current()
        report = sweep(store, runtime.now_ms())
        metrics.add_metric(name="SweepOverdue", unit=MetricUnit.Count, value=report.overdue)
        metrics.add_metric(name="SweepFailed", unit=MetricUnit.Count, value=report.failed)
        if report.overdue:
            logger.info("sweep done", extra=report.as_dict())
        return report.as_dict()

    return lambda_handler
