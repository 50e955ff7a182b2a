//! What RBAC objects in a bundle grant, as pure functions: the grants shown
//! to an approver ([`grants`]), and the access questions `UserPermission`
//! must ask so that an Instance installs no Role, ClusterRole or binding
//! its requester could not have created by hand. The apiserver's own rules
//! ("attempting to grant RBAC permissions not currently held"):
//! - a Role or ClusterRole: the requester holds every rule in it (in the
//!   Role's namespace, or cluster-wide), or may `escalate` on it;
//! - a ClusterRole with an `aggregationRule`: the requester may `escalate`
//!   (the apiserver asks for full authority; `escalate` is the narrow form);
//! - a RoleBinding or ClusterRoleBinding: the requester holds every rule of
//!   the role it references (in the binding's namespace, or cluster-wide),
//!   or may `bind` that role.

use k8s_openapi::api::rbac::v1::{ClusterRole, PolicyRule, Role, RoleRef, Subject};
use pakket_api::RbacGrant;
use serde_json::Value;

use crate::apply::reference_of;

/// The RBAC group.
pub const RBAC_GROUP: &str = "rbac.authorization.k8s.io";

/// One question for a SubjectAccessReview.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Access {
    /// A verb on a resource.
    Resource {
        /// API group (`""` for core, `*` for any).
        group: String,
        /// Resource plural (`*` for any).
        resource: String,
        /// Subresource, if the rule names one (`pods/log`).
        subresource: String,
        /// Verb (`*` for any).
        verb: String,
        /// Namespace; `None` cluster-wide.
        namespace: Option<String>,
        /// Object name; `None` for all.
        name: Option<String>,
    },
    /// A verb on a non-resource URL.
    NonResource {
        /// The path (`/healthz`, `/logs/*`).
        path: String,
        /// The verb.
        verb: String,
    },
}

impl Access {
    /// What owning `namespace` means to Pakket: creating RoleBindings
    /// there (whoever may, may give herself any right the namespace's
    /// roles hold).
    pub fn owner_of(namespace: &str) -> Self {
        Self::Resource {
            group: RBAC_GROUP.into(),
            resource: "rolebindings".into(),
            subresource: String::new(),
            verb: "create".into(),
            namespace: Some(namespace.to_owned()),
            name: None,
        }
    }
}

impl std::fmt::Display for Access {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Resource {
                group,
                resource,
                subresource,
                verb,
                namespace,
                name,
            } => {
                write!(f, "{verb} {resource}")?;
                if !subresource.is_empty() {
                    write!(f, "/{subresource}")?;
                }
                if !group.is_empty() {
                    write!(f, ".{group}")?;
                }
                if let Some(name) = name {
                    write!(f, " named {name}")?;
                }
                match namespace {
                    Some(namespace) => write!(f, " in namespace {namespace}"),
                    None => write!(f, " cluster-wide"),
                }
            }
            Self::NonResource { path, verb } => write!(f, "{verb} on URL {path}"),
        }
    }
}

/// What one RBAC object asks of its requester.
#[derive(Clone, Debug, PartialEq)]
pub enum Need {
    /// Not an RBAC object (or one with nothing to check).
    Nothing,
    /// A role: the requester holds `rules` where they apply, or may `escalate`.
    Role {
        /// `escalate` on this role.
        escalate: Access,
        /// Every access the role grants.
        held: Vec<Access>,
        /// A ClusterRole with an aggregationRule: only `escalate` will do.
        aggregated: bool,
    },
    /// A binding: the requester holds the role's rules, or may `bind` it.
    Binding {
        /// `bind` on the referenced role.
        bind: Access,
        /// The role referenced.
        role: RoleKey,
        /// Where the role's rules would apply: the binding's namespace, or
        /// `None` cluster-wide.
        namespace: Option<String>,
    },
}

/// A role by kind, name and (for Roles) namespace.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RoleKey {
    /// `Role` or `ClusterRole`.
    pub kind: String,
    /// Its name.
    pub name: String,
    /// Its namespace (Roles only).
    pub namespace: Option<String>,
}

impl std::fmt::Display for RoleKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.namespace {
            Some(namespace) => write!(f, "{} {namespace}/{}", self.kind, self.name),
            None => write!(f, "{} {}", self.kind, self.name),
        }
    }
}

fn is_rbac(object: &Value) -> bool {
    object
        .get("apiVersion")
        .and_then(Value::as_str)
        .is_some_and(|version| version.starts_with(&format!("{RBAC_GROUP}/")))
}

