//! The resolver API's figures (in docs/figures.md), printed,
//! never asserted:
//!
//! 1. catalog load and swap: the derived community catalog loaded as the
//!    controller loads a new digest ([`load::load`] of unpacked image
//!    content, then [`Catalogs::put`], on a blocking thread), first into an
//!    empty process, then again as a new digest while the old one serves;
//! 2. the process's memory (`VmRSS`, `VmHWM`) serving that catalog, after
//!    the load, after the swap and after the HTTP traffic (goal: < 60 MB);
//! 3. `POST /v1/resolve` over real HTTP on loopback: the crate's router
//!    served as `--api-insecure-loopback` serves it (no TLS, no auth), one
//!    request per package's default channel, sent at a fixed rate.
//!
//! ```text
//! cargo bench -p pakket-resolveset --bench api [-- [--rate N] [--seconds S] [--runs K]]
//! ```
//!
//! The catalog is `fbc/community-operators-prod-derived/catalog.json`
//! (DERIVED by the data curators from every bundle of
//! redhat-openshift-ecosystem/community-operators-prod at 699495f2; 333
//! packages, 7,018 bundles; see ../shared/data/README.md).
//!
//! The controller, the API and the client run in this process on one
//! tokio runtime, with no Kubernetes: no kube client, no watches. So the
//! RSS is the serving part of the process plus the bench's small share
//! (the reqwest client), and the client competes with the server for the
//! same cores. Latency is counted from the moment a request was due, not
//! when it was sent, so a sender falling behind shows in the figures.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use pakket_resolve_client::ResolverClient;
use pakket_resolveset::api::listen::{self, Transport};
use pakket_resolveset::api::{self, ApiState};
use pakket_resolveset::catalogs::catalog::{CatalogSource, ImageCatalogSource};
use pakket_resolveset::catalogs::load;
use pakket_resolveset::catalogs::serving::{Catalogs, counts};
use pakket_resolveset::protocol::resolve::{RequestItem, ResolveRequest, ResolveResponse};

/// jemalloc with its background thread, not the system allocator: a
/// catalog swap frees a whole catalog's worth of small allocations, which
/// glibc's malloc kept as RSS (81 MiB after one swap of the community
/// catalog, 45 MiB before it); jemalloc returns them within seconds.
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

const CATALOG: &str = "fbc/community-operators-prod-derived/catalog.json";

struct Options {
    rate: u32,
    seconds: u32,
    runs: usize,
}

fn options() -> Options {
    let mut options = Options {
        rate: 200,
        seconds: 10,
        runs: 5,
    };
    let mut args = std::env::args().skip(1).filter(|arg| arg != "--bench");
    while let Some(arg) = args.next() {
        let value = args.next().and_then(|value| value.parse().ok());
        match (arg.as_str(), value) {
            ("--rate", Some(n)) if n > 0 => options.rate = n,
            ("--seconds", Some(n)) if n > 0 => options.seconds = n,
            ("--runs", Some(n)) if n > 0 => options.runs = n as usize,
            _ => panic!("usage: api [--rate N] [--seconds S] [--runs K] (positive numbers)"),
        }
    }
    options
}

fn main() -> anyhow::Result<()> {
    let options = options();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    runtime.block_on(run(options))
}

async fn run(options: Options) -> anyhow::Result<()> {
    // The API first, as the process starts it, so every memory figure
    // below is a serving process's.
    let catalogs = Arc::new(Catalogs::new());
    let address = serve_api(Arc::clone(&catalogs)).await?;
    println!("resolver API on http://{address} (as --api-insecure-loopback serves it)");
    println!(
        "{:<44} {}",
        "memory, API up, no catalog:",
        pakket_testkit::memory()
    );

    let contents = Contents::new()?;
    load_and_swap(&catalogs, &contents, options.runs).await?;
    // What the allocator gives back once a swap's old catalog is freed.
    tokio::time::sleep(Duration::from_secs(15)).await;
    println!(
        "{:<44} {}",
        "memory, 15 s after the last swap:",
        pakket_testkit::memory()
    );
    resolve_at_rate(&catalogs, address, options.rate, options.seconds).await?;
    println!(
        "{:<44} {}",
        "memory, after the HTTP traffic:",
        pakket_testkit::memory()
    );
    Ok(())
}

/// Starts the router on a free loopback port the way `process::start`
/// does with `--api-insecure-loopback`.
async fn serve_api(catalogs: Arc<Catalogs>) -> anyhow::Result<SocketAddr> {
    let requested: SocketAddr = "127.0.0.1:0".parse()?;
    let transport = Transport::from_flags(requested, true, None, None)?;
    let router = api::router(ApiState {
        catalogs,
        auth: None,
    });
    let listener = tokio::net::TcpListener::bind(requested).await?;
    let address = listener.local_addr()?;
    tokio::spawn(async move {
        if let Err(error) = listen::serve(listener, router, transport).await {
            eprintln!("the resolver API stopped: {error}");
        }
    });
    Ok(address)
}

