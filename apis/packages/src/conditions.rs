//! The group's condition vocabulary: typed condition types and reasons,
//! written by the package provisioner and read by `kubectl instance why`
//! by reason, never by the words of a message.
//!
//! Every object of the group carries Glasskube's pair, `Ready` and
//! `Failed`, set together ([`ReadinessType`]). A ClusterPackage or Package
//! also carries the Instance it became's `Approved`, `Installed` and
//! `Healthy`, copied with the Instance's own reasons (`pakket_api::Reason`).
//! A Warning Event about a package uses the same reasons
//! ([`PackageReason::NameTaken`]).

/// The pair every object of the group carries.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ReadinessType {
    /// True when the object is what it asks for.
    Ready,
    /// True when it cannot get there: why, in its reason.
    Failed,
}

impl ReadinessType {
    /// Both, in display order.
    pub const ALL: [ReadinessType; 2] = [Self::Ready, Self::Failed];

    /// The `type` string as written in status.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Ready => "Ready",
            Self::Failed => "Failed",
        }
    }

    /// The type written as `text`, if it is one of these.
    pub fn parse(text: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|kind| kind.as_str() == text)
    }
}

/// Every condition type a ClusterPackage or Package carries.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PackageConditionType {
    /// Installed and, if it has them, its components too.
    Ready,
    /// It cannot be installed as it is: why, in its reason.
    Failed,
    /// Its Instance's `Approved`, copied.
    Approved,
    /// Its Instance's `Installed`, copied.
    Installed,
    /// Its Instance's `Healthy`, copied.
    Healthy,
}

impl PackageConditionType {
    /// Every type, in display order.
    pub const ALL: [PackageConditionType; 5] = [
        Self::Ready,
        Self::Failed,
        Self::Approved,
        Self::Installed,
        Self::Healthy,
    ];

    /// The `type` string as written in status.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Ready => "Ready",
            Self::Failed => "Failed",
            Self::Approved => "Approved",
            Self::Installed => "Installed",
            Self::Healthy => "Healthy",
        }
    }

    /// The type written as `text`, if it is one of these.
    pub fn parse(text: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|kind| kind.as_str() == text)
    }

    /// Whether it is copied from the package's Instance, with the
    /// Instance's reasons (`pakket_api::Reason`), not the package's own.
    pub const fn is_copied_from_instance(self) -> bool {
        matches!(self, Self::Approved | Self::Installed | Self::Healthy)
    }
}

/// Every reason a ClusterPackage or Package's `Ready` and `Failed` carry
/// (and its Warning Events).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PackageReason {
    /// On its way: its PackageInfo, dependencies, Instance or components
    /// are not there yet, or it is being removed.
    Pending,
    /// Its Instance is installed.
    InstallationSucceeded,
    /// Its Instance, a dependency or a component failed, or it is kept
    /// while others depend on it.
    InstallationFailed,
    /// Its repository, PackageInfo or chart could not be read.
    SyncFailed,
    /// Its repository's credentials cannot be used.
    CredentialsUnavailable,
    /// It is a kind of package this provisioner does not install as asked
    /// (scope, features, manifest URLs, transformations).
    UnsupportedFormat,
    /// `spec.values` cannot be read or does not fit the package.
    ValueConfigurationInvalid,
    /// A name it needs (its Instance, a component) is held by an object
    /// the provisioner did not make for it.
    NameTaken,
}

impl PackageReason {
    /// Every reason, so tests can check that lists stay complete.
    pub const ALL: [PackageReason; 8] = [
        Self::Pending,
        Self::InstallationSucceeded,
        Self::InstallationFailed,
        Self::SyncFailed,
        Self::CredentialsUnavailable,
        Self::UnsupportedFormat,
        Self::ValueConfigurationInvalid,
        Self::NameTaken,
    ];

