# shellcheck shell=bash
# The start build.sh and build-nodes.sh share; sourced by both, never run.
# It reads the pins (versions.env) and gives:
#   log MESSAGE         on stderr, prefixed with the script's name (stdout
#                       carries only the bin directory);
#   use_cache FOLDER    sets out, bin and stamp for FOLDER in the cache,
#                       outside the repository;
#   exit_if_built       prints the bin directory and exits if the stamp,
#                       written last, says these pins are built there;
#   need_go VERSION     fails, saying which Go to install, if go is missing.

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=versions.env
source "$here/versions.env"

log() { echo "${0##*/}: $*" >&2; }

use_cache() {
  local cache_root=${PAKKET_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/pakket}
  out="$cache_root/$1"
  bin="$out/bin"
  stamp="$bin/.complete"
}

exit_if_built() {
  if [[ -f "$stamp" ]]; then
    echo "$bin"
    exit 0
  fi
}

need_go() {
  command -v go >/dev/null || { log "go is not on PATH; install $1"; exit 1; }
}

# Go's own module and build caches (outside the repo) make the second build fast.
export GOFLAGS="-trimpath -buildvcs=false -mod=mod"
export CGO_ENABLED=0
