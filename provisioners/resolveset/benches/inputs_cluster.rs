//! The Input controller on a real control plane (issue 14, "Figures"),
//! printed, never asserted: the resolveset process's parts (Catalog
//! controller, resolver API, Input and Operator controllers) run in this
//! process against the test kit's control plane, serving the derived
//! community catalog from an image in the local registry; then 100 Inputs
//! are created at once and the bench waits until every one has a status
//! and the set holds what they resolved to.
//!
//! ```text
//! cargo bench -p pakket-resolveset --bench inputs_cluster [-- --inputs N]
//! ```
//!
//! Prints the process's RSS serving the catalog, with the 100 Inputs
//! resolved and a while later, and the time from the first Input's
//! creation to the last status and the set written. Then the Catalog is
//! deleted: how long until every installed Input says
//! `CatalogUnavailable`, and how many bundles left the set (none should);
//! and created again: how long until they are served again. The RSS includes the
//! bench's own small share (its kube client, the Inputs it builds).
//!
//! The catalog is `fbc/community-operators-prod-derived/catalog.json`
//! (DERIVED by the data curators from every bundle of
//! redhat-openshift-ecosystem/community-operators-prod at 699495f2; 333
//! packages, 7,018 bundles; see ../shared/data/README.md).

#[path = "../tests/support/mod.rs"]
mod support;

use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, ListParams, PostParams};
use pakket_engine::resolve::Request;
use pakket_resolveset::catalogs::catalog::{CatalogSource, ImageCatalogSource};
use pakket_resolveset::inputs::input_resolve::{Answer, Asked, plan};
use pakket_resolveset::set::resolved_set;
use pakket_resolveset::{Input, InputClass};
use pakket_testkit::Scope;
use serde_json::json;

/// jemalloc, as the binary.
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

const CATALOG: &str = "fbc/community-operators-prod-derived/catalog.json";

