//! Where an image ref may send the provisioner: its registry is judged as
//! an `https://` ref's host is ([`crate::source::address`]). Without this,
//! `docker://10.0.0.7:8080/x:y` or `oci://169.254.169.254/x:y` would have
//! the provisioner, from inside the cluster, call hosts its requester
//! cannot reach, and tell her what they answered.
//!
//! A registry the class's admin named is allowed: one in
//! `insecureRegistries`, and the registry of a ref a `mirrors` entry
//! rewrites (the mirror, the admin's choice, is what is contacted). Any
//! other registry must be a public address, or resolve only to public
//! addresses, unless the class sets `allowInternalAddresses: true`.
//!
//! Checked once before the pull: the registry client resolves the name
//! again when it connects, so a name whose DNS answer changes in between
//! is not caught here (the `https://` source checks every connection).

use super::UnpackOptions;
use crate::source::ImageRef;
use crate::source::address::{self, Reach};

/// Why `reference` may not be pulled for this class, in words ending
/// with what to do; `Ok` when it may.
pub(super) async fn check(reference: &str, options: &UnpackOptions) -> Result<(), String> {
    let reach = options.reach();
    if reach == Reach::Any || crate::source::mirror::rewrite(reference, &options.mirrors).is_some()
    {
        return Ok(());
    }
    // A ref that does not parse is refused, in its own words, by the pull.
    let Ok(image) = ImageRef::parse(reference) else {
        return Ok(());
    };
    let registry = image.registry();
    if options.insecure_registries.iter().any(|r| r == registry) {
        return Ok(());
    }
    let (host, port) = host_and_port(registry);
    let refused = |refusal: String| {
        format!(
            "registry {registry}: {refusal}; nothing was sent to it. {}",
            reach.advice()
        )
    };
    match address::check_host(host) {
        Err(refusal) => Err(refused(refusal.to_string())),
        Ok(Some(_)) => Ok(()),
        Ok(None) => match address::resolve_public(host, port).await {
            Ok(_) => Ok(()),
            Err(address::LookupError::Refused(refusal)) => Err(refused(refusal.to_string())),
            // A name that does not resolve: the pull says so.
            Err(address::LookupError::Failed { .. }) => Ok(()),
        },
    }
}

/// `registry.example:5000` as its host and port (443 unless written);
/// an IPv6 literal keeps its brackets.
fn host_and_port(registry: &str) -> (&str, u16) {
    match registry.rsplit_once(':') {
        Some((host, port)) if !port.contains(']') => (host, port.parse().unwrap_or(443)),
        _ => (registry, 443),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn options(allow: bool, insecure: &[&str]) -> UnpackOptions {
        UnpackOptions {
            allow_internal_addresses: allow,
            insecure_registries: insecure.iter().map(|r| (*r).to_owned()).collect(),
            ..UnpackOptions::default()
        }
    }

    #[tokio::test]
    async fn an_internal_registry_is_refused_unless_the_class_names_or_allows_it() {
        for reference in [
            "docker://127.0.0.1:5000/bundles/etcd:v1",
            "oci://169.254.169.254/latest/meta-data:x",
            "docker://10.0.0.7:8080/app:v1",
            "docker://registry.kube-system.svc:5000/app:v1",
            "docker://localhost:5000/app:v1",
        ] {
            let refused = check(reference, &options(false, &[]))
                .await
                .expect_err(reference);
            assert!(
                refused.contains("nothing was sent to it")
                    && refused.contains("allowInternalAddresses: true"),
                "{reference}: {refused}"
            );
        }
        let reference = "docker://127.0.0.1:5000/bundles/etcd:v1";
        assert_eq!(check(reference, &options(true, &[])).await, Ok(()));
        assert_eq!(
            check(reference, &options(false, &["127.0.0.1:5000"])).await,
            Ok(()),
            "a registry the admin named in insecureRegistries"
        );
        assert_eq!(
            check(
                "docker://quay.io/operatorhubio/etcd:v0.9.4",
                &options(false, &[])
            )
            .await,
            Ok(()),
            "a public name (or one that does not resolve here: the pull says so)"
        );
    }

    #[test]
    fn a_registrys_port_is_read_and_ipv6_brackets_kept() {
        assert_eq!(host_and_port("quay.io"), ("quay.io", 443));
        assert_eq!(host_and_port("127.0.0.1:5000"), ("127.0.0.1", 5000));
        assert_eq!(host_and_port("[::1]:5000"), ("[::1]", 5000));
        assert_eq!(host_and_port("[::1]"), ("[::1]", 443));
    }
}
