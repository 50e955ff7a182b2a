//! An installed set prepared once, for many resolutions.
//!
//! Every resolution keeps the installed bundles working, so solving the
//! whole installed set each time makes a resolution with 50 installed
//! packages cost 50 packages' worth of solving, however little the request
//! reaches. Here the installed packages are split once into *groups* that
//! share no solver name (no package, no GVK whose providers both fetch), and
//! each group is solved on its own. A resolution solves its requests, adds
//! the groups whose names that solve reached, solves again, and so on until
//! it reaches no further group; every group it never reached keeps the
//! answer prepared for it.
//!
//! Why the pieces make an answer for the whole: two solves that fetched no
//! name in common hold no solvable in common, so no requirement, "one bundle
//! per package" or "one provider per API" rule of one mentions a bundle of
//! the other. The union of their answers therefore meets every rule of
//! both, and each part is the answer its own requests, installed bundles and
//! preferences give, whatever is installed elsewhere. The tests hold it to
//! one solve of everything at once, on random universes and on the derived
//! community catalog: same answers, same explanations. A group with no
//! answer of its own makes every resolution fail, so it is always solved
//! along, and the explanation names it.

use rustc_hash::{FxHashMap, FxHashSet};

use super::provider::{InstalledRule, Touched};
use super::{
    BundleIndex, Installed, Request, Resolution, ResolveError, Selection, Universe, solve,
};

/// A cluster's installed bundles, prepared against one universe so that
/// each resolution solves only what its requests reach.
///
/// ```
/// # use pakket_engine::resolve::{InstalledSet, Universe};
/// let universe = Universe::default();
/// let installed = InstalledSet::new(&universe, &[])?;
/// assert!(installed.resolve(&[])?.resolved.is_empty());
/// # Ok::<(), pakket_engine::resolve::ResolveError>(())
/// ```
#[derive(Debug)]
pub struct InstalledSet<'u> {
    universe: &'u Universe,
    /// Each installed package's rule (where it may move), by package.
    rules: FxHashMap<String, InstalledRule>,
    groups: Vec<Group>,
    /// Groups with no answer of their own: every resolution fails with
    /// them, so every resolution solves them along, to say why.
    unsolvable: Vec<usize>,
    /// The group whose solve fetched each name.
    owners: FxHashMap<Touched, usize>,
    /// Every group's own answer in one list sorted by package, so a
    /// resolution that reaches no group copies it in one pass.
    prepared: Vec<Selection>,
    /// The group each of `prepared` comes from.
    prepared_group: Vec<usize>,
}

/// Installed packages that resolve together and apart from every other
/// group: their names, sorted.
#[derive(Debug)]
struct Group {
    packages: Vec<String>,
}

/// A group while the set is being prepared.
struct Draft {
    /// Sorted by name.
    packages: Vec<String>,
    /// The group's own answer, sorted by package; `None` when it has none.
    resolved: Option<Vec<Selection>>,
    touched: FxHashSet<Touched>,
}

