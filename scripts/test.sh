#!/usr/bin/env bash
# Sets up everything the test suite needs (a virtualenv with the project, the Claude Code
# client for the end-to-end MCP check) and runs the whole suite. Safe to re-run.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/venv.sh
ensure_venv ".[test]"
if command -v npm >/dev/null 2>&1 && [ ! -x .cache/node/node_modules/@anthropic-ai/claude-code-linux-x64/claude ]; then
  mkdir -p .cache/node
  npm install --silent --no-audit --no-fund --prefix .cache/node @anthropic-ai/claude-code >/dev/null 2>&1 \
    || echo "note: could not install Claude Code; its end-to-end test will be skipped"
fi
CLAUDE_BIN=$(ls "$PWD"/.cache/node/node_modules/@anthropic-ai/claude-code-*/claude 2>/dev/null | head -1 || true)
export HINDSIGHT_CLAUDE_BIN=${CLAUDE_BIN:-}
export XDG_RUNTIME_DIR=${XDG_RUNTIME_DIR:-/tmp}
exec .venv/bin/python -m pytest -q -p no:cacheprovider "$@"
