//! A registry+v1 bundle as plain objects, with OLM's semantics: the CSV's
//! Deployments in the install namespace with the CSV's annotations and the
//! target-namespace annotations on the pod template and one old
//! ReplicaSet kept, a ServiceAccount for each account the CSV names,
//! `permissions` as Roles and RoleBindings in each watched namespace (or a
//! ClusterRole and binding, plus read access to namespaces, when it
//! watches all), `clusterPermissions` as ClusterRoles and bindings, the
//! CRDs, and the other manifests of the kinds operator-registry allows,
//! namespaced ones in the install namespace, and the webhooks with their
//! Services and certificates ([`crate::webhooks`]). Names are
//! deterministic. Every problem is collected and reported together,
//! sorted.

use std::collections::BTreeSet;

use pakket_runtime::ClusterFacts;
use serde_json::{Map, Value, json};
use sha2::{Digest as _, Sha256};

use crate::bundle::Bundle;
use crate::cert_manager;
use crate::certificates::Issuance;
use crate::config::{CertificateProvider, Crds, Placement, Watch};
use crate::csv::{Csv, DeploymentSpec, Permission};
use crate::webhooks::{self, Certificates, Webhooks};

/// The annotation that asks the runtime to create an object only if it is
/// absent: an install namespace that exists already is used, not adopted.
pub use pakket_api::ownership::CREATE_IF_ABSENT_ANNOTATION;

/// Kinds besides the CSV and CRDs that a registry+v1 bundle may carry
/// (operator-registry's list), and whether each is namespaced.
const SUPPORTED_KINDS: [(&str, bool); 18] = [
    ("ClusterRole", false),
    ("ClusterRoleBinding", false),
    ("ConfigMap", true),
    ("ConsoleCLIDownload", false),
    ("ConsoleLink", false),
    ("ConsoleQuickStart", false),
    ("ConsoleYAMLSample", false),
    ("NetworkPolicy", true),
    ("PodDisruptionBudget", true),
    ("PriorityClass", false),
    ("PrometheusRule", true),
    ("Role", true),
    ("RoleBinding", true),
    ("Secret", true),
    ("Service", true),
    ("ServiceAccount", true),
    ("ServiceMonitor", true),
    ("VerticalPodAutoscaler", true),
];

/// The objects `bundle` stands for, placed as `placement` says, on a
/// cluster with `cluster`'s facts, with webhook certificates issued as
/// `issuance` says (or by cert-manager, if `placement` asks for it); or
/// every problem, sorted.
pub fn render(
    bundle: &Bundle,
    placement: &Placement,
    cluster: &ClusterFacts,
    issuance: &Issuance<'_>,
) -> Result<Vec<Value>, Vec<String>> {
    let csv = &bundle.csv;
    let (webhooks, mut problems) = Webhooks::read(bundle);
    // No CA is made for a bundle without webhooks.
    let certificates = if webhooks.is_empty() {
        None
    } else {
        certificates_for(
            &csv.metadata.name,
            placement,
            cluster,
            issuance,
            &mut problems,
        )
    };
    problems.extend(csv_problems(csv, cluster));
    let mut objects = if placement.crds == Crds::Only {
        Vec::new()
    } else {
        vec![namespace_object(placement)]
    };
    let mut accounts = BTreeSet::new();
    for deployment in &csv.spec.install.spec.deployments {
        match deployment_object(csv, deployment, placement, &webhooks) {
            Ok((object, account)) => {
                objects.push(object);
                accounts.extend(account);
            }
            Err(problem) => problems.push(problem),
        }
    }
    objects.extend(rbac_objects(bundle, placement, accounts));
    let (manifests, wrong_kinds) =
        placed_manifests(bundle, placement, &webhooks, certificates.as_ref());
    objects.extend(manifests);
    problems.extend(wrong_kinds);
    if let Some(certificates) = &certificates {
        match webhooks.objects(bundle, placement, certificates) {
            Ok(webhook_objects) => objects.extend(webhook_objects),
            Err(webhook_problems) => problems.extend(webhook_problems),
        }
    }
    let objects = match placement.crds {
        Crds::Include => objects,
        Crds::Omit => {
            problems.extend(omit_problems(bundle, &webhooks));
            objects.into_iter().filter(|o| !is_crd(o)).collect()
        }
        Crds::Only => {
            let crds: Vec<Value> = objects.into_iter().filter(is_crd).collect();
            problems.extend(only_problems(&crds));
            crds
        }
    };
    if problems.is_empty() {
        Ok(objects)
    } else {
        problems.sort();
        Err(problems)
    }
}