/// Two unpacked "digests" of the same catalog, in OLM's image layout
/// (`configs/`), as the content store holds them.
struct Contents {
    dirs: [PathBuf; 2],
}

impl Contents {
    fn new() -> anyhow::Result<Self> {
        let catalog = pakket_testkit::data(CATALOG);
        let root =
            std::env::temp_dir().join(format!("pakket-resolveset-bench-{}", std::process::id()));
        let dirs = [root.join("a"), root.join("b")];
        for dir in &dirs {
            std::fs::create_dir_all(dir.join("configs"))?;
            std::fs::copy(&catalog, dir.join("configs/catalog.json"))?;
        }
        Ok(Self { dirs })
    }

    fn dir(&self, run: usize) -> &Path {
        &self.dirs[run % 2]
    }
}

impl Drop for Contents {
    fn drop(&mut self) {
        if let Some(root) = self.dirs[0].parent() {
            let _ = std::fs::remove_dir_all(root);
        }
    }
}

/// One controller sync's CPU part: load, then build and swap in the new
/// snapshot; the two durations.
async fn sync(
    catalogs: &Arc<Catalogs>,
    dir: &Path,
    digest: String,
) -> anyhow::Result<(Duration, Duration)> {
    let catalogs = Arc::clone(catalogs);
    let dir = dir.to_path_buf();
    let source = CatalogSource {
        image: Some(ImageCatalogSource {
            reference: "localhost:5000/community:bench".into(),
        }),
        ..CatalogSource::default()
    };
    tokio::task::spawn_blocking(move || {
        let started = Instant::now();
        let loaded = load::load(&dir, &source, "community", 0)?;
        let loading = started.elapsed();
        let started = Instant::now();
        catalogs.put(loaded, &digest);
        Ok((loading, started.elapsed()))
    })
    .await?
}

async fn load_and_swap(
    catalogs: &Arc<Catalogs>,
    contents: &Contents,
    runs: usize,
) -> anyhow::Result<()> {
    let (loading, swapping) = sync(catalogs, contents.dir(0), "sha256:bench-0".into()).await?;
    let served = catalogs.snapshot();
    let counts = counts(served.catalog("community").expect("served"));
    drop(served);
    println!(
        "\ncatalog: {CATALOG}: {} packages, {} channels, {} bundles",
        counts.packages, counts.channels, counts.bundles
    );
    println!(
        "first load into an empty process: load {:.0} ms, build + swap {:.0} ms",
        ms(loading),
        ms(swapping)
    );
    println!(
        "{:<44} {}",
        "memory, serving the catalog:",
        pakket_testkit::memory()
    );

    // A reader that takes a snapshot every 50 µs, as requests do, to
    // show how long one waits while a new digest is swapped in.
    let stop = Arc::new(AtomicBool::new(false));
    let reader = {
        let (catalogs, stop) = (Arc::clone(catalogs), Arc::clone(&stop));
        std::thread::spawn(move || {
            let mut longest = Duration::ZERO;
            while !stop.load(Ordering::Relaxed) {
                let started = Instant::now();
                let snapshot = catalogs.snapshot();
                longest = longest.max(started.elapsed());
                drop(snapshot);
                std::thread::sleep(Duration::from_micros(50));
            }
            longest
        })
    };

    let (mut loads, mut swaps, mut totals) = (Vec::new(), Vec::new(), Vec::new());
    for run in 1..=runs {
        let (loading, swapping) =
            sync(catalogs, contents.dir(run), format!("sha256:bench-{run}")).await?;
        loads.push(loading);
        swaps.push(swapping);
        totals.push(loading + swapping);
        if run == 1 {
            println!(
                "{:<44} {}",
                "memory, after the first swap:",
                pakket_testkit::memory()
            );
        }
    }
    stop.store(true, Ordering::Relaxed);
    let longest_wait = reader.join().expect("the reader thread");
    println!(
        "new digest while the old one serves ({runs} runs, median [min..max]):\n  load         {}\n  build + swap {}\n  total        {}  (goal < 300 ms)",
        spread(&mut loads),
        spread(&mut swaps),
        spread(&mut totals),
    );
    println!(
        "  longest wait for a snapshot during the swaps: {:.3} ms",
        ms(longest_wait)
    );
    println!(
        "{:<44} {}",
        format!("memory, after {runs} swaps:"),
        pakket_testkit::memory()
    );
    Ok(())
}

