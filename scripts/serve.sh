#!/usr/bin/env bash
# Sets up (a virtualenv with the project) and starts `hindsight serve` on 127.0.0.1:8888 with an
# embedded PostgreSQL and local embeddings. Extra arguments go to `hindsight serve`.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
[ -x .venv/bin/python ] || "$PY" -m venv .venv
.venv/bin/python -m pip install -q --upgrade pip 2>&1 | grep -v "^WARNING: Location" || true
.venv/bin/python -m pip install -q -e . 2>&1 | grep -v "^WARNING: Location" || true
exec .venv/bin/hindsight serve "$@"
