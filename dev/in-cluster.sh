#!/usr/bin/env bash
# Pakket as a cluster admin runs it: from its images, as Pods, on a real
# node. Needs root (containerd and the node's bridge).
#
#   dev/in-cluster.sh up      a control plane with a real node, a registry
#                             on the node's address, Pakket's images built
#                             and pushed there, then deploy/install.sh
#   dev/in-cluster.sh images  build and push the images again (new digests
#                             with PAKKET_IMAGE_LABEL set), print the file
#   dev/in-cluster.sh down    stop it all (the node's Pods, mounts and
#                             network with it)
#
# `up` prints `export` lines: KUBECONFIG, PATH (the pinned kubectl and
# kubectl-instance), PAKKET_REGISTRY (host:port, reachable from Pods and
# from this machine, never from outside) and PAKKET_IMAGES (the pinned
# image refs install.sh used). The folder is $PAKKET_IN_CLUSTER_DIR
# (default ${TMPDIR:-/tmp}/pakket-in-cluster).
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=dev/cargo-env.sh
source dev/cargo-env.sh
# shellcheck source=dev/cache-lock.sh
source dev/cache-lock.sh

cache=${PAKKET_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/pakket}
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$cache/cargo-target}
export CARGO_INCREMENTAL=${CARGO_INCREMENTAL:-0}
dir=${PAKKET_IN_CLUSTER_DIR:-${TMPDIR:-/tmp}/pakket-in-cluster}
registry_dir=$dir.registry
images=$dir.images.env
pakket_dev=$CARGO_TARGET_DIR/debug/pakket-dev
say() { echo "in-cluster.sh: $*" >&2; }

case ${1:-} in
  up | images | down) ;;
  *) echo "usage: $0 up|images|down" >&2; exit 2 ;;
esac

if [[ $1 == down ]]; then
  [[ -x $pakket_dev ]] && "$pakket_dev" --dir "$dir" down >&2 || true
  [[ -d $registry_dir ]] && dev/registry/stop.sh "$registry_dir" >&2 || true
  rm -rf "$registry_dir" "$images"
  exit 0
fi

cache_locked cargo build --quiet --locked --bin pakket-dev --bin kubectl-instance --bin pakket >&2

if [[ $1 == up ]]; then
  dev/prerequisites.sh >/dev/null
  PAKKET_CONTROLPLANE_BIN=${PAKKET_CONTROLPLANE_BIN:-$(dev/controlplane/build.sh)}
  PAKKET_NODES_BIN=${PAKKET_NODES_BIN:-$(dev/controlplane/build-nodes.sh)}
  PAKKET_REAL_NODE_BIN=${PAKKET_REAL_NODE_BIN:-$(dev/controlplane/build-real-node.sh)}
  export PAKKET_CONTROLPLANE_BIN PAKKET_NODES_BIN PAKKET_REAL_NODE_BIN
  started=$(date +%s)
  "$pakket_dev" --dir "$dir" up --real-node >/dev/null
  say "control plane and real node up in $(( $(date +%s) - started )) s"
fi
# The registry listens on the node's address: the node's containerd pulls
# Pakket's images from it, and Pods (the registry-v1 provisioner) reach it
# for bundles.
node_ip=10.244.0.1
registry=$(dev/registry/start.sh "$registry_dir" --host "$node_ip")
"$pakket_dev" --dir "$dir" trust-registry "$registry"
eval "$("$pakket_dev" --dir "$dir" env)"

dev/images/build.sh "$registry" "$images" >&2
if [[ $1 == images ]]; then
  echo "$images"
  exit 0
fi

deploy/install.sh --images "$images"
cat <<EOF
export KUBECONFIG=$KUBECONFIG
export PATH=$CARGO_TARGET_DIR/debug:$PATH
export PAKKET_REGISTRY=$registry
export PAKKET_IMAGES=$images
EOF