    /// The reason as written in status (and in Events).
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Pending => "Pending",
            Self::InstallationSucceeded => "InstallationSucceeded",
            Self::InstallationFailed => "InstallationFailed",
            Self::SyncFailed => "SyncFailed",
            Self::CredentialsUnavailable => "CredentialsUnavailable",
            Self::UnsupportedFormat => "UnsupportedFormat",
            Self::ValueConfigurationInvalid => "ValueConfigurationInvalid",
            Self::NameTaken => "NameTaken",
        }
    }

    /// The reason written as `text`, if it is one of these.
    pub fn parse(text: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|reason| reason.as_str() == text)
    }

    /// The condition types it is written on.
    pub const fn written_on(self) -> &'static [PackageConditionType] {
        &[PackageConditionType::Ready, PackageConditionType::Failed]
    }
}

/// Every reason a PackageRepository's `Ready` and `Failed` carry.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RepositoryReason {
    /// Its `index.yaml` was read.
    SyncCompleted,
    /// It could not be read.
    SyncFailed,
    /// Its credentials cannot be used.
    CredentialsUnavailable,
}

impl RepositoryReason {
    /// Every reason, so tests can check that lists stay complete.
    pub const ALL: [RepositoryReason; 3] = [
        Self::SyncCompleted,
        Self::SyncFailed,
        Self::CredentialsUnavailable,
    ];

    /// The reason as written in status.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::SyncCompleted => "SyncCompleted",
            Self::SyncFailed => "SyncFailed",
            Self::CredentialsUnavailable => "CredentialsUnavailable",
        }
    }

    /// The reason written as `text`, if it is one of these.
    pub fn parse(text: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|reason| reason.as_str() == text)
    }

    /// The condition types it is written on.
    pub const fn written_on(self) -> &'static [ReadinessType] {
        &[ReadinessType::Ready, ReadinessType::Failed]
    }
}

/// Every reason a PackageInfo's `Ready` and `Failed` carry.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PackageInfoReason {
    /// What was read is new.
    SyncCompleted,
    /// Read again, and found as it was.
    UpToDate,
    /// Its repository or package file could not be read.
    SyncFailed,
    /// Its repository's credentials cannot be used.
    CredentialsUnavailable,
}

impl PackageInfoReason {
    /// Every reason, so tests can check that lists stay complete.
    pub const ALL: [PackageInfoReason; 4] = [
        Self::SyncCompleted,
        Self::UpToDate,
        Self::SyncFailed,
        Self::CredentialsUnavailable,
    ];

    /// The reason as written in status.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::SyncCompleted => "SyncCompleted",
            Self::UpToDate => "UpToDate",
            Self::SyncFailed => "SyncFailed",
            Self::CredentialsUnavailable => "CredentialsUnavailable",
        }
    }

    /// The reason written as `text`, if it is one of these.
    pub fn parse(text: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|reason| reason.as_str() == text)
    }

    /// The condition types it is written on.
    pub const fn written_on(self) -> &'static [ReadinessType] {
        &[ReadinessType::Ready, ReadinessType::Failed]
    }
}

/// Why a package repository could not be read, wherever that is said: on
/// the PackageRepository, a PackageInfo read from it, or a package.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ReadFailure {
    /// It, or a file of it, could not be fetched or parsed.
    SyncFailed,
    /// Its credentials cannot be used.
    CredentialsUnavailable,
}

impl ReadFailure {
    /// Both.
    pub const ALL: [ReadFailure; 2] = [Self::SyncFailed, Self::CredentialsUnavailable];
}

impl From<ReadFailure> for PackageReason {
    fn from(failure: ReadFailure) -> Self {
        match failure {
            ReadFailure::SyncFailed => Self::SyncFailed,
            ReadFailure::CredentialsUnavailable => Self::CredentialsUnavailable,
        }
    }
}

impl From<ReadFailure> for RepositoryReason {
    fn from(failure: ReadFailure) -> Self {
        match failure {
            ReadFailure::SyncFailed => Self::SyncFailed,
            ReadFailure::CredentialsUnavailable => Self::CredentialsUnavailable,
        }
    }
}

