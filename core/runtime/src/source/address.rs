//! Where the provisioner may connect on a requester's behalf. The provisioner
//! runs inside the cluster, with network reach its requesters lack: a
//! Bundle ref must not turn it into a proxy to loopback, link-local (cloud
//! metadata), private or cluster-internal addresses. Those are refused
//! unless the class sets `allowInternalAddresses: true`.
//!
//! The check is made where connections are made, so it cannot be talked
//! around: every address a name resolves to ([`GuardedResolver`], so a
//! name that resolves to 127.0.0.1, or a DNS answer that changes between a
//! check and the connection, is caught), every literal IP, and every
//! redirect hop ([`redirect_policy`]). git gets the checked address pinned
//! (`http.curloptResolve`) and no redirects.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::Arc;

/// Why an address is internal, in words (`a loopback address`), or `None`
/// for a public one.
pub fn internal_ip(ip: IpAddr) -> Option<&'static str> {
    match ip {
        IpAddr::V4(v4) => internal_v4(v4),
        IpAddr::V6(v6) => {
            // IPv4-mapped (::ffff:a.b.c.d) and -compatible forms reach the
            // same IPv4 host.
            if let Some(v4) = v6.to_ipv4_mapped() {
                return internal_v4(v4);
            }
            internal_v6(v6)
        }
    }
}

fn internal_v4(ip: Ipv4Addr) -> Option<&'static str> {
    let [a, b, ..] = ip.octets();
    if ip.is_loopback() {
        Some("a loopback address")
    } else if ip.is_link_local() {
        Some("a link-local address (cloud metadata lives there)")
    } else if ip.is_private() || (a == 100 && (64..128).contains(&b)) {
        Some("a private or cluster-internal address")
    } else if ip.is_unspecified() || a == 0 {
        Some("an unspecified address")
    } else if ip.is_broadcast() || ip.is_multicast() || a >= 240 {
        Some("a broadcast, multicast or reserved address")
    } else {
        None
    }
}

fn internal_v6(ip: Ipv6Addr) -> Option<&'static str> {
    let first = ip.segments()[0];
    if ip.is_loopback() {
        Some("a loopback address")
    } else if ip.is_unspecified() {
        Some("an unspecified address")
    } else if first & 0xffc0 == 0xfe80 {
        Some("a link-local address (cloud metadata lives there)")
    } else if first & 0xfe00 == 0xfc00 {
        Some("a private or cluster-internal address")
    } else if ip.is_multicast() {
        Some("a broadcast, multicast or reserved address")
    } else if ip.segments()[..6] == [0; 6] {
        // IPv4-compatible (::a.b.c.d), deprecated but still routed by some stacks.
        internal_v4(Ipv4Addr::from_bits(ip.to_bits() as u32))
    } else {
        None
    }
}

/// Why a host name is internal before it is even resolved (`localhost`,
/// cluster service names), or `None`.
pub fn internal_name(host: &str) -> Option<&'static str> {
    let host = host.trim_end_matches('.').to_ascii_lowercase();
    let internal = host == "localhost"
        || host.ends_with(".localhost")
        || host.ends_with(".svc")
        || host.ends_with(".cluster.local")
        || host.ends_with(".internal")
        || !host.contains('.');
    internal.then_some("a cluster-internal name")
}

/// Why `host` (a name or a literal IP, brackets allowed) may not be
/// reached, or `None` when only its resolved addresses can tell.
pub fn refused_host(host: &str) -> Option<String> {
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    match bare.parse::<IpAddr>() {
        Ok(ip) => internal_ip(ip).map(|why| format!("host {bare} is {why}")),
        Err(_) => internal_name(bare).map(|why| format!("host {bare} is {why}")),
    }
}

/// What to tell the requester about a refused host.
pub fn advice(class: &str) -> String {
    format!(
        "ProvisionerClass {class} does not allow internal addresses (set its parameter \
         allowInternalAddresses: true to allow them)"
    )
}

