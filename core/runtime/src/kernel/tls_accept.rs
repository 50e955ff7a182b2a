//! The accept loop the webhooks and the resolver API share: TLS connections
//! that hold up under a flood of clients that connect and say nothing.
//!
//! - A client that has not finished its TLS handshake within
//!   [`AcceptLimits::handshake_timeout`] is dropped (the HTTP layer drops one
//!   that sends no request headers; see the servers).
//! - At most [`AcceptLimits::max_connections`] are open at once, below the
//!   process's file limit ([`connection_cap`]), so the kube client, the
//!   certificate reloads and the logs always find a descriptor. A new
//!   connection at the cap evicts an old one (the oldest still in its
//!   handshake, else the oldest of all) rather than waiting: a server that
//!   stops accepting at the cap would leave a legitimate client queued in the
//!   kernel behind every idle one, while with eviction it needs only to be
//!   newer than the flood's oldest connections.
//! - A failed accept (out of descriptors after all, say) backs off briefly
//!   and is logged at most once per [`ACCEPT_WARN_EVERY`], with a count, so a
//!   flood cannot fill the disk with warnings.
//!
//! Why not a crate: tower's `ConcurrencyLimit` and axum-server cap requests,
//! not connections, and neither evicts; the loop is small and each piece is
//! tested here.

use std::collections::BTreeMap;
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::net::{TcpListener, TcpStream};
use tokio::task::AbortHandle;
use tokio_rustls::TlsAcceptor;
use tokio_rustls::server::TlsStream;

/// How long the loop waits after a failed accept before trying again: long
/// enough not to spin on a descriptor shortage.
const ACCEPT_BACKOFF: Duration = Duration::from_millis(100);
/// At most one warning per this long about failed accepts; the rest are
/// counted into the next one.
pub const ACCEPT_WARN_EVERY: Duration = Duration::from_secs(10);
/// Descriptors kept out of the connection cap: the kube client's
/// connections and watches, files, the logs, the listener itself.
const RESERVED_DESCRIPTORS: u64 = 256;
/// The cap when the file limit is unknown or unlimited.
const DEFAULT_MAX_CONNECTIONS: usize = 4096;
/// The smallest cap, whatever the file limit says.
const MIN_MAX_CONNECTIONS: usize = 16;

/// What bounds each connection and all of them.
#[derive(Clone, Copy, Debug)]
pub struct AcceptLimits {
    /// A client that has not finished its TLS handshake by then is dropped.
    pub handshake_timeout: Duration,
    /// How many connections may be open at once.
    pub max_connections: usize,
}

impl AcceptLimits {
    /// A 10 s handshake and the cap the file limit allows.
    pub fn from_file_limit() -> Self {
        Self {
            handshake_timeout: Duration::from_secs(10),
            max_connections: connection_cap(soft_file_limit()),
        }
    }
}

/// The process's soft limit on open files, if it has one.
pub fn soft_file_limit() -> Option<u64> {
    use nix::sys::resource::{Resource, getrlimit};
    let (soft, _) = getrlimit(Resource::RLIMIT_NOFILE).ok()?;
    (soft != nix::sys::resource::RLIM_INFINITY).then_some(soft)
}

/// How many connections to allow under a soft file limit of `soft`: the
/// limit less `RESERVED_DESCRIPTORS`, within sane bounds.
pub fn connection_cap(soft: Option<u64>) -> usize {
    match soft {
        None => DEFAULT_MAX_CONNECTIONS,
        Some(soft) => usize::try_from(soft.saturating_sub(RESERVED_DESCRIPTORS))
            .unwrap_or(DEFAULT_MAX_CONNECTIONS)
            .clamp(MIN_MAX_CONNECTIONS, DEFAULT_MAX_CONNECTIONS),
    }
}