impl From<ReadFailure> for PackageInfoReason {
    fn from(failure: ReadFailure) -> Self {
        match failure {
            ReadFailure::SyncFailed => Self::SyncFailed,
            ReadFailure::CredentialsUnavailable => Self::CredentialsUnavailable,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unique(names: &[&str]) -> bool {
        let mut sorted = names.to_vec();
        sorted.sort_unstable();
        sorted.dedup();
        sorted.len() == names.len()
    }

    #[test]
    fn package_reasons_have_unique_names_that_parse_back_and_a_type_each() {
        let names: Vec<&str> = PackageReason::ALL.iter().map(|r| r.as_str()).collect();
        assert!(unique(&names), "{names:?}");
        for reason in PackageReason::ALL {
            assert_eq!(PackageReason::parse(reason.as_str()), Some(reason));
            assert!(!reason.written_on().is_empty());
            assert!(
                reason
                    .written_on()
                    .iter()
                    .all(|kind| PackageConditionType::ALL.contains(kind)
                        && !kind.is_copied_from_instance()),
                "{} is written on a copied type",
                reason.as_str()
            );
        }
        let types: Vec<&str> = PackageConditionType::ALL
            .iter()
            .map(|t| t.as_str())
            .collect();
        assert!(unique(&types), "{types:?}");
        for kind in PackageConditionType::ALL {
            assert_eq!(PackageConditionType::parse(kind.as_str()), Some(kind));
            assert!(
                kind.is_copied_from_instance()
                    || PackageReason::ALL
                        .iter()
                        .any(|r| r.written_on().contains(&kind)),
                "{} has no reason",
                kind.as_str()
            );
        }
        assert_eq!(PackageReason::parse("SomethingElse"), None);
    }

    #[test]
    fn repository_and_info_reasons_have_unique_names_that_parse_back() {
        let names: Vec<&str> = RepositoryReason::ALL.iter().map(|r| r.as_str()).collect();
        assert!(unique(&names), "{names:?}");
        for reason in RepositoryReason::ALL {
            assert_eq!(RepositoryReason::parse(reason.as_str()), Some(reason));
            assert!(!reason.written_on().is_empty());
        }
        let names: Vec<&str> = PackageInfoReason::ALL.iter().map(|r| r.as_str()).collect();
        assert!(unique(&names), "{names:?}");
        for reason in PackageInfoReason::ALL {
            assert_eq!(PackageInfoReason::parse(reason.as_str()), Some(reason));
            assert!(!reason.written_on().is_empty());
        }
        for kind in ReadinessType::ALL {
            assert_eq!(ReadinessType::parse(kind.as_str()), Some(kind));
            assert!(
                RepositoryReason::ALL
                    .iter()
                    .any(|r| r.written_on().contains(&kind))
            );
            assert!(
                PackageInfoReason::ALL
                    .iter()
                    .any(|r| r.written_on().contains(&kind))
            );
        }
    }

    /// A read failure is said with the same word on every kind.
    #[test]
    fn a_read_failure_is_one_word_everywhere() {
        for failure in ReadFailure::ALL {
            let word = PackageReason::from(failure).as_str();
            assert_eq!(RepositoryReason::from(failure).as_str(), word);
            assert_eq!(PackageInfoReason::from(failure).as_str(), word);
        }
    }

    /// The words tools and tests read: they never change.
    #[test]
    fn wire_strings_stay() {
        let words: Vec<&str> = PackageReason::ALL.iter().map(|r| r.as_str()).collect();
        assert_eq!(
            words,
            [
                "Pending",
                "InstallationSucceeded",
                "InstallationFailed",
                "SyncFailed",
                "CredentialsUnavailable",
                "UnsupportedFormat",
                "ValueConfigurationInvalid",
                "NameTaken",
            ]
        );
        let words: Vec<&str> = PackageInfoReason::ALL.iter().map(|r| r.as_str()).collect();
        assert_eq!(
            words,
            [
                "SyncCompleted",
                "UpToDate",
                "SyncFailed",
                "CredentialsUnavailable"
            ]
        );
    }
}
