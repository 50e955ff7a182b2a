//! Every read that decides a pass, once, into one value ([`Observed`]):
//! the object itself, whether a package this provisioner installed it for
//! still needs it, the repository and the version to run, that version's
//! PackageInfo and, once it is read, its package file, the package's
//! author and its values. A read that cannot go on (the repository, the
//! latest version) stops the pass with its typed reason.

use kube::ResourceExt as _;
use kube::api::Api;
use pakket_packages_api::conditions::{PackageReason, ReadinessType};
use pakket_packages_api::manifest::PackageManifest;
use pakket_packages_api::{PackageInfo, PackageInfoStatus, PackageInfoTemplate};
use pakket_packages_client::repository::Endpoint;

use super::values_from::{self, ResolvedValues};
use super::{Error, FINALIZER, PackageContext, PackageObject, author};
use crate::dependencies;
use crate::info_controller::repository_for;
use crate::names;

/// What one pass found, as far as the plan needs it.
#[derive(Debug)]
pub(super) enum Observed {
    /// Being deleted.
    Deleting,
    /// Without the finalizer yet.
    Unfinalized,
    /// `spec.suspend`: nothing is done.
    Suspended,
    /// Installed by this provisioner as a dependency, and no package
    /// depends on it any more.
    Unneeded,
    /// Going on: the version to run and what was read of it.
    Active(Box<Source>),
}

/// The version a package runs and what was read of it.
#[derive(Debug)]
pub(super) struct Source {
    /// The package's name in its repository.
    pub package: String,
    /// The repository it comes from.
    pub repository: Endpoint,
    /// The version to run: the pinned one, or the repository's latest.
    pub version: String,
    /// Whether `spec.packageInfo.version` pins it.
    pub pinned: bool,
    /// The PackageInfo of that version.
    pub info_name: String,
    /// Whether it is a namespaced Package.
    pub namespaced: bool,
    /// Installed by this provisioner as a dependency (and still needed).
    pub as_dependency: bool,
    /// The PackageInfo's status (`None`: there is no PackageInfo yet).
    pub info: Option<PackageInfoStatus>,
    /// Once the PackageInfo is read for `version`: what it gives.
    pub read: Option<Read>,
}

/// What a PackageInfo read for the version gives, and the values.
#[derive(Debug)]
pub(super) struct Read {
    /// Its package file and where it was read, or why it cannot be used.
    pub content: Result<Content, String>,
    /// Who wrote the package, if the record verifies.
    pub author: Option<pakket_api::CreatorRecord>,
    /// The package's values, read where `spec.values` says, or why not.
    pub values: Result<ResolvedValues, String>,
}

/// A package file and its URL.
#[derive(Debug)]
pub(super) struct Content {
    /// The typed package file.
    pub manifest: PackageManifest,
    /// Where it was read: its manifests are relative to it.
    pub url: reqwest::Url,
}

/// Reads what `package`'s pass needs.
pub(super) async fn observe<K: PackageObject>(
    package: &K,
    context: &PackageContext,
) -> Result<Observed, Error> {
    if let Some(stage) = stage(package) {
        return Ok(stage);
    }
    let client = &context.info.client;
    let wanted = package.common_spec().package_info;
    // Installed only because another package needed it: it goes when no
    // package does any more. (A component is a namespaced Package: it goes
    // with its parent.) Removed by this provisioner only if it provably
    // installed it so: an annotation anyone who may write the object can
    // set is no proof.
    let as_dependency = package.namespace().is_none()
        && dependencies::installed_by_us_as_dependency(
            package,
            &wanted.name,
            context.record_key.as_ref(),
        );
    if as_dependency {
        let everyone = pakket_packages_client::dependents::everyone(client).await?;
        let uid = package.meta().uid.clone().unwrap_or_default();
        if pakket_packages_client::dependents::dependents_of(&everyone, &wanted.name, &uid)
            .is_empty()
        {
            return Ok(Observed::Unneeded);
        }
    }
    let repository = repository_for(
        client,
        wanted.repository_name.as_deref(),
        &context.info.namespace,
    )
    .await
    .map_err(|error| Error::failed(error.reason().into(), error.to_string()))?;
    let version = version(context, &repository, &wanted).await?;
    let info_name = names::package_info(wanted.repository_name.as_deref(), &wanted.name, &version);
    let info = Api::<PackageInfo>::all(client.clone())
        .get_opt(&info_name)
        .await?
        .map(|info| info.status.unwrap_or_default());
    let read = match &info {
        Some(status) if ready_for(status, &version) => Some(read(package, context, status).await),
        _ => None,
    };
    Ok(Observed::Active(Box::new(Source {
        package: wanted.name,
        repository,
        version,
        pinned: wanted.version.is_some(),
        info_name,
        namespaced: package.namespace().is_some(),
        as_dependency,
        info,
        read,
    })))
}

