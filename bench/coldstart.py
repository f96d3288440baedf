"""Cold start: what each Lambda function's init costs (`import app`), what its first request adds,
and the size of the layer.

    python -m bench.coldstart [--repeat 5] [--check [MS]] [--pip] [--no-write]

Per function, from the function's folder with only the layer (layers/core) added to the path
and the environment Lambda sets, each in a fresh interpreter (median of --repeat runs):

- *import wall*: the process wall of `python -c "import app"` (what Lambda's init runs), with
  tracing off (template.yaml's default) and with tracing on (`Tracing=Active`);
- *first requests' setup*: what an instance's first requests do once, timed inside the
  process after the import: the store and its DynamoDB client (runtime.current(), no network),
  boto3's type codec, and for each of the function's APIs its service module and the
  validators of its messages (an API's code is imported by its first request, and pydantic
  builds a model at its first use);
- where the import time goes: `python -X importtime`, the modules' self times summed per
  top-level package.

`--check` exits non-zero when a function's import wall (tracing off) is over MS (default 250).
Layer size: by default the installed distributions that layers/core/requirements.txt pulls in,
measured in this venv (files listed in their RECORD, so without .pyc), plus the server code the
layer ships (the Makefile's `server-code` step: groupcoord without the client, `serve` and the
command line); with --pip, the layer as `sam build` makes it (`make build-CoreLayer`: pip for
python3.12 and the layer's architecture) into a temporary folder, measured whole.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import zipfile
from collections.abc import Iterable
from importlib import metadata
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from packaging.requirements import Requirement

from bench.common import REPO, fmt, table, write_section

LAYER = REPO / "layers" / "core"
FUNCTIONS = REPO / "functions"
COMMAND = "python -m bench.coldstart"
# The budget for a function's import (#17): --check's default.
IMPORT_BUDGET_MS = 250.0
# Lambda's limits: function + layers unzipped, and a zip uploaded directly.
UNZIPPED_LIMIT = 250 * 1024 * 1024
ZIPPED_LIMIT = 50 * 1024 * 1024
# What Lambda sets that the handlers read (template.yaml's environment at its defaults, less
# the settings). LAMBDA_TASK_ROOT is how Powertools and observability.py know they run in
# Lambda; the credentials only let the first request's setup build a client (no call is made).
LAMBDA_ENV = {
    "AWS_REGION": "us-east-1",
    "AWS_DEFAULT_REGION": "us-east-1",
    "AWS_ACCESS_KEY_ID": "bench",
    "AWS_SECRET_ACCESS_KEY": "bench",
    "AWS_EC2_METADATA_DISABLED": "true",
    "AWS_LAMBDA_FUNCTION_NAME": "groupcoord-bench",
    "AWS_EXECUTION_ENV": "AWS_Lambda_python3.12",
    "LAMBDA_TASK_ROOT": "/var/task",
    "GROUPCOORD_TABLE_NAME": "groupcoord-bench",
    "POWERTOOLS_SERVICE_NAME": "groupcoord",
    "POWERTOOLS_METRICS_NAMESPACE": "groupcoord",
    "POWERTOOLS_TRACER_CAPTURE_RESPONSE": "false",
    "POWERTOOLS_TRACER_CAPTURE_ERROR": "false",
}

# Run after `import app`: the one-off work of an instance's first requests (one per API), timed.
_FIRST_REQUEST = """
import json, sys, time
import app
started = time.perf_counter()
from groupcoord import runtime
from groupcoord.http.apis import APIS
from groupcoord.store import dynamo
runtime.current()
dynamo.deserialize(dynamo.serialize({"k": 1}))
if sys.argv[1] == "sweeper":
    import groupcoord.service.sweep
for api in APIS:
    if api.function == sys.argv[1]:
        api.handler()
        api.request.model_rebuild()
        api.response.model_rebuild()
print(json.dumps({"setup_ms": (time.perf_counter() - started) * 1000}))
"""


def _env(tracing: bool) -> dict[str, str]:
    return {
        "PATH": os.environ.get("PATH", ""),
        "PYTHONPATH": str(LAYER),
        "PYTHONDONTWRITEBYTECODE": "1",
        **LAMBDA_ENV,
        # template.yaml: POWERTOOLS_TRACE_DISABLED follows the Tracing parameter.
        "POWERTOOLS_TRACE_DISABLED": "false" if tracing else "true",
    }


def _run(function: Path, args: list[str], tracing: bool = False) -> tuple[float, str, str]:
    """(process wall ms, stdout, stderr) of the interpreter run in the function's folder."""
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, *args],
        cwd=function,
        env=_env(tracing),
        capture_output=True,
        text=True,
        check=True,
    )
    return (time.perf_counter() - start) * 1000, done.stdout, done.stderr


def import_wall(function: Path, tracing: bool = False) -> float:
    return _run(function, ["-c", "import app"], tracing)[0]


def first_request_setup(function: Path) -> float:
    _, out, _ = _run(function, ["-c", _FIRST_REQUEST, function.name])
    return float(json.loads(out.strip().splitlines()[-1])["setup_ms"])


