//! `helm+https://REPOSITORY/#NAME@VERSION` refs: one chart version from a
//! Helm chart repository. The repository's `index.yaml` says where the
//! chart's archive is and its sha256; the archive is then fetched as an
//! `https://` ref pinned to that digest (as `https://` refs are), so the content
//! (and what an approval covers) is exactly the archive the index named,
//! and a stored archive is not downloaded again. An index entry without a
//! digest is refused: nothing unpinned is installed.
//!
//! A private repository's credentials are the class's, as an image's are:
//! an entry for the repository's host in the class's `pullSecrets` (Secrets
//! in the provisioner's namespace, [`crate::source::pull_secret`]) is sent
//! as HTTP basic auth to that host only, for the index and for an archive
//! on the same host. A Bundle never carries them, and the requester never
//! names a Secret: the admin who wrote the class chose who may install from
//! the repository. Without an entry for the host the repository is read
//! anonymously, so public repositories work beside a private one.
//!
//! Written here rather than with a Helm library: no maintained Rust crate
//! reads chart repositories, and what is needed is one YAML document and
//! one lookup.

use std::collections::{BTreeMap, HashMap};
use std::io::Read as _;
use std::sync::{Arc, LazyLock, Mutex};

use base64::Engine as _;
use kube::Client;
use reqwest::Url;
use serde::Deserialize;

use super::{ContentError, ImageSources, UnpackOptions, Unpacked};
use crate::source::https::TarballRef;
use crate::source::pull_secret::{self, PullSecretError};
use crate::store::Store;

/// The scheme.
pub const SCHEME: &str = "helm+https";

/// The largest index read: real ones reach tens of megabytes (every
/// version of every chart since the repository began).
const MAX_INDEX: u64 = 64 * 1024 * 1024;

/// The most archives [`LOCATED`] remembers before it starts afresh.
const MAX_LOCATED: usize = 4096;

/// The pinned archive each `helm+https://` ref was found at. A published
/// chart version does not change, and an index is often megabytes: it is
/// read once per ref in a process, not once per Bundle (a thousand
/// HelmCharts of one chart are a thousand Bundles). Only where the index
/// pointed is kept; the archive itself is fetched through the source's
/// guards every time it is not stored.
static LOCATED: LazyLock<Mutex<HashMap<String, String>>> = LazyLock::new(Mutex::default);

/// A chart named by a ref.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ChartRef {
    /// The repository, `https://…/` (ending in `/`).
    pub repository: Url,
    /// The chart's name.
    pub name: String,
    /// Its version, exactly (a range is a catalog's to resolve).
    pub version: String,
}

impl ChartRef {
    /// Parses `helm+https://HOST[:PORT]/PATH/#NAME@VERSION`.
    pub fn parse(input: &str) -> Result<Self, String> {
        const FORM: &str = "write helm+https://REPOSITORY/#CHART@VERSION (the repository's URL, the chart's name and its exact version)";
        let rest = input
            .strip_prefix("helm+")
            .filter(|rest| rest.starts_with("https://"))
            .ok_or_else(|| format!("it is not a helm+https:// ref; {FORM}"))?;
        let (repository, chart) = rest
            .split_once('#')
            .ok_or_else(|| format!("it names no chart after '#'; {FORM}"))?;
        let (name, version) = chart
            .split_once('@')
            .ok_or_else(|| format!("{chart:?} names no version after '@'; {FORM}"))?;
        if name.is_empty() || version.is_empty() {
            return Err(format!("{chart:?} lacks a chart name or a version; {FORM}"));
        }
        if version
            .chars()
            .any(|c| matches!(c, '<' | '>' | '=' | '^' | '~' | '*' | ' ' | ','))
        {
            return Err(format!(
                "{version:?} is a range; a ref names one version (a Catalog resolves ranges); {FORM}"
            ));
        }
        let mut repository = Url::parse(repository).map_err(|error| format!("{error}; {FORM}"))?;
        if !repository.path().ends_with('/') {
            let path = format!("{}/", repository.path());
            repository.set_path(&path);
        }
        Ok(Self {
            repository,
            name: name.to_owned(),
            version: version.to_owned(),
        })
    }

    /// `REPOSITORY/index.yaml`.
    pub fn index_url(&self) -> String {
        format!("{}index.yaml", self.repository)
    }
}

/// A chart repository's `index.yaml`, as far as finding a chart goes.
#[derive(Debug, Default, Deserialize)]
struct ChartIndex {
    #[serde(default)]
    entries: BTreeMap<String, Vec<IndexedChart>>,
}

#[derive(Debug, Deserialize)]
struct IndexedChart {
    version: String,
    #[serde(default)]
    urls: Vec<String>,
    /// The archive's sha256, in hex.
    #[serde(default)]
    digest: Option<String>,
}

