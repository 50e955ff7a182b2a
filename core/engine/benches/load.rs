//! Catalog load time: generated catalogs of growing size, to show that
//! loading grows linearly with the number of bundles, and the derived
//! community catalog. Printed, never asserted.
//!
//! ```text
//! cargo bench -p pakket-engine --bench load [-- [--sizes 10000,20000,40000] [--repeat K] [CATALOG]]
//! ```
//!
//! Each figure is the fastest of K runs (default 3) of: decoding and
//! assembling the catalog from text already in memory ("load"), then
//! ordering it into a catalog set and building the resolver's universe
//! ("index"). Wall time, and beside it the time the thread spent on a CPU
//! (Linux `schedstat`), which other work on a shared machine does not inflate. Two shapes per size (see `support/synthetic.rs`): "wide" has
//! packages of 20 bundles, "deep" has 10 packages whose channels grow with
//! the catalog, so a cost quadratic in a channel's length shows there.
//!
//! The derived catalog (`catalog.json`, DERIVED by the data curators from
//! every bundle of redhat-openshift-ecosystem/community-operators-prod at
//! 699495f2; see ../shared/data/README.md) is read from its file, so its
//! "load" includes reading 6.6 MB.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use pakket_engine::catalog::{Catalog, CatalogSet, Format};
use pakket_engine::resolve::Universe;

#[path = "support/synthetic.rs"]
mod synthetic;

use synthetic::Shape;

const CATALOG: &str = "fbc/community-operators-prod-derived/catalog.json";

struct Options {
    sizes: Vec<usize>,
    repeat: usize,
    catalog: PathBuf,
}

fn options() -> Options {
    let mut args = std::env::args().skip(1).filter(|arg| arg != "--bench");
    let mut options = Options {
        sizes: vec![10_000, 20_000, 40_000],
        repeat: 3,
        catalog: std::env::var_os("PAKKET_DATA")
            .map(PathBuf::from)
            .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data"))
            .join(CATALOG),
    };
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--sizes" => {
                options.sizes = args
                    .next()
                    .map(|list| {
                        list.split(',')
                            .map(|n| n.trim().parse().expect("--sizes N,N,..."))
                            .collect()
                    })
                    .expect("--sizes N,N,...")
            }
            "--repeat" => {
                options.repeat = args
                    .next()
                    .and_then(|n| n.parse().ok())
                    .filter(|&n| n > 0)
                    .expect("--repeat K (K > 0)")
            }
            path => options.catalog = PathBuf::from(path),
        }
    }
    options
}

/// The time this thread has spent on a CPU, from `/proc/thread-self/schedstat`
/// (nanoseconds, first field); `None` where there is no such file.
fn on_cpu() -> Option<Duration> {
    let text = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    let nanos = text.split_whitespace().next()?.parse().ok()?;
    Some(Duration::from_nanos(nanos))
}

/// A stopwatch for wall time and on-CPU time together.
struct Watch(Instant, Option<Duration>);

impl Watch {
    fn start() -> Self {
        Self(Instant::now(), on_cpu())
    }

    /// (wall, on-CPU) since the start.
    fn stop(&self) -> (Duration, Option<Duration>) {
        let cpu = self
            .1
            .zip(on_cpu())
            .map(|(start, end)| end.saturating_sub(start));
        (self.0.elapsed(), cpu)
    }
}

/// The fastest wall and on-CPU times of each step over `repeat` runs, and
/// the sizes seen.
struct Figures {
    load: Duration,
    index: Duration,
    load_cpu: Option<Duration>,
    index_cpu: Option<Duration>,
    bundles: usize,
    diagnostics: usize,
}

fn fastest(best: &mut Option<Duration>, new: Option<Duration>, first: bool) {
    *best = match (first, *best, new) {
        (true, _, new) => new,
        (false, Some(best), Some(new)) => Some(best.min(new)),
        _ => None,
    };
}

fn measure(repeat: usize, load: impl Fn() -> Catalog) -> Figures {
    let mut figures = Figures {
        load: Duration::MAX,
        index: Duration::MAX,
        load_cpu: None,
        index_cpu: None,
        bundles: 0,
        diagnostics: 0,
    };
    for run in 0..repeat {
        let watch = Watch::start();
        let catalog = load();
        let (wall, cpu) = watch.stop();
        figures.load = figures.load.min(wall);
        fastest(&mut figures.load_cpu, cpu, run == 0);
        figures.diagnostics = catalog.diagnostics.len();
        let watch = Watch::start();
        let set = CatalogSet::new(vec![catalog]);
        let universe = Universe::from_catalogs(&set);
        let (wall, cpu) = watch.stop();
        figures.index = figures.index.min(wall);
        fastest(&mut figures.index_cpu, cpu, run == 0);
        figures.bundles = universe.bundles.len();
    }
    figures
}

fn print(label: &str, figures: &Figures) {
    let ms = |duration: Duration| duration.as_secs_f64() * 1e3;
    let total = figures.load + figures.index;
    let cpu = match figures.load_cpu.zip(figures.index_cpu) {
        Some((load, index)) => format!(
            "  | on CPU: load {:>6.1} ms  index {:>6.1} ms  total {:>7.1} ms",
            ms(load),
            ms(index),
            ms(load + index)
        ),
        None => String::new(),
    };
    println!(
        "  {label:<11} {:>6} bundles  load {:>7.1} ms  index {:>6.1} ms  total {:>7.1} ms  ({:>5.2} µs/bundle){cpu}  [{} diagnostics]",
        figures.bundles,
        ms(figures.load),
        ms(figures.index),
        ms(total),
        total.as_secs_f64() * 1e6 / figures.bundles.max(1) as f64,
        figures.diagnostics,
    );
}

fn main() {
    let options = options();
    println!(
        "catalog load, fastest of {} runs (load: decode + assemble; index: catalog set + universe)",
        options.repeat
    );
    for (name, shape) in [
        ("wide", Shape::wide as fn(usize) -> Shape),
        ("deep", Shape::deep),
    ] {
        for &size in &options.sizes {
            let text = synthetic::catalog(shape(size));
            let figures = measure(options.repeat, || {
                Catalog::from_str(&text, "synthetic.json", Format::Json, "synthetic", 0)
                    .expect("the synthetic catalog loads")
            });
            print(&format!("{name} {size}"), &figures);
        }
    }
    if options.catalog.exists() {
        let figures = measure(options.repeat, || {
            Catalog::load(&options.catalog, "community", 0).expect("the derived catalog loads")
        });
        print("derived", &figures);
    } else {
        println!(
            "  derived: {} is missing; set PAKKET_DATA to the shared data folder",
            options.catalog.display()
        );
    }
}
