//! What content asks of the cluster beyond plain objects, as a set that can
//! be compared with another: the RBAC rules its Roles and ClusterRoles
//! hold, whom its bindings bind to what, the CRDs it defines and the
//! admission webhooks and APIServices it registers. The approval policy
//! `Android` ([`crate::approval::android`]) approves new content by itself
//! only when it asks for nothing the running content did not: an update
//! that asks for more waits for a person, like an app update that wants a
//! new permission.
//!
//! Pure functions over rendered objects; nothing here reads the cluster.

use std::collections::BTreeSet;
use std::fmt;

use k8s_openapi::api::rbac::v1::PolicyRule;
use serde_json::Value;

use crate::apply::reference_of;
use crate::rbac::{self, Access};

/// One thing content asks for.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Right {
    /// An RBAC rule of a Role (namespaced) or ClusterRole, one verb on one
    /// resource at a time.
    Rule(Access),
    /// A ClusterRole that aggregates other ClusterRoles' rules (its
    /// name): what it grants is decided elsewhere, later.
    Aggregation(String),
    /// A binding of a subject to a role: `role` is the role's kind and
    /// name when the content does not define it (the binding hands out
    /// rights the cluster already has, such as `cluster-admin`), `None`
    /// when it does (that role's rules are counted as rules).
    Binding {
        /// The binding's namespace; `None` for a ClusterRoleBinding.
        namespace: Option<String>,
        /// `Kind namespace/name` of the subject.
        subject: String,
        /// The role the binding names, when the content does not define it.
        role: Option<String>,
    },
    /// A CustomResourceDefinition (its name).
    Crd(String),
    /// An admission webhook: its configuration's kind and name, and the
    /// webhook's name in it.
    Webhook {
        /// `ValidatingWebhookConfiguration` or `MutatingWebhookConfiguration`.
        kind: String,
        /// The configuration's name.
        configuration: String,
        /// The webhook's name.
        webhook: String,
    },
    /// An APIService (its name): an aggregated API served by the content.
    ApiService(String),
}

impl fmt::Display for Right {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Rule(access) => write!(f, "the rule {access}"),
            Self::Aggregation(name) => {
                write!(
                    f,
                    "ClusterRole {name} aggregating other ClusterRoles' rules"
                )
            }
            Self::Binding {
                namespace,
                subject,
                role,
            } => {
                let role = role.as_deref().unwrap_or("a role of its own");
                match namespace {
                    Some(namespace) => {
                        write!(f, "{subject} bound to {role} in namespace {namespace}")
                    }
                    None => write!(f, "{subject} bound to {role} cluster-wide"),
                }
            }
            Self::Crd(name) => write!(f, "CRD {name}"),
            Self::Webhook {
                kind,
                configuration,
                webhook,
            } => write!(f, "webhook {webhook} of {kind} {configuration}"),
            Self::ApiService(name) => write!(f, "APIService {name}"),
        }
    }
}

/// Everything some content asks for.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Rights(BTreeSet<Right>);

impl Rights {
    /// What `objects` (rendered content) ask for.
    pub fn of(objects: &[Value]) -> Self {
        let mut rights = BTreeSet::new();
        for object in objects {
            let reference = reference_of(object);
            let group = reference.api_version.split('/').next().unwrap_or_default();
            let namespace = reference.namespace.clone().filter(|n| !n.is_empty());
            match (group, reference.kind.as_str()) {
                (rbac::RBAC_GROUP, "Role" | "ClusterRole") => {
                    let scope = if reference.kind == "Role" {
                        namespace.as_deref()
                    } else {
                        None
                    };
                    let rules: Vec<PolicyRule> = object
                        .get("rules")
                        .cloned()
                        .and_then(|rules| serde_json::from_value(rules).ok())
                        .unwrap_or_default();
                    for rule in &rules {
                        rights.extend(
                            rbac::rule_accesses(rule, scope)
                                .into_iter()
                                .map(Right::Rule),
                        );
                    }
                    if object.get("aggregationRule").is_some_and(|a| !a.is_null()) {
                        rights.insert(Right::Aggregation(reference.name.clone()));
                    }
                }
                (rbac::RBAC_GROUP, "RoleBinding" | "ClusterRoleBinding") => {
                    let scope = (reference.kind == "RoleBinding")
                        .then(|| namespace.clone())
                        .flatten();
                    let role = binding_role(object, objects, scope.as_deref());
                    for subject in subjects(object, scope.as_deref()) {
                        rights.insert(Right::Binding {
                            namespace: scope.clone(),
                            subject,
                            role: role.clone(),
                        });
                    }
                }
                ("apiextensions.k8s.io", "CustomResourceDefinition") => {
                    rights.insert(Right::Crd(reference.name.clone()));
                }
                (
                    "admissionregistration.k8s.io",
                    "ValidatingWebhookConfiguration" | "MutatingWebhookConfiguration",
                ) => {
                    for webhook in object
                        .get("webhooks")
                        .and_then(Value::as_array)
                        .into_iter()
                        .flatten()
                    {
                        rights.insert(Right::Webhook {
                            kind: reference.kind.clone(),
                            configuration: reference.name.clone(),
                            webhook: webhook
                                .get("name")
                                .and_then(Value::as_str)
                                .unwrap_or_default()
                                .to_owned(),
                        });
                    }
                }
                ("apiregistration.k8s.io", "APIService") => {
                    rights.insert(Right::ApiService(reference.name.clone()));
                }
                _ => {}
            }
        }
        Self(rights)
    }

