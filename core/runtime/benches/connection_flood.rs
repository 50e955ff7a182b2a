//! The accept loop under a connection flood (issue 26, item 7): a server
//! process with a soft file limit of 1,024 serves `/healthz` over TLS
//! through [`pakket_runtime::kernel::tls_accept`], as the webhooks and the resolver
//! API do; 2,000 clients keep connections open to it (half never start TLS,
//! half finish the handshake and never ask; each reconnects when the server
//! closes it); meanwhile a legitimate client makes a new connection and one
//! request every 300 ms for a minute.
//!
//! Prints the cap, the legitimate requests' latency (p50, p99, max) and
//! failures, how often the flood's connections were closed, and how much the
//! server logged, per minute. Goals: p99 under 100 ms, under 1 MB of log per
//! minute. Timing is printed, never asserted.
//!
//!     cargo bench -p pakket-runtime --bench connection_flood
//!
//! The server is this same program started again (`FLOOD_SERVER` set), so
//! its file limit and its log are its own.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use axum::Router;
use axum::routing::get;
use hyper_util::rt::TokioIo;
use hyper_util::service::TowerToHyperService;
use pakket_runtime::kernel::tls_accept::{self, AcceptLimits};
use rustls::pki_types::pem::PemObject as _;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use tokio::io::{AsyncBufReadExt as _, AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::{TcpListener, TcpStream};
use tokio_rustls::{TlsAcceptor, TlsConnector};

const FLOOD: usize = 2_000;
const SERVER_FILE_LIMIT: u64 = 1_024;
const RUN_FOR: Duration = Duration::from_secs(60);
const REQUEST_EVERY: Duration = Duration::from_millis(300);

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    if std::env::var_os("FLOOD_SERVER").is_some() {
        runtime.block_on(server());
    } else {
        runtime.block_on(flood());
    }
}

/// The server: its file limit lowered, its log on stderr (as the
/// binaries log), its port on stdout.
async fn server() {
    use nix::sys::resource::{Resource, getrlimit, setrlimit};
    let (_, hard) = getrlimit(Resource::RLIMIT_NOFILE).unwrap();
    setrlimit(Resource::RLIMIT_NOFILE, SERVER_FILE_LIMIT, hard).unwrap();
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter("info")
        .init();
    let cert = std::env::var("FLOOD_CERT").unwrap();
    let key = std::env::var("FLOOD_KEY").unwrap();
    let config =
        rustls::ServerConfig::builder_with_provider(pakket_runtime::kernel::tls::provider())
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_no_client_auth()
            .with_single_cert(
                vec![CertificateDer::from_pem_slice(cert.as_bytes()).unwrap()],
                PrivateKeyDer::from_pem_slice(key.as_bytes()).unwrap(),
            )
            .unwrap();
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    println!("{}", listener.local_addr().unwrap().port());
    let router = Router::new().route("/healthz", get(|| async { "ok" }));
    let limits = AcceptLimits::from_file_limit();
    tracing::info!(
        max_connections = limits.max_connections,
        "serving with a soft file limit of {SERVER_FILE_LIMIT}"
    );
    let serve = move |tls| {
        let service = TowerToHyperService::new(router.clone());
        async move {
            let _ = hyper::server::conn::http1::Builder::new()
                .timer(hyper_util::rt::TokioTimer::new())
                .header_read_timeout(Duration::from_secs(10))
                .serve_connection(TokioIo::new(tls), service)
                .await;
        }
    };
    tls_accept::accept_tls(
        &listener,
        TlsAcceptor::from(Arc::new(config)),
        limits,
        std::future::pending(),
        serve,
    )
    .await;
}

