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

# write_k8s_module DIR MODULE CMD...: a Go module in DIR that builds the
# commands CMD... of k8s.io/kubernetes at the pinned KUBERNETES_VERSION.
# k8s.io/kubernetes is published with `replace k8s.io/<x> => ./staging/...`
# lines that do not apply to a module that requires it, so each staging
# module is replaced with its published v0.<minor>.<patch> tag, the list read
# from the pinned go.mod. Sets k8s_ldflags (version stamps, stripped).
write_k8s_module() {
  local dir=$1 module=$2
  shift 2
  local staging_version="v0.${KUBERNETES_VERSION#v1.}"
  local k8s_gomod go_directive minor pkg cmd
  k8s_gomod=$(go mod download -json "k8s.io/kubernetes@$KUBERNETES_VERSION" \
    | sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",\{0,1\}$/\1/p')
  [[ -f "$k8s_gomod" ]] || { log "could not download k8s.io/kubernetes@$KUBERNETES_VERSION"; exit 1; }
  go_directive=$(sed -n 's/^go \(.*\)$/\1/p' "$k8s_gomod")
  mkdir -p "$dir"
  {
    echo "module $module"
    echo
    echo "go $go_directive"
    echo
    echo "require k8s.io/kubernetes $KUBERNETES_VERSION"
    echo
    grep -E '^[[:space:]]*k8s\.io/[a-z0-9-]+ => \./staging/' "$k8s_gomod" \
      | awk -v v="$staging_version" '{ printf "replace %s => %s %s\n", $1, $1, v }'
  } >"$dir/go.mod"
  {
    echo "//go:build tools"
    echo
    echo "package tools"
    echo
    echo "import ("
    for cmd in "$@"; do echo "	_ \"k8s.io/kubernetes/cmd/$cmd\""; done
    echo ")"
  } >"$dir/tools.go"
  minor=${KUBERNETES_VERSION#v1.}
  minor=${minor%%.*}
  k8s_ldflags="-s -w"
  for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    k8s_ldflags+=" -X $pkg.gitVersion=$KUBERNETES_VERSION -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor"
    k8s_ldflags+=" -X $pkg.gitTreeState=clean -X $pkg.buildDate=1970-01-01T00:00:00Z"
  done
  log "resolving modules for ${*} $KUBERNETES_VERSION"
  (cd "$dir" && go mod tidy -e >&2 2>/dev/null || true)
  (cd "$dir" && go mod download >&2)
}