/// What `object` asks of its requester; `namespace` is where it would be
/// created (namespaced kinds default to `default`).
pub fn need_of(object: &Value, namespace: Option<&str>) -> Result<Need, String> {
    if !is_rbac(object) {
        return Ok(Need::Nothing);
    }
    let reference = reference_of(object);
    let kind = reference.kind.as_str();
    let namespace = namespace.map(str::to_owned);
    let parse = |error: serde_json::Error| format!("{reference}: {error}");
    match kind {
        "Role" | "ClusterRole" => {
            let (rules, aggregated) = if kind == "Role" {
                let role: Role = serde_json::from_value(object.clone()).map_err(parse)?;
                (role.rules.unwrap_or_default(), false)
            } else {
                let role: ClusterRole = serde_json::from_value(object.clone()).map_err(parse)?;
                (
                    role.rules.unwrap_or_default(),
                    role.aggregation_rule.is_some(),
                )
            };
            let scope = if kind == "Role" {
                namespace.clone()
            } else {
                None
            };
            Ok(Need::Role {
                escalate: role_verb("escalate", kind, &reference.name, scope.clone()),
                held: rules
                    .iter()
                    .flat_map(|rule| rule_accesses(rule, scope.as_deref()))
                    .collect(),
                aggregated,
            })
        }
        "RoleBinding" | "ClusterRoleBinding" => {
            let role_ref: RoleRef = object
                .get("roleRef")
                .cloned()
                .ok_or_else(|| format!("{reference}: roleRef is missing"))
                .and_then(|value| serde_json::from_value(value).map_err(parse))?;
            let scope = if kind == "RoleBinding" {
                namespace
            } else {
                None
            };
            let role = RoleKey {
                kind: role_ref.kind.clone(),
                name: role_ref.name.clone(),
                namespace: (role_ref.kind == "Role").then(|| scope.clone()).flatten(),
            };
            Ok(Need::Binding {
                bind: role_verb("bind", &role_ref.kind, &role_ref.name, scope.clone()),
                role,
                namespace: scope,
            })
        }
        _ => Ok(Need::Nothing),
    }
}

/// The `use` questions a Pakket Instance or Bundle in content asks: the
/// admission webhooks let someone name a ProvisionerClass only with `use`
/// on it, so a requester gets a child of a class (its own, or its embedded
/// Bundle's) only if she may use that class herself.
pub fn classes_used(object: &Value) -> Vec<Access> {
    let is_core = object
        .get("apiVersion")
        .and_then(Value::as_str)
        .is_some_and(|version| version.starts_with("core.pakket.dev/"));
    let kind = object
        .get("kind")
        .and_then(Value::as_str)
        .unwrap_or_default();
    if !is_core || !matches!(kind, "Instance" | "Bundle") {
        return Vec::new();
    }
    let mut classes: Vec<&str> = ["/spec/class", "/spec/bundle/spec/class"]
        .iter()
        .filter_map(|pointer| object.pointer(pointer).and_then(Value::as_str))
        .collect();
    classes.sort_unstable();
    classes.dedup();
    classes
        .into_iter()
        .map(|class| Access::Resource {
            group: "core.pakket.dev".into(),
            resource: "provisionerclasses".into(),
            subresource: String::new(),
            verb: "use".into(),
            namespace: None,
            name: Some(class.to_owned()),
        })
        .collect()
}

/// `escalate` or `bind` on one role, asked where the role (or binding) lives.
fn role_verb(verb: &str, kind: &str, name: &str, namespace: Option<String>) -> Access {
    Access::Resource {
        group: RBAC_GROUP.into(),
        resource: if kind == "Role" {
            "roles"
        } else {
            "clusterroles"
        }
        .into(),
        subresource: String::new(),
        verb: verb.into(),
        namespace,
        name: Some(name.into()),
    }
}

