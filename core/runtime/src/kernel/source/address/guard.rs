//! The address policy where connections are made: lookups that refuse
//! internal answers, a DNS resolver and a redirect policy for reqwest, and
//! recognising a refusal in an error's chain of causes.
//!
//! reqwest asks the resolver for every host name it connects to (the ref's
//! and each redirect's), so no name reaches a socket unchecked. Literal IPs
//! skip resolvers (hyper-util connects to them directly): the `https://`
//! source checks the ref's own host before sending anything, and the
//! redirect policy checks every later hop.

use std::error::Error as StdError;
use std::io;
use std::net::{IpAddr, SocketAddr, ToSocketAddrs as _};
use std::sync::Arc;

use reqwest::Url;

use super::{Refusal, bare, check_host, check_resolved};
use crate::source::error::causes;

/// Why a host could not be looked up, or was refused.
#[derive(Debug, thiserror::Error)]
pub enum LookupError {
    /// The host is internal.
    #[error(transparent)]
    Refused(Refusal),
    /// The name does not resolve (or the resolver failed).
    #[error("host {host} does not resolve: {cause}")]
    Failed {
        /// The host.
        host: String,
        /// The resolver's words.
        cause: io::Error,
    },
}

/// Resolves `host` (a name or a literal IP) and returns its addresses with
/// `port`, refusing it if it or any of its addresses is internal.
pub async fn resolve_public(host: &str, port: u16) -> Result<Vec<SocketAddr>, LookupError> {
    if let Some(ip) = check_host(host).map_err(LookupError::Refused)? {
        return Ok(vec![SocketAddr::new(ip, port)]);
    }
    let name = bare(host);
    let found = tokio::net::lookup_host((name, port)).await;
    checked(name, found.map(Iterator::collect))
}

/// [`resolve_public`] for blocking code (git runs in `spawn_blocking`).
pub fn resolve_public_blocking(host: &str, port: u16) -> Result<Vec<SocketAddr>, LookupError> {
    if let Some(ip) = check_host(host).map_err(LookupError::Refused)? {
        return Ok(vec![SocketAddr::new(ip, port)]);
    }
    let name = bare(host);
    checked(name, (name, port).to_socket_addrs().map(Iterator::collect))
}

fn checked(name: &str, found: io::Result<Vec<SocketAddr>>) -> Result<Vec<SocketAddr>, LookupError> {
    let failed = |cause| LookupError::Failed {
        host: name.to_owned(),
        cause,
    };
    let found = found.map_err(failed)?;
    if found.is_empty() {
        return Err(failed(io::Error::new(
            io::ErrorKind::NotFound,
            "no address",
        )));
    }
    let ips: Vec<IpAddr> = found.iter().map(SocketAddr::ip).collect();
    if let Err(refusal) = check_resolved(name, &ips) {
        // The addresses are the provisioner's view of the network: logged
        // for the operator, not told to the requester.
        tracing::debug!(host = name, addresses = ?ips, "refused: an internal address");
        return Err(LookupError::Refused(refusal));
    }
    Ok(found)
}

/// A DNS resolver for reqwest that refuses internal answers, so the check
/// holds for the very addresses connected to.
#[derive(Clone, Debug, Default)]
pub(crate) struct GuardedResolver;

impl reqwest::dns::Resolve for GuardedResolver {
    fn resolve(&self, name: reqwest::dns::Name) -> reqwest::dns::Resolving {
        let host = name.as_str().to_owned();
        Box::pin(async move {
            // The connector sets the port; 0 here is replaced.
            match resolve_public(&host, 0).await {
                Ok(addresses) => Ok(Box::new(addresses.into_iter()) as reqwest::dns::Addrs),
                Err(LookupError::Refused(refusal)) => Err(Box::new(refusal) as _),
                Err(LookupError::Failed { cause, .. }) => Err(Box::new(cause) as _),
            }
        })
    }
}

/// The resolver, as reqwest takes it.
pub(crate) fn guarded_resolver() -> Arc<GuardedResolver> {
    Arc::new(GuardedResolver)
}

/// A server redirected more often than allowed.
#[derive(Debug, thiserror::Error)]
#[error("the server redirected more than {0} times")]
pub(crate) struct TooManyRedirects(pub usize);

/// Why a redirect to `url` may not be followed by a public-only fetch:
/// its host is a literal internal address or an internal name (a name
/// that resolves to an internal address is refused by the resolver when
/// the redirect is followed).
pub fn redirect_refusal(url: &Url) -> Option<Refusal> {
    let Some(host) = url.host_str() else {
        return Some(Refusal {
            host: String::new(),
            found: super::Found::InternalName,
            redirected: true,
        });
    };
    check_host(host).err().map(Refusal::redirected)
}

