//! `Catalog` (group `resolve.pakket.dev`, cluster-scoped): a File-Based
//! Catalog the cluster serves to the resolver, from an FBC image, an
//! immutable ConfigMap or an `https://` tarball.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The API group of the resolver's kinds.
pub const GROUP: &str = "resolve.pakket.dev";
/// The served and stored version.
pub const VERSION: &str = "v1alpha1";
/// The plural the API and RBAC name Catalogs by.
pub const PLURAL: &str = "catalogs";

/// Where a catalog comes from, its priority among the cluster's catalogs,
/// and how often an unpinned source is looked at again.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[kube(
    group = "resolve.pakket.dev",
    version = "v1alpha1",
    kind = "Catalog",
    plural = "catalogs",
    shortname = "ctlg",
    category = "pakket",
    status = "CatalogStatus",
    printcolumn = r#"{"name":"Priority","type":"integer","jsonPath":".spec.priority"}"#,
    printcolumn = r#"{"name":"Ready","type":"string","jsonPath":".status.conditions[?(@.type==\"Ready\")].status"}"#,
    printcolumn = r#"{"name":"Serving","type":"string","jsonPath":".status.conditions[?(@.type==\"Serving\")].status"}"#,
    printcolumn = r#"{"name":"Unpacked","type":"string","jsonPath":".status.conditions[?(@.type==\"Unpacked\")].status"}"#,
    printcolumn = r#"{"name":"Packages","type":"integer","jsonPath":".status.counts.packages"}"#,
    printcolumn = r#"{"name":"Bundles","type":"integer","jsonPath":".status.counts.bundles"}"#,
    printcolumn = r#"{"name":"Digest","type":"string","jsonPath":".status.digest","priority":1}"#,
    printcolumn = r#"{"name":"Synced","type":"date","jsonPath":".status.lastSyncTime"}"#,
    printcolumn = r#"{"name":"Age","type":"date","jsonPath":".metadata.creationTimestamp"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct CatalogSpec {
    /// Where the catalog's content comes from: exactly one of `image`,
    /// `configMap` or `https`.
    pub source: CatalogSource,

    /// Which catalog wins when several offer a package: higher first.
    #[serde(default)]
    pub priority: i32,

    /// How often a source that names no digest (an image tag, an `https`
    /// URL without `sha256`) is looked at again, as a Go duration
    /// (`30s`, `5m`, `1h`). Unset: only when the Catalog changes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(regex(pattern = r"^([0-9]+(s|m|h))+$"), length(max = 32))]
    pub poll_interval: Option<String>,
}

/// Exactly one source of catalog content.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("x-kubernetes-validations" = [{
    "rule": "[has(self.image), has(self.configMap), has(self.https)].filter(x, x).size() == 1",
    "message": "spec.source needs exactly one of image, configMap or https",
}]))]
pub struct CatalogSource {
    /// An FBC image: the catalog under `/configs`, OLM's layout.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image: Option<ImageCatalogSource>,
    /// An immutable ConfigMap whose keys are catalog files (`.json`, `.yaml`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config_map: Option<ConfigMapCatalogSource>,
    /// A tarball (tar or tar.gz) holding the catalog, under `configs/` or at its root.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub https: Option<HttpsCatalogSource>,
}

/// An FBC image by reference.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
pub struct ImageCatalogSource {
    /// `registry/repository:tag` or `registry/repository@sha256:…`
    /// (a `docker://` prefix is accepted).
    #[serde(rename = "ref")]
    #[schemars(length(min = 1, max = 2048))]
    pub reference: String,
}

/// A ConfigMap by name and namespace (Catalogs are cluster-scoped).
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
pub struct ConfigMapCatalogSource {
    /// The ConfigMap's name.
    #[schemars(length(min = 1, max = 253))]
    pub name: String,
    /// The ConfigMap's namespace.
    #[schemars(length(min = 1, max = 63))]
    pub namespace: String,
}

/// Catalog content over HTTPS, optionally pinned by its sha256: a tarball
/// (gzip'd or not) holding the catalog files, or one catalog file whose URL
/// ends in `.json`, `.yaml` or `.yml`.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
pub struct HttpsCatalogSource {
    /// `https://…`: the tarball's or the catalog file's address.
    #[schemars(length(min = 9, max = 2048))]
    #[schemars(extend("x-kubernetes-validations" = [{
        "rule": "self.startsWith('https://')",
        "message": "spec.source.https.url must start with https://",
    }]))]
    pub url: String,
    /// The downloaded bytes' sha256 (64 hex digits): fetched content with another
    /// digest is refused, and a pinned URL is never polled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(regex(pattern = r"^[0-9a-f]{64}$"))]
    pub sha256: Option<String>,
}

