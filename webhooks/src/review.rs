//! The parts of an `AdmissionRequest` the rules read, in Pakket's words: who
//! asks ([`Requester`]), about what ([`Target`]), and the objects decoded into
//! their Rust types.
//!
//! The wire types are kube-core's `admission` module (AdmissionReview v1).

use std::collections::BTreeMap;
use std::fmt;

use k8s_openapi::api::authentication::v1::UserInfo;
use kube::core::DynamicObject;
use kube::core::admission::AdmissionRequest;
use pakket_api::CreatorRecord;
use serde::de::DeserializeOwned;

/// An admission request as the apiserver sends it, objects left untyped.
pub type Request = AdmissionRequest<DynamicObject>;

/// The authenticated identity behind a request: exactly what a
/// SubjectAccessReview needs to ask about that identity.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Requester {
    /// The user name (`alice`, `system:serviceaccount:ns:name`).
    pub username: String,
    /// The user's uid, if the authenticator gives one.
    pub uid: Option<String>,
    /// The user's groups, sorted.
    pub groups: Vec<String>,
    /// Authenticator-specific extra attributes, keys sorted.
    pub extra: BTreeMap<String, Vec<String>>,
}

impl Requester {
    /// The requester of an admission request.
    pub fn from_user_info(info: &UserInfo) -> Self {
        let mut groups = info.groups.clone().unwrap_or_default();
        groups.sort_unstable();
        groups.dedup();
        Self {
            username: info.username.clone().unwrap_or_default(),
            uid: info.uid.clone().filter(|uid| !uid.is_empty()),
            groups,
            extra: info.extra.clone().unwrap_or_default(),
        }
    }

    /// A user with only a name and groups (tests and benches).
    pub fn named(username: &str, groups: &[&str]) -> Self {
        Self::from_user_info(&UserInfo {
            username: Some(username.to_owned()),
            groups: Some(groups.iter().map(|group| (*group).to_owned()).collect()),
            ..UserInfo::default()
        })
    }

    /// The creator record this requester leaves on an Instance it creates.
    pub fn creator_record(&self) -> CreatorRecord {
        CreatorRecord::new(self.username.clone(), self.uid.clone(), self.groups.clone())
    }
}

impl fmt::Display for Requester {
    /// `user "alice"`, the way denials name the requester.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "user {:?}", self.username)
    }
}

/// The group of Inputs (and Catalogs, InputClasses).
pub const RESOLVE_GROUP: &str = "resolve.pakket.dev";
/// The group of Operators.
pub const OPERATORS_GROUP: &str = "operators.pakket.dev";
/// The group of ClusterPackages and Packages.
pub const PACKAGES_GROUP: &str = "packages.pakket.dev";
/// The group of HelmCharts.
pub const HELM_GROUP: &str = "helm.pakket.dev";

/// What a request is about, as far as the rules care.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Target {
    /// A Bundle (the main resource).
    Bundle,
    /// An Instance (the main resource).
    Instance,
    /// An Instance's `status` subresource.
    InstanceStatus,
    /// A core/v1 ConfigMap.
    ConfigMap,
    /// An ApprovalPolicy: its rules must compile.
    ApprovalPolicy,
    /// An object whose requester records the webhook keeps, besides
    /// Instances: `Input` (resolve.pakket.dev), `Operator` and
    /// `OperatorRequest` (operators.pakket.dev), `ClusterPackage` or `Package`
    /// (packages.pakket.dev), `HelmChart` (helm.pakket.dev), main resource
    /// or status.
    Recorded(&'static str),
    /// Anything else: a configuration mistake; allowed and logged.
    Other,
}

impl Target {
    /// The target of a request, from its resource and subresource.
    pub fn of(request: &Request) -> Self {
        let resource = &request.resource;
        let subresource = request.sub_resource.as_deref().unwrap_or_default();
        match (
            resource.group.as_str(),
            resource.resource.as_str(),
            subresource,
        ) {
            (pakket_api::GROUP, "bundles", "") => Self::Bundle,
            (pakket_api::GROUP, "instances", "") => Self::Instance,
            (pakket_api::GROUP, "instances", "status") => Self::InstanceStatus,
            ("", "configmaps", "") => Self::ConfigMap,
            (pakket_api::GROUP, "approvalpolicies", "") => Self::ApprovalPolicy,
            (RESOLVE_GROUP, "inputs", "" | "status") => Self::Recorded("Input"),
            (OPERATORS_GROUP, "operators", "" | "status") => Self::Recorded("Operator"),
            (OPERATORS_GROUP, "operatorrequests", "" | "status") => {
                Self::Recorded("OperatorRequest")
            }
            (PACKAGES_GROUP, "clusterpackages", "" | "status") => Self::Recorded("ClusterPackage"),
            (PACKAGES_GROUP, "packages", "" | "status") => Self::Recorded("Package"),
            (HELM_GROUP, "helmcharts", "" | "status") => Self::Recorded("HelmChart"),
            _ => Self::Other,
        }
    }

    /// A short, stable label for metrics.
    pub fn metric_label(self) -> &'static str {
        match self {
            Self::Bundle => "bundles",
            Self::Instance => "instances",
            Self::InstanceStatus => "instances/status",
            Self::ConfigMap => "configmaps",
            Self::ApprovalPolicy => "approvalpolicies",
            Self::Recorded("Input") => "inputs",
            Self::Recorded("ClusterPackage") => "clusterpackages",
            Self::Recorded("Package") => "packages",
            Self::Recorded("OperatorRequest") => "operatorrequests",
            Self::Recorded("HelmChart") => "helmcharts",
            Self::Recorded(_) => "operators",
            Self::Other => "other",
        }
    }
}

/// Decodes an object of the request into its Rust type; the error names the
/// kind, the object and which of the two (`object`, `oldObject`) it was.
pub fn decode<K: DeserializeOwned>(
    object: &DynamicObject,
    kind: &str,
    which: &str,
) -> Result<K, String> {
    let name = object.metadata.name.as_deref().unwrap_or("<unnamed>");
    serde_json::to_value(object)
        .and_then(serde_json::from_value)
        .map_err(|error| {
            format!(
                "{kind} {name:?} ({which}) does not match the {kind} schema this webhook knows: \
                 {error}; is the webhook older than the CRD?"
            )
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requester_sorts_groups_and_drops_an_empty_uid() {
        let info = UserInfo {
            username: Some("bob".into()),
            uid: Some(String::new()),
            groups: Some(vec!["z".into(), "a".into(), "z".into()]),
            extra: None,
        };
        let requester = Requester::from_user_info(&info);
        assert_eq!(requester.groups, ["a", "z"]);
        assert_eq!(requester.uid, None);
        assert_eq!(requester.to_string(), r#"user "bob""#);
        assert_eq!(requester.creator_record().groups, ["a", "z"]);
    }
}