/// What the object alone decides: being deleted, not finalized yet, or
/// suspended (`None`: it goes on).
pub(super) fn stage<K: PackageObject>(package: &K) -> Option<Observed> {
    if package.meta().deletion_timestamp.is_some() {
        Some(Observed::Deleting)
    } else if !package.finalizers().iter().any(|f| f == FINALIZER) {
        Some(Observed::Unfinalized)
    } else if package.common_spec().suspend {
        Some(Observed::Suspended)
    } else {
        None
    }
}

/// The pinned version, or the repository's latest (looked up again at
/// each pass).
async fn version(
    context: &PackageContext,
    repository: &Endpoint,
    wanted: &PackageInfoTemplate,
) -> Result<String, Error> {
    if let Some(version) = &wanted.version {
        return Ok(version.clone());
    }
    context
        .info
        .repositories
        .versions(repository, &wanted.name)
        .await
        .map_err(|error| Error::failed(PackageReason::SyncFailed, error.to_string()))?
        .latest_version
        .ok_or_else(|| {
            Error::failed(
                PackageReason::SyncFailed,
                format!(
                    "{} names no latestVersion; pin spec.packageInfo.version",
                    repository.versions_url(&wanted.name)
                ),
            )
        })
}

/// Whether a PackageInfo's status is `Ready` for `version`.
pub(super) fn ready_for(status: &PackageInfoStatus, version: &str) -> bool {
    status
        .conditions
        .iter()
        .any(|c| c.type_ == ReadinessType::Ready.as_str() && c.status == "True")
        && status.version.as_deref() == Some(version)
}

/// The package file, the author and the values.
async fn read<K: PackageObject>(
    package: &K,
    context: &PackageContext,
    status: &PackageInfoStatus,
) -> Read {
    // Who wrote the package: whose rights reads, installs and the
    // dependencies and components it brings are judged by.
    let author = author(package, context.record_key.as_ref());
    let values = values_from::resolve(
        &context.info.client,
        &package.common_spec().values,
        author.as_ref(),
        package.namespace().as_deref(),
    )
    .await;
    Read {
        content: content_of(status),
        author,
        values,
    }
}

/// The typed package file of a ready PackageInfo and its URL.
pub(super) fn content_of(status: &PackageInfoStatus) -> Result<Content, String> {
    let value = status
        .manifest
        .clone()
        .ok_or("its status has no manifest")?;
    let manifest: PackageManifest =
        serde_json::from_value(value).map_err(|error| error.to_string())?;
    let url = status
        .resolved_url
        .as_deref()
        .ok_or("its status has no resolvedUrl")?;
    let url = reqwest::Url::parse(url).map_err(|error| error.to_string())?;
    Ok(Content { manifest, url })
}

#[cfg(test)]
mod tests {
    use super::*;
    use pakket_packages_api::{ClusterPackage, Package};

    #[test]
    fn the_object_alone_decides_deleting_unfinalized_and_suspended() {
        let kept = |package: ClusterPackage| package.with_finalizer(FINALIZER);
        assert!(matches!(
            stage(&kept(ClusterPackage::test("a")).deleting()),
            Some(Observed::Deleting)
        ));
        assert!(matches!(
            stage(&ClusterPackage::test("a").deleting()),
            Some(Observed::Deleting)
        ));
        assert!(matches!(
            stage(&ClusterPackage::test("a").suspended()),
            Some(Observed::Unfinalized)
        ));
        assert!(matches!(
            stage(&Package::test("a").with_finalizer(FINALIZER).suspended()),
            Some(Observed::Suspended)
        ));
        assert!(stage(&kept(ClusterPackage::test("a").with_version("v1"))).is_none());
    }

    #[test]
    fn a_package_info_is_ready_for_the_version_it_read() {
        let info = PackageInfo::test("a").read(
            "v1",
            serde_json::json!({"name": "a"}),
            "https://r/a/v1/package.yaml",
        );
        let status = info.status.unwrap();
        assert!(ready_for(&status, "v1"));
        assert!(!ready_for(&status, "v2"));
        let failed = PackageInfo::test("a").failed("gone").status.unwrap();
        assert!(!ready_for(&failed, "v1"));
        assert!(!ready_for(&PackageInfoStatus::default(), "v1"));
    }

    #[test]
    fn content_needs_a_manifest_and_a_url() {
        assert_eq!(
            content_of(&PackageInfoStatus::default()).unwrap_err(),
            "its status has no manifest"
        );
        let status = PackageInfo::test("a")
            .read(
                "v1",
                serde_json::json!({"name": "a"}),
                "https://r/a/v1/package.yaml",
            )
            .status
            .unwrap();
        let content = content_of(&status).unwrap();
        assert_eq!(content.url.as_str(), "https://r/a/v1/package.yaml");
        let no_url = PackageInfoStatus {
            resolved_url: None,
            ..status
        };
        assert_eq!(
            content_of(&no_url).unwrap_err(),
            "its status has no resolvedUrl"
        );
    }
}