    /// What `self` asks for that `running` does not cover, in order. A
    /// rule is covered by a rule of `running` that allows at least as much
    /// (its wildcards included: `*` verbs cover `delete`, a ClusterRole's
    /// rule covers the same rule in any namespace); the rest are covered
    /// only by the same right.
    pub fn beyond(&self, running: &Self) -> Vec<&Right> {
        self.0
            .iter()
            .filter(|right| !running.covers(right))
            .collect()
    }

    /// Whether nothing is asked for.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// How many rights are asked for.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    fn covers(&self, right: &Right) -> bool {
        if self.0.contains(right) {
            return true;
        }
        let Right::Rule(wanted) = right else {
            return false;
        };
        self.0.iter().any(|held| match held {
            Right::Rule(held) => access_covers(held, wanted),
            _ => false,
        })
    }
}

/// Whether the access `held` allows everything `wanted` does.
fn access_covers(held: &Access, wanted: &Access) -> bool {
    let matches = |held: &str, wanted: &str| held == "*" || held == wanted;
    match (held, wanted) {
        (
            Access::Resource {
                group,
                resource,
                subresource,
                verb,
                namespace,
                name,
            },
            Access::Resource {
                group: wanted_group,
                resource: wanted_resource,
                subresource: wanted_subresource,
                verb: wanted_verb,
                namespace: wanted_namespace,
                name: wanted_name,
            },
        ) => {
            matches(group, wanted_group)
                && matches(resource, wanted_resource)
                && (subresource == wanted_subresource || resource == "*")
                && matches(verb, wanted_verb)
                && (namespace.is_none() || namespace == wanted_namespace)
                && (name.is_none() || name == wanted_name)
        }
        (
            Access::NonResource { path, verb },
            Access::NonResource {
                path: wanted_path,
                verb: wanted_verb,
            },
        ) => {
            let path_covers = path == wanted_path
                || path
                    .strip_suffix('*')
                    .is_some_and(|prefix| wanted_path.starts_with(prefix));
            path_covers && matches(verb, wanted_verb)
        }
        _ => false,
    }
}

/// `Kind namespace/name` of each subject of a binding (a ServiceAccount
/// without a namespace is in the binding's).
fn subjects(binding: &Value, scope: Option<&str>) -> Vec<String> {
    binding
        .get("subjects")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|subject| {
            let field = |key: &str| subject.get(key).and_then(Value::as_str).unwrap_or("");
            let namespace = match (field("kind"), field("namespace"), scope) {
                ("ServiceAccount", "", Some(scope)) => scope.to_owned(),
                (_, namespace, _) => namespace.to_owned(),
            };
            if namespace.is_empty() {
                format!("{} {}", field("kind"), field("name"))
            } else {
                format!("{} {namespace}/{}", field("kind"), field("name"))
            }
        })
        .collect()
}

