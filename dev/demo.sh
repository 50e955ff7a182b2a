#!/usr/bin/env bash
# The Pakket demo on a fresh machine: builds and starts a real control plane
# on loopback (with one kwok node, so Deployments become Available), installs
# Pakket's CRDs, runs the plain provisioner, and installs a plain bundle end
# to end (it waits for approval, is approved, installs); then runs the
# registry-v1 provisioner and installs a real OLM operator bundle (etcd
# 0.9.4, from ../shared/data) pushed to a local registry; then runs the
# package provisioner against a loopback HTTPS copy of the real Glasskube
# package repository (../shared/data), where alice, who owns only her
# namespace, installs Apache Tika as a Package.
#
#   dev/demo.sh         bring it up (again: reuses what is running)
#   dev/demo.sh down    stop it
#   dev/demo.sh in-cluster       the second mode: Pakket from its images, as
#                                Pods on a real node (root), installed with
#                                deploy/install.sh; then a plain bundle
#                                through approval
#   dev/demo.sh in-cluster-down  stop that
set -euo pipefail
cd "$(dirname "$0")/.."

if [[ ${1:-} == in-cluster-down ]]; then
  exec dev/in-cluster.sh down
fi
if [[ ${1:-} == in-cluster ]]; then
  say() { printf '\n\033[1m%s\033[0m\n' "$*"; }
  say "Pakket in the cluster: a real node, Pakket's images built and pushed, deploy/install.sh (the first time builds static release binaries: minutes)"
  eval "$(dev/in-cluster.sh up)"
  say "kubectl -n pakket-system get pods: Pakket runs as Pods, from images pinned by digest"
  kubectl -n pakket-system get pods -o wide
  kubectl -n pakket-system get deployments -o custom-columns=NAME:.metadata.name,IMAGE:.spec.template.spec.containers[0].image
  say "A class that wants approval, and the plain bundle 'hello'"
  kubectl apply -f - <<'YAML'
apiVersion: core.pakket.dev/v1alpha1
kind: ProvisionerClass
metadata: {name: plain}
spec:
  provisioner: pakket.dev/plain
  parameters: {approval: DenyAll}
YAML
  kubectl apply -f examples/plain/hello.yaml
  for _ in $(seq 1 300); do
    [[ $(kubectl get instance hello -o jsonpath='{.status.conditions[?(@.type=="Approved")].reason}') == ApprovalPending ]] && break
    sleep 0.2
  done
  kubectl instance describe hello
  say "kubectl instance approve hello: the plain provisioner's Pod installs it"
  kubectl instance approve hello
  kubectl wait --for=condition=Ready --timeout=120s instance/hello
  kubectl get pakket
  echo "ConfigMap hello/greeting says: $(kubectl get configmap greeting -n hello -o jsonpath='{.data.message}')"
  say "Use it: export KUBECONFIG=$KUBECONFIG (and PATH=$(dirname "$(command -v kubectl)"):\$PATH for the pinned kubectl)"
  echo "and stop it with: dev/demo.sh in-cluster-down"
  exit 0
fi

cache=${PAKKET_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/pakket}
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$cache/cargo-target}
# The shared build cache lives on: incremental data there only grows (gigabytes
# per week of commits) and buys little for whole-workspace builds.
export CARGO_INCREMENTAL=${CARGO_INCREMENTAL:-0}
export PAKKET_DEV_DIR=${PAKKET_DEV_DIR:-${TMPDIR:-/tmp}/pakket-dev}
say() { printf '\n\033[1m%s\033[0m\n' "$*"; }

dev/prerequisites.sh >/dev/null
# shellcheck source=dev/cache-lock.sh
source dev/cache-lock.sh
cache_locked cargo build --quiet --locked --bin pakket-dev --bin pakket-plain --bin kubectl-instance --bin pakket-webhooks \
  --bin pakket-registry-v1 --bin pakket --bin pakket-package
# kubectl finds its plugins on PATH: `kubectl instance ...` runs kubectl-instance.
export PATH="$CARGO_TARGET_DIR/debug:$PATH"
pakket_dev="$CARGO_TARGET_DIR/debug/pakket-dev"
plain_pid="$PAKKET_DEV_DIR.pakket-plain.pid"
registry_v1_pid="$PAKKET_DEV_DIR.pakket-registry-v1.pid"
package_pid="$PAKKET_DEV_DIR.pakket-package.pid"
packages_dir="$PAKKET_DEV_DIR.packages"
registry_dir="$PAKKET_DEV_DIR.registry"
webhooks_pid="$PAKKET_DEV_DIR.pakket-webhooks.pid"
running() { [[ -f $1 ]] && kill -0 "$(cat "$1")" 2>/dev/null; }

