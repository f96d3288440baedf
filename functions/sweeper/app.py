"""Lambda entry point of the sweeper, run by the EventBridge schedule."""

from groupcoord.http.handler import make_sweeper_handler

lambda_handler = make_sweeper_handler()
