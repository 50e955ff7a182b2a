//! What the solver may choose from: every bundle of every catalog, with what
//! the preference rules need to know about it (catalog priority, channel and
//! depth in the channel), what it provides and what it requires.
//!
//! The universe is built once per catalog set (see `from_catalogs`) and reused
//! for many resolutions; building it does the indexing, resolving only reads.

use std::collections::HashMap;
use std::sync::OnceLock;

use rustc_hash::{FxHashMap, FxHashSet};

use crate::{Range, Version};

mod extras;

use extras::Extras;
pub use extras::LeftOut;

/// Index of a bundle in [`Universe::bundles`].
pub type BundleIndex = usize;

/// A catalog as the resolver sees it.
#[derive(Clone, Debug)]
pub struct CatalogInfo {
    /// The catalog's name.
    pub name: String,
    /// Higher wins.
    pub priority: i32,
}

/// A bundle's place in one channel.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ChannelPosition {
    /// The channel's name.
    pub channel: String,
    /// 0 for the channel head, 1 for what the head replaces or skips, and so on.
    pub depth: u32,
}

/// One bundle the solver may choose.
#[derive(Clone, Debug)]
pub struct Candidate {
    /// The bundle's name (`etcdoperator.v0.9.4`).
    pub name: String,
    /// Its package.
    pub package: String,
    /// Its version.
    pub version: Version,
    /// Index into [`Universe::catalogs`].
    pub catalog: usize,
    /// Every channel of its package that lists it.
    pub channels: Vec<ChannelPosition>,
    /// GVKs it provides (`group/version/Kind`).
    pub provides: Vec<String>,
    /// Packages it requires, with the versions it accepts.
    pub requires_packages: Vec<(String, Range)>,
    /// GVKs it requires.
    pub requires_gvks: Vec<String>,
    /// Its `olm.label` values.
    pub labels: Vec<String>,
}

/// A package (possibly served by several catalogs).
#[derive(Clone, Debug, Default)]
pub struct PackageInfo {
    /// Default channel per catalog index.
    pub default_channels: HashMap<usize, String>,
    /// Its bundles, in every catalog.
    pub bundles: Vec<BundleIndex>,
}

/// Every candidate, indexed by package and by provided GVK.
#[derive(Clone, Debug, Default)]
pub struct Universe {
    /// Catalogs, highest priority first.
    pub catalogs: Vec<CatalogInfo>,
    /// Every bundle.
    pub bundles: Vec<Candidate>,
    packages: FxHashMap<String, PackageInfo>,
    providers: FxHashMap<String, Vec<BundleIndex>>,
    /// Per catalog index, bundle name to bundle: looked up by `&str`, with
    /// no key to allocate.
    by_name: Vec<FxHashMap<String, BundleIndex>>,
    /// For each bundle, the bundles (same package, same catalog) that may
    /// replace it when it is installed: along its channels' update graphs.
    upgrades: FxHashMap<BundleIndex, Vec<BundleIndex>>,
    /// Integer ranks for the preference order, computed on first use so
    /// sorting candidates compares numbers, not strings.
    ranks: OnceLock<Ranks>,
    /// Where the candidates come from, as explanations say it (`loaded
    /// catalog` by default, `installed Instance` for a check against what a
    /// cluster has installed).
    source: Option<String>,
    extras: FxHashMap<BundleIndex, Extras>,
    /// Deprecation notices of channels, by (package, catalog, channel).
    channel_deprecations: FxHashMap<(String, usize, String), String>,
    /// Bundles left out of their catalog while loading, by package.
    left_out: FxHashMap<String, Vec<LeftOut>>,
}

/// Orders that the preference key needs, as integers.
#[derive(Clone, Debug, Default)]
pub(crate) struct Ranks {
    /// Per bundle: the rank of its package's name among all package names.
    pub package: Vec<u32>,
    /// Per bundle: 0 for the highest version of its package, 1 for the next...
    pub version: Vec<u32>,
    /// Every channel name, ranked lexicographically.
    pub channel: FxHashMap<String, u32>,
    /// Per bundle: whether it is deprecated whatever its channel.
    pub deprecated: Vec<bool>,
    /// Every package name to its rank (the rank is also its solver name id).
    pub package_ids: FxHashMap<String, u32>,
    /// Every package name, by rank.
    pub package_names: Vec<String>,
    /// GVKs that bundles of more than one package provide: only between
    /// those can "one provider per API" choose anything that "one bundle
    /// per package" has not already decided.
    pub contested: FxHashSet<String>,
    /// Per bundle, each channel listing it as (the channel is deprecated,
    /// not the default channel, channel rank, depth): the channel part of
    /// the preference, precomputed.
    pub positions: Vec<Vec<(bool, bool, u32, u32)>>,
}

impl Universe {
    /// An empty universe over these catalogs.
    pub fn new(catalogs: Vec<CatalogInfo>) -> Self {
        Self {
            catalogs,
            ..Self::default()
        }
    }

