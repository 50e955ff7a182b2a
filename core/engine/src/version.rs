//! Semantic versions (semver 2.0) as catalogs and package repositories write
//! them.
//!
//! Ordering follows semver 2.0: pre-releases sort below their release, and
//! build metadata is ignored (`1.0.0+1 == 1.0.0+2`), as in blang/semver and
//! OLM. Glasskube uses build metadata as a package revision (`v0.10.1+2`);
//! [`Version::cmp_with_build`] orders those.

use std::cmp::Ordering;
use std::fmt;
use std::hash::{Hash, Hasher};

/// A semver 2.0 version, kept with the text it was written as.
#[derive(Clone)]
pub struct Version {
    parsed: semver::Version,
    /// The text as written (`v0.12.3+1`), so a version can name a folder or
    /// a bundle exactly as its author did.
    text: Box<str>,
}

/// A version that is not semver 2.0.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "invalid version {text:?}: {reason} (expected MAJOR.MINOR.PATCH, e.g. 1.2.3 or 1.2.3-rc.1)"
)]
pub struct VersionError {
    /// The text that failed to parse.
    pub text: String,
    /// What is wrong with it.
    pub reason: String,
}

impl Version {
    /// Parses `MAJOR.MINOR.PATCH[-PRE][+BUILD]`, with an optional leading `v`
    /// (Glasskube and many operator authors write one).
    pub fn parse(text: &str) -> Result<Self, VersionError> {
        let trimmed = text.trim();
        let bare = trimmed.strip_prefix('v').unwrap_or(trimmed);
        match semver::Version::parse(bare) {
            Ok(parsed) => Ok(Self {
                parsed,
                text: trimmed.into(),
            }),
            Err(error) => Err(VersionError {
                text: text.to_owned(),
                reason: error.to_string(),
            }),
        }
    }

    /// A release version `major.minor.patch`.
    pub fn new(major: u64, minor: u64, patch: u64) -> Self {
        let parsed = semver::Version::new(major, minor, patch);
        let text = parsed.to_string().into_boxed_str();
        Self { parsed, text }
    }

    /// The major number.
    pub fn major(&self) -> u64 {
        self.parsed.major
    }

    /// The minor number.
    pub fn minor(&self) -> u64 {
        self.parsed.minor
    }

    /// The patch number.
    pub fn patch(&self) -> u64 {
        self.parsed.patch
    }

    /// The pre-release part (`rc.1` in `1.0.0-rc.1`), empty for a release.
    pub fn pre(&self) -> &str {
        self.parsed.pre.as_str()
    }

    /// The build metadata (`2` in `1.0.0+2`), empty if none.
    pub fn build(&self) -> &str {
        self.parsed.build.as_str()
    }

    /// Whether this is a pre-release.
    pub fn is_prerelease(&self) -> bool {
        !self.parsed.pre.is_empty()
    }

    /// The version as written, including a leading `v` if it had one.
    pub fn as_written(&self) -> &str {
        &self.text
    }

    /// The parsed semver value.
    pub fn semver(&self) -> &semver::Version {
        &self.parsed
    }

    /// Orders by semver, then by build metadata as a revision: numerically
    /// when both are numbers (`+2 < +10`), else as text; no metadata first.
    pub fn cmp_with_build(&self, other: &Self) -> Ordering {
        self.cmp(other).then_with(|| {
            let (mine, theirs) = (self.build(), other.build());
            match (mine.parse::<u64>(), theirs.parse::<u64>()) {
                (Ok(a), Ok(b)) => a.cmp(&b),
                _ => mine
                    .len()
                    .min(1)
                    .cmp(&theirs.len().min(1))
                    .then_with(|| mine.cmp(theirs)),
            }
        })
    }

    fn key(&self) -> (u64, u64, u64, &semver::Prerelease) {
        (
            self.parsed.major,
            self.parsed.minor,
            self.parsed.patch,
            &self.parsed.pre,
        )
    }
}

impl Ord for Version {
    fn cmp(&self, other: &Self) -> Ordering {
        self.key().cmp(&other.key())
    }
}

impl PartialOrd for Version {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl PartialEq for Version {
    fn eq(&self, other: &Self) -> bool {
        self.key() == other.key()
    }
}

impl Eq for Version {}

impl Hash for Version {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.key().hash(state);
    }
}

impl fmt::Display for Version {
    /// Canonical semver text, without a leading `v` (use [`Version::as_written`] for that).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.parsed.fmt(f)
    }
}

impl fmt::Debug for Version {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Version({})", self.text)
    }
}

impl std::str::FromStr for Version {
    type Err = VersionError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        Self::parse(text)
    }
}

impl serde::Serialize for Version {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.text)
    }
}

impl<'de> serde::Deserialize<'de> for Version {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = <std::borrow::Cow<'de, str>>::deserialize(deserializer)?;
        Self::parse(&text).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(text: &str) -> Version {
        Version::parse(text).unwrap()
    }

    #[test]
    fn orders_by_semver_with_prereleases_below_their_release() {
        let ordered = [
            "1.0.0-alpha",
            "1.0.0-alpha.1",
            "1.0.0-alpha.beta",
            "1.0.0-beta",
            "1.0.0-beta.2",
            "1.0.0-beta.11",
            "1.0.0-rc.1",
            "1.0.0",
            "1.0.1",
            "1.1.0",
            "2.0.0",
        ];
        for pair in ordered.windows(2) {
            assert!(v(pair[0]) < v(pair[1]), "{} < {}", pair[0], pair[1]);
        }
    }

    #[test]
    fn build_metadata_is_ignored_for_order_but_kept_as_written() {
        assert_eq!(v("1.0.0+1"), v("1.0.0+2"));
        assert_eq!(v("v0.12.3+1").as_written(), "v0.12.3+1");
        assert_eq!(v("v0.12.3+1").to_string(), "0.12.3+1");
        assert_eq!(
            v("v0.10.1+2").cmp_with_build(&v("v0.10.1+10")),
            Ordering::Less
        );
        assert_eq!(v("v0.10.1").cmp_with_build(&v("v0.10.1+1")), Ordering::Less);
    }

    #[test]
    fn rejects_non_semver_with_the_text_in_the_message() {
        let error = Version::parse("1.2").unwrap_err();
        assert!(error.to_string().contains("\"1.2\""), "{error}");
        assert!(Version::parse("01.2.3").is_err());
        assert!(Version::parse("").is_err());
    }
}
