"""Powertools Logger, Tracer and Metrics: module-level singletons shared by every function.

Outside Lambda (serve, tests) the Tracer disables itself; serve turns EMF metrics off unless
asked (POWERTOOLS_METRICS_DISABLED), since they would flood the terminal.
"""

from aws_lambda_powertools import Logger, Metrics, Tracer

SERVICE = "groupcoord"

logger = Logger(service=SERVICE)
tracer = Tracer(service=SERVICE)
metrics = Metrics(namespace=SERVICE, service=SERVICE)
