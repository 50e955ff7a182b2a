//! What content asks of the cluster beyond plain objects, as a set that can
//! be compared with another: the RBAC rules its Roles and ClusterRoles
//! hold, whom its bindings bind to what, the CRDs it defines and the
//! admission webhooks and APIServices it registers. The approval policy
//! `Android` ([`crate::approval::android`]) approves new content by itself
//! only when it asks for nothing the running content did not: an update
//! that asks for more waits for a person, like an app update that wants a
//! new permission.
//!
//! Rights are compared by what they mean, not by what they are called:
//! - per subject: every rule a subject of a binding gets from a role the
//!   content defines, where the binding applies, so a rule moved from one
//!   subject to another is a new right for the one receiving it;
//! - a ClusterRole whose labels aggregate it into another role (an
//!   `rbac.authorization.k8s.io/aggregate-to-*` label, or labels an
//!   `aggregationRule` of the cluster or the content selects) hands its
//!   rules to every holder of that role;
//! - admission webhooks, CRD conversion and APIServices by their whole
//!   configuration (rules, scope, selectors, `clientConfig`,
//!   `failurePolicy`, `sideEffects`, `matchPolicy`, conversion strategy,
//!   service): any difference but a `caBundle` is a new right.
//!
//! Pure functions over rendered objects; the aggregating roles the cluster
//! has are given as a value ([`Aggregator`]).

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use k8s_openapi::api::rbac::v1::PolicyRule;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
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
    /// A binding of a subject to a role the content does not define (it
    /// hands out rights the cluster already has, such as `cluster-admin`);
    /// a binding to a role of the content's own is counted as the rules
    /// it gives ([`Right::Held`]).
    Binding {
        /// The binding's namespace; `None` for a ClusterRoleBinding.
        namespace: Option<String>,
        /// `Kind namespace/name` of the subject.
        subject: String,
        /// The role the binding names, as `Kind name`.
        role: String,
    },
    /// A rule a subject holds through a role the content defines (or a
    /// role the content's ClusterRoles are aggregated into): what the
    /// subject can do, whatever the roles and bindings are called.
    Held {
        /// `Kind namespace/name` of the subject, or `holders of ClusterRole
        /// NAME` for an aggregated role.
        subject: String,
        /// One verb on one resource, where it applies.
        access: Access,
    },
    /// A CustomResourceDefinition (its name).
    Crd(String),
    /// A CRD's conversion webhook: the CRD's name and its conversion
    /// settings (a digest of them, `caBundle` left out).
    CrdConversion {
        /// The CRD's name.
        crd: String,
        /// Digest of `spec.conversion` without `caBundle`.
        config: String,
    },
    /// An admission webhook: its configuration's kind and name, the
    /// webhook's name in it, and its whole configuration.
    Webhook {
        /// `ValidatingWebhookConfiguration` or `MutatingWebhookConfiguration`.
        kind: String,
        /// The configuration's name.
        configuration: String,
        /// The webhook's name.
        webhook: String,
        /// Digest of the webhook's entry without `clientConfig.caBundle`.
        config: String,
    },
    /// An APIService: an aggregated API served by the content.
    ApiService {
        /// Its name.
        name: String,
        /// Digest of its spec without `caBundle`.
        config: String,
    },
}

/// A ClusterRole of the cluster with an `aggregationRule`: whoever holds it
/// gets the rules of every ClusterRole its selectors match.
#[derive(Clone, Debug, PartialEq)]
pub struct Aggregator {
    /// The aggregating ClusterRole's name.
    pub name: String,
    /// Its `aggregationRule.clusterRoleSelectors`.
    pub selectors: Vec<LabelSelector>,
}

impl Aggregator {
    /// The aggregator `role` is (a ClusterRole with an `aggregationRule`),
    /// if it is one.
    pub fn of(role: &Value) -> Option<Self> {
        let selectors = role.pointer("/aggregationRule/clusterRoleSelectors")?;
        Some(Self {
            name: role
                .pointer("/metadata/name")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned(),
            selectors: serde_json::from_value(selectors.clone()).unwrap_or_default(),
        })
    }

    /// Whether a ClusterRole labelled `labels` is aggregated into this one.
    fn selects(&self, labels: &BTreeMap<String, String>) -> bool {
        self.selectors
            .iter()
            .any(|selector| selector_matches(selector, labels))
    }
}

