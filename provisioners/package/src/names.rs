//! Names of the objects a package makes, and the labels that lead back to
//! it. Kubernetes names are at most 253 characters of `[a-z0-9.-]`; a
//! name that would be longer keeps its start and ends in a digest of the
//! whole, so two packages never share one.

use sha2::{Digest as _, Sha256};

/// On Instances and PackageInfos: the kind of package that made them.
pub const KIND_LABEL: &str = "packages.pakket.dev/kind";
/// On Instances: the package's name (an annotation: a name may be longer
/// than a label value may).
pub const NAME_ANNOTATION: &str = "packages.pakket.dev/name";
/// On Instances: a Package's namespace.
pub const NAMESPACE_ANNOTATION: &str = "packages.pakket.dev/namespace";
/// On PackageInfos: the package name in the repository.
pub const PACKAGE_LABEL: &str = "packages.pakket.dev/package";

/// `text` as a DNS subdomain: lowercase, other characters as `-`, at most
/// `max` characters (a digest ends one that was cut).
pub fn sanitized(text: &str, max: usize) -> String {
    let mut name: String = text
        .to_ascii_lowercase()
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '.' || c == '-' {
                c
            } else {
                '-'
            }
        })
        .collect();
    name = name.trim_matches(|c| c == '-' || c == '.').to_owned();
    if name.len() > max {
        let digest = hex::encode(&Sha256::digest(text.as_bytes())[..4]);
        name.truncate(max - digest.len() - 1);
        name = format!("{}-{digest}", name.trim_end_matches(['-', '.']));
    }
    name
}

/// A PackageInfo's name: `[repository--]package--version`, as Glasskube
/// names them.
pub fn package_info(repository: Option<&str>, package: &str, version: &str) -> String {
    let joined = match repository {
        Some(repository) => format!("{repository}--{package}--{version}"),
        None => format!("{package}--{version}"),
    };
    sanitized(&joined, 253)
}

/// The Instance a ClusterPackage (`namespace` None) or Package becomes:
/// at most 63 characters, since the runtime labels objects with it.
pub fn instance(namespace: Option<&str>, name: &str) -> String {
    match namespace {
        None => sanitized(&format!("clusterpackage-{name}"), 63),
        // A namespace never holds a `.`: `team.a-db` and `team-a.db` stay
        // two Instances.
        Some(namespace) => sanitized(&format!("package-{namespace}.{name}"), 63),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_valid_and_distinct() {
        assert_eq!(
            package_info(Some("glasskube"), "cloudnative-pg", "v1.27.1+1"),
            "glasskube--cloudnative-pg--v1.27.1-1"
        );
        assert_eq!(instance(Some("team-a"), "db"), "package-team-a.db");
        assert_ne!(
            instance(Some("team"), "a-db"),
            instance(Some("team-a"), "db")
        );
        let long = "x".repeat(300);
        let (a, b) = (
            sanitized(&format!("{long}a"), 253),
            sanitized(&format!("{long}b"), 253),
        );
        assert!(a.len() <= 253 && a != b, "{a} {b}");
    }
}
