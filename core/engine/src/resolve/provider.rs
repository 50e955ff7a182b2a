//! The resolvo `DependencyProvider`: how Pakket's rules become the solver's
//! clauses.
//!
//! - Each bundle is a solvable of its package's name, so resolvo's own rule
//!   "one solvable per name" is "at most one bundle per package".
//! - Each (GVK, provider) pair is a *marker* solvable of a name `gvk:<GVK>`;
//!   a provider requires its marker and the marker requires its provider, so
//!   "one solvable per name" is also "at most one provider per GVK", and an
//!   `olm.gvk` requirement is a requirement on any marker of that name. A
//!   provider requires its marker only when another package provides the
//!   GVK too: else "one bundle per package" already says it.
//! - The names whose candidates a resolution fetched are recorded
//!   ([`Touched`]): resolutions that fetched none in common cannot affect
//!   each other, which is what lets an installed set be solved in groups.
//! - Installed bundles: every other bundle of their package is excluded with
//!   the reason (below the installed version, not on the update graph), so a
//!   package moves only along its channel's graph and never downgrades.
//! - Labels (`olm.label.required`), constraints (`olm.constraint`) and
//!   bundle names are requirements on a union of packages (`any_package`).
//! - Preference: resolvo tries candidates in the order `filter_candidates`
//!   returns them (`sort_candidates` keeps it), and version sets are interned
//!   per dependent, so the order can depend on the dependent's catalog.

use std::cell::RefCell;
use std::cmp::Reverse;
use std::fmt::Display;
use std::sync::Arc;

use rustc_hash::{FxHashMap, FxHashSet};

use resolvo::DenseIndex;
use resolvo::{
    Candidates, Condition, ConditionId, Dependencies, DependencyProvider, Interner,
    KnownDependencies, NameId, Requirement, SolvableId, SolverCache, StringId, VersionSetId,
    VersionSetUnionId,
};

use super::universe::{BundleIndex, Universe};
use crate::Range;

mod any_package;

pub(crate) use any_package::ConstraintEntry;

/// What a solver name stands for.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Name {
    /// A package: its solvables are bundles.
    Package(String),
    /// A GVK: its solvables are provider markers.
    Gvk(String),
    /// What no bundle has (a label, a name, a formula): no solvables.
    Nothing(Filter),
}

/// Which solvables of a name a version set holds.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Filter {
    /// Bundles of a package, optionally narrowed.
    Package {
        channel: Option<String>,
        /// Id of the range (see `Provider::range_id`).
        range: Option<u32>,
        catalog: Option<usize>,
    },
    /// The bundle with this name.
    BundleName(String),
    /// Bundles carrying this `olm.label`.
    Label(String),
    /// Bundles satisfying a constraint (see `Provider::constraint`).
    Constraint(u32),
    /// Every provider marker of a GVK.
    AnyProvider,
    /// Bundles of one catalog that provide a GVK (what a marker stands for).
    Provides { gvk: NameId, catalog: usize },
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

/// A solvable: a bundle, or the marker "package P of catalog C provides
/// GVK X". Markers are per package, not per bundle: bundles of one package
/// already exclude each other, and a catalog's GVK may be provided by
/// hundreds of versions, which would all become markers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Solvable {
    Bundle(BundleIndex),
    Marker {
        gvk: NameId,
        /// A bundle of the package and catalog, naming both.
        bundle: BundleIndex,
    },
}

/// The rule an installed package follows.
#[derive(Clone, Debug)]
pub(crate) struct InstalledRule {
    pub bundle: BundleIndex,
    /// The installed bundle and every bundle it may move to.
    pub allowed: Vec<BundleIndex>,
}

/// A solver name whose candidates a resolution fetched, named the same way
/// in every resolution over one universe. Two resolutions that fetched no
/// name in common share no solvable, so neither can change the other's
/// answer (see `installed_set`). Names with no candidates (a package no
/// catalog has, a label nothing carries) share nothing and are not listed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Touched {
    /// A package, by its rank (see `Ranks::package_ids`).
    Package(u32),
    /// The providers of a GVK, by the address of its key's text in the
    /// universe (never empty: `group/version/Kind`), which outlives every
    /// resolution over it.
    Gvk(usize),
}

/// Why a bundle was left out before solving, by the installed-set rules.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Exclusion {
    BelowInstalled { installed: BundleIndex },
    NotOnUpdateGraph { installed: BundleIndex },
}

