#!/usr/bin/env bash
# Stops the registry that dev/registry/start.sh DIR started. Keeps DIR (and
# the images in DIR/data); a later start.sh DIR serves them again, on a new port.
set -euo pipefail
[[ $# -eq 1 ]] || { echo "usage: $0 DIR" >&2; exit 2; }
dir=$1
[[ -f $dir/pid ]] || exit 0
pid=$(<"$dir/pid")
dir=$(cd "$dir" && pwd)
# Only signal the pid if it is still this DIR's registry.
if [[ -r /proc/$pid/cmdline ]] && tr '\0' ' ' <"/proc/$pid/cmdline" | grep -qF "$dir/config.yml"; then
  kill -TERM "$pid" 2>/dev/null || true
  for _ in $(seq 1 100); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.05
  done
  kill -KILL "$pid" 2>/dev/null || true
fi
rm -f "$dir/pid" "$dir/address"
