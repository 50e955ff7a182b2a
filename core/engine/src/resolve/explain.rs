//! Explanations: why no set of bundles satisfies a resolution, as a tree of
//! needs a reader can follow from the request down to the cause.
//!
//! resolvo reports the clauses of a conflict as a graph (root → requirement
//! → candidate → its requirements ...). This module walks that graph and
//! adds what only Pakket knows: for a requirement with no candidate, every
//! bundle of the package and why it does not fit (channel, range, catalog,
//! installed-set rule). Candidates whose explanations read the same are
//! merged, so fifty versions failing for one reason read as one line.

use std::collections::{BTreeMap, HashSet};
use std::fmt::{self, Write as _};

use petgraph::graph::NodeIndex;
use petgraph::visit::EdgeRef;
use resolvo::conflict::{ConflictCause, ConflictEdge, ConflictGraph, ConflictNode};
use resolvo::{Interner, Requirement, SolvableId, VersionSetId};
use serde::Serialize;

use super::Request;
use super::provider::{Filter, Name, Provider, Solvable};

/// Why a resolution failed: the needs that cannot all be met.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Explanation {
    /// One line: which requests cannot be satisfied together.
    pub summary: String,
    /// The chain of requirements, from the requests and installed bundles down.
    pub needs: Vec<Need>,
}

/// Someone needs something, and these are the candidates.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Need {
    /// Who needs it: `request etcd@alpha` or `installed etcd 0.9.2`; empty
    /// for the needs of a candidate (the candidate group is who needs it).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub by: String,
    /// What: `package etcd (channel alpha, >=1.0.0)` or `API group/version/Kind`.
    pub requires: String,
    /// When nothing at all fits: why each bundle that might have does not.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub no_candidates: Option<String>,
    /// The candidates that fit but could not be used, and why.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub candidates: Vec<CandidateVerdict>,
}

/// One or more candidates that failed for the same reason.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct CandidateVerdict {
    /// `name version (catalog)` of each candidate in this group.
    pub bundles: Vec<String>,
    /// Why they could not be used (empty when `needs` says it).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub reason: String,
    /// Their own needs that could not be met.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub needs: Vec<Need>,
}

const MAX_DEPTH: usize = 10;

/// Builds the explanation of a conflict.
pub(crate) fn explain(
    provider: &Provider<'_>,
    requests: &[Request],
    roots: &[(Requirement, String)],
    graph: &ConflictGraph,
) -> Explanation {
    let mut walker = Walker {
        provider,
        graph,
        roots,
        visiting: HashSet::new(),
    };
    let needs = walker
        .needs_of(graph.root_node, "", 0)
        .into_iter()
        .flat_map(collapse_installed)
        .collect();
    let requested: Vec<String> = requests.iter().map(ToString::to_string).collect();
    let summary = if requested.is_empty() {
        "the installed bundles cannot all be kept working together".to_owned()
    } else if provider.installed.is_empty() {
        format!("cannot install {}", requested.join(", "))
    } else {
        format!(
            "cannot install {} while keeping the installed bundles working",
            requested.join(", ")
        )
    };
    Explanation { summary, needs }
}

/// Adds a candidate group, merging it into one that failed the same way.
fn merge(groups: &mut Vec<CandidateVerdict>, verdict: CandidateVerdict) {
    match groups
        .iter_mut()
        .find(|group| group.reason == verdict.reason && group.needs == verdict.needs)
    {
        Some(group) => group.bundles.extend(verdict.bundles),
        None => groups.push(verdict),
    }
}

/// An installed bundle "needs its own package", satisfied by itself: say
/// directly what the installed bundle needs instead.
fn collapse_installed(need: Need) -> Vec<Need> {
    let is_itself = need.by.starts_with("installed ")
        && need.no_candidates.is_none()
        && matches!(need.candidates.as_slice(), [only] if only.reason.is_empty() && !only.needs.is_empty());
    if !is_itself {
        return vec![need];
    }
    let by = need.by;
    let group = need
        .candidates
        .into_iter()
        .next()
        .expect("one candidate group");
    group
        .needs
        .into_iter()
        .map(|inner| Need {
            by: by.clone(),
            ..inner
        })
        .collect()
}

struct Walker<'a, 'u> {
    provider: &'a Provider<'u>,
    graph: &'a ConflictGraph,
    /// Who asked for each root requirement (`request etcd@alpha`, `installed ...`).
    roots: &'a [(Requirement, String)],
    /// Nodes on the current path, so cycles (A needs B needs A) end.
    visiting: HashSet<NodeIndex>,
}

