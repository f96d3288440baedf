#!/usr/bin/env bash
# Checks template.yaml without an AWS account, for both front doors (FrontDoor HttpApi, the
# default, and FunctionUrl: the same template with that parameter's default changed, written to
# a temporary file, since neither cfn-lint nor sam validate takes parameter values):
#   1. cfn-lint template.yaml                    (from $VENV/bin, else PATH)
#   2. sam validate --lint                       (SAM CLI in its own virtualenv)
#   3. sam build into a temporary directory; checks the built layer (layers/core/Makefile): the
#      server code without the client, `serve` and the command line, the bytecode of every
#      module (unchecked-hash, CPython 3.12; compiled again, the same bytes), exactly the distributions
#      layers/core/requirements.txt pins (each pin with --hash lines; the build installed them
#      with --require-hashes), wheels for the template's BuildArchitecture (arm64); then
#      imports every built handler under python3.12, the way Lambda would (no site-packages,
#      layer + code only). A host that cannot load the BuildArchitecture's compiled wheels (an
#      x86_64 machine, arm64 layer) imports them with a second build of the layer's dependencies
#      for its own architecture (`make -C layers/core dependencies LAYER_ARCH=<host>`, the same
#      locked requirements, checked the same way) next to the sam-built server code and
#      function code: the import proves the code and the pins, not the arm64 binaries.
#
# Usage: .ci/template-checks.sh            (no arguments; any working directory)
# Environment:
#   VENV       project virtualenv holding cfn-lint (optional; else cfn-lint on PATH)
#   SAM_VENV   virtualenv for the SAM CLI (default .ci/.samvenv); created with
#              `python3 -m venv` + `pip install aws-sam-cli` when it has no bin/sam yet
#   SKIP_SAM=1 run cfn-lint only
# Steps 2-3 need network access to PyPI the first time (SAM CLI, layer dependencies); they
# never need AWS credentials. Exits non-zero on the first failure.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

export SAM_CLI_TELEMETRY=0
export AWS_DEFAULT_REGION="${AWS_DEFAULT_REGION:-us-east-1}"
export AWS_REGION="${AWS_REGION:-$AWS_DEFAULT_REGION}"

started=$SECONDS
step() { printf '\n== %s (%ss)\n' "$*" "$((SECONDS - started))"; }
die() { printf 'template-checks: %s\n' "$*" >&2; exit 1; }

# --- 1. cfn-lint -------------------------------------------------------------------------------
# The FunctionUrl variant: only FrontDoor's Default differs.
variant_dir="$(mktemp -d)"
trap 'rm -rf "$variant_dir"' EXIT
function_url_template="$variant_dir/template-function-url.yaml"
awk '/^  FrontDoor:/ {found = 1}
     found && /^    Default: HttpApi$/ {sub(/HttpApi/, "FunctionUrl"); found = 0}
     {print}' template.yaml >"$function_url_template"
grep -A 3 '^  FrontDoor:' "$function_url_template" | grep -q 'Default: FunctionUrl' \
    || die "could not write the FunctionUrl variant of template.yaml"

step "cfn-lint template.yaml (FrontDoor HttpApi and FunctionUrl)"
if [[ -n "${VENV:-}" && -x "$VENV/bin/cfn-lint" ]]; then
    cfn_lint="$VENV/bin/cfn-lint"
elif command -v cfn-lint >/dev/null 2>&1; then
    cfn_lint="$(command -v cfn-lint)"
else
    die "cfn-lint not found: set VENV to the project virtualenv or put cfn-lint on PATH"
fi
"$cfn_lint" --version
"$cfn_lint" template.yaml
"$cfn_lint" "$function_url_template"
echo "cfn-lint: no findings (both front doors)"

if [[ "${SKIP_SAM:-0}" == "1" ]]; then
    echo "SKIP_SAM=1: skipping sam validate and sam build"
    exit 0
fi

