//! Helm chart repositories: where a package's chart is, read from the
//! repository's `index.yaml` as Helm reads it, and pinned to the digest the
//! index gives, so the runtime downloads (and an approval covers) exactly
//! that archive.
//!
//! A chart repository's index lists every version of every chart and is
//! often megabytes long; it is read once per chart version and the answer
//! kept (a published chart version does not change), never once per
//! reconcile. Only `https://` repositories are read (an `oci://` chart is
//! refused with a condition saying so).

use std::collections::{BTreeMap, HashMap};
use std::sync::Mutex;

use reqwest::Url;
use serde::Deserialize;

use pakket_packages_api::manifest::HelmChart;
use pakket_packages_client::repository::{RepositoryClient, RepositoryError};

/// The largest chart repository index read. Real ones reach tens of
/// megabytes (every version of every chart since the repository began).
pub const MAX_INDEX: u64 = 64 * 1024 * 1024;

/// A chart repository's `index.yaml`, as far as finding a chart goes.
#[derive(Debug, Default, Deserialize)]
struct ChartIndex {
    #[serde(default)]
    entries: BTreeMap<String, Vec<ChartVersion>>,
}

#[derive(Debug, Deserialize)]
struct ChartVersion {
    version: String,
    #[serde(default)]
    urls: Vec<String>,
    /// The archive's sha256, in hex.
    #[serde(default)]
    digest: Option<String>,
}

/// Finds charts, remembering what it found.
#[derive(Default)]
pub struct ChartLocator {
    found: Mutex<HashMap<(String, String, String), String>>,
}

impl ChartLocator {
    /// The archive of `chart` as a runtime ref: its URL, pinned with
    /// `#sha256=` when the index gives the digest.
    pub async fn locate(
        &self,
        client: &RepositoryClient,
        chart: &HelmChart,
    ) -> Result<String, String> {
        let key = (
            chart.repository_url.clone(),
            chart.chart_name.clone(),
            chart.chart_version.clone(),
        );
        if let Some(found) = self.found.lock().unwrap().get(&key) {
            return Ok(found.clone());
        }
        let index_url = index_url(&chart.repository_url)?;
        let text = client
            .fetch_text(&index_url, MAX_INDEX, None)
            .await
            .map_err(|error| match error {
                RepositoryError::Fetch(problem) => {
                    format!(
                        "helm.repositoryUrl: the chart repository's index cannot be read: {problem}"
                    )
                }
                other => other.to_string(),
            })?;
        let index: ChartIndex = serde_saphyr::from_str(&text).map_err(|error| {
            format!("helm.repositoryUrl: {index_url} is not a Helm repository index: {error}")
        })?;
        let found = pick(&index, &chart.chart_name, &chart.chart_version)
            .map_err(|problem| format!("helm: {problem} in {index_url}"))?;
        let url = found.urls.first().ok_or_else(|| {
            format!(
                "helm: {index_url} lists {} {} without a URL",
                chart.chart_name, found.version
            )
        })?;
        let mut url = index_url.join(url).map_err(|error| {
            format!("helm: {index_url} gives {url:?} for the chart, which is not a URL: {error}")
        })?;
        if url.scheme() != "https" {
            return Err(format!(
                "helm: the chart {} {} is at {url}; pakket-package downloads https:// charts only",
                chart.chart_name, found.version
            ));
        }
        if let Some(digest) = found.digest.as_deref().filter(|d| is_sha256(d)) {
            url.set_fragment(Some(&format!("sha256={}", digest.to_ascii_lowercase())));
        }
        let located = url.to_string();
        self.found.lock().unwrap().insert(key, located.clone());
        Ok(located)
    }
}

/// `<repositoryUrl>/index.yaml`.
fn index_url(repository: &str) -> Result<Url, String> {
    let trimmed = repository.trim();
    if trimmed.starts_with("oci://") {
        return Err(format!(
            "helm.repositoryUrl: {trimmed} is an OCI chart repository; pakket-package reads https:// chart repositories only"
        ));
    }
    let url = Url::parse(trimmed).map_err(|error| {
        format!("helm.repositoryUrl: {trimmed:?} is not a URL ({error}); write https://HOST/PATH")
    })?;
    if url.scheme() != "https" {
        return Err(format!(
            "helm.repositoryUrl: {trimmed} is not https://; pakket-package reads https:// chart repositories only"
        ));
    }
    pakket_packages_client::repository::as_folder(url)
        .join("index.yaml")
        .map_err(|error| format!("helm.repositoryUrl: {error}"))
}

