#!/usr/bin/env bash
# Starts a private OCI registry for tests and demos: Debian's docker-registry
# (CNCF distribution 2.8), listening on 127.0.0.1 at a port the kernel picks,
# with its own config and storage under DIR. Prints `127.0.0.1:PORT`.
#
#   dev/registry/start.sh DIR [--auth USER:PASSWORD] [--host ADDRESS]
#   dev/registry/stop.sh DIR
#
# It serves plain HTTP, on loopback only: nothing leaves the host, and
# Pakket's OCI source allows plain HTTP to loopback registries by default
# (`pakket bundle push --plain-http`). With --auth it requires HTTP basic
# auth (htpasswd, bcrypt). --host listens on another local address instead
# of 127.0.0.1 (a real node's 10.244.0.1, which its Pods reach; still not
# reachable from outside the machine). Idempotent: if DIR's registry is running, it
# prints its address again. Files in DIR: config.yml, data/, registry.log,
# pid, address (and htpasswd).
set -euo pipefail

usage() { echo "usage: $0 DIR [--auth USER:PASSWORD] [--host ADDRESS]" >&2; exit 2; }
[[ $# -ge 1 ]] || usage
dir=$1; shift
auth=""
host=127.0.0.1
while [[ $# -gt 0 ]]; do
  case $1 in
    --auth) [[ $# -ge 2 ]] || usage; auth=$2; shift 2 ;;
    --host) [[ $# -ge 2 ]] || usage; host=$2; shift 2 ;;
    *) usage ;;
  esac
done

registry_bin=/usr/bin/docker-registry

# Install the registry once. Test binaries may call this in parallel, so
# installs take a lock, and apt waits for dpkg's own lock too.
if [[ ! -x $registry_bin ]]; then
  (
    flock 9
    if [[ ! -x $registry_bin ]]; then
      echo "installing docker-registry (Debian package)..." >&2
      export DEBIAN_FRONTEND=noninteractive
      apt=(apt-get -o DPkg::Lock::Timeout=300 -y -q)
      if ! "${apt[@]}" install docker-registry >&2; then
        "${apt[@]}" update >&2
        "${apt[@]}" install docker-registry >&2
      fi
    fi
  ) 9>"${TMPDIR:-/tmp}/pakket-docker-registry-install.lock"
fi

mkdir -p "$dir/data"
dir=$(cd "$dir" && pwd)

# Already running? (The pid must still be our registry, not a reused pid.)
if [[ -f $dir/pid && -f $dir/address ]]; then
  pid=$(<"$dir/pid")
  if [[ -r /proc/$pid/cmdline ]] && tr '\0' ' ' <"/proc/$pid/cmdline" | grep -qF "$dir/config.yml"; then
    cat "$dir/address"
    exit 0
  fi
fi
rm -f "$dir/pid" "$dir/address"

auth_config=""
if [[ -n $auth ]]; then
  user=${auth%%:*}
  password=${auth#*:}
  [[ -n $user && $user != "$auth" ]] || { echo "--auth wants USER:PASSWORD" >&2; exit 2; }
  # bcrypt through libc's crypt(3) (libxcrypt), which the registry's htpasswd reader accepts.
  salt=$(tr -dc './A-Za-z0-9' </dev/urandom 2>/dev/null | head -c 22 || true)
  hash=$(PASSWORD=$password SALT=$salt perl -e 'print crypt($ENV{PASSWORD}, "\$2b\$10\$$ENV{SALT}")')
  [[ $hash == '$2b$'* ]] || { echo "could not compute a bcrypt hash (libxcrypt)" >&2; exit 1; }
  printf '%s:%s\n' "$user" "$hash" >"$dir/htpasswd"
  auth_config="auth:
  htpasswd:
    realm: pakket-test
    path: $dir/htpasswd"
fi

# Port 0: the kernel picks a free port at bind time, so parallel registries
# never collide; the registry logs the address it got.
cat >"$dir/config.yml" <<YAML
version: 0.1
log:
  level: info
  formatter: text
  accesslog:
    disabled: true
storage:
  filesystem:
    rootdirectory: $dir/data
  delete:
    enabled: true
http:
  addr: $host:0
  # A fixed secret silences the warning about a random one; it only signs
  # upload state, and this registry is never behind a load balancer.
  secret: pakket-dev-registry-$$
$auth_config
YAML

: >"$dir/registry.log"
setsid "$registry_bin" serve "$dir/config.yml" </dev/null >>"$dir/registry.log" 2>&1 &
pid=$!
echo "$pid" >"$dir/pid"

for _ in $(seq 1 200); do
  address=$(sed -n "s/.*msg=\"listening on \(${host//./\\.}:[0-9][0-9]*\)\".*/\1/p" "$dir/registry.log" | sed -n 1p)
  if [[ -n $address ]]; then
    echo "$address" >"$dir/address"
    echo "$address"
    exit 0
  fi
  if ! kill -0 "$pid" 2>/dev/null; then
    echo "docker-registry exited during start-up; its log ($dir/registry.log):" >&2
    tail -n 20 "$dir/registry.log" >&2
    rm -f "$dir/pid"
    exit 1
  fi
  sleep 0.05
done
echo "docker-registry did not report its address within 10 s; its log ($dir/registry.log):" >&2
tail -n 20 "$dir/registry.log" >&2
kill "$pid" 2>/dev/null || true
rm -f "$dir/pid"
exit 1