impl Exclusion {
    /// The reason in words, naming the installed bundle.
    pub fn describe(self, universe: &Universe) -> String {
        let name = |bundle: BundleIndex| {
            let bundle = &universe.bundles[bundle];
            format!("{} {}", bundle.name, bundle.version)
        };
        match self {
            Self::BelowInstalled { installed } => {
                format!(
                    "older than the installed {} (never downgrade)",
                    name(installed)
                )
            }
            Self::NotOnUpdateGraph { installed } => format!(
                "not an update of the installed {} in its channel's update graph",
                name(installed)
            ),
        }
    }
}

/// Interning tables grow while the solver asks questions, hence the RefCells.
#[derive(Default)]
struct Tables {
    /// Names beyond the universe's packages (which are names `0..P`, by
    /// rank): GVKs and packages no catalog has; name `P + i` is `extra_names[i]`.
    extra_names: Vec<Name>,
    /// Lookups by `&str`, so finding a known name allocates nothing.
    extra_package_ids: FxHashMap<String, NameId>,
    gvk_ids: FxHashMap<String, NameId>,
    nothing_ids: FxHashMap<Filter, NameId>,
    constraints: Vec<Arc<ConstraintEntry>>,
    /// Constraints live in the universe for the whole resolution, so their
    /// address identifies them.
    constraint_ids: FxHashMap<usize, u32>,
    /// Every solvable this resolution has met, numbered densely from 0: the
    /// solver sizes its tables by the highest id, so ids must not be the
    /// universe's bundle indices (thousands) when a resolution meets dozens.
    solvables: Vec<Solvable>,
    bundle_ids: FxHashMap<BundleIndex, SolvableId>,
    marker_ids: FxHashMap<(NameId, NameId, usize), SolvableId>,
    version_sets: Vec<VersionSet>,
    version_set_ids: FxHashMap<VersionSet, VersionSetId>,
    unions: Vec<Vec<VersionSetId>>,
    strings: Vec<String>,
    /// Exclusion reasons, one string per (package, reason kind).
    reasons: FxHashMap<(BundleIndex, bool), StringId>,
    ranges: Vec<Range>,
    range_ids: FxHashMap<String, u32>,
    /// Requirement ranges live in the universe for the whole resolution, so
    /// their address identifies them without formatting them.
    universe_range_ids: FxHashMap<usize, u32>,
}

/// One resolution's view of the universe.
pub(crate) struct Provider<'u> {
    pub universe: &'u Universe,
    /// Every installed package's rule, by package.
    pub installed: &'u FxHashMap<String, InstalledRule>,
    /// The packages the requests name: those installed prefer moving up
    /// their graph to staying where they are.
    requested: FxHashSet<&'u str>,
    /// Hand ruled-out bundles to the solver as excluded, for explanations.
    report_exclusions: bool,
    /// Every name whose candidates the solver asked for.
    touched: RefCell<FxHashSet<Touched>>,
    tables: RefCell<Tables>,
    /// Per marker, its `marker_traits`.
    marker_traits: RefCell<FxHashMap<SolvableId, (bool, bool)>>,
}

impl<'u> Provider<'u> {
    pub fn new(
        universe: &'u Universe,
        installed: &'u FxHashMap<String, InstalledRule>,
        requested: FxHashSet<&'u str>,
        report_exclusions: bool,
    ) -> Self {
        Self {
            universe,
            installed,
            requested,
            report_exclusions,
            touched: RefCell::default(),
            tables: RefCell::new(Tables::default()),
            marker_traits: RefCell::default(),
        }
    }

    /// The names whose candidates the solver asked for so far.
    pub fn take_touched(&self) -> FxHashSet<Touched> {
        self.touched.take()
    }

    /// The solver name of a package.
    pub fn package_name(&self, package: &str) -> NameId {
        if let Some(rank) = self.universe.ranks().package_ids.get(package) {
            return NameId::from_index(*rank as usize);
        }
        if let Some(id) = self.tables.borrow().extra_package_ids.get(package) {
            return *id;
        }
        let id = self.add_extra_name(Name::Package(package.to_owned()));
        self.tables
            .borrow_mut()
            .extra_package_ids
            .insert(package.to_owned(), id);
        id
    }

    /// The solver name of `bundle`'s package: its rank, with no lookup by name.
    fn bundle_package_name(&self, bundle: BundleIndex) -> NameId {
        NameId::from_index(self.universe.ranks().package[bundle] as usize)
    }

