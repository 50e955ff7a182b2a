//! `Operator` (group `operators.pakket.dev`, cluster-scoped): the porcelain
//! over an Input. An admin names a package in a catalog (a channel, a
//! version or range); the Operator controller writes the Input that asks
//! for it (owned by the Operator, so it goes with it), reports the Input's
//! and the installed Instances' state as `components`, and lists the
//! updates the served catalogs offer beyond what the Operator allows, in
//! its channel and in others (`status.updates`, `UpdateAvailable`).

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use pakket_resolve_api::input::InputConstraint;

/// What the admin asks for.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[kube(
    group = "operators.pakket.dev",
    version = "v1alpha1",
    kind = "Operator",
    plural = "operators",
    category = "pakket",
    status = "OperatorStatus",
    printcolumn = r#"{"name":"Package","type":"string","jsonPath":".spec.catalog.package"}"#,
    printcolumn = r#"{"name":"Ready","type":"string","jsonPath":".status.conditions[?(@.type==\"Ready\")].status"}"#,
    printcolumn = r#"{"name":"Installed","type":"string","jsonPath":".status.installedVersion"}"#,
    printcolumn = r#"{"name":"Update","type":"string","jsonPath":".status.conditions[?(@.type==\"UpdateAvailable\")].reason"}"#,
    printcolumn = r#"{"name":"Age","type":"date","jsonPath":".metadata.creationTimestamp"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct OperatorSpec {
    /// The InputClass of the Input it writes.
    #[serde(default = "subscription")]
    pub input_class: String,
    /// The package, in which Catalog, through which channel.
    pub catalog: OperatorCatalog,
    /// A version (`0.9.2`) or a range (`>=0.9.0 <1.0.0`); any when unset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// More constraints for the Input, as written there.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub constraints: Vec<InputConstraint>,
    /// Where and how the operator runs: the config of the Instance that
    /// installs it (OLM's Subscription `config`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config: Option<OperatorConfig>,
}

/// `spec.config`: what registry-v1 reads from the Instance's config.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct OperatorConfig {
    /// The namespace it runs in (default: the class's, else the CSV's
    /// suggestion, else the package's name).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 63))]
    pub install_namespace: Option<String>,
    /// The namespaces it watches; empty or unset for every namespace the
    /// bundle's install modes allow.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub watch_namespaces: Option<Vec<String>>,
    /// Its Deployments' adjustments, as OLM's Subscription `config` has
    /// them: `env`, `envFrom`, `resources`, `nodeSelector`, `tolerations`,
    /// `affinity`, `volumes`, `volumeMounts`, `annotations` (checked by
    /// registry-v1, which names any wrong field).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "pakket_api::schema::free_form_object")]
    pub deployment_config: Option<serde_json::Map<String, serde_json::Value>>,
    /// Labels and annotations (Pod Security labels first) for the install
    /// namespace if Pakket creates it; the class's own template wins over
    /// it, and an existing namespace is left as it is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace_template: Option<NamespaceTemplate>,
}

/// `spec.config.namespaceTemplate`.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
pub struct NamespaceTemplate {
    /// Labels of the namespace.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub labels: std::collections::BTreeMap<String, String>,
    /// Annotations of the namespace.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub annotations: std::collections::BTreeMap<String, String>,
}

/// The Input's `spec.config` for `spec`: its `config` as the Instance
/// reads it; `None` when it sets nothing.
pub fn config(spec: &OperatorSpec) -> Option<serde_json::Map<String, serde_json::Value>> {
    let config = serde_json::to_value(spec.config.as_ref()?).ok()?;
    config
        .as_object()
        .filter(|config| !config.is_empty())
        .cloned()
}

fn subscription() -> String {
    "subscription".into()
}

/// `spec.catalog`.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, JsonSchema)]
pub struct OperatorCatalog {
    /// The Catalog.
    pub name: String,
    /// The package.
    pub package: String,
    /// The channel; the package's default when unset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub channel: Option<String>,
}

/// Where the Operator stands.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct OperatorStatus {
    /// `UpdateAvailable`.
    #[serde(default)]
    #[schemars(schema_with = "pakket_api::schema::conditions")]
    pub conditions: Vec<Condition>,
    /// The version of the package the Input resolved to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub installed_version: Option<String>,
    /// Newer bundles the served catalogs offer, newest first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub updates: Vec<Update>,
    /// The objects the Operator stands on, with their state.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub components: Vec<Component>,
    /// The generation this status describes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
}

/// One newer bundle.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Update {
    /// The bundle.
    pub bundle: String,
    /// Its version.
    pub version: String,
    /// The channels that list it.
    pub channels: Vec<String>,
    /// Whether it is only in other channels than the Operator's.
    pub cross_channel: bool,
    /// Whether the Operator's `version` allows it.
    pub allowed: bool,
}

