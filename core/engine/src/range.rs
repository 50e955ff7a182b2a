//! Version ranges. (Being written; this scaffold fixes the public API.)

use crate::Version;

/// A set of versions, written in OLM's (blang/semver) range syntax.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Range {
    text: String,
}

/// A range that does not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid version range {input:?} at position {position}: {message}")]
pub struct RangeError {
    /// The whole text.
    pub input: String,
    /// Byte offset of the offending text.
    pub position: usize,
    /// The offending text.
    pub found: String,
    /// What was expected.
    pub message: String,
}

impl Range {
    /// Parses OLM / blang syntax.
    pub fn parse(text: &str) -> Result<Self, RangeError> {
        Ok(Self {
            text: text.to_owned(),
        })
    }

    /// Whether `version` is in the range.
    pub fn contains(&self, _version: &Version) -> bool {
        unimplemented!("range.rs is being written")
    }
}
