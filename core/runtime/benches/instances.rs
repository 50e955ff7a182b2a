//! How fast the runtime brings many small Instances to `Installed`, beside
//! the apiserver's own server-side-apply rate for the same objects, then
//! pivots every one to new content (the dry run of the whole set
//! included), what it asks of the apiserver at rest (nothing changing),
//! how long deleting them all takes beside creating them, and the
//! runtime's memory idle and busy. Printed, never asserted.
//!
//! ```text
//! cargo bench -p pakket-runtime --bench instances [-- COUNT [RESYNC_SECONDS]]
//! ```
//! At rest the runtime runs with its resync shortened to RESYNC_SECONDS
//! (default 60) and, after one resync has passed, is watched for 1.2 of
//! them, so every Instance's resync falls inside the window; what one
//! resync costs is then scaled to the default hourly resync.
//! Runs on the real control plane the test kit provides (started on first
//! use, or `PAKKET_TEST_KUBECONFIG`). The controller runs in this process, so
//! the RSS figures are the runtime's (plus the bench's own small share).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::{StreamExt, stream};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, ListParams, Patch, PatchParams, PostParams};
use pakket_api::{
    BundleSpec, BundleTemplate, ConfigMapSource, Instance, InstanceSpec, ProvisionerClass,
    ProvisionerClassSpec, VolumeMount,
};
use pakket_runtime::Plain;
use pakket_runtime::kernel::controller;
use pakket_runtime::kernel::serve::Metrics;
use pakket_testkit::load::{
    apiserver_requests, control_plane_cpu_seconds, served_since, stat_cpu_seconds,
};
use pakket_testkit::{Scope, install_crds};

/// The kubeconfig context with `system:masters`, as the test kit names it.
const ADMIN: &str = "admin";
use serde_json::json;

/// CPU time this process has used so far, in seconds.
fn cpu_seconds() -> f64 {
    stat_cpu_seconds(&std::fs::read_to_string("/proc/self/stat").unwrap_or_default())
}

/// Resident memory of this process in MiB (`VmRSS`).
fn rss_mib() -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let kib: f64 = status
        .lines()
        .find(|line| line.starts_with("VmRSS:"))
        .and_then(|line| line.split_whitespace().nth(1))
        .and_then(|value| value.parse().ok())
        .unwrap_or(0.0);
    kib / 1024.0
}

fn manifest(namespace: &str, name: &str) -> String {
    manifest_with(namespace, name, "v")
}

fn manifest_with(namespace: &str, name: &str, value: &str) -> String {
    format!(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\n  namespace: {namespace}\ndata:\n  value: {value}\n"
    )
}

/// Content ConfigMaps `<prefix>-<i>` for `0..count`, each holding object
/// `installed-<i>` with `value`.
async fn write_contents(
    contents: &Api<ConfigMap>,
    namespace: &str,
    count: usize,
    concurrency: usize,
    prefix: &str,
    value: &str,
) {
    stream::iter(0..count)
        .for_each_concurrent(concurrency, |i| {
            let contents = contents.clone();
            async move {
                let config_map = ConfigMap {
                    metadata: kube::api::ObjectMeta {
                        name: Some(format!("{prefix}-{i}")),
                        labels: Some(BTreeMap::from([(
                            pakket_api::BUNDLE_CONTENT_LABEL.to_owned(),
                            "true".to_owned(),
                        )])),
                        ..Default::default()
                    },
                    data: Some(BTreeMap::from([(
                        "object.yaml".to_owned(),
                        manifest_with(namespace, &format!("installed-{i}"), value),
                    )])),
                    immutable: Some(true),
                    ..Default::default()
                };
                contents
                    .create(&PostParams::default(), &config_map)
                    .await
                    .unwrap();
            }
        })
        .await;
}

