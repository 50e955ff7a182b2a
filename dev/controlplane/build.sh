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
# The wrapper module (build-common.sh's write_k8s_module) replaces each of
# k8s.io/kubernetes's staging modules with its published tag.
write_k8s_module "$work/k8s" pakket.dev/controlplane-build kube-apiserver kube-controller-manager kubectl
for cmd in kube-apiserver kube-controller-manager kubectl; do
  log "building $cmd"
  (cd "$work/k8s" && go build -tags tools -ldflags "$k8s_ldflags" -o "$bin/$cmd" "k8s.io/kubernetes/cmd/$cmd" >&2)
done

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
