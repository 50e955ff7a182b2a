//! `Bundle`: content that must be pulled and unpacked before anything uses it.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::ObjectRef;
use crate::schema::{MAX_REF_LENGTH, MAX_REFS};

/// The URI schemes a Bundle ref may use, in the order the docs list them.
pub const REF_SCHEMES: &[&str] = &[
    "docker",
    "oci",
    "file",
    "https",
    "helm+https",
    "git",
    "git+https",
];

/// What a Bundle's content is and where it comes from. Immutable once created:
/// new content means a new Bundle.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[kube(
    group = "core.pakket.dev",
    version = "v1alpha1",
    kind = "Bundle",
    plural = "bundles",
    shortname = "bdl",
    category = "pakket",
    status = "BundleStatus",
    printcolumn = r#"{"name":"Class","type":"string","jsonPath":".spec.class"}"#,
    printcolumn = r#"{"name":"Unpacked","type":"string","jsonPath":".status.unpacked"}"#,
    printcolumn = r#"{"name":"Ready","type":"string","jsonPath":".status.conditions[?(@.type==\"Ready\")].status"}"#,
    printcolumn = r#"{"name":"Digest","type":"string","jsonPath":".status.source.digest"}"#,
    printcolumn = r#"{"name":"Age","type":"date","jsonPath":".metadata.creationTimestamp"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct BundleSpec {
    /// Name of the ProvisionerClass whose provisioner unpacks this Bundle.
    #[schemars(length(min = 1, max = 253))]
    pub class: String,

    /// Where the content comes from: `docker://` or `oci://` image references,
    /// `file://` paths inside a mounted ConfigMap, `https://` tarballs,
    /// `helm+https://REPOSITORY/#CHART@VERSION` charts from a chart
    /// repository, `git://` or `git+https://` repositories.
    #[schemars(length(max = MAX_REFS), inner(length(max = MAX_REF_LENGTH)))]
    #[schemars(extend("x-kubernetes-validations" = [
        {
            "rule": "size(self) > 0",
            "message": "spec.refs needs at least one source, e.g. docker://registry.example/bundle:v1",
        },
        {
            "rule": "self.all(r, r.matches('^(docker|oci|file|https|helm\\\\+https|git|git\\\\+https)://.+'))",
            "message": "each spec.refs entry must start with docker://, oci://, file://, https://, helm+https://, git:// or git+https://",
        },
    ]))]
    pub refs: Vec<String>,

    /// ConfigMaps whose data appears under `mountPath`, for `file://` refs.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 16))]
    pub volume_mounts: Vec<VolumeMount>,
}

/// A ConfigMap made visible to a Bundle's `file://` refs at `mountPath`.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct VolumeMount {
    /// Absolute path the `file://` refs are resolved against.
    #[schemars(length(min = 1, max = 1024))]
    #[schemars(extend("x-kubernetes-validations" = [{
        "rule": "self.startsWith('/')",
        "message": "mountPath must be an absolute path such as /content",
    }]))]
    pub mount_path: String,
    /// The ConfigMap to mount.
    pub config_map: ConfigMapSource,
}

/// A ConfigMap by name and namespace (Bundles are cluster-scoped).
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
pub struct ConfigMapSource {
    /// ConfigMap name.
    #[schemars(length(min = 1, max = 253))]
    pub name: String,
    /// ConfigMap namespace.
    #[schemars(length(min = 1, max = 63))]
    pub namespace: String,
}

/// Where unpacking stands.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq, JsonSchema)]
pub enum UnpackPhase {
    /// No provisioner has looked at the Bundle yet.
    #[default]
    NotStarted,
    /// Content is being fetched or unpacked.
    InProgress,
    /// Content is unpacked and its objects are listed in status.
    Done,
    /// Unpacking failed; the `Unpacked` condition says why.
    Failed,
}

