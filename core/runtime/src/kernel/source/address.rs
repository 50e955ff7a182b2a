//! Where the provisioner may connect on a requester's behalf. The provisioner
//! runs inside the cluster, with network reach its requesters lack: a
//! Bundle ref must not turn it into a proxy to loopback, link-local (cloud
//! metadata), private or cluster-internal addresses. Those are refused
//! unless the class sets `allowInternalAddresses: true` ([`Reach::Any`]).
//!
//! | refused | as |
//! |---|---|
//! | `127.0.0.0/8`, `::1` | a loopback address |
//! | `169.254.0.0/16`, `fe80::/10` | a link-local address |
//! | `10/8`, `172.16/12`, `192.168/16`, `100.64/10`, `fc00::/7`, `fec0::/10` | a private or cluster-internal address |
//! | `0.0.0.0/8`, `::` | an unspecified address |
//! | `255.255.255.255`, `224/4`, `240/4`, `ff00::/8` | a broadcast, multicast or reserved address |
//! | IPv4-mapped (`::ffff:a.b.c.d`), IPv4-compatible (`::a.b.c.d`), NAT64 (`64:ff9b::/96`) and 6to4 (`2002::/16`) forms | what the IPv4 address they carry is |
//! | `localhost`, `*.localhost`, `*.svc`, `*.local` (so `*.cluster.local`), `*.internal`, `*.home.arpa`, names without a dot | a cluster-internal name (before any lookup) |
//!
//! The check is made where connections are made (`guard`): every address a
//! name resolves to (a reqwest DNS resolver, so a name that resolves to
//! 127.0.0.1, or a DNS answer that changes between a check and the
//! connection, is caught), every literal IP, and every redirect hop. git is
//! handed the checked address (`http.curloptResolve`) and follows no
//! redirects. Public-only fetches never go through a proxy: a proxy
//! resolves names itself, where no check can see.

pub(crate) mod guard;

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

pub use guard::{LookupError, resolve_public, resolve_public_blocking};

/// Where a fetch may connect.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Reach {
    /// Public addresses only (the default).
    Public {
        /// What a refused requester may do, ending the refusal: whom to
        /// ask, and which setting allows internal addresses.
        advice: String,
    },
    /// Any address: the class sets `allowInternalAddresses: true`.
    Any,
}

impl Reach {
    /// What a refused requester may do: the advice ending a refusal.
    pub fn advice(&self) -> String {
        match self {
            Self::Public { advice } => advice.clone(),
            Self::Any => String::new(),
        }
    }
}

/// The kinds of address a public-only fetch refuses.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AddressClass {
    /// `127.0.0.0/8`, `::1`.
    Loopback,
    /// `169.254.0.0/16`, `fe80::/10`: where cloud metadata services live.
    LinkLocal,
    /// RFC 1918, carrier-grade NAT, unique-local and site-local IPv6: where
    /// pods, services and nodes live.
    Private,
    /// `0.0.0.0/8`, `::`: reaches the host itself on most stacks.
    Unspecified,
    /// Broadcast, multicast and the reserved `240.0.0.0/4`.
    Reserved,
}

impl AddressClass {
    /// The class in words, with its article: `a loopback address`.
    pub fn words(self) -> &'static str {
        match self {
            Self::Loopback => "a loopback address",
            Self::LinkLocal => "a link-local address (cloud metadata lives there)",
            Self::Private => "a private or cluster-internal address",
            Self::Unspecified => "an unspecified address",
            Self::Reserved => "a broadcast, multicast or reserved address",
        }
    }
}

impl fmt::Display for AddressClass {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.words())
    }
}

/// The class of an internal address, or `None` for a public one.
pub fn classify(ip: IpAddr) -> Option<AddressClass> {
    match ip {
        IpAddr::V4(v4) => classify_v4(v4),
        IpAddr::V6(v6) => classify_v6(v6),
    }
}

fn classify_v4(ip: Ipv4Addr) -> Option<AddressClass> {
    let [a, b, ..] = ip.octets();
    if ip.is_loopback() {
        Some(AddressClass::Loopback)
    } else if ip.is_link_local() {
        Some(AddressClass::LinkLocal)
    } else if ip.is_private() || (a == 100 && (64..128).contains(&b)) {
        Some(AddressClass::Private)
    } else if a == 0 {
        Some(AddressClass::Unspecified)
    } else if ip.is_broadcast() || ip.is_multicast() || a >= 240 {
        Some(AddressClass::Reserved)
    } else {
        None
    }
}

