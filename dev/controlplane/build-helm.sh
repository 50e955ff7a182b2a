#!/usr/bin/env bash
# Builds Helm (helm.sh/helm/v4 at HELM_VERSION) for the package provisioner,
# which renders Glasskube's Helm packages with `helm template` (no Flux, no
# network at render time), into a cache outside the repository. Idempotent:
# a second run with the same pin finds the stamp file and does nothing.
#
# A folder of its own (not one more binary in build.sh): build.sh's stamp
# says "these pins are built", and a Helm bump should rebuild Helm only.
#
# Prints the bin directory (holding helm) on stdout (and nothing else), so
# callers can do
#   bin=$(dev/controlplane/build-helm.sh)
set -euo pipefail

# shellcheck source=build-common.sh
source "$(dirname "$0")/build-common.sh"
use_cache "helm/helm-$HELM_VERSION"
if [[ -f "$stamp" ]]; then
  echo "$bin"
  exit 0
fi
need_go "Go 1.25 or newer (Helm $HELM_VERSION needs it)"

mkdir -p "$bin"
# Two test processes may ask at once on a fresh machine: the second waits
# for the first's build.
if command -v flock >/dev/null; then
  exec 9>"$out/.lock"
  flock 9
  if [[ -f "$stamp" ]]; then echo "$bin"; exit 0; fi
fi

started=$(date +%s)
# Helm's go.mod has no replace directives, so `go install module@version`
# builds it as its release pins it. Its version string is a linker flag in
# its Makefile; set it the same way so `helm version` tells the truth.
log "building helm $HELM_VERSION"
GOBIN="$bin" go install \
  -ldflags "-s -w -X helm.sh/helm/v4/internal/version.version=$HELM_VERSION" \
  "helm.sh/helm/v4/cmd/helm@$HELM_VERSION" >&2

elapsed=$(( $(date +%s) - started ))
log "built in ${elapsed}s into $bin"
printf 'helm=%s\nbuild_seconds=%s\n' "$HELM_VERSION" "$elapsed" >"$stamp"
echo "$bin"
