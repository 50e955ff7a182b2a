//! What `GET /v1/catalogs`, `GET /v1/packages`, `GET /v1/packages/{name}`
//! and `POST /v1/query` answer.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// `GET /v1/catalogs`.
#[derive(Clone, Debug, Serialize, Deserialize, ToSchema)]
pub struct CatalogList {
    /// Every served catalog, highest priority first.
    pub catalogs: Vec<CatalogSummary>,
}

/// One served catalog.
#[derive(Clone, Debug, Serialize, Deserialize, ToSchema)]
pub struct CatalogSummary {
    /// The Catalog's name.
    pub name: String,
    /// Its priority (higher wins).
    pub priority: i32,
    /// The digest of the content served.
    pub digest: String,
    /// Packages in it.
    pub packages: u64,
    /// Channels in it.
    pub channels: u64,
    /// Bundles in it.
    pub bundles: u64,
}

/// `GET /v1/packages`.
#[derive(Clone, Debug, Serialize, Deserialize, ToSchema)]
pub struct PackageList {
    /// Every package of every catalog, by name, then catalog priority.
    pub packages: Vec<PackageSummary>,
}

/// A package in one catalog.
#[derive(Clone, Debug, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct PackageSummary {
    /// The package's name.
    pub name: String,
    /// The catalog it is in.
    pub catalog: String,
    /// The channel used when a request names none.
    pub default_channel: Option<String>,
    /// Its channels, by name, with their heads.
    pub channels: Vec<ChannelSummary>,
}

/// A channel and its heads (entries nothing replaces or skips).
#[derive(Clone, Debug, Serialize, Deserialize, ToSchema)]
pub struct ChannelSummary {
    /// The channel's name.
    pub name: String,
    /// Its heads; one in a well-formed channel.
    pub heads: Vec<String>,
}

/// `GET /v1/packages/{name}`.
#[derive(Clone, Debug, Serialize, Deserialize, ToSchema)]
pub struct PackageDetail {
    /// The package's name.
    pub name: String,
    /// The package in each catalog that has it, highest priority first.
    pub catalogs: Vec<PackageInCatalog>,
}

/// A package as one catalog has it: channels, versions, update graph.
#[derive(Clone, Debug, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct PackageInCatalog {
    /// The catalog.
    pub catalog: String,
    /// The channel used when a request names none.
    pub default_channel: Option<String>,
    /// Its channels, with heads and entries (heads first, then by distance).
    pub channels: Vec<ChannelDetail>,
    /// Its bundles, newest first.
    pub versions: Vec<VersionEntry>,
    /// The update graph: `to` may replace an installed `from`.
    pub edges: Vec<Edge>,
}

/// A channel with its entries in preference order.
#[derive(Clone, Debug, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ChannelDetail {
    /// The channel's name.
    pub name: String,
    /// Its heads.
    pub heads: Vec<String>,
    /// Its entries' bundle names, heads first.
    pub entries: Vec<String>,
    /// Each entry's `skipRange` as written, by entry name.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub skip_ranges: BTreeMap<String, String>,
    /// What is wrong with the channel's graph (several heads, dangling
    /// `replaces`, cycles), in words.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub problems: Vec<String>,
}

/// One bundle of a package.
#[derive(Clone, Debug, Serialize, Deserialize, ToSchema)]
pub struct VersionEntry {
    /// The bundle's name.
    pub bundle: String,
    /// Its version.
    pub version: String,
    /// The channels that list it.
    pub channels: Vec<String>,
    /// Why it is deprecated, if it is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deprecated: Option<String>,
}

/// One upgrade edge of a channel.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct Edge {
    /// The channel the edge is in.
    pub channel: String,
    /// The installed bundle.
    pub from: String,
    /// The bundle that may replace it.
    pub to: String,
    /// `replaces`, `skips` or `skipRange`.
    pub via: String,
}

/// `POST /v1/query`: the bundles that meet the constraint.
#[derive(Clone, Debug, Serialize, Deserialize, ToSchema)]
pub struct QueryResult {
    /// Matching bundles, in preference order (catalog priority, then newest).
    pub bundles: Vec<BundleSummary>,
}

/// A bundle as a query lists it.
#[derive(Clone, Debug, Serialize, Deserialize, ToSchema)]
pub struct BundleSummary {
    /// The catalog it is in.
    pub catalog: String,
    /// Its package.
    pub package: String,
    /// Its name.
    pub name: String,
    /// Its version.
    pub version: String,
    /// Its image.
    pub image: String,
    /// The channels that list it.
    pub channels: Vec<String>,
    /// Why it is deprecated, if it is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deprecated: Option<String>,
}