fn is_crd(object: &Value) -> bool {
    object["kind"] == "CustomResourceDefinition"
}

/// Why this bundle cannot run as a copy beside another Instance that owns
/// its CRDs (`crds: Omit`): whatever else of it is cluster-wide would be
/// one object for both, which the runtime never shares or adopts.
fn omit_problems(bundle: &Bundle, webhooks: &Webhooks) -> Vec<String> {
    let mut problems = Vec::new();
    if !webhooks.is_empty() {
        problems.push(format!(
            "{}: Omit asks for a copy of this operator that uses CRDs another Instance installed, but its CSV defines webhooks, whose configurations (and CRD conversion) are cluster-wide and would be shared; this operator runs once per cluster (crds: Include): remove the other Instance, or ask an admin for one that serves every namespace",
            Crds::FIELD
        ));
    }
    for manifest in &bundle.manifests {
        let kind = manifest["kind"].as_str().unwrap_or_default();
        let cluster_scoped = SUPPORTED_KINDS
            .iter()
            .any(|(supported, namespaced)| *supported == kind && !namespaced);
        if cluster_scoped {
            let name = manifest["metadata"]["name"].as_str().unwrap_or("(unnamed)");
            problems.push(format!(
                "{}: Omit asks for a copy of this operator that uses CRDs another Instance installed, but manifests/ holds the cluster-scoped {kind} {name}, which copies would share; this operator runs once per cluster (crds: Include): remove the other Instance, or ask an admin for one that serves every namespace",
                Crds::FIELD
            ));
        }
    }
    problems
}

/// Why the CRDs cannot be kept without their operator (`crds: Only`): a
/// CRD that converts through the operator's webhook would fail every
/// read of another version.
fn only_problems(crds: &[Value]) -> Vec<String> {
    crds.iter()
        .filter(|crd| crd.pointer("/spec/conversion/strategy") == Some(&json!("Webhook")))
        .map(|crd| {
            format!(
                "{}: CRD {} converts through the operator's webhook, so it cannot be kept without the operator; keep the operator (crds: Include)",
                Crds::FIELD,
                crd["metadata"]["name"].as_str().unwrap_or("(unnamed)")
            )
        })
        .collect()
}

/// Who issues the webhooks' certificates: Pakket (its CA, from
/// `issuance`) or cert-manager, when the cluster serves it.
fn certificates_for<'a>(
    name: &str,
    placement: &Placement,
    cluster: &ClusterFacts,
    issuance: &'a Issuance<'_>,
    problems: &mut Vec<String>,
) -> Option<Certificates<'a>> {
    match placement.certificate_provider {
        CertificateProvider::Pakket => issuance
            .authority()
            .map_err(|error| problems.push(format!("cannot issue the webhook CA: {error}")))
            .ok()
            .map(|authority| Certificates::Pakket(Box::new(authority))),
        CertificateProvider::CertManager if cert_manager::served(cluster) => {
            Some(Certificates::CertManager)
        }
        CertificateProvider::CertManager => {
            problems.push(format!(
                "ClusterServiceVersion {name} has webhooks and {} is CertManager, but this cluster does not serve {} Issuer and Certificate; install cert-manager first (Pakket sees it within a few minutes), or remove {} to let Pakket issue the certificates",
                CertificateProvider::FIELD,
                cert_manager::API_VERSION,
                CertificateProvider::FIELD,
            ));
            None
        }
    }
}

