//! Pakket at scale beside the apiserver alone: COUNT plain Instances of
//! three ConfigMaps each, installed, left alone for a whole re-apply
//! period, and deleted, with Pakket's webhooks registered as `deploy/`
//! registers them (every namespace, not a test's label) and the
//! `pakket-plain` binary running as a provisioner does; beside it, in the
//! same run and on the same control plane, the same ConfigMaps applied and
//! deleted raw; and after them the floor ([`floor`]): the same Instances
//! alone, with no provisioner, written as the runtime would write them.
//! Printed, never asserted.
//!
//! ```text
//! cargo bench -p pakket-plain --bench lean [-- COUNT [RESYNC_SECONDS]]
//! ```
//! COUNT defaults to 1,000. The provisioner's re-apply period is shortened
//! to RESYNC_SECONDS (`--resync`, default 120) so that the idle phase,
//! which lasts one and a half periods (every Instance is looked at again
//! between half a period and one and a half after its install), holds a
//! whole period of re-applies: at the default hour the same work is spread
//! thirty times thinner.
//!
//! For each phase: the CPU the kube-apiserver used (from `/proc`, so the
//! control plane must run on this machine, as the test kit's does), the
//! provisioner's own requests (its `pakket_apiserver_requests_total`, read
//! from its `/metrics`) per object, and what the webhooks were asked.
//! Runs on the control plane the test kit provides (started on first use,
//! or `PAKKET_TEST_KUBECONFIG`: a fresh one gives figures free of earlier
//! objects).

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use futures::{StreamExt, stream};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use kube::runtime::watcher;
use pakket_api::{Instance, ProvisionerClass};
use pakket_testkit::load::{apiserver_cpu_seconds, apiserver_requests, served_since};
use pakket_testkit::probes;
use pakket_testkit::{Scope, cluster, install_crds};
use pakket_webhooks::local::{LocalOptions, LocalWebhooks};
use serde_json::{Value, json};
use tokio::process::{Child, Command};

#[path = "lean/floor.rs"]
mod floor;

/// ConfigMaps per Instance, as in the measurement the figures compare with.
const OBJECTS_PER_INSTANCE: usize = 3;
/// Requests in flight, for the raw phases and for creating and deleting
/// the Instances alike.
pub(crate) const CONCURRENCY: usize = 16;
/// How often the provisioner's request counter is read while idle.
const IDLE_SAMPLE: Duration = Duration::from_secs(10);
/// The longest any phase is waited for.
const PHASE_LIMIT: Duration = Duration::from_secs(1200);

/// One phase's cost to the apiserver.
struct Cost {
    took: Duration,
    apiserver_cpu: f64,
    served: BTreeMap<String, f64>,
    provisioner_requests: u64,
    webhook_calls: u64,
}

/// How long each phase's CPU profile lasts, when one is asked for.
const PROFILE_SECONDS: u32 = 30;

/// With `PAKKET_APISERVER_PROFILING=true` (which also starts the test
/// kit's control plane with `/debug/pprof`), the kube-apiserver's CPU
/// profile over a phase's first [`PROFILE_SECONDS`], written to a file
/// for `go tool pprof`: where the apiserver's time goes, which its
/// request counts alone cannot say.
struct Profile {
    fetch: std::process::Child,
    file: std::path::PathBuf,
}

impl Profile {
    fn start(phase: &str) -> Option<Self> {
        if std::env::var("PAKKET_APISERVER_PROFILING").as_deref() != Ok("true") {
            return None;
        }
        let file = std::env::temp_dir().join(format!("pakket-lean-{phase}.pprof"));
        let output = std::fs::File::create(&file).expect("creating the profile's file");
        let fetch = cluster()
            .kubectl()
            .args(["get", "--raw"])
            .arg(format!("/debug/pprof/profile?seconds={PROFILE_SECONDS}"))
            .stdout(output)
            .spawn()
            .expect("starting kubectl");
        Some(Self { fetch, file })
    }

    fn finish(mut self) {
        match self.fetch.wait() {
            Ok(status) if status.success() => {
                eprintln!("apiserver CPU profile: {}", self.file.display());
            }
            _ => eprintln!("no apiserver CPU profile: kubectl get --raw /debug/pprof failed"),
        }
    }
}

