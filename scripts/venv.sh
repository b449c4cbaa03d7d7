# Sourced by serve.sh and test.sh: the project's virtualenv (.venv) and its installs.
# A failed install stops the calling script with pip's own message (set -e and pipefail there);
# only this machine's notes about absent local index folders are left out of pip's output.

PY=${PYTHON:-python3}

pip_install() {
  .venv/bin/python -m pip install -q "$@" 2>&1 | { grep -v "^WARNING: Location" || true; }
}

ensure_venv() {
  [ -x .venv/bin/python ] || "$PY" -m venv .venv
  pip_install --upgrade pip
  pip_install -e "$1"
}
