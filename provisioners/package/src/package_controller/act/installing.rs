//! What an install takes on, read once and handed to each of its steps
//! (the Bundle's refs, the Instance, the components): none of them
//! imports the install that calls it.

use pakket_packages_api::manifest::PackageManifest;
use pakket_packages_client::repository::Endpoint;

use super::super::observe::{Content, Read, Source};
use super::super::values_from::ResolvedValues;

/// What the install takes on: the source read, its content and values.
pub(super) struct Install {
    /// The package's name in its repository.
    pub package: String,
    /// The repository it comes from.
    pub repository: Endpoint,
    /// The version to run.
    pub version: String,
    /// Whether the version is pinned.
    pub pinned: bool,
    /// Its PackageInfo.
    pub info_name: String,
    /// Installed by this provisioner as a dependency.
    pub as_dependency: bool,
    /// The package file.
    pub manifest: PackageManifest,
    /// Where the package file was read.
    pub url: reqwest::Url,
    /// Who wrote the package.
    pub author: Option<pakket_api::CreatorRecord>,
    /// Its values.
    pub values: ResolvedValues,
}

impl Install {
    /// The install of `source`, if what it needs was read (the plan asks
    /// for an install only then).
    pub(super) fn of(source: Source) -> Option<Self> {
        let Some(Read {
            content: Ok(Content { manifest, url }),
            author,
            values: Ok(values),
        }) = source.read
        else {
            return None;
        };
        Some(Self {
            package: source.package,
            repository: source.repository,
            version: source.version,
            pinned: source.pinned,
            info_name: source.info_name,
            as_dependency: source.as_dependency,
            manifest,
            url,
            author,
            values,
        })
    }
}
