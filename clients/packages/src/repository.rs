//! Reading a package repository over HTTPS: `index.yaml`,
//! `<name>/versions.yaml`, `<name>/<version>/package.yaml`, joined to the
//! repository's URL as Glasskube joins them (each segment escaped).
//!
//! Fetches go through the runtime's HTTPS source, so they get its rules:
//! HTTPS only, public addresses only unless the process is started with
//! `--allow-internal-addresses`, bounded in time and size, and an error
//! answer is reported by its status, never echoed. The repository's
//! credentials (from Secrets in the provisioner's own namespace) are sent
//! as the `Authorization` header, and only to the repository's host.

use pakket_runtime::kernel::source::SourceOptions;
use pakket_runtime::kernel::source::address::Reach;
use pakket_runtime::kernel::source::authorizations::HttpsAuthorizations;
use pakket_runtime::kernel::source::https::{HttpsSource, TarballRef};
use reqwest::Url;
use serde_json::Value;

use pakket_packages_api::conditions::ReadFailure;
use pakket_packages_api::manifest::{self, Index, PackageManifest, Versions};

/// The most bytes one repository file may hold.
pub const MAX_FILE: u64 = 4 * 1024 * 1024;

/// One repository, ready to be read.
#[derive(Clone, Debug)]
pub struct Endpoint {
    /// The PackageRepository's name.
    pub name: String,
    /// Its URL, ending in `/`.
    pub base: Url,
    /// The `Authorization` header's value, if it has credentials.
    pub authorization: Option<String>,
}

impl Endpoint {
    /// `index.yaml`.
    pub fn index_url(&self) -> Url {
        join(&self.base, &["index.yaml"])
    }

    /// `<name>/versions.yaml`.
    pub fn versions_url(&self, package: &str) -> Url {
        join(&self.base, &[package, "versions.yaml"])
    }

    /// `<name>/<version>/package.yaml`.
    pub fn package_url(&self, package: &str, version: &str) -> Url {
        join(&self.base, &[package, version, "package.yaml"])
    }

    /// Whether `url` is under this repository (where its credentials go).
    pub fn serves(&self, url: &Url) -> bool {
        url.origin() == self.base.origin() && url.path().starts_with(self.base.path())
    }
}

/// `url` as a folder, its path ending in `/`, so that joining a file name
/// keeps its last segment (`…/dashboard` + `index.yaml` is
/// `…/dashboard/index.yaml`, not `…/index.yaml`).
pub fn as_folder(mut url: Url) -> Url {
    if !url.path().ends_with('/') {
        let path = format!("{}/", url.path());
        url.set_path(&path);
    }
    url
}

/// `base` with `segments` appended, each percent-escaped as one segment.
pub fn join(base: &Url, segments: &[&str]) -> Url {
    let mut url = base.clone();
    {
        let mut path = url.path_segments_mut().expect("an https URL has a path");
        path.pop_if_empty();
        path.extend(segments);
    }
    url
}

/// A manifest's URL: absolute as written, or relative to the
/// `package.yaml` it was read from (`./x.yaml` is next to it).
pub fn manifest_url(package_url: &Url, written: &str) -> Result<Url, String> {
    let url = package_url
        .join(written)
        .map_err(|error| format!("{written:?} is not a URL: {error}"))?;
    if url.scheme() != "https" {
        return Err(format!(
            "{written} is not https://; Pakket fetches packages over HTTPS only"
        ));
    }
    Ok(url)
}

/// Why a repository file could not be read, in words naming the URL.
#[derive(Debug, thiserror::Error)]
pub enum RepositoryError {
    /// It could not be fetched.
    #[error("{0}")]
    Fetch(String),
    /// It was fetched and is not what a repository serves there.
    #[error("{url} is not a valid {what}: {problem}")]
    Parse {
        /// The file.
        url: String,
        /// `versions.yaml`, `package.yaml`, …
        what: &'static str,
        /// What is wrong.
        problem: String,
    },
    /// The PackageRepository cannot be used.
    #[error("{0}")]
    Repository(String),
    /// Its credentials cannot be used: their Secret is missing, not
    /// offered to it, or offered for another URL than its `spec.url`.
    #[error("{0}")]
    Credentials(String),
}

impl RepositoryError {
    /// The condition reason a status says this with (on a
    /// PackageRepository, a PackageInfo or a package alike).
    pub fn reason(&self) -> ReadFailure {
        match self {
            Self::Credentials(_) => ReadFailure::CredentialsUnavailable,
            Self::Fetch(_) | Self::Parse { .. } | Self::Repository(_) => ReadFailure::SyncFailed,
        }
    }
}

/// Reads repositories.
pub struct RepositoryClient {
    https: HttpsSource,
    reach: Reach,
    /// Where each repository's credentials are registered for the
    /// runtime, which downloads the repository's manifests with them.
    authorizations: HttpsAuthorizations,
}

