//! Every Input resolved at once, through the resolver API's own code path
//! ([`crate::protocol::resolve::resolve`]), into what each Input gets and
//! the one set the cluster installs. Pure: no Kubernetes, so the same
//! Inputs and catalogs give the same answer, byte for byte.
//!
//! Inputs that cannot be resolved do not block the others: when the whole
//! set has no solution, each Input is tried alone, and those that fail
//! alone get their own explanation; if the rest still conflict, the rule
//! of [`crate::inputs::conflict`] settles them (what is installed keeps
//! running; between new requests, a person chooses).
//! A dry-run Input is resolved with the live set, as if it joined it, and
//! reports that plan without changing the set.

use std::collections::{BTreeMap, BTreeSet};

use pakket_engine::Version;
use pakket_engine::resolve::{Installed, Request, Universe};

use crate::inputs::input::{Relation, ResolvedInstance};
use crate::protocol::resolve::{Failed, Outcome, Selection, SelectionReason, resolve};

/// One Input, ready to resolve.
#[derive(Clone, Debug)]
pub struct Asked {
    /// The Input's name.
    pub name: String,
    /// Its request, or why it has none (`field: problem`).
    pub request: Result<Request, String>,
    /// Whether its class only plans.
    pub dry_run: bool,
    /// Whether its class forces: the best match alone, no resolution
    /// ([`crate::inputs::force`]).
    pub force: bool,
    /// Its `cel` and `minKubeVersion` constraints, applied by [`narrow`].
    pub filters: crate::inputs::input_filter::Filters,
    /// Its place when Inputs conflict.
    pub seniority: Seniority,
    /// Its UID, which a person's decision names.
    pub uid: String,
    /// The UIDs of the Inputs a person chose it over, for its current
    /// generation (`status.decision`; empty when none, or when the spec
    /// changed since).
    pub chosen_over: BTreeSet<String>,
    /// Why it is not resolved now though its request is fine: what it
    /// installed cannot be resolved again (see [`crate::inputs::kept_installed`]).
    pub held: Option<crate::inputs::kept_installed::Held>,
}

/// The order Inputs are resolved in: those whose bundles are installed
/// before those that are new, then the one created first, then the name,
/// so the answer stays deterministic. Between new Inputs that conflict the
/// order decides nothing ([`crate::inputs::conflict`]).
#[derive(Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
pub struct Seniority {
    /// `false` when the Input's bundles are in the installed set (sorts
    /// first).
    pub not_installed: bool,
    /// When the Input was created, as the apiserver wrote it (seconds
    /// since the epoch); `None` sorts last.
    pub created: Option<i64>,
}

impl Seniority {
    /// Where `input` stands: installed when its status (for its current
    /// spec) names the set's child Instance for the bundle it asked for and
    /// that child runs content (`active`: child name to the Bundle it runs;
    /// an upgrade rolling out still runs the one before). Being in the set
    /// is not enough: a set that waits for approval installs nothing, and a
    /// request that merely came first must not win. Created when the
    /// apiserver says it was.
    pub fn of(input: &crate::Input, active: &BTreeMap<String, String>) -> Self {
        let name = input.metadata.name.as_deref().unwrap_or_default();
        let installed = input.status.as_ref().is_some_and(|status| {
            let current = status.observed_generation == input.metadata.generation;
            let own = status
                .instances
                .iter()
                .find(|i| {
                    i.satisfies
                        .iter()
                        .any(|r| r.kind == "Input" && r.name == name)
                })
                .or(status.instances.first());
            current && !status.dry_run && own.is_some_and(|own| active.contains_key(&own.name))
        });
        Self {
            not_installed: !installed,
            created: input
                .metadata
                .creation_timestamp
                .as_ref()
                .map(|time| time.0.as_second()),
        }
    }

    /// The sort key: installed, then created first (unknown last).
    pub fn key(&self) -> (bool, bool, Option<i64>) {
        (self.not_installed, self.created.is_none(), self.created)
    }
}

/// Narrows each Input's request by its `cel` and `minKubeVersion`
/// constraints against `set` (the served catalogs) for a cluster at
/// (major, minor) `cluster`; an Input nothing passes gets why as its
/// request's error. Call before [`plan`].
pub fn narrow(
    set: &pakket_engine::catalog::CatalogSet,
    asked: &mut [Asked],
    cluster: Option<(u32, u32)>,
) {
    for input in asked.iter_mut() {
        if let Ok(request) = &input.request {
            input.request = match crate::inputs::ambiguity::refused(set, request) {
                Some(ambiguous) => Err(ambiguous),
                None => crate::inputs::input_filter::narrow(
                    set,
                    request.clone(),
                    &input.filters,
                    cluster,
                ),
            };
        }
    }
}