/// Resolves `host:port` and returns the addresses, refusing the host when
/// any of them is internal (a name that resolves to both is refused: the
/// connection could go to either).
pub async fn resolve_public(host: &str, port: u16) -> Result<Vec<SocketAddr>, String> {
    if let Some(why) = refused_host(host) {
        return Err(why);
    }
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    if let Ok(ip) = bare.parse::<IpAddr>() {
        return Ok(vec![SocketAddr::new(ip, port)]);
    }
    let found: Vec<SocketAddr> = tokio::net::lookup_host((bare, port))
        .await
        .map_err(|error| format!("host {bare} does not resolve: {error}"))?
        .collect();
    if found.is_empty() {
        return Err(format!("host {bare} resolves to no address"));
    }
    if let Some((address, why)) = found
        .iter()
        .find_map(|address| internal_ip(address.ip()).map(|why| (address, why)))
    {
        return Err(format!("host {bare} resolves to {}, {why}", address.ip()));
    }
    Ok(found)
}

/// A DNS resolver for reqwest that refuses internal addresses, so the
/// check holds for the very addresses connected to.
#[derive(Clone, Debug, Default)]
pub struct GuardedResolver;

impl reqwest::dns::Resolve for GuardedResolver {
    fn resolve(&self, name: reqwest::dns::Name) -> reqwest::dns::Resolving {
        let host = name.as_str().to_owned();
        Box::pin(async move {
            // The port is chosen by the connector; 0 here is replaced.
            let addresses = resolve_public(&host, 0)
                .await
                .map_err(|why| -> Box<dyn std::error::Error + Send + Sync> { why.into() })?;
            let addresses: reqwest::dns::Addrs = Box::new(addresses.into_iter());
            Ok(addresses)
        })
    }
}

/// A redirect policy that follows at most `limit` hops and refuses any to
/// an internal literal address or name (names that resolve internally are
/// caught by [`GuardedResolver`]).
pub fn redirect_policy(limit: usize) -> reqwest::redirect::Policy {
    reqwest::redirect::Policy::custom(move |attempt| {
        if attempt.previous().len() >= limit {
            return attempt.error(format!("more than {limit} redirects"));
        }
        let refused = attempt.url().host_str().and_then(refused_host);
        match refused {
            Some(why) => attempt.error(format!("a redirect went to an internal address: {why}")),
            None => attempt.follow(),
        }
    })
}

/// The resolver, shareable.
pub fn guarded_resolver() -> Arc<GuardedResolver> {
    Arc::new(GuardedResolver)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(text: &str) -> Option<&'static str> {
        internal_ip(text.parse().unwrap())
    }

    #[test]
    fn internal_ranges_are_recognised() {
        for internal in [
            "127.0.0.1",
            "127.8.9.10",
            "10.1.2.3",
            "172.16.0.1",
            "172.31.255.255",
            "192.168.1.1",
            "169.254.169.254",
            "100.64.0.1",
            "100.127.255.255",
            "0.0.0.0",
            "255.255.255.255",
            "224.0.0.1",
            "::1",
            "::",
            "fe80::1",
            "fd00::1",
            "fc00::1",
            "::ffff:127.0.0.1",
            "::ffff:10.0.0.1",
            "::ffff:169.254.169.254",
            "::127.0.0.1",
            "ff02::1",
        ] {
            assert!(ip(internal).is_some(), "{internal} is internal");
        }
        for public in [
            "1.1.1.1",
            "8.8.8.8",
            "172.32.0.1",
            "100.128.0.1",
            "2606:4700::1111",
            "::ffff:8.8.8.8",
        ] {
            assert!(ip(public).is_none(), "{public} is public");
        }
        assert_eq!(
            ip("169.254.169.254"),
            Some("a link-local address (cloud metadata lives there)")
        );
    }

    #[test]
    fn cluster_names_and_literals_are_refused_before_resolving() {
        for name in [
            "localhost",
            "LOCALHOST.",
            "api.localhost",
            "kubernetes.default.svc",
            "kubernetes.default.svc.cluster.local",
            "metadata.google.internal",
            "registry",
        ] {
            assert!(refused_host(name).is_some(), "{name}");
        }
        assert_eq!(
            refused_host("[::1]").as_deref(),
            Some("host ::1 is a loopback address")
        );
        assert!(refused_host("github.com").is_none());
        assert!(refused_host("8.8.8.8").is_none());
    }

    #[tokio::test]
    async fn a_name_resolving_to_loopback_is_refused() {
        let error = resolve_public("localhost", 443).await.unwrap_err();
        assert!(error.contains("cluster-internal name"), "{error}");
        let error = resolve_public("127.0.0.1", 443).await.unwrap_err();
        assert_eq!(error, "host 127.0.0.1 is a loopback address");
    }
}