impl<'u> InstalledSet<'u> {
    /// Finds each installed bundle in `universe` and solves the installed
    /// set, group by group.
    ///
    /// # Errors
    /// [`ResolveError::BadInput`] when an installed bundle is in no catalog
    /// or two name the same package.
    pub fn new(universe: &'u Universe, installed: &[Installed]) -> Result<Self, ResolveError> {
        let rules = rules(universe, installed)?;
        let mut packages: Vec<&str> = rules.keys().map(String::as_str).collect();
        packages.sort_unstable();
        let mut drafts: Vec<Draft> = packages
            .into_iter()
            .map(|package| solve_group(universe, &rules, vec![package.to_owned()]))
            .collect();
        // Groups whose solves fetched a common name are one group; solving
        // them together can reach further names, so repeat until none is shared.
        let owners = loop {
            let (owners, merged) = merge_overlapping(&drafts);
            let Some(merged) = merged else {
                break owners;
            };
            let mut old: Vec<Option<Draft>> = drafts.into_iter().map(Some).collect();
            drafts = merged
                .into_iter()
                .map(|members| {
                    let mut members = members.into_iter().filter_map(|g| old[g].take());
                    let first = members.next().expect("a group has a member");
                    let rest: Vec<Draft> = members.collect();
                    if rest.is_empty() {
                        return first;
                    }
                    let mut packages = first.packages;
                    packages.extend(rest.into_iter().flat_map(|draft| draft.packages));
                    packages.sort_unstable();
                    solve_group(universe, &rules, packages)
                })
                .collect();
        };
        let mut groups = Vec::with_capacity(drafts.len());
        let mut unsolvable = Vec::new();
        let mut prepared: Vec<(usize, Selection)> = Vec::new();
        for (g, draft) in drafts.into_iter().enumerate() {
            match draft.resolved {
                Some(resolved) => prepared.extend(resolved.into_iter().map(|s| (g, s))),
                None => unsolvable.push(g),
            }
            groups.push(Group {
                packages: draft.packages,
            });
        }
        prepared.sort_unstable_by(|(_, a), (_, b)| a.package.cmp(&b.package));
        let (prepared_group, prepared) = prepared.into_iter().unzip();
        Ok(Self {
            universe,
            rules,
            groups,
            unsolvable,
            owners,
            prepared,
            prepared_group,
        })
    }

    /// The universe the set was prepared against.
    pub fn universe(&self) -> &'u Universe {
        self.universe
    }

    /// Resolves `requests`, keeping the installed bundles working: the same
    /// as [`super::resolve`] with this installed set.
    pub fn resolve(&self, requests: &[Request]) -> Result<Resolution, ResolveError> {
        // Per group, whether this resolution solves it along.
        let mut along = vec![false; self.groups.len()];
        for &g in &self.unsolvable {
            along[g] = true;
        }
        if requests.is_empty() && self.unsolvable.is_empty() {
            return Ok(self.combine(Vec::new(), &along));
        }
        let (outcome, roots) = loop {
            let roots = self.roots(&along);
            let outcome = solve(self.universe, &self.rules, requests, &roots, false);
            if let Err(ResolveError::BadInput(_)) = outcome.result {
                return outcome.result;
            }
            let mut reached = false;
            for name in &outcome.touched {
                if let Some(&g) = self.owners.get(name)
                    && !along[g]
                {
                    along[g] = true;
                    reached = true;
                }
            }
            if !reached {
                break (outcome, roots);
            }
        };
        match outcome.result {
            Ok(resolution) => Ok(self.combine(resolution.resolved, &along)),
            // Excluded candidates cost clauses; list them only to explain a failure.
            Err(ResolveError::Unsatisfiable(_)) => {
                solve(self.universe, &self.rules, requests, &roots, true).result
            }
            Err(error) => Err(error),
        }
    }

    /// The installed packages of the groups solved along, sorted.
    fn roots(&self, along: &[bool]) -> Vec<&str> {
        let mut roots: Vec<&str> = self
            .groups
            .iter()
            .zip(along)
            .filter(|(_, along)| **along)
            .flat_map(|(group, _)| &group.packages)
            .map(String::as_str)
            .collect();
        roots.sort_unstable();
        roots
    }

    /// `solved` (the requests' part, which holds the groups solved along;
    /// sorted by package) with the prepared answer of every other group,
    /// merged in package order. No package is in both: the parts share no
    /// name.
    fn combine(&self, solved: Vec<Selection>, along: &[bool]) -> Resolution {
        let mut resolved = Vec::with_capacity(self.prepared.len() + solved.len());
        let mut solved = solved.into_iter().peekable();
        let kept = self
            .prepared
            .iter()
            .zip(&self.prepared_group)
            .filter(|(_, g)| !along[**g]);
        for (selection, _) in kept {
            while let Some(next) = solved.next_if(|next| next.package < selection.package) {
                resolved.push(next);
            }
            resolved.push(selection.clone());
        }
        resolved.extend(solved);
        Resolution { resolved }
    }
}

/// Solves the installed packages `packages` (sorted) alone.
fn solve_group(
    universe: &Universe,
    rules: &FxHashMap<String, InstalledRule>,
    packages: Vec<String>,
) -> Draft {
    let roots: Vec<&str> = packages.iter().map(String::as_str).collect();
    let outcome = solve(universe, rules, &[], &roots, false);
    Draft {
        resolved: outcome.result.ok().map(|resolution| resolution.resolved),
        touched: outcome.touched,
        packages,
    }
}