/// Measures what `work` costs; `provisioner` is its `/metrics` address,
/// if one runs.
async fn measure<F: std::future::Future<Output = ()>>(
    phase: &str,
    client: &kube::Client,
    provisioner: Option<&str>,
    webhooks: &LocalWebhooks,
    work: F,
) -> Cost {
    eprintln!("phase: {phase}");
    let profile = Profile::start(phase);
    let served_before = apiserver_requests(client).await;
    let cpu_before = apiserver_cpu_seconds();
    let provisioner_before = provisioner_requests(provisioner).await;
    let webhook_before = webhook_calls(webhooks);
    let started = Instant::now();
    work.await;
    let took = started.elapsed();
    let cost = Cost {
        took,
        apiserver_cpu: apiserver_cpu_seconds() - cpu_before,
        served: served_since(&served_before, &apiserver_requests(client).await),
        provisioner_requests: provisioner_requests(provisioner).await - provisioner_before,
        webhook_calls: webhook_calls(webhooks) - webhook_before,
    };
    if let Some(profile) = profile {
        profile.finish();
    }
    cost
}

/// The provisioner's `pakket_apiserver_requests_total`, all verbs.
async fn provisioner_requests(address: Option<&str>) -> u64 {
    let Some(address) = address else { return 0 };
    let text = probes::get(address, "/metrics").await.unwrap_or_default();
    probes::metric_total(&text, "pakket_apiserver_requests_total") as u64
}

/// Every admission request the webhooks answered so far.
fn webhook_calls(webhooks: &LocalWebhooks) -> u64 {
    let Some(metrics) = webhooks.metrics() else {
        return 0;
    };
    probes::metric_total(&metrics.encode(), "pakket_webhook_admissions_total") as u64
}

/// ConfigMap `name` in `namespace`, as a manifest.
fn config_map(namespace: &str, name: &str) -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": namespace},
        "data": {"value": "v"},
    })
}

/// The names of the raw phase's ConfigMaps.
fn raw_names(count: usize) -> Vec<String> {
    (0..count)
        .flat_map(|i| (0..OBJECTS_PER_INSTANCE).map(move |k| format!("raw-{i}-{k}")))
        .collect()
}

/// Server-side applies `names` as `bench`, CONCURRENCY at a time.
async fn apply_raw(config_maps: &Api<ConfigMap>, namespace: &str, names: &[String]) {
    stream::iter(names)
        .for_each_concurrent(CONCURRENCY, |name| async move {
            config_maps
                .patch(
                    name,
                    &PatchParams::apply("bench").force(),
                    &Patch::Apply(&config_map(namespace, name)),
                )
                .await
                .unwrap();
        })
        .await;
}

/// Deletes `names`, CONCURRENCY at a time.
async fn delete_raw(config_maps: &Api<ConfigMap>, names: &[String]) {
    stream::iter(names)
        .for_each_concurrent(CONCURRENCY, |name| async move {
            config_maps
                .delete(name, &DeleteParams::default())
                .await
                .unwrap();
        })
        .await;
}

/// Instance `i`'s content: one immutable, labelled ConfigMap holding its
/// three objects.
async fn write_contents(config_maps: &Api<ConfigMap>, namespace: &str, count: usize) {
    stream::iter(0..count)
        .for_each_concurrent(CONCURRENCY, |i| async move {
            let objects: Vec<String> = (0..OBJECTS_PER_INSTANCE)
                .map(|k| {
                    serde_saphyr::to_string(&config_map(namespace, &format!("installed-{i}-{k}")))
                        .unwrap()
                })
                .collect();
            let content: ConfigMap = serde_json::from_value(json!({
                "metadata": {
                    "name": format!("content-{i}"),
                    "labels": {pakket_api::BUNDLE_CONTENT_LABEL: "true"},
                },
                "data": {"objects.yaml": objects.join("---\n")},
                "immutable": true,
            }))
            .unwrap();
            config_maps
                .create(&PostParams::default(), &content)
                .await
                .unwrap();
        })
        .await;
}

/// Instance `name`, in class `class`, with Instance `i`'s content
/// embedded.
fn instance(scope: &Scope, name: &str, i: usize, class: &str) -> Instance {
    serde_json::from_value(json!({
        "apiVersion": "core.pakket.dev/v1alpha1",
        "kind": "Instance",
        "metadata": scope.meta(name),
        "spec": {
            "class": class,
            "bundle": {
                "name": scope.name(&format!("{name}-bundle")),
                "spec": {
                    "class": class,
                    "refs": ["file://content"],
                    "volumeMounts": [{
                        "mountPath": "/content",
                        "configMap": {"name": format!("content-{i}"), "namespace": scope.namespace},
                    }],
                },
            },
        },
    }))
    .unwrap()
}

