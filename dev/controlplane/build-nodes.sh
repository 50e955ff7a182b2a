#!/usr/bin/env bash
# Builds what `pakket-dev up --nodes N` adds to the control plane:
# kube-scheduler (from k8s.io/kubernetes at the pinned KUBERNETES_VERSION, the
# same wrapper module as build.sh) and kwok (sigs.k8s.io/kwok at KWOK_VERSION),
# into a cache outside the repository. Idempotent: a second run with the same
# pins finds the stamp file and does nothing.
#
# Why a script and a folder of their own rather than two more lines in build.sh:
# build.sh's stamp says "these pins are built"; adding binaries to it would
# rebuild (minutes) every cache already filled, and most runs never start nodes.
# A separate folder keyed by both pins keeps the existing cache valid and lets
# a kwok bump rebuild only these two.
#
# Prints the bin directory on stdout (and nothing else), so callers can do
#   bin=$(dev/controlplane/build-nodes.sh)
set -euo pipefail

# shellcheck source=build-common.sh
source "$(dirname "$0")/build-common.sh"
use_cache "nodes/k8s-$KUBERNETES_VERSION-kwok-$KWOK_VERSION"
exit_if_built
need_go "Go 1.26 or newer (kwok $KWOK_VERSION needs it)"

mkdir -p "$bin"
# Two test processes may ask for the nodes at once on a fresh machine: the
# second waits for the first's build instead of wiping its work folder.
if command -v flock >/dev/null; then
  exec 9>"$out/.lock"
  flock 9
  exit_if_built
fi
work="$out/src"
rm -rf "$work"
mkdir -p "$work"

started=$(date +%s)

# --- kwok -------------------------------------------------------------------
# kwok's go.mod has no replace directives, so `go install module@version`
# builds it exactly as its release pins it (client-go of its own minor),
# independent of our Kubernetes pin. Its version is a constant in the source.
log "building kwok $KWOK_VERSION"
GOFLAGS="-trimpath -buildvcs=false" GOBIN="$bin" \
  go install -ldflags "-s -w" "sigs.k8s.io/kwok/cmd/kwok@$KWOK_VERSION" >&2

# --- kube-scheduler ---------------------------------------------------------
# The same wrapper module as build.sh (build-common.sh's write_k8s_module).
# Go's module and build caches are shared with build.sh, so after it has run
# only the scheduler's own packages compile.
write_k8s_module "$work/k8s" pakket.dev/nodes-build kube-scheduler
log "building kube-scheduler"
(cd "$work/k8s" && go build -tags tools -ldflags "$k8s_ldflags" -o "$bin/kube-scheduler" k8s.io/kubernetes/cmd/kube-scheduler >&2)

elapsed=$(( $(date +%s) - started ))
log "built in ${elapsed}s into $bin"
printf 'kubernetes=%s\nkwok=%s\nbuild_seconds=%s\n' "$KUBERNETES_VERSION" "$KWOK_VERSION" "$elapsed" >"$stamp"
echo "$bin"
