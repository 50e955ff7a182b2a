#!/usr/bin/env bash
# Builds and pushes the images deploy/ names (pakket-webhooks, pakket-plain,
# pakket-registry-v1, pakket-resolveset, pakket-package, pakket-helm) with
# no Docker daemon: each is one static musl binary (and, for pakket-package
# and pakket-helm, Helm)
# packed by `pakket image push` into a single reproducible layer, so the same
# sources give the same digests on any machine.
#
#   dev/images/build.sh REGISTRY [OUT_FILE]
#   dev/images/build.sh --build-only   the static binaries only, nothing
#                                      pushed (dev/test.sh builds them
#                                      before the tests start)
#
# REGISTRY is host:port, e.g. the address dev/registry/start.sh prints.
# A registry on loopback or on another of this machine's own addresses
# (a real node's bridge, 10.244.0.1) gets plain HTTP, which never leaves
# the machine; any other gets HTTPS, with PAKKET_REGISTRY_USERNAME and
# PAKKET_REGISTRY_PASSWORD if it needs a login. With PAKKET_IMAGE_LABEL set,
# every image gets that label, hence new digests from the same sources (an
# upgrade test's "new release").
# With PAKKET_TEST_IMAGES=1, the test operator's admission server
# (pakket-e2e-admission, from dev/e2e) is built in the same cargo run and
# pushed too; the in-cluster test installs it as an operator's webhook.
# OUT_FILE (default $CARGO_TARGET_DIR/images/images.env) gets one line per
# image, pinned: `pakket-webhooks=REGISTRY/pakket-webhooks@sha256:…`.
# Safe to rerun: cargo rebuilds nothing that is up to date, a push of the
# same content gives the same digest, and OUT_FILE is replaced whole.
set -euo pipefail

