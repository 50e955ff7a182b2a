#!/usr/bin/env bash
# Runs every Pakket test on a fresh machine: builds the pinned control plane
# (cached outside the repo), checks formatting, lints and the TLS provider,
# starts one real control plane for the whole run, and runs the workspace
# tests against it. CI (.ci/run) calls exactly this.
#
# `dev/test.sh --quick` is the edit loop: format, lint and every unit test
# (pure logic, no cluster, no Go builds, no images); the full run stays
# what CI and README run.
set -euo pipefail
cd "$(dirname "$0")/.."

quick=false
case "${1:-}" in
  --quick) quick=true ;;
  "") ;;
  *) echo "usage: dev/test.sh [--quick]" >&2; exit 2 ;;
esac

cache=${PAKKET_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/pakket}
# Cargo's build cache lives outside the repository so a fresh clone reuses it.
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$cache/cargo-target}
# One run at a time per cargo cache: the source times below and the pruning
# assume it. The lock is held by flock itself (-o), so no daemon started by
# the run can keep it.
# shellcheck source=dev/cache-lock.sh
source dev/cache-lock.sh
lock=$(cache_lock_file)
if [[ ${PAKKET_TEST_LOCK:-} != "$lock" ]]; then
  # Needed before dev/prerequisites.sh runs; util-linux is essential on
  # Debian, so this only speaks on a machine stripped below that.
  command -v flock >/dev/null \
    || { echo "dev/test.sh: flock is missing; install util-linux (apt-get install util-linux)" >&2; exit 1; }
  mkdir -p "$CARGO_TARGET_DIR"
  export PAKKET_TEST_LOCK=$lock
  flock -o -n "$lock" true \
    || echo "dev/test.sh: another run uses $CARGO_TARGET_DIR; waiting for it to end" >&2
  exec flock -o "$lock" "$PWD/dev/test.sh" "$@"
fi
# The shared build cache lives on: incremental data there only grows (gigabytes
# per week of commits) and buys little for whole-workspace builds.
export CARGO_INCREMENTAL=${CARGO_INCREMENTAL:-0}
export CARGO_TERM_COLOR=${CARGO_TERM_COLOR:-never}
# Snapshot tests (insta) find their snapshots under this checkout: a test
# binary cargo reuses from the shared cache may have been built in another
# checkout, whose path it carries.
export INSTA_WORKSPACE_ROOT=$PWD
step() { printf '\n== %s (%ss)\n' "$*" "$SECONDS"; }

# The shared test data (real catalogs, bundles, a package repository) lives
# beside the repository; tests read it through PAKKET_DATA.
if [[ -z ${PAKKET_DATA:-} ]]; then
  for candidate in "$PWD/../shared/data" /work/shared/data; do
    if [[ -f $candidate/README.md ]]; then PAKKET_DATA=$(cd "$candidate" && pwd); break; fi
  done
fi
[[ -n ${PAKKET_DATA:-} ]] || { echo "test data not found; set PAKKET_DATA to the shared data folder" >&2; exit 1; }
export PAKKET_DATA

step "toolchains"
dev/prerequisites.sh

step "source times"
# Cargo judges freshness by file times, and a fresh clone's are all new:
# files the cache has seen with the same content get their times back
# (dev/source-times.py says why that is sound). .ci/run tests a fresh clone
# and sets PAKKET_SOURCE_TIMES=restore; a working checkout's times only
# move forward.
restore=()
[[ ${PAKKET_SOURCE_TIMES:-} == restore ]] && restore=(--restore)
# Its own tests first, on throwaway repositories (about a second): a wrong
# time would pass a stale build as current, which no later test would see.
python3 dev/test-source-times.py -q
python3 dev/source-times.py "${restore[@]}" "$CARGO_TARGET_DIR/pakket-source-times.tsv"

