# Sourced by the scripts that build into the shared cargo cache
# (~/.cache/pakket/cargo-target): dev/test.sh, dev/demo.sh,
# dev/in-cluster.sh, dev/images/build.sh.
#
# dev/test.sh holds a lock on the cache for its whole run: its tests run the
# binaries it built, its prune keeps what it built, and its source times
# assume nothing else builds meanwhile. A demo started from another checkout
# during a test run would otherwise replace those binaries under the tests.

# The lock of the cache in $CARGO_TARGET_DIR.
cache_lock_file() {
  echo "$CARGO_TARGET_DIR/.pakket-test.lock"
}

# cache_locked CMD...: runs CMD holding the cache's lock, waiting (and saying
# so) while a test run holds it. Inside dev/test.sh, which holds it already,
# CMD runs at once.
cache_locked() {
  local lock fd status=0
  lock=$(cache_lock_file)
  if [[ ${PAKKET_TEST_LOCK:-} == "$lock" ]]; then
    "$@"
    return
  fi
  mkdir -p "$CARGO_TARGET_DIR"
  exec {fd}>>"$lock"
  if ! flock -n "$fd"; then
    echo "${0##*/}: a test run uses $CARGO_TARGET_DIR; waiting for it to end before building" >&2
    flock "$fd"
  fi
  "$@" || status=$?
  flock -u "$fd"
  exec {fd}>&-
  return "$status"
}
