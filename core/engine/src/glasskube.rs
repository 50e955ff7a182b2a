//! Glasskube's dependency decision tree, exactly as its package operator
//! documents it (seed 000): for a package P depending on a package D, given
//! what is installed and what the other dependents of D require, the outcome
//! is one of: fulfilled; install D pinned; a conflict that updating D
//! resolves; a conflict that might be resolvable; a conflict that is not.
//!
//! It is the same engine as OLM-style resolution (the same [`Version`] and
//! [`Range`]), but a decision per dependency rather than a search, because
//! that is what Glasskube promises its users: the operator installs a
//! missing dependency and never changes an installed one by itself.

use std::fmt;

use serde::Serialize;

use crate::{Range, Version};

/// What is known about one dependency P → D when P is reconciled.
#[derive(Clone, Debug)]
pub struct DependencyCheck<'a> {
    /// The package being reconciled (P).
    pub package: &'a str,
    /// The dependency (D).
    pub dependency: &'a str,
    /// The range P requires of D (PDV), if any.
    pub required: Option<&'a Range>,
    /// D's installed version (DV), if D is installed.
    pub installed: Option<&'a Version>,
    /// Other installed packages that depend on D, with the range each requires.
    pub other_dependents: &'a [(String, Option<Range>)],
    /// Versions of D the repository offers.
    pub available: &'a [Version],
    /// The repository's `latestVersion` of D (may differ from the highest available).
    pub latest: Option<&'a Version>,
}

/// The outcome of the decision tree.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "outcome", rename_all = "camelCase")]
pub enum Outcome {
    /// P → D is fulfilled; nothing to do.
    Fulfilled,
    /// D is not installed: install it pinned at this version.
    Install {
        /// `latest(D)` when P names no range, else `max_available(PDV)`.
        version: Version,
    },
    /// P → D is not fulfilled.
    Conflict {
        /// Whether and how the conflict can be resolved.
        resolution: ConflictResolution,
    },
}

/// How a dependency conflict can be resolved, if at all. The operator never
/// resolves it on its own; the CLI or UI guides the user.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "camelCase")]
pub enum ConflictResolution {
    /// Updating D to this version (the highest available in PDV) resolves it.
    UpdateDependency {
        /// The version to update D to.
        to: Version,
    },
    /// Other dependents constrain D too: updating D to a version inside all
    /// their ranges and PDV might resolve it.
    MightBeResolvable {
        /// PDV intersected with every other dependent's range.
        overlap: String,
        /// The highest available version inside the overlap.
        candidate: Version,
    },
    /// Cannot be resolved.
    NotResolvable {
        /// Why, in words that name P, D and the versions.
        reason: String,
    },
}

/// Runs the decision tree of seed 000 for one dependency.
pub fn decide(check: &DependencyCheck<'_>) -> Outcome {
    let Some(required) = check.required else {
        // P requires no version range of D.
        return match (check.installed, latest(check)) {
            (Some(_), _) => Outcome::Fulfilled,
            (None, Some(version)) => Outcome::Install { version },
            (None, None) => not_resolvable(format!(
                "{} offers no version of {} to install",
                "the repository", check.dependency
            )),
        };
    };
    let Some(installed) = check.installed else {
        return match required.max_satisfying(check.available) {
            Some(version) => Outcome::Install {
                version: version.clone(),
            },
            None => not_resolvable(format!(
                "{} requires {} {}, and the repository offers no version in that range ({})",
                check.package,
                check.dependency,
                required.as_written(),
                offered(check.available)
            )),
        };
    };
    if required.contains(installed) {
        return Outcome::Fulfilled;
    }
    if !has_version_above(required, installed) {
        return not_resolvable(format!(
            "{} does not support using {} in {installed} yet (it requires {})",
            check.package,
            check.dependency,
            required.as_written()
        ));
    }
    let constraining: Vec<&(String, Option<Range>)> = check
        .other_dependents
        .iter()
        .filter(|(_, range)| range.is_some())
        .collect();
    if constraining.is_empty() {
        return match required.max_satisfying(check.available) {
            Some(version) => Outcome::Conflict {
                resolution: ConflictResolution::UpdateDependency {
                    to: version.clone(),
                },
            },
            None => not_resolvable(format!(
                "{} {installed} is below {} required by {}, and the repository offers no version in that range ({})",
                check.dependency,
                required.as_written(),
                check.package,
                offered(check.available)
            )),
        };
    }
    let overlap = constraining
        .iter()
        .filter_map(|(_, range)| range.as_ref())
        .fold(required.clone(), |overlap, range| overlap.intersect(range));
    let others = constraining
        .iter()
        .map(|(name, range)| {
            format!(
                "{name} requires {}",
                range.as_ref().map(Range::as_written).unwrap_or_default()
            )
        })
        .collect::<Vec<_>>()
        .join(", ");
    if overlap.is_empty() {
        return not_resolvable(format!(
            "{} requires {} {}, but {others}: no version satisfies all of them",
            check.package,
            check.dependency,
            required.as_written()
        ));
    }
    match overlap.max_satisfying(check.available) {
        Some(candidate) => Outcome::Conflict {
            resolution: ConflictResolution::MightBeResolvable {
                overlap: overlap.to_string(),
                candidate: candidate.clone(),
            },
        },
        None => not_resolvable(format!(
            "{} requires {} {} and {others}; they overlap in {overlap}, but the repository offers no version there ({})",
            check.package,
            check.dependency,
            required.as_written(),
            offered(check.available)
        )),
    }
}

