//! [`Digest`]: the `sha256:<hex>` name content is stored under.

use std::fmt;
use std::str::FromStr;

use sha2::Digest as _;

/// The only algorithm accepted; OCI allows others, but every registry and
/// every tool we read from pins content with sha256.
const PREFIX: &str = "sha256:";

/// A content digest, `sha256:` and 64 lowercase hex digits, validated on
/// parse so a [`Digest`] is always safe to use as a directory name.
#[derive(
    Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize,
)]
#[serde(try_from = "String", into = "String")]
pub struct Digest(String);

/// Why a string is not a [`Digest`].
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error(
    "invalid digest {input:?}: {problem}; write it as sha256: followed by 64 lowercase hex digits"
)]
pub struct DigestError {
    /// The string that was given.
    pub input: String,
    /// What is wrong with it.
    pub problem: &'static str,
}

impl Digest {
    /// Parses `sha256:<64 lowercase hex>`.
    pub fn parse(input: &str) -> Result<Self, DigestError> {
        let fail = |problem| DigestError {
            input: input.to_owned(),
            problem,
        };
        let Some((algorithm, hex)) = input.split_once(':') else {
            return Err(fail("it has no algorithm prefix"));
        };
        if algorithm != "sha256" {
            return Err(fail("only the sha256 algorithm is supported"));
        }
        if hex.len() != 64 {
            return Err(fail("a sha256 digest has exactly 64 hex digits"));
        }
        if !hex.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')) {
            return Err(fail("the digits must be lowercase hex (0-9, a-f)"));
        }
        Ok(Self(input.to_owned()))
    }

    /// The digest of `bytes`.
    pub fn of(bytes: &[u8]) -> Self {
        Self::from_sha256(sha2::Sha256::digest(bytes).into())
    }

    /// The digest whose raw sha256 value is `hash`.
    pub fn from_sha256(hash: [u8; 32]) -> Self {
        Self(format!("{PREFIX}{}", hex::encode(hash)))
    }

    /// The 64 hex digits, without the `sha256:` prefix.
    pub fn hex(&self) -> &str {
        &self.0[PREFIX.len()..]
    }

    /// The whole digest, `sha256:<hex>`.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for Digest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl FromStr for Digest {
    type Err = DigestError;

    fn from_str(input: &str) -> Result<Self, Self::Err> {
        Self::parse(input)
    }
}

impl TryFrom<String> for Digest {
    type Error = DigestError;

    fn try_from(input: String) -> Result<Self, Self::Error> {
        Self::parse(&input)
    }
}

impl From<Digest> for String {
    fn from(digest: Digest) -> Self {
        digest.0
    }
}

impl AsRef<str> for Digest {
    fn as_ref(&self) -> &str {
        &self.0
    }
}
