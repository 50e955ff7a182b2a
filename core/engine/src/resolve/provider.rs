//! The resolvo `DependencyProvider`: how Pakket's rules become the solver's
//! clauses.
//!
//! - Each bundle is a solvable of its package's name, so resolvo's own rule
//!   "one solvable per name" is "at most one bundle per package".
//! - Each (GVK, provider) pair is a *marker* solvable of a name `gvk:<GVK>`;
//!   a provider requires its marker and the marker requires its provider, so
//!   "one solvable per name" is also "at most one provider per GVK", and an
//!   `olm.gvk` requirement is a requirement on any marker of that name.
//! - Installed bundles: every other bundle of their package is excluded with
//!   the reason (below the installed version, not on the update graph), so a
//!   package moves only along its channel's graph and never downgrades.
//! - Preference: resolvo tries candidates in the order `filter_candidates`
//!   returns them (`sort_candidates` keeps it), and version sets are interned
//!   per dependent, so the order can depend on the dependent's catalog.

use std::cell::RefCell;
use std::cmp::Reverse;
use std::collections::HashMap;
use std::fmt::Display;

use resolvo::DenseIndex;
use resolvo::{
    Candidates, Condition, ConditionId, Dependencies, DependencyProvider, Interner,
    KnownDependencies, NameId, Requirement, SolvableId, SolverCache, StringId, VersionSetId,
    VersionSetUnionId,
};

use super::universe::{BundleIndex, Universe};
use crate::Range;

/// What a solver name stands for.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Name {
    /// A package: its solvables are bundles.
    Package(String),
    /// A GVK: its solvables are provider markers.
    Gvk(String),
}

/// Which solvables of a name a version set holds.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Filter {
    /// Bundles of a package, optionally narrowed.
    Package {
        channel: Option<String>,
        /// Canonical text of the range, the key into `Provider::ranges`.
        range: Option<String>,
        catalog: Option<usize>,
    },
    /// The bundle with this name.
    BundleName(String),
    /// Bundles carrying this `olm.label`.
    Label(String),
    /// Every provider marker of a GVK.
    AnyProvider,
    /// Exactly one solvable.
    Exact(SolvableId),
}

/// A version set: a name, a filter, and the catalog of the dependent that
/// asks (its candidates are preferred).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) struct VersionSet {
    pub name: NameId,
    pub filter: Filter,
    pub dependent_catalog: Option<usize>,
}

/// A solvable: a bundle, or the marker of a bundle providing a GVK.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Solvable {
    Bundle(BundleIndex),
    Marker { gvk: NameId, bundle: BundleIndex },
}

/// The rule an installed package follows.
#[derive(Clone, Debug)]
pub(crate) struct InstalledRule {
    pub bundle: BundleIndex,
    /// The installed bundle and every bundle it may move to.
    pub allowed: Vec<BundleIndex>,
    /// Requested too: then prefer moving up the graph; else prefer staying.
    pub requested: bool,
}

/// Why a bundle was left out before solving, by the installed-set rules.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Exclusion {
    BelowInstalled { installed: String },
    NotOnUpdateGraph { installed: String },
}

impl Display for Exclusion {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::BelowInstalled { installed } => {
                write!(f, "older than the installed {installed} (never downgrade)")
            }
            Self::NotOnUpdateGraph { installed } => {
                write!(
                    f,
                    "not an update of the installed {installed} in its channel's update graph"
                )
            }
        }
    }
}

/// Interning tables grow while the solver asks questions, hence the RefCells.
#[derive(Default)]
struct Tables {
    names: Vec<Name>,
    name_ids: HashMap<Name, NameId>,
    solvables: Vec<Solvable>,
    marker_ids: HashMap<(NameId, BundleIndex), SolvableId>,
    version_sets: Vec<VersionSet>,
    version_set_ids: HashMap<VersionSet, VersionSetId>,
    unions: Vec<Vec<VersionSetId>>,
    strings: Vec<String>,
    ranges: HashMap<String, Range>,
}

/// One resolution's view of the universe.
pub(crate) struct Provider<'u> {
    pub universe: &'u Universe,
    pub installed: HashMap<String, InstalledRule>,
    tables: RefCell<Tables>,
}