#[tokio::main]
async fn main() {
    let mut inputs = 100;
    let mut args = std::env::args().skip(1).filter(|arg| arg != "--bench");
    while let Some(arg) = args.next() {
        match (
            arg.as_str(),
            args.next().and_then(|v| v.parse::<usize>().ok()),
        ) {
            ("--inputs", Some(n)) if n > 0 => inputs = n,
            _ => panic!("usage: inputs_cluster [--inputs N]"),
        }
    }
    let scope = Scope::new("bench-inputs-cluster").await;
    pakket_testkit::install_crds(&scope.client).await.unwrap();
    println!("{:<40} {}", "memory, start:", pakket_testkit::memory());
    let running = support::start(&scope, support::loopback(), Vec::new()).await;

    // The catalog as an image, as a cluster would ship it.
    let dir = support::scratch(&scope, "catalog");
    std::fs::create_dir_all(dir.join("configs")).unwrap();
    std::fs::copy(
        pakket_testkit::data(CATALOG),
        dir.join("configs/catalog.json"),
    )
    .unwrap();
    let (reference, _) = support::push_catalog(&scope, &dir, "community", "v1").await;
    println!(
        "{:<40} {}",
        "memory, process started, catalog pushed:",
        pakket_testkit::memory()
    );
    let started = Instant::now();
    support::create(
        &scope.client,
        &support::catalog(
            &scope,
            "community",
            CatalogSource {
                image: Some(ImageCatalogSource {
                    reference: format!("docker://{reference}"),
                }),
                ..CatalogSource::default()
            },
            0,
        ),
    )
    .await;
    support::wait_for(&scope.client, &scope.name("community"), "serving", |c| {
        c.condition(pakket_resolveset::ConditionType::Serving)
            .is_some_and(|c| c.status == "True")
    })
    .await;
    println!(
        "catalog served {:.1} s after its Catalog was created",
        started.elapsed().as_secs_f64()
    );
    println!(
        "{:<40} {}",
        "memory, catalog served:",
        pakket_testkit::memory()
    );
    // jemalloc's background thread gives the load's peak back meanwhile.
    tokio::time::sleep(Duration::from_secs(15)).await;
    println!("{:<40} {}", "memory, 15 s later:", pakket_testkit::memory());

    // Packages that resolve alone (asked of the process's own universe).
    let served = running.catalogs.snapshot();
    let mut packages = Vec::new();
    for name in served.set.package_names() {
        if packages.len() == inputs {
            break;
        }
        let alone = plan(
            &served.universe,
            &[Asked {
                name: name.to_owned(),
                request: Ok(Request::package(name)),
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
            packages.push(name.to_owned());
        }
    }
    drop(served);

    let mut class: InputClass = serde_json::from_value(json!({
        "apiVersion": "resolve.pakket.dev/v1alpha1", "kind": "InputClass",
        "metadata": { "name": scope.name("subscription") },
        "spec": { "parameters": {} },
    }))
    .unwrap();
    class.metadata.labels = Some(scope.labels());
    Api::<InputClass>::all(scope.client.clone())
        .create(&PostParams::default(), &class)
        .await
        .unwrap();
    let api: Api<Input> = Api::all(scope.client.clone());
    let started = Instant::now();
    for (i, package) in packages.iter().enumerate() {
        let mut input: Input = serde_json::from_value(json!({
            "apiVersion": "resolve.pakket.dev/v1alpha1", "kind": "Input",
            "metadata": { "name": scope.name(&format!("in-{i}")) },
            "spec": {
                "inputClass": scope.name("subscription"),
                "constraints": [{"type": "olm.catalog", "value": {"name": scope.name("community"), "package": package}}],
            },
        }))
        .unwrap();
        input.metadata.labels = Some(scope.labels());
        api.create(&PostParams::default(), &input).await.unwrap();
    }
    let created = started.elapsed();
    let selector = ListParams::default().labels(&scope.selector());
    let config_maps: Api<ConfigMap> = Api::namespaced(scope.client.clone(), &scope.namespace);
    let instances: Api<pakket_api::Instance> = Api::all(scope.client.clone());
    let (resolved, set_size) = loop {
        let list = api.list(&selector).await.unwrap();
        let with_status = list
            .items
            .iter()
            .filter(|input| {
                input
                    .status
                    .as_ref()
                    .is_some_and(|s| !s.conditions.is_empty())
            })
            .count();
        let resolved = list
            .items
            .iter()
            .filter(|input| {
                input
                    .condition("ResolutionFailed")
                    .is_some_and(|c| c.reason == "Resolved")
            })
            .count();
        let set_size = bundles_in_set(&scope, &instances, &config_maps).await;
        let settled = with_status == packages.len() && set_size >= resolved && resolved > 0;
        if settled || started.elapsed() > Duration::from_secs(300) {
            break (resolved, set_size);
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    let settled = started.elapsed();
    println!(
        "{} Inputs created in {:.1} s; every status and the set written {:.1} s after the first ({} resolved, a set of {} bundles)",
        packages.len(),
        created.as_secs_f64(),
        settled.as_secs_f64(),
        resolved,
        set_size
    );
    println!(
        "{:<40} {}",
        "memory, Inputs resolved:",
        pakket_testkit::memory()
    );
    tokio::time::sleep(Duration::from_secs(15)).await;
    println!("{:<40} {}", "memory, 15 s later:", pakket_testkit::memory());

    // The Catalog goes (issue 28, "Figures"): every installed Input is
    // held where it is, nothing leaves the set; then it comes back.
    let catalogs: Api<pakket_resolveset::Catalog> = Api::all(scope.client.clone());
    let catalog = catalogs.get(&scope.name("community")).await.unwrap();
    let started = Instant::now();
    catalogs
        .delete(&scope.name("community"), &Default::default())
        .await
        .unwrap();
    let unavailable = |status: &'static str| {
        let (api, selector) = (api.clone(), selector.clone());
        async move {
            api.list(&selector)
                .await
                .unwrap()
                .items
                .iter()
                .filter(|input| {
                    input
                        .condition("CatalogUnavailable")
                        .is_some_and(|c| c.status == status)
                })
                .count()
        }
    };
    let held = loop {
        let held = unavailable("True").await;
        if held >= resolved || started.elapsed() > Duration::from_secs(300) {
            break held;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    let held_in = started.elapsed();
    // A few more passes: anything that would leave the set has left.
    tokio::time::sleep(Duration::from_secs(5)).await;
    let kept = bundles_in_set(&scope, &instances, &config_maps).await;
    println!(
        "Catalog deleted with {resolved} Inputs installed from it: {held} say CatalogUnavailable {:.1} s later; the set holds {kept} of its {set_size} bundles ({} removed)",
        held_in.as_secs_f64(),
        set_size.saturating_sub(kept)
    );
    let started = Instant::now();
    support::create(
        &scope.client,
        &support::catalog(&scope, "community", catalog.spec.source.clone(), 0),
    )
    .await;
    let served_again = loop {
        let served = unavailable("False").await;
        if served >= held || started.elapsed() > Duration::from_secs(300) {
            break served;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    println!(
        "Catalog created again: {served_again} Inputs resolved from it again {:.1} s later",
        started.elapsed().as_secs_f64()
    );
    // The control plane the test kit started goes away with this process.
}

/// How many bundles the set the resolveset Instance points at holds.
async fn bundles_in_set(
    scope: &Scope,
    instances: &Api<pakket_api::Instance>,
    config_maps: &Api<ConfigMap>,
) -> usize {
    let Some(set) = instances.get_opt(&scope.name("resolveset")).await.unwrap() else {
        return 0;
    };
    let mount = set.spec.bundle.spec.unwrap().volume_mounts[0].clone();
    match config_maps.get_opt(&mount.config_map.name).await.unwrap() {
        Some(config_map) => resolved_set::from_bytes(
            config_map.data.unwrap_or_default()[resolved_set::FILE].as_bytes(),
        )
        .map(|entries| entries.len())
        .unwrap_or(0),
        None => 0,
    }
}