fn is_sha256(digest: &str) -> bool {
    digest.len() == 64 && digest.bytes().all(|b| b.is_ascii_hexdigit())
}

/// The version `wanted` names, as Flux reads a chart version: an exact
/// version (a leading `v` and build metadata ignored), else a semver
/// range, the highest version it allows.
fn pick<'a>(index: &'a ChartIndex, chart: &str, wanted: &str) -> Result<&'a ChartVersion, String> {
    let versions = index
        .entries
        .get(chart)
        .filter(|versions| !versions.is_empty())
        .ok_or_else(|| format!("no chart {chart} is listed"))?;
    let wanted_exact = semver::Version::parse(normalized(wanted));
    if let Ok(wanted_exact) = &wanted_exact {
        let same = versions.iter().find(|candidate| {
            semver::Version::parse(normalized(&candidate.version))
                .is_ok_and(|version| version.cmp_precedence(wanted_exact).is_eq())
        });
        return same.ok_or_else(|| format!("chart {chart} has no version {wanted}"));
    }
    let range = semver::VersionReq::parse(wanted.trim()).map_err(|error| {
        format!("helm.chartVersion {wanted:?} is neither a version nor a range ({error})")
    })?;
    versions
        .iter()
        .filter_map(|candidate| {
            semver::Version::parse(normalized(&candidate.version))
                .ok()
                .filter(|version| range.matches(version))
                .map(|version| (version, candidate))
        })
        .max_by(|(a, _), (b, _)| a.cmp_precedence(b))
        .map(|(_, candidate)| candidate)
        .ok_or_else(|| format!("chart {chart} has no version in the range {wanted}"))
}

/// `v1.2.3+1` → `1.2.3+1` (build metadata is ignored by precedence).
fn normalized(version: &str) -> &str {
    let version = version.trim();
    version.strip_prefix('v').unwrap_or(version)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn index() -> ChartIndex {
        serde_saphyr::from_str(
            "apiVersion: v1
entries:
  sealed-secrets:
  - name: sealed-secrets
    version: 2.15.4
    urls: [sealed-secrets-2.15.4.tgz]
  - name: sealed-secrets
    version: 2.15.3
    digest: AB0000000000000000000000000000000000000000000000000000000000000f
    urls: [https://example.com/sealed-secrets-2.15.3.tgz]
  - name: sealed-secrets
    version: 2.16.0-rc.1
    urls: [sealed-secrets-2.16.0-rc.1.tgz]
",
        )
        .unwrap()
    }

    /// sealed-secrets' package.yaml asks for `v2.15.3+1`; Flux reads it as
    /// 2.15.3.
    #[test]
    fn a_version_matches_without_its_v_and_build_metadata() {
        let index = index();
        assert_eq!(
            pick(&index, "sealed-secrets", "v2.15.3+1").unwrap().version,
            "2.15.3"
        );
        assert_eq!(
            pick(&index, "sealed-secrets", "2.15.4").unwrap().version,
            "2.15.4"
        );
        assert_eq!(
            pick(&index, "sealed-secrets", "2.15.5").unwrap_err(),
            "chart sealed-secrets has no version 2.15.5"
        );
    }

    #[test]
    fn a_range_takes_the_highest_version_it_allows_and_no_pre_release() {
        let index = index();
        assert_eq!(
            pick(&index, "sealed-secrets", ">=2.15.0").unwrap().version,
            "2.15.4"
        );
        assert_eq!(
            pick(&index, "sealed-secrets", "~2.15.3").unwrap().version,
            "2.15.4"
        );
        assert!(pick(&index, "sealed-secrets", "no such thing").is_err());
        assert_eq!(
            pick(&index, "other", "1.0.0").unwrap_err(),
            "no chart other is listed"
        );
    }

    #[test]
    fn an_index_url_is_the_folder_and_oci_is_refused_in_words() {
        assert_eq!(
            index_url("https://kubernetes.github.io/dashboard")
                .unwrap()
                .as_str(),
            "https://kubernetes.github.io/dashboard/index.yaml"
        );
        assert_eq!(
            index_url("https://charts.jetstack.io/").unwrap().as_str(),
            "https://charts.jetstack.io/index.yaml"
        );
        assert!(
            index_url("oci://ghcr.io/charts")
                .unwrap_err()
                .contains("OCI chart repository")
        );
        assert!(index_url("http://x").unwrap_err().contains("not https"));
    }
}
