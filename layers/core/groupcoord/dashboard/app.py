"""The dashboard's web app (WSGI, werkzeug + Jinja2): server-rendered pages, and the same
pages' live parts as HTML fragments that dashboard.js swaps in on a timer.

Routes (under whatever prefix mounts the app: `/` for `groupcoord dashboard`, `/ui` in
`serve`):

    GET /                         every group, searchable (?q=)
    GET /fragments/groups         the overview's live table
    GET /groups/<id>              one group: members, partition grid, offsets, timeline
    GET /fragments/groups/<id>    that page's live part
    GET /static/<name>            the stylesheet and the script (shipped, no CDN)

Read only: no route changes anything, and the browser never sees a credential. A Host check
refuses requests for any other host name than the one served (DNS rebinding: a web page
that rebinds its name to 127.0.0.1 must not read the dashboard with the user's rights).
"""

from __future__ import annotations

from collections.abc import Iterable
from importlib import resources
from typing import Any

from jinja2 import Environment, PackageLoader, select_autoescape
from werkzeug.exceptions import HTTPException, NotFound
from werkzeug.routing import Map, Rule
from werkzeug.wrappers import Request, Response

from ..client.errors import GroupcoordError
from . import views
from .source import CoordinatorSource

STATIC = {"dashboard.css": "text/css", "dashboard.js": "text/javascript"}
SECURITY_HEADERS = {
    # Only our own script and stylesheet; no inline code, no frames, nothing elsewhere.
    "Content-Security-Policy": "default-src 'none'; script-src 'self'; style-src 'self'; "
    "img-src 'self'; connect-src 'self'; base-uri 'none'; form-action 'self'; "
    "frame-ancestors 'none'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}

URLS = Map(
    [
        Rule("/", endpoint="overview"),
        Rule("/fragments/groups", endpoint="overview_fragment"),
        Rule("/groups/<path:group_id>", endpoint="group"),
        Rule("/fragments/groups/<path:group_id>", endpoint="group_fragment"),
        Rule("/static/<name>", endpoint="static"),
    ],
    strict_slashes=False,
)


class Dashboard:
    """The WSGI app. `allowed_hosts`: the Host header values accepted (None: any, for a
    mount behind a server that checks it itself)."""

    def __init__(
        self,
        source: CoordinatorSource,
        *,
        allowed_hosts: Iterable[str] | None = None,
        detail_poll_ms: int = 2000,
        overview_poll_ms: int = 5000,
    ) -> None:
        self.source = source
        self.allowed_hosts = set(allowed_hosts) if allowed_hosts is not None else None
        self.poll_ms = {"detail": detail_poll_ms, "overview": overview_poll_ms}
        self.templates = Environment(
            loader=PackageLoader("groupcoord.dashboard", "templates"),
            autoescape=select_autoescape(default=True),
            trim_blocks=True,
            lstrip_blocks=True,
        )
        self.templates.filters.update(views.FILTERS)

    def __call__(self, environ: dict[str, Any], start_response: Any) -> Any:
        request = Request(environ)
        try:
            response = self._dispatch(request)
        except HTTPException as error:
            response = error.get_response(environ)  # type: ignore[assignment]
        for name, value in SECURITY_HEADERS.items():
            response.headers.setdefault(name, value)
        return response(environ, start_response)

    def _dispatch(self, request: Request) -> Response:
        if self.allowed_hosts is not None and request.host not in self.allowed_hosts:
            return Response("unknown host", status=421, mimetype="text/plain")
        if request.method not in ("GET", "HEAD"):
            return Response("read only", status=405, headers={"Allow": "GET, HEAD"})
        endpoint, args = URLS.bind_to_environ(request.environ).match()
        if endpoint == "static":
            return self._static(args["name"])
        return getattr(self, f"_{endpoint}")(request, **args)

    def _static(self, name: str) -> Response:
        if name not in STATIC:
            raise NotFound()
        body = resources.files("groupcoord.dashboard").joinpath("static", name).read_bytes()
        return Response(body, mimetype=STATIC[name])

    def _render(
        self, request: Request, template: str, status: int = 200, **context: Any
    ) -> Response:
        html = self.templates.get_template(template).render(
            base=request.script_root, endpoint=self.source.endpoint, poll_ms=self.poll_ms, **context
        )
        return Response(html, status=status, mimetype="text/html")

    def _overview_context(self, request: Request) -> dict[str, Any]:
        search = request.args.get("q", "")[:255]
        try:
            return {"search": search, "overview": self.source.overview(search), "error": None}
        except GroupcoordError as error:
            return {"search": search, "overview": None, "error": str(error)}

    def _overview(self, request: Request) -> Response:
        context = self._overview_context(request)
        return self._render(request, "overview.html", 502 if context["error"] else 200, **context)

    def _overview_fragment(self, request: Request) -> Response:
        context = self._overview_context(request)
        return self._render(
            request, "overview_live.html", 502 if context["error"] else 200, **context
        )

    def _group_context(self, group_id: str) -> dict[str, Any]:
        try:
            detail = self.source.group(group_id)
        except GroupcoordError as error:
            return {"group_id": group_id, "page": None, "error": str(error)}
        return {"group_id": group_id, "page": views.group_page(detail), "error": None}

    def _group(self, request: Request, group_id: str) -> Response:
        context = self._group_context(group_id)
        return self._render(request, "group.html", 502 if context["error"] else 200, **context)

    def _group_fragment(self, request: Request, group_id: str) -> Response:
        context = self._group_context(group_id)
        return self._render(request, "group_live.html", 502 if context["error"] else 200, **context)