if [[ ${1:-} == down ]]; then
  [[ -f $plain_pid ]] && kill "$(cat "$plain_pid")" 2>/dev/null; rm -f "$plain_pid"
  [[ -f $registry_v1_pid ]] && kill "$(cat "$registry_v1_pid")" 2>/dev/null; rm -f "$registry_v1_pid"
  [[ -d $registry_dir ]] && dev/registry/stop.sh "$registry_dir"
  [[ -f $package_pid ]] && kill "$(cat "$package_pid")" 2>/dev/null; rm -f "$package_pid"
  [[ -d $packages_dir ]] && dev/https-files/stop.sh "$packages_dir"
  # SIGTERM: the webhooks remove their configurations before they exit.
  if running "$webhooks_pid"; then
    pid=$(cat "$webhooks_pid"); kill "$pid"
    for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  fi
  rm -f "$webhooks_pid"
  "$pakket_dev" down
  exit 0
fi

say "Building (first time only) and starting etcd, kube-apiserver, kube-controller-manager, kube-scheduler and kwok with one fake node"
# The binaries come from this checkout's own build scripts: a pakket-dev
# built from another checkout into the shared cargo cache would otherwise
# look for the scripts where that checkout was.
PAKKET_CONTROLPLANE_BIN=${PAKKET_CONTROLPLANE_BIN:-$(dev/controlplane/build.sh)}
PAKKET_NODES_BIN=${PAKKET_NODES_BIN:-$(dev/controlplane/build-nodes.sh)}
export PAKKET_CONTROLPLANE_BIN PAKKET_NODES_BIN
eval "$("$pakket_dev" up --nodes 1)"
"$pakket_dev" status

say "Installing Pakket's CRDs"
kubectl apply --server-side -f crds/
kubectl wait --for=condition=Established --timeout=60s -f crds/

# The record key: the webhooks seal who asked for each Instance with it, and
# the provisioner trusts only records it verifies (SECURITY.md). In a
# cluster it is the Secret pakket-record-key; here, a file made once.
record_key="$PAKKET_DEV_DIR.record-key"
[[ -s $record_key ]] || (umask 077 && head -c 32 /dev/urandom | base64 >"$record_key")

say "Starting Pakket's admission webhooks on loopback (log: $PAKKET_DEV_DIR/logs/pakket-webhooks.log)"
# The `use` verb on classes, the Approved guard, the creator record, Bundle
# validation; registered with the apiserver while they run.
if ! running "$webhooks_pid"; then
  webhooks_log="$PAKKET_DEV_DIR/logs/pakket-webhooks.log"
  # The package provisioner (run below as the admin) writes Instances on
  # the behalf of whoever wrote each package: a delegate.
  nohup "$CARGO_TARGET_DIR/debug/pakket-webhooks" local --name demo --record-key-file "$record_key" \
    --delegate pakket-admin >"$webhooks_log" 2>&1 &
  echo $! >"$webhooks_pid"
  for _ in $(seq 1 300); do grep -q "^webhooks on" "$webhooks_log" && break; sleep 0.1; done
  grep "^webhooks on" "$webhooks_log" || { cat "$webhooks_log" >&2; exit 1; }
fi

say "Starting the plain provisioner (log: $PAKKET_DEV_DIR/logs/pakket-plain.log)"
# Its leader Lease lives in pakket-system; probes and metrics on a free port (see the log).
kubectl create namespace pakket-system --dry-run=client -o yaml | kubectl apply -f -
if ! running "$plain_pid"; then
  nohup "$CARGO_TARGET_DIR/debug/pakket-plain" --store "$PAKKET_DEV_DIR/store" --probe-address 127.0.0.1:0 \
    --record-key-file "$record_key" >"$PAKKET_DEV_DIR/logs/pakket-plain.log" 2>&1 &
  echo $! >"$plain_pid"
fi

say "Applying the examples: classes, a registry-v1 Bundle, and the plain bundle 'hello' from a ConfigMap"
kubectl apply -f examples/core/provisionerclass.yaml -f examples/core/bundle.yaml -f examples/plain/hello.yaml

condition() { kubectl get instance "$1" -o jsonpath="{.status.conditions[?(@.type==\"$2\")].$3}"; }
wait_for() { # instance condition field value
  for _ in $(seq 1 300); do [[ $(condition "$1" "$2" "$3") == "$4" ]] && return 0; sleep 0.2; done
  echo "timed out waiting for $1 $2 $3=$4" >&2; return 1
}

