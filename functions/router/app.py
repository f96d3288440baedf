"""Lambda entry point of the router: every API behind one function URL (FrontDoor=FunctionUrl;
its APIs: all of groupcoord.http.apis)."""

from groupcoord.http.apis import ROUTER
from groupcoord.http.handler import make_api_handler

lambda_handler = make_api_handler(ROUTER)
