"""Packaging that matches who installs what (pyproject.toml's extras, layers/core/Makefile).

- `pip install groupcoord`, no extras: the client and the admin commands work with none of the
  server's dependencies. The wheel is built from a copy of the sources, installed with
  --no-deps into a fresh virtualenv (no pip, nothing else in it), and used there against a
  `groupcoord serve` of this virtualenv.
- The Lambda layer holds the server code only: the Makefile's `server-code` step (the offline
  half of the layer build) copies the entries of groupcoord/ that layers/core/layer-contents.txt
  lists (not the client, `serve` with its in-memory adapter, nor the command line), what it
  copies imports with the server's dependencies, and the import-linter contract on the layer's
  code (pyproject.toml) names the same list.

The layer's dependencies (pinned, for python3.12) are checked after a real `sam build` by
.ci/template-checks.sh. The import-linter contract "The client and the admin CLI need none of
the server's dependencies" (pyproject.toml) is the static side of the first test.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
import tomllib
from pathlib import Path

import pytest

from groupcoord.local.processes import running_serve

ROOT = Path(__file__).resolve().parents[2]
LAYER_SOURCE = ROOT / "layers" / "core"
# The layer's allow-list (layers/core/Makefile's IN_LAYER): the entries of groupcoord/ it ships.
IN_LAYER = {
    line.strip()
    for line in (LAYER_SOURCE / "layer-contents.txt").read_text().splitlines()
    if line.strip() and not line.startswith("#")
}
LAYER_CONTRACT = "The Lambda layer's code imports only what the layer ships"
# What the server needs and the client must not (pyproject.toml's server, local, sigv4 extras).
SERVER_ONLY = ["boto3", "botocore", "aws_lambda_powertools", "pydantic", "re2", "moto", "werkzeug"]
# Short consumer-protocol timers, so that the member below owns its partitions in a second.
SERVE_SETTINGS = {
    "group.consumer.heartbeat.interval.ms": "200",
    "group.consumer.min.heartbeat.interval.ms": "100",
    "group.consumer.assignment.interval.ms": "0",
}

_PROBE = """
import importlib.util, json, sys
present = [m for m in sys.argv[1:] if importlib.util.find_spec(m) is not None]
import groupcoord, groupcoord.admin_cli, groupcoord.cli, groupcoord.client
from groupcoord.client import GroupMember
from groupcoord.client.errors import GroupcoordError
from groupcoord.client.transport import Transport
try:
    Transport("https://example.execute-api.us-east-1.amazonaws.com")
    sigv4 = ""
except GroupcoordError as error:
    sigv4 = str(error)
third_party = sorted(
    {m.partition(".")[0] for m in sys.modules}
    - set(sys.stdlib_module_names) - {"__main__", "groupcoord"}
)
print(json.dumps({"present": present, "file": groupcoord.__file__, "sigv4": sigv4,
                  "third_party": third_party, "member": callable(GroupMember)}))
"""

_MEMBER = """
import sys, time
from groupcoord.client import GroupMember, TopicPartition
url, topic = sys.argv[1:]
member = GroupMember(url, "packaging", topics=[topic], client_id="packaging-test")
try:
    deadline = time.monotonic() + 30
    owned = set()
    while len(owned) < 3 and time.monotonic() < deadline:
        owned = member.poll(timeout_s=0.2)
    assert owned == {TopicPartition(topic, p) for p in range(3)}, owned
    first = TopicPartition(topic, 0)
    member.commit({first: 42})
    assert member.committed({first})[first] == 42
finally:
    member.close()