/// What the CSV asks for that cannot be installed here: aggregated API
/// servers, or a newer Kubernetes than the cluster's.
fn csv_problems(csv: &Csv, cluster: &ClusterFacts) -> Vec<String> {
    let name = &csv.metadata.name;
    let mut problems = Vec::new();
    if csv
        .spec
        .apiservicedefinitions
        .as_ref()
        .is_some_and(|definitions| !definitions.owned.is_empty())
    {
        problems.push(format!(
            "ClusterServiceVersion {name}: spec.apiservicedefinitions.owned (aggregated API servers) are not supported; nothing is installed"
        ));
    }
    if let Some(problem) = kube_version_problem(csv.spec.min_kube_version.as_deref(), cluster) {
        problems.push(format!("ClusterServiceVersion {name}: {problem}"));
    }
    problems
}

/// The install namespace, created only if absent: the template's labels
/// and annotations are a new namespace's, never written over an existing
/// one.
fn namespace_object(placement: &Placement) -> Value {
    let template = &placement.namespace_template;
    let mut namespace_annotations = template.annotations.clone();
    namespace_annotations.insert(CREATE_IF_ABSENT_ANNOTATION.into(), "true".into());
    let mut namespace_metadata = json!({
        "name": placement.install_namespace,
        "annotations": namespace_annotations,
    });
    if !template.labels.is_empty() {
        namespace_metadata["labels"] = json!(template.labels);
    }
    json!({
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": namespace_metadata,
    })
}

/// One of the CSV's Deployments as OLM places it, and the ServiceAccount
/// it runs as (unless `default`); or why it cannot be.
fn deployment_object(
    csv: &Csv,
    deployment: &DeploymentSpec,
    placement: &Placement,
    webhooks: &Webhooks,
) -> Result<(Value, Option<String>), String> {
    let namespace = &placement.install_namespace;
    let mut spec = deployment.spec.clone();
    let Some(template) = spec.pointer_mut("/template").and_then(Value::as_object_mut) else {
        return Err(format!(
            "ClusterServiceVersion {}: spec.install.spec.deployments[{}].spec has no template",
            csv.metadata.name, deployment.name
        ));
    };
    let metadata = template
        .entry("metadata")
        .or_insert_with(|| Value::Object(Map::new()));
    if let Value::Object(metadata) = metadata {
        // As OLM does: the CSV's annotations, then the template's own
        // over them, then where the operator runs and what it watches.
        let mut annotations = csv.metadata.annotations.clone();
        if let Some(Value::Object(own)) = metadata.get("annotations") {
            annotations.extend(own.clone());
        }
        annotations.insert(
            "olm.targetNamespaces".into(),
            Value::String(placement.watch.target_namespaces()),
        );
        annotations.insert(
            "olm.operatorNamespace".into(),
            Value::String(namespace.clone()),
        );
        metadata.insert("annotations".into(), Value::Object(annotations));
    }
    // OLM keeps one old ReplicaSet per operator Deployment.
    if let Some(spec) = spec.as_object_mut() {
        spec.insert("revisionHistoryLimit".into(), json!(1));
    }
    if webhooks.served_by(&deployment.name) {
        webhooks::mount_certificates(&mut spec, &webhooks::secret_name(&deployment.name));
    }
    let account = spec
        .pointer("/template/spec/serviceAccountName")
        .and_then(Value::as_str)
        .filter(|account| *account != "default")
        .map(str::to_owned);
    let mut metadata = json!({
        "name": deployment.name,
        "namespace": namespace,
        "labels": deployment.label,
    });
    if let (Some(config), Value::Object(metadata)) = (&placement.deployment_config, &mut metadata) {
        config.apply(metadata, &mut spec);
    }
    let object = json!({
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": metadata,
        "spec": spec,
    });
    Ok((object, account))
}