/// Accepts TLS connections on `listener` until `shutdown` completes, and
/// hands each one whose handshake finished to `serve` (which speaks HTTP
/// on it), within `limits`.
pub async fn accept_tls<S, F>(
    listener: &TcpListener,
    acceptor: TlsAcceptor,
    limits: AcceptLimits,
    shutdown: impl Future<Output = ()>,
    serve: S,
) where
    S: Fn(TlsStream<TcpStream>) -> F + Clone + Send + 'static,
    F: Future<Output = ()> + Send + 'static,
{
    let open = Open::default();
    let (mut failures, mut evictions) = (Throttled::default(), Throttled::default());
    tokio::pin!(shutdown);
    loop {
        let (tcp, _) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(error) => {
                    failures.happened(1, |failed| {
                        tracing::warn!(%error, failed, "accepting connections fails; backing off");
                    });
                    tokio::time::sleep(ACCEPT_BACKOFF).await;
                    continue;
                }
            },
            () = &mut shutdown => return,
        };
        let _ = tcp.set_nodelay(true);
        let evicted = open.make_room(limits.max_connections);
        if evicted > 0 {
            let max = limits.max_connections;
            evictions.happened(evicted as u64, |evicted| {
                tracing::warn!(
                    evicted,
                    max,
                    "at the connection cap: closed the oldest connections for new ones"
                );
            });
        }
        let id = open.next_id();
        let leaving = Leaving {
            open: open.clone(),
            id,
        };
        let (acceptor, serve) = (acceptor.clone(), serve.clone());
        let timeout = limits.handshake_timeout;
        let connection = async move {
            // Whichever way the task ends (done, failed, evicted), it
            // leaves the table when this is dropped.
            let leaving = leaving;
            // A client that refuses our certificate, or never finishes the
            // handshake, ends here.
            let tls = match tokio::time::timeout(timeout, acceptor.accept(tcp)).await {
                Ok(Ok(tls)) => tls,
                Ok(Err(error)) => {
                    tracing::debug!(%error, "TLS handshake failed");
                    return;
                }
                Err(_) => {
                    tracing::debug!("TLS handshake timed out");
                    return;
                }
            };
            leaving.open.established(leaving.id);
            serve(tls).await;
        };
        // Registered under the table's lock, taken before the spawn, so the
        // task's own removal can never come first (a spawn never runs the
        // task in place).
        let mut table = open.table();
        let task = tokio::spawn(connection);
        table.connections.insert(
            id,
            Connection {
                abort: task.abort_handle(),
                handshaken: false,
            },
        );
    }
}

/// One open connection.
struct Connection {
    /// Ends its task, which closes its socket.
    abort: AbortHandle,
    /// Whether its TLS handshake finished.
    handshaken: bool,
}

#[derive(Default)]
struct Table {
    /// By id: ids grow, so the first is the oldest.
    connections: BTreeMap<u64, Connection>,
    next: u64,
}

/// The open connections, shared with their tasks.
#[derive(Clone, Default)]
struct Open(Arc<Mutex<Table>>);

impl Open {
    fn table(&self) -> std::sync::MutexGuard<'_, Table> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn next_id(&self) -> u64 {
        let mut table = self.table();
        table.next += 1;
        table.next
    }

    fn established(&self, id: u64) {
        if let Some(connection) = self.table().connections.get_mut(&id) {
            connection.handshaken = true;
        }
    }

    /// Evicts connections until one more fits under `max`: the oldest
    /// still in its handshake, else the oldest. How many it evicted.
    fn make_room(&self, max: usize) -> usize {
        let mut evicted = Vec::new();
        {
            let mut table = self.table();
            while table.connections.len() >= max.max(1) {
                let victim = table
                    .connections
                    .iter()
                    .find(|(_, connection)| !connection.handshaken)
                    .or_else(|| table.connections.iter().next())
                    .map(|(id, _)| *id);
                let Some(victim) = victim else { break };
                evicted.extend(table.connections.remove(&victim));
            }
        }
        // Outside the lock: an ended task takes it to leave the table.
        for connection in &evicted {
            connection.abort.abort();
        }
        evicted.len()
    }
}

/// Takes a connection out of the table when its task ends, however it ends.
struct Leaving {
    open: Open,
    id: u64,
}

impl Drop for Leaving {
    fn drop(&mut self) {
        self.open.table().connections.remove(&self.id);
    }
}

/// A warning given at most once per [`ACCEPT_WARN_EVERY`], with how many
/// times it happened since the last one: a flood cannot fill the disk.
#[derive(Default)]
struct Throttled {
    since_warning: u64,
    last_warning: Option<Instant>,
}

impl Throttled {
    /// Counts `times` occurrences; calls `warn` with the count when due.
    fn happened(&mut self, times: u64, warn: impl FnOnce(u64)) {
        self.since_warning += times;
        if self
            .last_warning
            .is_none_or(|at| at.elapsed() >= ACCEPT_WARN_EVERY)
        {
            warn(self.since_warning);
            self.since_warning = 0;
            self.last_warning = Some(Instant::now());
        }
    }
}

#[cfg(test)]
mod tests {
    use std::net::SocketAddr;

    use rustls::pki_types::pem::PemObject as _;
    use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
    use tokio::io::{AsyncBufReadExt as _, AsyncReadExt as _, AsyncWriteExt as _, BufReader};
    use tokio_rustls::TlsConnector;

    use super::*;