impl Walker<'_, '_> {
    /// The needs of `node` (the root or a bundle) that take part in the conflict.
    fn needs_of(&mut self, node: NodeIndex, by: &str, depth: usize) -> Vec<Need> {
        let mut requirements: BTreeMap<Requirement, Vec<NodeIndex>> = BTreeMap::new();
        for edge in self.graph.graph.edges(node) {
            if let ConflictEdge::Requires(requirement) = edge.weight() {
                requirements
                    .entry(*requirement)
                    .or_default()
                    .push(edge.target());
            }
        }
        requirements
            .into_iter()
            .map(|(requirement, targets)| self.need(node, by, requirement, &targets, depth))
            .collect()
    }

    fn need(
        &mut self,
        node: NodeIndex,
        by: &str,
        requirement: Requirement,
        targets: &[NodeIndex],
        depth: usize,
    ) -> Need {
        let sets = self.sets(requirement);
        let by = if node == self.graph.root_node {
            self.root_label(requirement)
        } else {
            by.to_owned()
        };
        let requires = match self.shared_any_package_filter(&sets) {
            // A label or formula any package may meet reads as one need,
            // not as one per package that happens to meet it.
            Some(filter) => self.provider.describe_filter(&filter),
            None => sets
                .iter()
                .map(|&set| self.describe_set(set))
                .collect::<Vec<_>>()
                .join(" or "),
        };
        let unresolved = targets
            .iter()
            .any(|&target| matches!(self.graph.graph[target], ConflictNode::UnresolvedDependency));
        let no_candidates = unresolved.then(|| {
            sets.iter()
                .map(|&set| self.why_nothing_fits(set))
                .collect::<Vec<_>>()
                .join("; ")
        });
        let mut groups: Vec<CandidateVerdict> = Vec::new();
        for &target in targets {
            let ConflictNode::Solvable(solvable) = self.graph.graph[target] else {
                continue;
            };
            let mut verdict = self.verdict(target, solvable, depth + 1);
            if matches!(self.provider.solvable(solvable), Solvable::Marker { .. }) {
                // A marker stands for "package P provides the API": show P's
                // bundles in its place, and the marker only if it clashes.
                let inner = std::mem::take(&mut verdict.needs);
                if !verdict.reason.is_empty() {
                    merge(&mut groups, verdict);
                }
                for group in inner.into_iter().flat_map(|need| need.candidates) {
                    merge(&mut groups, group);
                }
            } else {
                merge(&mut groups, verdict);
            }
        }
        Need {
            by,
            requires,
            no_candidates,
            candidates: groups,
        }
    }

    /// Why one candidate (a bundle, or a GVK provider marker) could not be used.
    fn verdict(&mut self, node: NodeIndex, solvable: SolvableId, depth: usize) -> CandidateVerdict {
        let provider = self.provider;
        let label = provider.display_solvable(solvable).to_string();
        let mut reasons = Vec::new();
        for edge in self.graph.graph.edges(node).chain(
            self.graph
                .graph
                .edges_directed(node, petgraph::Direction::Incoming),
        ) {
            let ConflictEdge::Conflict(cause) = edge.weight() else {
                continue;
            };
            let other = if edge.source() == node {
                edge.target()
            } else {
                edge.source()
            };
            match (cause, self.graph.graph[other]) {
                (ConflictCause::Excluded, ConflictNode::Excluded(reason)) => {
                    reasons.push(provider.display_string(reason).to_string())
                }
                (ConflictCause::ForbidMultipleInstances, ConflictNode::Solvable(other)) => {
                    reasons.push(self.clash(solvable, other));
                }
                (ConflictCause::Locked(_), _) => {
                    reasons.push("locked to another bundle".to_owned())
                }
                _ => {}
            }
        }
        reasons.sort();
        reasons.dedup();
        let needs = if depth > MAX_DEPTH || !self.visiting.insert(node) {
            if reasons.is_empty() {
                reasons.push("its needs are explained above".to_owned());
            }
            Vec::new()
        } else {
            let needs = self.needs_of(node, "", depth);
            self.visiting.remove(&node);
            needs
        };
        CandidateVerdict {
            bundles: vec![label],
            reason: reasons.join("; "),
            needs,
        }
    }

    /// Text for two solvables of one name that cannot both be chosen.
    fn clash(&self, solvable: SolvableId, other: SolvableId) -> String {
        let provider = self.provider;
        match (provider.solvable(solvable), provider.solvable(other)) {
            (Solvable::Marker { gvk, .. }, Solvable::Marker { .. }) => format!(
                "{} must have one provider, and {} provides it too",
                provider.display_name(gvk),
                provider.display_solvable(other)
            ),
            _ => format!(
                "conflicts with {} (one bundle per package)",
                provider.display_solvable(other)
            ),
        }
    }

