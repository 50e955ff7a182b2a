#!/usr/bin/env bash
# Builds the real Kubernetes control plane (etcd, kube-apiserver,
# kube-controller-manager, kubectl) from their published Go modules at pinned
# versions, into a cache outside the repository. Idempotent: a second run with
# the same pins finds the stamp file and does nothing.
#
# Prints the bin directory on stdout (and nothing else), so callers can do
#   bin=$(dev/controlplane/build.sh)
set -euo pipefail

# shellcheck source=build-common.sh
source "$(dirname "$0")/build-common.sh"
use_cache "controlplane/k8s-$KUBERNETES_VERSION-etcd-$ETCD_VERSION"
exit_if_built
need_go "Go 1.25 or newer (Kubernetes $KUBERNETES_VERSION needs it)"

mkdir -p "$bin"
work="$out/src"
rm -rf "$work"
mkdir -p "$work/k8s" "$work/etcd"

started=$(date +%s)

# --- kube-apiserver, kube-controller-manager, kubectl -----------------------
# k8s.io/kubernetes is published with `replace k8s.io/<x> => ./staging/...`
# lines that do not apply to a module that requires it, so the wrapper module
# replaces each staging module with its published v0.<minor>.<patch> tag. The
# list of staging modules is read from the pinned go.mod, never hard-coded.
staging_version="v0.${KUBERNETES_VERSION#v1.}"
k8s_gomod=$(go mod download -json "k8s.io/kubernetes@$KUBERNETES_VERSION" \
  | sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",\{0,1\}$/\1/p')
[[ -f "$k8s_gomod" ]] || { log "could not download k8s.io/kubernetes@$KUBERNETES_VERSION"; exit 1; }
go_directive=$(sed -n 's/^go \(.*\)$/\1/p' "$k8s_gomod")

{
  echo "module pakket.dev/controlplane-build"
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

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kubectl"
)
EOF

minor=${KUBERNETES_VERSION#v1.}
minor=${minor%%.*}
ldflags="-s -w"
for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  ldflags+=" -X $pkg.gitVersion=$KUBERNETES_VERSION -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor"
  ldflags+=" -X $pkg.gitTreeState=clean -X $pkg.buildDate=1970-01-01T00:00:00Z"
done

log "resolving modules for Kubernetes $KUBERNETES_VERSION"
(cd "$work/k8s" && go mod tidy -e >&2 2>/dev/null || true)
(cd "$work/k8s" && go mod download >&2)
for cmd in kube-apiserver kube-controller-manager kubectl; do
  log "building $cmd"
  (cd "$work/k8s" && go build -tags tools -ldflags "$ldflags" -o "$bin/$cmd" "k8s.io/kubernetes/cmd/$cmd" >&2)
done

# --- etcd -------------------------------------------------------------------
# go.etcd.io/etcd/server/v3 is itself package main (server/main.go).
cat >"$work/etcd/go.mod" <<EOF
module pakket.dev/etcd-build

go 1.24

require go.etcd.io/etcd/server/v3 $ETCD_VERSION
EOF
cat >"$work/etcd/tools.go" <<'EOF'
//go:build tools

package tools

import _ "go.etcd.io/etcd/server/v3"
EOF
log "building etcd $ETCD_VERSION"
(cd "$work/etcd" && go mod tidy >&2 && go build -tags tools -ldflags "-s -w" -o "$bin/etcd" go.etcd.io/etcd/server/v3 >&2)

elapsed=$(( $(date +%s) - started ))
log "built in ${elapsed}s into $bin"
printf 'kubernetes=%s\netcd=%s\nbuild_seconds=%s\n' "$KUBERNETES_VERSION" "$ETCD_VERSION" "$elapsed" >"$stamp"
echo "$bin"
