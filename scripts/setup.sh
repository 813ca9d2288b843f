#!/usr/bin/env bash
# Set up Chamberlain's virtualenv in .venv (idempotent). Installs the system packages it needs
# when they are missing and we may (root or sudo), then the project with its dev tools,
# pinned by requirements.lock.
set -euo pipefail
cd "$(dirname "$0")/.."

PY=${PYTHON:-python3}
need_apt=()
"$PY" -c 'import venv, ensurepip' 2>/dev/null || need_apt+=(python3-venv)
if [ ${#need_apt[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ]; then SUDO=""; elif command -v sudo >/dev/null; then SUDO=sudo; else
    echo "setup: please install: ${need_apt[*]}" >&2; exit 1; fi
  $SUDO apt-get update -qq && $SUDO apt-get install -y -qq "${need_apt[@]}"
fi

stamp=.venv/.installed
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ] || [ requirements.lock -nt "$stamp" ]; then
  .venv/bin/python -m pip install -q --disable-pip-version-check --upgrade pip
  .venv/bin/python -m pip install -q --disable-pip-version-check -c requirements.lock -e '.[dev]'
  touch "$stamp"
fi
