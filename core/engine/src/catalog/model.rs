//! The loaded catalog: packages, their channels, bundles and deprecations.

use std::collections::hash_map::Entry;
use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::sync::Arc;

use super::constraint::Constraint;
use super::diagnostic::{Diagnostic, Origin};
use super::graph::UpdateGraph;
use super::property::Property;
use crate::{Range, Version};

/// One File-Based Catalog, loaded and checked.
///
/// The loader guarantees: package names are unique (they are the map keys),
/// bundle names are unique, every channel and bundle belongs to a package of
/// this catalog, and every bundle's version is semver. Anything that broke
/// those rules was left out and reported in [`Catalog::diagnostics`].
#[derive(Clone, Debug, Default)]
pub struct Catalog {
    /// The catalog's name (e.g. the ClusterCatalog it came from).
    pub name: String,
    /// Its priority when several catalogs offer the same package: higher wins.
    pub priority: i32,
    /// Packages by name, each with its channels.
    pub packages: BTreeMap<String, Package>,
    /// Bundles in load order (files in path order, documents in file order).
    pub bundles: Vec<Bundle>,
    /// `olm.deprecations` documents, at most one per package.
    pub deprecations: Vec<Deprecation>,
    /// Documents of schemas this loader does not model, kept by reference.
    pub others: Vec<OtherDocument>,
    /// Bundles left out while loading, and why (also in `diagnostics`),
    /// so a resolution that misses them can say so.
    pub left_out: Vec<LeftOutBundle>,
    /// Everything found wrong while loading, in file and line order.
    pub diagnostics: Vec<Diagnostic>,
}

impl Catalog {
    /// The package called `name`.
    pub fn package(&self, name: &str) -> Option<&Package> {
        self.packages.get(name)
    }

    /// The channel `channel` of `package`.
    pub fn channel(&self, package: &str, channel: &str) -> Option<&Channel> {
        self.packages.get(package)?.channels.get(channel)
    }

    /// The bundle called `name`. A linear scan: use
    /// [`crate::catalog::CatalogSet`] for repeated lookups.
    pub fn bundle(&self, name: &str) -> Option<&Bundle> {
        self.bundles.iter().find(|bundle| bundle.name == name)
    }

    /// The bundles of `package`, in load order.
    pub fn bundles_of<'a>(&'a self, package: &'a str) -> impl Iterator<Item = &'a Bundle> + 'a {
        self.bundles
            .iter()
            .filter(move |bundle| bundle.package == package)
    }

    /// The channels of `bundle`'s package that list it.
    pub fn channels_of(&self, bundle: &Bundle) -> Vec<&Channel> {
        let Some(package) = self.packages.get(&bundle.package) else {
            return Vec::new();
        };
        package
            .channels
            .values()
            .filter(|channel| channel.contains(&bundle.name))
            .collect()
    }

    /// The update graph of `channel` in `package`, with versions from this
    /// catalog's bundles. It scans every bundle: for the graphs of many
    /// channels, use [`crate::catalog::CatalogSet::graph`].
    pub fn graph(&self, package: &str, channel: &str) -> Option<UpdateGraph<'_>> {
        let channel = self.channel(package, channel)?;
        let versions: HashMap<&str, &Version> = self
            .bundles
            .iter()
            .filter(|bundle| bundle.package == package)
            .map(|bundle| (bundle.name.as_str(), &bundle.version))
            .collect();
        Some(UpdateGraph::new(channel, |name| {
            versions.get(name).copied()
        }))
    }

    /// The `olm.deprecations` of `package`, if it has any.
    pub fn deprecation(&self, package: &str) -> Option<&Deprecation> {
        self.deprecations.iter().find(|d| d.package == package)
    }

    /// Why `bundle` is deprecated whatever channel it is used through: an
    /// `olm.deprecations` entry for the bundle or its whole package, or its
    /// `olm.deprecated` property. Several reasons are joined with `; `.
    pub fn bundle_deprecation(&self, bundle: &Bundle) -> Option<String> {
        let notice = self.deprecation(&bundle.package);
        deprecation_reason(
            notice.and_then(|d| d.bundle_message(&bundle.name)),
            notice.and_then(Deprecation::package_message),
            bundle,
        )
    }
}

/// [`Catalog::bundle_deprecation`] for every bundle of a catalog: the
/// notices indexed once, where asking bundle by bundle scans the package's
/// notices each time.
pub(crate) struct DeprecationIndex<'c> {
    /// Per package: the notice for the whole package, and per bundle name.
    packages: HashMap<&'c str, (Option<&'c str>, HashMap<&'c str, &'c str>)>,
}

