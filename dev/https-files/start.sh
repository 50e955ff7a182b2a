#!/usr/bin/env bash
# Serves a folder's files over HTTPS on loopback, for demos: a Glasskube
# package repository (../shared/data/glasskube-packages/packages) the way
# glasskube.github.io serves it. Prints `https://127.0.0.1:PORT/`.
#
#   dev/https-files/start.sh DIR FOLDER
#   dev/https-files/stop.sh DIR
#
# DIR holds its own CA (ca.pem: give it to a client as an extra root),
# the server's certificate for 127.0.0.1, the log, the pid and the
# address. The certificates are made once with openssl; the server is
# Python's http.server behind its ssl module (both on every Debian). It
# serves GET only, from FOLDER only, and listens on loopback only.
# Idempotent: if DIR's server is running, it prints its address again.
set -euo pipefail

[[ $# -eq 2 ]] || { echo "usage: $0 DIR FOLDER" >&2; exit 2; }
mkdir -p "$1"
dir=$(cd "$1" && pwd)
folder=$(cd "$2" && pwd)

if [[ -f $dir/pid && -f $dir/address ]]; then
  pid=$(<"$dir/pid")
  if [[ -r /proc/$pid/cmdline ]] && tr '\0' ' ' <"/proc/$pid/cmdline" | grep -qF "$dir/server.pem"; then
    cat "$dir/address"
    exit 0
  fi
fi
rm -f "$dir/pid" "$dir/address"

if [[ ! -f $dir/server.pem ]]; then
  openssl req -x509 -newkey rsa:2048 -nodes -days 3650 -subj "/CN=pakket demo CA" \
    -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign" \
    -keyout "$dir/ca.key" -out "$dir/ca.pem" 2>/dev/null
  openssl req -newkey rsa:2048 -nodes -subj "/CN=127.0.0.1" \
    -keyout "$dir/server.key" -out "$dir/server.csr" 2>/dev/null
  printf 'subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth\n' >"$dir/server.ext"
  openssl x509 -req -in "$dir/server.csr" -CA "$dir/ca.pem" -CAkey "$dir/ca.key" \
    -CAcreateserial -days 3650 -extfile "$dir/server.ext" -out "$dir/server.pem" 2>/dev/null
fi

nohup python3 - "$folder" "$dir/server.pem" "$dir/server.key" "$dir/address" >"$dir/server.log" 2>&1 <<'PY' &
import functools, http.server, ssl, sys
folder, cert, key, address_file = sys.argv[1:5]
handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=folder)
server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
context.load_cert_chain(cert, key)
server.socket = context.wrap_socket(server.socket, server_side=True)
with open(address_file, "w") as out:
    out.write(f"https://127.0.0.1:{server.server_address[1]}/\n")
server.serve_forever()
PY
echo $! >"$dir/pid"
for _ in $(seq 1 100); do [[ -s $dir/address ]] && break; sleep 0.05; done
[[ -s $dir/address ]] || { echo "the HTTPS server did not start; see $dir/server.log" >&2; exit 1; }
cat "$dir/address"
