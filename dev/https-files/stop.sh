#!/usr/bin/env bash
# Stops the server dev/https-files/start.sh DIR started (if it runs).
set -euo pipefail
[[ $# -eq 1 ]] || { echo "usage: $0 DIR" >&2; exit 2; }
dir=$1
if [[ -f $dir/pid ]]; then
  pid=$(<"$dir/pid")
  if [[ -r /proc/$pid/cmdline ]] && tr '\0' ' ' <"/proc/$pid/cmdline" | grep -qF "python3"; then
    kill "$pid" 2>/dev/null || true
  fi
  rm -f "$dir/pid" "$dir/address"
fi