/// Every access one rule grants, where it applies. Wildcards are asked as
/// wildcards: only someone who holds `*` holds `*`.
pub fn rule_accesses(rule: &PolicyRule, namespace: Option<&str>) -> Vec<Access> {
    let mut accesses = Vec::new();
    let groups = rule.api_groups.clone().unwrap_or_default();
    let resources = rule.resources.clone().unwrap_or_default();
    let names: Vec<Option<String>> = match &rule.resource_names {
        Some(names) if !names.is_empty() => names.iter().cloned().map(Some).collect(),
        _ => vec![None],
    };
    for group in &groups {
        for resource in &resources {
            let (resource, subresource) = resource
                .split_once('/')
                .map_or((resource.as_str(), ""), |(r, s)| (r, s));
            for verb in &rule.verbs {
                for name in &names {
                    accesses.push(Access::Resource {
                        group: group.clone(),
                        resource: resource.into(),
                        subresource: subresource.into(),
                        verb: verb.clone(),
                        namespace: namespace.map(str::to_owned),
                        name: name.clone(),
                    });
                }
            }
        }
    }
    for path in rule.non_resource_urls.iter().flatten() {
        for verb in &rule.verbs {
            accesses.push(Access::NonResource {
                path: path.clone(),
                verb: verb.clone(),
            });
        }
    }
    accesses
}

/// The rules of a role the bundle itself holds, if it does.
pub fn rules_in_bundle(objects: &[Value], role: &RoleKey) -> Option<Vec<PolicyRule>> {
    objects.iter().find_map(|object| {
        let reference = reference_of(object);
        let same = is_rbac(object)
            && reference.kind == role.kind
            && reference.name == role.name
            && (role.kind != "Role" || reference.namespace == role.namespace);
        if !same {
            return None;
        }
        let rules = object.get("rules").cloned().unwrap_or(Value::Null);
        Some(serde_json::from_value(rules).unwrap_or_default())
    })
}

/// What the bundle's RBAC objects grant, in words, for approvers.
pub fn grants(objects: &[Value]) -> Vec<RbacGrant> {
    objects
        .iter()
        .filter(|object| is_rbac(object))
        .filter_map(|object| {
            let reference = reference_of(object);
            let words = match reference.kind.as_str() {
                "Role" | "ClusterRole" => {
                    let mut words: Vec<String> = object
                        .get("rules")
                        .cloned()
                        .and_then(|rules| serde_json::from_value::<Vec<PolicyRule>>(rules).ok())
                        .unwrap_or_default()
                        .iter()
                        .map(describe_rule)
                        .collect();
                    if object.get("aggregationRule").is_some() {
                        words.push("aggregates the rules of matching ClusterRoles".into());
                    }
                    words
                }
                "RoleBinding" | "ClusterRoleBinding" => vec![describe_binding(object)],
                _ => return None,
            };
            Some(RbacGrant {
                object: reference,
                grants: words,
            })
        })
        .collect()
}

fn describe_rule(rule: &PolicyRule) -> String {
    let list = |items: &Option<Vec<String>>| items.clone().unwrap_or_default().join(",");
    let mut text = format!("{} on ", rule.verbs.join(","));
    if let Some(urls) = rule
        .non_resource_urls
        .as_ref()
        .filter(|urls| !urls.is_empty())
    {
        text.push_str(&format!("URLs {}", urls.join(",")));
        return text;
    }
    let groups: Vec<String> = rule
        .api_groups
        .clone()
        .unwrap_or_default()
        .into_iter()
        .map(|group| {
            if group.is_empty() {
                "core".into()
            } else {
                group
            }
        })
        .collect();
    text.push_str(&format!("{} ({})", list(&rule.resources), groups.join(",")));
    if let Some(names) = rule
        .resource_names
        .as_ref()
        .filter(|names| !names.is_empty())
    {
        text.push_str(&format!(" named {}", names.join(",")));
    }
    text
}