impl<'u> Provider<'u> {
    pub fn new(universe: &'u Universe, installed: HashMap<String, InstalledRule>) -> Self {
        // Bundles are solvables 0..n, so a bundle index is its solvable id.
        let tables = Tables {
            solvables: (0..universe.bundles.len()).map(Solvable::Bundle).collect(),
            ..Tables::default()
        };
        Self {
            universe,
            installed,
            tables: RefCell::new(tables),
        }
    }

    pub fn name(&self, name: Name) -> NameId {
        let mut tables = self.tables.borrow_mut();
        if let Some(id) = tables.name_ids.get(&name) {
            return *id;
        }
        let id = NameId::from_index(tables.names.len());
        tables.names.push(name.clone());
        tables.name_ids.insert(name, id);
        id
    }

    pub fn version_set(&self, set: VersionSet) -> VersionSetId {
        let mut tables = self.tables.borrow_mut();
        if let Some(id) = tables.version_set_ids.get(&set) {
            return *id;
        }
        let id = VersionSetId::from_index(tables.version_sets.len());
        tables.version_sets.push(set.clone());
        tables.version_set_ids.insert(set, id);
        id
    }

    pub fn union(&self, sets: Vec<VersionSetId>) -> VersionSetUnionId {
        let mut tables = self.tables.borrow_mut();
        tables.unions.push(sets);
        VersionSetUnionId::from_index(tables.unions.len() - 1)
    }

    pub fn range_key(&self, range: &Range) -> String {
        let key = range.to_string();
        self.tables
            .borrow_mut()
            .ranges
            .entry(key.clone())
            .or_insert_with(|| range.clone());
        key
    }

    fn string(&self, text: String) -> StringId {
        let mut tables = self.tables.borrow_mut();
        tables.strings.push(text);
        StringId::from_index(tables.strings.len() - 1)
    }

    fn marker(&self, gvk: NameId, bundle: BundleIndex) -> SolvableId {
        let mut tables = self.tables.borrow_mut();
        if let Some(id) = tables.marker_ids.get(&(gvk, bundle)) {
            return *id;
        }
        let id = SolvableId::from_index(tables.solvables.len());
        tables.solvables.push(Solvable::Marker { gvk, bundle });
        tables.marker_ids.insert((gvk, bundle), id);
        id
    }

    pub fn solvable(&self, id: SolvableId) -> Solvable {
        self.tables.borrow().solvables[id.to_index()]
    }

    pub fn name_of(&self, id: NameId) -> Name {
        self.tables.borrow().names[id.to_index()].clone()
    }

    pub fn version_set_of(&self, id: VersionSetId) -> VersionSet {
        self.tables.borrow().version_sets[id.to_index()].clone()
    }

    pub fn string_of(&self, id: StringId) -> String {
        self.tables.borrow().strings[id.to_index()].clone()
    }

    pub fn unions_of(&self, id: VersionSetUnionId) -> Vec<VersionSetId> {
        self.tables.borrow().unions[id.to_index()].clone()
    }

    /// A requirement on some bundle of `package` as seen from `dependent_catalog`.
    pub fn package_requirement(
        &self,
        package: &str,
        filter: Filter,
        dependent_catalog: Option<usize>,
    ) -> VersionSetId {
        let name = self.name(Name::Package(package.to_owned()));
        self.version_set(VersionSet {
            name,
            filter,
            dependent_catalog,
        })
    }

    /// A requirement on any provider of `gvk`.
    pub fn gvk_requirement(&self, gvk: &str, dependent_catalog: Option<usize>) -> VersionSetId {
        let name = self.name(Name::Gvk(gvk.to_owned()));
        self.version_set(VersionSet {
            name,
            filter: Filter::AnyProvider,
            dependent_catalog,
        })
    }

    /// Whether `bundle` passes `filter`.
    pub fn bundle_matches(&self, bundle: BundleIndex, filter: &Filter) -> bool {
        let candidate = &self.universe.bundles[bundle];
        match filter {
            Filter::Package {
                channel,
                range,
                catalog,
            } => {
                channel
                    .as_ref()
                    .is_none_or(|channel| candidate.channels.iter().any(|c| &c.channel == channel))
                    && catalog.is_none_or(|catalog| candidate.catalog == catalog)
                    && range.as_ref().is_none_or(|key| {
                        let tables = self.tables.borrow();
                        tables
                            .ranges
                            .get(key)
                            .is_some_and(|range| range.contains(&candidate.version))
                    })
            }
            Filter::BundleName(name) => &candidate.name == name,
            Filter::Label(label) => candidate.labels.contains(label),
            Filter::Exact(id) => id.to_index() == bundle,
            Filter::AnyProvider => false,
        }
    }

