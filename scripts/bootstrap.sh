#!/usr/bin/env bash
# Shared by serve.sh and test.sh: install missing Debian packages, then create .venv
# and install Brain into it (with the given extras, e.g. "test").
set -euo pipefail

apt_install() {
  [ "$#" -gt 0 ] || return 0
  local sudo=""
  [ "$(id -u)" = 0 ] || sudo="sudo"
  echo "installing Debian packages: $*" >&2
  # Keep package scripts from starting services (e.g. a Prometheus on all interfaces).
  local policy=/usr/sbin/policy-rc.d added_policy=""
  if [ ! -e "$policy" ]; then
    printf '#!/bin/sh\nexit 101\n' | $sudo tee "$policy" >/dev/null
    $sudo chmod +x "$policy"
    added_policy=1
  fi
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "$@" >/dev/null
  [ -z "$added_policy" ] || $sudo rm -f "$policy"
}

python_packages=()
python3 -c "import ensurepip, venv" 2>/dev/null || python_packages+=(python3-venv)

make_venv() {
  local extras="${1:-}"
  [ -x .venv/bin/python ] || python3 -m venv .venv
  .venv/bin/python -m pip install -q --upgrade pip >/dev/null
  if [ -n "$extras" ]; then
    .venv/bin/python -m pip install -q -e ".[$extras]"
  else
    .venv/bin/python -m pip install -q -e .
  fi
}