/// Watches the scope's Instances until `count` of them are `Installed`
/// (`gone: false`), or until none is left (`gone: true`: those deleted
/// before the watch began are simply not listed), or the phase limit
/// passes; how many are Installed, or gone. A watch, not a polled list, so
/// the waiting costs the apiserver next to nothing of what is measured.
async fn until(instances: &Api<Instance>, selector: &str, count: usize, gone: bool) -> usize {
    let mut installed = BTreeSet::new();
    let mut present = BTreeSet::new();
    let mut listed = false;
    let watch = async {
        let events = watcher(
            instances.clone(),
            watcher::Config::default().labels(selector),
        );
        futures::pin_mut!(events);
        while let Some(event) = events.next().await {
            match event {
                Ok(watcher::Event::Apply(object) | watcher::Event::InitApply(object)) => {
                    let name = object.metadata.name.clone().unwrap_or_default();
                    if object
                        .condition(pakket_api::ConditionType::Installed)
                        .is_some_and(|c| c.status == "True")
                    {
                        installed.insert(name.clone());
                    }
                    present.insert(name);
                }
                Ok(watcher::Event::Delete(object)) => {
                    present.remove(&object.metadata.name.clone().unwrap_or_default());
                }
                // A watch that starts again lists afresh.
                Ok(watcher::Event::Init) => {
                    present.clear();
                    listed = false;
                }
                Ok(watcher::Event::InitDone) => listed = true,
                _ => {}
            }
            let done = if gone {
                listed && present.is_empty()
            } else {
                installed.len() == count
            };
            if done {
                break;
            }
        }
    };
    let _ = tokio::time::timeout(PHASE_LIMIT, watch).await;
    if gone {
        count - present.len().min(count)
    } else {
        installed.len()
    }
}

/// `pakket-plain` as a deployment runs it (leader election, probes,
/// `/metrics`), with its re-apply period shortened; its `/metrics` address.
async fn provisioner(
    scope: &Scope,
    id: &str,
    resync: Duration,
    key: &std::path::Path,
) -> (Child, String) {
    let mut command = Command::new(env!("CARGO_BIN_EXE_pakket-plain"));
    command
        .args(["--id", id, "--lease-namespace", &scope.namespace])
        .args(["--probe-address", "127.0.0.1:0"])
        .args(["--resync", &resync.as_secs().to_string()])
        .arg("--store")
        .arg(scope.path("lean-store"))
        .arg("--record-key-file")
        .arg(key)
        .env("KUBECONFIG", cluster().kubeconfig())
        .env("RUST_LOG", "warn");
    probes::spawn(command).await
}

/// The idle phase: the provisioner's requests over `window`, read every
/// [`IDLE_SAMPLE`]; the average a second and the busiest minute's.
async fn idle(probes: &str, window: Duration) -> (f64, f64, u64) {
    let started = Instant::now();
    let mut samples = vec![(0.0, provisioner_requests(Some(probes)).await)];
    while started.elapsed() < window {
        tokio::time::sleep(IDLE_SAMPLE).await;
        samples.push((
            started.elapsed().as_secs_f64(),
            provisioner_requests(Some(probes)).await,
        ));
    }
    let (end, last) = *samples.last().expect("one sample at least");
    let total = last - samples[0].1;
    let per_minute = (60.0 / IDLE_SAMPLE.as_secs_f64()).round() as usize;
    let busiest = samples
        .windows(per_minute + 1)
        .map(|minute| (minute[per_minute].1 - minute[0].1) as f64 / 60.0)
        .fold(0.0, f64::max);
    (total as f64 / end.max(1.0), busiest, total)
}

/// Instance `name` as stored, written out whole when
/// `PAKKET_LEAN_INSTANCE_FILE` names a file (to read what its bytes are).
async fn stored(instances: &Api<Instance>, name: &str) -> Option<Instance> {
    let installed = instances.get(name).await.ok()?;
    if let Ok(file) = std::env::var("PAKKET_LEAN_INSTANCE_FILE") {
        let pretty = serde_json::to_vec_pretty(&installed).unwrap_or_default();
        let _ = std::fs::write(file, pretty);
    }
    Some(installed)
}