    /// The solver name of a GVK's providers.
    pub fn gvk_name(&self, gvk: &str) -> NameId {
        if let Some(id) = self.tables.borrow().gvk_ids.get(gvk) {
            return *id;
        }
        let id = self.add_extra_name(Name::Gvk(gvk.to_owned()));
        self.tables.borrow_mut().gvk_ids.insert(gvk.to_owned(), id);
        id
    }

    fn add_extra_name(&self, name: Name) -> NameId {
        let mut tables = self.tables.borrow_mut();
        let id =
            NameId::from_index(self.universe.ranks().package_ids.len() + tables.extra_names.len());
        tables.extra_names.push(name);
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

    /// The id of a range, equal ranges sharing one id.
    pub fn range_id(&self, range: &Range) -> u32 {
        let key = range.to_string();
        let mut tables = self.tables.borrow_mut();
        if let Some(id) = tables.range_ids.get(&key) {
            return *id;
        }
        let id = tables.ranges.len() as u32;
        tables.ranges.push(range.clone());
        tables.range_ids.insert(key, id);
        id
    }

    /// The id of a range that lives in the universe (a bundle's requirement).
    fn universe_range_id(&self, range: &'u Range) -> u32 {
        let address = range as *const Range as usize;
        if let Some(id) = self.tables.borrow().universe_range_ids.get(&address) {
            return *id;
        }
        let id = self.range_id(range);
        self.tables
            .borrow_mut()
            .universe_range_ids
            .insert(address, id);
        id
    }

    /// The range with this id.
    pub fn range(&self, id: u32) -> Range {
        self.tables.borrow().ranges[id as usize].clone()
    }

    /// The solver's string for an exclusion; each package has at most two
    /// distinct reasons, so they are made once, not once per bundle.
    fn reason_string(&self, reason: Exclusion) -> StringId {
        let key = match reason {
            Exclusion::BelowInstalled { installed } => (installed, true),
            Exclusion::NotOnUpdateGraph { installed } => (installed, false),
        };
        if let Some(id) = self.tables.borrow().reasons.get(&key) {
            return *id;
        }
        let mut tables = self.tables.borrow_mut();
        tables.strings.push(reason.describe(self.universe));
        let id = StringId::from_index(tables.strings.len() - 1);
        tables.reasons.insert(key, id);
        id
    }

    /// The marker of `bundle`'s package and catalog providing `gvk`.
    fn marker(&self, gvk: NameId, bundle: BundleIndex) -> SolvableId {
        let candidate = &self.universe.bundles[bundle];
        let key = (gvk, self.bundle_package_name(bundle), candidate.catalog);
        if let Some(id) = self.tables.borrow().marker_ids.get(&key) {
            return *id;
        }
        let mut tables = self.tables.borrow_mut();
        let id = SolvableId::from_index(tables.solvables.len());
        tables.solvables.push(Solvable::Marker { gvk, bundle });
        tables.marker_ids.insert(key, id);
        id
    }

    /// What orders a marker among a GVK's providers: whether every provider
    /// of its package (and catalog) is deprecated, and whether one is in the
    /// package's default channel.
    fn marker_traits(&self, gvk: NameId, bundle: BundleIndex) -> (bool, bool) {
        let universe = self.universe;
        let candidate = &universe.bundles[bundle];
        let Name::Gvk(key) = self.name_of(gvk) else {
            unreachable!("markers are named by GVKs")
        };
        let providers: Vec<BundleIndex> = universe
            .providers(&key)
            .iter()
            .copied()
            .filter(|&other| {
                let other = &universe.bundles[other];
                other.package == candidate.package && other.catalog == candidate.catalog
            })
            .collect();
        let all_deprecated = providers.iter().all(|&p| universe.is_deprecated(p));
        let in_default_channel = providers.iter().any(|&p| {
            let default = universe.default_channel_of(p);
            universe.bundles[p]
                .channels
                .iter()
                .any(|position| Some(position.channel.as_str()) == default)
        });
        (all_deprecated, in_default_channel)
    }

    /// The solvable id of a bundle.
    pub fn bundle_id(&self, bundle: BundleIndex) -> SolvableId {
        if let Some(id) = self.tables.borrow().bundle_ids.get(&bundle) {
            return *id;
        }
        let mut tables = self.tables.borrow_mut();
        let id = SolvableId::from_index(tables.solvables.len());
        tables.solvables.push(Solvable::Bundle(bundle));
        tables.bundle_ids.insert(bundle, id);
        id
    }

    pub fn solvable(&self, id: SolvableId) -> Solvable {
        self.tables.borrow().solvables[id.to_index()]
    }

    pub fn name_of(&self, id: NameId) -> Name {
        let ranks = self.universe.ranks();
        match id.to_index().checked_sub(ranks.package_ids.len()) {
            Some(extra) => self.tables.borrow().extra_names[extra].clone(),
            None => Name::Package(self.universe.package_by_rank(id.to_index()).to_owned()),
        }
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
        let name = self.package_name(package);
        self.version_set(VersionSet {
            name,
            filter,
            dependent_catalog,
        })
    }

    /// A requirement on any provider of `gvk`.
    pub fn gvk_requirement(&self, gvk: &str, dependent_catalog: Option<usize>) -> VersionSetId {
        let name = self.gvk_name(gvk);
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
                    && range.is_none_or(|id| {
                        self.tables.borrow().ranges[id as usize].contains(&candidate.version)
                    })
            }
            Filter::BundleName(name) => &candidate.name == name,
            Filter::Label(label) => candidate.labels.contains(label),
            Filter::Constraint(id) => self.tables.borrow().constraints[*id as usize]
                .matched
                .contains(&bundle),
            Filter::Exact(id) => self.tables.borrow().bundle_ids.get(&bundle) == Some(id),
            Filter::Provides { gvk, catalog } => {
                candidate.catalog == *catalog && {
                    let packages = self.universe.ranks().package_ids.len();
                    let tables = self.tables.borrow();
                    match gvk
                        .to_index()
                        .checked_sub(packages)
                        .map(|i| &tables.extra_names[i])
                    {
                        Some(Name::Gvk(gvk)) => candidate.provides.contains(gvk),
                        _ => false,
                    }
                }
            }
            Filter::AnyProvider => false,
        }
    }

    /// The preference key of a bundle (smaller is tried first), following
    /// OLM: deprecated bundles last, whatever else (as OLM v1 skips a
    /// deprecated candidate for any other); then the dependent's own catalog
    /// (as OLM's `FindPreferred` prepends it), then higher catalog priority;
    /// a channel that is not deprecated, the default channel, then other
    /// channels by name; the channel head, then down the graph; then the
    /// package name, higher versions and the bundle name, so the order is
    /// total and deterministic.
    pub fn preference(
        &self,
        bundle: BundleIndex,
        set: &VersionSet,
        wanted_channel: Option<u32>,
    ) -> impl Ord + use<> {
        let universe = self.universe;
        let ranks = universe.ranks();
        let candidate = &universe.bundles[bundle];
        let best_channel = ranks.positions[bundle]
            .iter()
            .filter(|(_, _, channel, _)| wanted_channel.is_none_or(|wanted| *channel == wanted))
            .min()
            .copied()
            .unwrap_or((false, true, u32::MAX, u32::MAX));
        // Deprecated itself, or reached only through deprecated channels.
        let deprecated = ranks.deprecated[bundle] || best_channel.0;
        (
            deprecated,
            set.dependent_catalog
                .is_none_or(|catalog| catalog != candidate.catalog),
            Reverse(universe.catalogs[candidate.catalog].priority),
            best_channel,
            // Versions of different packages do not compare: between
            // providers of one GVK, the package name decides (as in OLM).
            ranks.package[bundle],
            ranks.version[bundle],
            bundle,
        )
    }

    /// Whether a name stands for a GVK's providers.
    fn is_marker_name(&self, name: NameId) -> bool {
        let packages = self.universe.ranks().package_ids.len();
        name.to_index() >= packages
            && matches!(
                self.tables.borrow().extra_names[name.to_index() - packages],
                Name::Gvk(_)
            )
    }

    /// Order of a GVK's provider packages: packages with a provider that is
    /// not deprecated first; the dependent's catalog, then priority; then
    /// packages with a provider in their default channel (OLM's
    /// `sortBundles` puts every default channel of a catalog before any
    /// other channel, whatever the package), then package name. The
    /// marker's own requirement then orders that package's bundles.
    fn marker_preference(&self, id: SolvableId, set: &VersionSet) -> impl Ord + use<> {
        let Solvable::Marker { gvk, bundle } = self.solvable(id) else {
            unreachable!("GVK names hold markers only")
        };
        let universe = self.universe;
        let candidate = &universe.bundles[bundle];
        // Most markers are never sorted (only those of required GVKs), so
        // their traits are found on first use, in a cell of their own:
        // sorting runs under a borrow of the tables.
        let cached = self.marker_traits.borrow().get(&id).copied();
        let (all_deprecated, in_default_channel) = cached.unwrap_or_else(|| {
            let traits = self.marker_traits(gvk, bundle);
            self.marker_traits.borrow_mut().insert(id, traits);
            traits
        });
        (
            all_deprecated,
            set.dependent_catalog
                .is_none_or(|catalog| catalog != candidate.catalog),
            Reverse(universe.catalogs[candidate.catalog].priority),
            !in_default_channel,
            universe.ranks().package[bundle],
            candidate.catalog,
        )
    }

    /// Bundles that the installed rules exclude, with the reason.
    pub fn exclusion(&self, bundle: BundleIndex) -> Option<Exclusion> {
        let rule = self.installed.get(&self.universe.bundles[bundle].package)?;
        self.excluded_by(rule, bundle)
    }

    /// Whether `rule` (of `bundle`'s package) excludes `bundle`, and why.
    fn excluded_by(&self, rule: &InstalledRule, bundle: BundleIndex) -> Option<Exclusion> {
        let universe = self.universe;
        let candidate = &universe.bundles[bundle];
        if rule.allowed.contains(&bundle) {
            return None;
        }
        let installed = rule.bundle;
        Some(if candidate.version < universe.bundles[installed].version {
            Exclusion::BelowInstalled { installed }
        } else {
            Exclusion::NotOnUpdateGraph { installed }
        })
    }

    /// `name version (catalog)`, as explanations name a bundle; `(catalog,
    /// deprecated)` for a deprecated one.
    pub fn display_bundle(&self, bundle: BundleIndex) -> String {
        let candidate = &self.universe.bundles[bundle];
        let catalog = &self.universe.catalogs[candidate.catalog].name;
        let deprecated = if self.universe.is_deprecated(bundle) {
            ", deprecated"
        } else {
            ""
        };
        format!(
            "{} {} ({catalog}{deprecated})",
            candidate.name, candidate.version
        )
    }
}