/// Whether `labels` match `selector` (an empty selector matches nothing
/// here: Kubernetes aggregates nothing for it).
fn selector_matches(selector: &LabelSelector, labels: &BTreeMap<String, String>) -> bool {
    let wanted = selector.match_labels.iter().flatten();
    let expressions = selector.match_expressions.iter().flatten();
    if selector
        .match_labels
        .as_ref()
        .is_none_or(BTreeMap::is_empty)
        && selector
            .match_expressions
            .as_ref()
            .is_none_or(Vec::is_empty)
    {
        return false;
    }
    wanted
        .clone()
        .all(|(key, value)| labels.get(key) == Some(value))
        && expressions.clone().all(|expression| {
            let found = labels.get(&expression.key);
            let values = expression.values.as_deref().unwrap_or_default();
            match expression.operator.as_str() {
                "In" => found.is_some_and(|value| values.contains(value)),
                "NotIn" => found.is_none_or(|value| !values.contains(value)),
                "Exists" => found.is_some(),
                "DoesNotExist" => found.is_none(),
                _ => false,
            }
        })
}

/// The label prefix by which Kubernetes' own roles (`admin`, `edit`,
/// `view`, ...) aggregate others: a label `aggregate-to-NAME` hands the
/// role's rules to holders of ClusterRole NAME, whether or not an
/// aggregating role selects it yet.
const AGGREGATE_TO: &str = "rbac.authorization.k8s.io/aggregate-to-";

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
            } => match namespace {
                Some(namespace) => {
                    write!(f, "{subject} bound to {role} in namespace {namespace}")
                }
                None => write!(f, "{subject} bound to {role} cluster-wide"),
            },
            Self::Held { subject, access } => write!(f, "{subject} given the rule {access}"),
            Self::Crd(name) => write!(f, "CRD {name}"),
            Self::CrdConversion { crd, config } => {
                write!(
                    f,
                    "the conversion webhook of CRD {crd} as configured now ({})",
                    short(config)
                )
            }
            Self::Webhook {
                kind,
                configuration,
                webhook,
                config,
            } => write!(
                f,
                "webhook {webhook} of {kind} {configuration} as configured now ({})",
                short(config)
            ),
            Self::ApiService { name, config } => {
                write!(f, "APIService {name} as configured now ({})", short(config))
            }
        }
    }
}

/// A digest, shortened for a sentence.
fn short(digest: &str) -> &str {
    let end = digest.len().min("sha256:".len() + 12);
    &digest[..end]
}

/// Everything some content asks for.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Rights(BTreeSet<Right>);

/// A Role or ClusterRole of the content: the object, its name, and the
/// namespace its rules hold in (`None`: a ClusterRole's, everywhere).
struct Role<'a> {
    object: &'a Value,
    name: &'a str,
    scope: Option<&'a str>,
}

/// What a Role or ClusterRole gives: its rules, an aggregation it asks
/// for, and its rules again for the holders of every ClusterRole it is
/// aggregated into.
fn role_rights(role: Role<'_>, aggregators: &[Aggregator], rights: &mut BTreeSet<Right>) {
    let rules: Vec<PolicyRule> = role
        .object
        .get("rules")
        .cloned()
        .and_then(|rules| serde_json::from_value(rules).ok())
        .unwrap_or_default();
    for rule in &rules {
        rights.extend(
            rbac::rule_accesses(rule, role.scope)
                .into_iter()
                .map(Right::Rule),
        );
    }
    if role
        .object
        .get("aggregationRule")
        .is_some_and(|a| !a.is_null())
    {
        rights.insert(Right::Aggregation(role.name.to_owned()));
    }
    if role.scope.is_some() || !is_rbac_kind(role.object, "ClusterRole") {
        return;
    }
    for holder in aggregated_into(role.object, aggregators) {
        for rule in &rules {
            rights.extend(
                rbac::rule_accesses(rule, None)
                    .into_iter()
                    .map(|access| Right::Held {
                        subject: format!("holders of ClusterRole {holder}"),
                        access,
                    }),
            );
        }
    }
}

