#!/usr/bin/env bash
# Checks template.yaml without an AWS account:
#   1. cfn-lint template.yaml                    (from $VENV/bin, else PATH)
#   2. sam validate --lint                       (SAM CLI in its own virtualenv)
#   3. sam build into a temporary directory, then imports every built handler with the built
#      layer under python3.12, the way Lambda would (no site-packages, layer + code only).
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
step "cfn-lint template.yaml"
if [[ -n "${VENV:-}" && -x "$VENV/bin/cfn-lint" ]]; then
    cfn_lint="$VENV/bin/cfn-lint"
elif command -v cfn-lint >/dev/null 2>&1; then
    cfn_lint="$(command -v cfn-lint)"
else
    die "cfn-lint not found: set VENV to the project virtualenv or put cfn-lint on PATH"
fi
"$cfn_lint" --version
"$cfn_lint" template.yaml
echo "cfn-lint: no findings"

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
    "$sam_venv/bin/python" -m pip install --quiet aws-sam-cli
fi
sam="$sam_venv/bin/sam"
"$sam" --version

step "sam validate --lint"
"$sam" validate --lint --template-file template.yaml

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

build_dir="$(mktemp -d)"
trap 'rm -rf "$build_dir"' EXIT

step "sam build --build-dir $build_dir"
PATH="$(dirname "$python312"):$PATH" "$sam" build \
    --template-file template.yaml --build-dir "$build_dir"

# The built layer must hold the core package and its dependencies under python/, and every
# handler must import from its built code directory with only that layer (as in Lambda).
step "importing the built handlers with python3.12 and the built layer"
built_template="$build_dir/template.yaml"
[[ -f "$built_template" ]] || die "sam build wrote no $built_template"
layer_dir="$(find "$build_dir" -mindepth 1 -maxdepth 1 -type d -name 'CoreLayer*' | head -n 1)"
[[ -n "$layer_dir" && -f "$layer_dir/python/groupcoord/__init__.py" ]] \
    || die "built layer has no python/groupcoord (looked for $build_dir/CoreLayer*/python)"
functions=0
for fn_dir in "$build_dir"/*/; do
    fn="$(basename "$fn_dir")"
    [[ -f "$fn_dir/app.py" ]] || continue
    functions=$((functions + 1))
    # -S: no site-packages, so only the built code and the built layer can satisfy imports.
    (
        cd "$build_dir/$fn"
        env -i PATH="$PATH" HOME="$build_dir" \
            PYTHONPATH="$build_dir/$fn:$layer_dir/python" \
            AWS_DEFAULT_REGION="$AWS_DEFAULT_REGION" AWS_REGION="$AWS_REGION" \
            AWS_ACCESS_KEY_ID=testing AWS_SECRET_ACCESS_KEY=testing \
            AWS_EC2_METADATA_DISABLED=true \
            GROUPCOORD_TABLE_NAME=groupcoord-template-checks \
            POWERTOOLS_SERVICE_NAME=groupcoord POWERTOOLS_METRICS_NAMESPACE=groupcoord \
            POWERTOOLS_TRACE_DISABLED=1 POWERTOOLS_METRICS_DISABLED=1 \
            "$python312" -S -c 'import app; assert callable(app.lambda_handler); print("ok")'
    ) || die "$fn: importing app.lambda_handler from the build failed"
    echo "$fn: app.lambda_handler imports"
done
expected_functions="$(grep -c 'Type: AWS::Serverless::Function' template.yaml)"
((functions == expected_functions)) \
    || die "found $functions built functions with app.py, template.yaml declares $expected_functions"

printf '\ntemplate-checks: OK (%ss)\n' "$((SECONDS - started))"