build_only=false
[[ ${1:-} == --build-only && $# -eq 1 ]] && build_only=true
[[ $# -ge 1 && $# -le 2 ]] || { echo "usage: $0 REGISTRY [OUT_FILE] | $0 --build-only" >&2; exit 2; }
registry=${1%/}
log() { echo "${0##*/}: $*" >&2; }
fail() { log "$*"; exit 1; }

repo=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=dev/cargo-env.sh
source "$repo/dev/cargo-env.sh"
# shellcheck source=dev/cache-lock.sh
source "$repo/dev/cache-lock.sh"
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$HOME/.cache/pakket/cargo-target}
export CARGO_INCREMENTAL=${CARGO_INCREMENTAL:-0}
out_file=${2:-$CARGO_TARGET_DIR/images/images.env}
# The tag deploy/*.yaml names.
tag=0.1.0
target=x86_64-unknown-linux-musl
names=(webhooks plain registry-v1 resolveset package helm)
test_names=()
[[ ${PAKKET_TEST_IMAGES:-} == 1 ]] && test_names=(e2e-admission)

rustup target list --installed 2>/dev/null | grep -qx "$target" \
  || fail "the Rust target $target is missing; run dev/prerequisites.sh (or rustup target add $target)"
# ring's and jemalloc's C must be compiled against musl too; cc-rs and
# jemalloc's configure find the compiler through this variable.
command -v musl-gcc >/dev/null \
  || fail "musl-gcc is missing; run dev/prerequisites.sh (or apt-get install musl-tools)"
export CC_x86_64_unknown_linux_musl=musl-gcc

if $build_only; then
  registry=localhost
fi
host=${registry%:*}
host=${host#[}
host=${host%]}
if [[ $host == localhost || $host == 127.* || $host == ::1 ]]; then
  transport=(--plain-http)
elif ip -o addr show 2>/dev/null | awk '{print $4}' | cut -d/ -f1 | grep -qxF "$host"; then
  # pakket calls this insecure because it cannot know the address is
  # ours; the kernel delivers to its own addresses locally.
  transport=(--insecure-plain-http)
else
  transport=()
fi
scheme=http
((${#transport[@]})) || scheme=https
labels=()
if [[ -n ${PAKKET_IMAGE_LABEL:-} ]]; then
  labels=(--label "dev.pakket.image-label=$PAKKET_IMAGE_LABEL")
fi

# The cargo profile: `release` for what is published; dev/test.sh asks for
# `images` (Cargo.toml: static too, unoptimized, a fraction of the build).
profile=${PAKKET_IMAGE_PROFILE:-release}
case $profile in
  release | images) ;;
  *) fail "PAKKET_IMAGE_PROFILE=$profile: use release (the default) or images" ;;
esac

started=$(date +%s)
bins=(--bin pakket)
for name in "${names[@]}" "${test_names[@]}"; do bins+=(--bin "pakket-$name"); done
# `pakket` itself comes from the same build: one feature resolution, one
# set of dependencies compiled, and it is static too. Every core by default:
# the build is most of the in-cluster test's time, and nothing else runs
# beside it there; PAKKET_IMAGE_BUILD_JOBS=1 keeps a busy machine usable.
jobs=${PAKKET_IMAGE_BUILD_JOBS:-$(nproc)}
log "building $((${#names[@]} + ${#test_names[@]} + 1)) static binaries for $target ($profile, $jobs jobs)"
(cd "$repo" && cache_locked cargo build --profile "$profile" --locked --target "$target" -j "$jobs" "${bins[@]}")
bin_dir=$CARGO_TARGET_DIR/$target/$profile
if $build_only; then
  log "built in $(($(date +%s) - started))s (nothing pushed: --build-only)"
  exit 0
fi

# No program interpreter: the images hold no libc or loader. (readelf's
# output is read through a process substitution: in a pipe under pipefail,
# readelf cut off by grep -q's early exit would turn a dynamic binary's
# match into "static".)
is_static() { ! grep -q 'program interpreter' <(readelf -l "$1" 2>/dev/null); }
for name in pakket "${names[@]/#/pakket-}" "${test_names[@]/#/pakket-}"; do
  is_static "$bin_dir/$name" || fail "$bin_dir/$name is dynamically linked; the images have no libc"
done

# pakket-package and pakket-helm render charts with `helm template` (found
# on PATH).
helm=$("$repo/dev/controlplane/build-helm.sh")/helm
is_static "$helm" \
  || fail "$helm is dynamically linked; rebuild it with CGO_ENABLED=0 (dev/controlplane/build-helm.sh)"
built=$(date +%s)

mkdir -p "$(dirname "$out_file")"
pinned_refs=$(mktemp "$out_file.XXXXXX")
trap 'rm -f "$pinned_refs"' EXIT
printf '%-20s %12s  %s\n' image "layer bytes" "digest (layer: gzip'd, as stored)" >&2
for name in "${names[@]}" "${test_names[@]}"; do
  image=pakket-$name
  binaries=(--binary "$bin_dir/$image")
  if [[ $name == package || $name == helm ]]; then
    # After pakket-package, so that it stays the entrypoint.
    binaries+=(--binary "$helm")
  fi
  pushed=$("$bin_dir/pakket" image push "$registry/$image:$tag" "${transport[@]}" "${labels[@]}" "${binaries[@]}")
  digest=${pushed##*@}
  echo "$image=$registry/$image@$digest" >>"$pinned_refs"
  # The compressed size as stored, read back from the registry's manifest.
  size=$(curl -fsS -H 'Accept: application/vnd.oci.image.manifest.v1+json' \
      "$scheme://$registry/v2/$image/manifests/$digest" 2>/dev/null \
    | python3 -c 'import json, sys; print(sum(l["size"] for l in json.load(sys.stdin)["layers"]))' 2>/dev/null) \
    || size="?"
  printf '%-20s %12s  %s\n' "$image" "$size" "$digest" >&2
done
chmod 644 "$pinned_refs"
mv "$pinned_refs" "$out_file"
trap - EXIT

finished=$(date +%s)
log "built in $((built - started))s, pushed in $((finished - built))s; pinned refs in $out_file"
