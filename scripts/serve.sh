#!/usr/bin/env bash
# Quick start: create .venv, install Brain, serve on the embedded SQLite default.
# Extra arguments go to `brain serve` (e.g. --port 9000).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/bootstrap.sh
apt_install "${python_packages[@]}"
make_venv
exec .venv/bin/brain serve "$@"
