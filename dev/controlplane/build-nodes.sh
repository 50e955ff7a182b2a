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
mkdir -p "$work/k8s"

started=$(date +%s)

# --- kwok -------------------------------------------------------------------
# kwok's go.mod has no replace directives, so `go install module@version`
# builds it exactly as its release pins it (client-go of its own minor),
# independent of our Kubernetes pin. Its version is a constant in the source.
log "building kwok $KWOK_VERSION"
GOFLAGS="-trimpath -buildvcs=false" GOBIN="$bin" \
  go install -ldflags "-s -w" "sigs.k8s.io/kwok/cmd/kwok@$KWOK_VERSION" >&2

# --- kube-scheduler ---------------------------------------------------------
# The same wrapper module as build.sh (keep the two in step): k8s.io/kubernetes
# is published with `replace k8s.io/<x> => ./staging/...` lines that do not
# apply to a module that requires it, so each staging module is replaced with
# its published v0.<minor>.<patch> tag, the list read from the pinned go.mod.
# Go's module and build caches are shared with build.sh, so after it has run
# only the scheduler's own packages compile.
staging_version="v0.${KUBERNETES_VERSION#v1.}"
k8s_gomod=$(go mod download -json "k8s.io/kubernetes@$KUBERNETES_VERSION" \
  | sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",\{0,1\}$/\1/p')
[[ -f "$k8s_gomod" ]] || { log "could not download k8s.io/kubernetes@$KUBERNETES_VERSION"; exit 1; }
go_directive=$(sed -n 's/^go \(.*\)$/\1/p' "$k8s_gomod")

{
  echo "module pakket.dev/nodes-build"
  echo
  echo "go $go_directive"
  echo
  echo "require k8s.io/kubernetes $KUBERNETES_VERSION"
  echo
  grep -E '^[[:space:]]*k8s\.io/[a-z0-9-]+ => \./staging/' "$k8s_gomod" \
    | awk -v v="$staging_version" '{ printf "replace %s => %s %s\n", $1, $1, v }'
} >"$work/k8s/go.mod"
cat >"$work/k8s/tools.go" <<'EOF'
//go:build tools

package tools

import _ "k8s.io/kubernetes/cmd/kube-scheduler"
EOF

minor=${KUBERNETES_VERSION#v1.}
minor=${minor%%.*}
ldflags="-s -w"
for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  ldflags+=" -X $pkg.gitVersion=$KUBERNETES_VERSION -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor"
  ldflags+=" -X $pkg.gitTreeState=clean -X $pkg.buildDate=1970-01-01T00:00:00Z"
done

log "resolving modules for kube-scheduler $KUBERNETES_VERSION"
(cd "$work/k8s" && go mod tidy -e >&2 2>/dev/null || true)
(cd "$work/k8s" && go mod download >&2)
log "building kube-scheduler"
(cd "$work/k8s" && go build -tags tools -ldflags "$ldflags" -o "$bin/kube-scheduler" k8s.io/kubernetes/cmd/kube-scheduler >&2)

elapsed=$(( $(date +%s) - started ))
log "built in ${elapsed}s into $bin"
printf 'kubernetes=%s\nkwok=%s\nbuild_seconds=%s\n' "$KUBERNETES_VERSION" "$KWOK_VERSION" "$elapsed" >"$stamp"
echo "$bin"
