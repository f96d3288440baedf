#!/usr/bin/env bash
# The TypeScript client (clients/typescript): installs its packages exactly as the committed
# package-lock.json pins them (npm ci), builds it (tsc, strict), and runs its tests (node:test),
# which start `groupcoord serve` with the project's Python on free loopback ports and stop them
# afterwards (and use the DynamoDB Local .ci/run started, GROUPCOORD_TEST_DYNAMODB_ENDPOINT, or
# start their own).
#
# Usage: .ci/typescript.sh            (no arguments; any working directory)
# Environment:
#   VENV   the project virtualenv, with groupcoord installed (default .venv); its python is
#          what the tests run serve and the Python members with (GROUPCOORD_PYTHON)
# Needs Node.js 20 or later and npm; network access to the npm registry for npm ci.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
ROOT=$PWD
VENV=${VENV:-$ROOT/.venv}
export GROUPCOORD_PYTHON="$VENV/bin/python"

command -v node >/dev/null || { echo "Node.js is not installed (the TypeScript client needs 20 or later)"; exit 1; }
node -e 'process.exit(Number(process.versions.node.split(".")[0]) >= 20 ? 0 : 1)' \
  || { echo "Node.js $(node --version) is too old: the TypeScript client needs 20 or later"; exit 1; }
[ -x "$GROUPCOORD_PYTHON" ] || { echo "no Python at $GROUPCOORD_PYTHON (set VENV)"; exit 1; }

cd clients/typescript
started=$SECONDS
npm ci --no-audit --no-fund --loglevel=error
npm run --silent build
npm test --silent
echo "TypeScript client: installed, built and tested in $((SECONDS - started)) s"
