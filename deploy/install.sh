#!/usr/bin/env bash
# Installs (or upgrades) Pakket in the cluster kubectl points at, with
# kubectl alone: the CRDs first (some of deploy/'s objects are of their
# kinds), then deploy/ (kustomize, built into kubectl) with the images
# pinned by digest, then waits until every Pakket Deployment is Available.
#
#   deploy/install.sh [--images FILE] [--cert-manager] [--timeout SECONDS]
#
# --images FILE   lines `pakket-webhooks=REGISTRY/pakket-webhooks@sha256:…`
#                 (dev/images/build.sh writes them); without it the
#                 manifests' own image names are used as they are.
# --cert-manager  serving certificates from cert-manager (which must run in
#                 the cluster) instead of the webhooks' own bootstrap.
#
# Run again with new digests, it upgrades: server-side apply changes what
# changed, the Deployments roll (their PodDisruptionBudgets and
# maxUnavailable: 0 keep a webhook answering), Instances stay. Kustomize
# rather than a Helm chart: an admin needs nothing but kubectl, and what is
# applied is the YAML in deploy/, which a test dry-runs against a real
# apiserver. deploy/uninstall.sh takes it all away again.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
images=""
cert_manager=false
timeout=300
usage() { echo "usage: $0 [--images FILE] [--cert-manager] [--timeout SECONDS]" >&2; exit 2; }
while [[ $# -gt 0 ]]; do
  case $1 in
    --images) [[ $# -ge 2 ]] || usage; images=$2; shift 2 ;;
    --cert-manager) cert_manager=true; shift ;;
    --timeout) [[ $# -ge 2 ]] || usage; timeout=$2; shift 2 ;;
    *) usage ;;
  esac
done
say() { echo "install.sh: $*" >&2; }
started=$(date +%s)

say "CRDs"
kubectl apply --server-side --force-conflicts -f "$here/../crds" >/dev/null
kubectl wait --for=condition=Established --timeout="${timeout}s" -f "$here/../crds" >/dev/null

# The kustomization applied: deploy/, with cert-manager's certificates if
# asked, the images pinned. Kustomize takes only relative paths.
overlay=$(mktemp -d)
trap 'rm -rf "$overlay"' EXIT
deploy=$(realpath --relative-to="$overlay" "$here")
{
  echo "apiVersion: kustomize.config.k8s.io/v1beta1"
  echo "kind: Kustomization"
  echo "resources:"
  echo "- $deploy"
  if $cert_manager; then
    echo "- $deploy/cert-manager"
    # The webhooks' bootstrap then makes the record key only, and the
    # webhooks read the Secret cert-manager writes.
    cat <<'EOF'
patches:
- target: {kind: Deployment, name: pakket-webhooks}
  patch: |-
    - op: replace
      path: /spec/template/spec/initContainers/0/args
      value: [bootstrap, --namespace=pakket-system, --record-key-to=/etc/pakket/record-key]
    - op: replace
      path: /spec/template/spec/volumes/0
      value: {name: tls, secret: {secretName: pakket-webhooks-tls}}
EOF
  fi
  if [[ -n $images ]]; then
    echo "images:"
    while IFS='=' read -r name ref; do
      [[ -z $name || $name == \#* ]] && continue
      [[ $ref == *@sha256:* ]] || { say "$images: $name=$ref is not pinned by digest (NAME=REPOSITORY@sha256:…)"; exit 2; }
      echo "- name: $name"
      echo "  newName: ${ref%@*}"
      echo "  digest: ${ref#*@}"
    done <"$images"
  fi
} >"$overlay/kustomization.yaml"

say "Pakket (webhooks, provisioners, resolveset)"
kubectl apply --server-side --force-conflicts -k "$overlay" >/dev/null
for deployment in $(kubectl -n pakket-system get deployments -l app.kubernetes.io/part-of=pakket -o name); do
  kubectl -n pakket-system rollout status "$deployment" --timeout="${timeout}s" >&2
done
say "all Pakket Deployments Available $(( $(date +%s) - started )) s after the first apply"