async fn flood() {
    use nix::sys::resource::{Resource, getrlimit, setrlimit};
    // The clients' side holds the flood's 2,000 sockets.
    let (_, hard) = getrlimit(Resource::RLIMIT_NOFILE).unwrap();
    setrlimit(Resource::RLIMIT_NOFILE, hard, hard).unwrap();

    let made = pakket_testkit::https::TestCertificate::new();
    let log = tempfile::NamedTempFile::new().unwrap();
    let mut child = tokio::process::Command::new(std::env::current_exe().unwrap())
        .env("FLOOD_SERVER", "1")
        .env("FLOOD_CERT", &made.cert_pem)
        .env("FLOOD_KEY", &made.key_pem)
        .stdout(std::process::Stdio::piped())
        .stderr(log.reopen().unwrap())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut port = String::new();
    tokio::io::BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut port)
        .await
        .unwrap();
    let address: std::net::SocketAddr = format!("127.0.0.1:{}", port.trim()).parse().unwrap();

    let mut roots = rustls::RootCertStore::empty();
    roots
        .add(CertificateDer::from_pem_slice(made.ca_pem.as_bytes()).unwrap())
        .unwrap();
    let connector = TlsConnector::from(Arc::new(
        rustls::ClientConfig::builder_with_provider(pakket_runtime::kernel::tls::provider())
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_root_certificates(roots)
            .with_no_client_auth(),
    ));

    let closed_by_server = Arc::new(AtomicU64::new(0));
    let open = Arc::new(AtomicU64::new(0));
    for index in 0..FLOOD {
        let (connector, closed_by_server, open) = (
            connector.clone(),
            Arc::clone(&closed_by_server),
            Arc::clone(&open),
        );
        tokio::spawn(async move {
            loop {
                let Ok(tcp) = TcpStream::connect(address).await else {
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    continue;
                };
                open.fetch_add(1, Ordering::Relaxed);
                let mut byte = [0u8; 1];
                // Even: never start TLS. Odd: finish it, then say nothing.
                if index % 2 == 0 {
                    let mut tcp = tcp;
                    let _ = tcp.read(&mut byte).await;
                } else {
                    let name = ServerName::try_from("127.0.0.1").unwrap();
                    if let Ok(mut tls) = connector.connect(name, tcp).await {
                        let _ = tls.read(&mut byte).await;
                    }
                }
                open.fetch_sub(1, Ordering::Relaxed);
                closed_by_server.fetch_add(1, Ordering::Relaxed);
            }
        });
    }
    // Let the flood arrive.
    tokio::time::sleep(Duration::from_secs(3)).await;
    println!(
        "flood: {FLOOD} clients, {} connections open from their side; server soft file limit {SERVER_FILE_LIMIT}",
        open.load(Ordering::Relaxed)
    );

    let log_before = std::fs::metadata(log.path()).unwrap().len();
    let started = Instant::now();
    let mut latencies = Vec::new();
    let mut failures = Vec::new();
    while started.elapsed() < RUN_FOR {
        let tick = Instant::now();
        match tokio::time::timeout(Duration::from_secs(5), request(address, &connector)).await {
            Ok(Ok(())) => latencies.push(tick.elapsed()),
            Ok(Err(error)) => failures.push(error),
            Err(_) => failures.push("no answer within 5 s".to_owned()),
        }
        tokio::time::sleep(REQUEST_EVERY.saturating_sub(tick.elapsed())).await;
    }
    let elapsed = started.elapsed();
    let log_grew = std::fs::metadata(log.path()).unwrap().len() - log_before;
    latencies.sort();
    let at = |q: f64| {
        latencies
            .get(((latencies.len() as f64 * q).ceil() as usize).saturating_sub(1))
            .map_or(f64::NAN, |d| d.as_secs_f64() * 1000.0)
    };
    println!(
        "legitimate requests (new TLS connection + GET /healthz each): {} answered, {} failed; p50 {:.1} ms, p99 {:.1} ms, max {:.1} ms (goal: p99 < 100 ms)",
        latencies.len(),
        failures.len(),
        at(0.50),
        at(0.99),
        latencies
            .last()
            .map_or(f64::NAN, |d| d.as_secs_f64() * 1000.0),
    );
    if let Some(first) = failures.first() {
        println!("first failure: {first}");
    }
    let minutes = elapsed.as_secs_f64() / 60.0;
    println!(
        "flood connections closed by the server: {} in {:.0} s; still open from the clients' side: {}",
        closed_by_server.load(Ordering::Relaxed),
        elapsed.as_secs_f64(),
        open.load(Ordering::Relaxed)
    );
    println!(
        "server log: {} bytes in {:.0} s = {:.1} KB per minute (goal: < 1 MB per minute)",
        log_grew,
        elapsed.as_secs_f64(),
        log_grew as f64 / 1000.0 / minutes
    );
    let _ = child.kill().await;
}

/// One legitimate request on a new connection.
async fn request(address: std::net::SocketAddr, connector: &TlsConnector) -> Result<(), String> {
    let tcp = TcpStream::connect(address)
        .await
        .map_err(|e| format!("connect: {e}"))?;
    let name = ServerName::try_from("127.0.0.1").unwrap();
    let mut tls = connector
        .connect(name, tcp)
        .await
        .map_err(|e| format!("handshake: {e}"))?;
    tls.write_all(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
        .await
        .map_err(|e| format!("write: {e}"))?;
    let mut answer = Vec::new();
    let _ = tls.read_to_end(&mut answer).await;
    let answer = String::from_utf8_lossy(&answer);
    if answer.starts_with("HTTP/1.1 200") {
        Ok(())
    } else {
        Err(format!("answer: {answer:?}"))
    }
}