fn describe_binding(object: &Value) -> String {
    let role: Option<RoleRef> = object
        .get("roleRef")
        .cloned()
        .and_then(|value| serde_json::from_value(value).ok());
    let subjects: Vec<Subject> = object
        .get("subjects")
        .cloned()
        .and_then(|value| serde_json::from_value(value).ok())
        .unwrap_or_default();
    let whom: Vec<String> = subjects
        .iter()
        .map(|subject| match &subject.namespace {
            Some(namespace) => format!("{} {namespace}/{}", subject.kind, subject.name),
            None => format!("{} {}", subject.kind, subject.name),
        })
        .collect();
    match role {
        Some(role) => format!(
            "binds {} {} to {}",
            role.kind,
            role.name,
            if whom.is_empty() {
                "nobody".into()
            } else {
                whom.join(", ")
            }
        ),
        None => "a binding without a roleRef".into(),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_role_asks_for_every_rule_in_its_namespace_or_escalate() {
        let role = json!({
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
            "metadata": {"name": "r", "namespace": "team"},
            "rules": [{"apiGroups": ["", "apps"], "resources": ["pods", "pods/log"], "verbs": ["get"]}],
        });
        let Need::Role {
            escalate,
            held,
            aggregated,
        } = need_of(&role, Some("team")).unwrap()
        else {
            panic!("a role");
        };
        assert!(!aggregated);
        assert_eq!(
            escalate.to_string(),
            "escalate roles.rbac.authorization.k8s.io named r in namespace team"
        );
        let held: Vec<String> = held.iter().map(ToString::to_string).collect();
        assert_eq!(
            held,
            [
                "get pods in namespace team",
                "get pods/log in namespace team",
                "get pods.apps in namespace team",
                "get pods/log.apps in namespace team",
            ]
        );
    }

    #[test]
    fn a_cluster_role_is_held_cluster_wide_and_wildcards_stay_wildcards() {
        let role = json!({
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
            "metadata": {"name": "all"},
            "rules": [{"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]},
                      {"nonResourceURLs": ["/metrics"], "verbs": ["get"]}],
        });
        let Need::Role { held, .. } = need_of(&role, None).unwrap() else {
            panic!("a role");
        };
        assert_eq!(
            held.iter().map(ToString::to_string).collect::<Vec<_>>(),
            ["* *.* cluster-wide", "get on URL /metrics"]
        );
    }

    #[test]
    fn an_aggregated_cluster_role_needs_escalate() {
        let role = json!({
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
            "metadata": {"name": "agg"},
            "aggregationRule": {"clusterRoleSelectors": [{"matchLabels": {"x": "y"}}]},
        });
        assert!(matches!(
            need_of(&role, None).unwrap(),
            Need::Role {
                aggregated: true,
                ..
            }
        ));
    }

    #[test]
    fn a_binding_asks_for_bind_or_the_roles_rules_where_it_binds() {
        let binding = json!({
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
            "metadata": {"name": "b", "namespace": "team"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "admin"},
            "subjects": [{"kind": "User", "name": "bob"}],
        });
        let Need::Binding {
            bind,
            role,
            namespace,
        } = need_of(&binding, Some("team")).unwrap()
        else {
            panic!("a binding");
        };
        assert_eq!(
            bind.to_string(),
            "bind clusterroles.rbac.authorization.k8s.io named admin in namespace team"
        );
        assert_eq!(role.to_string(), "ClusterRole admin");
        assert_eq!(namespace.as_deref(), Some("team"));
        assert_eq!(
            grants(&[binding])[0].grants,
            ["binds ClusterRole admin to User bob"]
        );
    }

    #[test]
    fn a_role_the_bundle_holds_is_found_there() {
        let objects = vec![json!({
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
            "metadata": {"name": "mine"},
            "rules": [{"apiGroups": [""], "resources": ["secrets"], "verbs": ["list"]}],
        })];
        let key = RoleKey {
            kind: "ClusterRole".into(),
            name: "mine".into(),
            namespace: None,
        };
        assert_eq!(rules_in_bundle(&objects, &key).unwrap().len(), 1);
        assert_eq!(grants(&objects)[0].grants, ["list on secrets (core)"]);
        let other = RoleKey {
            name: "other".into(),
            ..key
        };
        assert!(rules_in_bundle(&objects, &other).is_none());
    }

    #[test]
    fn an_instance_in_content_asks_use_on_every_class_it_names() {
        let child = json!({
            "apiVersion": "core.pakket.dev/v1alpha1",
            "kind": "Instance",
            "metadata": { "name": "child" },
            "spec": {
                "class": "outer",
                "bundle": { "name": "b", "spec": { "class": "inner", "refs": [] } },
            },
        });
        let names: Vec<String> = classes_used(&child)
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(
            names,
            [
                "use provisionerclasses.core.pakket.dev named inner cluster-wide",
                "use provisionerclasses.core.pakket.dev named outer cluster-wide"
            ]
        );
        let config_map =
            json!({ "apiVersion": "v1", "kind": "ConfigMap", "metadata": { "name": "c" } });
        assert!(classes_used(&config_map).is_empty());
    }

    #[test]
    fn plain_objects_need_nothing() {
        let config_map =
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}});
        assert_eq!(
            need_of(&config_map, Some("default")).unwrap(),
            Need::Nothing
        );
        assert!(grants(&[config_map]).is_empty());
    }
}
