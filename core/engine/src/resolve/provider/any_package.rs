//! Requirements any package may meet: a bundle carrying a label
//! (`olm.label.required`), a bundle with a name, a bundle satisfying a
//! constraint (`olm.constraint`). Each is a union of one version set per
//! package with such a bundle, filtered to those bundles; a label or formula
//! nothing has is a requirement on a name with no candidates
//! (`Name::Nothing`), which explanations describe by its filter.

use std::sync::Arc;

use resolvo::{Requirement, VersionSetId};
use rustc_hash::{FxHashMap, FxHashSet};

use super::{Filter, Name, NameId, Provider, VersionSet};
use crate::catalog::Constraint;
use crate::resolve::universe::BundleIndex;

/// A constraint of some bundle, evaluated once over the whole universe.
pub(crate) struct ConstraintEntry {
    pub constraint: Arc<Constraint>,
    pub matched: FxHashSet<BundleIndex>,
    /// Bundles that do not satisfy the formula while a CEL rule in it failed
    /// on them, with why (the rule counted as false, as in OLM).
    pub failures: Vec<(BundleIndex, String)>,
}

impl Provider<'_> {
    /// The solver name of a requirement nothing can meet, described by `filter`.
    fn nothing_name(&self, filter: &Filter) -> NameId {
        if let Some(id) = self.tables.borrow().nothing_ids.get(filter) {
            return *id;
        }
        let id = self.add_extra_name(Name::Nothing(filter.clone()));
        self.tables
            .borrow_mut()
            .nothing_ids
            .insert(filter.clone(), id);
        id
    }

    /// The id of a constraint, evaluated over every bundle the first time.
    pub fn constraint_id(&self, constraint: &Arc<Constraint>) -> u32 {
        let address = Arc::as_ptr(constraint) as usize;
        if let Some(id) = self.tables.borrow().constraint_ids.get(&address) {
            return *id;
        }
        let universe = self.universe;
        let mut matched = FxHashSet::default();
        let mut failures = Vec::new();
        let mut why = Vec::new();
        for bundle in 0..universe.bundles.len() {
            why.clear();
            if constraint
                .formula
                .holds(&universe.subject(bundle), &mut why)
            {
                matched.insert(bundle);
            } else if let Some(first) = why.first() {
                failures.push((bundle, first.clone()));
            }
        }
        let mut tables = self.tables.borrow_mut();
        let id = tables.constraints.len() as u32;
        tables.constraints.push(Arc::new(ConstraintEntry {
            constraint: Arc::clone(constraint),
            matched,
            failures,
        }));
        tables.constraint_ids.insert(address, id);
        id
    }

    /// The constraint with this id, and what it matched.
    pub fn constraint(&self, id: u32) -> Arc<ConstraintEntry> {
        Arc::clone(&self.tables.borrow().constraints[id as usize])
    }

    /// A requirement on some bundle, of any package, that passes `filter`:
    /// a union over the packages that have one, best package first, or a
    /// requirement nothing meets when none has.
    pub fn any_package_requirement(
        &self,
        filter: Filter,
        dependent_catalog: Option<usize>,
    ) -> Requirement {
        let universe = self.universe;
        let candidates: Vec<BundleIndex> = match &filter {
            Filter::Constraint(id) => self.constraint(*id).matched.iter().copied().collect(),
            _ => (0..universe.bundles.len())
                .filter(|&bundle| self.bundle_matches(bundle, &filter))
                .collect(),
        };
        let mut fitting: FxHashMap<&str, Vec<BundleIndex>> = FxHashMap::default();
        for bundle in candidates {
            let package = universe.bundles[bundle].package.as_str();
            fitting.entry(package).or_default().push(bundle);
        }
        // Packages in the order of their most preferred fitting bundle, so
        // resolvo, which tries a union's sets in order, tries the best first.
        let mut packages: Vec<(_, &str)> = fitting
            .into_iter()
            .map(|(package, bundles)| {
                let set = VersionSet {
                    name: self.package_name(package),
                    filter: filter.clone(),
                    dependent_catalog,
                };
                let best = bundles
                    .into_iter()
                    .map(|bundle| self.preference(bundle, &set, None))
                    .min();
                (best, package)
            })
            .collect();
        packages.sort();
        let sets: Vec<VersionSetId> = packages
            .into_iter()
            .map(|(_, package)| {
                self.package_requirement(package, filter.clone(), dependent_catalog)
            })
            .collect();
        match sets.as_slice() {
            [] => {
                let name = self.nothing_name(&filter);
                self.version_set(VersionSet {
                    name,
                    filter,
                    dependent_catalog,
                })
                .into()
            }
            [one] => (*one).into(),
            _ => self.union(sets).into(),
        }
    }

    /// What a bundle of any package passing `filter` is, as a need reads:
    /// `a bundle labelled X`, `a bundle satisfying olm.constraint F ("message")`.
    pub fn describe_filter(&self, filter: &Filter) -> String {
        match filter {
            Filter::BundleName(name) => format!("bundle {name}"),
            Filter::Label(label) => format!("a bundle labelled {label}"),
            Filter::Constraint(id) => {
                let constraint = &self.constraint(*id).constraint;
                match &constraint.failure_message {
                    Some(message) => {
                        format!("a bundle satisfying olm.constraint {constraint} ({message:?})")
                    }
                    None => format!("a bundle satisfying olm.constraint {constraint}"),
                }
            }
            _ => "a bundle".to_owned(),
        }
    }
}