/// What a RoleBinding or ClusterRoleBinding gives each subject: the
/// rules it binds, and the binding itself for a role from elsewhere.
fn binding_rights(
    object: &Value,
    objects: &[Value],
    scope: Option<String>,
    rights: &mut BTreeSet<Right>,
) {
    let role = binding_role(object, objects, scope.as_deref());
    let held = bound_rules(object, objects, scope.as_deref());
    for subject in subjects(object, scope.as_deref()) {
        rights.extend(held.iter().map(|access| Right::Held {
            subject: subject.clone(),
            access: access.clone(),
        }));
        // A role the content defines is counted by what it gives (above);
        // one from elsewhere by its name.
        if let Some(role) = &role {
            rights.insert(Right::Binding {
                namespace: scope.clone(),
                subject,
                role: role.clone(),
            });
        }
    }
}

/// A CRD, and its conversion webhook's configuration when it has one.
fn crd_rights(object: &Value, name: &str, rights: &mut BTreeSet<Right>) {
    rights.insert(Right::Crd(name.to_owned()));
    if let Some(conversion) = object.pointer("/spec/conversion")
        && conversion
            .get("strategy")
            .and_then(Value::as_str)
            .unwrap_or("None")
            != "None"
    {
        rights.insert(Right::CrdConversion {
            crd: name.to_owned(),
            config: configuration_digest(conversion),
        });
    }
}

/// Each webhook of an admission webhook configuration, with what it is
/// sent (its configuration, defaults filled in).
fn webhook_rights(object: &Value, kind: &str, configuration: &str, rights: &mut BTreeSet<Right>) {
    let webhooks = object.get("webhooks").and_then(Value::as_array);
    for webhook in webhooks.into_iter().flatten() {
        rights.insert(Right::Webhook {
            kind: kind.to_owned(),
            configuration: configuration.to_owned(),
            webhook: webhook
                .get("name")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned(),
            config: configuration_digest(&with_webhook_defaults(
                webhook,
                kind == "MutatingWebhookConfiguration",
            )),
        });
    }
}

impl Rights {
    /// What `objects` (rendered content) ask for, on a cluster without
    /// aggregating roles of its own.
    pub fn of(objects: &[Value]) -> Self {
        Self::of_in(objects, &[])
    }

