//! The Input controller's resolution (its figures in docs/figures.md),
//! printed, never asserted: `input_resolve::plan` (what the controller
//! runs for every pass) for 100 Inputs against the derived community
//! catalog, timed over several passes, with the process's memory.
//!
//! ```text
//! cargo bench -p pakket-resolveset --bench inputs [-- [--inputs N] [--runs K]]
//! ```
//!
//! The catalog is `fbc/community-operators-prod-derived/catalog.json`
//! (DERIVED by the data curators from every bundle of
//! redhat-openshift-ecosystem/community-operators-prod at 699495f2; 333
//! packages, 7,016 bundles; see ../shared/data/README.md). The Inputs ask
//! for the first N packages (by name) that resolve alone, each by its
//! package (an `olm.packageVersion` Input with any version), so they are
//! resolved together with every dependency, as the controller does; one
//! more pass adds a dry-run Input, planned beside them.

use std::time::{Duration, Instant};

use pakket_engine::catalog::{Catalog, CatalogSet};
use pakket_engine::resolve::{Request, Universe};
use pakket_resolveset::inputs::input_resolve::{Answer, Asked, plan};

/// jemalloc, as the binary.
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

const CATALOG: &str = "fbc/community-operators-prod-derived/catalog.json";

fn main() {
    let mut inputs = 100;
    let mut runs = 5;
    let mut args = std::env::args().skip(1).filter(|arg| arg != "--bench");
    while let Some(arg) = args.next() {
        let value = args.next().and_then(|value| value.parse::<usize>().ok());
        match (arg.as_str(), value) {
            ("--inputs", Some(n)) if n > 0 => inputs = n,
            ("--runs", Some(n)) if n > 0 => runs = n,
            _ => panic!("usage: inputs [--inputs N] [--runs K] (positive numbers)"),
        }
    }
    println!("{:<44} {}", "memory, start:", pakket_testkit::memory());
    let started = Instant::now();
    let catalog = Catalog::load(&pakket_testkit::data(CATALOG), "community", 0).unwrap();
    let set = CatalogSet::new(vec![catalog]);
    let universe = Universe::from_catalogs(&set);
    println!(
        "catalog loaded and the universe built in {:.0} ms",
        ms(started.elapsed())
    );
    println!(
        "{:<44} {}",
        "memory, catalog served:",
        pakket_testkit::memory()
    );

    // Packages that resolve alone: the controller's Inputs would not all
    // be satisfiable otherwise, and a failing Input costs extra passes.
    let mut asked = Vec::new();
    for name in set.package_names() {
        if asked.len() == inputs {
            break;
        }
        let request = Request::package(name);
        let alone = plan(
            &universe,
            &[Asked {
                name: name.to_owned(),
                request: Ok(request.clone()),
                dry_run: false,
                force: false,
                filters: Default::default(),
                seniority: Default::default(),
                uid: String::new(),
                chosen_over: Default::default(),
                held: None,
            }],
            &[],
            "resolveset",
        );
        if matches!(alone.answers.get(name), Some(Answer::Resolved(_))) {
            asked.push(Asked {
                name: name.to_owned(),
                request: Ok(request),
                dry_run: false,
                force: false,
                filters: Default::default(),
                seniority: Default::default(),
                uid: String::new(),
                chosen_over: Default::default(),
                held: None,
            });
        }
    }
    println!("{} Inputs, each a package that resolves alone", asked.len());

    let mut times = Vec::new();
    let mut last = None;
    for _ in 0..runs {
        let started = Instant::now();
        let result = plan(&universe, &asked, &[], "resolveset");
        times.push(started.elapsed());
        last = Some(result);
    }
    let result = last.unwrap();
    let resolved = result
        .answers
        .values()
        .filter(|a| matches!(a, Answer::Resolved(_)))
        .count();
    times.sort();
    println!(
        "one pass over {} Inputs ({} resolved, set of {} bundles): median {:.1} ms [{:.1}..{:.1}] over {runs} runs",
        asked.len(),
        resolved,
        result.set.len(),
        ms(times[times.len() / 2]),
        ms(times[0]),
        ms(times[times.len() - 1]),
    );

    let mut with_dry_run = asked.clone();
    with_dry_run.push(Asked {
        name: "dry-run".into(),
        request: Ok(Request::package("etcd")),
        dry_run: true,
        force: false,
        filters: Default::default(),
        seniority: Default::default(),
        uid: String::new(),
        chosen_over: Default::default(),
        held: None,
    });
    let started = Instant::now();
    plan(&universe, &with_dry_run, &[], "resolveset");
    println!(
        "the same with one dry-run Input planned beside them: {:.1} ms",
        ms(started.elapsed())
    );
    println!(
        "{:<44} {}",
        "memory, after the passes:",
        pakket_testkit::memory()
    );
}

fn ms(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1000.0
}