impl<'c> DeprecationIndex<'c> {
    pub(crate) fn new(catalog: &'c Catalog) -> Self {
        let mut packages = HashMap::new();
        for deprecation in &catalog.deprecations {
            // The first document of a package is the one `Catalog::deprecation` finds.
            let Entry::Vacant(slot) = packages.entry(deprecation.package.as_str()) else {
                continue;
            };
            let mut bundles = HashMap::new();
            for entry in &deprecation.entries {
                if let DeprecationReference::Bundle(name) = &entry.reference {
                    bundles
                        .entry(name.as_str())
                        .or_insert(entry.message.as_str());
                }
            }
            slot.insert((deprecation.package_message(), bundles));
        }
        Self { packages }
    }

    /// The same as [`Catalog::bundle_deprecation`].
    pub(crate) fn bundle_deprecation(&self, bundle: &Bundle) -> Option<String> {
        let notices = self.packages.get(bundle.package.as_str());
        deprecation_reason(
            notices.and_then(|(_, bundles)| bundles.get(bundle.name.as_str()).copied()),
            notices.and_then(|(package, _)| *package),
            bundle,
        )
    }
}

fn deprecation_reason(
    bundle_message: Option<&str>,
    package_message: Option<&str>,
    bundle: &Bundle,
) -> Option<String> {
    let reasons: Vec<&str> = [
        bundle_message,
        package_message,
        bundle
            .deprecated
            .then_some("the bundle carries the olm.deprecated property"),
    ]
    .into_iter()
    .flatten()
    .collect();
    (!reasons.is_empty()).then(|| reasons.join("; "))
}

/// A bundle document that was left out while loading.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LeftOutBundle {
    /// The bundle's name.
    pub name: String,
    /// The package its document names.
    pub package: String,
    /// Why it was left out (the diagnostic's message).
    pub reason: String,
    /// Where the document was written.
    pub origin: Origin,
}

/// An `olm.package` document with the channels that name it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Package {
    /// The package name (`etcd`).
    pub name: String,
    /// The channel a subscription uses when it names none.
    pub default_channel: Option<String>,
    /// Its channels, by name.
    pub channels: BTreeMap<String, Channel>,
    /// The package's description, if the document has one.
    pub description: Option<String>,
    /// Where the document was written.
    pub origin: Origin,
}

/// An `olm.channel` document: an ordered list of entries and their upgrade
/// edges.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Channel {
    /// The package the channel belongs to.
    pub package: String,
    /// The channel name (`stable`, `alpha`, `v1.2`).
    pub name: String,
    /// Its entries, in the document's order.
    pub entries: Vec<ChannelEntry>,
    /// Where the document was written.
    pub origin: Origin,
}

impl Channel {
    /// The entry for bundle `name`.
    pub fn entry(&self, name: &str) -> Option<&ChannelEntry> {
        self.entries.iter().find(|entry| entry.name == name)
    }

    /// Whether the channel lists bundle `name`.
    pub fn contains(&self, name: &str) -> bool {
        self.entry(name).is_some()
    }
}

/// One entry of a channel: a bundle and what it can upgrade from.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ChannelEntry {
    /// The bundle's name.
    pub name: String,
    /// The bundle this one replaces (one upgrade edge).
    pub replaces: Option<String>,
    /// Bundles this one can upgrade directly from, skipping the chain.
    pub skips: Vec<String>,
    /// Versions this one can upgrade directly from.
    pub skip_range: Option<Range>,
}

impl ChannelEntry {
    /// An entry with no edges, for fixtures.
    pub fn new(name: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            ..Self::default()
        }
    }
}

/// An `olm.bundle` document: one installable version of a package.
#[derive(Clone, Debug, PartialEq)]
pub struct Bundle {
    /// The bundle name (`etcdoperator.v0.9.4`), unique in the catalog.
    pub name: String,
    /// The package it is a version of.
    pub package: String,
    /// Its version, from the `olm.package` property.
    pub version: Version,
    /// The bundle image; empty if the catalog has none for it.
    pub image: String,
    /// The channels of its package that list it, sorted.
    pub channels: Vec<String>,
    /// APIs it provides (`olm.gvk`).
    pub provided_gvks: Vec<Gvk>,
    /// Packages it requires (`olm.package.required`).
    pub required_packages: Vec<PackageRequirement>,
    /// APIs it requires (`olm.gvk.required`).
    pub required_gvks: Vec<Gvk>,
    /// Its labels (`olm.label`).
    pub labels: Vec<String>,
    /// Labels some bundle must carry (`olm.label.required`).
    pub required_labels: Vec<String>,
    /// Formulas some bundle must satisfy (`olm.constraint`).
    pub constraints: Vec<Arc<Constraint>>,
    /// Whether it carries OLM v0's `olm.deprecated` property.
    pub deprecated: bool,
    /// Its CSV's descriptive metadata (`olm.csv.metadata`), if present.
    pub csv_metadata: Option<Arc<CsvMetadata>>,
    /// Every property in document order, unknown ones kept raw.
    pub properties: Vec<Property>,
    /// Where the document was written.
    pub origin: Origin,
}

