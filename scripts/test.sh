#!/usr/bin/env bash
# Sets up everything the test suite needs (a virtualenv with the project and its test extra,
# Claude Code and Hindsight's TypeScript client from npm, Debian's Chromium for the console's
# browser test, Debian's PgBouncer and HAProxy for the pooler and cluster tests) and runs the
# whole suite. Safe to re-run.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/venv.sh
ensure_venv ".[test]"
# Real clients from npm, for their end-to-end tests: Claude Code and MCP Inspector (MCP) and
# Hindsight's TypeScript client (REST). Without npm or the registry, those tests are skipped.
NODE_DIR=.cache/node/node_modules
if command -v npm >/dev/null 2>&1; then
  need=()
  ls "$NODE_DIR"/@anthropic-ai/claude-code-*/claude >/dev/null 2>&1 || need+=(@anthropic-ai/claude-code)
  [ -f "$NODE_DIR/@vectorize-io/hindsight-client/package.json" ] || need+=(@vectorize-io/hindsight-client@0.9.1)
  [ -f "$NODE_DIR/@modelcontextprotocol/inspector/package.json" ] || need+=(@modelcontextprotocol/inspector@2.12)
  if [ ${#need[@]} -gt 0 ]; then
    mkdir -p .cache/node
    npm install --silent --no-audit --no-fund --prefix .cache/node "${need[@]}" >/dev/null 2>&1 \
      || echo "note: could not install ${need[*]} from npm; their end-to-end tests will be skipped"
  fi
fi
# Headless Chromium for the web console's browser test: Debian's package, driven by Playwright
# for Python (a test dependency); never a browser downloaded by a tool.
if ! command -v chromium >/dev/null 2>&1 && command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
  export DEBIAN_FRONTEND=noninteractive
  { apt-get install -y -q chromium >/dev/null 2>&1 \
    || { apt-get update -q >/dev/null 2>&1 && apt-get install -y -q chromium >/dev/null 2>&1; }; } \
    || echo "note: could not install Chromium; the console's browser test will be skipped"
fi
# Debian's PgBouncer and HAProxy, for the tests of a transaction pooler and of the cluster of
# deploy/local-cluster.sh; without them those tests are skipped, saying so.
if { ! command -v pgbouncer >/dev/null 2>&1 || ! command -v haproxy >/dev/null 2>&1; } \
  && command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
  export DEBIAN_FRONTEND=noninteractive
  { apt-get install -y -q pgbouncer haproxy >/dev/null 2>&1 \
    || { apt-get update -q >/dev/null 2>&1 && apt-get install -y -q pgbouncer haproxy >/dev/null 2>&1; }; } \
    || echo "note: could not install pgbouncer and haproxy; the pooler and cluster tests will be skipped"
fi
CLAUDE_BIN=$(ls "$PWD"/$NODE_DIR/@anthropic-ai/claude-code-*/claude 2>/dev/null | head -1 || true)
export HINDSIGHT_CLAUDE_BIN=${CLAUDE_BIN:-}
export HINDSIGHT_NODE_MODULES=$PWD/$NODE_DIR
export XDG_RUNTIME_DIR=${XDG_RUNTIME_DIR:-/tmp}
# Commit subjects, lint, format and types first: a failure there stops the run with the tools'
# own messages.
.venv/bin/python scripts/commit_subjects.py
.venv/bin/ruff check hindsight tests bench
.venv/bin/ruff format --check hindsight tests bench
.venv/bin/mypy
exec .venv/bin/python -m pytest -q -p no:cacheprovider "$@"