# --- 2. SAM CLI --------------------------------------------------------------------------------
sam_venv="${SAM_VENV:-.ci/.samvenv}"
if [[ ! -x "$sam_venv/bin/sam" ]]; then
    step "installing AWS SAM CLI into $sam_venv"
    command -v python3 >/dev/null 2>&1 || die "python3 not found: cannot install the SAM CLI"
    python3 -m venv "$sam_venv" || die "python3 -m venv failed: cannot install the SAM CLI"
    "$sam_venv/bin/python" -m pip install --quiet --upgrade pip
    # No bytecode compiled ahead (its dependencies are large: most of the 95 s this took, CPU
    # taken from the tests beside it): sam's few runs compile what they import.
    "$sam_venv/bin/python" -m pip install --quiet --no-compile aws-sam-cli
fi
sam="$sam_venv/bin/sam"
"$sam" --version

step "sam validate --lint (FrontDoor HttpApi and FunctionUrl)"
"$sam" validate --lint --template-file template.yaml
"$sam" validate --lint --template-file "$function_url_template"

# --- 3. sam build ------------------------------------------------------------------------------
# sam build runs the python3.12 runtime's builder with a local python3.12: take pyenv's newest
# 3.12, else python3.12 on PATH (a pyenv shim that cannot run does not count).
python312=""
shopt -s nullglob
pyenv_312=("$HOME"/.pyenv/versions/3.12.*/bin/python3.12)
shopt -u nullglob
if ((${#pyenv_312[@]})); then
    mapfile -t pyenv_312 < <(printf '%s\n' "${pyenv_312[@]}" | sort -V -r)
fi
for candidate in ${pyenv_312[@]+"${pyenv_312[@]}"}; do
    if "$candidate" -c 'import sys' >/dev/null 2>&1; then
        python312="$candidate"
        break
    fi
done
if [[ -z "$python312" ]] && command -v python3.12 >/dev/null 2>&1 \
    && python3.12 -c 'import sys' >/dev/null 2>&1; then
    python312="$(command -v python3.12)"
fi
if [[ -z "$python312" ]]; then
    echo "skipping sam build: no working python3.12 (looked in ~/.pyenv/versions/3.12.*/bin and PATH)"
    printf '\ntemplate-checks: OK without sam build (%ss)\n' "$((SECONDS - started))"
    exit 0
fi
echo "python3.12 for sam build: $("$python312" -c 'import sys; print(sys.version.split()[0])')"

# One build serves both front doors: sam builds every function, whatever its condition.
build_dir="$(mktemp -d)"
trap 'rm -rf "$build_dir" "$variant_dir"' EXIT

step "sam build --build-dir $build_dir"
PATH="$(dirname "$python312"):$PATH" "$sam" build \
    --template-file template.yaml --build-dir "$build_dir"

# The built layer must hold the server package and its pinned dependencies under python/, and
# every handler must import from its built code directory with only that layer (as in Lambda).
step "checking the built layer's contents"
built_template="$build_dir/template.yaml"
[[ -f "$built_template" ]] || die "sam build wrote no $built_template"
layer_dir="$(find "$build_dir" -mindepth 1 -maxdepth 1 -type d -name 'CoreLayer*' | head -n 1)"
[[ -n "$layer_dir" && -f "$layer_dir/python/groupcoord/__init__.py" ]] \
    || die "built layer has no python/groupcoord (looked for $build_dir/CoreLayer*/python)"
# The server code only: the entries of groupcoord/ that layers/core/layer-contents.txt lists (no
# Lambda handler reaches the client library, `serve` (moto, werkzeug) or the command line), and
# the package's own bytecode cache.
expected_entries="$( (grep -v '^#' layers/core/layer-contents.txt; echo __pycache__) | sort)"
built_entries="$(ls -A "$layer_dir/python/groupcoord" | sort)"
[[ "$built_entries" == "$expected_entries" ]] \
    || die "the built layer's groupcoord/ is not what layers/core/layer-contents.txt lists:
$(diff <(echo "$expected_entries") <(echo "$built_entries"))"
# Bytecode (layers/core/Makefile, target bytecode): every module of the layer compiled for
# CPython 3.12 as unchecked-hash .pyc (Lambda's /opt is read-only: without them each cold start
# compiles what it imports), and reproducible: compiling a copy of the layer's sources again
# gives the same bytes.
"$python312" -S - "$layer_dir/python" <<'PY' || die "the built layer's bytecode is missing or stale (see above)"
import importlib.util
import sys
from pathlib import Path

layer = Path(sys.argv[1])
missing, checked = [], 0
for source in layer.rglob("*.py"):
    cached = Path(importlib.util.cache_from_source(str(source)))
    if not cached.name.endswith(".cpython-312.pyc") or not cached.is_file():
        missing.append(str(source.relative_to(layer)))
        continue
    header = cached.read_bytes()[:16]
    flags = int.from_bytes(header[4:8], "little")
    # 0b01: hash-based, source not checked (unchecked-hash); the magic: this interpreter's.
    if header[:4] != importlib.util.MAGIC_NUMBER or flags != 0b01:
        missing.append(f"{cached.relative_to(layer)} (not an unchecked-hash 3.12 .pyc)")
    checked += 1
for problem in missing[:10]:
    print(f"layer bytecode: {problem}", file=sys.stderr)
if missing:
    sys.exit(f"layer bytecode: {len(missing)} module(s) without their .pyc")
print(f"layer bytecode: {checked} modules, each with its unchecked-hash cpython-312 .pyc")
PY
rebuilt="$build_dir/bytecode-again"
mkdir -p "$rebuilt"
cp -R "$layer_dir/python" "$rebuilt/python"
find "$rebuilt/python" -name __pycache__ -prune -exec rm -rf {} +
make -s -C layers/core bytecode ARTIFACTS_DIR="$rebuilt" BYTECODE_PYTHON="$python312" \
    || die "compiling the layer's bytecode again failed"
diff -r -q "$layer_dir/python" "$rebuilt/python" >/dev/null \
    || die "compiling the layer's sources again gave other bytecode: not reproducible"
echo "layer bytecode: compiled again from a copy of the sources, the same bytes"
rm -rf "$rebuilt"
# Exactly the pinned distributions (each pin carrying its hashes), and wheels for <arch>.
check_layer() { # <layer python dir> <arch>
"$python312" -S - "$1" layers/core/requirements.txt "$2" <<'PY' \
    || die "the layer's distributions in $1 are not the pinned ones (see above)"
import re
import sys
from importlib.metadata import distributions
from pathlib import Path

layer, requirements, arch = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3]
machine = {"x86_64": "x86_64", "arm64": "aarch64"}[arch]


def canonical(name):
    return re.sub(r"[-_.]+", "-", name).lower()


pinned, hashes = {}, 0
# Backslash continuations joined, as pip reads it: `name==version \` + `--hash=sha256:...` lines.
for line in re.sub(r"\\\n", " ", requirements.read_text()).splitlines():
    words = line.split("#", 1)[0].split()
    if not words:
        continue
    match = re.fullmatch(r"([A-Za-z0-9._-]+)(\[[^\]]*\])?==(\S+)", words[0])
    if match is None:
        sys.exit(f"requirements.txt: not an exact pin: {line!r}")
    if not words[1:] or not all(re.fullmatch(r"--hash=sha256:[0-9a-f]{64}", w) for w in words[1:]):
        sys.exit(f"requirements.txt: {words[0]} has no sha256 hashes (make -C layers/core lock)")
    pinned[canonical(match[1])] = match[3]
    hashes += len(words) - 1
built = {canonical(d.metadata["Name"]): d for d in distributions(path=[str(layer)])}
problems = []
for name in sorted(built.keys() - pinned.keys()):
    problems.append(f"{name} {built[name].version} is in the layer but not pinned")
for name in sorted(pinned.keys() - built.keys()):
    problems.append(f"{name} is pinned but not in the layer")
for name in sorted(built.keys() & pinned.keys()):
    if built[name].version != pinned[name]:
        problems.append(f"{name}: the layer has {built[name].version}, pinned {pinned[name]}")
    for tag in (built[name].read_text("WHEEL") or "").splitlines():
        if tag.startswith("Tag:"):
            platform = tag.split("-")[-1].strip()
            if platform != "any" and not platform.endswith(machine):
                problems.append(f"{name}: a wheel for {platform}, not {arch}")
for problem in problems:
    print(f"layer: {problem}", file=sys.stderr)
if problems:
    sys.exit(1)
print(
    f"layer: {len(built)} distributions, each pinned in requirements.txt "
    f"({hashes} wheel hashes); wheels for {arch}"
)
PY
}
layer_arch="$(awk '/^  CoreLayer:/ {found = 1} found && /BuildArchitecture:/ {print $2; exit}' template.yaml)"
[[ -n "$layer_arch" ]] || die "no BuildArchitecture for CoreLayer in template.yaml"
check_layer "$layer_dir/python" "$layer_arch"
echo "layer: $(du -sh --apparent-size "$layer_dir" | cut -f1) unzipped; python/ holds:" \
    "$(find "$layer_dir/python" -mindepth 1 -maxdepth 1 ! -name '*.dist-info' -printf '%f\n' \
        | sort | tr '\n' ' ')"
echo "layer: groupcoord/ holds: $(ls "$layer_dir/python/groupcoord" | tr '\n' ' ')"

case "$(uname -m)" in
    x86_64 | amd64) host_arch=x86_64 ;;
    aarch64 | arm64) host_arch=arm64 ;;
    *) die "cannot import the handlers on a $(uname -m) host (x86_64 or arm64 only)" ;;