/// `instance`'s size as stored, and how much of it is
/// `metadata.managedFields` (JSON bytes).
fn stored_size(instance: &Instance) -> (usize, usize) {
    let json = serde_json::to_vec(instance).unwrap_or_default();
    let managed = serde_json::to_vec(&instance.metadata.managed_fields).unwrap_or_default();
    (json.len(), managed.len())
}

fn print_phase(title: &str, cost: &Cost, objects: usize, raw: Option<&Cost>) {
    let ratio = raw.map_or(String::new(), |raw| {
        format!(
            "; {:.1}× raw's {:.1} s",
            cost.apiserver_cpu / raw.apiserver_cpu.max(0.01),
            raw.apiserver_cpu
        )
    });
    println!(
        "  {title:<52} {:>7.1} s  apiserver CPU {:>6.1} s{ratio}",
        cost.took.as_secs_f64(),
        cost.apiserver_cpu
    );
    println!(
        "    provisioner requests {} ({:.2} per object); webhook calls {}",
        cost.provisioner_requests,
        cost.provisioner_requests as f64 / objects as f64,
        cost.webhook_calls
    );
    let served: f64 = cost.served.values().sum();
    println!(
        "    apiserver requests {served:.0} ({:.2} per object), the largest:",
        served / objects as f64
    );
    let mut largest: Vec<_> = cost.served.iter().collect();
    largest.sort_by(|a, b| b.1.total_cmp(a.1));
    for (key, value) in largest.into_iter().take(6) {
        println!(
            "      {key:<40} {value:>7.0} ({:.2} per object)",
            value / objects as f64
        );
    }
}

