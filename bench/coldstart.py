"""Cold start: import time of each Lambda function's app module, and the size of the layer.

    python -m bench.coldstart [--repeat 5] [--pip] [--no-write]

Import time: `python -X importtime -c "import app"` in a subprocess per function, from the
function's folder with only the layer (layers/core) added to the path, as Lambda loads it; the
per-module self times are summed (median of --repeat runs). Layer size: by default the installed
distributions that layers/core/requirements.txt pulls in, measured in this venv (files listed
in their RECORD, so without .pyc), plus the server code the layer ships (the Makefile's
`server-code` step: groupcoord without the client, `serve` and the command line); with --pip,
the layer as `sam build` makes it (`make build-CoreLayer`: pip for python3.12 and the layer's
architecture) into a temporary folder, measured whole.
"""

from __future__ import annotations

import argparse
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
# Lambda's limits: function + layers unzipped, and a zip uploaded directly.
UNZIPPED_LIMIT = 250 * 1024 * 1024
ZIPPED_LIMIT = 50 * 1024 * 1024
# What Lambda sets that the handlers read at import (template.yaml: Tracing Active).
LAMBDA_ENV = {
    "AWS_REGION": "us-east-1",
    "AWS_DEFAULT_REGION": "us-east-1",
    "AWS_LAMBDA_FUNCTION_NAME": "groupcoord-bench",
    "AWS_EXECUTION_ENV": "AWS_Lambda_python3.12",
    "POWERTOOLS_SERVICE_NAME": "groupcoord",
    "POWERTOOLS_METRICS_NAMESPACE": "groupcoord",
}


def import_profile(function: Path) -> tuple[float, float, dict[str, float]]:
    """(summed self time ms, process wall ms, self time ms per top-level package)."""
    env = {
        "PATH": os.environ.get("PATH", ""),
        "PYTHONPATH": str(LAYER),
        "PYTHONDONTWRITEBYTECODE": "1",
        **LAMBDA_ENV,
    }
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", "import app"],
        cwd=function,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    wall = (time.perf_counter() - start) * 1000
    total, top = 0.0, {}
    for line in done.stderr.splitlines():
        if not line.startswith("import time:") or "self [us]" in line:
            continue
        self_us, _, name = line[len("import time:") :].split("|")
        total += int(self_us) / 1000
        package = name.strip().split(".")[0]
        top[package] = top.get(package, 0.0) + int(self_us) / 1000
    return total, wall, top


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
    lines = (LAYER / "requirements.txt").read_text().splitlines()
    requirements = [Requirement(s) for s in (x.split("#")[0].strip() for x in lines) if s]
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
        "--pip", action="store_true", help="measure the layer built as sam build does (pip)"
    )
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    baseline = statistics.median(python_startup_ms() for _ in range(args.repeat))
    rows, heavy = [], {}  # heavy: package -> median self ms over the functions' runs
    for function in sorted(p.parent for p in FUNCTIONS.glob("*/app.py")):
        runs = [import_profile(function) for _ in range(args.repeat)]
        imports = statistics.median(r[0] for r in runs)
        wall = statistics.median(r[1] for r in runs)
        rows.append((function.name, fmt(imports), fmt(wall), fmt(wall - baseline)))
        for package in runs[0][2]:
            ms = statistics.median(r[2].get(package, 0.0) for r in runs)
            heavy[package] = max(heavy.get(package, 0.0), ms)
    import_table = table(
        ("function", "imports, summed self time ms", "process wall ms", "wall - bare Python ms"),
        rows,
    )
    top = sorted(heavy.items(), key=lambda kv: -kv[1])[:10]
    top_table = table(
        ("package", "import self time ms (all its modules, median)"),
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
                "Where the import time goes (the slowest function's figure per package):",
                top_table,
                f"Layer size, measured as: {how}.",
                size_table,
                limits,
                f"The run took {elapsed:.0f} s.",
            ]
        )
        command = COMMAND if argv is None else f"{COMMAND} {' '.join(argv)}"
        print(f"wrote {write_section('coldstart', 'Cold start', command, body)}")


DOC_INTRO = """\
Per function, `python -X importtime -c "import app"` from `functions/<name>/` with only the layer
(`layers/core`) on `PYTHONPATH`, no bytecode cache writes, and the environment Lambda sets
(tracing on, as in template.yaml); median of {repeat} runs, Python {python} (Lambda runs 3.12).
*Summed self time* adds every module's own import time; *wall* is the whole process, of which
{baseline} ms is a bare `python -c pass`. On Lambda the init phase adds the runtime's own start."""


if __name__ == "__main__":
    main()