/// The ServiceAccounts the bundle does not ship, and the Roles and
/// ClusterRoles (with their bindings) of the CSV's permissions, where the
/// operator watches.
fn rbac_objects(
    bundle: &Bundle,
    placement: &Placement,
    mut accounts: BTreeSet<String>,
) -> Vec<Value> {
    let csv = &bundle.csv;
    let (name, namespace) = (&csv.metadata.name, &placement.install_namespace);
    let shipped_accounts: BTreeSet<&str> = bundle
        .manifests
        .iter()
        .filter(|object| object.get("kind").and_then(Value::as_str) == Some("ServiceAccount"))
        .filter_map(|object| object.pointer("/metadata/name").and_then(Value::as_str))
        .collect();
    let permissions = &csv.spec.install.spec.permissions;
    let cluster_permissions = &csv.spec.install.spec.cluster_permissions;
    for permission in permissions.iter().chain(cluster_permissions) {
        accounts.insert(permission.service_account_name.clone());
    }
    let mut objects: Vec<Value> = accounts
        .iter()
        .filter(|account| !shipped_accounts.contains(account.as_str()))
        .map(|account| {
            json!({
                "apiVersion": "v1",
                "kind": "ServiceAccount",
                "metadata": { "name": account, "namespace": namespace },
            })
        })
        .collect();
    match &placement.watch {
        Watch::All => {
            // Watching every namespace, an operator also needs to see them.
            for permission in permissions {
                let mut rules = permission.rules.clone();
                rules.push(json!({
                    "apiGroups": [""],
                    "resources": ["namespaces"],
                    "verbs": ["get", "list", "watch"],
                }));
                let account = &permission.service_account_name;
                objects.extend(cluster_role(name, namespace, account, &rules));
            }
        }
        Watch::Namespaces(watched) => {
            for permission in permissions {
                for target in watched {
                    objects.extend(role(name, namespace, target, permission));
                }
            }
        }
    }
    for permission in cluster_permissions {
        let account = &permission.service_account_name;
        objects.extend(cluster_role(name, namespace, account, &permission.rules));
    }
    objects
}

/// The bundle's manifests, placed: CRDs (with their conversion webhooks),
/// namespaced kinds in the install namespace, cluster-scoped kinds with no
/// namespace; and a problem for each kind a bundle may not carry.
fn placed_manifests(
    bundle: &Bundle,
    placement: &Placement,
    webhooks: &Webhooks,
    certificates: Option<&Certificates<'_>>,
) -> (Vec<Value>, Vec<String>) {
    let namespace = &placement.install_namespace;
    let (mut objects, mut problems) = (Vec::new(), Vec::new());
    for manifest in &bundle.manifests {
        let kind = manifest
            .get("kind")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let object_name = manifest
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or("(unnamed)");
        if kind == "CustomResourceDefinition" {
            let mut crd = manifest.clone();
            if let Some(certificates) = certificates {
                webhooks.convert(&mut crd, namespace, certificates);
            }
            objects.push(crd);
            continue;
        }
        let Some((_, namespaced)) = SUPPORTED_KINDS
            .iter()
            .find(|(supported, _)| *supported == kind)
        else {
            problems.push(format!(
                "manifests/: {kind} {object_name} is not a kind registry+v1 bundles may carry (the CSV, CRDs, and {})",
                SUPPORTED_KINDS.map(|(kind, _)| kind).join(", ")
            ));
            continue;
        };
        let mut placed = manifest.clone();
        if let Some(metadata) = placed.get_mut("metadata").and_then(Value::as_object_mut) {
            if *namespaced {
                metadata.insert("namespace".into(), Value::String(namespace.clone()));
            } else {
                metadata.remove("namespace");
            }
        }
        objects.push(placed);
    }
    (objects, problems)
}

/// A Role with `permission`'s rules in `target` and its binding to the
/// account in `namespace`.
fn role(csv: &str, namespace: &str, target: &str, permission: &Permission) -> [Value; 2] {
    let account = &permission.service_account_name;
    let name = generated_name(csv, &[account, target], &permission.rules);
    [
        json!({
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "Role",
            "metadata": { "name": name, "namespace": target },
            "rules": permission.rules,
        }),
        json!({
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "RoleBinding",
            "metadata": { "name": name, "namespace": target },
            "roleRef": { "apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": name },
            "subjects": [{ "kind": "ServiceAccount", "name": account, "namespace": namespace }],
        }),
    ]
}