/// What the provisioner found when it unpacked the Bundle.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct BundleStatus {
    /// Where unpacking stands.
    #[serde(default)]
    pub unpacked: UnpackPhase,
    /// The source the content was actually read from, pinned.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<PinnedSource>,
    /// The Kubernetes objects the content holds: all of them, or the first
    /// [`crate::LISTED_OBJECTS_MAX`] when there are more (`objectCount` and
    /// `objectKinds` then tell the rest).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub objects: Vec<ObjectRef>,
    /// How many objects the content holds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub object_count: Option<u64>,
    /// How many of each kind, when `objects` does not list them all.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub object_kinds: Vec<crate::KindCount>,
    /// The RBAC the content would grant (Roles, ClusterRoles and their
    /// bindings), so an approver sees it before approving.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub grants: Vec<RbacGrant>,
    /// What the content provides and requires, as its provisioner reads it
    /// (File-Based Catalog properties such as `olm.package` and `olm.gvk`),
    /// so other Instances' dependencies can be checked against what is
    /// installed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub properties: Vec<BundleProperty>,
    /// `Unpacked`, with reason and message.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(schema_with = "crate::schema::conditions")]
    pub conditions: Vec<Condition>,
    /// The generation this status describes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
}

/// One property of a Bundle's content: a type and a free-form value, as in
/// File-Based Catalogs (`{type: olm.package, value: {packageName, version}}`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct BundleProperty {
    /// The property's type (`olm.package`, `olm.gvk`, ...).
    #[serde(rename = "type")]
    pub type_: String,
    /// Its value, as the type defines it.
    #[schemars(schema_with = "crate::schema::free_form_value")]
    pub value: serde_json::Value,
}

impl BundleStatus {
    /// Records `objects`, listing at most [`crate::LISTED_OBJECTS_MAX`].
    pub fn set_objects(&mut self, objects: &[ObjectRef]) {
        let summary = crate::ObjectSummary::of(objects);
        self.objects = summary.listed;
        self.object_count = Some(summary.count);
        self.object_kinds = summary.kinds;
    }

    /// Whether `objects` lists every object (else `objectKinds` counts them).
    pub fn lists_every_object(&self) -> bool {
        crate::object_ref::is_complete(&self.objects, self.object_count)
    }
}

/// One RBAC object in a Bundle and what it grants, in words.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RbacGrant {
    /// The Role, ClusterRole, RoleBinding or ClusterRoleBinding.
    pub object: ObjectRef,
    /// Each rule (`get, list on pods`), or for a binding whom it binds to which role.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub grants: Vec<String>,
}

/// A ref pinned to exactly the content that was unpacked, so a moving tag or
/// branch cannot change an installed Bundle behind the admin's back.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PinnedSource {
    /// The `spec.refs` entry the content came from.
    #[serde(rename = "ref")]
    pub reference: String,
    /// Content digest (`sha256:<hex>`): the image manifest, the tarball or the
    /// ConfigMap data.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub digest: Option<String>,
    /// The commit a git ref resolved to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub commit: Option<String>,
}

/// The scheme of a ref, if it is one Pakket knows.
pub fn ref_scheme(reference: &str) -> Option<&'static str> {
    let (scheme, rest) = reference.split_once("://")?;
    if rest.is_empty() {
        return None;
    }
    REF_SCHEMES.iter().copied().find(|known| *known == scheme)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ref_scheme_accepts_known_schemes_only() {
        assert_eq!(ref_scheme("docker://quay.io/a/b:v1"), Some("docker"));
        assert_eq!(ref_scheme("git+https://github.com/a/b"), Some("git+https"));
        assert_eq!(
            ref_scheme("helm+https://charts.example/#web@1.0.0"),
            Some("helm+https")
        );
        assert_eq!(ref_scheme("file://content"), Some("file"));
        assert_eq!(ref_scheme("http://insecure.example/b.tgz"), None);
        assert_eq!(ref_scheme("oci://"), None);
        assert_eq!(ref_scheme("quay.io/a/b:v1"), None);
    }

    #[test]
    fn status_defaults_to_not_started() {
        let status: BundleStatus = serde_json::from_str("{}").unwrap();
        assert_eq!(status.unpacked, UnpackPhase::NotStarted);
    }
}
