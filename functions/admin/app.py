"""Lambda entry point of the admin function (routes: groupcoord.http.routing)."""

from groupcoord.http.handler import make_api_handler

lambda_handler = make_api_handler("admin")