/// What one Input gets.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Answer {
    /// The bundles it brings in (maybe a plan only).
    Resolved(Vec<ResolvedInstance>),
    /// Its constraints cannot be used: the field and why.
    Invalid(String),
    /// Not resolved now: what it installed cannot be resolved again (its
    /// catalog is gone or no longer offers it); why, and whether what it
    /// installed still meets its request.
    Held(crate::inputs::kept_installed::Held),
    /// Another Input owns the package it asks for by name
    /// ([`crate::inputs::package_owner`]): the package and the owner.
    OwnedByAnother {
        /// The package.
        package: String,
        /// The Input that owns it.
        owner: String,
    },
    /// It resolves alone, but conflicts with other Inputs
    /// ([`crate::inputs::conflict`]).
    Conflict(crate::inputs::conflict::Conflict),
    /// No set satisfies it: the one-line summary and the engine's chain.
    Unsatisfiable {
        /// One line.
        summary: String,
        /// The chain of requirements, as the engine words it.
        explanation: String,
    },
}

/// The outcome for every Input, and the live set (every non-dry-run
/// Input that resolved, with their dependencies), sorted by package.
#[derive(Clone, Debug, Default)]
pub struct Plan {
    /// By Input name.
    pub answers: BTreeMap<String, Answer>,
    /// What the cluster should have installed.
    pub set: Vec<Selection>,
}

/// The Instance that installs `package`'s bundle in the set whose
/// Instance is `set`: one per package, named after both, so two sets
/// never name the same child.
pub fn instance_name(set: &str, package: &str) -> String {
    let name = format!("{set}-{package}");
    name.chars().take(253).collect()
}

/// The Instance of a team's copy of `package`'s operator in `namespace`:
/// `<set>-<package>.<namespace>`. A namespace has no dot, so no package's
/// own Instance and no other copy is named the same. The runtime labels
/// what an Instance applies with its name, and a label value holds 63
/// characters: a longer name keeps its start and ends in a hash of the
/// whole (`-` and 10 hex digits), still one name per copy.
pub fn copy_name(set: &str, package: &str, namespace: &str) -> String {
    use sha2::Digest as _;
    const MOST: usize = 63;
    let name = format!("{}.{namespace}", instance_name(set, package));
    if name.len() <= MOST {
        return name;
    }
    let hash = hex::encode(&sha2::Sha256::digest(name.as_bytes())[..5]);
    let start: String = name.chars().take(MOST - hash.len() - 1).collect();
    format!("{}-{hash}", start.trim_end_matches(['-', '.']))
}

/// The child Instance of `entry` in the set whose Instance is `set`: the
/// package's own, or a team's copy.
pub fn child_name(set: &str, entry: &crate::set::resolved_set::Entry) -> String {
    match entry.copy_in() {
        Some(namespace) => copy_name(set, &entry.package_name, namespace),
        None => instance_name(set, &entry.package_name),
    }
}

/// The installed versions (`previous`: package and version) of packages a
/// live Input still asks for by name, so they move along their update
/// graph instead of jumping.
pub fn still_asked(previous: &[(String, Version)], asked: &[Asked]) -> Vec<Installed> {
    let packages: BTreeSet<&str> = asked
        .iter()
        .filter(|a| !a.dry_run)
        .filter_map(|a| match &a.request {
            Ok(Request::Package { package, .. }) => Some(package.as_str()),
            _ => None,
        })
        .collect();
    previous
        .iter()
        .filter(|(package, _)| packages.contains(package.as_str()))
        .map(|(package, version)| Installed::Version {
            package: package.clone(),
            version: version.clone(),
        })
        .collect()
}