    /// The label, name or constraint filter every set of a requirement
    /// shares, when it is one of those (met by a bundle of any package).
    fn shared_any_package_filter(&self, sets: &[VersionSetId]) -> Option<Filter> {
        let first = self.provider.version_set_of(*sets.first()?).filter;
        let any_package = matches!(
            first,
            Filter::Label(_) | Filter::BundleName(_) | Filter::Constraint(_)
        );
        let shared = sets
            .iter()
            .all(|&set| self.provider.version_set_of(set).filter == first);
        (any_package && shared).then_some(first)
    }

    fn sets(&self, requirement: Requirement) -> Vec<VersionSetId> {
        match requirement {
            Requirement::Single(set) => vec![set],
            Requirement::Union(union) => self.provider.version_sets_in_union(union).collect(),
        }
    }

    /// The root's requirements come from requests or from installed bundles.
    fn root_label(&self, requirement: Requirement) -> String {
        self.roots
            .iter()
            .find(|(root, _)| *root == requirement)
            .map(|(_, label)| label.clone())
            .unwrap_or_else(|| "the request".to_owned())
    }

    fn describe_set(&self, set: VersionSetId) -> String {
        let provider = self.provider;
        let name = provider
            .display_name(provider.version_set_name(set))
            .to_string();
        let filter = provider.display_version_set(set).to_string();
        match provider.name_of(provider.version_set_name(set)) {
            // A provider's tie to its own marker: it must be the one provider.
            Name::Gvk(_) if matches!(provider.version_set_of(set).filter, Filter::Exact(_)) => {
                format!("to be the one provider of {name}")
            }
            Name::Gvk(_) | Name::Nothing(_) => name,
            Name::Package(_) if filter.is_empty() => format!("package {name}"),
            Name::Package(_) => format!("package {name} ({filter})"),
        }
    }

    /// For a requirement nothing satisfies: every near miss and why it misses.
    fn why_nothing_fits(&self, set: VersionSetId) -> String {
        let provider = self.provider;
        let universe = provider.universe;
        let version_set = provider.version_set_of(set);
        let no_bundle = if universe.source() == "loaded catalog" {
            "no bundle in the loaded catalogs".to_owned()
        } else {
            format!("no {}", universe.source())
        };
        let package = match provider.name_of(version_set.name) {
            Name::Gvk(gvk) => return format!("{no_bundle} provides API {gvk}"),
            Name::Nothing(filter) => return self.why_nothing_meets(&filter, &no_bundle),
            Name::Package(package) => package,
        };
        let left_out = describe_left_out(provider, &package);
        let info = universe
            .package(&package)
            .filter(|info| !info.bundles.is_empty());
        let Some(info) = info else {
            return match (left_out, universe.package(&package)) {
                (Some(left_out), _) => {
                    format!(
                        "every bundle of package {package} was left out when loading: {left_out}"
                    )
                }
                (None, Some(_)) => format!("package {package} has no bundles"),
                (None, None) => {
                    format!("no {} has a package named {package}", universe.source())
                }
            };
        };
        let mut misses: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for &bundle in &info.bundles {
            let candidate = &universe.bundles[bundle];
            let reason = if let Some(exclusion) = provider.exclusion(bundle) {
                exclusion.describe(universe)
            } else {
                miss_reason(provider, bundle, &version_set.filter)
            };
            misses
                .entry(reason)
                .or_default()
                .push(candidate.version.to_string());
        }
        let mut text = String::new();
        for (reason, mut versions) in misses {
            versions.dedup();
            if !text.is_empty() {
                text.push_str("; ");
            }
            let _ = write!(text, "{} {reason}", list_versions(&package, &versions));
        }
        if let Some(left_out) = left_out {
            let _ = write!(text, "; left out when loading: {left_out}");
        }
        text
    }

    /// Why nothing has a label, a name or a constraint's formula.
    fn why_nothing_meets(&self, filter: &Filter, no_bundle: &str) -> String {
        let provider = self.provider;
        match filter {
            Filter::Label(label) => format!("{no_bundle} carries label {label}"),
            Filter::BundleName(name) => format!("{no_bundle} is named {name}"),
            Filter::Constraint(id) => {
                let entry = provider.constraint(*id);
                let mut text = format!("{no_bundle} satisfies it");
                // A rule that failed on some bundles may be why nothing fits.
                const SHOWN: usize = 3;
                for (bundle, why) in entry.failures.iter().take(SHOWN) {
                    let _ = write!(text, "; on {}: {why}", provider.display_bundle(*bundle));
                }
                if entry.failures.len() > SHOWN {
                    let _ = write!(
                        text,
                        "; and on {} more bundles",
                        entry.failures.len() - SHOWN
                    );
                }
                text
            }
            _ => format!("{no_bundle} fits"),
        }
    }
}