# The provisioner an author writes outside the workspace (examples/author,
# shown in the runtime's guide): built, linted and tested with the rest.
author=(--manifest-path examples/author/Cargo.toml --locked)

if $quick; then
  step "format"
  cargo fmt --all -- --check
  cargo fmt --manifest-path examples/author/Cargo.toml -- --check
  step "lint"
  cargo clippy --workspace --all-targets --locked -- -D warnings
  cargo clippy "${author[@]}" --all-targets -- -D warnings
  step "unit tests"
  cargo test --workspace --locked --lib --bins
  cargo test "${author[@]}" --lib --bins
  step "done (quick: no integration tests; dev/test.sh runs them all)"
  exit 0
fi

run_dir=$(mktemp -d "${TMPDIR:-/tmp}/pakket-test-run.XXXXXX")
pakket_dev="$CARGO_TARGET_DIR/debug/pakket-dev"
go_builds=""
lint_lane=""
descendants() { # PID: every process below it, children first
  local child
  for child in $(pgrep -P "$1"); do
    echo "$child"
    descendants "$child"
  done
}
cleanup() {
  # Background work first: the Go builds and the lint lane, if still
  # running, with what they started (a `go build`, a `cargo clippy`), which
  # would otherwise run on, unread, after a run that failed early.
  local job
  for job in $go_builds $lint_lane; do
    # shellcheck disable=SC2046 # one PID per word
    kill "$job" $(descendants "$job") 2>/dev/null || true
  done
  # The others first, by name (the first's `down` would also stop them, as
  # their folders are inside the first's, but their own `down` says so).
  for control_plane in "$run_dir/third" "$run_dir/second" "$run_dir"; do
    "$pakket_dev" --dir "$control_plane" down >/dev/null 2>&1 || true
  done
  rm -rf "$run_dir"
}
trap cleanup EXIT

step "Go-built parts, in the background"
# The pinned Kubernetes parts (control plane; kube-scheduler and kwok for
# the shared control plane's fake node; helm; the real node's kubelet,
# kube-proxy, crictl and pause, with containerd, runc, the CNI plugins and
# iptables from Debian) and kstatus, built from their Go modules into the
# cache on first use, beside the cargo builds below: the Go builds wait on
# the module proxy and link on one core while cargo's wait on its slowest
# crates, so together they fill both cores. Each script prints its bin
# folder; the tests need them only once the builds are done.
mkdir -p "$run_dir/go"
(
  set -e
  dev/controlplane/build.sh >"$run_dir/go/controlplane"
  dev/controlplane/build-nodes.sh >"$run_dir/go/nodes"
  dev/controlplane/build-helm.sh >"$run_dir/go/helm"
  dev/controlplane/build-real-node.sh >"$run_dir/go/real-node"
  # The readiness test asks dev/kstatus/build.sh again, which finds it.
  dev/kstatus/build.sh >/dev/null
) >"$run_dir/go.log" 2>&1 &
go_builds=$!

step "format"
cargo fmt --all -- --check
cargo fmt --manifest-path examples/author/Cargo.toml -- --check

step "rustls uses ring only"
# `cargo tree -i` fails with "did not match any packages" when the crate is
# absent; any other outcome (a tree, or a different error) fails this step.
if tree=$(cargo tree --workspace --locked -e normal,build -i aws-lc-sys 2>&1); then
  echo "aws-lc-sys is in the dependency graph; keep rustls on the ring provider:" >&2
  echo "$tree" >&2
  exit 1
elif ! grep -q "did not match any packages" <<<"$tree"; then
  echo "cargo tree failed: $tree" >&2
  exit 1
fi
echo "aws-lc-sys: not in the graph"

