//! One owner per package. The set installs each package once, so only one
//! Input's `spec.config` can be the config of the Instance that installs
//! it. The Input that asked for the package first (by [`Seniority`]:
//! installed first, then created first) owns it; another Input asking for
//! the same package with the same config shares it, and one with a
//! different config is told which Input owns the package, and its config
//! is not applied. Dependencies carry no config: nobody owns them.
//!
//! [`Seniority`]: crate::inputs::input_resolve::Seniority

use std::collections::BTreeMap;

use serde_json::{Map, Value};

/// One Input's direct request for a package, with its config.
#[derive(Clone, Debug)]
pub struct Claim<'a> {
    /// The Input.
    pub input: &'a str,
    /// The package it asks for by name.
    pub package: &'a str,
    /// Its `spec.config`.
    pub config: Option<&'a Map<String, Value>>,
}

/// Who owns each package, and who was refused.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Owners {
    /// By package: the owning Input and its config.
    pub configs: BTreeMap<String, (String, Option<Map<String, Value>>)>,
    /// By Input: the package it asks for and the Input that owns it with
    /// another config.
    pub conflicts: BTreeMap<String, (String, String)>,
}

/// Owners of the packages `claims` ask for; `claims` in seniority order,
/// the senior first.
pub fn owners(claims: &[Claim<'_>]) -> Owners {
    let mut owners = Owners::default();
    for claim in claims {
        let config = claim.config.filter(|config| !config.is_empty());
        match owners.configs.get(claim.package) {
            None => {
                owners.configs.insert(
                    claim.package.to_owned(),
                    (claim.input.to_owned(), config.cloned()),
                );
            }
            Some((_, owned)) if owned.as_ref() == config => {}
            Some((owner, _)) => {
                owners.conflicts.insert(
                    claim.input.to_owned(),
                    (claim.package.to_owned(), owner.clone()),
                );
            }
        }
    }
    owners
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

    #[test]
    fn the_senior_input_owns_a_package_the_same_config_shares_it_another_is_told() {
        let team = config(json!({"installNamespace": "team"}));
        let other = config(json!({"installNamespace": "other"}));
        let empty = Map::new();
        let claims = [
            Claim {
                input: "first",
                package: "etcd",
                config: Some(&team),
            },
            Claim {
                input: "same",
                package: "etcd",
                config: Some(&team),
            },
            Claim {
                input: "late",
                package: "etcd",
                config: Some(&other),
            },
            Claim {
                input: "plain",
                package: "redis",
                config: None,
            },
            Claim {
                input: "empty",
                package: "redis",
                config: Some(&empty),
            },
        ];
        let owners = owners(&claims);
        assert_eq!(owners.configs["etcd"], ("first".to_owned(), Some(team)));
        assert_eq!(owners.configs["redis"], ("plain".to_owned(), None));
        assert_eq!(owners.conflicts.len(), 1, "{owners:?}");
        assert_eq!(
            owners.conflicts["late"],
            ("etcd".to_owned(), "first".to_owned())
        );
        assert!(conflict_words("etcd", "first").contains("Input first"));
    }
}