/// Instance `i` of the bench: one ConfigMap of content, embedded.
fn instance(
    scope: &Scope,
    i: usize,
    class: &str,
    namespace: &str,
    finalizer: Option<&str>,
) -> Instance {
    let mut metadata = scope.meta(&format!("i{i}"));
    metadata.finalizers = finalizer.map(|finalizer| vec![finalizer.to_owned()]);
    Instance {
        metadata,
        spec: InstanceSpec {
            class: scope.name(class),
            selector: None,
            deletion_policy: Default::default(),
            config: None,
            bundle: BundleTemplate {
                name: scope.name(&format!("b{i}")),
                spec: Some(BundleSpec {
                    class: scope.name(class),
                    refs: vec!["file://content".into()],
                    volume_mounts: vec![VolumeMount {
                        mount_path: "/content".into(),
                        config_map: ConfigMapSource {
                            name: format!("content-{i}"),
                            namespace: namespace.to_owned(),
                        },
                    }],
                }),
            },
            progress_deadline: None,
            drift: None,
        },
        status: None,
    }
}

/// Creates Instances `0..count`, `concurrency` at a time.
async fn create_all(
    instances: &Api<Instance>,
    count: usize,
    concurrency: usize,
    instance: impl Fn(usize) -> Instance,
) {
    stream::iter(0..count)
        .for_each_concurrent(concurrency, |i| {
            let created = instance(i);
            async move {
                instances
                    .create(&PostParams::default(), &created)
                    .await
                    .unwrap();
            }
        })
        .await;
}

/// Waits, by a watch, until `count` Instances matching `selector` are
/// Installed (or 15 minutes from `started` have passed) and says how many
/// are. A watch, not a polled list: listing 1,000 Instances with their
/// status every few hundred milliseconds would cost the apiserver more than
/// a share of what is measured.
async fn installed_within(
    instances: &Api<Instance>,
    selector: &str,
    count: usize,
    started: &Instant,
    on: impl Fn(&Instance) -> bool,
) -> usize {
    use kube::runtime::{WatchStreamExt, watcher};
    let mut installed = std::collections::BTreeSet::new();
    let events = watcher(
        instances.clone(),
        watcher::Config::default().labels(selector),
    )
    .applied_objects()
    .take_while(|_| std::future::ready(started.elapsed() < Duration::from_secs(900)));
    futures::pin_mut!(events);
    while let Some(event) = events.next().await {
        let Ok(instance) = event else { continue };
        if instance
            .condition(pakket_api::ConditionType::Installed)
            .is_some_and(|c| c.status == "True")
            && on(&instance)
        {
            installed.insert(instance.metadata.name.clone().unwrap_or_default());
            if installed.len() == count {
                break;
            }
        }
    }
    installed.len()
}