/// Resolves `asked` against `universe`, keeping `installed` working where
/// it is still asked for; children are named after the set's Instance `set`.
pub fn plan(universe: &Universe, asked: &[Asked], installed: &[Installed], set: &str) -> Plan {
    let mut answers = BTreeMap::new();
    let mut live: Vec<(&Asked, &Request)> = Vec::new();
    for input in asked {
        match &input.request {
            Err(problem) => {
                answers.insert(input.name.clone(), Answer::Invalid(problem.clone()));
            }
            Ok(_) if let Some(held) = &input.held => {
                answers.insert(input.name.clone(), Answer::Held(held.clone()));
            }
            Ok(_) if input.force => {}
            Ok(request) if !input.dry_run => live.push((input, request)),
            Ok(_) => {}
        }
    }
    // Seniority, then name: the same Inputs give the same answer however
    // they came, and an Input that runs is never displaced by a newcomer.
    live.sort_by(|(a, _), (b, _)| (a.seniority.key(), &a.name).cmp(&(b.seniority.key(), &b.name)));
    let chosen = resolve_live(universe, &mut live, installed, &mut answers);
    let live: Vec<(&str, &Request)> = live
        .into_iter()
        .map(|(input, request)| (input.name.as_str(), request))
        .collect();
    // The set's "needs" edges, once for every Input that resolved into it.
    let needs = needs_in(universe, &chosen);
    for (name, request) in &live {
        answers.insert(
            (*name).to_owned(),
            Answer::Resolved(for_request(&chosen, &needs, request, name, set)),
        );
    }
    // Dry runs: as if each joined the live set.
    let live_requests: Vec<Request> = live.iter().map(|(_, r)| (*r).clone()).collect();
    for input in asked.iter().filter(|input| input.dry_run) {
        let Ok(request) = &input.request else {
            continue;
        };
        let mut requests = live_requests.clone();
        requests.push(request.clone());
        let answer = match resolve(universe, &requests, installed) {
            Outcome::Resolved(resolved) => {
                let needs = needs_in(universe, &resolved.resolved);
                Answer::Resolved(for_request(
                    &resolved.resolved,
                    &needs,
                    request,
                    &input.name,
                    set,
                ))
            }
            Outcome::NoSolution(failed) => unsatisfiable(&failed),
            Outcome::BadInput(message) => Answer::Invalid(message),
        };
        answers.insert(input.name.clone(), answer);
    }
    // Forced Inputs: the best match each, taking its package's place.
    let mut chosen = chosen;
    for input in asked
        .iter()
        .filter(|input| input.force && input.held.is_none())
    {
        let Ok(request) = &input.request else {
            continue;
        };
        let Some(bundle) = crate::inputs::force::best_match(universe, request) else {
            let summary = format!("no bundle matches {request}");
            answers.insert(
                input.name.clone(),
                Answer::Unsatisfiable {
                    explanation: format!(
                        "{summary} in the served catalogs (the class forces: dependencies are not resolved, only a matching bundle is looked for)"
                    ),
                    summary,
                },
            );
            continue;
        };
        let selection = crate::inputs::force::selection(universe, bundle, request);
        let own = [selection.clone()];
        answers.insert(
            input.name.clone(),
            Answer::Resolved(for_request(&own, &[], request, &input.name, set)),
        );
        if !input.dry_run {
            chosen.retain(|s| s.package != selection.package);
            chosen.push(selection);
        }
    }
    displaced_by_force(asked, &mut answers);
    chosen.sort_by(|a, b| a.package.cmp(&b.package));
    Plan {
        answers,
        set: chosen,
    }
}

/// Inputs resolved to a bundle of a package a forced Input took: their
/// answer says so, since the set holds the forced bundle instead.
fn displaced_by_force(asked: &[Asked], answers: &mut BTreeMap<String, Answer>) {
    let forced: Vec<(String, ResolvedInstance)> = asked
        .iter()
        .filter(|input| input.force && !input.dry_run)
        .filter_map(|input| match answers.get(&input.name) {
            Some(Answer::Resolved(instances)) => {
                Some((input.name.clone(), instances.first()?.clone()))
            }
            _ => None,
        })
        .collect();
    for input in asked.iter().filter(|input| !input.force) {
        let Some(Answer::Resolved(instances)) = answers.get(&input.name) else {
            continue;
        };
        let taken = instances.iter().find_map(|instance| {
            forced.iter().find(|(_, chosen)| {
                chosen.package == instance.package && chosen.bundle != instance.bundle
            })
        });
        if let Some((by, chosen)) = taken {
            let summary = format!(
                "{} is forced to {} by Input {by}",
                chosen.package, chosen.version
            );
            answers.insert(
                input.name.clone(),
                Answer::Unsatisfiable {
                    explanation: format!(
                        "{summary}: a forced Input takes its package's place in the set and is not resolved with the others; change one of the two Inputs"
                    ),
                    summary,
                },
            );
        }
    }
}