/// The owner of each name, and, when some name was fetched by several
/// groups, the new groups as lists of old ones (overlapping ones together).
fn merge_overlapping(groups: &[Draft]) -> (FxHashMap<Touched, usize>, Option<Vec<Vec<usize>>>) {
    let mut parent: Vec<usize> = (0..groups.len()).collect();
    fn root(parent: &mut [usize], mut g: usize) -> usize {
        while parent[g] != g {
            parent[g] = parent[parent[g]];
            g = parent[g];
        }
        g
    }
    let mut owners: FxHashMap<Touched, usize> = FxHashMap::default();
    let mut overlap = false;
    for (g, group) in groups.iter().enumerate() {
        for &name in &group.touched {
            let owner = *owners.entry(name).or_insert(g);
            let (a, b) = (root(&mut parent, owner), root(&mut parent, g));
            if a != b {
                parent[b] = a;
                overlap = true;
            }
        }
    }
    if !overlap {
        return (owners, None);
    }
    let mut members: FxHashMap<usize, Vec<usize>> = FxHashMap::default();
    let mut order = Vec::new();
    for g in 0..groups.len() {
        let r = root(&mut parent, g);
        members
            .entry(r)
            .or_insert_with(|| {
                order.push(r);
                Vec::new()
            })
            .push(g);
    }
    let merged = order
        .into_iter()
        .map(|r| members.remove(&r).unwrap_or_default())
        .collect();
    (owners, Some(merged))
}

/// Each installed bundle's rule: it stays, or moves along its update graph,
/// never down.
fn rules(
    universe: &Universe,
    installed: &[Installed],
) -> Result<FxHashMap<String, InstalledRule>, ResolveError> {
    let mut rules = FxHashMap::default();
    for item in installed {
        let bundle = find_installed(universe, item)?;
        let package = universe.bundles[bundle].package.clone();
        let mut allowed = vec![bundle];
        allowed.extend(
            universe
                .upgrades_from(bundle)
                .iter()
                .copied()
                .filter(|&to| {
                    // Never a downgrade, even if a catalog's graph says so.
                    universe.bundles[to].version >= universe.bundles[bundle].version
                }),
        );
        if let Some(previous) = rules.insert(package.clone(), InstalledRule { bundle, allowed }) {
            let previous = &universe.bundles[previous.bundle].name;
            return Err(ResolveError::BadInput(format!(
                "the installed list names package {package} twice ({previous} and {}); a cluster holds one bundle per package",
                universe.bundles[bundle].name
            )));
        }
    }
    Ok(rules)
}

fn find_installed(universe: &Universe, item: &Installed) -> Result<BundleIndex, ResolveError> {
    let found = match item {
        // Build metadata does not order versions, but it does tell bundles
        // apart: `2.0.0+1` and `2.0.0` are two bundles with their own edges.
        Installed::Version { package, version } => universe.package(package).and_then(|info| {
            info.bundles
                .iter()
                .copied()
                .find(|&b| universe.bundles[b].version.semver() == version.semver())
        }),
        Installed::Bundle { bundle } => universe.bundles_named(bundle).first().copied(),
    };
    found.ok_or_else(|| {
        let mut message = format!(
            "installed {item} is in no catalog, so its update graph is unknown; add the catalog that served it"
        );
        if let Installed::Version { package, version } = item {
            let near: Vec<String> = universe
                .package(package)
                .into_iter()
                .flat_map(|info| info.bundles.iter())
                .map(|&b| &universe.bundles[b].version)
                .filter(|other| *other == version)
                .map(ToString::to_string)
                .collect();
            if !near.is_empty() {
                message = format!(
                    "{message}, or name the version exactly: the catalogs have {package} {} (build metadata tells bundles apart)",
                    near.join(", ")
                );
            }
        }
        ResolveError::BadInput(message)
    })
}

#[cfg(test)]
#[path = "installed_set_tests.rs"]
mod tests;