esac
import_layer="$layer_dir/python"
if [[ "$host_arch" != "$layer_arch" ]]; then
    # This host cannot load the $layer_arch wheels (pydantic_core, google-re2, wrapt): import
    # with the same locked dependencies built for $host_arch, and the sam-built server code.
    step "building the layer's dependencies for this host ($host_arch) to import the handlers"
    host_layer="$build_dir/host-layer-$host_arch"
    make -s -C layers/core dependencies ARTIFACTS_DIR="$host_layer" LAYER_ARCH="$host_arch" \
        PYTHON="$python312" || die "building the layer's dependencies for $host_arch failed"
    check_layer "$host_layer/python" "$host_arch"
    cp -R "$layer_dir/python/groupcoord" "$host_layer/python/groupcoord"
    import_layer="$host_layer/python"
fi

step "importing the built handlers with python3.12 and the built layer ($host_arch wheels)"
functions=0
for fn_dir in "$build_dir"/*/; do
    fn="$(basename "$fn_dir")"
    [[ -f "$fn_dir/app.py" ]] || continue
    functions=$((functions + 1))
    # -S: no site-packages, so only the built code and the built layer can satisfy imports.
    (
        cd "$build_dir/$fn"
        env -i PATH="$PATH" HOME="$build_dir" \
            PYTHONPATH="$build_dir/$fn:$import_layer" \
            AWS_DEFAULT_REGION="$AWS_DEFAULT_REGION" AWS_REGION="$AWS_REGION" \
            AWS_ACCESS_KEY_ID=testing AWS_SECRET_ACCESS_KEY=testing \
            AWS_EC2_METADATA_DISABLED=true \
            GROUPCOORD_TABLE_NAME=groupcoord-template-checks \
            POWERTOOLS_SERVICE_NAME=groupcoord POWERTOOLS_METRICS_NAMESPACE=groupcoord \
            POWERTOOLS_TRACE_DISABLED=1 POWERTOOLS_METRICS_DISABLED=1 \
            "$python312" -S - "$fn" <<'PY'
# The handler, then the code each of the function's APIs loads with its first request (lazy:
# http/apis.py), so that a module missing from the layer shows here, not in production.
import sys

import app

assert callable(app.lambda_handler)
name = sys.argv[1].removesuffix("Function").lower()
from groupcoord.http.apis import APIS, serves

loaded = [(api.request, api.response, api.handler()) for api in APIS if serves(name, api)]
if name == "sweeper":
    import groupcoord.service.sweep  # noqa: F401 - what its first run loads
    loaded.append(("sweep",))
if name == "push":
    import groupcoord.service.push  # noqa: F401 - what its first $connect loads
    loaded.append(("push",))
assert loaded, f"{name}: no API, not the sweeper and not the push channel"
print(f"{name}: the handler and the code of {len(loaded)} API(s) import")
PY
    ) || die "$fn: importing app.lambda_handler or its APIs' code from the build failed"
done
expected_functions="$(grep -c 'Type: AWS::Serverless::Function' template.yaml)"
((functions == expected_functions)) \
    || die "found $functions built functions with app.py, template.yaml declares $expected_functions"

printf '\ntemplate-checks: OK (%ss)\n' "$((SECONDS - started))"