step "build tests"
# Everything the run's debug builds need, here, once: the tests, the
# binaries (dev/in-cluster.sh and schemathesis build them again, and find
# them fresh) and the example provisioner's tests. What they name is kept;
# older builds in the cache go. A binary's path is the copy outside deps/
# (a hard link, which the next cargo call may point at its own build of
# the binary), so each file is identified by its inode, read as cargo names
# it.
built_inodes() {
  python3 -c 'import json, os, sys
for line in sys.stdin:
    message = json.loads(line)
    if message.get("reason") == "compiler-artifact" and message.get("executable"):
        print(os.stat(message["executable"]).st_ino, flush=True)'
}
json=(--message-format=json-render-diagnostics)
cargo test --workspace --locked --no-run "${json[@]}" | built_inodes >"$run_dir/built"
cargo build --workspace --locked --bins "${json[@]}" | built_inodes >>"$run_dir/built"
cargo test "${author[@]}" --no-run "${json[@]}" | built_inodes >>"$run_dir/built"
dev/prune-target.sh "$CARGO_TARGET_DIR" "$run_dir/built"
# The in-cluster test's static images, built now so that the test itself
# only pushes them (the same binaries and features it asks for), in the
# `images` profile: static musl binaries at the least compile time (the
# images a release publishes are built in `release`; docs/testing.md).
export PAKKET_IMAGE_PROFILE=images
PAKKET_TEST_IMAGES=1 dev/images/build.sh --build-only

step "Go-built parts"
if ! wait "$go_builds"; then
  cat "$run_dir/go.log" >&2
  echo "dev/test.sh: building the Go parts failed (above)" >&2
  exit 1
fi
go_builds=""
grep -E "built in|building kstatus" "$run_dir/go.log" || true
PAKKET_CONTROLPLANE_BIN=$(<"$run_dir/go/controlplane")
PAKKET_NODES_BIN=$(<"$run_dir/go/nodes")
PAKKET_HELM_BIN=$(<"$run_dir/go/helm")
PAKKET_REAL_NODE_BIN=$(<"$run_dir/go/real-node")
export PAKKET_CONTROLPLANE_BIN PAKKET_NODES_BIN PAKKET_HELM_BIN PAKKET_REAL_NODE_BIN

step "start the shared control plane"
"$pakket_dev" --dir "$run_dir" up --nodes 1 >/dev/null
export PAKKET_TEST_KUBECONFIG="$run_dir/kubeconfig"
"$pakket_dev" --dir "$run_dir" status
# The second, for the slowest test binaries (they run beside the others);
# the third, for the binaries that follow the in-cluster test in its lane.
"$pakket_dev" --dir "$run_dir/second" up --nodes 1 >/dev/null
"$pakket_dev" --dir "$run_dir/third" up --nodes 1 >/dev/null

