//! The Catalog's condition vocabulary: typed condition types and reasons.
//! The list rule (replace by type, keep the transition time while status
//! and reason hold) is core/api's [`pakket_api::condition::set`].

use jiff::Timestamp;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};

/// Every condition type a Catalog carries.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ConditionType {
    /// The resolver answers from this Catalog's content (maybe an older digest).
    Serving,
    /// The source's newest content was fetched, unpacked and loaded.
    Unpacked,
}

impl ConditionType {
    /// Both types, in display order; every Catalog status carries both.
    pub const ALL: [ConditionType; 2] = [Self::Serving, Self::Unpacked];

    /// The `type` string as written in status.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Serving => "Serving",
            Self::Unpacked => "Unpacked",
        }
    }
}

/// Every reason a Catalog condition carries.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Reason {
    /// Serving: the newest content is served.
    ServingLatest,
    /// Serving: the newest content could not be used; the last good digest
    /// is still served (the message names both).
    ServingPrevious,
    /// Serving (False): nothing of this Catalog has loaded yet.
    NothingServed,
    /// Unpacked: the newest content loaded.
    UnpackSucceeded,
    /// Unpacked (False): the source could not be fetched or unpacked.
    UnpackFailed,
    /// Unpacked (False): the content was fetched but is not a usable catalog.
    CatalogInvalid,
}

impl Reason {
    /// Every reason, so tests can check that lists stay complete.
    pub const ALL: [Reason; 6] = [
        Self::ServingLatest,
        Self::ServingPrevious,
        Self::NothingServed,
        Self::UnpackSucceeded,
        Self::UnpackFailed,
        Self::CatalogInvalid,
    ];

    /// The reason as written in status.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::ServingLatest => "ServingLatest",
            Self::ServingPrevious => "ServingPrevious",
            Self::NothingServed => "NothingServed",
            Self::UnpackSucceeded => "UnpackSucceeded",
            Self::UnpackFailed => "UnpackFailed",
            Self::CatalogInvalid => "CatalogInvalid",
        }
    }

    /// The condition type this reason belongs to.
    pub const fn condition_type(self) -> ConditionType {
        match self {
            Self::ServingLatest | Self::ServingPrevious | Self::NothingServed => {
                ConditionType::Serving
            }
            Self::UnpackSucceeded | Self::UnpackFailed | Self::CatalogInvalid => {
                ConditionType::Unpacked
            }
        }
    }

    /// The condition status this reason is written with.
    pub const fn status(self) -> &'static str {
        match self {
            Self::ServingLatest | Self::ServingPrevious | Self::UnpackSucceeded => "True",
            Self::NothingServed | Self::UnpackFailed | Self::CatalogInvalid => "False",
        }
    }
}

/// The condition of type `kind` in a status's `conditions`, if there is one
/// (what `Catalog::condition`, `Input::condition` and
/// `Operator::condition` answer).
pub fn find<'a>(conditions: Option<&'a [Condition]>, kind: &str) -> Option<&'a Condition> {
    conditions?.iter().find(|condition| condition.type_ == kind)
}

/// A condition for `reason`, stamped `now`.
pub fn new(
    reason: Reason,
    message: impl Into<String>,
    observed_generation: Option<i64>,
    now: Timestamp,
) -> Condition {
    Condition {
        type_: reason.condition_type().as_str().to_owned(),
        status: reason.status().to_owned(),
        reason: reason.as_str().to_owned(),
        message: message.into(),
        observed_generation,
        last_transition_time: Time(now),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_type_has_reasons_and_every_reason_a_unique_name() {
        let mut names: Vec<&str> = Reason::ALL.iter().map(|r| r.as_str()).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), Reason::ALL.len());
        for kind in ConditionType::ALL {
            for status in ["True", "False"] {
                assert!(
                    Reason::ALL
                        .iter()
                        .any(|r| r.condition_type() == kind && r.status() == status),
                    "{} has no reason for {status}",
                    kind.as_str()
                );
            }
        }
    }
}
