#!/usr/bin/env bash
# Builds the Go peer benchmark once per source state, into a cache outside the
# repository, then runs it with the given arguments:
#
#   bench/go-resolver/run.sh --catalog PATH [--installed N] [--repeat K] [--results FILE]
#
# Cache: ${PAKKET_CACHE:-$HOME/.cache/pakket}/go-resolver/<sha256 of go.mod, go.sum, *.go>/go-resolver
# Needs only a Go toolchain (1.22 or newer) and the Go module proxy.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

if ! command -v go >/dev/null 2>&1 && [ -x /usr/local/go/bin/go ]; then
    PATH="/usr/local/go/bin:$PATH"
fi
command -v go >/dev/null 2>&1 || { echo "run.sh: the Go toolchain (go) is not on PATH" >&2; exit 1; }

hash="$(cd "$here" && LC_ALL=C ls go.mod go.sum *.go | LC_ALL=C sort | xargs cat | sha256sum | cut -c1-16)"
dir="${PAKKET_CACHE:-$HOME/.cache/pakket}/go-resolver/$hash"
bin="$dir/go-resolver"

if [ ! -x "$bin" ]; then
    mkdir -p "$dir"
    tmp="$(mktemp "$dir/go-resolver.XXXXXX")"
    trap 'rm -f "$tmp"' EXIT
    echo "run.sh: building go-resolver into $dir" >&2
    # -mod=readonly: go.mod and go.sum are complete; never rewrite them.
    (cd "$here" && GOFLAGS=-mod=readonly CGO_ENABLED=0 go build -trimpath -o "$tmp" .)
    mv -f "$tmp" "$bin"
    trap - EXIT
fi

exec "$bin" "$@"
