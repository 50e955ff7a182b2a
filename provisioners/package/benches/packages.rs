//! The package provisioner's figures (issue 15, "Figures"), printed, never
//! asserted. Its controllers and the runtime run in this process against
//! the test kit's control plane; the real Glasskube repository
//! (../shared/data/glasskube-packages, glasskube/packages at 3352e05d) is
//! served over loopback HTTPS by the tests' server.
//!
//! ```text
//! cargo bench -p pakket-package --bench packages [-- --packages N]
//! ```
//!
//! 1. The whole index read: one PackageInfo (no version, so versions.yaml
//!    then the latest package.yaml) per package of the repository, created
//!    at once; the time until every one is `SyncCompleted`. The same reads
//!    without the cluster (the repository client alone) beside it.
//! 2. N ClusterPackages (default 100) of small packages the bench serves
//!    (one ConfigMap each, written by the bench, not real data) created at
//!    once; the time until every one is `InstallationSucceeded`, and the
//!    process's RSS before, with them installed, and 15 s later.

#[path = "../tests/support/mod.rs"]
mod support;

use std::time::{Duration, Instant};

use kube::api::{Api, DeleteParams, ListParams, PostParams};
use pakket_packages_api::manifest::{Index, parse};
use pakket_packages_api::{
    ClusterPackage, ClusterPackageSpec, PackageInfo, PackageInfoSpec, PackageInfoTemplate,
};
use pakket_packages_client::repository::{Endpoint, RepositoryClient};
use pakket_runtime::kernel::source::SourceOptions;
use pakket_testkit::Scope;

#[tokio::main]
async fn main() {
    let mut count = 100;
    let mut args = std::env::args().skip(1).filter(|arg| arg != "--bench");
    while let Some(arg) = args.next() {
        match (
            arg.as_str(),
            args.next().and_then(|v| v.parse::<usize>().ok()),
        ) {
            ("--packages", Some(n)) if n > 0 => count = n,
            _ => panic!("usage: packages [--packages N]"),
        }
    }
    let scope = Scope::new("bench-packages").await;
    let repository = support::Repository::start();
    println!("{:<44} {}", "memory, start:", pakket_testkit::memory());
    support::start(&scope, &repository).await;
    let repository_name = support::repository_object(&scope, &repository).await;
    let index_text = std::fs::read_to_string(
        pakket_testkit::data("glasskube-packages/packages").join("index.yaml"),
    )
    .unwrap();
    let (index, _): (Index, _) = parse(&index_text).unwrap();
    let names: Vec<String> = index.packages.iter().map(|p| p.name.clone()).collect();

    // 1a. The reads alone.
    let client = RepositoryClient::new(
        SourceOptions {
            extra_roots: vec![repository.server.ca_pem.clone()],
            ..SourceOptions::default()
        },
        true,
    );
    let endpoint = Endpoint {
        name: repository_name.clone(),
        base: reqwest::Url::parse(&repository.url()).unwrap(),
        authorization: None,
    };
    let started = Instant::now();
    for name in &names {
        let versions = client.versions(&endpoint, name).await.unwrap();
        client
            .package(&endpoint, name, versions.latest_version.as_deref().unwrap())
            .await
            .unwrap();
    }
    let alone = started.elapsed();

    // 1b. Through PackageInfos on the cluster.
    let infos: Api<PackageInfo> = Api::all(scope.client.clone());
    let started = Instant::now();
    for name in &names {
        let mut info = PackageInfo::new(
            &scope.name(&format!("info-{name}")),
            PackageInfoSpec {
                name: name.clone(),
                version: None,
                repository_name: Some(repository_name.clone()),
            },
        );
        info.metadata.labels = Some(scope.labels());
        infos.create(&PostParams::default(), &info).await.unwrap();
    }
    let by_scope = ListParams::default().labels(&scope.selector());
    wait_until("every PackageInfo synced", || async {
        let listed = infos.list(&by_scope).await.unwrap().items;
        listed.len() == names.len()
            && listed.iter().all(|info| {
                info.status.as_ref().is_some_and(|s| {
                    s.conditions
                        .iter()
                        .any(|c| c.type_ == "Ready" && c.status == "True")
                })
            })
    })
    .await;
    let synced = started.elapsed();
    println!(
        "{:<44} {:.2} s ({} packages: versions.yaml, then the latest package.yaml; the reads alone {:.2} s)",
        "whole index → every PackageInfo synced:",
        synced.as_secs_f64(),
        names.len(),
        alone.as_secs_f64()
    );
    println!(
        "{:<44} {}",
        "memory, index synced:",
        pakket_testkit::memory()
    );

    // 2. N ClusterPackages.
    // Each in a namespace of its own, made with it: a package never uses a
    // namespace it did not make.
    for i in 0..count {
        let package = format!("hello-{i}");
        repository.write_package(&package, &scope.name(&package), &[]);
    }
    let packages: Api<ClusterPackage> = Api::all(scope.client.clone());
    let started = Instant::now();
    for i in 0..count {
        let mut package = ClusterPackage::new(
            &scope.name(&format!("hello-{i}")),
            ClusterPackageSpec {
                package_info: PackageInfoTemplate {
                    name: format!("hello-{i}"),
                    version: Some("v1.0.0".into()),
                    repository_name: Some(repository_name.clone()),
                },
                values: Default::default(),
                suspend: false,
            },
        );
        package.metadata.labels = Some(scope.labels());
        packages
            .create(&PostParams::default(), &package)
            .await
            .unwrap();
    }
    wait_until("every package installed", || async {
        let listed = packages.list(&by_scope).await.unwrap().items;
        listed.len() == count
            && listed.iter().all(|package| {
                package.status.as_ref().is_some_and(|s| {
                    s.conditions
                        .iter()
                        .any(|c| c.type_ == "Ready" && c.reason == "InstallationSucceeded")
                })
            })
    })
    .await;
    println!(
        "{:<44} {:.1} s",
        format!("{count} ClusterPackages created → all installed:"),
        started.elapsed().as_secs_f64()
    );
    println!(
        "{:<44} {}",
        format!("memory, {count} packages installed:"),
        pakket_testkit::memory()
    );
    tokio::time::sleep(Duration::from_secs(15)).await;
    println!("{:<44} {}", "memory, 15 s later:", pakket_testkit::memory());

    let _ = packages
        .delete_collection(&DeleteParams::default(), &by_scope)
        .await;
    wait_until("every package gone", || async {
        packages.list(&by_scope).await.unwrap().items.is_empty()
    })
    .await;
    let _ = infos
        .delete_collection(&DeleteParams::default(), &by_scope)
        .await;
    scope.cleanup().await;
}

async fn wait_until<F, Fut>(what: &str, check: F)
where
    F: Fn() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    for _ in 0..1200 {
        if check().await {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("{what} did not happen within 120 s");
}
