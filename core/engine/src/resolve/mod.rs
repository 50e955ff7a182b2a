//! Resolution: from requests and the installed set to one set of bundles
//! that works together, or an explanation of why none does.
//!
//! # Why resolvo
//! The rules are a SAT problem with preferences: at most one bundle per
//! package and one provider per GVK, requirements that are ORs across
//! packages (any provider of a GVK), exclusions with reasons, and a
//! candidate order that OLM defines (catalog, channel, graph position).
//! resolvo (a CDCL solver built for package managers, used by pixi/rattler)
//! expresses each directly: names and solvables for packages and bundles,
//! marker names for GVKs, `excluded` candidates with a reason for the
//! installed-set rules, and version sets whose candidate order we fully
//! control per dependent. pubgrub has nicer built-in prose but models one
//! version per package with ranges over a total order; it has no place for
//! an OR across packages or for a candidate order that is not by version,
//! both of which OLM's rules need. A home-made search would have to redo
//! clause learning to stay fast on catalogs with thousands of bundles.
//!
//! # Many resolutions, one installed set
//! [`resolve`] is one resolution. A service resolving many times against a
//! cluster's installed bundles prepares them once with [`InstalledSet`]:
//! they are solved in independent groups, and each resolution solves only
//! its requests and the groups they reach.

mod explain;
mod from_catalogs;
mod installed_set;
mod provider;
mod request;
mod universe;

use std::collections::BTreeMap;

use resolvo::{Problem, SolvableId, Solver, UnsolvableOrCancelled};
use rustc_hash::{FxHashMap, FxHashSet};
use serde::Serialize;

pub use explain::{CandidateVerdict, Explanation, Need};
pub use from_catalogs::gvk_key;
pub use installed_set::InstalledSet;
pub use request::{Installed, Request, RequestError};
pub use universe::{
    BundleIndex, Candidate, CatalogInfo, ChannelPosition, LeftOut, PackageInfo, Universe,
};

use provider::{Filter, InstalledRule, Provider, Solvable, Touched};

use crate::Version;

/// One chosen bundle.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Selection {
    /// Its package.
    pub package: String,
    /// Its version.
    pub version: Version,
    /// The bundle's name.
    pub bundle: String,
    /// The channel it was chosen through: the channel a request named, else
    /// the default channel when it is in several.
    pub channel: Option<String>,
    /// The catalog it comes from.
    pub catalog: String,
    /// Why it is in the result.
    pub reason: SelectionReason,
    /// Why it is deprecated (the catalog's notices for the bundle, its
    /// package or the channel above, or its `olm.deprecated` property), if it
    /// is. Deprecated bundles are chosen only when nothing else fits.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub deprecated: Option<String>,
}

/// Why a bundle is in the result.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "camelCase")]
pub enum SelectionReason {
    /// A request asked for it.
    Requested {
        /// The request, as written.
        request: String,
        /// The installed bundle it replaces, if the package was installed
        /// at another bundle.
        #[serde(skip_serializing_if = "Option::is_none")]
        replaces: Option<String>,
    },
    /// It was installed and stays.
    Installed,
    /// It replaces an installed bundle along the update graph.
    Upgrade {
        /// The installed bundle it replaces.
        from: String,
    },
    /// Another chosen bundle needs it.
    Dependency {
        /// The bundle that needs it.
        of: String,
        /// What that bundle requires (`package etcd >=0.9.0`, `API group/version/Kind`).
        needs: String,
    },
}

/// A successful resolution, sorted by package.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Resolution {
    /// The chosen bundles.
    pub resolved: Vec<Selection>,
}

/// Why a resolution did not produce a result.
#[derive(Clone, Debug, thiserror::Error)]
pub enum ResolveError {
    /// The input names something that does not exist or cannot be used.
    #[error("{0}")]
    BadInput(String),
    /// No set of bundles satisfies every request and rule.
    #[error("{0}")]
    Unsatisfiable(Explanation),
}

