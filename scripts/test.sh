#!/usr/bin/env bash
# Quick start: install what the tests need and run the whole suite.
# - Debian packages: prometheus (prometheus + promtool), chromium (the console's browser
#   tests drive it through Playwright; Playwright's own browser download is not used),
#   curl (the README's and docs' examples are run), and postgresql when no server answers
#   on 127.0.0.1:5432 (the tests then start a throwaway one with pg_ctl).
# - .venv with Brain and its test extras.
# Extra arguments go to pytest (e.g. -k samples).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/bootstrap.sh

packages=("${python_packages[@]}")
{ command -v prometheus && command -v promtool; } >/dev/null || packages+=(prometheus)
command -v chromium >/dev/null || packages+=(chromium)
command -v curl >/dev/null || packages+=(curl)  # the README's and docs' examples are run
if ! (exec 3<>/dev/tcp/127.0.0.1/5432) 2>/dev/null && ! ls /usr/lib/postgresql/*/bin/pg_ctl >/dev/null 2>&1; then
  packages+=(postgresql)
fi
apt_install "${packages[@]}"
make_venv test

# The browser tests fail, rather than skip, when Chromium or Playwright is missing here.
export BRAIN_REQUIRE_BROWSER=1
exec .venv/bin/python -m pytest "$@"