fn classify_v6(ip: Ipv6Addr) -> Option<AddressClass> {
    let segments = ip.segments();
    // Forms that carry an IPv4 address reach that IPv4 host: mapped
    // (::ffff:a.b.c.d), compatible (::a.b.c.d, deprecated but still routed
    // by some stacks), NAT64 (64:ff9b::a.b.c.d) and 6to4 (2002:AABB:CCDD::).
    let low_v4 = Ipv4Addr::from_bits(ip.to_bits() as u32);
    if let Some(v4) = ip.to_ipv4_mapped() {
        return classify_v4(v4);
    }
    if ip.is_loopback() {
        return Some(AddressClass::Loopback);
    }
    if ip.is_unspecified() {
        return Some(AddressClass::Unspecified);
    }
    if segments[..6] == [0; 6] || segments[..6] == [0x64, 0xff9b, 0, 0, 0, 0] {
        return classify_v4(low_v4);
    }
    if segments[0] == 0x2002 {
        let embedded = (u32::from(segments[1]) << 16) | u32::from(segments[2]);
        return classify_v4(Ipv4Addr::from_bits(embedded));
    }
    let first = segments[0];
    if first & 0xffc0 == 0xfe80 {
        Some(AddressClass::LinkLocal)
    } else if first & 0xfe00 == 0xfc00 || first & 0xffc0 == 0xfec0 {
        Some(AddressClass::Private)
    } else if ip.is_multicast() {
        Some(AddressClass::Reserved)
    } else {
        None
    }
}

/// Whether `host` is a name that means something inside the cluster or the
/// provisioner's own host before it is even resolved: `localhost`, cluster
/// service names, and names without a dot (which the pod's DNS search
/// path turns into service names).
pub fn is_internal_name(host: &str) -> bool {
    let host = host.trim_end_matches('.').to_ascii_lowercase();
    const SUFFIXES: &[&str] = &[".localhost", ".svc", ".local", ".internal", ".home.arpa"];
    host == "localhost"
        || SUFFIXES.iter().any(|suffix| host.ends_with(suffix))
        || !host.contains('.')
}

/// Why a host may not be reached. Its words name the host and what it is,
/// never an address a name resolved to (that is the provisioner's view of
/// the network, not the requester's).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{}", self.words())]
pub struct Refusal {
    /// The host, as the URL names it (no brackets).
    pub host: String,
    /// What it is.
    pub found: Found,
    /// Whether a redirect led there (rather than the ref itself).
    pub redirected: bool,
}

/// What a refused host turned out to be.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Found {
    /// A literal address of this class.
    Address(AddressClass),
    /// A cluster-internal name ([`is_internal_name`]).
    InternalName,
    /// A name one of whose addresses is of this class.
    ResolvesTo(AddressClass),
}

impl Refusal {
    fn words(&self) -> String {
        let host = &self.host;
        match (self.redirected, self.found) {
            (false, Found::Address(class)) => format!("host {host} is {class}"),
            (false, Found::InternalName) => format!("host {host} is a cluster-internal name"),
            (false, Found::ResolvesTo(class)) => format!("host {host} resolves to {class}"),
            (true, Found::Address(class)) => {
                format!("the server redirects to host {host}, which is {class}")
            }
            (true, Found::InternalName) => {
                format!("the server redirects to host {host}, which is a cluster-internal name")
            }
            (true, Found::ResolvesTo(class)) => {
                format!("the server redirects to host {host}, which resolves to {class}")
            }
        }
    }

    /// The same refusal, reached through a redirect.
    pub fn redirected(self) -> Self {
        Self {
            redirected: true,
            ..self
        }
    }
}

/// `host` without the brackets of an IPv6 literal.
pub(crate) fn bare(host: &str) -> &str {
    host.strip_prefix('[')
        .and_then(|host| host.strip_suffix(']'))
        .unwrap_or(host)
}

/// Checks what can be told of `host` (a name or a literal IP, brackets
/// allowed) before any lookup: `Ok(Some(ip))` for a public literal IP,
/// `Ok(None)` for a name only its addresses can judge.
pub fn check_host(host: &str) -> Result<Option<IpAddr>, Refusal> {
    let bare = bare(host);
    let refuse = |found| Refusal {
        host: bare.to_owned(),
        found,
        redirected: false,
    };
    match bare.parse::<IpAddr>() {
        Ok(ip) => match classify(ip) {
            Some(class) => Err(refuse(Found::Address(class))),
            None => Ok(Some(ip)),
        },
        Err(_) if is_internal_name(bare) => Err(refuse(Found::InternalName)),
        Err(_) => Ok(None),
    }
}

/// Checks the addresses `host` resolved to: one internal address refuses
/// the name, as the connection could go to any of them.
pub fn check_resolved(host: &str, addresses: &[IpAddr]) -> Result<(), Refusal> {
    match addresses.iter().find_map(|ip| classify(*ip)) {
        Some(class) => Err(Refusal {
            host: bare(host).to_owned(),
            found: Found::ResolvesTo(class),
            redirected: false,
        }),
        None => Ok(()),
    }
}