/// Resolves `requests` against `universe`, keeping `installed` working.
///
/// To resolve many times with one installed set, prepare it once with
/// [`InstalledSet::new`]: this function prepares it for one resolution.
pub fn resolve(
    universe: &Universe,
    requests: &[Request],
    installed: &[Installed],
) -> Result<Resolution, ResolveError> {
    InstalledSet::new(universe, installed)?.resolve(requests)
}

/// What one solver run gives: the resolution or why there is none, and
/// every name whose candidates it fetched.
pub(crate) struct Outcome {
    pub result: Result<Resolution, ResolveError>,
    pub touched: FxHashSet<Touched>,
}

/// One solver run: `requests`, and the installed packages `roots` kept
/// working (sorted by name; every rule in `rules` still decides which
/// bundles each installed package may move to). With `report_exclusions`,
/// bundles the installed rules rule out are handed to the solver as
/// excluded (with their reason) so the explanation can name them; without,
/// they are simply not candidates.
pub(crate) fn solve<'a>(
    universe: &'a Universe,
    rules: &'a FxHashMap<String, InstalledRule>,
    requests: &'a [Request],
    roots: &[&str],
    report_exclusions: bool,
) -> Outcome {
    let requested: FxHashSet<&str> = requests
        .iter()
        .filter_map(|request| match request {
            Request::Package { package, .. } => Some(package.as_str()),
            _ => None,
        })
        .collect();
    let provider = Provider::new(universe, rules, requested, report_exclusions);
    let mut solver = Solver::new(provider);
    let result = run(&mut solver, requests, roots);
    Outcome {
        result,
        touched: solver.provider().take_touched(),
    }
}

fn run(
    solver: &mut Solver<Provider<'_>>,
    requests: &[Request],
    roots: &[&str],
) -> Result<Resolution, ResolveError> {
    let provider = solver.provider();
    let universe = provider.universe;
    // Each root requirement with who asked for it, for the explanation.
    let mut labelled: Vec<(resolvo::Requirement, String)> = Vec::new();
    for request in requests {
        labelled.push((
            request_requirement(provider, request)?,
            format!("request {request}"),
        ));
    }
    for &package in roots {
        let rule = &provider.installed[package];
        let filter = Filter::Package {
            channel: None,
            range: None,
            catalog: None,
        };
        let bundle = &universe.bundles[rule.bundle];
        let label = format!("installed {} {}", bundle.name, bundle.version);
        labelled.push((
            provider.package_requirement(package, filter, None).into(),
            label,
        ));
    }
    let root: Vec<resolvo::Requirement> = labelled
        .iter()
        .map(|(requirement, _)| *requirement)
        .collect();

    let problem = Problem::new().requirements(root.into_iter().map(Into::into).collect());
    match solver.solve(problem) {
        Ok(solution) => Ok(describe_solution(solver.provider(), requests, &solution)),
        Err(UnsolvableOrCancelled::Unsolvable(conflict)) => {
            let graph = conflict.graph(solver);
            Err(ResolveError::Unsatisfiable(explain::explain(
                solver.provider(),
                requests,
                &labelled,
                &graph,
            )))
        }
        Err(UnsolvableOrCancelled::Cancelled(_)) => {
            unreachable!("Pakket never cancels a resolution")
        }
    }
}

fn request_requirement(
    provider: &Provider<'_>,
    request: &Request,
) -> Result<resolvo::Requirement, ResolveError> {
    let universe = provider.universe;
    Ok(match request {
        Request::Package {
            package,
            channel,
            range,
            catalog,
        } => {
            let catalog = match catalog {
                Some(name) => Some(universe.catalog_index(name).ok_or_else(|| {
                    ResolveError::BadInput(format!(
                        "request {request} names catalog {name}, which was not loaded"
                    ))
                })?),
                None => None,
            };
            let filter = Filter::Package {
                channel: channel.clone(),
                range: range.as_ref().map(|range| provider.range_id(range)),
                catalog,
            };
            provider.package_requirement(package, filter, None).into()
        }
        Request::Gvk(gvk) => provider.gvk_requirement(gvk, None).into(),
        Request::BundleName(name) => {
            provider.any_package_requirement(Filter::BundleName(name.clone()), None)
        }
        Request::Label(label) => {
            provider.any_package_requirement(Filter::Label(label.clone()), None)
        }
    })
}

