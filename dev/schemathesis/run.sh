#!/usr/bin/env bash
# Fuzzes the resolver API with schemathesis, bounded in time: the real
# pakket-resolveset serving a real Catalog (two packages of
# community-operators-prod v4.20 from ../shared/data, through an immutable
# ConfigMap) on the control plane KUBECONFIG names, on loopback. Fails on
# any 5xx and on any response that does not match /openapi.json.
#
#   dev/schemathesis/run.sh KUBECONFIG [SECONDS]
#
# Needs PAKKET_DATA and the debug binaries built (dev/test.sh does both).
set -euo pipefail
cd "$(dirname "$0")/../.."
kubeconfig=$1
budget=${2:-60}
st=$(dev/schemathesis/install.sh)
bin=${CARGO_TARGET_DIR:?}/debug
kubectl=("$PAKKET_CONTROLPLANE_BIN/kubectl" --kubeconfig "$kubeconfig")
work=$(mktemp -d "${TMPDIR:-/tmp}/pakket-schemathesis.XXXXXX")
namespace=pakket-schemathesis-$$
catalog=schemathesis-$$
pid=
cleanup() {
  [[ -n $pid ]] && kill "$pid" 2>/dev/null
  "${kubectl[@]}" delete catalog "$catalog" --ignore-not-found --wait=false >/dev/null 2>&1 || true
  "${kubectl[@]}" delete namespace "$namespace" --ignore-not-found --wait=false >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT

"${kubectl[@]}" apply --server-side --force-conflicts -f crds/ >/dev/null
"${kubectl[@]}" wait --for=condition=Established --timeout=30s -f crds/ >/dev/null
"${kubectl[@]}" create namespace "$namespace" >/dev/null
# Two small real packages (unedited files from ../shared/data).
source=$PAKKET_DATA/fbc/community-operators-prod-v4.20
"${kubectl[@]}" -n "$namespace" create configmap catalog --dry-run=client -o json \
  --from-file=kubevirt-wol.yaml="$source/kubevirt-wol/catalog.yaml" \
  --from-file=clusterpulse.yaml="$source/clusterpulse/catalog.yaml" |
  python3 -c 'import json,sys; d=json.load(sys.stdin); d["immutable"]=True; d["metadata"]["labels"]={"resolve.pakket.dev/catalog-content": "true"}; print(json.dumps(d))' |
  "${kubectl[@]}" create -f - >/dev/null
"${kubectl[@]}" create -f - >/dev/null <<EOF
apiVersion: resolve.pakket.dev/v1alpha1
kind: Catalog
metadata: {name: $catalog}
spec:
  source: {configMap: {name: catalog, namespace: $namespace}}
EOF

port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
probes=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
KUBECONFIG=$kubeconfig "$bin/pakket-resolveset" --store "$work/store" \
  --lease-namespace "$namespace" --probe-address "127.0.0.1:$probes" \
  --api-address "127.0.0.1:$port" --api-insecure-loopback >"$work/resolveset.log" 2>&1 &
pid=$!
for _ in $(seq 1 300); do
  if curl -sf "http://127.0.0.1:$port/v1/catalogs" 2>/dev/null | grep "$catalog" >/dev/null; then break; fi
  kill -0 "$pid" 2>/dev/null || { cat "$work/resolveset.log" >&2; exit 1; }
  sleep 0.1
done
# (grep reads all of it, not -q: under pipefail, curl cut off by an early
# grep exit would fail the check.)
curl -sf "http://127.0.0.1:$port/v1/catalogs" | grep "$catalog" >/dev/null || {
  echo "the resolver API never served Catalog $catalog" >&2; cat "$work/resolveset.log" >&2; exit 1; }

# Checks: no 5xx, and every response as the document says. The API refuses
# some schema-valid bodies with 400 by contract (an empty versionRange, a
# lone olm.channel), so schemathesis's "schema-valid request rejected"
# check is left out.
# From the scratch folder: schemathesis writes a .schemathesis/ of its own.
cd "$work"
"$st" run "http://127.0.0.1:$port/openapi.json" \
  --checks not_a_server_error,response_schema_conformance,status_code_conformance,content_type_conformance \
  --max-time "$budget" --request-timeout 10 --generation-database none --seed 1 \
  --phases examples,coverage,fuzzing