#[tokio::main]
async fn main() {
    let numbers: Vec<u64> = std::env::args()
        .skip(1)
        .filter(|arg| arg != "--bench")
        .filter_map(|arg| arg.parse().ok())
        .collect();
    let count = numbers.first().map_or(1000, |count| *count as usize);
    let resync = Duration::from_secs(numbers.get(1).copied().unwrap_or(120));
    let objects = count * OBJECTS_PER_INSTANCE;
    let scope = Scope::new("bench-lean").await;
    install_crds(&scope.client).await.unwrap();
    let client = scope.client.clone();
    let namespace = scope.namespace.clone();
    // The webhooks as deploy/ registers them: for every namespace but the
    // system ones, not only this bench's objects.
    let webhooks = LocalWebhooks::start(
        client.clone(),
        LocalOptions {
            name: format!("lean-{}", scope.id),
            object_selector: None,
            ..LocalOptions::default()
        },
    )
    .await
    .expect("starting the webhooks");
    let config_maps: Api<ConfigMap> = Api::namespaced(client.clone(), &namespace);

    // The same ConfigMaps, raw: applied, then deleted.
    let names = raw_names(count);
    let raw_apply = measure(
        "raw-apply",
        &client,
        None,
        &webhooks,
        apply_raw(&config_maps, &namespace, &names),
    )
    .await;
    let raw_delete = measure(
        "raw-delete",
        &client,
        None,
        &webhooks,
        delete_raw(&config_maps, &names),
    )
    .await;

    write_contents(&config_maps, &namespace, count).await;
    let id = format!("bench.pakket.dev/{}", scope.id);
    let class: ProvisionerClass = serde_json::from_value(json!({
        "apiVersion": "core.pakket.dev/v1alpha1",
        "kind": "ProvisionerClass",
        "metadata": scope.meta("class"),
        "spec": {"provisioner": id, "parameters": {"approval": "AllowAll"}},
    }))
    .unwrap();
    Api::<ProvisionerClass>::all(client.clone())
        .create(&PostParams::default(), &class)
        .await
        .unwrap();
    let (mut child, probes) = provisioner(&scope, &id, resync, webhooks.record_key_file()).await;
    // Past its first election, so the phase below measures installs.
    tokio::time::sleep(Duration::from_secs(3)).await;

    let instances: Api<Instance> = Api::all(client.clone());
    let selector = scope.selector();
    let class_name = scope.name("class");
    let mut installed = 0;
    let create = measure("create", &client, Some(&probes), &webhooks, async {
        stream::iter(0..count)
            .for_each_concurrent(CONCURRENCY, |i| {
                let created = instance(&scope, &format!("i{i}"), i, &class_name);
                let instances = instances.clone();
                async move {
                    instances
                        .create(&PostParams::default(), &created)
                        .await
                        .unwrap();
                }
            })
            .await;
        installed = until(&instances, &selector, count, false).await;
    })
    .await;

    // What every write of an Instance costs the apiserver grows with its
    // size: it decodes, validates and encodes the whole object each time.
    let installed_one = stored(&instances, &scope.name("i0")).await;
    let (size, managed_size) = installed_one.as_ref().map_or((0, 0), stored_size);

    let window = resync.mul_f64(1.5);
    let idle_cpu_before = apiserver_cpu_seconds();
    let (average, busiest_minute, idle_requests) = idle(&probes, window).await;
    let idle_cpu = apiserver_cpu_seconds() - idle_cpu_before;

    let mut deleted = 0;
    let delete = measure("delete", &client, Some(&probes), &webhooks, async {
        stream::iter(0..count)
            .for_each_concurrent(CONCURRENCY, |i| {
                let instances = instances.clone();
                let name = scope.name(&format!("i{i}"));
                async move {
                    let _ = instances.delete(&name, &DeleteParams::default()).await;
                }
            })
            .await;
        deleted = until(&instances, &selector, count, true).await;
    })
    .await;
    let _ = child.kill().await;

    // The floor: the same Instances alone, in a class no provisioner
    // serves, written as the runtime would write them and no more.
    let floor_class: ProvisionerClass = serde_json::from_value(json!({
        "apiVersion": "core.pakket.dev/v1alpha1",
        "kind": "ProvisionerClass",
        "metadata": scope.meta("floor-class"),
        "spec": {"provisioner": format!("{id}-unserved")},
    }))
    .unwrap();
    Api::<ProvisionerClass>::all(client.clone())
        .create(&PostParams::default(), &floor_class)
        .await
        .unwrap();
    let status = installed_one
        .and_then(|instance| instance.status)
        .unwrap_or_default();
    let floor_class = scope.name("floor-class");
    let floor_create = |held| floor::create(&instances, &scope, &floor_class, &status, count, held);
    let floor_created = measure("floor-create", &client, None, &webhooks, floor_create(true)).await;
    let floor_delete = measure(
        "floor-delete",
        &client,
        None,
        &webhooks,
        floor::delete(&instances, &scope, count, true),
    )
    .await;
    // The same with nothing holding them: what an uninstall without a
    // finalizer would leave of the Instance's own cost.
    floor_create(false).await;
    let unheld_delete = measure(
        "floor-unheld-delete",
        &client,
        None,
        &webhooks,
        floor::delete(&instances, &scope, count, false),
    )
    .await;

    println!(
        "{count} plain Instances of {OBJECTS_PER_INSTANCE} ConfigMaps each ({objects} objects), {CONCURRENCY} requests in flight, webhooks registered for every namespace:"
    );
    print_phase("raw server-side apply", &raw_apply, objects, None);
    print_phase("raw delete", &raw_delete, objects, None);
    print_phase(
        &format!("Instances created → Installed ({installed}/{count})"),
        &create,
        objects,
        Some(&raw_apply),
    );
    print_phase(
        &format!("Instances deleted → gone ({deleted}/{count})"),
        &delete,
        objects,
        Some(&raw_delete),
    );
    print_phase(
        "the floor: Instances alone, created + 1 status write",
        &floor_created,
        objects,
        Some(&raw_apply),
    );
    print_phase(
        "the floor: Instances alone, deleted (finalizer)",
        &floor_delete,
        objects,
        Some(&raw_delete),
    );
    print_phase(
        "the floor: Instances alone, deleted (no finalizer)",
        &unheld_delete,
        objects,
        Some(&raw_delete),
    );
    println!(
        "  an installed Instance is {} bytes of JSON, {} of them managedFields",
        size, managed_size
    );
    println!(
        "  idle, {:.0} s (1.5 re-apply periods of {} s): the provisioner sent {idle_requests} requests, {average:.3}/s on average, {busiest_minute:.3}/s in its busiest minute; apiserver CPU {idle_cpu:.1} s",
        window.as_secs_f64(),
        resync.as_secs()
    );
    // Registered for every namespace, the webhooks would refuse every
    // ConfigMap and Instance write once this process is gone: a bench run
    // on a shared control plane (PAKKET_TEST_KUBECONFIG) must take them
    // away before it ends.
    if let Err(error) = webhooks.stop().await {
        eprintln!("the webhooks' configurations were not deleted: {error}");
    }
    scope.cleanup().await;
}