/// What to tell the requester about a host a ProvisionerClass refused.
pub fn advice(class: &str) -> String {
    format!(
        "ProvisionerClass {class} does not allow internal addresses (set its parameter \
         allowInternalAddresses: true to allow them)"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn class(text: &str) -> Option<AddressClass> {
        classify(text.parse().unwrap())
    }

    #[test]
    fn every_internal_range_has_its_class() {
        use AddressClass::*;
        let cases = [
            ("127.0.0.1", Loopback),
            ("127.8.9.10", Loopback),
            ("127.255.255.255", Loopback),
            ("::1", Loopback),
            ("169.254.169.254", LinkLocal),
            ("169.254.0.1", LinkLocal),
            ("fe80::1", LinkLocal),
            ("febf:ffff::1", LinkLocal),
            ("10.0.0.1", Private),
            ("10.255.255.255", Private),
            ("172.16.0.1", Private),
            ("172.31.255.255", Private),
            ("192.168.1.1", Private),
            ("100.64.0.1", Private),
            ("100.127.255.255", Private),
            ("fc00::1", Private),
            ("fd12:3456::1", Private),
            ("fec0::1", Private),
            ("0.0.0.0", Unspecified),
            ("0.1.2.3", Unspecified),
            ("::", Unspecified),
            ("255.255.255.255", Reserved),
            ("224.0.0.1", Reserved),
            ("239.255.255.250", Reserved),
            ("240.0.0.1", Reserved),
            ("ff02::1", Reserved),
        ];
        for (ip, expected) in cases {
            assert_eq!(class(ip), Some(expected), "{ip}");
        }
    }

    #[test]
    fn ipv6_forms_of_an_ipv4_address_are_judged_by_it() {
        use AddressClass::*;
        let cases = [
            ("::ffff:127.0.0.1", Some(Loopback)),
            ("::ffff:7f00:1", Some(Loopback)),
            ("::ffff:10.0.0.1", Some(Private)),
            ("::ffff:169.254.169.254", Some(LinkLocal)),
            ("::ffff:0.0.0.0", Some(Unspecified)),
            ("::127.0.0.1", Some(Loopback)),
            ("::192.168.0.1", Some(Private)),
            ("64:ff9b::127.0.0.1", Some(Loopback)),
            ("64:ff9b::a9fe:a9fe", Some(LinkLocal)),
            ("2002:7f00:1::", Some(Loopback)),
            ("2002:a00:1::1", Some(Private)),
            ("::ffff:8.8.8.8", None),
            ("64:ff9b::8.8.8.8", None),
            ("2002:808:808::1", None),
        ];
        for (ip, expected) in cases {
            assert_eq!(class(ip), expected, "{ip}");
        }
    }

    #[test]
    fn public_addresses_pass() {
        for ip in [
            "1.1.1.1",
            "8.8.8.8",
            "140.82.112.3",
            "172.15.255.255",
            "172.32.0.1",
            "100.63.255.255",
            "100.128.0.1",
            "192.169.0.1",
            "169.253.255.255",
            "223.255.255.255",
            "2606:4700::1111",
            "2a00:1450:4001::200e",
        ] {
            assert_eq!(class(ip), None, "{ip}");
        }
    }

    #[test]
    fn cluster_names_and_literals_are_refused_before_any_lookup() {
        for name in [
            "localhost",
            "LOCALHOST.",
            "api.localhost",
            "kubernetes.default.svc",
            "kubernetes.default.svc.cluster.local",
            "registry.cluster.local.",
            "printer.local",
            "metadata.google.internal",
            "nas.home.arpa",
            "registry",
            "kubernetes",
        ] {
            let refusal = check_host(name).expect_err(name);
            assert_eq!(refusal.found, Found::InternalName, "{name}");
            assert_eq!(
                refusal.to_string(),
                format!("host {name} is a cluster-internal name")
            );
        }
        assert_eq!(
            check_host("[::1]").unwrap_err().to_string(),
            "host ::1 is a loopback address"
        );
        assert_eq!(
            check_host("169.254.169.254").unwrap_err().to_string(),
            "host 169.254.169.254 is a link-local address (cloud metadata lives there)"
        );
        assert_eq!(check_host("github.com"), Ok(None));
        assert_eq!(check_host("svc.example.com"), Ok(None));
        assert_eq!(check_host("8.8.8.8"), Ok(Some("8.8.8.8".parse().unwrap())));
        assert_eq!(
            check_host("[2606:4700::1111]"),
            Ok(Some("2606:4700::1111".parse().unwrap()))
        );
    }

    #[test]
    fn a_name_with_one_internal_address_is_refused_without_naming_the_address() {
        let public: IpAddr = "140.82.112.3".parse().unwrap();
        let internal: IpAddr = "10.1.2.3".parse().unwrap();
        assert_eq!(check_resolved("git.example", &[public]), Ok(()));
        let refusal = check_resolved("git.example", &[public, internal]).unwrap_err();
        assert_eq!(
            refusal.to_string(),
            "host git.example resolves to a private or cluster-internal address"
        );
        assert!(!refusal.to_string().contains("10.1.2.3"));
        assert_eq!(
            refusal.redirected().to_string(),
            "the server redirects to host git.example, which resolves to a private or \
             cluster-internal address"
        );
    }

    #[test]
    fn the_advice_names_the_class_and_the_parameter() {
        let reach = Reach::Public {
            advice: advice("plain"),
        };
        assert_eq!(
            reach.advice(),
            "ProvisionerClass plain does not allow internal addresses (set its parameter \
             allowInternalAddresses: true to allow them)"
        );
    }
}