fn describe_solution(
    provider: &Provider<'_>,
    requests: &[Request],
    solution: &[SolvableId],
) -> Resolution {
    let universe = provider.universe;
    let chosen: Vec<BundleIndex> = solution
        .iter()
        .filter_map(|&id| match provider.solvable(id) {
            Solvable::Bundle(bundle) => Some(bundle),
            Solvable::Marker { .. } => None,
        })
        .collect();
    let mut by_package = BTreeMap::new();
    for &bundle in &chosen {
        let candidate = &universe.bundles[bundle];
        let reason = selection_reason(provider, requests, &chosen, bundle);
        // The channel a request for this bundle named, else the one it was
        // preferred through: not deprecated, the default, then by name.
        let requested = requests.iter().find_map(|request| match request {
            Request::Package {
                channel: Some(channel),
                ..
            } if satisfies(provider, bundle, request) => Some(channel.clone()),
            _ => None,
        });
        let default = universe.default_channel_of(bundle);
        let channel = requested.or_else(|| {
            candidate
                .channels
                .iter()
                .min_by_key(|position| {
                    (
                        universe
                            .channel_deprecation(bundle, &position.channel)
                            .is_some(),
                        Some(position.channel.as_str()) != default,
                        position.channel.clone(),
                    )
                })
                .map(|position| position.channel.clone())
        });
        let deprecated = [
            universe.deprecation(bundle),
            channel
                .as_deref()
                .and_then(|channel| universe.channel_deprecation(bundle, channel)),
        ]
        .into_iter()
        .flatten()
        .collect::<Vec<_>>();
        by_package.insert(
            candidate.package.clone(),
            Selection {
                package: candidate.package.clone(),
                version: candidate.version.clone(),
                bundle: candidate.name.clone(),
                channel,
                catalog: universe.catalogs[candidate.catalog].name.clone(),
                reason,
                deprecated: (!deprecated.is_empty()).then(|| deprecated.join("; ")),
            },
        );
    }
    Resolution {
        resolved: by_package.into_values().collect(),
    }
}

fn selection_reason(
    provider: &Provider<'_>,
    requests: &[Request],
    chosen: &[BundleIndex],
    bundle: BundleIndex,
) -> SelectionReason {
    let universe = provider.universe;
    let candidate = &universe.bundles[bundle];
    let installed = provider
        .installed
        .get(&candidate.package)
        .map(|rule| rule.bundle);
    if let Some(request) = requests
        .iter()
        .find(|request| satisfies(provider, bundle, request))
    {
        return SelectionReason::Requested {
            request: request.to_string(),
            replaces: installed
                .filter(|&before| before != bundle)
                .map(|before| universe.bundles[before].name.clone()),
        };
    }
    if let Some(rule) = provider.installed.get(&candidate.package) {
        return if rule.bundle == bundle {
            SelectionReason::Installed
        } else {
            SelectionReason::Upgrade {
                from: universe.bundles[rule.bundle].name.clone(),
            }
        };
    }
    for &other in chosen {
        let dependent = &universe.bundles[other];
        if let Some(needs) = universe.requirement_met(other, bundle) {
            return SelectionReason::Dependency {
                of: dependent.name.clone(),
                needs,
            };
        }
        if let Some(constraint) = universe.constraints(other).iter().find(|constraint| {
            let id = provider.constraint_id(constraint);
            provider.constraint(id).matched.contains(&bundle)
        }) {
            return SelectionReason::Dependency {
                of: dependent.name.clone(),
                needs: format!("olm.constraint {constraint}"),
            };
        }
    }
    unreachable!("a chosen bundle is requested, installed or required by another chosen bundle")
}

/// Whether `bundle` satisfies `request` on its own.
fn satisfies(provider: &Provider<'_>, bundle: BundleIndex, request: &Request) -> bool {
    provider.universe.satisfies(bundle, request)
}
