//! One owner per package. The set installs each package once, for one
//! Input, as OLM installs a package for one ClusterExtension. Among the
//! Inputs (Operators) that ask for a package by name:
//!
//! 1. One that has it installed owns it. Every other is refused, naming
//!    the owner ([`Refusal::OwnedBy`]): it installs nothing, steers
//!    nothing (it is left out of the resolution), and is never told it
//!    has what the owner installed.
//! 2. Between Inputs of which none has it installed, nothing a writer
//!    picks (a name, when it was written) decides: all wait until a person
//!    chooses one ([`Refusal::Waiting`]), with the same decision that
//!    settles conflicting requests ([`crate::inputs::conflict`]); the
//!    chosen one owns the package and the others are told a person chose
//!    another ([`Refusal::NotChosen`]). An Input alone with its package
//!    owns it.
//!
//! The owner's `spec.config` is the package's; a refused Input whose
//! config differs is also told its config is not applied. Should the
//! owner go, the next Input takes the package by the same rule.
//! Dependencies carry no config and nobody asks for them by name: nobody
//! owns them.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Map, Value};

/// One Input's direct request for a package, with its config.
#[derive(Clone, Debug)]
pub struct Claim<'a> {
    /// The Input.
    pub input: &'a str,
    /// Its UID, which a person's decision names.
    pub uid: &'a str,
    /// The package it asks for by name.
    pub package: &'a str,
    /// Its `spec.config`.
    pub config: Option<&'a Map<String, Value>>,
    /// Whether it has the package installed (its seniority).
    pub installed: bool,
    /// The UIDs of the Inputs a person chose it over.
    pub chosen_over: &'a BTreeSet<String>,
}

/// Why an Input does not get the package it asks for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Refusal {
    /// Another Input has it installed: the package and that Input.
    OwnedBy {
        /// The package.
        package: String,
        /// The Input that owns it.
        owner: String,
    },
    /// Other Inputs that have not installed it either ask for it: all
    /// wait for a person to choose.
    Waiting {
        /// The other Inputs.
        with: Vec<String>,
    },
    /// A person chose another Input for the package.
    NotChosen {
        /// The chosen Input.
        chosen: String,
    },
}

/// Who owns each package, who runs a copy of it, and who was refused.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Owners {
    /// By package: the owning Input and its config.
    pub configs: BTreeMap<String, (String, Option<Map<String, Value>>)>,
    /// By Input: the package it asks for and the Input that owns it with
    /// another config (its config is not applied).
    pub conflicts: BTreeMap<String, (String, String)>,
    /// By Input: why it does not get its package.
    pub refused: BTreeMap<String, Refusal>,
    /// By Input: the package it gets a copy of, in the namespace it is
    /// asked from ([`TeamCopy`]).
    pub copies: BTreeMap<String, TeamCopy>,
    /// Packages whose own entry keeps the CRDs alone: the Input it was
    /// installed for is gone, copies still use them.
    pub crds_only: BTreeSet<String>,
}

/// A team's own copy of a package's operator: it runs in and watches the
/// one namespace its Input asks from, with its own config, and uses the
/// CRDs the package's own entry installs (at the one version the set
/// resolves for the package).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TeamCopy {
    /// The package.
    pub package: String,
    /// Where it runs and what it watches.
    pub namespace: String,
}

/// What the set installs now for a package.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Installed {
    /// Its own entry.
    pub main: Main,
    /// The namespaces of its copies.
    pub copies: BTreeSet<String>,
}

/// What the set installs now as a package's own entry (not a copy).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Main {
    /// The operator with its CRDs, for the Input asking from this
    /// namespace (`None`: an Input that is not one namespace's).
    Whole(Option<String>),
    /// The CRDs alone, kept for copies.
    CrdsOnly,
}

impl Main {
    /// What an entry's config says it installs.
    pub fn of(config: Option<&Map<String, Value>>) -> Self {
        match config.and_then(|config| config.get("crds")) {
            Some(Value::String(crds)) if crds == "Only" => Self::CrdsOnly,
            _ => Self::Whole(home(config).map(str::to_owned)),
        }
    }
}

