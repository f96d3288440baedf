"""Lambda entry point of the admin function (its APIs: groupcoord.http.apis)."""

from groupcoord.http.handler import make_api_handler

lambda_handler = make_api_handler("admin")