/// The archive of `chart` as the index `text` lists it, as an `https://`
/// ref pinned to its digest; or why there is none.
pub fn locate(text: &str, chart: &ChartRef) -> Result<String, String> {
    let index: ChartIndex = serde_saphyr::from_str(text).map_err(|error| {
        format!(
            "{} is not a chart repository index: {error}",
            chart.index_url()
        )
    })?;
    let versions = index.entries.get(&chart.name).ok_or_else(|| {
        format!(
            "{} lists no chart {}; check the chart's name",
            chart.index_url(),
            chart.name
        )
    })?;
    let found = versions
        .iter()
        .find(|listed| listed.version == chart.version)
        .ok_or_else(|| {
            let mut known: Vec<&str> = versions.iter().map(|v| v.version.as_str()).collect();
            known.truncate(10);
            format!(
                "{} lists no version {} of chart {} (it lists {}); name one of those",
                chart.index_url(),
                chart.version,
                chart.name,
                known.join(", ")
            )
        })?;
    let digest = found
        .digest
        .as_deref()
        .filter(|digest| digest.len() == 64 && digest.chars().all(|c| c.is_ascii_hexdigit()))
        .ok_or_else(|| {
            format!(
                "{} gives no sha256 digest for {} {}, so the archive cannot be pinned; Pakket installs only pinned charts",
                chart.index_url(),
                chart.name,
                chart.version
            )
        })?;
    let url = found.urls.first().ok_or_else(|| {
        format!(
            "{} lists no URL for {} {}",
            chart.index_url(),
            chart.name,
            chart.version
        )
    })?;
    // Relative URLs are relative to the repository, as Helm reads them.
    let url = chart
        .repository
        .join(url)
        .map_err(|error| format!("{url:?} in {}: {error}", chart.index_url()))?;
    Ok(format!("{url}#sha256={}", digest.to_ascii_lowercase()))
}

/// Fetches the chart `reference` names into the store.
pub(super) async fn unpack_chart(
    client: &Client,
    store: &Arc<Store>,
    sources: &ImageSources,
    options: &UnpackOptions,
    index: usize,
    reference: String,
) -> Result<Unpacked, ContentError> {
    let refused = |problem: String| ContentError::Chart {
        index,
        reference: reference.clone(),
        problem,
    };
    let secret_error = |source: PullSecretError| ContentError::PullSecret {
        index,
        reference: reference.clone(),
        source: Box::new(source),
    };
    let chart = ChartRef::parse(&reference).map_err(&refused)?;
    let index_auth = basic_auth(client, sources, options, &chart.repository)
        .await
        .map_err(secret_error)?;
    // Where an index read with credentials pointed is remembered for those
    // credentials only.
    let located_key = format!(
        "{reference}\n{}",
        index_auth.as_ref().map_or("", |(from, _)| from.as_str())
    );
    let known = LOCATED
        .lock()
        .ok()
        .and_then(|found| found.get(&located_key).cloned());
    let archive = match known {
        Some(archive) => archive,
        None => {
            let authorization = index_auth.as_ref().map(|(_, value)| value.as_str());
            let archive = read_index(sources, options, &chart, authorization)
                .await
                .map_err(&refused)?;
            if let Ok(mut found) = LOCATED.lock() {
                if found.len() >= MAX_LOCATED {
                    found.clear();
                }
                found.insert(located_key, archive.clone());
            }
            archive
        }
    };
    let archive_url = Url::parse(archive.split('#').next().unwrap_or_default()).ok();
    let archive_auth = match archive_url {
        Some(url) if url.origin() == chart.repository.origin() => index_auth.map(|(_, v)| v),
        Some(url) => basic_auth(client, sources, options, &url)
            .await
            .map_err(secret_error)?
            .map(|(_, value)| value),
        None => None,
    };
    let mut unpacked = super::https::unpack_tarball_authorized(
        store,
        sources,
        options,
        index,
        archive,
        archive_auth,
    )
    .await?;
    unpacked.reference = reference;
    Ok(unpacked)
}

/// The `Authorization` value for `url`'s host from the class's pull
/// secrets, with which Secret and entry gave it; none when the class names
/// none or none has an entry for the host.
async fn basic_auth(
    client: &Client,
    sources: &ImageSources,
    options: &UnpackOptions,
    url: &Url,
) -> Result<Option<(String, String)>, PullSecretError> {
    if options.pull_secrets.is_empty() {
        return Ok(None);
    }
    let host = match (url.host_str(), url.port()) {
        (Some(host), Some(port)) => format!("{host}:{port}"),
        (Some(host), None) => host.to_owned(),
        (None, _) => return Ok(None),
    };
    match pull_secret::find(
        client,
        sources.secret_namespace(),
        &options.pull_secrets,
        &host,
    )
    .await
    {
        Ok(found) => {
            let pair = format!(
                "{}:{}",
                found.credentials.username, found.credentials.password
            );
            let value = format!(
                "Basic {}",
                base64::engine::general_purpose::STANDARD.encode(pair)
            );
            let from = format!("{}/{} {}", found.namespace, found.secret, found.entry);
            tracing::debug!(%host, %from, "reading a chart repository with a pull secret");
            Ok(Some((from, value)))
        }
        Err(PullSecretError::NoEntry { .. }) => Ok(None),
        Err(error) => Err(error),
    }
}