impl Bundle {
    /// Whether channel `name` of its package lists this bundle.
    pub fn is_in_channel(&self, name: &str) -> bool {
        self.channels.iter().any(|channel| channel == name)
    }

    /// The properties of type `kind` that this loader does not model.
    pub fn other_properties<'a>(
        &'a self,
        kind: &'a str,
    ) -> impl Iterator<Item = &'a Property> + 'a {
        self.properties
            .iter()
            .filter(move |p| matches!(p, Property::Other { kind: k, .. } if k == kind))
    }
}

/// A Kubernetes API: group, version and kind.
#[derive(Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Gvk {
    /// The API group; empty for the core group.
    pub group: String,
    /// The API version (`v1beta2`).
    pub version: String,
    /// The kind (`EtcdCluster`).
    pub kind: String,
}

impl Gvk {
    /// A GVK from its three parts.
    pub fn new(
        group: impl Into<String>,
        version: impl Into<String>,
        kind: impl Into<String>,
    ) -> Self {
        Self {
            group: group.into(),
            version: version.into(),
            kind: kind.into(),
        }
    }
}

impl fmt::Display for Gvk {
    /// `group/version, Kind=kind`, as Kubernetes prints a GroupVersionKind.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}, Kind={}", self.group, self.version, self.kind)
    }
}

/// A requirement on another package: some version of it in `range`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PackageRequirement {
    /// The required package.
    pub package: String,
    /// The acceptable versions (an exact version like `0.13.0` is a range too).
    pub range: Range,
}

/// The descriptive part of a bundle's CSV, as `olm.csv.metadata` carries it.
/// Only the fields Pakket shows are kept; the rest of the value is dropped.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CsvMetadata {
    /// A human name (`etcd`).
    pub display_name: Option<String>,
    /// A long description, usually Markdown.
    pub description: Option<String>,
    /// Search keywords.
    pub keywords: Vec<String>,
    /// `alpha`, `beta`, `stable`, ...
    pub maturity: Option<String>,
    /// The lowest Kubernetes version the operator supports.
    pub min_kube_version: Option<String>,
    /// The provider's name.
    pub provider: Option<String>,
    /// Install modes and whether each is supported.
    pub install_modes: Vec<InstallMode>,
    /// The CSV's annotations (scalars written as text).
    pub annotations: BTreeMap<String, String>,
    /// The CSV's labels (scalars written as text).
    pub labels: BTreeMap<String, String>,
}

/// An OLM install mode (`OwnNamespace`, `SingleNamespace`,
/// `MultiNamespace`, `AllNamespaces`) and whether the operator supports it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct InstallMode {
    /// The mode's name.
    pub mode: String,
    /// Whether it is supported.
    pub supported: bool,
}

/// An `olm.deprecations` document: deprecation notices for one package.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Deprecation {
    /// The package the notices are about.
    pub package: String,
    /// The notices.
    pub entries: Vec<DeprecationEntry>,
    /// Where the document was written.
    pub origin: Origin,
}

impl Deprecation {
    /// The notice deprecating the whole package.
    pub fn package_message(&self) -> Option<&str> {
        self.message_for(&DeprecationReference::Package)
    }

    /// The notice deprecating channel `name`.
    pub fn channel_message(&self, name: &str) -> Option<&str> {
        self.message_for(&DeprecationReference::Channel(name.to_owned()))
    }

    /// The notice deprecating bundle `name`.
    pub fn bundle_message(&self, name: &str) -> Option<&str> {
        self.message_for(&DeprecationReference::Bundle(name.to_owned()))
    }

    fn message_for(&self, reference: &DeprecationReference) -> Option<&str> {
        self.entries
            .iter()
            .find(|entry| &entry.reference == reference)
            .map(|entry| entry.message.as_str())
    }
}

/// One deprecation notice.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeprecationEntry {
    /// What is deprecated.
    pub reference: DeprecationReference,
    /// The notice shown to users.
    pub message: String,
}

/// What a deprecation notice is about.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum DeprecationReference {
    /// The whole package (`schema: olm.package`).
    Package,
    /// One channel, by name (`schema: olm.channel`).
    Channel(String),
    /// One bundle, by name (`schema: olm.bundle`).
    Bundle(String),
}

/// A document of a schema the loader does not model, kept by reference only
/// (its body is not stored).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OtherDocument {
    /// Its `schema`.
    pub schema: String,
    /// Its `package`, if it has a string one.
    pub package: Option<String>,
    /// Its `name`, if it has a string one.
    pub name: Option<String>,
    /// Where it was written.
    pub origin: Origin,
}