#[tokio::main]
async fn main() {
    if std::env::var_os("RUST_LOG").is_some() {
        tracing_subscriber::fmt()
            .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
            .with_writer(std::io::stderr)
            .init();
    }
    let numbers: Vec<u64> = std::env::args()
        .skip(1)
        .filter(|arg| arg != "--bench")
        .filter_map(|arg| arg.parse().ok())
        .collect();
    let count = numbers.first().map_or(1000, |count| *count as usize);
    let resync = Duration::from_secs(numbers.get(1).copied().unwrap_or(60));
    let scope = Scope::new("bench-instances").await;
    install_crds(&scope.client).await.unwrap();
    let client = scope.client.clone();
    let namespace = scope.namespace.clone();
    let concurrency = 16;

    // The apiserver's raw rate: server-side apply of the same kind of objects.
    let raw: Api<ConfigMap> = Api::namespaced(client.clone(), &namespace);
    let raw_requests_before = apiserver_requests(&client).await;
    let raw_cpu_before = control_plane_cpu_seconds();
    let started = Instant::now();
    stream::iter(0..count)
        .for_each_concurrent(concurrency, |i| {
            let raw = raw.clone();
            let namespace = namespace.clone();
            async move {
                let object: serde_json::Value =
                    serde_saphyr::from_str(&manifest(&namespace, &format!("raw-{i}"))).unwrap();
                raw.patch(
                    &format!("raw-{i}"),
                    &PatchParams::apply("bench").force(),
                    &Patch::Apply(&object),
                )
                .await
                .unwrap();
            }
        })
        .await;
    let raw_time = started.elapsed();
    let raw_cpu = control_plane_cpu_seconds() - raw_cpu_before;
    let raw_requests: f64 = served_since(&raw_requests_before, &apiserver_requests(&client).await)
        .values()
        .sum();

    // Content: one immutable ConfigMap per Instance, each holding one object.
    let contents: Api<ConfigMap> = Api::namespaced(client.clone(), &namespace);
    write_contents(&contents, &namespace, count, concurrency, "content", "v").await;

    // The apiserver's rate for the Instances themselves (custom resources
    // with a schema and validation rules), with no provisioner: the part
    // of the runtime phase below that no provisioner can save.
    let instances: Api<Instance> = Api::all(client.clone());
    let alone_cpu_before = control_plane_cpu_seconds();
    let started = Instant::now();
    let alone = |i| instance(&scope, i, "nobody", &namespace, None);
    create_all(&instances, count, concurrency, alone).await;
    let instances_time = started.elapsed();
    let alone_cpu = control_plane_cpu_seconds() - alone_cpu_before;
    instances
        .delete_collection(
            &Default::default(),
            &ListParams::default().labels(&scope.selector()),
        )
        .await
        .unwrap();

    let id = format!("bench.pakket.dev/{}", scope.id);
    let mut parameters = serde_json::Map::new();
    parameters.insert("approval".into(), json!("AllowAll"));
    let class = ProvisionerClass {
        metadata: scope.meta("class"),
        spec: ProvisionerClassSpec {
            provisioner: id.clone(),
            parameters: Some(parameters),
        },
        status: None,
    };
    Api::<ProvisionerClass>::all(client.clone())
        .create(&PostParams::default(), &class)
        .await
        .unwrap();
    let store = scope.path("bench-store");
    // The runtime's own client counts what it sends (as a deployed
    // provisioner's does, in /metrics).
    let metrics = Arc::new(Metrics::new());
    let runtime_client = metrics
        .counted_client(pakket_testkit::cluster().config_as(ADMIN).await)
        .unwrap();
    let options = controller::RunOptions {
        metrics: metrics.clone(),
        resync,
        ..controller::RunOptions::new(store)
    };
    let finalizer = controller::finalizer_of(&id).to_owned();
    tokio::spawn(
        async move { controller::run_with(runtime_client, Plain::new(id), options).await },
    );
    tokio::time::sleep(Duration::from_secs(2)).await;
    let idle = rss_mib();

    let requests_before = apiserver_requests(&client).await;
    let cpu_before = cpu_seconds();
    let runtime_cpu_before = control_plane_cpu_seconds();
    let started = Instant::now();
    // With the provisioner's finalizer, as Pakket's mutating webhook sets
    // it at creation in every deployment (this bench runs the runtime
    // alone; without it the runtime adds the finalizer itself, one more
    // request).
    let wanted = |i| instance(&scope, i, "class", &namespace, Some(&finalizer));
    create_all(&instances, count, concurrency, wanted).await;
    let created = started.elapsed();
    let installed =
        installed_within(&instances, &scope.selector(), count, &started, |_| true).await;
    let runtime_time = started.elapsed();
    let cpu = cpu_seconds() - cpu_before;
    let runtime_cpu = control_plane_cpu_seconds() - runtime_cpu_before;
    let served = served_since(&requests_before, &apiserver_requests(&client).await);
    let requests: f64 = served.values().sum();
    let busy = rss_mib();

    let per_second = |n: usize, d: Duration| n as f64 / d.as_secs_f64();
    println!("{count} small objects, {concurrency} requests in flight:");
    println!(
        "  apiserver server-side apply, raw:       {:>7.1} s  ({:>6.1} objects/s)",
        raw_time.as_secs_f64(),
        per_second(count, raw_time)
    );
    println!(
        "  apiserver creating the Instances alone:  {:>7.1} s  ({:>6.1} Instances/s, no provisioner)",
        instances_time.as_secs_f64(),
        per_second(count, instances_time)
    );
    println!(
        "  runtime, Instance created → Installed: {:>7.1} s  ({:>6.1} Instances/s, {installed}/{count} installed)",
        runtime_time.as_secs_f64(),
        per_second(installed, runtime_time)
    );
    println!(
        "    of which the bench's own creation of the Instances: {:.1} s",
        created.as_secs_f64()
    );
    println!(
        "  ratio runtime / raw: {:.1}× (to raw apply plus the Instances alone: {:.1}×)",
        runtime_time.as_secs_f64() / raw_time.as_secs_f64(),
        runtime_time.as_secs_f64() / (raw_time + instances_time).as_secs_f64()
    );
    // The same comparison in requests: what one Instance costs the
    // apiserver (its creation by this bench, the content read, the apply,
    // the status, the Events past the burst budget, and the bench's
    // polling), and whether the runtime keeps the apiserver as busy as the
    // raw applies did.
    println!(
        "  apiserver requests: raw {:.0} ({:.0}/s); runtime phase {:.0} ({:.1} per Instance, {:.0}/s)",
        raw_requests,
        raw_requests / raw_time.as_secs_f64(),
        requests,
        requests / count as f64,
        requests / runtime_time.as_secs_f64()
    );
    // Where they went, so a change in the count can be traced to its verb.
    for (key, value) in served
        .iter()
        .filter(|(_, value)| **value >= count as f64 / 20.0)
    {
        println!("    {key:<40} {:>5.2} per Instance", value / count as f64);
    }
    println!(
        "  this process's CPU meanwhile (runtime and bench): {cpu:.1} s ({:.0}% of one core)",
        100.0 * cpu / runtime_time.as_secs_f64()
    );
    // What the apiserver and etcd spent on each phase: on a machine where
    // they saturate the cores, this ratio, not the runtime, sets the
    // ratio of the times.
    println!(
        "  control plane CPU (kube-apiserver + etcd): raw {:.1} s ({:.1} ms per object); Instances alone {:.1} s ({:.1} ms each); runtime phase {:.1} s ({:.1} ms per Instance, {:.1}× raw)",
        raw_cpu,
        1000.0 * raw_cpu / count as f64,
        alone_cpu,
        1000.0 * alone_cpu / count as f64,
        runtime_cpu,
        1000.0 * runtime_cpu / count as f64,
        runtime_cpu / raw_cpu.max(f64::EPSILON)
    );
    println!("  process RSS: idle {idle:.1} MiB, with {count} Instances {busy:.1} MiB");

    // Every Instance pivots to new content: the whole set of each is read,
    // checked by a dry run, applied, and the old Bundle's object pruned.
    write_contents(&contents, &namespace, count, concurrency, "content-v2", "w").await;
    let pivot_requests_before = apiserver_requests(&client).await;
    let pivot_cpu_before = control_plane_cpu_seconds();
    let started = Instant::now();
    stream::iter(0..count)
        .for_each_concurrent(concurrency, |i| {
            let instances = instances.clone();
            let scope = &scope;
            let namespace = namespace.clone();
            async move {
                let pivot = json!({ "spec": { "bundle": {
                    "name": scope.name(&format!("p{i}")),
                    "spec": {
                        "class": scope.name("class"),
                        "refs": ["file://content"],
                        "volumeMounts": [{ "mountPath": "/content",
                            "configMap": { "name": format!("content-v2-{i}"), "namespace": namespace } }],
                    },
                } } });
                instances
                    .patch(
                        &scope.name(&format!("i{i}")),
                        &PatchParams::default(),
                        &Patch::Merge(&pivot),
                    )
                    .await
                    .unwrap();
            }
        })
        .await;
    let new_bundles = scope.name("p");
    let pivoted = installed_within(&instances, &scope.selector(), count, &started, |i| {
        i.status
            .as_ref()
            .and_then(|s| s.active_bundle.as_deref())
            .is_some_and(|bundle| bundle.starts_with(&new_bundles))
    })
    .await;
    let pivot_time = started.elapsed();
    let pivot_cpu = control_plane_cpu_seconds() - pivot_cpu_before;
    let pivot_served = served_since(&pivot_requests_before, &apiserver_requests(&client).await);
    let pivot_requests: f64 = pivot_served.values().sum();
    println!(
        "  pivot, spec changed → Installed on the new Bundle: {:>7.1} s  ({:>6.1} Instances/s, {pivoted}/{count} pivoted)",
        pivot_time.as_secs_f64(),
        per_second(pivoted, pivot_time)
    );
    println!(
        "    apiserver requests {:.0} ({:.1} per Instance); control plane CPU {:.1} s",
        pivot_requests,
        pivot_requests / count as f64,
        pivot_cpu
    );
    for (key, value) in pivot_served
        .iter()
        .filter(|(_, value)| **value >= count as f64 / 20.0)
    {
        println!("    {key:<40} {:>5.2} per Instance", value / count as f64);
    }
    // How much work the runtime did for it: reconciles and their durations.
    for line in metrics.encode().lines() {
        if line.starts_with("pakket_reconciles_total")
            || line.starts_with("pakket_reconcile_duration_seconds_sum")
            || line.starts_with("pakket_reconcile_duration_seconds_count")
        {
            println!("  {line}");
        }
    }

    // At rest: every Instance installed and nothing changing. What the
    // runtime asks of the apiserver now is its steady cost (resyncs and
    // their re-applies, watches renewed), counted by its own client over
    // a window that holds every Instance's resync once.
    let rest = resync.mul_f64(1.2);
    // The first resync after the pivot still writes each status once (the
    // pivot's words leave Installed's message); the steady cost is the one
    // after it.
    tokio::time::sleep(rest).await;
    let at_rest_before = metrics.apiserver_requests();
    let reconciles_before = reconciles(&metrics);
    tokio::time::sleep(rest).await;
    let at_rest = metrics.apiserver_requests();
    let sent: Vec<(&str, u64)> = at_rest
        .iter()
        .zip(&at_rest_before)
        .map(|((verb, after), (_, before))| (*verb, after - before))
        .filter(|(_, sent)| *sent > 0)
        .collect();
    let total: u64 = sent.iter().map(|(_, sent)| sent).sum();
    let rate = total as f64 / rest.as_secs_f64();
    let default_resync = controller::RESYNC.as_secs_f64();
    println!(
        "  at rest, {count} Instances installed, nothing changing, resync every {} s, watched {:.0} s: the runtime sent {total} requests ({rate:.2}/s; {:.0} reconciles)",
        resync.as_secs(),
        rest.as_secs_f64(),
        reconciles(&metrics) - reconciles_before
    );
    for (verb, sent) in &sent {
        println!(
            "    {verb:<8} {sent:>6} ({:.2}/s)",
            *sent as f64 / rest.as_secs_f64()
        );
    }
    println!(
        "    at the default resync of {:.0} s: {:.3}/s ({:.2} requests per Instance per resync)",
        default_resync,
        rate * resync.as_secs_f64() / default_resync,
        total as f64 / count as f64 / (rest.as_secs_f64() / resync.as_secs_f64())
    );

    // Every Instance deleted: the finalizer's uninstall removes its object
    // (and its embedded Bundle's pin) before the Instance goes. Beside the
    // create → Installed time above.
    let started = Instant::now();
    stream::iter(0..count)
        .for_each_concurrent(concurrency, |i| {
            let instances = instances.clone();
            let scope = &scope;
            async move {
                let _ = instances
                    .delete(&scope.name(&format!("i{i}")), &Default::default())
                    .await;
            }
        })
        .await;
    let asked = started.elapsed();
    let remaining = loop {
        let left = instances
            .list_metadata(&ListParams::default().labels(&scope.selector()))
            .await
            .map(|list| list.items.len())
            .unwrap_or(count);
        if left == 0 || started.elapsed() > Duration::from_secs(600) {
            break left;
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    };
    let delete_time = started.elapsed();
    println!(
        "  delete, all {count} → gone (objects uninstalled): {:>7.1} s  ({:>6.1} Instances/s, {} left; create → Installed took {:.1} s, {:.2}×)",
        delete_time.as_secs_f64(),
        per_second(count - remaining, delete_time),
        remaining,
        runtime_time.as_secs_f64(),
        delete_time.as_secs_f64() / runtime_time.as_secs_f64()
    );
    println!(
        "    of which the bench's own deletes: {:.1} s",
        asked.as_secs_f64()
    );
    // The control plane the test kit started goes away with this process.
}

/// Reconciles the runtime counted so far.
fn reconciles(metrics: &Metrics) -> f64 {
    pakket_testkit::probes::metric_total(&metrics.encode(), "pakket_reconciles_total")
}