/// Resolves the live Inputs together; drops from `live` (with an answer)
/// those that fail alone, then those the conflict rule refuses. The set.
fn resolve_live<'a>(
    universe: &Universe,
    live: &mut Vec<(&'a Asked, &'a Request)>,
    installed: &[Installed],
    answers: &mut BTreeMap<String, Answer>,
) -> Vec<Selection> {
    let together = |live: &[(&Asked, &Request)]| {
        let requests: Vec<Request> = live.iter().map(|(_, r)| (*r).clone()).collect();
        resolve(universe, &requests, installed)
    };
    match together(live) {
        Outcome::Resolved(resolved) => return resolved.resolved,
        Outcome::BadInput(_) | Outcome::NoSolution(_) => {}
    }
    // Each alone: who fails on its own?
    live.retain(|(asked, request)| {
        match resolve(universe, std::slice::from_ref(*request), installed) {
            Outcome::Resolved(_) => true,
            Outcome::NoSolution(failed) => {
                answers.insert(asked.name.clone(), unsatisfiable(&failed));
                false
            }
            Outcome::BadInput(message) => {
                answers.insert(asked.name.clone(), Answer::Invalid(message));
                false
            }
        }
    });
    if let Outcome::Resolved(resolved) = together(live) {
        return resolved.resolved;
    }
    // They work alone but not all together.
    let settled = crate::inputs::conflict::settle(std::mem::take(live), |requests| {
        resolve(universe, requests, installed)
    });
    answers.extend(settled.refused);
    *live = settled.accepted;
    settled.set
}

/// A failed resolution as an answer: the engine's one line and its chain.
pub(crate) fn unsatisfiable(failed: &Failed) -> Answer {
    Answer::Unsatisfiable {
        summary: failed.error.message.clone(),
        explanation: failed
            .error
            .explanation
            .as_ref()
            .map(|explanation| pakket_engine::resolve::Explanation::from(explanation).to_string())
            .unwrap_or_else(|| failed.error.message.clone()),
    }
}

/// One "needs" edge of a set: bundle `dependent` needs bundle
/// `dependency`, for `needs` (`package etcd >=0.9.2`).
#[derive(Clone, Debug, PartialEq, Eq)]
struct Need {
    dependent: String,
    dependency: String,
    needs: String,
}

/// Every "needs" edge among `set`'s bundles: the solver's dependency
/// reasons, and the requirements a bundle meets though it is in the set
/// for another reason (another Input asked for it, it was installed).
/// Without the second kind, a dependency some other Input also asks for
/// would stop counting as one, and would be removed with that Input.
fn needs_in(universe: &Universe, set: &[Selection]) -> Vec<Need> {
    let index_of = |selection: &Selection| {
        universe
            .catalog_index(&selection.catalog)
            .and_then(|catalog| universe.bundle_in(catalog, &selection.bundle))
    };
    let indexed: Vec<(&Selection, Option<_>)> = set.iter().map(|s| (s, index_of(s))).collect();
    let mut needs = Vec::new();
    for (dependency, dependency_index) in &indexed {
        for (dependent, dependent_index) in &indexed {
            if dependent.bundle == dependency.bundle {
                continue;
            }
            let found = match &dependency.reason {
                SelectionReason::Dependency { of, needs } if *of == dependent.bundle => {
                    Some(needs.clone())
                }
                _ => match (dependent_index, dependency_index) {
                    (Some(a), Some(b)) => universe.requirement_met(*a, *b),
                    _ => None,
                },
            };
            if let Some(what) = found {
                needs.push(Need {
                    dependent: dependent.bundle.clone(),
                    dependency: dependency.bundle.clone(),
                    needs: what,
                });
            }
        }
    }
    needs
}

/// The selections `request` brought in (its own bundle and, transitively,
/// what that needs), as the Instances that install them.
/// `needs` are the set's edges ([`needs_in`]).
fn for_request(
    set: &[Selection],
    needs: &[Need],
    request: &Request,
    input: &str,
    set_name: &str,
) -> Vec<ResolvedInstance> {
    let asked = request.to_string();
    let mut chosen: Vec<&Selection> = set
        .iter()
        .filter(|s| matches!(&s.reason, SelectionReason::Requested { request, .. } if *request == asked))
        .collect();
    // A bundle another Input asked for too is recorded with that Input's
    // request: found by what this one names.
    if chosen.is_empty() {
        chosen = set
            .iter()
            .filter(|s| match request {
                Request::Package { package, .. } => s.package == *package,
                Request::BundleName(name) => s.bundle == *name,
                Request::Gvk(_) | Request::Label(_) => false,
            })
            .collect();
    }
    let own = chosen.len();
    // Follow "needs" edges down from the requested bundle.
    let mut i = 0;
    while i < chosen.len() {
        let bundle = chosen[i].bundle.clone();
        for need in needs.iter().filter(|need| need.dependent == bundle) {
            if !chosen.iter().any(|c| c.bundle == need.dependency)
                && let Some(dependency) = set.iter().find(|s| s.bundle == need.dependency)
            {
                chosen.push(dependency);
            }
        }
        i += 1;
    }
    chosen
        .iter()
        .enumerate()
        .map(|(i, selection)| instance_of(selection, set, needs, &asked, input, i < own, set_name))
        .collect()
}