/// The role a binding names, as `Kind name`, unless the content defines
/// it (then `None`: its rules are counted where it is defined).
fn binding_role(binding: &Value, objects: &[Value], scope: Option<&str>) -> Option<String> {
    let kind = binding
        .pointer("/roleRef/kind")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let name = binding
        .pointer("/roleRef/name")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let defined = objects.iter().any(|object| {
        let reference = reference_of(object);
        reference.kind == kind
            && reference.name == name
            && reference.api_version.starts_with(rbac::RBAC_GROUP)
            && (kind != "Role" || reference.namespace.as_deref() == scope)
    });
    (!defined).then(|| format!("{kind} {name}"))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn role(kind: &str, namespace: Option<&str>, name: &str, rules: Value) -> Value {
        let mut metadata = json!({ "name": name });
        if let Some(namespace) = namespace {
            metadata["namespace"] = json!(namespace);
        }
        json!({
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": kind,
            "metadata": metadata, "rules": rules,
        })
    }

    fn binding(kind: &str, namespace: Option<&str>, role_kind: &str, role: &str) -> Value {
        let mut metadata = json!({ "name": format!("{role}-binding") });
        if let Some(namespace) = namespace {
            metadata["namespace"] = json!(namespace);
        }
        json!({
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": kind, "metadata": metadata,
            "roleRef": { "apiGroup": "rbac.authorization.k8s.io", "kind": role_kind, "name": role },
            "subjects": [{ "kind": "ServiceAccount", "name": "operator" }],
        })
    }

    fn described(new: &[Value], running: &[Value]) -> Vec<String> {
        Rights::of(new)
            .beyond(&Rights::of(running))
            .into_iter()
            .map(ToString::to_string)
            .collect()
    }

    #[test]
    fn the_same_rules_under_other_role_names_ask_for_nothing_new() {
        let rules = json!([{ "apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list"] }]);
        let old = [
            role("Role", Some("ns"), "op-v1", rules.clone()),
            binding("RoleBinding", Some("ns"), "Role", "op-v1"),
        ];
        let new = [
            role("Role", Some("ns"), "op-v2", rules),
            binding("RoleBinding", Some("ns"), "Role", "op-v2"),
        ];
        assert!(described(&new, &old).is_empty());
    }

    #[test]
    fn a_new_verb_a_new_resource_and_a_wider_scope_are_each_named() {
        let old = [role(
            "Role",
            Some("ns"),
            "op",
            json!([{ "apiGroups": [""], "resources": ["pods"], "verbs": ["get"] }]),
        )];
        let new = [
            role(
                "Role",
                Some("ns"),
                "op",
                json!([{ "apiGroups": [""], "resources": ["pods", "secrets"], "verbs": ["get", "delete"] }]),
            ),
            role(
                "ClusterRole",
                None,
                "op-cluster",
                json!([{ "apiGroups": [""], "resources": ["pods"], "verbs": ["get"] }]),
            ),
        ];
        let beyond = described(&new, &old);
        assert_eq!(beyond.len(), 4, "{beyond:?}");
        assert!(
            beyond
                .iter()
                .any(|r| r.contains("delete") && r.contains("pods"))
        );
        assert!(
            beyond
                .iter()
                .any(|r| r.contains("get") && r.contains("secrets"))
        );
        assert!(
            beyond.iter().any(|r| r.contains("get pods cluster-wide")),
            "the cluster-wide get on pods: {beyond:?}"
        );
    }

    #[test]
    fn wildcards_cover_what_they_allow_and_nothing_covers_a_new_wildcard() {
        let wide = [role(
            "ClusterRole",
            None,
            "op",
            json!([{ "apiGroups": ["apps"], "resources": ["*"], "verbs": ["*"] }]),
        )];
        let narrow = [role(
            "Role",
            Some("ns"),
            "op",
            json!([{ "apiGroups": ["apps"], "resources": ["deployments/scale"], "verbs": ["patch"] }]),
        )];
        assert!(described(&narrow, &wide).is_empty());
        assert_eq!(described(&wide, &narrow).len(), 1);
    }

    #[test]
    fn binding_to_a_role_the_content_does_not_define_is_named_with_the_role() {
        let old = [binding("RoleBinding", Some("ns"), "ClusterRole", "view")];
        let new = [
            binding("RoleBinding", Some("ns"), "ClusterRole", "view"),
            binding("ClusterRoleBinding", None, "ClusterRole", "cluster-admin"),
        ];
        assert_eq!(
            described(&new, &old),
            ["ServiceAccount operator bound to ClusterRole cluster-admin cluster-wide"]
        );
    }

    #[test]
    fn crds_webhooks_apiservices_and_aggregation_are_new_until_the_running_content_has_them() {
        let crd = json!({
            "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": { "name": "things.example.com" },
        });
        let webhook = json!({
            "apiVersion": "admissionregistration.k8s.io/v1", "kind": "MutatingWebhookConfiguration",
            "metadata": { "name": "op" }, "webhooks": [{ "name": "mutate.example.com" }],
        });
        let service = json!({
            "apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
            "metadata": { "name": "v1.metrics.example.com" },
        });
        let mut aggregating = role("ClusterRole", None, "agg", json!([]));
        aggregating["aggregationRule"] = json!({ "clusterRoleSelectors": [] });
        let new = [crd.clone(), webhook, service, aggregating];
        assert_eq!(described(&new, &[]).len(), 4);
        assert_eq!(described(&new, &new).len(), 0);
        assert_eq!(described(&[crd], &[]), ["CRD things.example.com"]);
    }
}