/// The one namespace a config installs into and watches, when it asks
/// for exactly that (`installNamespace` the only `watchNamespaces`, as an
/// OperatorRequest writes): there a copy can run without touching another
/// team's namespace.
pub fn home(config: Option<&Map<String, Value>>) -> Option<&str> {
    let config = config?;
    let install = config.get("installNamespace")?.as_str()?;
    match config.get("watchNamespaces")?.as_array()?.as_slice() {
        [only] if only.as_str() == Some(install) => Some(install),
        _ => None,
    }
}

/// Owners of the packages `claims` ask for; `claims` in seniority order,
/// the senior first (installed ones before new ones); `installed`, by
/// package, what the set installs now.
///
/// Copies: when the owner is one namespace's, every other claim that is
/// one namespace's, another one, gets a copy ([`TeamCopy`]) instead of a
/// refusal; among new claims that are all of distinct namespaces nobody
/// needs to choose (each gets its own), so the senior owns the package.
/// When the owner of a package with copies goes, its entry keeps the CRDs
/// alone ([`Main::CrdsOnly`]) and the copies run on.
pub fn owners(claims: &[Claim<'_>], installed: &BTreeMap<String, Installed>) -> Owners {
    let mut by_package: BTreeMap<&str, Vec<&Claim<'_>>> = BTreeMap::new();
    for claim in claims {
        by_package.entry(claim.package).or_default().push(claim);
    }
    let mut owners = Owners::default();
    for (package, claims) in by_package {
        let now = installed.get(package);
        let main = now.map(|now| &now.main);
        let kept_for_copies = match now {
            Some(Installed {
                main: Main::CrdsOnly,
                ..
            }) => true,
            // Its owner went while copies still run.
            Some(Installed {
                main: Main::Whole(Some(namespace)),
                copies,
            }) => {
                !claims.iter().any(|c| c.home() == Some(namespace.as_str()))
                    && claims
                        .iter()
                        .any(|c| c.home().is_some_and(|home| copies.contains(home)))
            }
            _ => false,
        };
        if kept_for_copies {
            owners.crds_only.insert(package.to_owned());
            share(package, None, &claims, &mut owners);
            continue;
        }
        let owner = match main {
            // The Input asking from the namespace the entry was installed
            // in keeps it, whatever the copies' seniority.
            Some(Main::Whole(Some(namespace))) => claims
                .iter()
                .copied()
                .find(|c| c.home() == Some(namespace.as_str())),
            _ => None,
        }
        .or_else(|| owner_of(&claims))
        .or_else(|| all_apart(&claims).then(|| claims[0]));
        let Some(owner) = owner else {
            for claim in &claims {
                let with = claims
                    .iter()
                    .filter(|other| other.input != claim.input)
                    .map(|other| other.input.to_owned())
                    .collect();
                owners
                    .refused
                    .insert(claim.input.to_owned(), Refusal::Waiting { with });
            }
            continue;
        };
        let owned = owner.given_config();
        let others: Vec<&Claim<'_>> = claims
            .iter()
            .copied()
            .filter(|claim| claim.input != owner.input)
            .collect();
        let refused = match owner.home() {
            Some(_) => share(package, Some(owner), &others, &mut owners),
            None => others,
        };
        for claim in refused {
            let refusal = if owner.installed {
                Refusal::OwnedBy {
                    package: package.to_owned(),
                    owner: owner.input.to_owned(),
                }
            } else {
                Refusal::NotChosen {
                    chosen: owner.input.to_owned(),
                }
            };
            owners.refused.insert(claim.input.to_owned(), refusal);
            if claim.given_config() != owned {
                owners.conflicts.insert(
                    claim.input.to_owned(),
                    (package.to_owned(), owner.input.to_owned()),
                );
            }
        }
        owners
            .configs
            .insert(package.to_owned(), (owner.input.to_owned(), owned));
    }
    owners
}

/// Gives each of `claims` that is one namespace's, a namespace neither
/// `owner` nor a senior copy has, a copy of `package`; returns the rest.
/// With no owner (the CRDs kept alone), the rest are refused here, naming
/// the senior copy.
fn share<'c, 'a>(
    package: &str,
    owner: Option<&Claim<'a>>,
    claims: &[&'c Claim<'a>],
    owners: &mut Owners,
) -> Vec<&'c Claim<'a>> {
    let mut taken: BTreeSet<&str> = owner.and_then(Claim::home).into_iter().collect();
    let mut rest = Vec::new();
    let mut senior_copy = None;
    for claim in claims {
        match claim.home() {
            Some(namespace) if taken.insert(namespace) => {
                senior_copy.get_or_insert(claim.input);
                owners.copies.insert(
                    claim.input.to_owned(),
                    TeamCopy {
                        package: package.to_owned(),
                        namespace: namespace.to_owned(),
                    },
                );
            }
            _ => rest.push(*claim),
        }
    }
    if owner.is_none() {
        for claim in rest.drain(..) {
            let owner = senior_copy.unwrap_or_default().to_owned();
            owners.refused.insert(
                claim.input.to_owned(),
                Refusal::OwnedBy {
                    package: package.to_owned(),
                    owner,
                },
            );
        }
    }
    rest
}

/// Whether every claim is one namespace's, each another namespace: then
/// each can have its own, and nobody needs to choose between them.
fn all_apart(claims: &[&Claim<'_>]) -> bool {
    let mut seen = BTreeSet::new();
    claims
        .iter()
        .all(|claim| claim.home().is_some_and(|namespace| seen.insert(namespace)))
}

impl Claim<'_> {
    fn home(&self) -> Option<&str> {
        home(self.config)
    }

    /// Its config, an empty one being none.
    fn given_config(&self) -> Option<Map<String, Value>> {
        self.config.filter(|config| !config.is_empty()).cloned()
    }
}

/// The owner among one package's claims: the senior if it has the
/// package installed or is alone, else the one a person chose over all
/// the others; none while they wait for that choice.
fn owner_of<'c, 'a>(claims: &[&'c Claim<'a>]) -> Option<&'c Claim<'a>> {
    let senior = claims.first()?;
    if senior.installed || claims.len() == 1 {
        return Some(senior);
    }
    claims.iter().copied().find(|claim| {
        claims
            .iter()
            .filter(|other| other.input != claim.input)
            .all(|other| claim.chosen_over.contains(other.uid))
    })
}

/// The words for an Input refused because `owner` has `package`.
pub fn refusal_words(package: &str, owner: &str) -> String {
    format!(
        "package {package} is installed for Input {owner} (or its Operator of that name), which has it; one Input installs a package, so this one installs nothing and its version and config are not applied. Delete this Input (or its Operator), or the one that owns the package, and this one takes it"
    )
}

/// The words for an Input refused as `(package, owner)`.
pub fn conflict_words(package: &str, owner: &str) -> String {
    format!(
        "package {package} is installed for Input {owner}, which asked for it first, with another spec.config; this Input's config is not applied. Give both Inputs the same config, or delete one of them"
    )
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn config(value: Value) -> Map<String, Value> {
        value.as_object().unwrap().clone()
    }

    fn claim<'a>(
        input: &'a str,
        package: &'a str,
        config: Option<&'a Map<String, Value>>,
        installed: bool,
        chosen_over: &'a BTreeSet<String>,
    ) -> Claim<'a> {
        Claim {
            input,
            uid: input,
            package,
            config,
            installed,
            chosen_over,
        }
    }

    #[test]
    fn the_input_that_has_a_package_owns_it_and_every_other_is_refused_naming_it() {
        let team = config(json!({"installNamespace": "team"}));
        let other = config(json!({"installNamespace": "other"}));
        let empty = Map::new();
        let none = BTreeSet::new();
        let claims = [
            claim("first", "etcd", Some(&team), true, &none),
            claim("same", "etcd", Some(&team), false, &none),
            claim("late", "etcd", Some(&other), false, &none),
            claim("plain", "redis", None, false, &none),
        ];
        let owners = owners(&claims, &BTreeMap::new());
        assert_eq!(
            owners.configs["etcd"],
            ("first".to_owned(), Some(team.clone()))
        );
        assert_eq!(
            owners.configs["redis"],
            ("plain".to_owned(), None),
            "alone, it owns it"
        );
        let owned_by_first = |package: &str| Refusal::OwnedBy {
            package: package.into(),
            owner: "first".into(),
        };
        // The same config shares nothing: one owner per package.
        assert_eq!(owners.refused.len(), 2, "{owners:?}");
        assert_eq!(owners.refused["same"], owned_by_first("etcd"));
        assert_eq!(owners.refused["late"], owned_by_first("etcd"));
        // Only a different config is also a config conflict; an empty
        // config is no config.
        assert_eq!(owners.conflicts.len(), 1);
        assert_eq!(
            owners.conflicts["late"],
            ("etcd".to_owned(), "first".to_owned())
        );
        let with_empty = [
            claim("plain", "redis", None, true, &none),
            claim("empty", "redis", Some(&empty), false, &none),
        ];
        assert!(
            super::owners(&with_empty, &BTreeMap::new())
                .conflicts
                .is_empty()
        );
        assert!(refusal_words("etcd", "first").contains("Input first"));
    }

    #[test]
    fn new_inputs_for_one_package_all_wait_until_a_person_chooses_whatever_their_order() {
        let none = BTreeSet::new();
        let waiting = owners(
            &[
                claim("alice", "etcd", None, false, &none),
                claim("bob", "etcd", None, false, &none),
            ],
            &BTreeMap::new(),
        );
        assert!(waiting.configs.is_empty(), "nobody owns it yet");
        assert_eq!(
            waiting.refused["alice"],
            Refusal::Waiting {
                with: vec!["bob".into()]
            }
        );
        assert_eq!(
            waiting.refused["bob"],
            Refusal::Waiting {
                with: vec!["alice".into()]
            }
        );
        // The same two written the other way round: the same answer.
        let swapped = owners(
            &[
                claim("bob", "etcd", None, false, &none),
                claim("alice", "etcd", None, false, &none),
            ],
            &BTreeMap::new(),
        );
        assert_eq!(swapped.refused, waiting.refused);

        // A person chose bob over alice: bob owns it, alice is told.
        let over_alice = BTreeSet::from(["alice".to_owned()]);
        let chosen = owners(
            &[
                claim("alice", "etcd", None, false, &none),
                claim("bob", "etcd", None, false, &over_alice),
            ],
            &BTreeMap::new(),
        );
        assert_eq!(chosen.configs["etcd"].0, "bob");
        assert_eq!(chosen.refused.len(), 1);
        assert_eq!(
            chosen.refused["alice"],
            Refusal::NotChosen {
                chosen: "bob".into()
            }
        );
        // A choice over only some of the others settles nothing.
        let three = owners(
            &[
                claim("alice", "etcd", None, false, &none),
                claim("bob", "etcd", None, false, &over_alice),
                claim("carol", "etcd", None, false, &none),
            ],
            &BTreeMap::new(),
        );
        assert_eq!(three.refused.len(), 3);
    }

    fn homed(namespace: &str) -> Map<String, Value> {
        config(json!({"installNamespace": namespace, "watchNamespaces": [namespace]}))
    }

    fn installed(main: Main, copies: &[&str]) -> BTreeMap<String, Installed> {
        let copies = copies.iter().map(|c| (*c).to_owned()).collect();
        BTreeMap::from([("etcd".to_owned(), Installed { main, copies })])
    }

    fn copy(namespace: &str) -> TeamCopy {
        TeamCopy {
            package: "etcd".into(),
            namespace: namespace.into(),
        }
    }

    #[test]
    fn each_namespace_gets_its_own_copy_and_only_a_namespace_taken_or_a_cluster_wide_claim_is_refused()
     {
        let none = BTreeSet::new();
        let (a, b) = (homed("team-a"), homed("team-b"));
        let wide = config(json!({"installNamespace": "ops"}));
        let owners = owners(
            &[
                claim("alice", "etcd", Some(&a), true, &none),
                claim("bob", "etcd", Some(&b), false, &none),
                claim("dave", "etcd", Some(&a), false, &none),
                claim("ops", "etcd", Some(&wide), false, &none),
            ],
            &installed(Main::Whole(Some("team-a".into())), &[]),
        );
        assert_eq!(
            owners.configs["etcd"],
            ("alice".to_owned(), Some(a.clone()))
        );
        assert_eq!(
            owners.copies,
            BTreeMap::from([("bob".to_owned(), copy("team-b"))])
        );
        let by_alice = Refusal::OwnedBy {
            package: "etcd".into(),
            owner: "alice".into(),
        };
        assert_eq!(owners.refused["dave"], by_alice, "team-a has its operator");
        assert_eq!(
            owners.refused["ops"], by_alice,
            "it would watch team-b's too"
        );
        assert!(
            !owners.conflicts.contains_key("bob"),
            "a copy has its own config"
        );
        assert!(owners.crds_only.is_empty());

        // An owner that watches more than its namespace shares nothing.
        let wide_owner = super::owners(
            &[
                claim("ops", "etcd", Some(&wide), true, &none),
                claim("bob", "etcd", Some(&b), false, &none),
            ],
            &BTreeMap::new(),
        );
        assert!(wide_owner.copies.is_empty());
        assert!(matches!(wide_owner.refused["bob"], Refusal::OwnedBy { .. }));
    }

    #[test]
    fn new_claims_from_distinct_namespaces_need_no_choice_and_the_installed_namespace_keeps_the_crds()
     {
        let none = BTreeSet::new();
        let (a, b) = (homed("team-a"), homed("team-b"));
        let fresh = owners(
            &[
                claim("alice", "etcd", Some(&a), false, &none),
                claim("bob", "etcd", Some(&b), false, &none),
            ],
            &BTreeMap::new(),
        );
        assert!(fresh.refused.is_empty(), "{fresh:?}");
        assert_eq!(fresh.configs["etcd"].0, "alice");
        assert_eq!(fresh.copies["bob"], copy("team-b"));

        // Installed in team-a: alice keeps the package's own entry even
        // when bob's copy sorts first.
        let kept = owners(
            &[
                claim("bob", "etcd", Some(&b), true, &none),
                claim("alice", "etcd", Some(&a), true, &none),
            ],
            &installed(Main::Whole(Some("team-a".into())), &["team-b"]),
        );
        assert_eq!(kept.configs["etcd"].0, "alice");
        assert_eq!(kept.copies["bob"], copy("team-b"));
    }

    #[test]
    fn when_the_owner_goes_its_entry_keeps_the_crds_for_the_copies_until_none_is_left() {
        let none = BTreeSet::new();
        let (b, c) = (homed("team-b"), homed("team-c"));
        let wide = config(json!({"installNamespace": "ops"}));
        let gone = owners(
            &[claim("bob", "etcd", Some(&b), true, &none)],
            &installed(Main::Whole(Some("team-a".into())), &["team-b"]),
        );
        assert_eq!(gone.crds_only, BTreeSet::from(["etcd".to_owned()]));
        assert!(gone.configs.is_empty(), "nobody owns the CRDs kept alone");
        assert_eq!(gone.copies["bob"], copy("team-b"));

        // Kept alone: every new namespace gets a copy, a cluster-wide
        // claim is refused naming the senior copy.
        let later = owners(
            &[
                claim("bob", "etcd", Some(&b), true, &none),
                claim("carol", "etcd", Some(&c), false, &none),
                claim("ops", "etcd", Some(&wide), false, &none),
            ],
            &installed(Main::CrdsOnly, &["team-b"]),
        );
        assert_eq!(later.crds_only.len(), 1);
        assert_eq!(later.copies.len(), 2);
        assert_eq!(
            later.refused["ops"],
            Refusal::OwnedBy {
                package: "etcd".into(),
                owner: "bob".into()
            }
        );

        // Without copies, the next Input takes the package, as before.
        let next = owners(
            &[claim("bob", "etcd", Some(&b), false, &none)],
            &installed(Main::Whole(Some("team-a".into())), &[]),
        );
        assert!(next.crds_only.is_empty());
        assert_eq!(next.configs["etcd"].0, "bob");
        assert_eq!(
            Main::of(Some(&config(json!({"crds": "Only"})))),
            Main::CrdsOnly
        );
        assert_eq!(Main::of(Some(&b)), Main::Whole(Some("team-b".into())));
        assert_eq!(Main::of(Some(&wide)), Main::Whole(None));
    }
}