# A second run finds 'hello' installed already and skips the approval.
if [[ $(condition hello Installed status) != True ]]; then
  say "The 'plain' class asks for approval, so 'hello' waits:"
  wait_for hello Approved reason ApprovalPending
  kubectl get instances
  echo "Approved: $(condition hello Approved message)"

  say "kubectl instance why hello"
  kubectl instance why hello

  say "kubectl instance describe hello: what the pending content holds, before anyone approves it"
  kubectl instance describe hello

  say "kubectl instance approve hello (as admin; approving needs the 'approve' verb on instances, and covers exactly the request shown: its digest, the spec read and what the runtime judged)"
  kubectl instance approve hello
  say "kubectl wait --for=condition=Ready instance/hello: Ready is True once it is installed and healthy (what a GitOps pipeline gates on; Flux's kstatus reads Reconciling and Stalled beside it)"
  kubectl wait --for=condition=Ready --timeout=120s instance/hello
fi
wait_for hello Installed status True
wait_for hello Healthy status True

say "kubectl get pakket"
kubectl get pakket
echo "Installed: $(condition hello Installed message)"

say "kubectl instance describe hello"
kubectl instance describe hello
echo "ConfigMap hello/greeting says: $(kubectl get configmap greeting -n hello -o jsonpath='{.data.message}')"

say "kubectl instance history hello: each install of other content is a revision; the serving one is marked"
kubectl instance history hello

say "The apiserver itself refuses a change to a Bundle's spec:"
kubectl patch bundle etcd-operator.v0.9.4 --type=merge \
  -p '{"spec":{"refs":["docker://quay.io/openshift-community-operators/etcd:v0.9.2"]}}' || true

say "Test users are real non-admins (alice cannot list bundles):"
kubectl --context alice get bundles || true

say "RBAC lets alice create Instances, but the webhook wants the 'use' verb on the class:"
kubectl apply -f - <<YAML
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: pakket-demo-instance-writer}
rules:
- {apiGroups: [core.pakket.dev], resources: [instances], verbs: [get, list, watch, create]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: pakket-demo-instance-writer-alice}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: pakket-demo-instance-writer}
subjects: [{apiGroup: rbac.authorization.k8s.io, kind: User, name: alice}]
YAML
kubectl --context alice create --dry-run=server -f - <<YAML || true
apiVersion: core.pakket.dev/v1alpha1
kind: Instance
metadata: {name: alice-hello}
spec: {class: plain, bundle: {name: hello-v1}}
YAML

say "Who created 'hello' is recorded (and sealed) by the webhook, not by the client:"
kubectl get instance hello -o jsonpath='{.metadata.annotations.core\.pakket\.dev/created-by}'; echo

say "The approval names the request it covers (a new digest, config, class or requester needs a new approval):"
kubectl get instance hello -o jsonpath='{.status.approval}'; echo

etcd_bundle=../shared/data/bundles/etcd/0.9.4
if [[ -d $etcd_bundle ]]; then
  say "An OLM operator: etcd 0.9.4 (community-operators-prod, in ../shared/data) pushed to a local registry"
  registry=$(dev/registry/start.sh "$registry_dir")
  pakket bundle push "$etcd_bundle" "$registry/bundles/etcd:v0.9.4" --plain-http
  # The registry is on loopback: an internal address, which a class pulls
  # from only when its admin names it (or allows internal addresses).
  kubectl patch provisionerclass registry-v1 --type merge \
    -p "{\"spec\":{\"parameters\":{\"insecureRegistries\":[\"$registry\"]}}}"

  say "Starting the registry-v1 provisioner (log: $PAKKET_DEV_DIR/logs/pakket-registry-v1.log)"
  if ! running "$registry_v1_pid"; then
    nohup "$CARGO_TARGET_DIR/debug/pakket-registry-v1" --store "$PAKKET_DEV_DIR/store-registry-v1" \
      --probe-address 127.0.0.1:0 --record-key-file "$record_key" \
      >"$PAKKET_DEV_DIR/logs/pakket-registry-v1.log" 2>&1 &
    echo $! >"$registry_v1_pid"
  fi

  say "An Instance of it, installed into namespace etcd-operator (the 'registry-v1' class approves by policy):"
  kubectl apply -f - <<YAML
apiVersion: core.pakket.dev/v1alpha1
kind: Instance
metadata: {name: etcd}
spec:
  class: registry-v1
  config: {installNamespace: etcd-operator}
  bundle:
    name: etcd-v0.9.4-local
    spec: {class: registry-v1, refs: ["docker://$registry/bundles/etcd:v0.9.4"]}
YAML
  wait_for etcd Installed status True
  wait_for etcd Healthy status True
  kubectl get instance etcd
  kubectl get deployments,serviceaccounts,roles,rolebindings -n etcd-operator
  kubectl get crd -l core.pakket.dev/instance=etcd

  say "kubectl instance describe etcd"
  kubectl instance describe etcd

  say "kubectl instance deps etcd: what it provides, who needs it, what uses its APIs (deleting it is refused while something does)"
  kubectl instance deps etcd
