"""Cold start: what each Lambda function's init costs (`import app`), what its first request adds,
and the size of the layer.

    python -m bench.coldstart [--repeat 5] [--check [MS]] [--pip] [--functions NAMES] [--no-write]
    python -m bench.coldstart --smoke   # --repeat 1 --functions membership, writes nothing

The layer is loaded as Lambda loads it: built by layers/core/Makefile (the server code, the
pinned wheels, for this host's architecture so that they load here) into a temporary folder,
put alone on the path of a CPython 3.12 (Lambda's python3.12; pyenv's newest 3.12, else
python3.12 on PATH), read-only as /opt is (PYTHONDONTWRITEBYTECODE: no bytecode is written).
Twice: as built (with the bytecode the Makefile compiles into it) and without that bytecode
(`server-code` and `dependencies` only, as the layer was before it was compiled), where every
cold start compiles every module it imports. Per function, from the function's folder with the
environment Lambda sets, each in a fresh interpreter (median of --repeat runs):

- *import wall*: the process wall of `python -c "import app"` (what Lambda's init runs), with
  tracing off (template.yaml's default), both layers, and with tracing on (`Tracing=Active`);
- *first requests' setup*: what an instance's first requests do once, timed inside the
  process after the import: the store and its DynamoDB client (runtime.current(), no network),
  boto3's type codec, and for each of the function's APIs its service module and the
  validators of its messages (an API's code is imported by its first request, and pydantic
  builds a model at its first use);
- where the import time goes: `python -X importtime`, the modules' self times summed per
  top-level package.

`--check` exits non-zero when a function's import wall (tracing off, the layer as built) is over
MS (default 150, issue #32's budget).
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
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import zipfile
from collections.abc import Iterable
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from packaging.requirements import Requirement

from bench.common import REPO, fmt, parse_args, table, write_section

LAYER = REPO / "layers" / "core"
FUNCTIONS = REPO / "functions"
COMMAND = "python -m bench.coldstart"
# The issue's budget for a function's import (#32; #17's was 250 ms): --check's default.
IMPORT_BUDGET_MS = 150.0
LAMBDA_PYTHON = "3.12"
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
from groupcoord.http.apis import APIS, serves
from groupcoord.store import dynamo
runtime.current()
dynamo.deserialize(dynamo.serialize({"k": 1}))
if sys.argv[1] == "sweeper":
    import groupcoord.service.sweep
for api in APIS:
    if serves(sys.argv[1], api):
        api.handler()
        api.request.model_rebuild()
        api.response.model_rebuild()
print(json.dumps({"setup_ms": (time.perf_counter() - started) * 1000}))
"""


def lambda_python() -> str:
    """A CPython 3.12 to load the layer with (its bytecode is 3.12's): pyenv's newest 3.12,
    else python3.12 on PATH, as .ci/template-checks.sh picks one for sam build."""
    found = sorted(
        Path.home().glob(".pyenv/versions/3.12.*/bin/python3.12"),
        key=lambda p: [int(x) for x in p.parts[-3].split(".") if x.isdigit()],
        reverse=True,
    )
    candidates = [str(p) for p in found] + [shutil.which("python3.12") or ""]
    for candidate in filter(None, candidates):
        done = subprocess.run([candidate, "-c", "import sys"], capture_output=True)
        if done.returncode == 0:
            return candidate
    sys.exit("bench.coldstart needs a python3.12 (Lambda's python3.12 runtime's bytecode)")


def build_layer(into: Path, python: str, bytecode: bool) -> Path:
    """The layer as layers/core/Makefile builds it, for this host's architecture (its wheels
    must load here; the bytecode does not depend on it); without `bytecode`, without the
    compiled .pyc. Its python/ folder, which Lambda puts on sys.path (/opt/python)."""
    arch = {"x86_64": "x86_64", "amd64": "x86_64", "aarch64": "arm64", "arm64": "arm64"}[
        platform.machine().lower()
    ]
    targets = ["server-code", "dependencies", *(["bytecode"] if bytecode else [])]
    command = ["make", "-s", "-C", str(LAYER), *targets, f"ARTIFACTS_DIR={into}"]
    command += [f"LAYER_ARCH={arch}", f"BYTECODE_PYTHON={python}", f"PYTHON={python}"]
    subprocess.run(command, check=True, capture_output=True)
    return into / "python"