/// `latestVersion` if the repository names one, else the highest available.
fn latest(check: &DependencyCheck<'_>) -> Option<Version> {
    check
        .latest
        .or_else(|| check.available.iter().max())
        .cloned()
}

/// Whether some version above `installed` is in `range` (then D is *below* PDV:
/// updating D can fulfil P; otherwise D is *above* PDV).
fn has_version_above(range: &Range, installed: &Version) -> bool {
    let above =
        Range::parse(&format!(">{installed}")).expect("a version after '>' is a valid range");
    !range.intersect(&above).is_empty()
}

fn not_resolvable(reason: String) -> Outcome {
    Outcome::Conflict {
        resolution: ConflictResolution::NotResolvable { reason },
    }
}

fn offered(available: &[Version]) -> String {
    if available.is_empty() {
        return "none at all".to_owned();
    }
    let mut versions: Vec<&Version> = available.iter().collect();
    versions.sort();
    format!(
        "offered: {}",
        versions
            .iter()
            .map(|v| v.as_written())
            .collect::<Vec<_>>()
            .join(", ")
    )
}

impl fmt::Display for Outcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Fulfilled => write!(f, "fulfilled"),
            Self::Install { version } => write!(f, "install pinned at {}", version.as_written()),
            Self::Conflict { resolution } => match resolution {
                ConflictResolution::UpdateDependency { to } => {
                    write!(
                        f,
                        "dependency conflict, resolvable by updating to {}",
                        to.as_written()
                    )
                }
                ConflictResolution::MightBeResolvable { overlap, candidate } => write!(
                    f,
                    "dependency conflict, might be resolvable: every dependent accepts {overlap}; {} is available there",
                    candidate.as_written()
                ),
                ConflictResolution::NotResolvable { reason } => {
                    write!(f, "dependency conflict, not resolvable: {reason}")
                }
            },
        }
    }
}

#[cfg(test)]
mod tests {
    //! One test per branch of the decision tree in seed 000, in its order.

    use super::*;

    fn v(text: &str) -> Version {
        Version::parse(text).unwrap()
    }

    fn r(text: &str) -> Range {
        Range::parse(text).unwrap()
    }

    fn versions(texts: &[&str]) -> Vec<Version> {
        texts.iter().map(|text| v(text)).collect()
    }

    struct Case {
        required: Option<Range>,
        installed: Option<Version>,
        others: Vec<(String, Option<Range>)>,
        available: Vec<Version>,
        latest: Option<Version>,
    }

    impl Case {
        fn new() -> Self {
            Self {
                required: None,
                installed: None,
                others: Vec::new(),
                available: versions(&["1.0.0", "1.1.0", "1.2.0", "2.0.0"]),
                latest: Some(v("1.2.0")),
            }
        }

        fn requires(mut self, range: &str) -> Self {
            self.required = Some(r(range));
            self
        }

        fn installed(mut self, version: &str) -> Self {
            self.installed = Some(v(version));
            self
        }

        fn other(mut self, name: &str, range: Option<&str>) -> Self {
            self.others.push((name.to_owned(), range.map(r)));
            self
        }

        fn decide(&self) -> Outcome {
            decide(&DependencyCheck {
                package: "P",
                dependency: "D",
                required: self.required.as_ref(),
                installed: self.installed.as_ref(),
                other_dependents: &self.others,
                available: &self.available,
                latest: self.latest.as_ref(),
            })
        }
    }

    fn not_resolvable_reason(outcome: Outcome) -> String {
        match outcome {
            Outcome::Conflict {
                resolution: ConflictResolution::NotResolvable { reason },
            } => reason,
            other => panic!("expected a conflict that is not resolvable, got {other:?}"),
        }
    }

    #[test]
    fn no_range_d_exists_no_other_dependents_is_fulfilled() {
        assert_eq!(Case::new().installed("1.0.0").decide(), Outcome::Fulfilled);
    }