else
  say "(../shared/data/bundles/etcd/0.9.4 is not here: the operator part is skipped)"
fi

glasskube_packages=../shared/data/glasskube-packages/packages
if [[ -d $glasskube_packages ]]; then
  say "A Glasskube package: the real repository (glasskube/packages, in ../shared/data) served over loopback HTTPS"
  repository=$(dev/https-files/start.sh "$packages_dir" "$glasskube_packages")
  echo "serving $glasskube_packages at $repository"
  helm_bin=$(dev/controlplane/build-helm.sh)

  say "Starting the package provisioner (log: $PAKKET_DEV_DIR/logs/pakket-package.log)"
  if ! running "$package_pid"; then
    nohup "$CARGO_TARGET_DIR/debug/pakket-package" --store "$PAKKET_DEV_DIR/store-package" \
      --probe-address 127.0.0.1:0 --record-key-file "$record_key" --helm "$helm_bin/helm" \
      --extra-ca-file "$packages_dir/ca.pem" --allow-internal-addresses \
      >"$PAKKET_DEV_DIR/logs/pakket-package.log" 2>&1 &
    echo $! >"$package_pid"
  fi
  # The 'package' class installs by itself only what the package's author
  # could have created by hand (UserPermission).
  kubectl apply -f - <<YAML
apiVersion: core.pakket.dev/v1alpha1
kind: ProvisionerClass
metadata: {name: package}
spec:
  provisioner: pakket.dev/package
  parameters: {approval: UserPermission, allowInternalAddresses: true}
---
apiVersion: packages.pakket.dev/v1alpha1
kind: PackageRepository
metadata:
  name: glasskube
  annotations: {packages.pakket.dev/default-repository: "true"}
spec: {url: "$repository"}
---
apiVersion: v1
kind: Namespace
metadata: {name: alice}
---
# alice owns namespace alice (the built-in 'admin' role there) and may
# write Packages in it; nothing cluster-wide.
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: alice-admin, namespace: alice}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: admin}
subjects: [{apiGroup: rbac.authorization.k8s.io, kind: User, name: alice}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: package-writer, namespace: alice}
rules:
- {apiGroups: [packages.pakket.dev], resources: [packages], verbs: [get, list, watch, create, update, patch, delete]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: alice-package-writer, namespace: alice}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: package-writer}
subjects: [{apiGroup: rbac.authorization.k8s.io, kind: User, name: alice}]
YAML
  for _ in $(seq 1 100); do
    [[ $(kubectl get packagerepository glasskube -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}') == True ]] && break
    sleep 0.2
  done
  kubectl get packagerepository glasskube \
    -o jsonpath='{.metadata.name}: {.status.conditions[?(@.type=="Ready")].message}{"\n"}'

  say "alice (not an admin) installs Apache Tika into her namespace, as a Package:"
  kubectl --context alice apply -f - <<YAML
apiVersion: packages.pakket.dev/v1alpha1
kind: Package
metadata: {name: tika, namespace: alice}
spec:
  packageInfo: {name: tika}
YAML
  package_ready() { kubectl get package tika -n alice -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}'; }
  for _ in $(seq 1 300); do [[ $(package_ready) == True ]] && break; sleep 0.2; done
  [[ $(package_ready) == True ]] || { kubectl get package tika -n alice -o yaml >&2; exit 1; }
  kubectl --context alice get packages -n alice
  kubectl --context alice get deployments,services -n alice
  echo "Approved: $(condition package-alice.tika Approved message)"

  say "kubectl instance describe package/alice/tika"
  kubectl instance describe package/alice/tika

  say "alice cannot install a cluster-wide package (she may not create ClusterPackages):"
  kubectl --context alice create --dry-run=server -f - <<YAML || true
apiVersion: packages.pakket.dev/v1alpha1
kind: ClusterPackage
metadata: {name: cloudnative-pg}
spec:
  packageInfo: {name: cloudnative-pg}
YAML
else
  say "(../shared/data/glasskube-packages is not here: the package part is skipped)"
fi

cat <<MSG

The control plane keeps running. To use it from this shell:
  eval "\$($pakket_dev env)"
  kubectl get pakket                  # as admin
  kubectl instance list               # the plugin: list, describe, why, approve, deny, history, rollback, graph
  kubectl --context alice get pakket  # as the non-admin user alice (or bob, carol)
The provisioners and the webhooks keep running too (pids in $plain_pid, $registry_v1_pid, $package_pid, $webhooks_pid).
Stop everything with: dev/demo.sh down
MSG
