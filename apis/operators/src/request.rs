//! `OperatorRequest` (group `operators.pakket.dev`, namespaced): a
//! namespace owner asks for an operator watching her namespace. The
//! request becomes an [`Operator`](crate::Operator) (and through it an
//! Input) written on her behalf, sealed with her identity, so what it
//! installs is approved by the class's policy or a person as a request of
//! hers, never of the controller that wrote it. Its status mirrors the
//! approval, the install and the health of the Instance that installs the
//! operator.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::OperatorCatalog;

/// What the namespace owner asks for.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[kube(
    group = "operators.pakket.dev",
    version = "v1alpha1",
    kind = "OperatorRequest",
    plural = "operatorrequests",
    namespaced,
    category = "pakket",
    status = "OperatorRequestStatus",
    printcolumn = r#"{"name":"Package","type":"string","jsonPath":".spec.catalog.package"}"#,
    printcolumn = r#"{"name":"Accepted","type":"string","jsonPath":".status.conditions[?(@.type==\"Accepted\")].status"}"#,
    printcolumn = r#"{"name":"Approved","type":"string","jsonPath":".status.conditions[?(@.type==\"Approved\")].status"}"#,
    printcolumn = r#"{"name":"Installed","type":"string","jsonPath":".status.installedVersion"}"#,
    printcolumn = r#"{"name":"Age","type":"date","jsonPath":".metadata.creationTimestamp"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct OperatorRequestSpec {
    /// The package, in which Catalog, through which channel.
    pub catalog: OperatorCatalog,
    /// A version (`0.9.2`) or a range (`>=0.9.0 <1.0.0`); any when unset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// How the operator is installed; it always watches this namespace.
    #[serde(default)]
    pub install_mode: InstallMode,
    /// `SingleNamespace` only: the namespace it runs in, another one the
    /// requester owns (she may create RoleBindings there).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 63))]
    pub install_namespace: Option<String>,
}

/// How the operator is installed (OLM's install modes a namespace owner
/// may ask for; `AllNamespaces` and `MultiNamespace` are an admin's, through
/// an Operator).
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq, JsonSchema)]
pub enum InstallMode {
    /// Runs in this namespace and watches it.
    #[default]
    OwnNamespace,
    /// Runs in `installNamespace` and watches this namespace.
    SingleNamespace,
}

/// Where the request stands.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct OperatorRequestStatus {
    /// `Accepted` (whether an Operator was written for it, or why not),
    /// and the `Approved`, `Installed` and `Healthy` conditions of the
    /// Instance that installs the operator, as it has them.
    #[serde(default)]
    #[schemars(schema_with = "pakket_api::schema::conditions")]
    pub conditions: Vec<Condition>,
    /// The Operator written for it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub operator: Option<String>,
    /// The Instance that installs the operator.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instance: Option<String>,
    /// The version installed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub installed_version: Option<String>,
    /// The generation this status describes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
}

/// The annotation on an Operator naming the request it was written for
/// (`NAMESPACE/NAME`).
pub const REQUEST_ANNOTATION: &str = "operators.pakket.dev/request";
/// The annotation sealing [`REQUEST_ANNOTATION`] with the record key: only
/// an Operator carrying it is one the controller wrote, and deletes.
pub const REQUEST_SEAL_ANNOTATION: &str = "operators.pakket.dev/request-seal";

/// The Operator written for request `namespace/name`: a digest of both,
/// so no two requests share one and none is longer than a name may be.
pub fn operator_name(namespace: &str, name: &str) -> String {
    use sha2::{Digest as _, Sha256};
    let digest = hex::encode(Sha256::digest(format!("{namespace}/{name}").as_bytes()));
    format!("request-{}", &digest[..20])
}

impl OperatorRequest {
    /// The condition of type `kind`, if the status has it.
    pub fn condition(&self, kind: &str) -> Option<&Condition> {
        let status = self.status.as_ref();
        pakket_resolve_api::condition::find(status.map(|s| s.conditions.as_slice()), kind)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_request_has_its_own_operator_name() {
        assert_ne!(operator_name("a-b", "c"), operator_name("a", "b-c"));
        assert_eq!(
            operator_name("team-a", "etcd"),
            operator_name("team-a", "etcd")
        );
        assert!(operator_name("team-a", &"x".repeat(253)).len() <= 63);
    }
}