print("member ok")
"""


def _run(args: list[str | Path], env: dict[str, str] | None = None, timeout: float = 120):
    return subprocess.run(
        [str(a) for a in args], env=env, capture_output=True, text=True, timeout=timeout
    )


def _copy_sources(dest: Path) -> Path:
    """What the wheel is built from, so that the build writes nothing into the work tree."""
    dest.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(ROOT / name, dest / name)
    shutil.copytree(
        LAYER_SOURCE / "groupcoord",
        dest / "layers" / "core" / "groupcoord",
        ignore=shutil.ignore_patterns("__pycache__", "*.pyc"),
    )
    return dest


def test_the_client_and_the_admin_commands_install_alone(tmp_path: Path) -> None:
    started = time.monotonic()
    wheel = _build_wheel(tmp_path)
    venv = tmp_path / "venv"
    python, env = _virtualenv_with_only(wheel, venv, tmp_path)
    _assert_no_server_package_is_needed(python, venv, env)
    cli = python.parent / "groupcoord"
    _assert_commands_name_their_missing_extras(cli, env)
    # The admin commands and a member of the client-only install against a real coordinator
    # (served from this virtualenv, which has the `local` extra).
    with running_serve(settings=SERVE_SETTINGS) as url:
        created_topic = _run(
            [cli, "topics", "create", "packaging", "--partitions", "3", "--url", url], env=env
        )
        assert created_topic.returncode == 0, created_topic.stderr
        listed = _run([cli, "topics", "list", "--url", url, "--json"], env=env)
        assert listed.returncode == 0, listed.stderr
        assert "packaging" in listed.stdout
        member = _run([python, "-c", _MEMBER, url, "packaging"], env=env, timeout=60)
        assert member.returncode == 0, member.stderr
        assert "member ok" in member.stdout
    assert time.monotonic() - started < 120  # about 15 s on two busy cores


def _build_wheel(tmp_path: Path) -> Path:
    """The wheel, as `pip wheel --no-deps .` builds it."""
    source = _copy_sources(tmp_path / "src")
    built = _run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--quiet",
            "--no-deps",
            "-w",
            tmp_path / "dist",
            source,
        ],
        timeout=300,
    )
    assert built.returncode == 0, built.stderr
    (wheel,) = (tmp_path / "dist").glob("groupcoord-*.whl")
    return wheel


def _virtualenv_with_only(wheel: Path, venv: Path, home: Path) -> tuple[Path, dict[str, str]]:
    """A virtualenv of its own (no system site-packages, no pip) with the wheel and nothing
    else: its python, and the environment that runs it."""
    created = _run([sys.executable, "-m", "venv", "--without-pip", venv])
    assert created.returncode == 0, created.stderr
    bin_dir = venv / ("Scripts" if os.name == "nt" else "bin")
    python = bin_dir / ("python.exe" if os.name == "nt" else "python")
    installed = _run(
        [
            sys.executable,
            "-m",
            "pip",
            "--python",
            python,
            "install",
            "--quiet",
            "--no-deps",
            "--no-index",
            wheel,
        ]
    )
    assert installed.returncode == 0, installed.stderr
    env = {
        "PATH": os.pathsep.join([str(bin_dir), os.environ.get("PATH", "")]),
        "HOME": str(home),
        "PYTHONNOUSERSITE": "1",
    }
    return python, env


def _assert_no_server_package_is_needed(python: Path, venv: Path, env: dict[str, str]) -> None:
    probe = _run([python, "-c", _PROBE, *SERVER_ONLY], env=env)
    assert probe.returncode == 0, probe.stderr
    found = json.loads(probe.stdout)
    assert found["present"] == [], "the fresh virtualenv must hold none of the server's packages"
    assert Path(found["file"]).is_relative_to(venv), found["file"]
    assert found["third_party"] == []
    assert found["member"]
    # Signing needs the sigv4 extra: a clear error that names it, before any request.
    assert "groupcoord[sigv4]" in found["sigv4"]


def _assert_commands_name_their_missing_extras(cli: Path, env: dict[str, str]) -> None:
    helped = _run([cli, "--help"], env=env)
    assert helped.returncode == 0, helped.stderr
    assert "topics" in helped.stdout
    serve = _run([cli, "serve", "--port", "0"], env=env)
    assert serve.returncode == 2, (serve.stdout, serve.stderr)
    assert "groupcoord[local]" in serve.stderr
    assert "Traceback" not in serve.stderr
    # A KCL lease table is read with boto3 (the `kinesis` extra): one line naming it.
    kcl = _run(
        [cli, "kinesis", "import-kcl", "--lease-table", "app", "--topic", "t", "--group", "g"],
        env=env,
    )
    assert kcl.returncode == 1, (kcl.stdout, kcl.stderr)
    assert "groupcoord[kinesis]" in kcl.stderr and len(kcl.stderr.strip().splitlines()) == 1


@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
def test_the_layer_holds_the_server_code_only(tmp_path: Path) -> None:
    artifacts = tmp_path / "layer"
    made = _run(["make", "-s", "-C", LAYER_SOURCE, "server-code", f"ARTIFACTS_DIR={artifacts}"])
    assert made.returncode == 0, made.stderr
    built = artifacts / "python" / "groupcoord"
    source = LAYER_SOURCE / "groupcoord"
    assert {p.name for p in source.iterdir()} >= IN_LAYER
    assert {p.name for p in built.iterdir()} == IN_LAYER
    assert not list(built.rglob("__pycache__"))
    # The in-memory adapter (local/memory/) is test equipment: no shipped module holds or
    # names it (lint-imports forbids the layer's code to import it).
    assert [str(p) for p in built.rglob("*.py") if "MemoryDynamoClient" in p.read_text()] == []

    # Every module the layer ships imports without the modules it leaves out (the server's
    # dependencies come from this virtualenv, the groupcoord package from the copy only).
    walk = (
        "import importlib, json, pkgutil, groupcoord\n"
        "names = [m.name for m in pkgutil.walk_packages(groupcoord.__path__, 'groupcoord.')]\n"
        "for name in names:\n"
        "    importlib.import_module(name)\n"
        "print(json.dumps({'file': groupcoord.__file__, 'count': len(names)}))\n"
    )
    env = {
        **os.environ,
        "PYTHONPATH": str(artifacts / "python"),
        "AWS_DEFAULT_REGION": "us-east-1",
        "POWERTOOLS_TRACE_DISABLED": "1",
        "POWERTOOLS_METRICS_DISABLED": "1",
    }
    imported = _run([sys.executable, "-c", walk], env=env)
    assert imported.returncode == 0, imported.stderr
    probe = json.loads(imported.stdout.strip().splitlines()[-1])
    assert Path(probe["file"]).is_relative_to(built)
    assert probe["count"] > 50


def _module(entry: str) -> str:
    return "groupcoord." + entry.removesuffix(".py")


def test_the_layer_contract_names_the_layers_allow_list() -> None:
    # The contract's shipped modules are the allow-list; all else of groupcoord is forbidden.
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    contracts = pyproject["tool"]["importlinter"]["contracts"]
    (contract,) = [c for c in contracts if c["name"] == LAYER_CONTRACT]
    shipped = {_module(entry) for entry in IN_LAYER - {"__init__.py"}}
    source = LAYER_SOURCE / "groupcoord"
    left_out = {
        _module(p.name)
        for p in source.iterdir()
        if p.name not in IN_LAYER and (p.suffix == ".py" or (p / "__init__.py").exists())
    }
    assert set(contract["source_modules"]) == shipped
    assert left_out <= set(contract["forbidden_modules"])
    assert left_out >= {"groupcoord.client", "groupcoord.local", "groupcoord.cli"}
