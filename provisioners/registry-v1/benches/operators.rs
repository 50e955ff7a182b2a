//! The registry-v1 provisioner's figures, printed, never asserted:
//!
//! 1. conversion: each registry+v1 bundle in ../shared/data/bundles (verbatim
//!    from community-operators-prod, see its README) read and rendered to
//!    objects, as every reconcile does;
//! 2. the etcd 0.9.4 operator (the same data), pushed to the real local
//!    registry: Instance created → `Installed` → `Healthy` (its Deployment
//!    Available needs kwok nodes: the test kit's own control plane has one;
//!    `pakket-dev up --nodes 1` for one of yours);
//! 3. the provisioner's memory with 100 operator Instances: a small operator
//!    bundle written here (one Deployment, namespaced RBAC, no CRDs, so the
//!    Instances do not contend for one), each Instance in a namespace of
//!    its own.
//!
//! ```text
//! cargo bench -p pakket-registry-v1 --bench operators [-- COUNT]
//! ```
//! The controller runs in this process, so the RSS figures are the
//! provisioner's (plus the bench's own small share).

#[path = "../tests/support/mod.rs"]
mod support;

use std::path::Path;
use std::time::{Duration, Instant};

use futures::{StreamExt, stream};
use kube::api::{Api, ListParams, PostParams};
use pakket_api::{BundleTemplate, ConditionType, Instance, InstanceSpec};
use pakket_registry_v1::RegistryV1;
use pakket_runtime::kernel::controller::RunOptions;
use pakket_runtime::{ClusterFacts, ObjectsRequest, Provisioner};
use pakket_testkit::{Scope, install_crds};
use serde_json::json;
use support::{OperatorBundle, instance, push, run_provisioner_with};

/// Resident memory of this process in MiB (`VmRSS`).
fn rss_mib() -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find(|line| line.starts_with("VmRSS:"))
        .and_then(|line| line.split_whitespace().nth(1))
        .and_then(|value| value.parse::<f64>().ok())
        .unwrap_or(0.0)
        / 1024.0
}

/// A small operator: one Deployment, a Role for it, no CRDs.
fn small_operator() -> tempfile::TempDir {
    OperatorBundle::new("small")
        .with_permissions(json!([{
            "apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list", "watch"],
        }]))
        .write()
}