def import_profile(function: Path) -> dict[str, float]:
    """Self time ms per top-level package (`-X importtime`; its own overhead included)."""
    _, _, err = _run(function, ["-X", "importtime", "-c", "import app"])
    top: dict[str, float] = {}
    for line in err.splitlines():
        if not line.startswith("import time:") or "self [us]" in line:
            continue
        self_us, _, name = line[len("import time:") :].split("|")
        package = name.strip().split(".")[0]
        top[package] = top.get(package, 0.0) + int(self_us) / 1000
    return top


def python_startup_ms() -> float:
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", "pass"], check=True)
    return (time.perf_counter() - start) * 1000


# --- layer size ---


def _closure(requirements: Iterable[Requirement]) -> dict[str, metadata.Distribution]:
    found: dict[str, metadata.Distribution] = {}
    pending = [(r, set(r.extras)) for r in requirements]
    while pending:
        requirement, extras = pending.pop()
        name = requirement.name.lower().replace("_", "-")
        try:
            dist = metadata.distribution(requirement.name)
        except metadata.PackageNotFoundError:
            continue
        known = name in found
        found[name] = dist
        for raw in dist.requires or []:
            child = Requirement(raw)
            markers_ok = child.marker is None or any(
                child.marker.evaluate({"extra": e}) for e in (extras or {""})
            )
            if markers_ok and (not known or child.extras):
                pending.append((child, set(child.extras)))
    return found


def _zip_size(files: list[Path], root_of: dict[Path, Path]) -> int:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "layer.zip"
        with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
            for file in files:
                archive.write(file, "python/" + str(file.relative_to(root_of[file])))
        return path.stat().st_size


def _make_layer(target: str, artifacts: Path) -> Path:
    """Run a target of layers/core/Makefile (as `sam build` does); the layer's python/ folder."""
    command = ["make", "-s", "-C", str(LAYER), target, f"ARTIFACTS_DIR={artifacts}"]
    subprocess.run(command, check=True)
    return artifacts / "python"


def layer_from_venv() -> tuple[list[tuple[str, int]], int, int, str]:
    """(per-distribution bytes, unzipped bytes, zipped bytes, how measured)."""
    # One requirement per logical line (pins may continue onto `--hash=` lines).
    text = (LAYER / "requirements.txt").read_text().replace("\\\n", " ")
    pins = (line.split("#")[0].split(" --")[0].strip() for line in text.splitlines())
    requirements = [Requirement(pin) for pin in pins if pin and not pin.startswith("--")]
    files: list[Path] = []
    root_of: dict[Path, Path] = {}
    sizes: list[tuple[str, int]] = []
    for name, dist in sorted(_closure(requirements).items()):
        root = Path(str(dist.locate_file("")))
        own = [
            Path(str(dist.locate_file(f)))
            for f in dist.files or []
            if not str(f).endswith(".pyc") and not str(f).startswith("..")
        ]
        own = [f for f in own if f.is_file()]
        files += own
        root_of.update({f: root for f in own})
        sizes.append((f"{name} {dist.version}", sum(f.stat().st_size for f in own)))
    with tempfile.TemporaryDirectory() as tmp:
        server = _make_layer("server-code", Path(tmp))
        package = [f for f in (server / "groupcoord").rglob("*") if f.is_file()]
        files += package
        root_of.update({f: server for f in package})
        sizes.append(("groupcoord (the server code)", sum(f.stat().st_size for f in package)))
        unzipped = sum(size for _, size in sizes)
        how = (
            "installed distributions in this venv (RECORD files, no .pyc) + the server code "
            "(`make -C layers/core server-code`)"
        )
        return sizes, unzipped, _zip_size(files, root_of), how


def layer_from_pip() -> tuple[list[tuple[str, int]], int, int, str]:
    with tempfile.TemporaryDirectory() as tmp:
        target = _make_layer("build-CoreLayer", Path(tmp))
        files = [f for f in target.rglob("*") if f.is_file()]
        root_of = dict.fromkeys(files, target)
        groups: dict[str, int] = {}
        for f in files:
            top = f.relative_to(root_of[f]).parts[0]
            if top.endswith((".dist-info", "-stubs")):
                top = "(package metadata and stubs)"
            groups[top] = groups.get(top, 0) + f.stat().st_size
        sizes = sorted(groups.items(), key=lambda kv: -kv[1])
        unzipped = sum(groups.values())
        how = "the layer as `sam build` makes it (`make -C layers/core build-CoreLayer`)"
        return sizes, unzipped, _zip_size(files, root_of), how


