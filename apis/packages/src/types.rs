//! The package API (`packages.pakket.dev/v1alpha1`), Glasskube's shape:
//! where packages come from (`PackageRepository`), what an admin or a
//! namespace owner asks for (`ClusterPackage`, `Package`), and one
//! repository's answer for one package version (`PackageInfo`).

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The API group.
pub const GROUP: &str = "packages.pakket.dev";
/// The API version.
pub const VERSION: &str = "v1alpha1";
/// On a PackageRepository: `"true"` makes it the one packages without a
/// `repositoryName` come from.
pub const DEFAULT_REPOSITORY_ANNOTATION: &str = "packages.pakket.dev/default-repository";
/// On a ClusterPackage the provisioner made for another's dependency.
pub const INSTALLED_AS_DEPENDENCY_ANNOTATION: &str = "packages.pakket.dev/installed-as-dependency";
/// The provisioner's seal on a ClusterPackage it installed as a
/// dependency: the proof [`INSTALLED_AS_DEPENDENCY_ANNOTATION`] (which
/// anyone who may write the object can write) is not. Only a sealed one is
/// removed when nothing depends on it any more.
pub const DEPENDENCY_SEAL_ANNOTATION: &str = "packages.pakket.dev/installed-as-dependency-seal";

/// A package repository served over HTTPS (`index.yaml`,
/// `<name>/versions.yaml`, `<name>/<version>/package.yaml`).
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[kube(
    group = "packages.pakket.dev",
    version = "v1alpha1",
    kind = "PackageRepository",
    status = "PackageRepositoryStatus",
    printcolumn = r#"{"name":"URL","type":"string","jsonPath":".spec.url"}"#,
    printcolumn = r#"{"name":"Ready","type":"string","jsonPath":".status.conditions[?(@.type==\"Ready\")].status"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct PackageRepositorySpec {
    /// The repository's base URL, `https://…`.
    #[schemars(length(min = 1, max = 2048))]
    pub url: String,
    /// Credentials sent with every request to the repository (and to
    /// manifests it serves under its own URL), from Secrets offered to
    /// this repository for a URL covering `spec.url`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub auth: Option<RepositoryAuth>,
}

/// Basic or bearer credentials, each read from a Secret in the namespace
/// the provisioner runs in (never another: whoever may write a repository
/// must not be able to send any Secret of the cluster to a server of
/// theirs), and only from a Secret its owner offered to this repository
/// (label `packages.pakket.dev/credentials-for: <repository>`) for a URL
/// covering `spec.url` (annotation `packages.pakket.dev/credentials-url:
/// https://HOST[:PORT]/PATH/`). A `spec.url` outside that URL, or an
/// offer naming none, gets no credentials until the owner offers them.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RepositoryAuth {
    /// HTTP basic authentication.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub basic: Option<BasicAuth>,
    /// `Authorization: Bearer <token>`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bearer: Option<BearerAuth>,
}

/// User name and password.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct BasicAuth {
    /// Where the user name is.
    pub username_secret_ref: SecretKey,
    /// Where the password is.
    pub password_secret_ref: SecretKey,
}

/// A bearer token.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct BearerAuth {
    /// Where the token is.
    pub token_secret_ref: SecretKey,
}

/// One key of a Secret in the provisioner's namespace.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
pub struct SecretKey {
    /// The Secret's name.
    pub name: String,
    /// The key.
    pub key: String,
}

/// How the repository was last reached.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PackageRepositoryStatus {
    /// `Ready`/`Failed`, and kstatus's `Reconciling`/`Stalled`.
    #[serde(default)]
    #[schemars(schema_with = "pakket_api::schema::conditions")]
    pub conditions: Vec<Condition>,
    /// The generation this status describes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
}

/// A package installed cluster-wide.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[kube(
    group = "packages.pakket.dev",
    version = "v1alpha1",
    kind = "ClusterPackage",
    shortname = "clpkg",
    status = "PackageStatus",
    printcolumn = r#"{"name":"Package","type":"string","jsonPath":".spec.packageInfo.name"}"#,
    printcolumn = r#"{"name":"Version","type":"string","jsonPath":".status.version"}"#,
    printcolumn = r#"{"name":"Ready","type":"string","jsonPath":".status.conditions[?(@.type==\"Ready\")].reason"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct ClusterPackageSpec {
    /// Which package, which version, from which repository.
    pub package_info: PackageInfoTemplate,
    /// Values for the package's value definitions, by name.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub values: BTreeMap<String, ValueConfiguration>,
    /// Stops reconciling (what is installed stays as it is).
    #[serde(default)]
    pub suspend: bool,
}

