#!/usr/bin/env bash
# The Pakket demo on a fresh machine: builds and starts a real control plane
# on loopback, installs Pakket's CRDs, applies the examples and lists them.
#
#   dev/demo.sh         bring it up (again: reuses what is running)
#   dev/demo.sh down    stop it
set -euo pipefail
cd "$(dirname "$0")/.."

cache=${PAKKET_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/pakket}
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$cache/cargo-target}
export PAKKET_DEV_DIR=${PAKKET_DEV_DIR:-${TMPDIR:-/tmp}/pakket-dev}
say() { printf '\n\033[1m%s\033[0m\n' "$*"; }

dev/prerequisites.sh >/dev/null
cargo build --quiet --locked --bin pakket-dev --bin crdgen
pakket_dev="$CARGO_TARGET_DIR/debug/pakket-dev"

if [[ ${1:-} == down ]]; then
  "$pakket_dev" down
  exit 0
fi

say "Building (first time only) and starting etcd, kube-apiserver and kube-controller-manager"
eval "$("$pakket_dev" up)"
"$pakket_dev" status

say "Installing Pakket's CRDs"
kubectl apply --server-side -f crds/
kubectl wait --for=condition=Established --timeout=60s -f crds/

say "Applying the examples"
kubectl apply -f examples/core/

say "kubectl get pakket"
kubectl get pakket

say "The apiserver itself refuses a change to a Bundle's spec:"
kubectl patch bundle etcd-operator.v0.9.4 --type=merge \
  -p '{"spec":{"refs":["docker://quay.io/openshift-community-operators/etcd:v0.9.2"]}}' || true

say "Test users are real non-admins (alice cannot list bundles):"
kubectl --context alice get bundles || true

cat <<MSG

The control plane keeps running. To use it from this shell:
  eval "\$($pakket_dev env)"
  kubectl get pakket                  # as admin
  kubectl --context alice get pakket  # as the non-admin user alice (or bob, carol)
Stop it with: dev/demo.sh down
MSG
