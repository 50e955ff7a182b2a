//! What a resolution is asked for: requests (a package, or Deppy-style
//! constraints) and what is already installed.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::{Range, RangeError, Version};

/// One thing the result must contain.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Request {
    /// A bundle of `package` (OLM's Subscription; Deppy's `olm.catalog` and
    /// `olm.packageVersion`), optionally limited to a channel, a version
    /// range and a catalog.
    Package {
        /// The package.
        package: String,
        /// Only bundles in this channel.
        channel: Option<String>,
        /// Only versions in this range.
        range: Option<Range>,
        /// Only bundles from this catalog.
        catalog: Option<String>,
    },
    /// The bundle with exactly this name (Deppy's `olm.name`).
    BundleName(String),
    /// Some bundle that provides this GVK (Deppy's `olm.gvk`), `group/version/Kind`.
    Gvk(String),
    /// Some bundle with this `olm.label` (Deppy's `olm.label`).
    Label(String),
}

impl Request {
    /// A plain request for a package.
    pub fn package(package: &str) -> Self {
        Self::Package {
            package: package.to_owned(),
            channel: None,
            range: None,
            catalog: None,
        }
    }

    /// Parses the CLI form: `PACKAGE`, `PACKAGE@CHANNEL`, `PACKAGE=RANGE` or
    /// `PACKAGE@CHANNEL=RANGE`.
    pub fn parse_cli(text: &str) -> Result<Self, RequestError> {
        let (head, range) = match text.split_once('=') {
            Some((head, range)) => (head, Some(range)),
            None => (text, None),
        };
        let (package, channel) = match head.split_once('@') {
            Some((package, channel)) => (package, Some(channel)),
            None => (head, None),
        };
        let package = package.trim();
        if package.is_empty() {
            return Err(RequestError::new(
                text,
                "the package name is empty; write PACKAGE[@CHANNEL][=RANGE]",
            ));
        }
        if channel.is_some_and(|channel| channel.trim().is_empty()) {
            return Err(RequestError::new(text, "the channel after '@' is empty"));
        }
        let range = range
            .map(Range::parse)
            .transpose()
            .map_err(|error| RequestError::new(text, &error.to_string()))?;
        Ok(Self::Package {
            package: package.to_owned(),
            channel: channel.map(|channel| channel.trim().to_owned()),
            range,
            catalog: None,
        })
    }
}

impl fmt::Display for Request {
    /// The request as a user would write it (`etcd@alpha =0.9.4`).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Package {
                package,
                channel,
                range,
                catalog,
            } => {
                write!(f, "{package}")?;
                if let Some(channel) = channel {
                    write!(f, "@{channel}")?;
                }
                if let Some(range) = range {
                    write!(f, " {}", range.as_written())?;
                }
                if let Some(catalog) = catalog {
                    write!(f, " from catalog {catalog}")?;
                }
                Ok(())
            }
            Self::BundleName(name) => write!(f, "bundle {name}"),
            Self::Gvk(gvk) => write!(f, "an API provider of {gvk}"),
            Self::Label(label) => write!(f, "a bundle labelled {label}"),
        }
    }
}

/// A request that does not parse.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("invalid request {text:?}: {message}")]
pub struct RequestError {
    /// The request as written.
    pub text: String,
    /// What is wrong.
    pub message: String,
}

impl RequestError {
    fn new(text: &str, message: &str) -> Self {
        Self {
            text: text.to_owned(),
            message: message.to_owned(),
        }
    }
}

impl From<RangeError> for RequestError {
    fn from(error: RangeError) -> Self {
        Self::new(&error.input.clone(), &error.to_string())
    }
}

/// A bundle already on the cluster, named by package and version or by bundle name.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Installed {
    /// `{package, version}`.
    Version {
        /// The package.
        package: String,
        /// The installed version.
        version: Version,
    },
    /// `{bundle}`.
    Bundle {
        /// The bundle's name.
        bundle: String,
    },
}

impl fmt::Display for Installed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Version { package, version } => write!(f, "{package} {version}"),
            Self::Bundle { bundle } => write!(f, "{bundle}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_every_cli_form() {
        assert_eq!(
            Request::parse_cli("etcd").unwrap(),
            Request::package("etcd")
        );
        let Request::Package {
            package,
            channel,
            range,
            ..
        } = Request::parse_cli("etcd@alpha").unwrap()
        else {
            panic!()
        };
        assert_eq!(
            (package.as_str(), channel.as_deref(), range),
            ("etcd", Some("alpha"), None)
        );
        let Request::Package { channel, range, .. } =
            Request::parse_cli("etcd@alpha=>=0.9.2 <0.9.4").unwrap()
        else {
            panic!()
        };
        assert_eq!(channel.as_deref(), Some("alpha"));
        assert_eq!(range.unwrap().as_written(), ">=0.9.2 <0.9.4");
    }

    #[test]
    fn rejects_empty_parts_with_the_request_in_the_message() {
        assert!(
            Request::parse_cli("")
                .unwrap_err()
                .to_string()
                .contains("package name is empty")
        );
        assert!(
            Request::parse_cli("etcd@=1.0.0")
                .unwrap_err()
                .to_string()
                .contains("channel")
        );
    }

    #[test]
    fn installed_reads_both_shapes() {
        let list: Vec<Installed> = serde_json::from_str(
            r#"[{"package":"etcd","version":"0.9.2"},{"bundle":"etcdoperator.v0.9.2"}]"#,
        )
        .unwrap();
        assert!(matches!(&list[0], Installed::Version { package, .. } if package == "etcd"));
        assert!(
            matches!(&list[1], Installed::Bundle { bundle } if bundle == "etcdoperator.v0.9.2")
        );
    }
}
