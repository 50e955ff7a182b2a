//! The engine's figures on the largest real catalog, printed, never asserted,
//! side by side with OLM's own solver (deppy) on the same catalog and
//! requests when Go is available (`bench/go-resolver`).
//!
//! ```text
//! cargo bench -p pakket-engine --bench resolve [-- CATALOG [--installed N] [--repeat K] [--no-peer]]
//! ```
//!
//! Data: `catalog.json` is DERIVED by the data curators from every bundle of
//! redhat-openshift-ecosystem/community-operators-prod at 699495f2 (see
//! ../shared/data/README.md): 333 packages, 654 channels, 7018 bundles.
//!
//! Requests mirror the Go peer exactly: for every package, "install P from
//! its default channel"; with `--installed N`, the first N packages (by name)
//! that resolve alone and together are installed, and every resolution keeps
//! them. The installed set is prepared once (`InstalledSet::new`, its time
//! printed) before timing starts, as the Go peer builds its installed
//! operators before timing; each timed resolution is `InstalledSet::resolve`,
//! result and all.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use pakket_engine::catalog::{Catalog, CatalogSet};
use pakket_engine::resolve::{Installed, InstalledSet, Request, Universe, resolve};

/// The benchmark catalog, under the shared data folder (`$PAKKET_DATA`).
const CATALOG: &str = "fbc/community-operators-prod-derived/catalog.json";

struct Options {
    catalog: PathBuf,
    installed: usize,
    repeat: usize,
    peer: bool,
}

fn options() -> Options {
    let mut args = std::env::args().skip(1).filter(|arg| arg != "--bench");
    let mut options = Options {
        catalog: std::env::var_os("PAKKET_DATA")
            .map(PathBuf::from)
            .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data"))
            .join(CATALOG),
        installed: 50,
        repeat: 3,
        peer: true,
    };
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--installed" => {
                options.installed = args
                    .next()
                    .and_then(|n| n.parse().ok())
                    .expect("--installed N")
            }
            "--repeat" => {
                options.repeat = args
                    .next()
                    .and_then(|n| n.parse().ok())
                    .expect("--repeat K")
            }
            "--no-peer" => options.peer = false,
            path => options.catalog = PathBuf::from(path),
        }
    }
    options
}

/// Peak resident memory of this process so far, in MiB (`VmHWM`).
fn peak_rss_mib() -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let kib: f64 = status
        .lines()
        .find(|line| line.starts_with("VmHWM:"))
        .and_then(|line| line.split_whitespace().nth(1))
        .and_then(|value| value.parse().ok())
        .unwrap_or(0.0);
    kib / 1024.0
}

struct Figures {
    p50: f64,
    p99: f64,
    max: f64,
    mean: f64,
    solved: usize,
    unsat: usize,
}

fn percentile(sorted: &[f64], fraction: f64) -> f64 {
    let index = ((sorted.len() as f64 - 1.0) * fraction).round() as usize;
    sorted[index]
}

/// Resolves "install P from its default channel" for every package, `repeat`
/// times each, keeping the fastest (as the Go peer does), in microseconds.
/// The installed set is prepared once, before any timing, as the Go peer
/// builds its installed operators before timing.
fn resolve_every_package(installed: &InstalledSet<'_>, repeat: usize) -> Figures {
    let universe = installed.universe();
    let mut times = Vec::new();
    let (mut solved, mut unsat) = (0, 0);
    for package in universe.package_names() {
        let request = default_channel_request(universe, package);
        let mut best = Duration::MAX;
        let mut ok = false;
        for _ in 0..repeat {
            let started = Instant::now();
            ok = installed.resolve(std::slice::from_ref(&request)).is_ok();
            best = best.min(started.elapsed());
        }
        if ok {
            solved += 1
        } else {
            unsat += 1
        }
        times.push(best.as_secs_f64() * 1e6);
    }
    times.sort_by(f64::total_cmp);
    Figures {
        p50: percentile(&times, 0.50),
        p99: percentile(&times, 0.99),
        max: *times.last().unwrap_or(&0.0),
        mean: times.iter().sum::<f64>() / times.len().max(1) as f64,
        solved,
        unsat,
    }
}

fn default_channel_request(universe: &Universe, package: &str) -> Request {
    Request::Package {
        package: package.to_owned(),
        channel: universe.default_channel(package).map(str::to_owned),
        range: None,
        catalog: None,
    }
}

