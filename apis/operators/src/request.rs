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
    printcolumn = r#"{"name":"Ready","type":"string","jsonPath":".status.conditions[?(@.type==\"Ready\")].status"}"#,
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

/// The Operator (and Input) written for the request `namespace/name` of
/// UID `uid`: a digest of all three. The UID is random and only those who
/// may read the request see it, so nobody can take the name before the
/// request exists, and a request made again under the same name gets
/// other objects than the one before.
pub fn operator_name(namespace: &str, name: &str, uid: &str) -> String {
    use sha2::{Digest as _, Sha256};
    let digest = hex::encode(Sha256::digest(
        format!("{namespace}/{name}/{uid}").as_bytes(),
    ));
    format!("request-{}", &digest[..20])
}

/// Every reason the `Accepted` condition of an OperatorRequest carries
/// (the other conditions are the installing Instance's, mirrored).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Reason {
    /// True: an Operator asks for it on the requester's behalf.
    OperatorWritten,
    /// False: a namespace the operator would run in or watch is not the
    /// requester's (she may not create RoleBindings there); nothing is
    /// written. The message names the namespace.
    NotYourNamespace,
    /// False: the requester lost a namespace the operator runs in or
    /// watches; the Operator and Input written for her were deleted. The
    /// message names the namespace and what was deleted.
    Withdrawn,
    /// False: an object the controller did not write for this request
    /// holds the name it would use; it is neither adopted nor deleted. The
    /// message names it (`Kind/name`).
    NameTaken,
    /// False: `installMode` and `installNamespace` do not agree.
    InvalidInstallMode,
    /// False: no (or more than one) InputClass is labelled for requests.
    NoInputClass,
    /// False: the controller runs without the record key.
    NoRecordKey,
    /// False: no requester record that verifies for the request's spec.
    NoRequester,
}

impl Reason {
    /// Every reason, so tests can check that lists stay complete.
    pub const ALL: [Reason; 8] = [
        Self::OperatorWritten,
        Self::NotYourNamespace,
        Self::Withdrawn,
        Self::NameTaken,
        Self::InvalidInstallMode,
        Self::NoInputClass,
        Self::NoRecordKey,
        Self::NoRequester,
    ];

    /// The reason as written in status.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::OperatorWritten => "OperatorWritten",
            Self::NotYourNamespace => "NotYourNamespace",
            Self::Withdrawn => "Withdrawn",
            Self::NameTaken => "NameTaken",
            Self::InvalidInstallMode => "InvalidInstallMode",
            Self::NoInputClass => "NoInputClass",
            Self::NoRecordKey => "NoRecordKey",
            Self::NoRequester => "NoRequester",
        }
    }

    /// Whether `Accepted` is True with this reason.
    pub const fn accepts(self) -> bool {
        matches!(self, Self::OperatorWritten)
    }
}

impl OperatorRequest {
    /// The condition of type `kind`, if the status has it.
    pub fn condition(&self, kind: &str) -> Option<&Condition> {
        let status = self.status.as_ref();
        pakket_resolve_api::condition::find(status.map(|s| s.conditions.as_slice()), kind)
    }
}

/// The reasons pakket-resolveset writes on a request's `Approved`,
/// `Installed` and `Healthy` conditions in its own words, when it mirrors
/// no Instance (an Instance's own reasons are mirrored as they are).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum InstallReason {
    /// Nothing installs it yet: the message says what it waits for.
    NotInstalled,
    /// Another request or Operator has the package: nothing installs for
    /// this one while it does.
    PackageOwnedByAnother,
    /// The Instance for the package is not this requester's alone.
    InstalledForAnother,
    /// Its Input could not be resolved: the message says why.
    NotResolved,
    /// `Approved`: a rule of the class's ApprovalPolicy refused what it
    /// installs (the Instance's own words, in the message).
    RefusedByPolicy,
}

impl InstallReason {
    /// Every reason, so tests can check that lists stay complete.
    pub const ALL: [InstallReason; 5] = [
        Self::NotInstalled,
        Self::PackageOwnedByAnother,
        Self::InstalledForAnother,
        Self::NotResolved,
        Self::RefusedByPolicy,
    ];

    /// The reason as written in status.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::NotInstalled => "NotInstalled",
            Self::PackageOwnedByAnother => "PackageOwnedByAnother",
            Self::InstalledForAnother => "InstalledForAnother",
            Self::NotResolved => "NotResolved",
            Self::RefusedByPolicy => "RefusedByPolicy",
        }
    }

    /// The reason written as `text`, if it is one of these.
    pub fn parse(text: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|reason| reason.as_str() == text)
    }

    /// Whether, said on `Installed`, it means nothing installs for the
    /// request until something outside it changes.
    pub const fn nothing_installs(self) -> bool {
        matches!(
            self,
            Self::PackageOwnedByAnother | Self::InstalledForAnother | Self::NotResolved
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_request_has_its_own_operator_name() {
        let uid = "6f1c1f4e-8a7b-4d0e-9a37-2b1f0c2d5e10";
        assert_ne!(
            operator_name("a-b", "c", uid),
            operator_name("a", "b-c", uid)
        );
        assert_eq!(
            operator_name("team-a", "etcd", uid),
            operator_name("team-a", "etcd", uid)
        );
        // The same request made again is another request, with other names.
        assert_ne!(
            operator_name("team-a", "etcd", uid),
            operator_name("team-a", "etcd", "0b8d2c55-2a8e-4f4e-8f0c-6f0a1d9e3b21")
        );
        assert!(operator_name("team-a", &"x".repeat(253), uid).len() <= 63);
    }

    #[test]
    fn every_install_reason_reads_back_as_itself() {
        for reason in InstallReason::ALL {
            assert_eq!(InstallReason::parse(reason.as_str()), Some(reason));
        }
        assert_eq!(InstallReason::parse("ObjectsHealthy"), None);
    }

    #[test]
    fn every_reason_is_listed_once_and_only_one_accepts() {
        let mut names: Vec<&str> = Reason::ALL.iter().map(|r| r.as_str()).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), Reason::ALL.len());
        assert_eq!(
            Reason::ALL.iter().filter(|r| r.accepts()).count(),
            1,
            "only OperatorWritten accepts"
        );
    }
}
