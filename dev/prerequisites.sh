#!/usr/bin/env bash
# Checks the toolchains Pakket builds with and installs the few system
# packages its scripts use. Idempotent; safe to run on every CI start.
set -euo pipefail

fail() { echo "prerequisites: $*" >&2; exit 1; }

command -v cargo >/dev/null || fail "cargo is not on PATH; install Rust with rustup (https://rustup.rs)"
command -v go >/dev/null || fail "go is not on PATH; install Go 1.26 or newer (https://go.dev/dl)"
for component in rustfmt clippy; do
  rustup component list --installed 2>/dev/null | grep -q "^$component" || rustup component add "$component" >&2
done
# The images' binaries are static (dev/images/build.sh): the musl target.
rustup target list --installed 2>/dev/null | grep -qx x86_64-unknown-linux-musl || rustup target add x86_64-unknown-linux-musl >&2

# Debian packages the scripts use; installed only when missing.
missing=()
# docker-registry: a real OCI registry on loopback for the image-source tests.
# gcc and make: jemalloc (pakket-resolveset's allocator) is built from C.
# openssl: the demo's package repository gets its own CA (dev/https-files).
for tool in curl:curl git:git docker-registry:docker-registry python3:python3 cc:gcc make:make openssl:openssl; do
  command -v "${tool%%:*}" >/dev/null || missing+=("${tool##*:}")
done
# musl-tools (musl-gcc): dev/images/build.sh compiles ring's and jemalloc's C for static musl binaries.
command -v musl-gcc >/dev/null || missing+=(musl-tools)
# ca-certificates: the CA bundle dev/images/build.sh puts in every image.
[[ -f /etc/ssl/certs/ca-certificates.crt ]] || missing+=(ca-certificates)
# python3-venv: dev/schemathesis/install.sh puts schemathesis in a venv.
python3 -c 'import venv, ensurepip' 2>/dev/null || missing+=(python3-venv)
# fonts-dejavu-core: the soak and fault reports' plots are labelled in DejaVu Sans.
[[ -f /usr/share/fonts/truetype/dejavu/DejaVuSans.ttf ]] || missing+=(fonts-dejavu-core)
# prometheus (with promtool): the monitoring test scrapes a provisioner and
# the webhooks, and proves deploy/monitoring's alerts (examples/plain/tests/monitoring.rs);
# it runs its own on a free port, whatever service the package starts.
command -v promtool >/dev/null || missing+=(prometheus)
# lua5.4: runs the Argo CD health checks (deploy/argocd) over their test data.
command -v lua5.4 >/dev/null || missing+=(lua5.4)
if ((${#missing[@]})); then
  if [[ $(id -u) -eq 0 ]]; then sudo=""; else sudo="sudo"; fi
  $sudo apt-get update -qq >&2 && $sudo apt-get install -y -qq "${missing[@]}" >&2
fi
echo "cargo $(cargo --version | cut -d' ' -f2), $(go version | cut -d' ' -f3)"