/// The first `count` packages by name that resolve alone and together with
/// those already chosen, installed at the bundles the resolution picked.
fn choose_installed(universe: &Universe, count: usize) -> Vec<Installed> {
    let mut installed: Vec<Installed> = Vec::new();
    for package in universe.package_names() {
        if installed.len() >= count {
            break;
        }
        let request = default_channel_request(universe, package);
        if resolve(universe, std::slice::from_ref(&request), &[]).is_err() {
            continue;
        }
        if let Ok(resolution) = resolve(universe, std::slice::from_ref(&request), &installed)
            && let Some(selection) = resolution
                .resolved
                .iter()
                .find(|selection| selection.package == package)
            && !installed.iter().any(
                |item| matches!(item, Installed::Bundle { bundle } if bundle == &selection.bundle),
            )
        {
            installed.push(Installed::Bundle {
                bundle: selection.bundle.clone(),
            });
        }
    }
    installed
}

fn print_figures(label: &str, figures: &Figures) {
    println!(
        "  {label:<22} p50 {:>8.1} µs   p99 {:>8.1} µs   max {:>9.1} µs   mean {:>7.1} µs   ({} solved, {} no solution)",
        figures.p50, figures.p99, figures.max, figures.mean, figures.solved, figures.unsat
    );
}

/// Runs the Go peer and returns its JSON summary, if Go is here.
fn run_peer(catalog: &Path, installed: usize) -> Option<serde_json::Value> {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../bench/go-resolver/run.sh");
    let output = Command::new("bash")
        .arg(script)
        .args([
            "--catalog",
            &catalog.display().to_string(),
            "--installed",
            &installed.to_string(),
        ])
        .output()
        .ok()?;
    if !output.status.success() {
        eprintln!(
            "go peer failed: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        return None;
    }
    serde_json::from_slice(&output.stdout).ok()
}

fn main() {
    let options = options();
    println!("catalog: {}", options.catalog.display());

    let started = Instant::now();
    let catalog =
        Catalog::load(&options.catalog, "community", 0).expect("the benchmark catalog loads");
    let load = started.elapsed();
    let started = Instant::now();
    let set = CatalogSet::new(vec![catalog]);
    let universe = Universe::from_catalogs(&set);
    let index = started.elapsed();
    println!(
        "load: {:.1} ms parse + {:.1} ms index; {} packages, {} bundles; peak RSS {:.1} MiB",
        load.as_secs_f64() * 1e3,
        index.as_secs_f64() * 1e3,
        universe.package_names().len(),
        universe.bundles.len(),
        peak_rss_mib()
    );

    println!(
        "resolve every package with its dependencies (fastest of {} runs each):",
        options.repeat
    );
    let nothing = InstalledSet::new(&universe, &[]).expect("an empty installed set");
    let alone = resolve_every_package(&nothing, options.repeat);
    print_figures("nothing installed", &alone);
    let installed = choose_installed(&universe, options.installed);
    let started = Instant::now();
    let prepared = InstalledSet::new(&universe, &installed).expect("the installed set resolves");
    let prepare = started.elapsed();
    let with_installed = resolve_every_package(&prepared, options.repeat);
    print_figures(&format!("{} installed", installed.len()), &with_installed);
    println!(
        "  (the {} installed prepared once in {:.1} ms, before timing)",
        installed.len(),
        prepare.as_secs_f64() * 1e3
    );
    println!("peak RSS after resolving: {:.1} MiB", peak_rss_mib());

    if !options.peer {
        return;
    }
    // Both peaks are of the process's own memory map (VmHWM): the Go peer
    // reads its own, since the ru_maxrss a child reports carries this
    // process's peak over exec (see bench/go-resolver/README.md).
    let ours_rss = peak_rss_mib();
    println!("\nside by side with OLM's solver (deppy, Go), same catalog and requests:");
    for (label, ours, installed_count) in [
        ("nothing installed", &alone, 0),
        ("installed", &with_installed, installed.len()),
    ] {
        let Some(peer) = run_peer(&options.catalog, installed_count) else {
            println!("  (Go peer unavailable; run bench/go-resolver/run.sh to see why)");
            return;
        };
        let theirs = |key: &str| peer["resolve_us"][key].as_f64().unwrap_or(f64::NAN);
        println!(
            "  {label:<18} deppy p50 {:>8.1} µs p99 {:>8.1} µs max {:>9.1} µs | ratio p50 {:>5.1}×  p99 {:>5.1}×  max {:>5.1}× | deppy load {:.1} ms | peak RSS: Pakket {ours_rss:.1} MiB, deppy {:.1} MiB",
            theirs("p50"),
            theirs("p99"),
            theirs("max"),
            theirs("p50") / ours.p50,
            theirs("p99") / ours.p99,
            theirs("max") / ours.max,
            peer["load_ms"].as_f64().unwrap_or(f64::NAN),
            peer["max_rss_mb"].as_f64().unwrap_or(f64::NAN)
        );
    }
}
