#!/usr/bin/env bash
# Removes Pakket from the cluster kubectl points at, leaving nothing of it.
#
#   deploy/uninstall.sh [--delete-content] [--timeout SECONDS]
#
# Content first, while the provisioners still run: an Instance's finalizer
# is how its provisioner deletes what it installed, so removing Pakket with
# Instances left would strand their objects (and their finalizers would
# hold the CRDs' deletion forever). With Instances (or the Operators,
# Packages and Inputs that make them) in the cluster it stops and lists
# them, unless --delete-content: then those go first (the porcelain, then
# every Instance, overriding the in-use check as the admin running this),
# and with them everything they installed. Then deploy/'s objects, the
# CRDs, and the namespace with the Secrets the webhooks' bootstrap made.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
delete_content=false
timeout=300
usage() { echo "usage: $0 [--delete-content] [--timeout SECONDS]" >&2; exit 2; }
while [[ $# -gt 0 ]]; do
  case $1 in
    --delete-content) delete_content=true; shift ;;
    --timeout) [[ $# -ge 2 ]] || usage; timeout=$2; shift 2 ;;
    *) usage ;;
  esac
done
say() { echo "uninstall.sh: $*" >&2; }

# Kinds whose objects make Instances (namespace owners' requests and
# charts first: each makes an Operator or an Instance, and holds a
# finalizer its provisioner removes), then Instances themselves.
porcelain=(operatorrequests.operators.pakket.dev helmcharts.helm.pakket.dev
  operators.operators.pakket.dev packages.packages.pakket.dev
  clusterpackages.packages.pakket.dev inputs.resolve.pakket.dev)
listed() { kubectl get "$1" -A -o name 2>/dev/null || true; }

content=""
for kind in "${porcelain[@]}" instances.core.pakket.dev; do
  content+=$(listed "$kind")$'\n'
done
content=$(sed '/^$/d' <<<"$content")
if [[ -n $content ]]; then
  if ! $delete_content; then
    say "Pakket still manages content; deleting Pakket would strand it:"
    sed 's/^/  /' <<<"$content" >&2
    say "delete those first, or run again with --delete-content to delete them and everything they installed"
    exit 1
  fi
  for kind in "${porcelain[@]}"; do
    kubectl delete "$kind" --all -A --wait --timeout="${timeout}s" >/dev/null 2>&1 || true
  done
  # The in-use check would refuse Instances whose APIs are used (by each
  # other, or by objects about to go with them): the admin says why.
  kubectl annotate instances --all --overwrite \
    "core.pakket.dev/delete-in-use=uninstalling Pakket (deploy/uninstall.sh)" >/dev/null
  kubectl delete instances --all --wait --timeout="${timeout}s" >/dev/null
  say "content deleted"
fi

# deploy/ as install.sh applied it (cert-manager's objects too, if there).
kubectl delete -k "$here" --ignore-not-found --wait --timeout="${timeout}s" >/dev/null
kubectl delete -k "$here/cert-manager" --ignore-not-found --wait --timeout="${timeout}s" >/dev/null 2>&1 || true
kubectl delete -f "$here/../crds" --ignore-not-found --wait --timeout="${timeout}s" >/dev/null

left=$(kubectl get clusterroles,clusterrolebindings,validatingwebhookconfigurations,mutatingwebhookconfigurations \
  -l app.kubernetes.io/part-of=pakket -o name 2>/dev/null || true)
left+=$'\n'$(kubectl get -f "$here/../crds" --ignore-not-found -o name 2>/dev/null || true)
if kubectl get namespace pakket-system >/dev/null 2>&1; then
  left+=$'\n'"namespace/pakket-system"
fi
left=$(sed '/^$/d' <<<"$left")
if [[ -n $left ]]; then
  say "left behind (delete by hand):"
  sed 's/^/  /' <<<"$left" >&2
  exit 1
fi
say "Pakket removed"