def mb(size: int) -> str:
    return f"{size / 1024 / 1024:.1f}"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument(
        "--check",
        type=float,
        nargs="?",
        const=IMPORT_BUDGET_MS,
        metavar="MS",
        help=f"fail if a function's import wall (tracing off) is over MS ({IMPORT_BUDGET_MS:g})",
    )
    parser.add_argument(
        "--pip", action="store_true", help="measure the layer built as sam build does (pip)"
    )
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    baseline = statistics.median(python_startup_ms() for _ in range(args.repeat))
    rows, heavy, over = [], {}, []  # heavy: package -> median self ms, the slowest function's
    for function in sorted(p.parent for p in FUNCTIONS.glob("*/app.py")):
        # Interleaved, so that a burst of load on a shared machine hits every figure alike.
        walls, traced, setups, profiles = [], [], [], []
        for _ in range(args.repeat):
            walls.append(import_wall(function))
            traced.append(import_wall(function, tracing=True))
            setups.append(first_request_setup(function))
            profiles.append(import_profile(function))
        wall = statistics.median(walls)
        traced_wall = statistics.median(traced)
        setup = statistics.median(setups)
        rows.append(
            (
                function.name,
                fmt(wall),
                fmt(wall - baseline),
                f"{fmt(traced_wall)} (+{fmt(traced_wall - wall)})",
                fmt(setup),
            )
        )
        if args.check is not None and wall > args.check:
            over.append(f"{function.name}: {fmt(wall)} ms")
        for package in profiles[0]:
            ms = statistics.median(p.get(package, 0.0) for p in profiles)
            heavy[package] = max(heavy.get(package, 0.0), ms)
    import_table = table(
        (
            "function",
            "import wall ms (tracing off: the default)",
            "wall - bare Python ms",
            "import wall ms, tracing on",
            "first requests' setup ms (every API once)",
        ),
        rows,
    )
    top = sorted(heavy.items(), key=lambda kv: -kv[1])[:12]
    top_table = table(
        ("package", "import self time ms (all its modules, median; -X importtime)"),
        [(name, fmt(ms)) for name, ms in top],
    )
    sizes, unzipped, zipped, how = layer_from_pip() if args.pip else layer_from_venv()
    size_table = table(
        ("in the layer", "MB unzipped"),
        [
            *((name, mb(size)) for name, size in sorted(sizes, key=lambda kv: -kv[1])),
            ("**total**", f"**{mb(unzipped)}** (zipped {mb(zipped)})"),
        ],
    )
    elapsed = time.perf_counter() - started
    limits = (
        f"Lambda limits: {mb(UNZIPPED_LIMIT)} MB unzipped for a function and its layers "
        f"({100 * unzipped / UNZIPPED_LIMIT:.0f}% used), {mb(ZIPPED_LIMIT)} MB for a zip "
        f"uploaded directly ({100 * zipped / ZIPPED_LIMIT:.0f}% used)."
    )
    for part in (import_table, top_table, size_table, limits, f"took {elapsed:.0f}s"):
        print(part, end="\n\n")
    if not args.no_write:
        body = "\n\n".join(
            [
                DOC_INTRO.format(
                    repeat=args.repeat, baseline=fmt(baseline), python=sys.version.split()[0]
                ),
                import_table,
                "Where the import time goes, tracing off (the slowest function's figure per "
                "package):",
                top_table,
                DOC_WHERE,
                f"Layer size, measured as: {how}.",
                size_table,
                limits,
                f"The run took {elapsed:.0f} s.",
            ]
        )
        command = COMMAND if argv is None else f"{COMMAND} {' '.join(argv)}"
        print(f"wrote {write_section('coldstart', 'Cold start', command, body)}")
    if over:
        sys.exit(f"import wall over {args.check:g} ms: {', '.join(over)}")


DOC_INTRO = """\
Per function, from `functions/<name>/` with only the layer (`layers/core`) on `PYTHONPATH`, no
bytecode cache writes, and the environment Lambda sets; median of {repeat} runs, Python {python}
(Lambda runs 3.12). *Import wall* is the process wall of `python -c "import app"` (Lambda's init
phase runs that import), of which {baseline} ms is a bare `python -c pass`; tracing off is
template.yaml's default (`Tracing=Disabled`). *First requests' setup* is what an instance's
first requests do once on top, timed in the process: the store and its DynamoDB client, boto3's
type codec, and each API's service module and message validators (imported and built by the
API's first request). On Lambda the init phase adds the runtime's own start."""


DOC_WHERE = """\
What an init loads (`tests/unit/test_cold_imports.py` checks it): Python, Powertools' logger and
metrics, pydantic, and the plumbing every API shares (routing and the error model in
`http/resolver.py`, the request's caller and its ACL types, the models' base). Left for later:
an API's service module and messages come with its first request (`http/apis.py` names them by
module), so no function ever loads another function's code; pydantic builds a model's
validator at its first use (`defer_build`); the AWS SDK (boto3, with s3transfer) and the
DynamoDB client come with the store, built by the first request (`runtime.py`); the sweeper
loads the sweep with its first invocation. The X-Ray SDK is imported only with tracing on
(`Tracing=Active`): it is the *tracing on* column's difference. Powertools' event handler is
not used (the resolver routes its one path itself, answering as it did).

Before issue #17 (2026-11-29, the same machine): every function imported every API's code,
the AWS SDK and the X-Ray SDK at init, 770 to 850 ms of process wall (X-Ray SDK 194 ms,
groupcoord 177, Powertools 38, botocore 38, pydantic 34, urllib3 27). `python -m
bench.coldstart --check` fails when a function's import wall is over 250 ms. Times on this
shared 2-core machine move with its load: compare a run's figures with its bare `python -c
pass`."""


if __name__ == "__main__":
    main()