def _env(layer: Path, tracing: bool) -> dict[str, str]:
    return {
        "PATH": os.environ.get("PATH", ""),
        "PYTHONPATH": str(layer),
        "PYTHONDONTWRITEBYTECODE": "1",
        **LAMBDA_ENV,
        # template.yaml: POWERTOOLS_TRACE_DISABLED follows the Tracing parameter.
        "POWERTOOLS_TRACE_DISABLED": "false" if tracing else "true",
    }


@dataclass(frozen=True)
class Runtime:
    """A Lambda-like interpreter: CPython 3.12 with the built layer alone on its path."""

    python: str
    layer: Path

    def run(self, function: Path, args: list[str], tracing: bool = False) -> tuple[float, str, str]:
        """(process wall ms, stdout, stderr) of the interpreter run in the function's folder
        (-s: no user site-packages, which Lambda has none of)."""
        start = time.perf_counter()
        done = subprocess.run(
            [self.python, "-s", *args],
            cwd=function,
            env=_env(self.layer, tracing),
            capture_output=True,
            text=True,
            check=True,
        )
        return (time.perf_counter() - start) * 1000, done.stdout, done.stderr

    def import_wall(self, function: Path, tracing: bool = False) -> float:
        return self.run(function, ["-c", "import app"], tracing)[0]

    def first_request_setup(self, function: Path) -> float:
        _, out, _ = self.run(function, ["-c", _FIRST_REQUEST, function.name])
        return float(json.loads(out.strip().splitlines()[-1])["setup_ms"])

    def import_profile(self, function: Path) -> dict[str, float]:
        """Self time ms per top-level package (`-X importtime`; its own overhead included)."""
        _, _, err = self.run(function, ["-X", "importtime", "-c", "import app"])
        top: dict[str, float] = {}
        for line in err.splitlines():
            if not line.startswith("import time:") or "self [us]" in line:
                continue
            self_us, _, name = line[len("import time:") :].split("|")
            package = name.strip().split(".")[0]
            top[package] = top.get(package, 0.0) + int(self_us) / 1000
        return top

    def startup_ms(self) -> float:
        start = time.perf_counter()
        subprocess.run([self.python, "-s", "-c", "pass"], check=True)
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


@dataclass
class Measured:
    """Per function: its table row; and the slowest function's self ms per package."""

    rows: list[tuple[str, ...]]
    heavy: dict[str, float]
    over: list[str]


def functions(names: str | None) -> list[Path]:
    """The functions' folders (functions/<name>/app.py), or only those named (comma-separated)."""
    found = sorted(p.parent for p in FUNCTIONS.glob("*/app.py"))
    return [f for f in found if names is None or f.name in names.split(",")]


def measure(
    built: Runtime, plain: Runtime, repeat: int, budget: float | None, names: str | None = None
) -> Measured:
    rows, heavy, over = [], {}, []  # heavy: package -> median self ms, the slowest function's
    for function in functions(names):
        # Interleaved, so that a burst of load on a shared machine hits every figure alike.
        walls, uncompiled, traced, setups, profiles = [], [], [], [], []
        for _ in range(repeat):
            walls.append(built.import_wall(function))
            uncompiled.append(plain.import_wall(function))
            traced.append(built.import_wall(function, tracing=True))
            setups.append(built.first_request_setup(function))
            profiles.append(built.import_profile(function))
        wall, traced_wall = statistics.median(walls), statistics.median(traced)
        rows.append(
            (
                function.name,
                f"**{fmt(wall)}**",
                fmt(statistics.median(uncompiled)),
                f"{fmt(traced_wall)} (+{fmt(traced_wall - wall)})",
                fmt(statistics.median(setups)),
                f"{fmt(min(walls))} / {fmt(max(walls))}",
            )
        )
        if budget is not None and wall > budget:
            over.append(f"{function.name}: {fmt(wall)} ms")
        for package in profiles[0]:
            ms = statistics.median(p.get(package, 0.0) for p in profiles)
            heavy[package] = max(heavy.get(package, 0.0), ms)
    return Measured(rows, heavy, over)