/// A redirect policy that follows at most `limit` hops, each checked by
/// [`redirect_refusal`].
pub(crate) fn redirect_policy(limit: usize) -> reqwest::redirect::Policy {
    reqwest::redirect::Policy::custom(move |attempt| {
        if attempt.previous().len() > limit {
            return attempt.error(TooManyRedirects(limit));
        }
        match redirect_refusal(attempt.url()) {
            Some(refusal) => attempt.error(refusal),
            None => attempt.follow(),
        }
    })
}

/// The address refusal somewhere in `error`'s chain of causes, if any.
pub(crate) fn refusal_in(error: &(dyn StdError + 'static)) -> Option<Refusal> {
    causes(error)
        .into_iter()
        .find_map(|cause| cause.downcast_ref::<Refusal>())
        .cloned()
}

#[cfg(test)]
mod tests {
    use std::io::{BufRead as _, BufReader, Write as _};
    use std::net::TcpListener;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;
    use crate::source::address::{AddressClass, Found};

    #[tokio::test]
    async fn names_and_literals_that_reach_loopback_are_refused() {
        let refused = |result: Result<Vec<SocketAddr>, LookupError>| match result {
            Err(LookupError::Refused(refusal)) => refusal.to_string(),
            other => panic!("not refused: {other:?}"),
        };
        assert_eq!(
            refused(resolve_public("localhost", 443).await),
            "host localhost is a cluster-internal name"
        );
        assert_eq!(
            refused(resolve_public("127.0.0.1", 443).await),
            "host 127.0.0.1 is a loopback address"
        );
        assert_eq!(
            refused(resolve_public_blocking("[::ffff:127.0.0.1]", 443)),
            "host ::ffff:127.0.0.1 is a loopback address"
        );
        // A dotted name whose answer is loopback: refused by its answer.
        // (`localhost.` with a trailing dot is caught by name; a numeric
        // name the resolver answers itself shows the answer is checked.)
        let answer = checked("db.example", Ok(vec!["127.0.0.1:443".parse().unwrap()]));
        assert_eq!(
            refused(answer),
            "host db.example resolves to a loopback address"
        );
        assert_eq!(
            resolve_public("8.8.8.8", 443).await.unwrap(),
            vec!["8.8.8.8:443".parse().unwrap()]
        );
    }

    #[test]
    fn a_lookup_failure_is_not_a_refusal() {
        let failed = checked("nowhere.example", Ok(vec![]));
        assert!(
            matches!(failed, Err(LookupError::Failed { .. })),
            "{failed:?}"
        );
    }

    #[test]
    fn redirects_to_internal_literals_and_names_are_refused() {
        let refusal = |url: &str| redirect_refusal(&Url::parse(url).unwrap());
        for url in [
            "https://127.0.0.1/x",
            "https://127.0.0.1:8443/x",
            "https://[::1]/x",
            "https://[::ffff:169.254.169.254]/latest/meta-data",
            "https://169.254.169.254/latest/meta-data",
            "https://10.0.0.1/x",
            "https://2130706433/x",
            "https://0x7f.1/x",
            "https://localhost/x",
            "https://kubernetes.default.svc/api",
            "https://metadata.google.internal/x",
        ] {
            let refusal = refusal(url).unwrap_or_else(|| panic!("{url} is refused"));
            assert!(refusal.redirected, "{url}");
            assert!(
                refusal
                    .to_string()
                    .starts_with("the server redirects to host "),
                "{refusal}"
            );
        }
        assert_eq!(
            refusal("https://169.254.169.254/").map(|r| r.found),
            Some(Found::Address(AddressClass::LinkLocal))
        );
        assert_eq!(refusal("https://github.com/org/repo"), None);
        assert_eq!(refusal("https://140.82.112.3/"), None);
    }

    /// A plain HTTP server on 127.0.0.1 that answers every request with a
    /// redirect to `location(its own address)`; returns its address.
    fn redirecting(location: impl Fn(SocketAddr) -> String + Send + 'static) -> SocketAddr {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let address = listener.local_addr().unwrap();
        let location = location(address);
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { continue };
                let mut reader = BufReader::new(stream.try_clone().unwrap());
                let mut line = String::new();
                while reader.read_line(&mut line).is_ok_and(|n| n > 2) {
                    line.clear();
                }
                let _ = write!(
                    stream,
                    "HTTP/1.1 302 Found\r\nLocation: {location}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
                );
            }
        });
        address
    }

    /// A listener on 127.0.0.1 that counts the connections it is offered.
    fn counting() -> (SocketAddr, Arc<AtomicUsize>) {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let address = listener.local_addr().unwrap();
        let count = Arc::new(AtomicUsize::new(0));
        let seen = Arc::clone(&count);
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                seen.fetch_add(1, Ordering::SeqCst);
                drop(stream);
            }
        });
        (address, count)
    }

    fn guarded(limit: usize) -> reqwest::Client {
        crate::source::options::install_ring_provider();
        reqwest::Client::builder()
            .no_proxy()
            .dns_resolver(guarded_resolver())
            .redirect(redirect_policy(limit))
            .build()
            .unwrap()
    }

    /// The guarded resolver and redirect policy as reqwest runs them. The
    /// first hop is a literal loopback address, which skips the resolver
    /// (the `https://` source refuses it before sending; here it stands for
    /// a public server), so the redirect is what is checked. Plain HTTP,
    /// as neither depends on the scheme.
    #[tokio::test]
    async fn a_redirect_to_an_internal_address_is_not_followed_and_nothing_is_sent_there() {
        let client = guarded(10);
        let (target, connections) = counting();
        let port = target.port();
        for (location, expected) in [
            (
                format!("http://127.0.0.1:{port}/secret"),
                "the server redirects to host 127.0.0.1, which is a loopback address",
            ),
            (
                format!("http://[::ffff:127.0.0.1]:{port}/secret"),
                "the server redirects to host ::ffff:7f00:1, which is a loopback address",
            ),
            (
                format!("http://localhost:{port}/secret"),
                "the server redirects to host localhost, which is a cluster-internal name",
            ),
            (
                format!("http://localhost.:{port}/secret"),
                "the server redirects to host localhost., which is a cluster-internal name",
            ),
        ] {
            let to = location.clone();
            let first = redirecting(move |_| to.clone());
            let error = client
                .get(format!("http://{first}/bundle.tgz"))
                .send()
                .await
                .expect_err(&location);
            let refusal =
                refusal_in(&error).unwrap_or_else(|| panic!("{location}: not refused: {error:?}"));
            assert_eq!(refusal.to_string(), expected, "{location}");
        }
        assert_eq!(
            connections.load(Ordering::SeqCst),
            0,
            "nothing was sent to the internal address"
        );

        // The same redirect without the guard is followed: the test would
        // see a connection.
        let open = reqwest::Client::builder().no_proxy().build().unwrap();
        let first = redirecting(move |_| format!("http://127.0.0.1:{port}/secret"));
        let _ = open.get(format!("http://{first}/bundle.tgz")).send().await;
        assert!(connections.load(Ordering::SeqCst) >= 1);
    }

    #[tokio::test]
    async fn the_resolver_refuses_internal_names_and_answers() {
        use reqwest::dns::Resolve as _;
        let refused = |name: &str| {
            let name: reqwest::dns::Name = name.parse().unwrap();
            async move {
                match GuardedResolver.resolve(name).await {
                    Ok(_) => panic!("resolved"),
                    Err(error) => refusal_in(&*error).map(|refusal| refusal.to_string()),
                }
            }
        };
        assert_eq!(
            refused("localhost").await.as_deref(),
            Some("host localhost is a cluster-internal name")
        );
        assert_eq!(
            refused("kubernetes.default.svc.cluster.local")
                .await
                .as_deref(),
            Some("host kubernetes.default.svc.cluster.local is a cluster-internal name")
        );
    }

    /// A loop can only be served from loopback here, which the guard
    /// refuses as a redirect target; with a limit of 0 the count is what
    /// stops the first hop, so the limit is seen as itself, not as a refusal.
    #[tokio::test]
    async fn a_redirect_past_the_limit_is_reported_as_the_limit() {
        let looping = redirecting(|own| format!("http://{own}/again"));
        let error = guarded(0)
            .get(format!("http://{looping}/x"))
            .send()
            .await
            .unwrap_err();
        assert!(refusal_in(&error).is_none());
        let stopped = causes(&error)
            .into_iter()
            .find_map(|cause| cause.downcast_ref::<TooManyRedirects>())
            .map(ToString::to_string);
        assert_eq!(
            stopped.as_deref(),
            Some("the server redirected more than 0 times")
        );
    }
}