    /// The preference key of a bundle (smaller is tried first), following
    /// OLM: the dependent's own catalog first (as OLM's `FindPreferred`
    /// prepends it), then higher catalog priority; the default channel, then
    /// other channels by name; the channel head, then down the graph; then
    /// the package name, higher versions and the bundle name, so the order is
    /// total and deterministic.
    pub fn preference(&self, bundle: BundleIndex, set: &VersionSet) -> impl Ord + use<'u> {
        let universe = self.universe;
        let candidate = &universe.bundles[bundle];
        let wanted_channel = match &set.filter {
            Filter::Package { channel, .. } => channel.clone(),
            _ => None,
        };
        let default = universe.default_channel_of(bundle).map(str::to_owned);
        let best_channel = candidate
            .channels
            .iter()
            .filter(|position| {
                wanted_channel
                    .as_ref()
                    .is_none_or(|wanted| &position.channel == wanted)
            })
            .map(|position| {
                (
                    Some(&position.channel) != default.as_ref(),
                    position.channel.clone(),
                    position.depth,
                )
            })
            .min()
            .unwrap_or((true, String::new(), u32::MAX));
        (
            set.dependent_catalog
                .is_none_or(|catalog| catalog != candidate.catalog),
            Reverse(universe.catalogs[candidate.catalog].priority),
            best_channel,
            // Versions of different packages do not compare: between
            // providers of one GVK, the package name decides (as in OLM).
            candidate.package.clone(),
            Reverse(candidate.version.clone()),
            candidate.name.clone(),
            candidate.catalog,
        )
    }

    /// Bundles of `package` that the installed rules exclude, with the reason.
    pub fn exclusion(&self, bundle: BundleIndex) -> Option<Exclusion> {
        let candidate = &self.universe.bundles[bundle];
        let rule = self.installed.get(&candidate.package)?;
        if rule.allowed.contains(&bundle) {
            return None;
        }
        let installed = &self.universe.bundles[rule.bundle];
        let installed = format!("{} {}", installed.name, installed.version);
        if candidate.version < self.universe.bundles[rule.bundle].version {
            Some(Exclusion::BelowInstalled { installed })
        } else {
            Some(Exclusion::NotOnUpdateGraph { installed })
        }
    }

    fn display_bundle(&self, bundle: BundleIndex) -> String {
        let candidate = &self.universe.bundles[bundle];
        let catalog = &self.universe.catalogs[candidate.catalog].name;
        format!("{} {} ({catalog})", candidate.name, candidate.version)
    }
}

impl Interner for Provider<'_> {
    type NameId = NameId;
    type SolvableId = SolvableId;

    fn display_solvable(&self, solvable: SolvableId) -> impl Display + '_ {
        match self.solvable(solvable) {
            Solvable::Bundle(bundle) => self.display_bundle(bundle),
            Solvable::Marker { bundle, .. } => {
                format!("provided by {}", self.display_bundle(bundle))
            }
        }
    }

    fn display_name(&self, name: NameId) -> impl Display + '_ {
        match self.name_of(name) {
            Name::Package(package) => package,
            Name::Gvk(gvk) => format!("API {gvk}"),
        }
    }

    fn display_version_set(&self, version_set: VersionSetId) -> impl Display + '_ {
        match self.version_set_of(version_set).filter {
            Filter::Package {
                channel,
                range,
                catalog,
            } => {
                let mut parts = Vec::new();
                if let Some(channel) = channel {
                    parts.push(format!("channel {channel}"));
                }
                if let Some(range) = range {
                    parts.push(range);
                }
                if let Some(catalog) = catalog {
                    parts.push(format!("from {}", self.universe.catalogs[catalog].name));
                }
                parts.join(", ")
            }
            Filter::BundleName(name) => format!("named {name}"),
            Filter::Label(label) => format!("labelled {label}"),
            Filter::AnyProvider => "any provider".to_owned(),
            Filter::Exact(id) => format!("exactly {}", self.display_solvable(id)),
        }
    }

    fn display_string(&self, string: StringId) -> impl Display + '_ {
        self.string_of(string)
    }

    fn version_set_name(&self, version_set: VersionSetId) -> NameId {
        self.version_set_of(version_set).name
    }

    fn solvable_name(&self, solvable: SolvableId) -> NameId {
        match self.solvable(solvable) {
            Solvable::Bundle(bundle) => {
                self.name(Name::Package(self.universe.bundles[bundle].package.clone()))
            }
            Solvable::Marker { gvk, .. } => gvk,
        }
    }

    fn version_sets_in_union(
        &self,
        union: VersionSetUnionId,
    ) -> impl Iterator<Item = VersionSetId> {
        self.unions_of(union).into_iter()
    }

    fn resolve_condition(&self, _condition: ConditionId) -> Condition {
        unreachable!("Pakket never makes conditional requirements")
    }
}

