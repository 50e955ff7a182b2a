//! Image references as Bundles write them: `docker://REGISTRY/REPO:TAG[@DIGEST]`.

use std::fmt;

use oci_client::Reference;

use super::SourceError;

/// The schemes that name an image in a registry. Both mean the same thing
/// here: RukPak wrote `docker://`, OCI artifacts are often written `oci://`.
const SCHEMES: [&str; 2] = ["docker", "oci"];

/// A reference to an image in an OCI registry, parsed from a Bundle's ref.
///
/// A ref without a registry host means Docker Hub (`docker://etcd:v1` is
/// `docker.io/library/etcd:v1`), and one without a tag or digest means
/// `:latest`, as with `docker pull`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ImageRef {
    scheme: &'static str,
    reference: Reference,
}

impl ImageRef {
    /// Parses `docker://REGISTRY/REPO[:TAG][@DIGEST]` or `oci://…`.
    ///
    /// Errors name the input and say what a valid ref looks like.
    pub fn parse(input: &str) -> Result<Self, SourceError> {
        let invalid = |problem: String| SourceError::InvalidRef {
            input: input.to_owned(),
            problem,
        };
        let Some((scheme, rest)) = input.split_once("://") else {
            return Err(invalid(
                "it has no scheme; write docker://REGISTRY/REPOSITORY:TAG (or oci://…)".into(),
            ));
        };
        let Some(scheme) = SCHEMES.into_iter().find(|known| *known == scheme) else {
            return Err(invalid(format!(
                "the scheme {scheme}:// does not name a registry image; \
                 write docker://REGISTRY/REPOSITORY:TAG (or oci://…)"
            )));
        };
        if rest.is_empty() {
            return Err(invalid(
                "it names no image; write docker://REGISTRY/REPOSITORY:TAG".into(),
            ));
        }
        if rest.contains("://") || rest.chars().any(char::is_whitespace) {
            return Err(invalid(
                "it has a second scheme or white space; write docker://REGISTRY/REPOSITORY:TAG"
                    .into(),
            ));
        }
        let reference = Reference::try_from(rest).map_err(|error| {
            invalid(format!(
                "{error}; write docker://REGISTRY/REPOSITORY:TAG with a lowercase repository"
            ))
        })?;
        Ok(Self { scheme, reference })
    }

    /// The registry host (and port) requests go to, e.g. `quay.io` or `127.0.0.1:5000`.
    pub fn registry(&self) -> &str {
        self.reference.resolve_registry()
    }

    /// The repository inside the registry, e.g. `openshift-community-operators/etcd`.
    pub fn repository(&self) -> &str {
        self.reference.repository()
    }

    /// The tag, if the ref names one.
    pub fn tag(&self) -> Option<&str> {
        self.reference.tag()
    }

    /// The digest, if the ref is pinned (`…@sha256:…`).
    pub fn digest(&self) -> Option<&str> {
        self.reference.digest()
    }

    /// The same image pinned to `digest`: what a Bundle's status records, so
    /// the content it reports can be fetched again byte for byte.
    pub fn pinned(&self, digest: &str) -> Self {
        Self {
            scheme: self.scheme,
            reference: Reference::with_digest(
                self.reference.registry().to_owned(),
                self.reference.repository().to_owned(),
                digest.to_owned(),
            ),
        }
    }

    /// The parsed reference, for calls into `oci_client`.
    pub fn as_reference(&self) -> &Reference {
        &self.reference
    }

    /// Whether the registry is on this host's loopback interface
    /// (`localhost`, `127.0.0.0/8`, `::1`), where plain HTTP never crosses a network.
    pub fn is_loopback(&self) -> bool {
        is_loopback_registry(self.registry())
    }
}

impl fmt::Display for ImageRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}://{}", self.scheme, self.reference.whole())
    }
}

/// Whether `registry` (`HOST[:PORT]`, IPv6 hosts in brackets) is a loopback address.
pub fn is_loopback_registry(registry: &str) -> bool {
    let host = match registry.strip_prefix('[') {
        Some(bracketed) => bracketed.split(']').next().unwrap_or_default(),
        None => registry.split(':').next().unwrap_or_default(),
    };
    host.eq_ignore_ascii_case("localhost")
        || host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_a_tagged_ref_with_its_registry() {
        let image =
            ImageRef::parse("docker://quay.io/openshift-community-operators/etcd:v0.9.4").unwrap();
        assert_eq!(image.registry(), "quay.io");
        assert_eq!(image.repository(), "openshift-community-operators/etcd");
        assert_eq!(image.tag(), Some("v0.9.4"));
        assert_eq!(image.digest(), None);
        assert_eq!(
            image.to_string(),
            "docker://quay.io/openshift-community-operators/etcd:v0.9.4"
        );
    }

    #[test]
    fn oci_scheme_and_a_port_and_a_digest() {
        let digest = format!("sha256:{}", "a".repeat(64));
        let image = ImageRef::parse(&format!("oci://127.0.0.1:5000/b/etcd@{digest}")).unwrap();
        assert_eq!(image.registry(), "127.0.0.1:5000");
        assert_eq!(image.digest(), Some(digest.as_str()));
        assert!(image.is_loopback());
        assert_eq!(
            image.to_string(),
            format!("oci://127.0.0.1:5000/b/etcd@{digest}")
        );
    }

    #[test]
    fn a_bare_name_means_docker_hub_latest() {
        let image = ImageRef::parse("docker://busybox").unwrap();
        assert_eq!(image.registry(), "index.docker.io");
        assert_eq!(image.repository(), "library/busybox");
        assert_eq!(image.tag(), Some("latest"));
    }

    #[test]
    fn pinning_keeps_registry_and_repository_and_drops_the_tag() {
        let digest = format!("sha256:{}", "b".repeat(64));
        let image = ImageRef::parse("docker://quay.io/org/img:v1").unwrap();
        let pinned = image.pinned(&digest);
        assert_eq!(
            pinned.to_string(),
            format!("docker://quay.io/org/img@{digest}")
        );
    }

    #[test]
    fn errors_name_the_input_and_say_what_to_write() {
        for (input, expected) in [
            ("quay.io/org/img:v1", "has no scheme"),
            (
                "file:///tmp/bundle",
                "file:// does not name a registry image",
            ),
            ("docker://", "names no image"),
            ("docker://quay.io/Org/Img:v1", "invalid reference format"),
            (
                "docker://quay.io/org/img:v1@sha256:0123456789abcdef0123456789abcdef01234567",
                "digest length",
            ),
            ("docker://quay.io/org/img:bad tag", "white space"),
        ] {
            let message = ImageRef::parse(input).unwrap_err().to_string();
            assert!(message.contains(input), "{message}");
            assert!(message.contains(expected), "{input}: {message}");
            assert!(message.contains("write "), "{message}");
        }
    }

    #[test]
    fn loopback_registries() {
        for registry in [
            "localhost:5000",
            "127.0.0.1:5000",
            "127.3.2.1",
            "[::1]:5000",
            "LOCALHOST",
        ] {
            assert!(is_loopback_registry(registry), "{registry}");
        }
        for registry in [
            "quay.io",
            "10.0.0.1:5000",
            "localhost.example.com",
            "[::2]:5000",
            "128.0.0.1",
        ] {
            assert!(!is_loopback_registry(registry), "{registry}");
        }
    }
}
