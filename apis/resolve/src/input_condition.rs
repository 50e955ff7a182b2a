//! The Input's condition vocabulary: typed condition types and reasons,
//! written by the Input controller and read by `kubectl instance why` by
//! reason, never by the words of a message.

/// Every condition type an Input carries.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum InputConditionType {
    /// True when the Input gets nothing now: why, in its reason.
    ResolutionFailed,
    /// True when what it asks for needs something the set cannot hold.
    DependenciesMissing,
    /// True while the catalog of what it installed is not served.
    CatalogUnavailable,
    /// True when another Input's `spec.config` is its package's.
    ConfigConflict,
}

impl InputConditionType {
    /// Every type, in display order.
    pub const ALL: [InputConditionType; 4] = [
        Self::ResolutionFailed,
        Self::DependenciesMissing,
        Self::CatalogUnavailable,
        Self::ConfigConflict,
    ];

    /// The `type` string as written in status.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::ResolutionFailed => "ResolutionFailed",
            Self::DependenciesMissing => "DependenciesMissing",
            Self::CatalogUnavailable => "CatalogUnavailable",
            Self::ConfigConflict => "ConfigConflict",
        }
    }
}

/// Every reason an Input condition carries.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum InputReason {
    /// It resolved: what it brings in is in the set (or, dry run, would be).
    Resolved,
    /// Every dependency is in the set.
    DependenciesResolved,
    /// A field cannot be used: the message names it.
    InvalidInput,
    /// No set satisfies it, even alone: the engine's chain says why.
    Unsatisfiable,
    /// What it installed cannot be resolved again (its catalog is gone).
    CatalogUnavailable,
    /// What it installed stays in the set while its catalog is away.
    Kept,
    /// What it installed still meets its request while its catalog is
    /// away: nothing fails; upgrades wait for the catalog.
    InstalledSatisfies,
    /// The catalogs of what it installed are served again.
    CatalogServed,
    /// It resolves alone but conflicts with what installed Inputs asked
    /// for, which keeps running.
    ConflictsWithInstalled,
    /// It resolves alone but conflicts with other new requests: all wait
    /// until a person chooses.
    ConflictWaitsForDecision,
    /// A person chose another request it conflicts with.
    AnotherRequestChosen,
    /// Another Input owns the package it asks for (and its `spec.config`
    /// is the package's): it installs nothing.
    PackageOwnedByAnother,
    /// Its `spec.config` is its package's.
    ConfigApplied,
}

impl InputReason {
    /// Every reason, so tests can check that lists stay complete.
    pub const ALL: [InputReason; 13] = [
        Self::Resolved,
        Self::DependenciesResolved,
        Self::InvalidInput,
        Self::Unsatisfiable,
        Self::CatalogUnavailable,
        Self::Kept,
        Self::InstalledSatisfies,
        Self::CatalogServed,
        Self::ConflictsWithInstalled,
        Self::ConflictWaitsForDecision,
        Self::AnotherRequestChosen,
        Self::PackageOwnedByAnother,
        Self::ConfigApplied,
    ];

    /// The reason as written in status.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Resolved => "Resolved",
            Self::DependenciesResolved => "DependenciesResolved",
            Self::InvalidInput => "InvalidInput",
            Self::Unsatisfiable => "Unsatisfiable",
            Self::CatalogUnavailable => "CatalogUnavailable",
            Self::Kept => "Kept",
            Self::InstalledSatisfies => "InstalledSatisfies",
            Self::CatalogServed => "CatalogServed",
            Self::ConflictsWithInstalled => "ConflictsWithInstalled",
            Self::ConflictWaitsForDecision => "ConflictWaitsForDecision",
            Self::AnotherRequestChosen => "AnotherRequestChosen",
            Self::PackageOwnedByAnother => "PackageOwnedByAnother",
            Self::ConfigApplied => "ConfigApplied",
        }
    }

    /// The reason written as `text`, if it is one of ours.
    pub fn parse(text: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|reason| reason.as_str() == text)
    }

    /// The condition types it is written on.
    pub const fn written_on(self) -> &'static [InputConditionType] {
        use InputConditionType::*;
        match self {
            Self::Resolved | Self::InstalledSatisfies => &[ResolutionFailed],
            Self::DependenciesResolved | Self::Kept => &[DependenciesMissing],
            Self::InvalidInput
            | Self::Unsatisfiable
            | Self::ConflictsWithInstalled
            | Self::ConflictWaitsForDecision
            | Self::AnotherRequestChosen => &[ResolutionFailed, DependenciesMissing],
            Self::CatalogUnavailable => &[ResolutionFailed, CatalogUnavailable],
            Self::CatalogServed => &[CatalogUnavailable],
            Self::PackageOwnedByAnother => &[ResolutionFailed, DependenciesMissing, ConfigConflict],
            Self::ConfigApplied => &[ConfigConflict],
        }
    }

    /// Whether the Input waits on a conflict with other requests (what
    /// `kubectl instance decide` settles, or the other request's owner).
    pub const fn is_conflict(self) -> bool {
        matches!(
            self,
            Self::ConflictsWithInstalled
                | Self::ConflictWaitsForDecision
                | Self::AnotherRequestChosen
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_type_has_reasons_and_every_reason_a_unique_name_that_parses_back() {
        let mut names: Vec<&str> = InputReason::ALL.iter().map(|r| r.as_str()).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), InputReason::ALL.len());
        for reason in InputReason::ALL {
            assert_eq!(InputReason::parse(reason.as_str()), Some(reason));
            assert!(!reason.written_on().is_empty());
        }
        for kind in InputConditionType::ALL {
            assert!(
                InputReason::ALL
                    .iter()
                    .any(|r| r.written_on().contains(&kind)),
                "{} has no reason",
                kind.as_str()
            );
        }
        assert_eq!(InputReason::parse("SomethingElse"), None);
    }
}