/// `own`: the bundle the Input asked for (else one it needs).
fn instance_of(
    selection: &Selection,
    set: &[Selection],
    needs: &[Need],
    asked: &str,
    input: &str,
    own: bool,
    set_name: &str,
) -> ResolvedInstance {
    let child_of = |bundle: &str| {
        set.iter()
            .find(|s| s.bundle == bundle)
            .map(|s| instance_name(set_name, &s.package))
            .unwrap_or_else(|| bundle.to_owned())
    };
    let satisfies = if own {
        vec![Relation {
            kind: "Input".into(),
            name: input.to_owned(),
            meets: vec![asked.to_owned()],
        }]
    } else {
        // Every bundle in the set that needs it, the same way round as
        // below.
        let mut by: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for need in needs.iter().filter(|n| n.dependency == selection.bundle) {
            by.entry(child_of(&need.dependent))
                .or_default()
                .push(need.needs.clone());
        }
        by.into_iter()
            .map(|(name, meets)| Relation {
                kind: "Instance".into(),
                name,
                meets,
            })
            .collect()
    };
    // What this bundle needs.
    let mut dependencies: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for need in needs.iter().filter(|n| n.dependent == selection.bundle) {
        dependencies
            .entry(child_of(&need.dependency))
            .or_default()
            .push(need.needs.clone());
    }
    ResolvedInstance {
        name: instance_name(set_name, &selection.package),
        package: selection.package.clone(),
        version: selection.version.clone(),
        bundle: selection.bundle.clone(),
        catalog: selection.catalog.clone(),
        channel: selection.channel.clone(),
        deprecated: selection.deprecated.clone(),
        satisfies,
        dependencies: dependencies
            .into_iter()
            .map(|(name, meets)| Relation {
                kind: "Instance".into(),
                name,
                meets,
            })
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pakket_engine::catalog::{Catalog, CatalogSet, Format};

    #[test]
    fn a_copys_name_fits_a_label_value_and_stays_one_per_namespace() {
        assert_eq!(
            copy_name("resolveset", "etcd", "team-b"),
            "resolveset-etcd.team-b"
        );
        let long =
            |namespace: &str| copy_name("a-long-set-name-for-a-test-scope", "etcd", namespace);
        let (b, c) = (
            long("a-long-team-namespace-b"),
            long("a-long-team-namespace-c"),
        );
        assert!(b.len() <= 63 && c.len() <= 63, "{b} {c}");
        assert_ne!(b, c);
        assert_eq!(b, long("a-long-team-namespace-b"), "the same every time");
        assert!(
            b.starts_with("a-long-set-name-for-a-test-scope-etcd."),
            "{b}"
        );
    }

    /// `app` 1.0.0 and 2.0.0 need `dep` >=1.0.0; `dep` 0.5.0 and 1.0.0;
    /// `legacy` needs `dep` <1.0.0, so it and `app` conflict only through
    /// what they need; `lonely` needs `missing`, which no catalog has.
    const CATALOG: &str = r#"
{"schema":"olm.package","name":"app","defaultChannel":"stable"}
{"schema":"olm.channel","package":"app","name":"stable","entries":[{"name":"app.v1.0.0"},{"name":"app.v2.0.0","replaces":"app.v1.0.0"}]}
{"schema":"olm.bundle","name":"app.v1.0.0","package":"app","image":"r/app:1","properties":[{"type":"olm.package","value":{"packageName":"app","version":"1.0.0"}},{"type":"olm.package.required","value":{"packageName":"dep","versionRange":">=1.0.0"}}]}
{"schema":"olm.bundle","name":"app.v2.0.0","package":"app","image":"r/app:2","properties":[{"type":"olm.package","value":{"packageName":"app","version":"2.0.0"}},{"type":"olm.package.required","value":{"packageName":"dep","versionRange":">=1.0.0"}}]}
{"schema":"olm.package","name":"dep","defaultChannel":"stable"}
{"schema":"olm.channel","package":"dep","name":"stable","entries":[{"name":"dep.v0.5.0"},{"name":"dep.v1.0.0","replaces":"dep.v0.5.0"}]}
{"schema":"olm.bundle","name":"dep.v0.5.0","package":"dep","image":"r/dep:0","properties":[{"type":"olm.package","value":{"packageName":"dep","version":"0.5.0"}}]}
{"schema":"olm.bundle","name":"dep.v1.0.0","package":"dep","image":"r/dep:1","properties":[{"type":"olm.package","value":{"packageName":"dep","version":"1.0.0"}}]}
{"schema":"olm.package","name":"legacy","defaultChannel":"stable"}
{"schema":"olm.channel","package":"legacy","name":"stable","entries":[{"name":"legacy.v1.0.0"}]}
{"schema":"olm.bundle","name":"legacy.v1.0.0","package":"legacy","image":"r/legacy:1","properties":[{"type":"olm.package","value":{"packageName":"legacy","version":"1.0.0"}},{"type":"olm.package.required","value":{"packageName":"dep","versionRange":"<1.0.0"}}]}
{"schema":"olm.package","name":"lonely","defaultChannel":"stable"}
{"schema":"olm.channel","package":"lonely","name":"stable","entries":[{"name":"lonely.v1.0.0"}]}
{"schema":"olm.bundle","name":"lonely.v1.0.0","package":"lonely","image":"r/lonely:1","properties":[{"type":"olm.package","value":{"packageName":"lonely","version":"1.0.0"}},{"type":"olm.package.required","value":{"packageName":"missing","versionRange":">=1.0.0"}}]}
"#;

    fn universe() -> Universe {
        let catalog = Catalog::from_str(CATALOG, "c.json", Format::Json, "c", 0).unwrap();
        Universe::from_catalogs(&CatalogSet::new(vec![catalog]))
    }

    fn asked(name: &str, cli: &str, dry_run: bool) -> Asked {
        Asked {
            name: name.into(),
            request: Ok(Request::parse_cli(cli).unwrap()),
            dry_run,
            force: false,
            filters: Default::default(),
            seniority: Default::default(),
            uid: String::new(),
            chosen_over: Default::default(),
            held: None,
        }
    }

    #[test]
    fn a_forced_input_gets_its_best_match_and_nothing_it_needs() {
        // `lonely` needs `missing`: resolved, it fails; forced, it is
        // installed alone and its provisioner will say what is missing.
        let forced = Asked {
            force: true,
            ..asked("f", "lonely", false)
        };
        let alone = plan(&universe(), &[forced], &[], "rs");
        let Answer::Resolved(instances) = &alone.answers["f"] else {
            panic!("{:?}", alone.answers["f"]);
        };
        assert_eq!(instances.len(), 1, "no dependency: {instances:?}");
        assert_eq!(instances[0].bundle, "lonely.v1.0.0");
        let packages: Vec<&str> = alone.set.iter().map(|s| s.package.as_str()).collect();
        assert_eq!(packages, ["lonely"]);
        // `app` forced takes 2.0.0 and leaves `dep` out; beside a resolved
        // Input for `app` 1.0.0, the forced choice takes the package's place.
        let pinned = asked("a", "app=1.0.0", false);
        let forced = Asked {
            force: true,
            ..asked("b", "app", false)
        };
        let both = plan(&universe(), &[pinned, forced], &[], "rs");
        let chosen: Vec<(&str, &str)> = both
            .set
            .iter()
            .map(|s| (s.package.as_str(), s.version.as_str()))
            .collect();
        assert_eq!(chosen, [("app", "2.0.0"), ("dep", "1.0.0")]);
        assert!(
            matches!(&both.answers["a"], Answer::Unsatisfiable { summary, .. } if summary == "app is forced to 2.0.0 by Input b"),
            "{:?}",
            both.answers["a"]
        );
        // Nothing matches: said so.
        let nothing = Asked {
            force: true,
            ..asked("n", "nosuch", false)
        };
        let none = plan(&universe(), &[nothing], &[], "rs");
        assert!(
            matches!(&none.answers["n"], Answer::Unsatisfiable { summary, .. } if summary.contains("no bundle matches"))
        );
    }

    #[test]
    fn an_input_gets_its_bundle_and_dependencies_with_what_each_meets() {
        let plan = plan(&universe(), &[asked("a", "app", false)], &[], "rs");
        let Answer::Resolved(instances) = &plan.answers["a"] else {
            panic!("{:?}", plan.answers)
        };
        let names: Vec<(&str, &str)> = instances
            .iter()
            .map(|i| (i.name.as_str(), i.bundle.as_str()))
            .collect();
        assert_eq!(names, [("rs-app", "app.v2.0.0"), ("rs-dep", "dep.v1.0.0")]);
        assert_eq!(
            (
                instances[0].satisfies[0].kind.as_str(),
                instances[0].satisfies[0].name.as_str()
            ),
            ("Input", "a")
        );
        assert_eq!(instances[0].dependencies[0].name, "rs-dep");
        assert!(instances[0].dependencies[0].meets[0].contains("dep"));
        assert_eq!(instances[1].satisfies[0].name, "rs-app");
        assert_eq!(plan.set.len(), 2);
    }

    #[test]
    fn an_unsatisfiable_input_does_not_block_the_others_and_says_why() {
        let plan = plan(
            &universe(),
            &[asked("a", "app", false), asked("l", "lonely", false)],
            &[],
            "rs",
        );
        assert!(matches!(plan.answers["a"], Answer::Resolved(_)));
        let Answer::Unsatisfiable { explanation, .. } = &plan.answers["l"] else {
            panic!("{:?}", plan.answers["l"])
        };
        assert!(explanation.contains("missing"), "{explanation}");
        let packages: Vec<&str> = plan.set.iter().map(|s| s.package.as_str()).collect();
        assert_eq!(packages, ["app", "dep"], "the set holds what resolved");
    }

    #[test]
    fn a_dry_run_plans_without_joining_the_set_and_the_same_inputs_give_the_same_plan() {
        let inputs = [asked("a", "app=1.0.0", false), asked("d", "app", true)];
        let first = plan(&universe(), &inputs, &[], "rs");
        let packages: Vec<(&str, &str)> = first
            .set
            .iter()
            .map(|s| (s.package.as_str(), s.version.as_str()))
            .collect();
        assert_eq!(packages, [("app", "1.0.0"), ("dep", "1.0.0")]);
        // app=1.0.0 and app (any) together: the pinned one holds.
        let Answer::Resolved(planned) = &first.answers["d"] else {
            panic!("{:?}", first.answers["d"])
        };
        assert_eq!(planned[0].version, "1.0.0");
        let again = plan(&universe(), &inputs, &[], "rs");
        assert_eq!(first.answers, again.answers);
        assert_eq!(first.set, again.set);
    }

    fn aged(name: &str, cli: &str, installed: bool, created: i64) -> Asked {
        Asked {
            seniority: Seniority {
                not_installed: !installed,
                created: Some(created),
            },
            ..asked(name, cli, false)
        }
    }

    fn app_version(plan: &Plan) -> &str {
        let app = plan.set.iter().find(|s| s.package == "app").unwrap();
        app.version.as_str()
    }

    fn conflict(plan: &Plan, name: &str) -> crate::inputs::conflict::Conflict {
        match &plan.answers[name] {
            Answer::Conflict(conflict) => conflict.clone(),
            other => panic!("{name}: {other:?}"),
        }
    }

    fn waiting(with: &[&str]) -> crate::inputs::conflict::Conflict {
        crate::inputs::conflict::Conflict {
            with: with.iter().map(|w| (*w).to_owned()).collect(),
            standing: crate::inputs::conflict::Standing::Waiting,
        }
    }

    #[test]
    fn new_inputs_that_conflict_all_wait_whatever_their_writers_name_or_time_them() {
        // Neither is installed: whichever name sorts first, whichever was
        // written first, neither vetoes the other; an Input beside them
        // that conflicts with nobody installs.
        for (first, second) in [(100, 200), (200, 100), (100, 100)] {
            for (one, two) in [("a", "b"), ("b", "a")] {
                let plan = plan(
                    &universe(),
                    &[
                        aged(one, "app=2.0.0", false, first),
                        aged(two, "app=1.0.0", false, second),
                        aged("d", "dep", false, 50),
                    ],
                    &[],
                    "rs",
                );
                assert_eq!(conflict(&plan, one), waiting(&[two]));
                assert_eq!(conflict(&plan, two), waiting(&[one]));
                assert!(matches!(plan.answers["d"], Answer::Resolved(_)));
                let packages: Vec<&str> = plan.set.iter().map(|s| s.package.as_str()).collect();
                assert_eq!(packages, ["dep"], "nothing of app is chosen");
            }
        }
    }

    #[test]
    fn a_conflict_through_dependencies_counts_as_the_requests_that_bring_them() {
        let plan = plan(
            &universe(),
            &[aged("a", "app", false, 1), aged("l", "legacy", false, 2)],
            &[],
            "rs",
        );
        assert_eq!(conflict(&plan, "a"), waiting(&["l"]));
        assert_eq!(conflict(&plan, "l"), waiting(&["a"]));
        assert!(plan.set.is_empty(), "{:?}", plan.set);
    }

    #[test]
    fn an_installed_input_keeps_its_place_and_the_new_one_is_told_it_conflicts_with_it() {
        // "z" runs (its bundles are in the set); "a", older and first by
        // name, is new: it may not displace what runs.
        let inputs = [
            aged("a", "app=2.0.0", false, 100),
            aged("z", "app=1.0.0", true, 300),
        ];
        let plan = plan(&universe(), &inputs, &[], "rs");
        assert!(matches!(plan.answers["z"], Answer::Resolved(_)));
        assert_eq!(
            conflict(&plan, "a"),
            crate::inputs::conflict::Conflict {
                with: vec!["z".into()],
                standing: crate::inputs::conflict::Standing::Installed,
            }
        );
        assert_eq!(app_version(&plan), "1.0.0");
    }

    fn chosen(mut asked: Asked, over: &[&str]) -> Asked {
        asked.chosen_over = over.iter().map(|uid| format!("uid-{uid}")).collect();
        asked
    }

    fn with_uid(mut asked: Asked) -> Asked {
        asked.uid = format!("uid-{}", asked.name);
        asked
    }

    #[test]
    fn a_persons_choice_settles_exactly_the_conflict_it_names() {
        let a = || with_uid(aged("a", "app=1.0.0", false, 100));
        let b = || with_uid(aged("b", "app=2.0.0", false, 200));
        let c = || with_uid(aged("c", "app=1.0.0", false, 300));
        // Chosen over a: b installs, a is told another was chosen.
        let plan1 = plan(&universe(), &[a(), chosen(b(), &["a"])], &[], "rs");
        assert!(matches!(plan1.answers["b"], Answer::Resolved(_)));
        assert_eq!(
            conflict(&plan1, "a"),
            crate::inputs::conflict::Conflict {
                with: vec!["b".into()],
                standing: crate::inputs::conflict::Standing::NotChosen,
            }
        );
        assert_eq!(app_version(&plan1), "2.0.0");
        // A request that came later is not covered: b and c wait again.
        let plan2 = plan(&universe(), &[a(), chosen(b(), &["a"]), c()], &[], "rs");
        assert_eq!(conflict(&plan2, "b"), waiting(&["c"]));
        assert_eq!(conflict(&plan2, "c"), waiting(&["b"]));
        assert_eq!(
            conflict(&plan2, "a").standing,
            crate::inputs::conflict::Standing::NotChosen
        );
        assert!(plan2.set.iter().all(|s| s.package != "app"));
        // Two choices that contradict each other settle nothing.
        let plan3 = plan(
            &universe(),
            &[chosen(a(), &["b"]), chosen(b(), &["a"])],
            &[],
            "rs",
        );
        assert_eq!(conflict(&plan3, "a"), waiting(&["b"]));
        assert_eq!(conflict(&plan3, "b"), waiting(&["a"]));
        // A choice naming an Input it does not conflict with changes nothing.
        let plan4 = plan(
            &universe(),
            &[chosen(with_uid(aged("d", "dep", false, 1)), &["a"]), a()],
            &[],
            "rs",
        );
        assert!(matches!(plan4.answers["a"], Answer::Resolved(_)));
        assert!(matches!(plan4.answers["d"], Answer::Resolved(_)));
    }

    #[test]
    fn conflict_words_name_no_other_request_and_say_what_settles_it() {
        use crate::inputs::conflict::{Conflict, Standing, in_words};
        for (standing, reason, settles) in [
            (
                Standing::Installed,
                "ConflictsWithInstalled",
                "keeps running",
            ),
            (
                Standing::Waiting,
                "ConflictWaitsForDecision",
                "kubectl instance decide",
            ),
            (
                Standing::NotChosen,
                "AnotherRequestChosen",
                "chose the other",
            ),
        ] {
            let conflict = Conflict {
                with: vec!["secret-team-db".into()],
                standing,
            };
            let (got, words) = in_words(&conflict, "mine");
            assert_eq!(got.as_str(), reason);
            assert!(words.contains(settles), "{words}");
            assert!(words.contains("1 other request"), "{words}");
            assert!(words.contains("kubectl instance why input/mine"), "{words}");
            assert!(!words.contains("secret-team-db"), "{words}");
        }
    }

    #[test]
    fn an_invalid_input_is_answered_with_its_problem() {
        let bad = Asked {
            name: "x".into(),
            request: Err("spec.constraints[0].value.package: is required".into()),
            dry_run: false,
            force: false,
            filters: Default::default(),
            seniority: Default::default(),
            uid: String::new(),
            chosen_over: Default::default(),
            held: None,
        };
        let plan = plan(&universe(), &[bad, asked("a", "dep", false)], &[], "rs");
        assert_eq!(
            plan.answers["x"],
            Answer::Invalid("spec.constraints[0].value.package: is required".into())
        );
        assert!(matches!(plan.answers["a"], Answer::Resolved(_)));
    }
}