@dataclass(frozen=True)
class Run:
    """A run's import figures: per function, the bare interpreter's start, its version, and the
    bytecode's size in the layer (MB)."""

    found: Measured
    baseline_ms: float
    version: str
    bytecode_mb: float


def measure_layers(repeat: int, check: float | None, names: str | None) -> Run:
    """Both layers built (with their bytecode and without) and every function imported."""
    python = lambda_python()
    with tempfile.TemporaryDirectory() as tmp:
        built = Runtime(python, build_layer(Path(tmp) / "built", python, bytecode=True))
        plain = Runtime(python, build_layer(Path(tmp) / "plain", python, bytecode=False))
        version = subprocess.run(
            [python, "-c", "import sys; print(sys.version.split()[0])"],
            capture_output=True, text=True, check=True,
        ).stdout.strip()  # fmt: skip
        baseline = statistics.median(built.startup_ms() for _ in range(repeat))
        found = measure(built, plain, repeat, check, names)
        bytecode_mb = (_tree_bytes(built.layer) - _tree_bytes(plain.layer)) / 1024 / 1024
    return Run(found, baseline, version, bytecode_mb)


def import_tables(found: Measured) -> tuple[str, str]:
    """The import wall per function, and the heaviest packages."""
    import_table = table(
        (
            "function",
            "import wall ms, layer as built (with .pyc), tracing off: the default",
            "import wall ms, the layer without its .pyc",
            "import wall ms, as built, tracing on",
            "first requests' setup ms (every API once), as built",
            "as built: min / max ms",
        ),
        found.rows,
    )
    top = sorted(found.heavy.items(), key=lambda kv: -kv[1])[:12]
    top_table = table(
        ("package", "import self time ms (all its modules, median; -X importtime)"),
        [(name, fmt(ms)) for name, ms in top],
    )
    return import_table, top_table


def size_report(pip: bool, bytecode_mb: float) -> tuple[str, str, str]:
    """The layer's size by part, against Lambda's limits, and how it was measured."""
    sizes, unzipped, zipped, how = layer_from_pip() if pip else layer_from_venv()
    size_table = table(
        ("in the layer", "MB unzipped"),
        [
            *((name, mb(size)) for name, size in sorted(sizes, key=lambda kv: -kv[1])),
            ("**total**", f"**{mb(unzipped)}** (zipped {mb(zipped)})"),
        ],
    )
    with_bytecode = unzipped + bytecode_mb * 1024 * 1024
    limits = (
        f"The compiled bytecode adds {bytecode_mb:.1f} MB unzipped to the layer as built. "
        f"Lambda limits: {mb(UNZIPPED_LIMIT)} MB unzipped for a function and its layers "
        f"({100 * with_bytecode / UNZIPPED_LIMIT:.0f}% used with the bytecode), "
        f"{mb(ZIPPED_LIMIT)} MB for a zip uploaded directly "
        f"({100 * zipped / ZIPPED_LIMIT:.0f}% used without it)."
    )
    return size_table, limits, how


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument(
        "--check",
        type=float,
        nargs="?",
        const=IMPORT_BUDGET_MS,
        metavar="MS",
        help=f"fail if a function's import wall (tracing off, layer as built) is over MS "
        f"({IMPORT_BUDGET_MS:g})",
    )
    parser.add_argument(
        "--pip", action="store_true", help="measure the layer's size as sam build makes it (pip)"
    )
    parser.add_argument("--functions", help="only these functions (comma-separated names)")
    parser.add_argument("--no-write", action="store_true")
    args = parse_args(parser, argv, repeat=1, functions="membership")
    started = time.perf_counter()
    run = measure_layers(args.repeat, args.check, args.functions)
    import_table, top_table = import_tables(run.found)
    size_table, limits, how = size_report(args.pip, run.bytecode_mb)
    elapsed = time.perf_counter() - started
    for part in (import_table, top_table, size_table, limits, f"took {elapsed:.0f}s"):
        print(part, end="\n\n")
    if not args.no_write:
        intro = DOC_INTRO.format(
            repeat=args.repeat, baseline=fmt(run.baseline_ms), python=run.version
        )
        body = "\n\n".join(
            [
                intro,
                import_table,
                "Where the import time goes, tracing off, the layer as built (the slowest "
                "function's figure per package):",
                top_table,
                DOC_WHERE,
                f"Layer size, measured as: {how}.",
                size_table,
                limits,
                f"The run took {elapsed:.0f} s.",
            ]
        )
        command = COMMAND if argv is None else f"{COMMAND} {' '.join(argv)}"
        print(f"wrote {write_section('coldstart', 'Cold start', command, body, engine=False)}")
    if run.found.over:
        sys.exit(f"import wall over {args.check:g} ms: {', '.join(run.found.over)}")