/// How long until `check` holds for Instance `name`, or `None` past `limit`.
async fn until(
    instances: &Api<Instance>,
    name: &str,
    started: Instant,
    limit: Duration,
    check: impl Fn(&Instance) -> bool,
) -> Option<Duration> {
    while started.elapsed() < limit {
        if let Ok(instance) = instances.get(name).await
            && check(&instance)
        {
            return Some(started.elapsed());
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    None
}

fn conversion() {
    println!("conversion (read + render, as each reconcile does; 20 runs each):");
    let instance = Instance::new(
        "bench",
        InstanceSpec {
            class: "registry-v1".into(),
            selector: None,
            bundle: BundleTemplate {
                name: "bench".into(),
                spec: None,
            },
            deletion_policy: Default::default(),
            config: None,
            progress_deadline: None,
            drift: None,
        },
    );
    // eclipse-che needs devworkspace-operator installed to render at all.
    let cluster = ClusterFacts {
        version: Some((1, 35)),
        installed: vec![pakket_runtime::InstalledContent {
            instance: "devworkspace-operator".into(),
            bundle: "devworkspace-operator.v0.31.0".into(),
            properties: vec![pakket_api::BundleProperty {
                type_: "olm.package".into(),
                value: json!({ "packageName": "devworkspace-operator", "version": "0.31.0" }),
            }],
        }],
        ..ClusterFacts::default()
    };
    let provisioner = RegistryV1::new("pakket.dev/registry-v1");
    'bundles: for bundle in [
        "etcd/0.9.4",
        "node-healthcheck-operator/0.12.0",
        "cert-manager/1.16.5",
        "eclipse-che/7.121.0",
    ] {
        let content = pakket_testkit::data(&format!("bundles/{bundle}"));
        let bytes: u64 = walk_size(&content);
        let mut times = Vec::new();
        let mut objects = 0;
        for _ in 0..20 {
            let started = Instant::now();
            let rendered = provisioner.objects(&ObjectsRequest {
                content: &content,
                max_object_size: 8 << 20,
                instance: &instance,
                cluster: &cluster,
                class_parameters: None,
            });
            times.push(started.elapsed());
            objects = match rendered {
                Ok(rendered) => rendered.len(),
                Err(error) => {
                    println!("  {bundle}: does not render: {error}");
                    continue 'bundles;
                }
            };
        }
        times.sort();
        println!(
            "  {bundle:<36} {:>6.1} KiB on disk, {objects:>3} objects: median {:>6.2} ms, max {:>6.2} ms",
            bytes as f64 / 1024.0,
            times[times.len() / 2].as_secs_f64() * 1e3,
            times[times.len() - 1].as_secs_f64() * 1e3
        );
    }
}

fn walk_size(path: &Path) -> u64 {
    std::fs::read_dir(path)
        .map(|entries| {
            entries
                .flatten()
                .map(|entry| {
                    let path = entry.path();
                    if path.is_dir() {
                        walk_size(&path)
                    } else {
                        entry.metadata().map(|m| m.len()).unwrap_or(0)
                    }
                })
                .sum()
        })
        .unwrap_or(0)
}

#[tokio::main]
async fn main() {
    let count: usize = std::env::args()
        .skip(1)
        .find(|arg| arg != "--bench")
        .and_then(|arg| arg.parse().ok())
        .unwrap_or(100);
    conversion();

    let scope = Scope::new("bench-operators").await;
    install_crds(&scope.client).await.unwrap();
    let id = format!("bench.pakket.dev/{}", scope.id);
    let store = scope.path("bench-store");
    let parameters = json!({ "approval": "AllowAll" });
    run_provisioner_with(&scope, id, parameters, RunOptions::new(store)).await;
    let instances: Api<Instance> = Api::all(scope.client.clone());
    let etcd = push(&scope, &pakket_testkit::data("bundles/etcd/0.9.4"), "etcd").await;
    let small = small_operator();
    let small = push(&scope, small.path(), "small").await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    let idle = rss_mib();

    let started = Instant::now();
    instances
        .create(&PostParams::default(), &instance(&scope, "etcd", &etcd))
        .await
        .unwrap();
    let name = scope.name("etcd");
    let limit = Duration::from_secs(120);
    let installed = until(&instances, &name, started, limit, |i| {
        i.condition(ConditionType::Installed)
            .is_some_and(|c| c.status == "True")
    })
    .await;
    let healthy = until(&instances, &name, started, limit, |i| {
        i.condition(ConditionType::Healthy)
            .is_some_and(|c| c.status == "True")
    })
    .await;
    let shown = |d: Option<Duration>| {
        d.map_or(
            "not within 120 s (no nodes to run the Deployment?)".to_owned(),
            |d| format!("{:.2} s", d.as_secs_f64()),
        )
    };
    println!("etcd 0.9.4 from the local registry:");
    println!("  Instance created → Installed: {}", shown(installed));
    println!("  Instance created → Healthy:   {}", shown(healthy));

    let started = Instant::now();
    stream::iter(0..count)
        .for_each_concurrent(16, |i| {
            let instances = instances.clone();
            let scope = &scope;
            let small = small.clone();
            async move {
                instances
                    .create(
                        &PostParams::default(),
                        &instance(scope, &format!("op{i}"), &small),
                    )
                    .await
                    .unwrap();
            }
        })
        .await;
    let selector = ListParams::default().labels(&scope.selector());
    let mut peak: f64 = 0.0;
    let (installed, healthy) = loop {
        peak = peak.max(rss_mib());
        let list = instances.list(&selector).await.unwrap();
        let count_true = |kind: ConditionType| {
            list.items
                .iter()
                .filter(|i| i.condition(kind).is_some_and(|c| c.status == "True"))
                .count()
        };
        let installed = count_true(ConditionType::Installed);
        let healthy = count_true(ConditionType::Healthy);
        // etcd is one of the listed Instances.
        if healthy > count || started.elapsed() > Duration::from_secs(300) {
            break (installed, healthy);
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    };
    println!(
        "{count} operator Instances (each: Namespace, ServiceAccount, Role, RoleBinding, Deployment): \
         {installed} Installed, {healthy} Healthy (with etcd) after {:.1} s",
        started.elapsed().as_secs_f64()
    );
    println!(
        "  provisioner RSS: idle {idle:.1} MiB, peak while installing {peak:.1} MiB, after {:.1} MiB",
        rss_mib()
    );
    // Uninstalled while the provisioner runs: etcd's CRDs are cluster-wide.
    let _ = instances
        .delete_collection(&Default::default(), &selector)
        .await;
    let started = Instant::now();
    while started.elapsed() < Duration::from_secs(300)
        && !instances.list(&selector).await.unwrap().items.is_empty()
    {
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    println!(
        "  all {} Instances uninstalled in {:.1} s",
        count + 1,
        started.elapsed().as_secs_f64()
    );
    scope.cleanup().await;
}
