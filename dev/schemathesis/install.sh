#!/usr/bin/env bash
# Installs schemathesis (PyPI, pinned) into a virtualenv in Pakket's cache,
# outside the repository, once; prints the path of its `st` command. CI runs
# it against the resolver API's /openapi.json (see dev/schemathesis/run.sh).
set -euo pipefail
version=4.32.5
cache=${PAKKET_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/pakket}
venv=$cache/schemathesis-$version
# A virtualenv cannot be moved (its scripts name its path), so the marker
# file, written last, says the install finished; an interrupted one is
# redone from scratch.
if [[ ! -f $venv/.installed ]]; then
  rm -rf "$venv"
  python3 -m venv "$venv" >&2
  "$venv/bin/pip" install --quiet --disable-pip-version-check "schemathesis==$version" >&2
  touch "$venv/.installed"
fi
echo "$venv/bin/st"