/// The bundles of `package` that catalogs left out while loading, and why;
/// `None` when there are none.
fn describe_left_out(provider: &Provider<'_>, package: &str) -> Option<String> {
    let universe = provider.universe;
    let left_out = universe.left_out(package);
    if left_out.is_empty() {
        return None;
    }
    let items: Vec<String> = left_out
        .iter()
        .map(|item| {
            format!(
                "{} (catalog {}): {}",
                item.bundle, universe.catalogs[item.catalog].name, item.reason
            )
        })
        .collect();
    Some(items.join("; "))
}

/// Why one bundle misses a filter it was checked against.
fn miss_reason(provider: &Provider<'_>, bundle: usize, filter: &Filter) -> String {
    let candidate = &provider.universe.bundles[bundle];
    if let Filter::Package {
        channel, catalog, ..
    } = filter
    {
        if let Some(channel) = channel
            && !candidate
                .channels
                .iter()
                .any(|position| &position.channel == channel)
        {
            return format!("not in channel {channel}");
        }
        if let Some(catalog) = catalog
            && candidate.catalog != *catalog
        {
            return format!(
                "not from catalog {}",
                provider.universe.catalogs[*catalog].name
            );
        }
    }
    if !provider.bundle_matches(bundle, filter) {
        return format!("outside {}", DisplayFilter(provider, filter));
    }
    "fits, but was ruled out".to_owned()
}

struct DisplayFilter<'a, 'u>(&'a Provider<'u>, &'a Filter);

impl fmt::Display for DisplayFilter<'_, '_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.1 {
            Filter::Package {
                range: Some(range), ..
            } => write!(f, "{}", self.0.range(*range).as_written()),
            Filter::BundleName(name) => write!(f, "the name {name}"),
            Filter::Label(label) => write!(f, "label {label}"),
            Filter::Constraint(id) => {
                write!(f, "olm.constraint {}", self.0.constraint(*id).constraint)
            }
            _ => write!(f, "the requirement"),
        }
    }
}

/// `etcd 0.9.4` / `etcd 0.9.0, 0.9.2 and 0.9.4` / `etcd 0.1.0 … 0.9.4 (12 versions)`: all
/// `is`/`are` agreeing with the count.
fn list_versions(package: &str, versions: &[String]) -> String {
    match versions {
        [one] => format!("{package} {one} is"),
        [first, .., last] if versions.len() > 4 => {
            format!(
                "{package} {first} … {last} ({} versions) are",
                versions.len()
            )
        }
        _ => {
            let (last, rest) = versions.split_last().expect("at least one version");
            format!("{package} {} and {last} are", rest.join(", "))
        }
    }
}

impl fmt::Display for Explanation {
    /// The explanation as indented text: each need, then each group of
    /// candidates and why it failed, then that group's own needs.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "{}:", self.summary)?;
        for need in &self.needs {
            write_need(f, need, 1)?;
        }
        Ok(())
    }
}

fn write_need(f: &mut fmt::Formatter<'_>, need: &Need, depth: usize) -> fmt::Result {
    let indent = "  ".repeat(depth);
    if need.by.is_empty() {
        writeln!(f, "{indent}needs {}", need.requires)?;
    } else {
        writeln!(f, "{indent}{} needs {}", need.by, need.requires)?;
    }
    write_candidates(f, need, depth + 1)
}

/// The candidates of a need, one line per group:
/// `- X: reason`, `- X, which needs Y` (then Y's candidates), or `- X (the only choice)`.
fn write_candidates(f: &mut fmt::Formatter<'_>, need: &Need, depth: usize) -> fmt::Result {
    let indent = "  ".repeat(depth);
    if let Some(reason) = &need.no_candidates {
        writeln!(f, "{indent}but nothing fits: {reason}")?;
    }
    for group in &need.candidates {
        let who = match group.bundles.as_slice() {
            [one] => one.clone(),
            [first, .., last] => {
                format!("{first} … {last} ({} bundles, each)", group.bundles.len())
            }
            [] => String::new(),
        };
        match (group.reason.is_empty(), group.needs.as_slice()) {
            (false, _) => writeln!(f, "{indent}- {who}: {}", group.reason)?,
            (true, [only]) => {
                writeln!(f, "{indent}- {who}, which needs {}", only.requires)?;
                write_candidates(f, only, depth + 1)?;
            }
            (true, []) => writeln!(f, "{indent}- {who} (the only choice)")?,
            (true, many) => {
                writeln!(f, "{indent}- {who}, which needs all of:")?;
                for inner in many {
                    write_need(f, inner, depth + 1)?;
                }
            }
        }
    }
    Ok(())
}