    /// Names where the candidates come from in explanations (`no {source}
    /// has a package named …`, `nothing {source} provides API …` read
    /// `no installed Instance has …`).
    pub fn describe_source(&mut self, source: impl Into<String>) {
        self.source = Some(source.into());
    }

    /// Where the candidates come from, for explanations.
    pub(crate) fn source(&self) -> &str {
        self.source.as_deref().unwrap_or("loaded catalog")
    }

    /// Adds a bundle and indexes it.
    pub fn add_bundle(&mut self, candidate: Candidate) -> BundleIndex {
        self.ranks.take();
        let index = self.bundles.len();
        // Keys are cloned only when new: most bundles share their package
        // and APIs with others.
        match self.packages.get_mut(&candidate.package) {
            Some(info) => info.bundles.push(index),
            None => {
                let info = PackageInfo {
                    bundles: vec![index],
                    ..PackageInfo::default()
                };
                self.packages.insert(candidate.package.clone(), info);
            }
        }
        for gvk in &candidate.provides {
            match self.providers.get_mut(gvk) {
                Some(providers) => providers.push(index),
                None => {
                    self.providers.insert(gvk.clone(), vec![index]);
                }
            }
        }
        if self.by_name.len() <= candidate.catalog {
            self.by_name
                .resize_with(candidate.catalog + 1, FxHashMap::default);
        }
        self.by_name[candidate.catalog].insert(candidate.name.clone(), index);
        self.bundles.push(candidate);
        index
    }

    /// Sets a package's default channel in one catalog.
    pub fn set_default_channel(&mut self, package: &str, catalog: usize, channel: &str) {
        self.ranks.take();
        let info = self.packages.entry(package.to_owned()).or_default();
        info.default_channels.insert(catalog, channel.to_owned());
    }

    /// Records that `to` may replace an installed `from` (a `replaces`,
    /// `skips` or `skipRange` edge in one of their channels).
    pub fn add_upgrade_edge(&mut self, from: BundleIndex, to: BundleIndex) {
        let targets = self.upgrades.entry(from).or_default();
        if !targets.contains(&to) {
            targets.push(to);
        }
    }

    /// [`Self::add_upgrade_edge`] for an edge the caller knows is new: no
    /// scan of the bundle's edges, which could be many.
    pub(crate) fn push_upgrade_edge(&mut self, from: BundleIndex, to: BundleIndex) {
        self.upgrades.entry(from).or_default().push(to);
    }

    /// The package, if any catalog has it.
    pub fn package(&self, name: &str) -> Option<&PackageInfo> {
        self.packages.get(name)
    }

    /// Every package name, sorted.
    pub fn package_names(&self) -> Vec<&str> {
        let mut names: Vec<&str> = self.packages.keys().map(String::as_str).collect();
        names.sort_unstable();
        names
    }

    /// The bundles providing a GVK.
    pub fn providers(&self, gvk: &str) -> &[BundleIndex] {
        self.providers
            .get(gvk)
            .map(Vec::as_slice)
            .unwrap_or_default()
    }

    /// A GVK's key as the universe stores it, and its providers; `None`
    /// when nothing provides it.
    pub(crate) fn provider_entry(&self, gvk: &str) -> Option<(&str, &[BundleIndex])> {
        self.providers
            .get_key_value(gvk)
            .map(|(key, providers)| (key.as_str(), providers.as_slice()))
    }

    /// Whether `bundle` satisfies `request` on its own (its package,
    /// channel, range and catalog; its name; an API it provides; a label).
    pub fn satisfies(&self, bundle: BundleIndex, request: &super::Request) -> bool {
        use super::Request;
        let candidate = &self.bundles[bundle];
        match request {
            Request::Package {
                package,
                channel,
                range,
                catalog,
            } => {
                package == &candidate.package
                    && channel.as_ref().is_none_or(|channel| {
                        candidate.channels.iter().any(|c| &c.channel == channel)
                    })
                    && range
                        .as_ref()
                        .is_none_or(|range| range.contains(&candidate.version))
                    && catalog
                        .as_ref()
                        .is_none_or(|catalog| &self.catalogs[candidate.catalog].name == catalog)
            }
            Request::BundleName(name) => &candidate.name == name,
            Request::Gvk(gvk) => candidate.provides.contains(gvk),
            Request::Label(label) => candidate.labels.contains(label),
        }
    }