impl Interner for Provider<'_> {
    type NameId = NameId;
    type SolvableId = SolvableId;

    fn display_solvable(&self, solvable: SolvableId) -> impl Display + '_ {
        match self.solvable(solvable) {
            Solvable::Bundle(bundle) => self.display_bundle(bundle),
            Solvable::Marker { bundle, .. } => {
                let candidate = &self.universe.bundles[bundle];
                let catalog = &self.universe.catalogs[candidate.catalog].name;
                format!("package {} ({catalog})", candidate.package)
            }
        }
    }

    fn display_name(&self, name: NameId) -> impl Display + '_ {
        match self.name_of(name) {
            Name::Package(package) => package,
            Name::Gvk(gvk) => format!("API {gvk}"),
            Name::Nothing(filter) => self.describe_filter(&filter),
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
                    parts.push(self.range(range).as_written().to_owned());
                }
                if let Some(catalog) = catalog {
                    parts.push(format!("from {}", self.universe.catalogs[catalog].name));
                }
                parts.join(", ")
            }
            Filter::BundleName(name) => format!("named {name}"),
            Filter::Label(label) => format!("labelled {label}"),
            Filter::Constraint(id) => {
                format!(
                    "satisfying olm.constraint {}",
                    self.constraint(id).constraint
                )
            }
            Filter::AnyProvider => "any provider".to_owned(),
            Filter::Exact(id) => format!("exactly {}", self.display_solvable(id)),
            Filter::Provides { gvk, catalog } => format!(
                "providing {}, from {}",
                self.display_name(gvk),
                self.universe.catalogs[catalog].name
            ),
        }
    }

    fn display_string(&self, string: StringId) -> impl Display + '_ {
        self.string_of(string)
    }

    fn version_set_name(&self, version_set: VersionSetId) -> NameId {
        self.tables.borrow().version_sets[version_set.to_index()].name
    }

    fn solvable_name(&self, solvable: SolvableId) -> NameId {
        match self.solvable(solvable) {
            Solvable::Bundle(bundle) => self.bundle_package_name(bundle),
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
        let tables = self.tables.borrow();
        let set = &tables.version_sets[version_set.to_index()];
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
            match &set.filter {
                Filter::AnyProvider | Filter::Exact(_) if self.is_marker_name(set.name) => {
                    matched.sort_by_cached_key(|&id| self.marker_preference(id, set));
                }
                filter => {
                    let wanted_channel = match filter {
                        // A channel no bundle is in ranks nowhere: nothing matched anyway.
                        Filter::Package {
                            channel: Some(channel),
                            ..
                        } => Some(
                            self.universe
                                .ranks()
                                .channel
                                .get(channel)
                                .copied()
                                .unwrap_or(u32::MAX),
                        ),
                        _ => None,
                    };
                    matched.sort_by_cached_key(|&id| {
                        let Solvable::Bundle(bundle) = self.solvable(id) else {
                            unreachable!("package names hold bundles only")
                        };
                        self.preference(bundle, set, wanted_channel)
                    });
                }
            }
        }
        matched
    }

    async fn get_candidates(&self, name: NameId) -> Option<Candidates<SolvableId>> {
        match self.name_of(name) {
            Name::Package(package) => {
                let info = self.universe.package(&package)?;
                let rank = u32::try_from(name.to_index()).expect("package ranks fit in u32");
                self.touched.borrow_mut().insert(Touched::Package(rank));
                let mut candidates = Candidates::default();
                let rule = self.installed.get(&package);
                for &bundle in &info.bundles {
                    let id = self.bundle_id(bundle);
                    match rule.and_then(|rule| self.excluded_by(rule, bundle)) {
                        Some(reason) if self.report_exclusions => {
                            candidates.excluded.push((id, self.reason_string(reason)))
                        }
                        Some(_) => {}
                        None => candidates.candidates.push(id),
                    }
                }
                let requested = self.requested.contains(package.as_str());
                if let Some(rule) = rule.filter(|_| !requested) {
                    // Keeping what is installed is preferred to moving it.
                    candidates.favored = Some(self.bundle_id(rule.bundle));
                }
                Some(candidates)
            }
            Name::Nothing(_) => None,
            Name::Gvk(gvk) => {
                let (key, providers) = self.universe.provider_entry(&gvk)?;
                let address = key.as_ptr() as usize;
                self.touched.borrow_mut().insert(Touched::Gvk(address));
                let mut candidates: Vec<SolvableId> = Vec::new();
                for &bundle in providers {
                    let marker = self.marker(name, bundle);
                    if !candidates.contains(&marker) {
                        candidates.push(marker);
                    }
                }
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
                        range: Some(self.universe_range_id(range)),
                        catalog: None,
                    };
                    requirements.push(self.package_requirement(package, filter, catalog).into());
                }
                for gvk in &candidate.requires_gvks {
                    requirements.push(self.gvk_requirement(gvk, catalog).into());
                }
                for label in self.universe.required_labels(bundle) {
                    let filter = Filter::Label(label.clone());
                    requirements.push(self.any_package_requirement(filter, catalog));
                }
                for constraint in self.universe.constraints(bundle) {
                    let filter = Filter::Constraint(self.constraint_id(constraint));
                    requirements.push(self.any_package_requirement(filter, catalog));
                }
                // A provider requires its marker so that two packages never
                // both provide one API. An API only one package provides
                // needs no marker: that package's bundles already exclude
                // each other. Leaving those out spares most bundles every
                // marker, the solver's largest share of work.
                let contested = &self.universe.ranks().contested;
                for gvk in candidate
                    .provides
                    .iter()
                    .filter(|gvk| contested.contains(*gvk))
                {
                    let gvk_name = self.gvk_name(gvk);
                    let marker = self.marker(gvk_name, bundle);
                    let set = self.version_set(VersionSet {
                        name: gvk_name,
                        filter: Filter::Exact(marker),
                        dependent_catalog: catalog,
                    });
                    requirements.push(set.into());
                }
            }
            Solvable::Marker { gvk, bundle } => {
                let candidate = &self.universe.bundles[bundle];
                let filter = Filter::Provides {
                    gvk,
                    catalog: candidate.catalog,
                };
                let set = self.package_requirement(&candidate.package, filter, None);
                requirements.push(set.into());
            }
        }
        Dependencies::Known(KnownDependencies {
            requirements: requirements.into_iter().map(Into::into).collect(),
            constrains: Vec::new(),
        })
    }
}