    /// What `objects` ask for on a cluster whose aggregating ClusterRoles
    /// are `cluster` (the content's own are added).
    pub fn of_in(objects: &[Value], cluster: &[Aggregator]) -> Self {
        let mut aggregators: Vec<Aggregator> = cluster.to_vec();
        aggregators.extend(
            objects
                .iter()
                .filter(|o| is_rbac_kind(o, "ClusterRole"))
                .filter_map(Aggregator::of),
        );
        let mut rights = BTreeSet::new();
        for object in objects {
            let reference = reference_of(object);
            let group = reference.api_version.split('/').next().unwrap_or_default();
            let namespace = reference.namespace.clone().filter(|n| !n.is_empty());
            let kind = reference.kind.as_str();
            match (group, kind) {
                (rbac::RBAC_GROUP, "Role" | "ClusterRole") => {
                    let scope = (kind == "Role").then_some(namespace).flatten();
                    let role = Role {
                        object,
                        name: &reference.name,
                        scope: scope.as_deref(),
                    };
                    role_rights(role, &aggregators, &mut rights);
                }
                (rbac::RBAC_GROUP, "RoleBinding" | "ClusterRoleBinding") => {
                    let scope = (kind == "RoleBinding").then_some(namespace).flatten();
                    binding_rights(object, objects, scope, &mut rights);
                }
                ("apiextensions.k8s.io", "CustomResourceDefinition") => {
                    crd_rights(object, &reference.name, &mut rights);
                }
                (
                    "admissionregistration.k8s.io",
                    "ValidatingWebhookConfiguration" | "MutatingWebhookConfiguration",
                ) => webhook_rights(object, kind, &reference.name, &mut rights),
                ("apiregistration.k8s.io", "APIService") => {
                    rights.insert(Right::ApiService {
                        name: reference.name.clone(),
                        config: configuration_digest(object.get("spec").unwrap_or(&Value::Null)),
                    });
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
        match right {
            Right::Rule(wanted) => self.0.iter().any(|held| match held {
                Right::Rule(held) => access_covers(held, wanted),
                _ => false,
            }),
            Right::Held {
                subject: wanted_subject,
                access: wanted,
            } => self.0.iter().any(|held| match held {
                Right::Held { subject, access } => {
                    subject == wanted_subject && access_covers(access, wanted)
                }
                _ => false,
            }),
            _ => false,
        }
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

/// Whether `object` is an RBAC object of `kind`.
fn is_rbac_kind(object: &Value, kind: &str) -> bool {
    let reference = reference_of(object);
    reference.kind == kind
        && reference
            .api_version
            .starts_with(&format!("{}/", rbac::RBAC_GROUP))
}

/// The ClusterRoles a ClusterRole is aggregated into, by its labels.
fn aggregated_into(role: &Value, aggregators: &[Aggregator]) -> BTreeSet<String> {
    let labels: BTreeMap<String, String> = role
        .pointer("/metadata/labels")
        .cloned()
        .and_then(|labels| serde_json::from_value(labels).ok())
        .unwrap_or_default();
    let mut into: BTreeSet<String> = labels
        .iter()
        .filter(|(_, value)| value.as_str() == "true")
        .filter_map(|(key, _)| key.strip_prefix(AGGREGATE_TO))
        .map(str::to_owned)
        .collect();
    into.extend(
        aggregators
            .iter()
            .filter(|aggregator| aggregator.selects(&labels))
            .map(|aggregator| aggregator.name.clone()),
    );
    into
}

/// The accesses a binding gives its subjects through a role the content
/// defines, where the binding applies (none for a role from elsewhere:
/// that is a [`Right::Binding`] naming it).
fn bound_rules(binding: &Value, objects: &[Value], scope: Option<&str>) -> Vec<Access> {
    let text = |pointer: &str| {
        binding
            .pointer(pointer)
            .and_then(Value::as_str)
            .unwrap_or_default()
    };
    let (kind, name) = (text("/roleRef/kind"), text("/roleRef/name"));
    let Some(role) = objects.iter().find(|object| {
        let reference = reference_of(object);
        is_rbac_kind(object, kind)
            && reference.name == name
            && (kind != "Role" || reference.namespace.as_deref() == scope)
    }) else {
        return Vec::new();
    };
    let rules: Vec<PolicyRule> = role
        .get("rules")
        .cloned()
        .and_then(|rules| serde_json::from_value(rules).ok())
        .unwrap_or_default();
    rules
        .iter()
        .flat_map(|rule| rbac::rule_accesses(rule, scope))
        .collect()
}

/// A digest of a configuration with every `caBundle` left out (rotating a
/// certificate is no new right; anything else is).
/// `webhook` as the apiserver stores it (admissionregistration/v1's
/// defaults filled in): content renders a webhook without the fields the
/// apiserver defaults, and the same webhook read back from the cluster
/// has them, so the two must digest the same.
fn with_webhook_defaults(webhook: &Value, mutating: bool) -> Value {
    let mut webhook = webhook.clone();
    let Some(fields) = webhook.as_object_mut() else {
        return webhook;
    };
    let mut defaults = vec![
        ("failurePolicy", Value::from("Fail")),
        ("matchPolicy", Value::from("Equivalent")),
        ("namespaceSelector", Value::Object(serde_json::Map::new())),
        ("objectSelector", Value::Object(serde_json::Map::new())),
        ("timeoutSeconds", Value::from(10)),
    ];
    if mutating {
        defaults.push(("reinvocationPolicy", Value::from("Never")));
    }
    for (field, value) in defaults {
        fields.entry(field).or_insert(value);
    }
    if let Some(service) = fields
        .get_mut("clientConfig")
        .and_then(|config| config.get_mut("service"))
        .and_then(Value::as_object_mut)
    {
        service.entry("port").or_insert(Value::from(443));
    }
    for rule in fields
        .get_mut("rules")
        .and_then(Value::as_array_mut)
        .into_iter()
        .flatten()
        .filter_map(Value::as_object_mut)
    {
        rule.entry("scope").or_insert(Value::from("*"));
    }
    webhook
}

fn configuration_digest(configuration: &Value) -> String {
    fn without_ca_bundles(value: &Value) -> Value {
        match value {
            Value::Object(fields) => Value::Object(
                fields
                    .iter()
                    .filter(|(key, _)| key.as_str() != "caBundle")
                    .map(|(key, value)| (key.clone(), without_ca_bundles(value)))
                    .collect(),
            ),
            Value::Array(items) => Value::Array(items.iter().map(without_ca_bundles).collect()),
            other => other.clone(),
        }
    }
    pakket_api::value_digest(&without_ca_bundles(configuration))
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

    fn bound_to(
        subject: &str,
        kind: &str,
        namespace: Option<&str>,
        role_kind: &str,
        role: &str,
    ) -> Value {
        let mut made = binding(kind, namespace, role_kind, role);
        made["metadata"]["name"] = json!(format!("{role}-{subject}"));
        made["subjects"] =
            json!([{ "kind": "ServiceAccount", "name": subject, "namespace": "ns" }]);
        made
    }

    #[test]
    fn a_rule_moved_from_one_subject_to_another_is_new_for_the_receiver() {
        let secrets = json!([{ "apiGroups": [""], "resources": ["secrets"], "verbs": ["get"] }]);
        let pods = json!([{ "apiGroups": [""], "resources": ["pods"], "verbs": ["get"] }]);
        let old = [
            role("ClusterRole", None, "reader", secrets.clone()),
            role("ClusterRole", None, "lister", pods.clone()),
            bound_to(
                "operator",
                "ClusterRoleBinding",
                None,
                "ClusterRole",
                "reader",
            ),
            bound_to("webui", "ClusterRoleBinding", None, "ClusterRole", "lister"),
        ];
        // The same two roles with the same names, the bindings swapped:
        // no new rule, no new binding name, but webui now reads Secrets.
        let new = [
            role("ClusterRole", None, "reader", secrets),
            role("ClusterRole", None, "lister", pods),
            bound_to("webui", "ClusterRoleBinding", None, "ClusterRole", "reader"),
            bound_to(
                "operator",
                "ClusterRoleBinding",
                None,
                "ClusterRole",
                "lister",
            ),
        ];
        let beyond = described(&new, &old);
        assert!(
            beyond.contains(
                &"ServiceAccount ns/webui given the rule get secrets cluster-wide".to_owned()
            ),
            "{beyond:?}"
        );
        assert!(
            beyond.contains(
                &"ServiceAccount ns/operator given the rule get pods cluster-wide".to_owned()
            ),
            "{beyond:?}"
        );
        // A wider scope for the same subject is new too; a narrower one is not.
        let namespaced = [
            role(
                "ClusterRole",
                None,
                "reader",
                json!([{ "apiGroups": [""], "resources": ["secrets"], "verbs": ["get"] }]),
            ),
            bound_to(
                "operator",
                "RoleBinding",
                Some("ns"),
                "ClusterRole",
                "reader",
            ),
        ];
        assert!(described(&namespaced, &old).is_empty());
        assert!(!described(&old, &namespaced).is_empty());
    }

    #[test]
    fn a_label_that_aggregates_a_cluster_role_hands_its_rules_to_every_holder() {
        let rules =
            json!([{ "apiGroups": [""], "resources": ["secrets"], "verbs": ["get", "list"] }]);
        let plain = role("ClusterRole", None, "op-reader", rules.clone());
        let mut to_view = role("ClusterRole", None, "op-reader", rules.clone());
        to_view["metadata"]["labels"] =
            json!({ "rbac.authorization.k8s.io/aggregate-to-view": "true" });
        let beyond = described(std::slice::from_ref(&to_view), std::slice::from_ref(&plain));
        assert!(
            beyond.contains(
                &"holders of ClusterRole view given the rule list secrets cluster-wide".to_owned()
            ),
            "{beyond:?}"
        );
        // Any label an aggregating role of the cluster selects does the same.
        let mut team = plain.clone();
        team["metadata"]["labels"] = json!({ "example.com/team-role": "yes" });
        let cluster = [Aggregator {
            name: "team".into(),
            selectors: vec![
                serde_json::from_value(
                    json!({ "matchLabels": { "example.com/team-role": "yes" } }),
                )
                .unwrap(),
            ],
        }];
        let beyond: Vec<String> = Rights::of_in(&[team.clone()], &cluster)
            .beyond(&Rights::of_in(std::slice::from_ref(&plain), &cluster))
            .into_iter()
            .map(ToString::to_string)
            .collect();
        assert!(
            beyond.contains(
                &"holders of ClusterRole team given the rule get secrets cluster-wide".to_owned()
            ),
            "{beyond:?}"
        );
        // Labels no role selects hand nothing out.
        assert!(
            Rights::of_in(&[team], &[])
                .beyond(&Rights::of_in(&[plain], &[]))
                .is_empty()
        );
    }

    #[test]
    fn a_webhook_read_back_with_the_apiservers_defaults_is_the_one_rendered() {
        // As registry-v1 renders it, and as the apiserver returns it.
        let rendered = json!({
            "apiVersion": "admissionregistration.k8s.io/v1", "kind": "MutatingWebhookConfiguration",
            "metadata": { "name": "op" },
            "webhooks": [{
                "name": "mutate.example.com",
                "clientConfig": { "service": { "name": "op", "namespace": "op", "path": "/mutate" }, "caBundle": "AAAA" },
                "rules": [{ "operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["configmaps"] }],
                "sideEffects": "None", "admissionReviewVersions": ["v1"],
            }],
        });
        let mut stored = rendered.clone();
        let webhook = &mut stored["webhooks"][0];
        webhook["failurePolicy"] = json!("Fail");
        webhook["matchPolicy"] = json!("Equivalent");
        webhook["namespaceSelector"] = json!({});
        webhook["objectSelector"] = json!({});
        webhook["timeoutSeconds"] = json!(10);
        webhook["reinvocationPolicy"] = json!("Never");
        webhook["clientConfig"]["service"]["port"] = json!(443);
        webhook["clientConfig"]["caBundle"] = json!("BBBB");
        webhook["rules"][0]["scope"] = json!("*");
        assert!(
            described(
                std::slice::from_ref(&rendered),
                std::slice::from_ref(&stored)
            )
            .is_empty(),
            "defaults and a rotated caBundle are no new right"
        );
        // A default changed is one.
        let mut widened = rendered;
        widened["webhooks"][0]["failurePolicy"] = json!("Ignore");
        assert_eq!(described(&[widened], &[stored]).len(), 1);
    }

    #[test]
    fn webhooks_conversion_and_apiservices_are_compared_by_their_whole_configuration() {
        let webhook = |url: &str, ca: &str, policy: &str| {
            json!({
                "apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration",
                "metadata": { "name": "op" },
                "webhooks": [{
                    "name": "check.example.com",
                    "clientConfig": { "url": url, "caBundle": ca },
                    "failurePolicy": policy,
                    "rules": [{ "operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["pods"] }],
                }],
            })
        };
        let running = [webhook("https://op.example.com/check", "AAAA", "Fail")];
        assert!(
            described(
                &[webhook("https://op.example.com/check", "BBBB", "Fail")],
                &running
            )
            .is_empty(),
            "a rotated caBundle is no new right"
        );
        assert_eq!(
            described(
                &[webhook("https://elsewhere.example.com/", "AAAA", "Fail")],
                &running
            )
            .len(),
            1
        );
        assert_eq!(
            described(
                &[webhook("https://op.example.com/check", "AAAA", "Ignore")],
                &running
            )
            .len(),
            1
        );

        let crd = |service: &str| {
            json!({
                "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
                "metadata": { "name": "things.example.com" },
                "spec": { "conversion": { "strategy": "Webhook", "webhook": {
                    "conversionReviewVersions": ["v1"],
                    "clientConfig": { "service": { "name": service, "namespace": "op" }, "caBundle": "AAAA" },
                } } },
            })
        };
        let beyond = described(&[crd("evil")], &[crd("op")]);
        assert_eq!(beyond.len(), 1, "{beyond:?}");
        assert!(
            beyond[0].contains("conversion webhook of CRD things.example.com"),
            "{beyond:?}"
        );

        let service = |name: &str| {
            json!({
                "apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
                "metadata": { "name": "v1.metrics.example.com" },
                "spec": { "service": { "name": name, "namespace": "op" }, "group": "metrics.example.com", "version": "v1" },
            })
        };
        assert!(described(&[service("op")], &[service("op")]).is_empty());
        assert_eq!(described(&[service("evil")], &[service("op")]).len(), 1);
    }
}