impl DependencyProvider for Provider<'_> {
    async fn filter_candidates(
        &self,
        candidates: &[SolvableId],
        version_set: VersionSetId,
        inverse: bool,
    ) -> Vec<SolvableId> {
        let set = self.version_set_of(version_set);
        let mut matched: Vec<SolvableId> = candidates
            .iter()
            .copied()
            .filter(|&id| {
                let matches = match (self.solvable(id), &set.filter) {
                    (Solvable::Marker { .. }, Filter::AnyProvider) => true,
                    (Solvable::Marker { .. }, Filter::Exact(exact)) => *exact == id,
                    (Solvable::Marker { .. }, _) => false,
                    (Solvable::Bundle(bundle), filter) => self.bundle_matches(bundle, filter),
                };
                matches != inverse
            })
            .collect();
        if !inverse {
            let bundle_of = |id: SolvableId| match self.solvable(id) {
                Solvable::Bundle(bundle) | Solvable::Marker { bundle, .. } => bundle,
            };
            matched.sort_by_cached_key(|&id| self.preference(bundle_of(id), &set));
        }
        matched
    }

    async fn get_candidates(&self, name: NameId) -> Option<Candidates<SolvableId>> {
        match self.name_of(name) {
            Name::Package(package) => {
                let info = self.universe.package(&package)?;
                let mut candidates = Candidates::default();
                for &bundle in &info.bundles {
                    let id = SolvableId::from_index(bundle);
                    match self.exclusion(bundle) {
                        Some(reason) => candidates
                            .excluded
                            .push((id, self.string(reason.to_string()))),
                        None => candidates.candidates.push(id),
                    }
                }
                if let Some(rule) = self.installed.get(&package).filter(|rule| !rule.requested) {
                    // Keeping what is installed is preferred to moving it.
                    candidates.favored = Some(SolvableId::from_index(rule.bundle));
                }
                Some(candidates)
            }
            Name::Gvk(gvk) => {
                let providers = self.universe.providers(&gvk);
                let candidates = providers
                    .iter()
                    .map(|&bundle| self.marker(name, bundle))
                    .collect();
                Some(Candidates {
                    candidates,
                    ..Candidates::default()
                })
            }
        }
    }

    async fn sort_candidates(&self, _solver: &SolverCache<Self>, _solvables: &mut [SolvableId]) {
        // Already in preference order: see `filter_candidates`.
    }

    async fn get_dependencies(&self, solvable: SolvableId) -> Dependencies {
        let mut requirements: Vec<Requirement> = Vec::new();
        match self.solvable(solvable) {
            Solvable::Bundle(bundle) => {
                let candidate = &self.universe.bundles[bundle];
                let catalog = Some(candidate.catalog);
                for (package, range) in &candidate.requires_packages {
                    let filter = Filter::Package {
                        channel: None,
                        range: Some(self.range_key(range)),
                        catalog: None,
                    };
                    requirements.push(self.package_requirement(package, filter, catalog).into());
                }
                for gvk in &candidate.requires_gvks {
                    requirements.push(self.gvk_requirement(gvk, catalog).into());
                }
                for gvk in &candidate.provides {
                    let gvk_name = self.name(Name::Gvk(gvk.clone()));
                    let marker = self.marker(gvk_name, bundle);
                    let set = self.version_set(VersionSet {
                        name: gvk_name,
                        filter: Filter::Exact(marker),
                        dependent_catalog: catalog,
                    });
                    requirements.push(set.into());
                }
            }
            Solvable::Marker { bundle, .. } => {
                let package = &self.universe.bundles[bundle].package;
                let set = self.package_requirement(
                    package,
                    Filter::Exact(SolvableId::from_index(bundle)),
                    None,
                );
                requirements.push(set.into());
            }
        }
        Dependencies::Known(KnownDependencies {
            requirements: requirements.into_iter().map(Into::into).collect(),
            constrains: Vec::new(),
        })
    }
}