    #[test]
    fn no_range_d_exists_others_without_ranges_is_fulfilled() {
        let case = Case::new()
            .installed("1.0.0")
            .other("X", None)
            .other("Y", None);
        assert_eq!(case.decide(), Outcome::Fulfilled);
    }

    #[test]
    fn no_range_d_exists_others_with_ranges_is_fulfilled() {
        let case = Case::new()
            .installed("1.0.0")
            .other("X", Some(">=1.0.0"))
            .other("Y", Some("<2.0.0"));
        assert_eq!(case.decide(), Outcome::Fulfilled);
    }

    #[test]
    fn no_range_d_missing_installs_latest_not_the_highest() {
        // latestVersion is 1.2.0 although 2.0.0 is available (seed 000's FAQ).
        assert_eq!(
            Case::new().decide(),
            Outcome::Install {
                version: v("1.2.0")
            }
        );
    }

    #[test]
    fn range_d_exists_alone_inside_range_is_fulfilled() {
        assert_eq!(
            Case::new()
                .requires(">=1.0.0 <2.0.0")
                .installed("1.1.0")
                .decide(),
            Outcome::Fulfilled
        );
    }

    #[test]
    fn range_d_exists_alone_below_range_updates_to_max_available() {
        let outcome = Case::new()
            .requires(">=1.1.0 <2.0.0")
            .installed("1.0.0")
            .decide();
        let expected = ConflictResolution::UpdateDependency { to: v("1.2.0") };
        assert_eq!(
            outcome,
            Outcome::Conflict {
                resolution: expected
            }
        );
    }

    #[test]
    fn range_d_exists_alone_above_range_is_not_resolvable() {
        let reason =
            not_resolvable_reason(Case::new().requires("<1.1.0").installed("1.2.0").decide());
        assert_eq!(
            reason,
            "P does not support using D in 1.2.0 yet (it requires <1.1.0)"
        );
    }

    #[test]
    fn range_d_exists_others_without_ranges_behave_as_alone() {
        let outcome = Case::new()
            .requires(">=1.1.0")
            .installed("1.0.0")
            .other("X", None)
            .decide();
        let expected = ConflictResolution::UpdateDependency { to: v("2.0.0") };
        assert_eq!(
            outcome,
            Outcome::Conflict {
                resolution: expected
            }
        );
    }

    #[test]
    fn range_d_exists_with_others_inside_range_is_fulfilled() {
        let case = Case::new()
            .requires(">=1.0.0")
            .installed("1.1.0")
            .other("X", Some("<1.2.0"));
        assert_eq!(case.decide(), Outcome::Fulfilled);
    }

    #[test]
    fn range_d_exists_with_others_below_range_might_be_resolvable_when_ranges_overlap() {
        let case = Case::new()
            .requires(">=1.1.0")
            .installed("1.0.0")
            .other("X", Some(">=1.0.0 <2.0.0"))
            .other("Y", Some("<1.2.0 || >=2.0.0"));
        let Outcome::Conflict {
            resolution: ConflictResolution::MightBeResolvable { candidate, .. },
        } = case.decide()
        else {
            panic!("expected might be resolvable, got {:?}", case.decide());
        };
        assert_eq!(
            candidate,
            v("1.1.0"),
            "the highest version every dependent accepts"
        );
    }

    #[test]
    fn range_d_exists_with_others_below_range_is_not_resolvable_when_ranges_do_not_overlap() {
        let case = Case::new()
            .requires(">=1.1.0")
            .installed("1.0.0")
            .other("X", Some("<1.1.0"));
        let reason = not_resolvable_reason(case.decide());
        assert_eq!(
            reason,
            "P requires D >=1.1.0, but X requires <1.1.0: no version satisfies all of them"
        );
    }

    #[test]
    fn range_d_exists_with_others_above_range_is_not_resolvable() {
        let case = Case::new()
            .requires("<1.1.0")
            .installed("1.2.0")
            .other("X", Some(">=1.0.0"));
        let reason = not_resolvable_reason(case.decide());
        assert!(
            reason.starts_with("P does not support using D in 1.2.0 yet"),
            "{reason}"
        );
    }

    #[test]
    fn range_d_missing_installs_max_available_in_range() {
        assert_eq!(
            Case::new().requires(">=1.0.0 <1.2.0").decide(),
            Outcome::Install {
                version: v("1.1.0")
            }
        );
    }

    #[test]
    fn range_d_missing_with_nothing_available_in_range_says_what_is_offered() {
        let reason = not_resolvable_reason(Case::new().requires(">=3.0.0").decide());
        assert_eq!(
            reason,
            "P requires D >=3.0.0, and the repository offers no version in that range (offered: 1.0.0, 1.1.0, 1.2.0, 2.0.0)"
        );
    }
}
