//! `ProvisionerClass`: one configuration of one provisioner, like a StorageClass.

use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Which provisioner acts on Bundles and Instances that name this class, and
/// the parameters it reads (`approval`, `maxObjectSize`, `matchBundle`, ...).
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[kube(
    group = "core.pakket.dev",
    version = "v1alpha1",
    kind = "ProvisionerClass",
    plural = "provisionerclasses",
    shortname = "provclass",
    category = "pakket",
    status = "ProvisionerClassStatus",
    printcolumn = r#"{"name":"Provisioner","type":"string","jsonPath":".spec.provisioner"}"#,
    printcolumn = r#"{"name":"Claimed","type":"date","jsonPath":".status.claimed.claimedAt"}"#,
    printcolumn = r#"{"name":"Age","type":"date","jsonPath":".metadata.creationTimestamp"}"#
)]
pub struct ProvisionerClassSpec {
    /// The unique id of the provisioner, e.g. `pakket.dev/registry-v1`.
    #[schemars(length(min = 1, max = 253))]
    #[schemars(extend("x-kubernetes-validations" = [{
        "rule": "self.matches('^[a-z0-9]([-a-z0-9.]*[a-z0-9])?/[a-zA-Z0-9]([-a-zA-Z0-9_.]*[a-zA-Z0-9])?$')",
        "message": "spec.provisioner must be a domain-prefixed id such as pakket.dev/registry-v1",
    }]))]
    pub provisioner: String,

    /// Provisioner-specific settings; kept as written.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::schema::free_form_object")]
    pub parameters: Option<serde_json::Map<String, serde_json::Value>>,
}

/// What the provisioner a class names has said of it.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ProvisionerClassStatus {
    /// Set by the provisioner `spec.provisioner` names once it runs and
    /// serves the class. Absent: no provisioner with that id has ever run
    /// (a typo in the id, or one not installed), so Instances of the class
    /// get no finalizer and nothing installs them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub claimed: Option<ClassClaim>,
    /// `Ready` (True once claimed), with kstatus's `Reconciling` and
    /// `Stalled`, written with the claim. A class never claimed has no
    /// status at all: `kubectl instance why` names the missing provisioner.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(schema_with = "crate::schema::conditions")]
    pub conditions: Vec<k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition>,
}

/// A provisioner's claim on a class.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClassClaim {
    /// The provisioner id that claimed it.
    pub provisioner: String,
    /// When (RFC 3339).
    pub claimed_at: String,
}

impl ProvisionerClass {
    /// Whether the provisioner `spec.provisioner` names has claimed this
    /// class (a claim by an earlier id, before the spec changed, is none).
    pub fn is_claimed(&self) -> bool {
        self.status
            .as_ref()
            .and_then(|status| status.claimed.as_ref())
            .is_some_and(|claim| claim.provisioner == self.spec.provisioner)
    }

    /// A string parameter, if set.
    pub fn parameter_str(&self, name: &str) -> Option<&str> {
        self.spec.parameters.as_ref()?.get(name)?.as_str()
    }
}
