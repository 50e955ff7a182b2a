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

/// Who owns each package, and who was refused.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Owners {
    /// By package: the owning Input and its config.
    pub configs: BTreeMap<String, (String, Option<Map<String, Value>>)>,
    /// By Input: the package it asks for and the Input that owns it with
    /// another config (its config is not applied).
    pub conflicts: BTreeMap<String, (String, String)>,
    /// By Input: why it does not get its package.
    pub refused: BTreeMap<String, Refusal>,
}

/// Owners of the packages `claims` ask for; `claims` in seniority order,
/// the senior first (installed ones before new ones).
pub fn owners(claims: &[Claim<'_>]) -> Owners {
    let mut by_package: BTreeMap<&str, Vec<&Claim<'_>>> = BTreeMap::new();
    for claim in claims {
        by_package.entry(claim.package).or_default().push(claim);
    }
    let mut owners = Owners::default();
    for (package, claims) in by_package {
        let Some(owner) = owner_of(&claims) else {
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
        let config = |claim: &Claim<'_>| claim.config.filter(|config| !config.is_empty()).cloned();
        let owned = config(owner);
        for claim in claims.iter().filter(|claim| claim.input != owner.input) {
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
            if config(claim) != owned {
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
        let owners = owners(&claims);
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
        assert!(super::owners(&with_empty).conflicts.is_empty());
        assert!(refusal_words("etcd", "first").contains("Input first"));
    }

    #[test]
    fn new_inputs_for_one_package_all_wait_until_a_person_chooses_whatever_their_order() {
        let none = BTreeSet::new();
        let waiting = owners(&[
            claim("alice", "etcd", None, false, &none),
            claim("bob", "etcd", None, false, &none),
        ]);
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
        let swapped = owners(&[
            claim("bob", "etcd", None, false, &none),
            claim("alice", "etcd", None, false, &none),
        ]);
        assert_eq!(swapped.refused, waiting.refused);

        // A person chose bob over alice: bob owns it, alice is told.
        let over_alice = BTreeSet::from(["alice".to_owned()]);
        let chosen = owners(&[
            claim("alice", "etcd", None, false, &none),
            claim("bob", "etcd", None, false, &over_alice),
        ]);
        assert_eq!(chosen.configs["etcd"].0, "bob");
        assert_eq!(chosen.refused.len(), 1);
        assert_eq!(
            chosen.refused["alice"],
            Refusal::NotChosen {
                chosen: "bob".into()
            }
        );
        // A choice over only some of the others settles nothing.
        let three = owners(&[
            claim("alice", "etcd", None, false, &none),
            claim("bob", "etcd", None, false, &over_alice),
            claim("carol", "etcd", None, false, &none),
        ]);
        assert_eq!(three.refused.len(), 3);
    }
}
