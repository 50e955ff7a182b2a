//! A reference to one Kubernetes object that a Bundle holds or an Instance owns.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Enough to find one object: apiVersion, kind, name and (if namespaced) namespace.
#[derive(
    Serialize, Deserialize, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, JsonSchema,
)]
#[serde(rename_all = "camelCase")]
pub struct ObjectRef {
    /// `group/version`, or `version` for the core group.
    pub api_version: String,
    /// The object's kind.
    pub kind: String,
    /// The object's name.
    pub name: String,
    /// The object's namespace; absent for cluster-scoped objects.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
}

impl std::fmt::Display for ObjectRef {
    /// `kind/name` or `kind/namespace/name`, short enough for a status message.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.namespace {
            Some(namespace) => write!(f, "{}/{}/{}", self.kind, namespace, self.name),
            None => write!(f, "{}/{}", self.kind, self.name),
        }
    }
}