    /// What of `dependent`'s requirements `dependency` meets, worded as
    /// the resolution words it (`package etcd >=0.9.0`, `API g/v/Kind`,
    /// `label x`); `None` if none. `olm.constraint` formulas are not
    /// looked at here: they need the solver's view of every candidate.
    pub fn requirement_met(
        &self,
        dependent: BundleIndex,
        dependency: BundleIndex,
    ) -> Option<String> {
        let (needing, candidate) = (&self.bundles[dependent], &self.bundles[dependency]);
        if let Some((package, range)) = needing.requires_packages.iter().find(|(package, range)| {
            package == &candidate.package && range.contains(&candidate.version)
        }) {
            return Some(format!("package {package} {}", range.as_written()));
        }
        if let Some(gvk) = needing
            .requires_gvks
            .iter()
            .find(|gvk| candidate.provides.contains(gvk))
        {
            return Some(format!("API {gvk}"));
        }
        self.required_labels(dependent)
            .iter()
            .find(|label| candidate.labels.contains(label))
            .map(|label| format!("label {label}"))
    }

    /// A bundle by catalog and name.
    pub fn bundle_in(&self, catalog: usize, name: &str) -> Option<BundleIndex> {
        self.by_name.get(catalog)?.get(name).copied()
    }

    /// Bundles with this name in any catalog, highest catalog priority first.
    pub fn bundles_named(&self, name: &str) -> Vec<BundleIndex> {
        (0..self.catalogs.len())
            .filter_map(|catalog| self.bundle_in(catalog, name))
            .collect()
    }

    /// The bundles an installed `from` may move to.
    pub fn upgrades_from(&self, from: BundleIndex) -> &[BundleIndex] {
        self.upgrades
            .get(&from)
            .map(Vec::as_slice)
            .unwrap_or_default()
    }

    /// The default channel of `bundle`'s package in `bundle`'s catalog.
    pub fn default_channel_of(&self, bundle: BundleIndex) -> Option<&str> {
        let candidate = &self.bundles[bundle];
        self.packages
            .get(&candidate.package)?
            .default_channels
            .get(&candidate.catalog)
            .map(String::as_str)
    }

    /// A package's default channel in the highest-priority catalog that has it.
    pub fn default_channel(&self, package: &str) -> Option<&str> {
        let info = self.packages.get(package)?;
        (0..self.catalogs.len())
            .find_map(|catalog| info.default_channels.get(&catalog))
            .map(String::as_str)
    }

    /// The preference ranks, computed once after the last bundle was added.
    pub(crate) fn ranks(&self) -> &Ranks {
        self.ranks.get_or_init(|| {
            let mut names: Vec<&str> = self.packages.keys().map(String::as_str).collect();
            names.sort_unstable();
            let package_ids: FxHashMap<String, u32> = names
                .iter()
                .enumerate()
                .map(|(i, name)| ((*name).to_owned(), i as u32))
                .collect();
            let mut version = vec![0; self.bundles.len()];
            for info in self.packages.values() {
                let mut sorted = info.bundles.clone();
                sorted.sort_by(|a, b| self.bundles[*b].version.cmp(&self.bundles[*a].version));
                for (rank, bundle) in sorted.into_iter().enumerate() {
                    version[bundle] = rank as u32;
                }
            }
            let mut channels: Vec<&str> = self
                .bundles
                .iter()
                .flat_map(|bundle| {
                    bundle
                        .channels
                        .iter()
                        .map(|position| position.channel.as_str())
                })
                .collect();
            channels.sort_unstable();
            channels.dedup();
            let channel: FxHashMap<String, u32> = channels
                .into_iter()
                .enumerate()
                .map(|(i, name)| (name.to_owned(), i as u32))
                .collect();
            let positions = (0..self.bundles.len())
                .map(|bundle| {
                    let default = self.default_channel_of(bundle);
                    self.bundles[bundle]
                        .channels
                        .iter()
                        .map(|position| {
                            let not_default = Some(position.channel.as_str()) != default;
                            (
                                self.channel_deprecation(bundle, &position.channel)
                                    .is_some(),
                                not_default,
                                channel[position.channel.as_str()],
                                position.depth,
                            )
                        })
                        .collect()
                })
                .collect();
            let contested = self
                .providers
                .iter()
                .filter(|(_, providers)| {
                    let mut packages = providers.iter().map(|&b| &self.bundles[b].package);
                    let first = packages.next();
                    packages.any(|package| Some(package) != first)
                })
                .map(|(gvk, _)| gvk.clone())
                .collect();
            Ranks {
                contested,
                package: self
                    .bundles
                    .iter()
                    .map(|bundle| package_ids[bundle.package.as_str()])
                    .collect(),
                version,
                channel,
                deprecated: (0..self.bundles.len())
                    .map(|bundle| self.deprecation(bundle).is_some())
                    .collect(),
                positions,
                package_ids,
                package_names: names.iter().map(|name| (*name).to_owned()).collect(),
            }
        })
    }

    /// The package whose name has this rank (see `Ranks::package_ids`).
    pub(crate) fn package_by_rank(&self, rank: usize) -> &str {
        &self.ranks().package_names[rank]
    }

    /// The catalog's index by name.
    pub fn catalog_index(&self, name: &str) -> Option<usize> {
        self.catalogs
            .iter()
            .position(|catalog| catalog.name == name)
    }
}
