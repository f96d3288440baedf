"""What each Lambda function's `import app` loads (its cold start, docs/performance.md): only its
own APIs' code, no X-Ray SDK while tracing is off, and nothing that can wait for the first
request. Each import runs in a fresh interpreter, from the function's folder with only the layer
on the path and the environment Lambda sets, as `python -m bench.coldstart` measures it; the
check is on sys.modules afterwards, so it is deterministic (no timing)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from functools import cache
from pathlib import Path

import pytest

from groupcoord.http.apis import APIS, FUNCTION_APIS, ROUTER, serves

ROOT = Path(__file__).resolve().parents[2]
LAYER = ROOT / "layers" / "core"
FUNCTIONS = sorted(p.parent.name for p in (ROOT / "functions").glob("*/app.py"))

_PROBE = "import json, sys, app; print(json.dumps(sorted(sys.modules)))"
# After the import, one request of each of the function's APIs (body `{}`, on the in-memory
# store), as an instance's first requests would be.
_PROBE_REQUESTS = """
import json, sys, app
from groupcoord import runtime
from groupcoord.http.apis import APIS, serves
from groupcoord.local.events import LambdaContext, http_api_event
from groupcoord.settings import Settings
from groupcoord.local.memory import memory_store
store = memory_store(Settings())
store.ensure_table()
runtime.configure(store.settings, store)
function = sys.argv[1]
for api in [api.name for api in APIS if serves(function, api)]:
    event = http_api_event("POST", f"/v1/{api}", b"{}", {"content-type": "application/json"})
    app.lambda_handler(event, LambdaContext(function))
print(json.dumps(sorted(sys.modules)))
"""

# Never at a function's import: the X-Ray SDK while tracing is off (about 200 ms), the AWS SDK
# and boto3's s3transfer (the store's client is built at the first request, runtime.py), and
# Powertools' event handler (http/resolver.py routes by itself).
NEVER_AT_IMPORT = {"aws_xray_sdk", "boto3", "s3transfer", "aws_lambda_powertools.event_handler"}

# Service modules of another function's APIs that a function legitimately shares: the offset
# retention (offset-commit's rules, the sweeper's retention check) deletes a group it emptied
# as delete-groups does.
SHARED_SERVICES = {
    "offsets": {"group_admin"},
    "sweeper": {"group_admin"},
}


def _service_module(api_service: str) -> str:
    return "groupcoord.service." + api_service.partition(":")[0]


def lambda_env(*, tracing: bool) -> dict[str, str]:
    """What Lambda sets that the handlers read at import, with tracing on or off."""
    return {
        "PATH": os.environ.get("PATH", ""),
        "PYTHONPATH": str(LAYER),
        "PYTHONDONTWRITEBYTECODE": "1",
        "AWS_REGION": "us-east-1",
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_LAMBDA_FUNCTION_NAME": "groupcoord-cold-imports",
        "LAMBDA_TASK_ROOT": "/var/task",
        "AWS_EXECUTION_ENV": "AWS_Lambda_python3.12",
        "POWERTOOLS_SERVICE_NAME": "groupcoord",
        "POWERTOOLS_METRICS_NAMESPACE": "groupcoord",
        "POWERTOOLS_TRACE_DISABLED": "false" if tracing else "true",
    }


@cache
def imported(function: str, tracing: bool = False, requests: bool = False) -> frozenset[str]:
    """The modules loaded once `import app` of the function returned (and, with `requests`,
    once it answered a request of each of its APIs)."""
    done = subprocess.run(
        [sys.executable, "-c", _PROBE_REQUESTS if requests else _PROBE, function],
        cwd=ROOT / "functions" / function,
        env=lambda_env(tracing=tracing),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return frozenset(json.loads(done.stdout.strip().splitlines()[-1]))


def _loaded(modules: frozenset[str], package: str) -> set[str]:
    return {m for m in modules if m == package or m.startswith(package + ".")}


# The functions that answer no API of the table: the sweeper, and the push channel's routes.
NON_API_FUNCTIONS = ("sweeper", "push")


def test_the_functions_are_the_api_functions_the_sweeper_and_push() -> None:
    assert set(FUNCTIONS) == {*FUNCTION_APIS, ROUTER, *NON_API_FUNCTIONS}


@pytest.mark.parametrize("function", FUNCTIONS)
def test_nothing_that_can_wait_is_imported(function: str) -> None:
    modules = imported(function)
    found = {package: _loaded(modules, package) for package in NEVER_AT_IMPORT}
    assert {p: sorted(m)[:3] for p, m in found.items() if m} == {}


@pytest.mark.parametrize("requests", [False, True], ids=["import", "first-requests"])
@pytest.mark.parametrize("function", FUNCTIONS)
def test_a_function_imports_no_other_functions_api_code(function: str, requests: bool) -> None:
    if requests and function in NON_API_FUNCTIONS:
        pytest.skip(f"{function} answers no API")
    own = {api.service for api in APIS if serves(function, api)}
    others = {
        _service_module(api.service)
        for api in APIS
        if not serves(function, api) and api.service not in own
    }
    others -= {_service_module(s) for s in own}
    others -= {f"groupcoord.service.{m}" for m in SHARED_SERVICES.get(function, set())}
    assert sorted(others & imported(function, requests=requests)) == []


@pytest.mark.parametrize("function", [*sorted(FUNCTION_APIS), ROUTER])
def test_an_api_is_loaded_by_its_first_request(function: str) -> None:
    """An API function's init is the plumbing its APIs share (routing, validation, the
    caller); an API's service and messages come with its first request. The router, which
    serves every API, loads none of them at init either."""
    at_init, answered = imported(function), imported(function, requests=True)
    for api in APIS:
        if serves(function, api):
            assert _service_module(api.service) not in at_init, api.name
            assert _service_module(api.service) in answered, api.name
            assert api.request.__module__ in answered, api.name


@pytest.mark.parametrize("requests", [False, True], ids=["import", "first-requests"])
def test_the_membership_function_loads_neither_offsets_nor_admin_code(requests: bool) -> None:
    modules = imported("membership", requests=requests)
    for module in (
        "groupcoord.service.offsets",
        "groupcoord.service.topics",
        "groupcoord.service.acls",
        "groupcoord.service.group_admin",
        "groupcoord.models.offsets",
        "groupcoord.http.openapi",
    ):
        assert module not in modules, module


def test_the_sweeper_builds_no_http_resolver() -> None:
    assert "groupcoord.http.resolver" not in imported("sweeper")


def test_tracing_on_imports_the_xray_sdk() -> None:
    """The switch works both ways: with tracing on (POWERTOOLS_TRACE_DISABLED=false in
    Lambda, template.yaml's Tracing=Active) the handler is traced by Powertools' Tracer."""
    assert "aws_xray_sdk.core" in imported("membership", tracing=True)