impl RepositoryClient {
    /// A client trusting `sources`' roots, reaching internal addresses
    /// only if `allow_internal_addresses`.
    pub fn new(sources: SourceOptions, allow_internal_addresses: bool) -> Self {
        let reach = if allow_internal_addresses {
            Reach::Any
        } else {
            Reach::Public {
                advice: "pakket-package reads repositories at public addresses only, unless its \
                         admin starts it with --allow-internal-addresses"
                    .into(),
            }
        };
        Self {
            authorizations: sources.authorizations.clone(),
            https: HttpsSource::new(sources),
            reach,
        }
    }

    /// The repository's index.
    pub async fn index(&self, repository: &Endpoint) -> Result<Index, RepositoryError> {
        let url = repository.index_url();
        let text = self.text(repository, &url).await?;
        parsed(&url, "index.yaml", &text).map(|(index, _)| index)
    }

    /// A package's published versions.
    pub async fn versions(
        &self,
        repository: &Endpoint,
        package: &str,
    ) -> Result<Versions, RepositoryError> {
        let url = repository.versions_url(package);
        let text = self.text(repository, &url).await?;
        parsed(&url, "versions.yaml", &text).map(|(versions, _)| versions)
    }

    /// One version's `package.yaml`: typed, as written (JSON), and the URL
    /// it was read from.
    pub async fn package(
        &self,
        repository: &Endpoint,
        package: &str,
        version: &str,
    ) -> Result<(PackageManifest, Value, Url), RepositoryError> {
        let url = repository.package_url(package, version);
        let text = self.text(repository, &url).await?;
        let (manifest, value): (PackageManifest, Value) = parsed(&url, "package.yaml", &text)?;
        if manifest.name != package {
            return Err(RepositoryError::Parse {
                url: url.to_string(),
                what: "package.yaml",
                problem: format!("it names package {:?}, not {package:?}", manifest.name),
            });
        }
        Ok((manifest, value, url))
    }

    async fn text(&self, repository: &Endpoint, url: &Url) -> Result<String, RepositoryError> {
        // The runtime downloads the repository's manifests (Bundle refs,
        // which never carry credentials) with the credentials read last,
        // and with none once the repository has none.
        self.authorizations
            .set(&repository.base, repository.authorization.clone());
        let authorization = repository
            .authorization
            .as_deref()
            .filter(|_| repository.serves(url));
        self.fetch_text(url, MAX_FILE, authorization).await
    }

    /// The text at `url`, at most `max_size` bytes, sending
    /// `authorization` (only ever to the repository's own host).
    pub async fn fetch_text(
        &self,
        url: &Url,
        max_size: u64,
        authorization: Option<&str>,
    ) -> Result<String, RepositoryError> {
        let reference = TarballRef::parse(url.as_str())
            .map_err(|error| RepositoryError::Fetch(error.to_string()))?;
        let downloaded = self
            .https
            .download_authorized(&reference, max_size, &self.reach, authorization)
            .await
            .map_err(|error| RepositoryError::Fetch(error.to_string()))?;
        let mut bytes = Vec::new();
        std::io::Read::read_to_end(
            &mut downloaded
                .reader()
                .map_err(|error| RepositoryError::Fetch(format!("{url}: {error}")))?,
            &mut bytes,
        )
        .map_err(|error| RepositoryError::Fetch(format!("{url}: {error}")))?;
        String::from_utf8(bytes).map_err(|_| RepositoryError::Parse {
            url: url.to_string(),
            what: "repository file",
            problem: "it is not UTF-8 text".into(),
        })
    }
}

fn parsed<T: serde::de::DeserializeOwned>(
    url: &Url,
    what: &'static str,
    text: &str,
) -> Result<(T, Value), RepositoryError> {
    manifest::parse(text).map_err(|problem| RepositoryError::Parse {
        url: url.to_string(),
        what,
        problem,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_are_joined_and_escaped_as_glasskube_joins_them() {
        let endpoint = Endpoint {
            name: "r".into(),
            base: Url::parse("https://repo.example/packages/").unwrap(),
            authorization: None,
        };
        assert_eq!(
            endpoint.package_url("cloudnative-pg", "v1.27.1+1").as_str(),
            "https://repo.example/packages/cloudnative-pg/v1.27.1+1/package.yaml"
        );
        assert_eq!(
            endpoint.versions_url("a/b").as_str(),
            "https://repo.example/packages/a%2Fb/versions.yaml",
            "a name cannot climb out of the repository"
        );
        let package = endpoint.package_url("postgresql", "v16.4.0+2");
        assert_eq!(
            manifest_url(&package, "./manifest.yaml").unwrap().as_str(),
            "https://repo.example/packages/postgresql/v16.4.0+2/manifest.yaml"
        );
        assert!(manifest_url(&package, "http://x/y.yaml").is_err());
        assert!(endpoint.serves(&package));
        assert!(!endpoint.serves(&Url::parse("https://github.com/x.yaml").unwrap()));
    }
}
