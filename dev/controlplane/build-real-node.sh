#!/usr/bin/env bash
# Builds what `pakket-dev up --real-node` adds to the control plane: a kubelet
# and kube-proxy (from k8s.io/kubernetes at the pinned KUBERNETES_VERSION, the
# same wrapper module as build.sh), crictl (sigs.k8s.io/cri-tools at
# CRICTL_VERSION: `pakket-dev down` stops the Pods through it, so their
# network namespaces are removed too), and the Pod sandbox's `pause` program
# (Kubernetes' own build/pause/linux/pause.c from the same module, linked
# statically), into a cache outside the repository. Installs the Debian
# packages the node runs with when they are missing: containerd (1.6, CRI and
# overlayfs), runc, containernetworking-plugins (bridge, host-local, loopback)
# and iptables (kube-proxy's rules). Idempotent: a second run with the same
# pins finds the stamp file and does nothing.
#
# Why Debian's containerd 1.6 rather than one built from its module: it is
# maintained by Debian with security updates, and Kubernetes 1.35 still
# supports it. Kubernetes 1.36 drops containerd 1.x: when KUBERNETES_VERSION
# moves to 1.36, this script builds containerd 2 from
# github.com/containerd/containerd/v2/cmd/containerd (pinned like kwok) and
# the node's config moves to containerd 2's (version = 3) layout.
#
# Prints the bin directory on stdout (and nothing else), so callers can do
#   bin=$(dev/controlplane/build-real-node.sh)
set -euo pipefail

# shellcheck source=build-common.sh
source "$(dirname "$0")/build-common.sh"

# --- Debian packages --------------------------------------------------------
missing=()
# ip (iproute2) makes the node's bridge; minimal Debian images lack it.
for tool in containerd:containerd runc:runc iptables:iptables ip:iproute2; do
  command -v "${tool%%:*}" >/dev/null || missing+=("${tool##*:}")
done
[[ -x /usr/lib/cni/bridge ]] || missing+=(containernetworking-plugins)
command -v gcc >/dev/null || missing+=(gcc)
if ((${#missing[@]})); then
  [[ $(id -u) -eq 0 ]] || { log "a real node runs as root; missing Debian packages: ${missing[*]}"; exit 1; }
  log "installing ${missing[*]} (Debian packages)"
  export DEBIAN_FRONTEND=noninteractive
  apt=(apt-get -o DPkg::Lock::Timeout=300 -y -q)
  if ! "${apt[@]}" install "${missing[@]}" >&2; then
    "${apt[@]}" update >&2
    "${apt[@]}" install "${missing[@]}" >&2
  fi
fi
# Debian starts containerd as a service on install; the node runs its own,
# with its own socket and state, so the system one is left as it is.

use_cache "real-node/k8s-$KUBERNETES_VERSION-crictl-$CRICTL_VERSION"
exit_if_built
need_go "Go 1.25 or newer (Kubernetes $KUBERNETES_VERSION needs it)"

mkdir -p "$bin"
if command -v flock >/dev/null; then
  exec 9>"$out/.lock"
  flock 9
  exit_if_built
fi
work="$out/src"
rm -rf "$work"
started=$(date +%s)

write_k8s_module "$work/k8s" pakket.dev/real-node-build kubelet kube-proxy
for cmd in kubelet kube-proxy; do
  log "building $cmd"
  (cd "$work/k8s" && go build -tags tools -ldflags "$k8s_ldflags" -o "$bin/$cmd" "k8s.io/kubernetes/cmd/$cmd" >&2)
done

log "building crictl $CRICTL_VERSION"
GOFLAGS="-trimpath -buildvcs=false" GOBIN="$bin" \
  go install -ldflags "-s -w" "sigs.k8s.io/cri-tools/cmd/crictl@$CRICTL_VERSION" >&2

# pause: what every Pod's sandbox runs. Static, so its image holds nothing
# but this one file.
pause_source="$(go env GOMODCACHE)/k8s.io/kubernetes@$KUBERNETES_VERSION/build/pause/linux/pause.c"
[[ -f "$pause_source" ]] || { log "no $pause_source in the module cache"; exit 1; }
log "building pause"
gcc -Os -Wall -Werror -static -DVERSION="$KUBERNETES_VERSION" -o "$bin/pause" "$pause_source" >&2
strip "$bin/pause"

elapsed=$(( $(date +%s) - started ))
log "built in ${elapsed}s into $bin"
printf 'kubernetes=%s\ncrictl=%s\nbuild_seconds=%s\n' "$KUBERNETES_VERSION" "$CRICTL_VERSION" "$elapsed" >"$stamp"
echo "$bin"