/// The archive `chart` is at, pinned, as its repository's index says.
async fn read_index(
    sources: &ImageSources,
    options: &UnpackOptions,
    chart: &ChartRef,
    authorization: Option<&str>,
) -> Result<String, String> {
    let index_ref = TarballRef::parse(&chart.index_url()).map_err(|e| e.to_string())?;
    let registered = sources.https().authorizations_for(index_ref.url());
    let downloaded = sources
        .https()
        .download_authorized(
            &index_ref,
            MAX_INDEX,
            &options.reach(),
            authorization.or(registered.as_deref()),
        )
        .await
        .map_err(|e| e.to_string())?;
    let mut text = String::new();
    downloaded
        .reader()
        .and_then(|reader| reader.take(MAX_INDEX).read_to_string(&mut text))
        .map_err(|error| format!("reading {}: {error}", chart.index_url()))?;
    locate(&text, chart)
}

#[cfg(test)]
mod tests {
    use super::*;

    const INDEX: &str = "apiVersion: v1
entries:
  podinfo:
  - name: podinfo
    version: 6.7.1
    urls: [podinfo-6.7.1.tgz]
    digest: 4CA4F2C9A9F8B6D3F2E1A0B9C8D7E6F5A4B3C2D1E0F9A8B7C6D5E4F3A2B1C0D9
  - name: podinfo
    version: 6.7.0
    urls: [https://other.example/archive/podinfo-6.7.0.tgz]
    digest: 1111111111111111111111111111111111111111111111111111111111111111
  unpinned:
  - name: unpinned
    version: 1.0.0
    urls: [unpinned-1.0.0.tgz]
";

    #[test]
    fn a_ref_names_a_repository_a_chart_and_one_version() {
        let chart = ChartRef::parse("helm+https://charts.example/podinfo#podinfo@6.7.1").unwrap();
        assert_eq!(chart.repository.as_str(), "https://charts.example/podinfo/");
        assert_eq!(
            (chart.name.as_str(), chart.version.as_str()),
            ("podinfo", "6.7.1")
        );
        assert_eq!(
            chart.index_url(),
            "https://charts.example/podinfo/index.yaml"
        );
        for (bad, says) in [
            ("helm+http://charts.example/#p@1", "not a helm+https"),
            ("helm+https://charts.example/", "names no chart"),
            ("helm+https://charts.example/#podinfo", "names no version"),
            ("helm+https://charts.example/#@1.0.0", "lacks a chart name"),
            ("helm+https://charts.example/#podinfo@>=6.0.0", "is a range"),
        ] {
            let error = ChartRef::parse(bad).unwrap_err();
            assert!(
                error.contains(says) && error.contains("helm+https://REPOSITORY/#CHART@VERSION"),
                "{bad}: {error}"
            );
        }
    }

    #[test]
    fn the_index_gives_the_archive_pinned_to_its_digest_or_says_why_not() {
        let chart = |name: &str, version: &str| ChartRef {
            repository: Url::parse("https://charts.example/repo/").unwrap(),
            name: name.into(),
            version: version.into(),
        };
        assert_eq!(
            locate(INDEX, &chart("podinfo", "6.7.1")).unwrap(),
            "https://charts.example/repo/podinfo-6.7.1.tgz#sha256=4ca4f2c9a9f8b6d3f2e1a0b9c8d7e6f5a4b3c2d1e0f9a8b7c6d5e4f3a2b1c0d9"
        );
        assert!(
            locate(INDEX, &chart("podinfo", "6.7.0"))
                .unwrap()
                .starts_with("https://other.example/archive/podinfo-6.7.0.tgz#sha256=1111")
        );
        for (name, version, says) in [
            (
                "podinfo",
                "9.9.9",
                "lists no version 9.9.9 of chart podinfo (it lists 6.7.1, 6.7.0)",
            ),
            ("nginx", "1.0.0", "lists no chart nginx"),
            ("unpinned", "1.0.0", "gives no sha256 digest"),
        ] {
            let error = locate(INDEX, &chart(name, version)).unwrap_err();
            assert!(error.contains(says), "{error}");
            assert!(
                error.contains("https://charts.example/repo/index.yaml"),
                "{error}"
            );
        }
        assert!(
            locate("- not an index", &chart("podinfo", "6.7.1"))
                .unwrap_err()
                .contains("is not a chart repository index")
        );
    }
}