    #[test]
    fn the_cap_leaves_room_below_the_file_limit() {
        assert_eq!(connection_cap(Some(1024)), 768);
        assert_eq!(connection_cap(Some(1 << 20)), DEFAULT_MAX_CONNECTIONS);
        assert_eq!(connection_cap(Some(100)), MIN_MAX_CONNECTIONS);
        assert_eq!(connection_cap(None), DEFAULT_MAX_CONNECTIONS);
    }

    /// A server for 127.0.0.1 under `limits` that answers `hello` with
    /// `hi` and waits forever on anything else; and a client that trusts it.
    async fn server(limits: AcceptLimits) -> (SocketAddr, TlsConnector) {
        let made = pakket_testkit::https::TestCertificate::new();
        let server = rustls::ServerConfig::builder_with_provider(crate::kernel::tls::provider())
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_no_client_auth()
            .with_single_cert(
                vec![CertificateDer::from_pem_slice(made.cert_pem.as_bytes()).unwrap()],
                PrivateKeyDer::from_pem_slice(made.key_pem.as_bytes()).unwrap(),
            )
            .unwrap();
        let mut roots = rustls::RootCertStore::empty();
        roots
            .add(CertificateDer::from_pem_slice(made.ca_pem.as_bytes()).unwrap())
            .unwrap();
        let client = rustls::ClientConfig::builder_with_provider(crate::kernel::tls::provider())
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_root_certificates(roots)
            .with_no_client_auth();
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        let acceptor = TlsAcceptor::from(Arc::new(server));
        tokio::spawn(async move {
            let serve = |tls: TlsStream<TcpStream>| async move {
                let mut lines = BufReader::new(tls);
                let mut line = String::new();
                if lines.read_line(&mut line).await.is_ok() && line == "hello\n" {
                    let _ = lines.get_mut().write_all(b"hi\n").await;
                    let _ = lines.get_mut().shutdown().await;
                } else {
                    std::future::pending::<()>().await;
                }
            };
            accept_tls(&listener, acceptor, limits, std::future::pending(), serve).await;
        });
        (address, TlsConnector::from(Arc::new(client)))
    }

    /// Whether the server closed `stream` within `wait` (it reads end of
    /// file or an error; a stream still open reads nothing).
    async fn closed_within(
        wait: Duration,
        stream: &mut (impl tokio::io::AsyncRead + Unpin),
    ) -> bool {
        let mut byte = [0u8; 1];
        matches!(
            tokio::time::timeout(wait, stream.read(&mut byte)).await,
            Ok(Ok(0) | Err(_))
        )
    }

    /// [`closed_within`] a second.
    async fn closed(stream: &mut (impl tokio::io::AsyncRead + Unpin)) -> bool {
        closed_within(Duration::from_secs(1), stream).await
    }

    #[tokio::test]
    async fn at_the_cap_a_new_client_evicts_the_oldest_silent_one_and_is_answered() {
        let limits = AcceptLimits {
            handshake_timeout: Duration::from_secs(60),
            max_connections: 4,
        };
        let (address, connector) = server(limits).await;
        let name = ServerName::try_from("127.0.0.1").unwrap();
        // The oldest: a client that finished its handshake and says nothing.
        let mut idle = connector
            .connect(name.clone(), TcpStream::connect(address).await.unwrap())
            .await
            .unwrap();
        tokio::time::sleep(Duration::from_millis(200)).await;
        // Then three that never start TLS: the cap is reached.
        let mut silent = Vec::new();
        for _ in 0..3 {
            silent.push(TcpStream::connect(address).await.unwrap());
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;

        // A legitimate client is answered...
        let mut legitimate = connector
            .connect(name, TcpStream::connect(address).await.unwrap())
            .await
            .unwrap();
        legitimate.write_all(b"hello\n").await.unwrap();
        let mut answer = String::new();
        let _ = tokio::time::timeout(
            Duration::from_secs(5),
            legitimate.read_to_string(&mut answer),
        )
        .await;
        assert_eq!(answer, "hi\n");
        // ...in the place of the oldest that never finished a handshake,
        // not of the older one that did.
        assert!(closed(&mut silent[0]).await, "the oldest silent one goes");
        for (index, stream) in silent.iter_mut().enumerate().skip(1) {
            assert!(!closed(stream).await, "silent client {index} stays");
        }
        assert!(!closed(&mut idle).await, "the established one stays");
    }

    #[tokio::test]
    async fn a_client_that_never_finishes_its_handshake_is_dropped() {
        let limits = AcceptLimits {
            handshake_timeout: Duration::from_millis(300),
            max_connections: 16,
        };
        let (address, _) = server(limits).await;
        let mut silent = TcpStream::connect(address).await.unwrap();
        assert!(closed_within(Duration::from_secs(5), &mut silent).await);
    }
}
