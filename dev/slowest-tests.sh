#!/usr/bin/env bash
# The slowest test binaries of a `cargo test` log: each binary's name (the
# line cargo prints before running it) and the time its harness reports,
# slowest first.
#
#   dev/slowest-tests.sh LOG [COUNT]
set -euo pipefail
[[ $# -ge 1 && $# -le 2 ]] || { echo "usage: $0 LOG [COUNT]" >&2; exit 2; }
awk '
  /^ *Running / {
    # `Running tests/x.rs (…/deps/x-HASH)`, `Running unittests src/lib.rs (…/deps/CRATE-HASH)`
    line = $0; sub(/^ *Running /, "", line)
    path = line; sub(/ \(.*$/, "", path)
    built = line; sub(/^.*\//, "", built); sub(/-[0-9a-f]+\)$/, "", built)
    binary = (path ~ /^unittests /) ? "unit tests of " built " (" substr(path, 11) ")" : path " (" built ")"
  }
  /^ *Doc-tests / { sub(/^ *Doc-tests /, ""); binary = "doc tests of " $0 }
  /^test result: / && binary != "" {
    match($0, /finished in [0-9.]+s/)
    if (RSTART) {
      seconds = substr($0, RSTART + 12, RLENGTH - 13)
      printf "%8.1f s  %s\n", seconds, binary
    }
    binary = ""
  }
' "$1" | sort -rn | sed -n "1,${2:-10}p"
# (sed, not head: head leaves once it has its lines, and sort, still writing a
# long log's list, would die of SIGPIPE and fail the run under pipefail.)
