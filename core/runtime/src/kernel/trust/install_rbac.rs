//! The RBAC a user needs so that an Instance of a bundle installs under
//! `approval: UserPermission`: what `pakket bundle rbac` prints, and what a
//! test grants. It reads rendered objects only, whichever provisioner
//! rendered them, so the CLI and every provisioner's tests share it.
//!
//! It asks what `UserPermission` asks ([`crate::approval`]):
//! `create` and `patch` on every object where it lands, and every rule each
//! Role or ClusterRole in the bundle grants, held where that role applies
//! (the apiserver's own rule against granting what one does not hold).
//! Bindings need their role's rules, which are already in the output.
//! Plurals come from a table of the kinds operator bundles hold (a CRD's
//! own kinds from its spec); anything else is `kind` lowercased plus `s`,
//! reported as a guess, since no cluster is asked.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Value, json};

/// Kinds operator bundles hold: (kind, group, plural).
const PLURALS: [(&str, &str, &str); 19] = [
    ("Namespace", "", "namespaces"),
    ("ConfigMap", "", "configmaps"),
    ("Secret", "", "secrets"),
    ("Service", "", "services"),
    ("ServiceAccount", "", "serviceaccounts"),
    ("Deployment", "apps", "deployments"),
    (
        "CustomResourceDefinition",
        "apiextensions.k8s.io",
        "customresourcedefinitions",
    ),
    ("Role", "rbac.authorization.k8s.io", "roles"),
    ("RoleBinding", "rbac.authorization.k8s.io", "rolebindings"),
    ("ClusterRole", "rbac.authorization.k8s.io", "clusterroles"),
    (
        "ClusterRoleBinding",
        "rbac.authorization.k8s.io",
        "clusterrolebindings",
    ),
    ("NetworkPolicy", "networking.k8s.io", "networkpolicies"),
    ("PodDisruptionBudget", "policy", "poddisruptionbudgets"),
    ("PriorityClass", "scheduling.k8s.io", "priorityclasses"),
    ("ServiceMonitor", "monitoring.coreos.com", "servicemonitors"),
    ("PrometheusRule", "monitoring.coreos.com", "prometheusrules"),
    (
        "VerticalPodAutoscaler",
        "autoscaling.k8s.io",
        "verticalpodautoscalers",
    ),
    (
        "ConsoleYAMLSample",
        "console.openshift.io",
        "consoleyamlsamples",
    ),
    (
        "ConsoleQuickStart",
        "console.openshift.io",
        "consolequickstarts",
    ),
];

/// One role to grant: a ClusterRole, or a Role in a namespace.
#[derive(Clone, Debug, PartialEq)]
pub struct NeededRole {
    /// The ClusterRole or Role, named `name`.
    pub role: Value,
    /// Plurals guessed for kinds the table does not know (`Widget → widgets`).
    pub guessed: Vec<String>,
}

/// What one scope (cluster-wide, or a namespace) needs.
#[derive(Default)]
struct Needs {
    verbs: BTreeMap<(String, String), BTreeSet<String>>,
    rules: Vec<Value>,
    guessed: BTreeSet<String>,
}

/// The roles (named `name`) a user needs to install `objects` (a rendered
/// bundle) under `UserPermission`: a ClusterRole first, then a Role per
/// namespace, sorted.
pub fn needed_roles(objects: &[Value], name: &str) -> Vec<NeededRole> {
    let plurals = plurals(objects);
    let mut scopes: BTreeMap<Option<String>, Needs> = BTreeMap::new();
    for object in objects {
        let text = |pointer: &str| {
            object
                .pointer(pointer)
                .and_then(Value::as_str)
                .unwrap_or("")
        };
        let (api_version, kind) = (text("/apiVersion"), text("/kind"));
        let group = api_version.rsplit_once('/').map_or("", |(group, _)| group);
        let namespace = Some(text("/metadata/namespace"))
            .filter(|namespace| !namespace.is_empty())
            .map(str::to_owned);
        let needs = scopes.entry(namespace).or_default();
        let plural = match plurals.get(&(group.to_owned(), kind.to_owned())) {
            Some(plural) => plural.clone(),
            None => {
                let guess = format!("{}s", kind.to_lowercase());
                needs.guessed.insert(format!("{kind} → {guess}"));
                guess
            }
        };
        needs
            .verbs
            .entry((group.to_owned(), plural))
            .or_default()
            .extend(["create".to_owned(), "patch".to_owned()]);
        if matches!(kind, "Role" | "ClusterRole") {
            for rule in object
                .get("rules")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                if !needs.rules.contains(rule) {
                    needs.rules.push(rule.clone());
                }
            }
        }
    }
    scopes
        .into_iter()
        .map(|(namespace, needs)| needed_role(name, namespace, needs))
        .collect()
}

/// The plural of each kind: the table's, and each CRD of the bundle's own.
fn plurals(objects: &[Value]) -> BTreeMap<(String, String), String> {
    // A CRD in the bundle tells the plural of its own kind.
    let mut plurals: BTreeMap<(String, String), String> = PLURALS
        .iter()
        .map(|(kind, group, plural)| {
            (
                ((*group).to_owned(), (*kind).to_owned()),
                (*plural).to_owned(),
            )
        })
        .collect();
    for object in objects {
        if object.get("kind").and_then(Value::as_str) == Some("CustomResourceDefinition") {
            let text = |pointer: &str| {
                object
                    .pointer(pointer)
                    .and_then(Value::as_str)
                    .map(str::to_owned)
            };
            if let (Some(group), Some(kind), Some(plural)) = (
                text("/spec/group"),
                text("/spec/names/kind"),
                text("/spec/names/plural"),
            ) {
                plurals.insert((group, kind), plural);
            }
        }
    }
    plurals
}

/// The role one scope needs: a ClusterRole (no namespace) or a Role.
fn needed_role(name: &str, namespace: Option<String>, needs: Needs) -> NeededRole {
    let mut rules: Vec<Value> = needs
        .verbs
        .into_iter()
        .map(|((group, resource), verbs)| {
            json!({ "apiGroups": [group], "resources": [resource], "verbs": verbs })
        })
        .collect();
    rules.extend(needs.rules);
    let mut metadata = json!({ "name": name });
    let kind = match &namespace {
        Some(namespace) => {
            metadata["namespace"] = json!(namespace);
            "Role"
        }
        None => "ClusterRole",
    };
    NeededRole {
        role: json!({
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": kind,
            "metadata": metadata,
            "rules": rules,
        }),
        guessed: needs.guessed.into_iter().collect(),
    }
}
