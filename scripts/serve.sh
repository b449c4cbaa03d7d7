#!/usr/bin/env bash
# Sets up (a virtualenv with the project) and starts `hindsight serve` on 127.0.0.1:8888 with an
# embedded PostgreSQL and local embeddings. Extra arguments go to `hindsight serve`.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/venv.sh
ensure_venv .
exec .venv/bin/hindsight serve "$@"