async fn resolve_at_rate(
    catalogs: &Catalogs,
    address: SocketAddr,
    rate: u32,
    seconds: u32,
) -> anyhow::Result<()> {
    let served = catalogs.snapshot();
    let mut without_default = 0;
    let mut bodies = Vec::new();
    for catalog in served.set.catalogs() {
        for package in catalog.packages.values() {
            let Some(channel) = &package.default_channel else {
                without_default += 1;
                continue;
            };
            let request = ResolveRequest {
                requests: vec![RequestItem::Text(format!("{}@{channel}", package.name))],
                installed: Vec::new(),
            };
            bodies.push(serde_json::to_vec(&request)?);
        }
    }
    drop(served);
    let bodies = Arc::new(bodies);
    let client = Arc::new(ResolverClient::new(
        &format!("http://{address}"),
        None,
        None,
    )?);

    // Each request once, one after another: warms the connection and
    // says what the requests answer.
    let mut tally = Tally::default();
    let started = Instant::now();
    for body in bodies.iter() {
        tally.add(
            &client
                .call(reqwest::Method::POST, "/v1/resolve", Some(body.clone()))
                .await,
        );
    }
    println!(
        "\n/v1/resolve, every package's default channel once, one at a time ({} requests{}): {:.0} ms in all",
        bodies.len(),
        if without_default > 0 {
            format!(", {without_default} packages without a default channel left out")
        } else {
            String::new()
        },
        ms(started.elapsed())
    );
    println!("  answers: {tally}");

    let total = (rate * seconds) as usize;
    let mut ticks = tokio::time::interval(Duration::from_secs_f64(1.0 / f64::from(rate)));
    let mut tasks = Vec::with_capacity(total);
    let started = Instant::now();
    for i in 0..total {
        let due = ticks.tick().await;
        let (client, bodies) = (Arc::clone(&client), Arc::clone(&bodies));
        tasks.push(tokio::spawn(async move {
            let body = bodies[i % bodies.len()].clone();
            let answer = client
                .call(reqwest::Method::POST, "/v1/resolve", Some(body))
                .await;
            (due.elapsed(), answer)
        }));
    }
    let sent = started.elapsed();
    let mut latencies = Vec::with_capacity(total);
    let mut tally = Tally::default();
    for task in tasks {
        let (latency, answer) = task.await?;
        latencies.push(latency);
        tally.add(&answer);
    }
    let finished = started.elapsed();
    latencies.sort();
    println!(
        "/v1/resolve at {rate}/s for {seconds} s over HTTP/1.1 on loopback ({total} requests):"
    );
    println!(
        "  latency p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms",
        ms(percentile(&latencies, 0.50)),
        ms(percentile(&latencies, 0.99)),
        ms(*latencies.last().unwrap_or(&Duration::ZERO)),
    );
    println!(
        "  achieved: sent {:.1}/s, answered {:.1}/s (last answer at {:.2} s)",
        total as f64 / sent.as_secs_f64(),
        total as f64 / finished.as_secs_f64(),
        finished.as_secs_f64()
    );
    println!("  answers: {tally}");
    Ok(())
}

/// What a stream of resolve calls answered.
#[derive(Default)]
struct Tally {
    resolved: usize,
    no_solution: usize,
    other: usize,
    failed: usize,
}

impl Tally {
    fn add(&mut self, answer: &Result<(u16, String), pakket_resolve_client::ClientError>) {
        match answer {
            Ok((200, text)) => match serde_json::from_str::<ResolveResponse>(text) {
                Ok(ResolveResponse::Resolved(_)) => self.resolved += 1,
                Ok(ResolveResponse::Failed(_)) => self.no_solution += 1,
                Err(_) => self.other += 1,
            },
            Ok(_) => self.other += 1,
            Err(_) => self.failed += 1,
        }
    }
}

impl std::fmt::Display for Tally {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} resolved, {} without a solution (200 with an explanation), {} other statuses, {} transport errors",
            self.resolved, self.no_solution, self.other, self.failed
        )
    }
}

fn ms(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1000.0
}

/// The `p` quantile of sorted `values` (nearest rank).
fn percentile(values: &[Duration], p: f64) -> Duration {
    if values.is_empty() {
        return Duration::ZERO;
    }
    let rank = ((p * values.len() as f64).ceil() as usize).clamp(1, values.len());
    values[rank - 1]
}

/// `median ms [min..max]`.
fn spread(values: &mut [Duration]) -> String {
    values.sort();
    format!(
        "{:6.1} ms [{:.1}..{:.1}]",
        ms(percentile(values, 0.5)),
        ms(values[0]),
        ms(values[values.len() - 1])
    )
}