/// What the resolver serves from this Catalog, and how the last sync went.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CatalogStatus {
    /// `Serving` and `Unpacked`, always both.
    #[serde(default)]
    #[schemars(schema_with = "pakket_api::schema::conditions")]
    pub conditions: Vec<Condition>,
    /// The digest of the content being served (an image's manifest digest,
    /// a tarball's sha256, a digest of a ConfigMap's keys and values).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub digest: Option<String>,
    /// How much the served content holds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub counts: Option<CatalogCounts>,
    /// When the source was last looked at.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_sync_time: Option<Time>,
    /// What the loader found wrong in the served content (dangling
    /// replaces, channels with several heads, bad skipRanges, …).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub diagnostics: Option<DiagnosticsSummary>,
    /// The generation this status describes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
}

/// Packages, channels and bundles in the served content.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq, JsonSchema)]
pub struct CatalogCounts {
    /// `olm.package` documents loaded.
    pub packages: u64,
    /// `olm.channel` documents loaded.
    pub channels: u64,
    /// `olm.bundle` documents loaded.
    pub bundles: u64,
}

/// The loader's findings, counted, with the first few written out.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DiagnosticsSummary {
    /// Objects or fields left out.
    pub errors: u64,
    /// Suspicious shapes kept.
    pub warnings: u64,
    /// How many of each kind (`DanglingReplaces`, `MultipleHeads`, …).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub by_code: BTreeMap<String, u64>,
    /// The first findings, errors first, each as `file:line: …; advice`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub first: Vec<String>,
    /// How many findings `first` leaves out.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub omitted: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl Catalog {
    /// The condition of type `kind`, if the status has it.
    pub fn condition(&self, kind: crate::condition::ConditionType) -> Option<&Condition> {
        let status = self.status.as_ref();
        crate::condition::find(status.map(|s| s.conditions.as_slice()), kind.as_str())
    }
}

impl CatalogSource {
    /// The field path of the source that is set, for messages.
    pub fn field(&self) -> &'static str {
        if self.image.is_some() {
            "spec.source.image.ref"
        } else if self.config_map.is_some() {
            "spec.source.configMap"
        } else {
            "spec.source.https.url"
        }
    }

    /// Whether the source names its content by digest, so polling cannot
    /// find anything new.
    pub fn is_pinned(&self) -> bool {
        match (&self.image, &self.config_map, &self.https) {
            (Some(image), _, _) => image.reference.contains("@sha256:"),
            // Immutable: the same name always holds the same content.
            (None, Some(_), _) => true,
            (None, None, Some(https)) => https.sha256.is_some(),
            (None, None, None) => true,
        }
    }
}

/// Parses a Go duration of whole units (`90s`, `5m`, `1h30m`).
pub fn parse_interval(text: &str) -> Option<std::time::Duration> {
    let mut total = 0u64;
    let mut number = String::new();
    for c in text.chars() {
        if c.is_ascii_digit() {
            number.push(c);
            continue;
        }
        let unit = match c {
            's' => 1,
            'm' => 60,
            'h' => 3600,
            _ => return None,
        };
        let n: u64 = number.parse().ok()?;
        total = total.checked_add(n.checked_mul(unit)?)?;
        number.clear();
    }
    (number.is_empty() && total > 0).then(|| std::time::Duration::from_secs(total))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn intervals_read_as_go_writes_them() {
        assert_eq!(parse_interval("90s").unwrap().as_secs(), 90);
        assert_eq!(parse_interval("1h30m").unwrap().as_secs(), 5400);
        assert!(parse_interval("5").is_none());
        assert!(parse_interval("0s").is_none());
        assert!(parse_interval("1d").is_none());
    }

    #[test]
    fn only_unpinned_sources_are_polled() {
        let image = |reference: &str| CatalogSource {
            image: Some(ImageCatalogSource {
                reference: reference.into(),
            }),
            ..CatalogSource::default()
        };
        assert!(!image("localhost:5000/catalog:latest").is_pinned());
        assert!(image(&format!("localhost:5000/catalog@sha256:{}", "a".repeat(64))).is_pinned());
        let https = |sha256: Option<&str>| CatalogSource {
            https: Some(HttpsCatalogSource {
                url: "https://example.com/catalog.tar.gz".into(),
                sha256: sha256.map(Into::into),
            }),
            ..CatalogSource::default()
        };
        assert!(!https(None).is_pinned());
        assert!(https(Some(&"b".repeat(64))).is_pinned());
    }
}