step "tests, and lint and docs beside them"
# Lint and docs first, in the background, at the lowest CPU priority: they
# compile nothing the tests run (clippy and rustdoc check, cargo builds),
# so they fill the cores the tests leave idle instead of holding the tests
# back, in a target folder of their own (cargo locks its target folder
# while it compiles, and the test lanes start below). Their result is
# awaited, and fails the run, after the tests. The lane lowers its own
# priority, so that every process it starts inherits it and one renice
# (below, once a test lane is done) raises them all.
lint_log=$run_dir/lint.log
(
  renice -n 19 -p "$BASHPID" >/dev/null
  export CARGO_TARGET_DIR=$cache/cargo-target-lint
  set -e
  cargo clippy --workspace --all-targets --locked -- -D warnings
  cargo clippy "${author[@]}" --all-targets -- -D warnings
  # What a provisioner author reads: broken or private links fail the run.
  RUSTDOCFLAGS="-D warnings" cargo doc --workspace --no-deps --locked
) >"$lint_log" 2>&1 &
lint_lane=$!
lint_at_normal_priority() {
  # Measured cold: at the lowest priority to the end, lint and docs ended
  # two minutes after the last test lane (docs/testing.md). Once one lane
  # is done a core is free for them. Lowering a niceness needs root (CI's
  # case); elsewhere they stay low, which costs time and not a result.
  # shellcheck disable=SC2046 # one PID per word
  renice -n 0 -p "$lint_lane" $(descendants "$lint_lane") >/dev/null 2>&1 || true
}
# Three lanes of tests at once, since most of a test's time is spent
# waiting for controllers and Pods, not computing, each about as long as
# the others (measured: docs/testing.md):
# - the in-cluster test (its own control plane, a real node, Pakket's
#   images), then the real-node test (it needs the machine's one bridge,
#   as the in-cluster test does), then the binaries `follow` names on the
#   third shared control plane;
# - the slowest test binaries (`beside`) on the second, then the resolver
#   API under schemathesis against it;
# - every other test on the first.
# Every cargo call selects the whole workspace and then picks targets, so
# features resolve as in the build above and nothing compiles again.
beside=(packages resolve_server soak faults restarts)
follow=(install trust cluster)
targets() { # --test NAME for every integration test but the NAMES given
  cargo metadata --no-deps --format-version 1 --locked | python3 -c '
import json, sys
skip = set(sys.argv[1:])
tests = {t["name"] for p in json.load(sys.stdin)["packages"] for t in p["targets"] if "test" in t["kind"]}
print("\n".join(f"--test\n{name}" for name in sorted(tests - skip)))' "$@"
}
other_targets=$(targets "${beside[@]}" "${follow[@]}" in_cluster real_node)
mapfile -t other_targets <<<"$other_targets"
beside_targets=()
for name in "${beside[@]}"; do beside_targets+=(--test "$name"); done
follow_targets=()
for name in "${follow[@]}"; do follow_targets+=(--test "$name"); done

in_cluster_log=$run_dir/in-cluster.log
{
  cargo test --workspace --locked --test in_cluster &&
    cargo test --workspace --locked --test real_node &&
    PAKKET_TEST_KUBECONFIG=$run_dir/third/kubeconfig \
      cargo test --workspace --locked "${follow_targets[@]}"
} >"$in_cluster_log" 2>&1 &
in_cluster=$!
beside_log=$run_dir/beside.log
{
  PAKKET_TEST_KUBECONFIG=$run_dir/second/kubeconfig \
    cargo test --workspace --locked "${beside_targets[@]}" &&
    echo "== resolver API under schemathesis (60 s)" &&
    cargo build --locked --quiet --bin pakket-resolveset &&
    dev/schemathesis/run.sh "$run_dir/second/kubeconfig" 60
} >"$beside_log" 2>&1 &
beside_lane=$!
lane_done() { # PID LOG TITLE: waits, then prints the lane's output
  local status=0
  wait "$1" || status=$?
  printf '\n== %s (%ss)\n' "$3" "$SECONDS"
  cat "$2"
  return "$status"
}
tests_log=$run_dir/tests.log
failed=false
{
  cargo test --workspace --locked --lib --bins "${other_targets[@]}" &&
    cargo test --workspace --locked --doc
} 2>&1 | tee "$tests_log" || failed=true
printf '\n== every other test done (%ss)\n' "$SECONDS"
lint_at_normal_priority
lane_done "$beside_lane" "$beside_log" "the slowest binaries (${beside[*]}), then schemathesis, beside the others" || failed=true
lane_done "$in_cluster" "$in_cluster_log" "the in-cluster test, the real-node test, then ${follow[*]}, beside the others" || failed=true
lane_done "$lint_lane" "$lint_log" "lint (clippy -D warnings) and docs (cargo doc -D warnings), beside the tests" || failed=true
lint_lane=""
cat "$beside_log" "$in_cluster_log" >>"$tests_log"
if $failed; then exit 1; fi
# The slowest test binaries, for README's list and for whoever makes the
# run faster: each binary's own time, as cargo's harness reports it.
step "slowest test binaries"
dev/slowest-tests.sh "$tests_log" 12

step "the example provisioner outside the workspace"
cargo test "${author[@]}"

step "done"