/// A package installed into its own namespace.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[kube(
    group = "packages.pakket.dev",
    version = "v1alpha1",
    kind = "Package",
    namespaced,
    shortname = "pkg",
    status = "PackageStatus",
    printcolumn = r#"{"name":"Package","type":"string","jsonPath":".spec.packageInfo.name"}"#,
    printcolumn = r#"{"name":"Version","type":"string","jsonPath":".status.version"}"#,
    printcolumn = r#"{"name":"Ready","type":"string","jsonPath":".status.conditions[?(@.type==\"Ready\")].reason"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct PackageSpec {
    /// Which package, which version, from which repository.
    pub package_info: PackageInfoTemplate,
    /// Values for the package's value definitions, by name.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub values: BTreeMap<String, ValueConfiguration>,
    /// Stops reconciling (what is installed stays as it is).
    #[serde(default)]
    pub suspend: bool,
}

/// `spec.packageInfo`.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PackageInfoTemplate {
    /// The package's name in the repository.
    #[schemars(length(min = 1, max = 63))]
    pub name: String,
    /// A version the repository lists (pinned); without one the package
    /// follows the repository's `latestVersion`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// The PackageRepository; without one, the default repository.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repository_name: Option<String>,
}

/// One value: written here, or read from elsewhere.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ValueConfiguration {
    /// The value, as text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<String>,
    /// Where to read it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value_from: Option<ValueReference>,
}

/// Where a value is read from.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ValueReference {
    /// A ConfigMap key.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config_map_ref: Option<ObjectKeyValueSource>,
    /// A Secret key.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret_ref: Option<ObjectKeyValueSource>,
    /// Another ClusterPackage's value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub package_ref: Option<PackageValueSource>,
}

/// A key of a ConfigMap or Secret.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
pub struct ObjectKeyValueSource {
    /// Its name.
    pub name: String,
    /// Its namespace; a Package's own by default (required for a
    /// ClusterPackage).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// The key.
    pub key: String,
}

/// A value of a ClusterPackage.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
pub struct PackageValueSource {
    /// The ClusterPackage.
    pub name: String,
    /// The value's name there.
    pub value: String,
}

/// Where a package stands.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PackageStatus {
    /// The version installed or being installed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// `Ready`/`Failed` with Glasskube's reasons, and the Instance's
    /// `Approved`, `Installed` and `Healthy`.
    #[serde(default)]
    #[schemars(schema_with = "pakket_api::schema::conditions")]
    pub conditions: Vec<Condition>,
    /// The Instance the package became.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instance: Option<String>,
    /// The PackageInfos this package made.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub owned_package_infos: Vec<String>,
    /// The ClusterPackages made for its dependencies.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub dependencies: Vec<String>,
    /// The generation this status is for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
}

/// One package version as its repository serves it.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[kube(
    group = "packages.pakket.dev",
    version = "v1alpha1",
    kind = "PackageInfo",
    shortname = "pkgi",
    status = "PackageInfoStatus",
    printcolumn = r#"{"name":"Package","type":"string","jsonPath":".spec.name"}"#,
    printcolumn = r#"{"name":"Version","type":"string","jsonPath":".status.version"}"#,
    printcolumn = r#"{"name":"Ready","type":"string","jsonPath":".status.conditions[?(@.type==\"Ready\")].reason"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct PackageInfoSpec {
    /// The package's name.
    pub name: String,
    /// The version; without one, the repository's latest.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// The PackageRepository; without one, the default repository.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repository_name: Option<String>,
}

/// What the repository answered.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PackageInfoStatus {
    /// The package's `package.yaml`, as served.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "pakket_api::schema::free_form_object")]
    pub manifest: Option<serde_json::Value>,
    /// The URL it was read from (relative manifest URLs resolve against it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resolved_url: Option<String>,
    /// The version read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// When it was last read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_update_timestamp: Option<String>,
    /// `Ready`/`Failed` (`SyncCompleted`, `SyncFailed`).
    #[serde(default)]
    #[schemars(schema_with = "pakket_api::schema::conditions")]
    pub conditions: Vec<Condition>,
}