/// One object the Operator stands on.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, JsonSchema)]
pub struct Component {
    /// `Input` or `Instance`.
    pub kind: String,
    /// Its name.
    pub name: String,
    /// Its state: a condition's reason, or `Missing`.
    pub state: String,
}

impl Operator {
    /// The condition of type `kind`, if the status has it.
    pub fn condition(&self, kind: &str) -> Option<&Condition> {
        let status = self.status.as_ref();
        pakket_resolve_api::condition::find(status.map(|s| s.conditions.as_slice()), kind)
    }
}

/// The Input constraints the Operator stands for.
pub fn constraints(spec: &OperatorSpec) -> Vec<InputConstraint> {
    let mut catalog =
        serde_json::json!({ "name": spec.catalog.name, "package": spec.catalog.package });
    if let Some(channel) = &spec.catalog.channel {
        catalog["channel"] = channel.clone().into();
    }
    let mut constraints = vec![InputConstraint {
        type_: "olm.catalog".into(),
        value: catalog,
    }];
    if let Some(version) = &spec.version {
        constraints.push(InputConstraint {
            type_: "olm.packageVersion".into(),
            value: serde_json::json!({ "package": spec.catalog.package, "version": version }),
        });
    }
    constraints.extend(spec.constraints.iter().cloned());
    constraints
}

/// `UpdateAvailable`'s status, reason and message for `updates`.
pub fn update_condition(updates: &[Update]) -> (&'static str, &'static str, String) {
    let in_channel: Vec<&Update> = updates.iter().filter(|u| !u.cross_channel).collect();
    let list = |updates: &[&Update]| {
        updates
            .iter()
            .map(|u| format!("{} ({})", u.version, u.bundle))
            .collect::<Vec<_>>()
            .join(", ")
    };
    if let Some(first) = in_channel.first() {
        let reason = if first.allowed {
            "UpdateFound"
        } else {
            "UpdateOutsideVersion"
        };
        let advice = if first.allowed {
            "it installs on the next resolution"
        } else {
            "widen spec.version to install it"
        };
        return (
            "True",
            reason,
            format!("newer in the channel: {}; {advice}", list(&in_channel)),
        );
    }
    let other: Vec<&Update> = updates.iter().collect();
    if !other.is_empty() {
        return (
            "True",
            "CrossChannelUpdateFound",
            format!(
                "newer only in other channels: {}; change spec.catalog.channel to move to them",
                other
                    .iter()
                    .map(|u| format!(
                        "{} ({}, channel {})",
                        u.version,
                        u.bundle,
                        u.channels.join("/")
                    ))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        );
    }
    ("False", "UpToDate", "no newer bundle in the Catalog".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn update(version: &str, cross: bool, allowed: bool) -> Update {
        Update {
            bundle: format!("etcd.v{version}"),
            version: version.into(),
            channels: vec![if cross {
                "other".into()
            } else {
                "alpha".into()
            }],
            cross_channel: cross,
            allowed,
        }
    }

    #[test]
    fn the_condition_says_where_the_update_is_and_what_to_do() {
        let (status, reason, message) = update_condition(&[update("0.9.4", false, false)]);
        assert_eq!((status, reason), ("True", "UpdateOutsideVersion"));
        assert!(message.contains("widen spec.version"), "{message}");
        assert_eq!(
            update_condition(&[update("0.9.4", false, true)]).1,
            "UpdateFound"
        );
        let (_, reason, message) = update_condition(&[update("1.0.0", true, true)]);
        assert_eq!(reason, "CrossChannelUpdateFound");
        assert!(message.contains("channel other"), "{message}");
        assert_eq!(
            update_condition(&[]),
            ("False", "UpToDate", "no newer bundle in the Catalog".into())
        );
    }

    #[test]
    fn the_input_asks_for_the_catalog_package_and_version() {
        let spec = OperatorSpec {
            config: None,
            input_class: subscription(),
            catalog: OperatorCatalog {
                name: "community".into(),
                package: "etcd".into(),
                channel: Some("alpha".into()),
            },
            version: Some("0.9.2".into()),
            constraints: Vec::new(),
        };
        let constraints = constraints(&spec);
        assert_eq!(constraints[0].type_, "olm.catalog");
        assert_eq!(constraints[0].value["channel"], "alpha");
        assert_eq!(
            constraints[1].value,
            serde_json::json!({"package": "etcd", "version": "0.9.2"})
        );
    }
}

pub mod crd;
pub mod request;
pub use request::{InstallMode, OperatorRequest, OperatorRequestSpec, OperatorRequestStatus};
