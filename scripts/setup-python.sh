#!/usr/bin/env bash
# Creates .venv/ with python-socketio and aiohttp from PyPI: the real peer of the Socket.IO
# interoperability tests (Tools/Tests/SocketIOIntegrationTests/InteropTests.swift) and of the receive benchmark.
# Idempotent and quick when the venv is already there. Needs python3 (>= 3.9) with venv/pip;
# on a bare Debian 12 it installs python3-venv first (as root).
set -euo pipefail
cd "$(dirname "$0")/.."

requirements=("python-socketio==5.18.1" "python-engineio==4.15.1" "aiohttp==3.14.5")
venv=.venv

if [ -x "$venv/bin/python" ] && "$venv/bin/python" - <<'PY' 2>/dev/null; then
import importlib.metadata as m
wanted = {"python-socketio": "5.18.1", "python-engineio": "4.15.1", "aiohttp": "3.14.5"}
raise SystemExit(0 if all(m.version(k) == v for k, v in wanted.items()) else 1)
PY
  echo "setup-python: $venv ready (${requirements[*]})"
  exit 0
fi

if ! python3 -m venv --help >/dev/null 2>&1 || ! python3 -c "import ensurepip" 2>/dev/null; then
  echo "setup-python: installing python3-venv"
  export DEBIAN_FRONTEND=noninteractive
  apt-get install -y --no-install-recommends python3 python3-venv python3-pip \
    || { apt-get update && apt-get install -y --no-install-recommends python3 python3-venv python3-pip; }
fi

echo "setup-python: creating $venv with ${requirements[*]}"
python3 -m venv "$venv"
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check "${requirements[@]}"
"$venv/bin/python" -c "import socketio, aiohttp; print('setup-python: python-socketio', socketio.__version__ if hasattr(socketio, '__version__') else 'ok')"