def _tree_bytes(folder: Path) -> int:
    return sum(f.stat().st_size for f in folder.rglob("*") if f.is_file())


DOC_INTRO = """\
Per function, from `functions/<name>/`, with the layer as `sam build` builds it
(`layers/core/Makefile`, for this host's architecture so that its wheels load here) alone on
`PYTHONPATH`, read-only as Lambda's `/opt` is (no bytecode written), under CPython {python}
(Lambda runs 3.12), and the environment Lambda sets; median of {repeat} runs. *As built*: with
the bytecode the Makefile compiles into the layer (`compileall --invalidation-mode
unchecked-hash`, reproducible); *without its .pyc*: the same layer without it, as it was built
before issue #32, where every cold start compiles every module it imports. *Import wall* is the
process wall of `python -c "import app"` (Lambda's init phase runs that import), of which
{baseline} ms is a bare `python -c pass`; tracing off is template.yaml's default
(`Tracing=Disabled`). *First requests' setup* is what an instance's first requests do once on
top, timed in the process: the store and its DynamoDB client, boto3's type codec, and each
API's service module and message validators (imported and built by the API's first request).
On Lambda the init phase adds the runtime's own start."""


DOC_WHERE = """\
What an init loads (`tests/unit/test_cold_imports.py` checks it): Python, Powertools' logger and
metrics, and the plumbing every API shares (routing and the error model in `http/resolver.py`,
the errors it answers). Left for later: the request's caller and its ACL types, and an API's
service module and messages come with its first request (`http/apis.py` names them by module),
so no function ever loads another function's code (the router, which serves every API, loads
each with its first request); pydantic builds a model's validator at its first use
(`defer_build`); the AWS SDK (botocore, boto3 with s3transfer) and the DynamoDB client come
with the store, built by the first request (`runtime.py`); the sweeper loads the sweep with its
first invocation. The X-Ray SDK is imported only with tracing on (`Tracing=Active`): it is the
*tracing on* column's difference. Powertools' event handler is not used (the resolver routes
its one path itself, answering as it did).

Before issue #17 (2026-11-29, the same machine): every function imported every API's code,
the AWS SDK and the X-Ray SDK at init, 770 to 850 ms of process wall (X-Ray SDK 194 ms,
groupcoord 177, Powertools 38, botocore 38, pydantic 34, urllib3 27). Before issue #32 the
layer carried no bytecode and the resolver loaded the caller's ACL types and the store's
conversion (with botocore's exceptions) at init: 150 to 249 ms (the issue's figures; the
*without its .pyc* column is today's code without the bytecode). `python -m bench.coldstart
--check` fails when a function's import wall, the layer as built, is over 150 ms; it is not
run in CI: on 2 busy cores a run's figures move by tens of ms (the min / max column), so
compare a run's figures with its bare `python -c pass`."""


if __name__ == "__main__":
    main()