/// A ClusterRole with `rules` and its binding to `account` in `namespace`.
fn cluster_role(csv: &str, namespace: &str, account: &str, rules: &[Value]) -> [Value; 2] {
    let name = generated_name(csv, &[account, namespace], rules);
    [
        json!({
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRole",
            "metadata": { "name": name },
            "rules": rules,
        }),
        json!({
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRoleBinding",
            "metadata": { "name": name },
            "roleRef": { "apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": name },
            "subjects": [{ "kind": "ServiceAccount", "name": account, "namespace": namespace }],
        }),
    ]
}

/// `<csv>-<account>-<hash>`, at most 63 characters: the same inputs give
/// the same name, so a re-render applies over the same objects, and other
/// rules (an upgrade) give another name rather than an edit in place.
fn generated_name(csv: &str, parts: &[&str], rules: &[Value]) -> String {
    let mut hasher = Sha256::new();
    for part in parts {
        hasher.update(part.as_bytes());
        hasher.update([0]);
    }
    hasher.update(serde_json::to_vec(rules).unwrap_or_default());
    let digest = hasher.finalize();
    let hash: String = digest
        .iter()
        .take(5)
        .map(|byte| format!("{byte:02x}"))
        .collect();
    let mut prefix = format!("{csv}-{}", parts[0]);
    prefix.truncate(63 - hash.len() - 1);
    let prefix = prefix.trim_end_matches(['-', '.']);
    format!("{prefix}-{hash}")
}

/// Why the cluster is too old for `min`, if it is.
fn kube_version_problem(min: Option<&str>, cluster: &ClusterFacts) -> Option<String> {
    let min = min?.trim().trim_start_matches('v');
    if min.is_empty() {
        return None;
    }
    let mut parts = min.split('.').map(|part| part.parse::<u32>());
    let (Some(Ok(major)), Some(Ok(minor))) = (parts.next(), parts.next()) else {
        return Some(format!(
            "spec.minKubeVersion {min:?} is not a version such as 1.21.0; fix the bundle"
        ));
    };
    let (has_major, has_minor) = cluster.version?;
    ((has_major, has_minor) < (major, minor)).then(|| {
        format!(
            "spec.minKubeVersion is {min}, and this cluster runs Kubernetes {has_major}.{has_minor}; upgrade the cluster or install an older bundle"
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn on(version: (u32, u32)) -> ClusterFacts {
        ClusterFacts {
            version: Some(version),
            ..ClusterFacts::default()
        }
    }

    #[test]
    fn min_kube_version_is_checked_against_the_cluster() {
        assert_eq!(kube_version_problem(Some("1.21.0"), &on((1, 35))), None);
        let old = kube_version_problem(Some("v1.36.0"), &on((1, 35))).unwrap();
        assert!(old.contains("this cluster runs Kubernetes 1.35"), "{old}");
        let bad = kube_version_problem(Some("latest"), &on((1, 35))).unwrap();
        assert!(bad.contains("is not a version"), "{bad}");
        // An unknown cluster version is no reason to refuse.
        assert_eq!(
            kube_version_problem(Some("1.99"), &ClusterFacts::default()),
            None
        );
    }

    #[test]
    fn generated_names_fit_63_characters_and_differ_by_rules() {
        let long = "a-very-long-operator-name.v1.2.3-with-a-long-suffix-indeed";
        let one = generated_name(
            long,
            &["controller-manager-account"],
            &[json!({"verbs": ["get"]})],
        );
        let two = generated_name(
            long,
            &["controller-manager-account"],
            &[json!({"verbs": ["list"]})],
        );
        assert!(one.len() <= 63 && two.len() <= 63, "{one} {two}");
        assert_ne!(one, two);
    }
}
