//! The helm API group (`helm.pakket.dev/v1alpha1`).
//!
//! A `HelmChart` is a namespace owner's Helm chart, installed into her
//! namespace by pakket-helm as an Instance of the helm class sealed with
//! her identity: the class approves by `UserPermission`, so she gets
//! exactly what she could have created by hand, and a chart with anything
//! cluster-scoped or outside her namespace is refused before anything is
//! written. Its status mirrors that Instance's approval, install and
//! health.

pub mod crd;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The group.
pub const GROUP: &str = "helm.pakket.dev";

/// What the namespace owner asks for.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[kube(
    group = "helm.pakket.dev",
    version = "v1alpha1",
    kind = "HelmChart",
    plural = "helmcharts",
    namespaced,
    category = "pakket",
    status = "HelmChartStatus",
    printcolumn = r#"{"name":"Chart","type":"string","jsonPath":".spec.chart"}"#,
    printcolumn = r#"{"name":"Ready","type":"string","jsonPath":".status.conditions[?(@.type==\"Ready\")].status"}"#,
    printcolumn = r#"{"name":"Approved","type":"string","jsonPath":".status.conditions[?(@.type==\"Approved\")].status"}"#,
    printcolumn = r#"{"name":"Installed","type":"string","jsonPath":".status.conditions[?(@.type==\"Installed\")].status"}"#,
    printcolumn = r#"{"name":"Age","type":"date","jsonPath":".metadata.creationTimestamp"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct HelmChartSpec {
    /// The chart, pinned when installed: `helm+https://REPOSITORY/#CHART@VERSION`
    /// (a chart repository) or `oci://REGISTRY/PATH:VERSION`. Upgrade by
    /// naming another version.
    #[schemars(length(max = 1024))]
    #[schemars(extend("x-kubernetes-validations" = [{
        "rule": "self.matches('^(helm\\\\+https|oci)://.+')",
        "message": "spec.chart must be helm+https://REPOSITORY/#CHART@VERSION or oci://REGISTRY/PATH:VERSION",
    }]))]
    pub chart: String,
    /// `.Release.Name`; default the HelmChart's name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub release_name: Option<String>,
    /// The chart's values, over its `values.yaml`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("x-kubernetes-preserve-unknown-fields" = true))]
    pub values: Option<serde_json::Map<String, serde_json::Value>>,
    /// Values read from ConfigMaps or Secrets in the HelmChart's
    /// namespace, merged in order, then `values` over them (as Flux's
    /// HelmRelease merges them). Each is read only if the HelmChart's
    /// author may `get` it herself; a Secret's values are never written
    /// into the Instance.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 32))]
    pub values_from: Vec<ValuesReference>,
}

/// One source of values: a key of a ConfigMap or Secret holding a YAML
/// map of values.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ValuesReference {
    /// `ConfigMap` or `Secret`.
    pub kind: ValuesKind,
    /// Its name, in the HelmChart's namespace.
    #[schemars(length(min = 1, max = 253))]
    pub name: String,
    /// The key holding the values; default `values.yaml`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 253))]
    pub values_key: Option<String>,
    /// When true, a missing object or key adds nothing instead of
    /// stopping the install.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub optional: bool,
}

/// The kind values are read from.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, JsonSchema)]
pub enum ValuesKind {
    /// A ConfigMap's key: its values are written into the Instance.
    ConfigMap,
    /// A Secret's key: its values reach the provisioner in the process only.
    Secret,
}

/// The key values are read from when a reference names none.
pub const DEFAULT_VALUES_KEY: &str = "values.yaml";

/// Where the chart stands, as its Instance says.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HelmChartStatus {
    /// `Accepted` (an Instance is written for it, or why not), and the
    /// Instance's `Unpacked`, `Approved`, `Installed` and `Healthy`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
    /// The Instance that installs it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instance: Option<String>,
    /// The generation the status speaks of.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
}
