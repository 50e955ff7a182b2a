#!/usr/bin/env bash
# Builds kstatus (dev/kstatus/main.go: sigs.k8s.io/cli-utils's kstatus at
# the version go.mod pins) once per source state, into a cache outside the
# repository, and prints the binary's path on stdout (nothing else), so a
# test can do `bin=$(dev/kstatus/build.sh)`.
#
# Cache: ${PAKKET_CACHE:-$HOME/.cache/pakket}/kstatus/<sha256 of go.mod, go.sum, *.go>/kstatus
# Needs a Go toolchain and the Go module proxy; idempotent.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
if ! command -v go >/dev/null 2>&1 && [ -x /usr/local/go/bin/go ]; then
    PATH="/usr/local/go/bin:$PATH"
fi
command -v go >/dev/null 2>&1 || { echo "build.sh: the Go toolchain (go) is not on PATH" >&2; exit 1; }

hash="$(cd "$here" && LC_ALL=C ls go.mod go.sum *.go | LC_ALL=C sort | xargs cat | sha256sum | cut -c1-16)"
dir="${PAKKET_CACHE:-$HOME/.cache/pakket}/kstatus/$hash"
bin="$dir/kstatus"
if [ ! -x "$bin" ]; then
    mkdir -p "$dir"
    # Two test processes may ask at once: the second waits for the first.
    exec 9>"$dir/.lock"
    flock 9
    if [ ! -x "$bin" ]; then
        tmp="$(mktemp "$dir/kstatus.XXXXXX")"
        trap 'rm -f "$tmp"' EXIT
        echo "build.sh: building kstatus into $dir" >&2
        # -mod=readonly: go.mod and go.sum are complete; never rewrite them.
        (cd "$here" && GOFLAGS=-mod=readonly CGO_ENABLED=0 go build -trimpath -o "$tmp" .) >&2
        mv -f "$tmp" "$bin"
        trap - EXIT
    fi
fi
echo "$bin"
