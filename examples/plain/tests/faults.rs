//! Faults, in bounded loops on loopback, each asserting that no object is
//! lost or orphaned and that every Instance ends in a true condition:
//!
//! - the provisioner SIGKILLed at a random moment of an apply, a pivot and
//!   an uninstall, round after round (`PAKKET_FAULT_ROUNDS`, 3 by default
//!   so CI stays quick; 20 is the full run; `PAKKET_FAULT_SEED` replays a
//!   run, whose seed each run prints);
//! - the admission webhooks unreachable: Pakket's objects are neither
//!   written nor deleted (fail closed), other objects are, and all works
//!   again when they are back;
//! - two replicas of the provisioner, the leader SIGKILLed every few
//!   seconds (and a replacement started) while Instances are created and
//!   deleted (`PAKKET_CHURN_INSTANCES`, 100 by default, 500 the full run);
//!   the replicas' memory and the apiserver's request rate are written as
//!   a report (`PAKKET_REPORT_DIR`, see `pakket_testkit::report`).

#[path = "trust/shipped.rs"]
#[allow(dead_code)]
mod shipped;
#[path = "trust/support.rs"]
#[allow(dead_code)]
mod support;

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use pakket_api::ownership::INSTANCE_LABEL;
use pakket_api::{ConditionType, Instance};
use pakket_testkit::eventually;
use serde_json::json;

use pakket_testkit::report::{Report, Sampler};
use support::{Stage, Webhooks};

/// Objects per version: enough that a kill often lands mid-write.
const OBJECTS: usize = 300;

/// A small, seeded generator (xorshift): the kill moments of a run can be
/// replayed from its seed.
struct Moments(u64);

impl Moments {
    fn next_millis(&mut self, below: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % below
    }
}

fn rounds() -> usize {
    std::env::var("PAKKET_FAULT_ROUNDS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(3)
}

fn seed() -> u64 {
    std::env::var("PAKKET_FAULT_SEED")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_nanos() as u64
                | 1
        })
}

/// v1: `a-000`…`a-299` = "v1". v2: the first half of those = "v2" and
/// `b-000`…`b-149` = "v2" (a pivot updates 150, deletes 150, adds 150).
fn version(v: &str) -> BTreeMap<String, String> {
    let mut objects = BTreeMap::new();
    match v {
        "v1" => {
            for i in 0..OBJECTS {
                objects.insert(format!("a-{i:03}"), "v1".to_owned());
            }
        }
        _ => {
            for i in 0..OBJECTS / 2 {
                objects.insert(format!("a-{i:03}"), "v2".to_owned());
                objects.insert(format!("b-{i:03}"), "v2".to_owned());
            }
        }
    }
    objects
}

async fn write_content(stage: &Stage, name: &str, objects: &BTreeMap<String, String>) {
    let manifests: Vec<String> = objects
        .iter()
        .map(|(object, value)| stage.config_map_manifest(object, value))
        .collect();
    stage
        .content(name, &[("all.yaml", manifests.join("---\n"))])
        .await;
}

/// The ConfigMaps Instance `name` owns (by the runtime's label), with
/// their values.
async fn owned(config_maps: &Api<ConfigMap>, name: &str) -> BTreeMap<String, String> {
    let mine = ListParams::default().labels(&format!("{INSTANCE_LABEL}={name}"));
    config_maps
        .list(&mine)
        .await
        .unwrap()
        .items
        .into_iter()
        .map(|config_map| {
            let value = config_map
                .data
                .as_ref()
                .and_then(|data| data.get("value").cloned())
                .unwrap_or_default();
            (config_map.metadata.name.unwrap_or_default(), value)
        })
        .collect()
}

/// Waits until Instance `suffix` is installed from `bundle` and healthy.
async fn settled(stage: &Stage, suffix: &str, bundle: &str) {
    let bundle = stage.scope.name(bundle);
    stage
        .wait(suffix, "installed and healthy again", |instance| {
            instance
                .status
                .as_ref()
                .and_then(|s| s.active_bundle.as_deref())
                == Some(bundle.as_str())
                && pakket_testkit::condition_is(instance, ConditionType::Installed, "True")
                && pakket_testkit::condition_is(instance, ConditionType::Healthy, "True")
        })
        .await;
}

#[tokio::test]
async fn a_provisioner_killed_at_random_moments_loses_and_orphans_nothing() {
    let mut stage = Stage::new("faults-kill", "AllowAll", Webhooks::On).await;
    let (rounds, seed) = (rounds(), seed());
    println!("{rounds} rounds, seed {seed} (PAKKET_FAULT_SEED={seed} replays them)");
    let mut moments = Moments(seed);
    let v1 = version("v1");
    let v2 = version("v2");
    write_content(&stage, "v1", &v1).await;
    write_content(&stage, "v2", &v2).await;
    let config_maps: Api<ConfigMap> = Api::namespaced(stage.admin(), stage.namespace());
    let began = Instant::now();
    for round in 0..rounds {
        let suffix = format!("r{round}");
        let name = stage.scope.name(&suffix);
        // An apply, cut short.
        stage
            .create(
                &stage.admin(),
                stage.instance(&suffix, &format!("{suffix}-v1"), "v1"),
            )
            .await
            .unwrap();
        let kill = moments.next_millis(1500);
        tokio::time::sleep(Duration::from_millis(kill)).await;
        let during = owned(&config_maps, &name).await.len();
        stage.kill_provisioner(false).await;
        stage.start_provisioner().await;
        settled(&stage, &suffix, &format!("{suffix}-v1")).await;
        assert_eq!(owned(&config_maps, &name).await, v1, "round {round}: apply");
        println!("round {round}: apply killed at {kill} ms ({during} objects written), then whole");

        // A pivot, cut short.
        stage
            .instances()
            .patch(
                &name,
                &PatchParams::default(),
                &Patch::Merge(json!({"spec": {"bundle": {
                    "name": stage.scope.name(&format!("{suffix}-v2")), "spec": stage.bundle_spec("v2"),
                }}})),
            )
            .await
            .unwrap();
        let kill = moments.next_millis(1500);
        tokio::time::sleep(Duration::from_millis(kill)).await;
        stage.kill_provisioner(false).await;
        stage.start_provisioner().await;
        settled(&stage, &suffix, &format!("{suffix}-v2")).await;
        assert_eq!(
            owned(&config_maps, &name).await,
            v2,
            "round {round}: pivot (v1's other half deleted, nothing orphaned)"
        );
        println!("round {round}: pivot killed at {kill} ms, then whole");

        // An uninstall, cut short.
        stage
            .instances()
            .delete(&name, &DeleteParams::default())
            .await
            .unwrap();
        let kill = moments.next_millis(800);
        tokio::time::sleep(Duration::from_millis(kill)).await;
        stage.kill_provisioner(false).await;
        stage.start_provisioner().await;
        eventually("the Instance is gone", || async {
            stage.instances().get_opt(&name).await.unwrap().is_none()
        })
        .await;
        assert!(
            owned(&config_maps, &name).await.is_empty(),
            "round {round}: uninstall left nothing"
        );
        println!("round {round}: uninstall killed at {kill} ms, then nothing left");
    }
    // Nothing of any round is left, labelled or not.
    let left: Vec<String> = config_maps
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .filter_map(|c| c.metadata.name)
        .filter(|name| name.starts_with("a-") || name.starts_with("b-"))
        .collect();
    assert!(left.is_empty(), "orphans: {left:?}");
    println!(
        "{rounds} rounds of apply, pivot and uninstall, each killed once: {:.1} s",
        began.elapsed().as_secs_f64()
    );
    stage.cleanup().await;
}

#[tokio::test]
async fn with_the_webhooks_unreachable_pakket_objects_fail_closed_and_work_when_back() {
    let stage = Stage::new("faults-webhooks", "AllowAll", Webhooks::On).await;
    stage.config_map_content("content", &[("a", "v1")]).await;
    stage.config_map_content("other", &[("b", "v1")]).await;
    stage
        .create(&stage.admin(), stage.instance("kept", "kept-v1", "content"))
        .await
        .unwrap();
    stage.installed("kept").await;
    // The same configurations, pointing at a port nothing listens on: what
    // the apiserver sees while the webhooks' Pods are down.
    let options = pakket_webhooks::config::Options {
        name: format!("pakket-webhooks-{}-down", stage.scope.id),
        endpoint: pakket_webhooks::config::Endpoint::Url {
            base: "https://127.0.0.1:1".into(),
            ca_pem: stage.webhooks.as_ref().unwrap().ca_pem().into_bytes(),
        },
        object_selector: Some(
            k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector {
                match_labels: Some(stage.scope.labels()),
                ..Default::default()
            },
        ),
        annotations: BTreeMap::new(),
    };
    let validating = pakket_webhooks::config::validating(&options);
    let configurations: Api<
        k8s_openapi::api::admissionregistration::v1::ValidatingWebhookConfiguration,
    > = Api::all(stage.admin());
    configurations
        .create(&PostParams::default(), &validating)
        .await
        .unwrap();
    let down_name = options.name.clone();
    let name = stage.scope.name("kept");
    // Fail closed: no Instance is made, none is deleted.
    eventually("the apiserver calls the dead webhook", || async {
        let made = stage
            .create(&stage.admin(), stage.instance("new", "new-v1", "other"))
            .await;
        made.is_err()
    })
    .await;
    assert!(
        stage
            .instances()
            .get_opt(&stage.scope.name("new"))
            .await
            .unwrap()
            .is_none()
    );
    let refused = stage
        .instances()
        .delete(&name, &DeleteParams::default())
        .await;
    assert!(
        refused.is_err(),
        "no delete while it cannot be checked: {refused:?}"
    );
    assert!(stage.instances().get_opt(&name).await.unwrap().is_some());
    // The Instance is still installed and its objects are there.
    assert_eq!(stage.value_of("a").await.as_deref(), Some("v1"));
    // Other objects are not held up (ConfigMaps: failurePolicy Ignore).
    stage
        .config_maps()
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({"metadata": {"name": "unrelated", "labels": stage.scope.labels()}, "data": {}})).unwrap(),
        )
        .await
        .unwrap();
    // Back: everything works again.
    configurations
        .delete(&down_name, &DeleteParams::default())
        .await
        .unwrap();
    eventually("Instances are made again", || async {
        stage
            .create(&stage.admin(), stage.instance("new", "new-v1", "other"))
            .await
            .is_ok()
    })
    .await;
    stage.installed("new").await;
    stage.delete_instance("kept").await;
    stage.delete_instance("new").await;
    stage.cleanup().await;
}

/// The churn test's replicas, the leader killer and the report's samples.
struct Churn<'a> {
    stage: &'a Stage,
    leases: Api<k8s_openapi::api::coordination::v1::Lease>,
    lease_name: String,
    replicas: Vec<tokio::process::Child>,
    started: usize,
    kills: usize,
    sampler: Sampler,
}

impl<'a> Churn<'a> {
    /// Two replicas of `stage`'s provisioner.
    fn start(stage: &'a Stage) -> Self {
        Self {
            stage,
            leases: Api::namespaced(stage.admin(), stage.namespace()),
            lease_name: pakket_runtime::kernel::leader::LeaseConfig::name_for(&stage.id),
            replicas: (0..2).map(|i| replica(stage, i)).collect(),
            started: 2,
            kills: 0,
            sampler: Sampler::new(stage.admin()),
        }
    }

    /// SIGKILLs the replica that holds the Lease, if one does, and starts
    /// a replacement.
    async fn kill_leader(&mut self) {
        let holder = self
            .leases
            .get_opt(&self.lease_name)
            .await
            .ok()
            .flatten()
            .and_then(|lease| lease.spec.and_then(|spec| spec.holder_identity));
        // The identity is `<host>-<pid>`.
        let pid: Option<u32> = holder
            .as_deref()
            .and_then(|h| h.rsplit('-').next())
            .and_then(|pid| pid.parse().ok());
        let Some(at) = pid.and_then(|pid| {
            self.replicas
                .iter()
                .position(|child| child.id() == Some(pid))
        }) else {
            let ours: Vec<Option<u32>> = self.replicas.iter().map(|child| child.id()).collect();
            println!("no replica of {ours:?} holds the Lease ({holder:?})");
            return;
        };
        let mut leader = self.replicas.remove(at);
        let _ = leader.kill().await;
        self.kills += 1;
        self.replicas.push(replica(self.stage, self.started));
        self.started += 1;
    }

    /// A sample of the replicas' summed memory and the apiserver's rate.
    async fn sample(&mut self, phase: &str) {
        let rss_kib: u64 = self
            .replicas
            .iter()
            .filter_map(tokio::process::Child::id)
            .filter_map(pakket_controlplane::rss_kib)
            .sum();
        self.sampler
            .sample_rss(rss_kib as f64 / 1024.0, phase)
            .await
            .expect("sampling the apiserver's metrics");
    }
}

/// How many of the churn test's Instances are installed.
async fn installed(stage: &Stage) -> usize {
    let prefix = stage.scope.name("c");
    stage
        .instances()
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
        .iter()
        .filter(|i| {
            i.metadata
                .name
                .as_deref()
                .is_some_and(|n| n.starts_with(&prefix))
        })
        .filter(|i| pakket_testkit::condition_is(i, ConditionType::Installed, "True"))
        .count()
}

/// A replica of the stage's provisioner: the same id, Lease and key, a
/// store of its own.
fn replica(stage: &Stage, index: usize) -> tokio::process::Child {
    tokio::process::Command::new(env!("CARGO_BIN_EXE_pakket-plain"))
        .args([
            "--id",
            &stage.id,
            "--lease-namespace",
            &stage.scope.namespace,
        ])
        .args([
            "--lease-duration",
            "3",
            "--probe-address",
            "127.0.0.1:0",
            "--store",
        ])
        .arg(stage.scope.path(&format!("churn-{index}")))
        .arg("--record-key-file")
        .arg(stage.key_file())
        .env("KUBECONFIG", pakket_testkit::cluster().kubeconfig())
        .env("RUST_LOG", "warn")
        .stdout(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("starting a pakket-plain replica")
}

#[tokio::test]
async fn two_replicas_under_leader_churn_install_and_remove_every_instance() {
    let mut stage = Stage::new("faults-churn", "AllowAll", Webhooks::On).await;
    stage.kill_provisioner(false).await;
    let count: usize = std::env::var("PAKKET_CHURN_INSTANCES")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(100);
    let mut churn = Churn::start(&stage);
    // The contents first, then the Instances created by a task of their
    // own, while the leader is killed below.
    for i in 0..count {
        stage
            .config_map_content(
                &format!("content-{i:03}"),
                &[(&format!("churn-{i:03}"), "v1")],
            )
            .await;
    }
    let began = Instant::now();
    let wanted: Vec<Instance> = (0..count)
        .map(|i| {
            serde_json::from_value(stage.instance(
                &format!("c{i:03}"),
                &format!("c{i:03}-v1"),
                &format!("content-{i:03}"),
            ))
            .unwrap()
        })
        .collect();
    let instances = stage.instances();
    let creating = tokio::spawn(async move {
        for instance in wanted {
            instances
                .create(&PostParams::default(), &instance)
                .await
                .unwrap();
        }
    });
    let deadline = Instant::now() + Duration::from_secs(300);
    loop {
        churn.sample("create").await;
        let done = installed(&stage).await;
        if done == count && creating.is_finished() {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "only {done} of {count} installed within 300 s"
        );
        churn.kill_leader().await;
        tokio::time::sleep(Duration::from_secs(3)).await;
    }
    let installed_after = began.elapsed();
    let names: Vec<String> = (0..count)
        .map(|i| stage.scope.name(&format!("c{i:03}")))
        .collect();
    let instances = stage.instances();
    tokio::spawn(async move {
        for name in names {
            instances
                .delete(&name, &DeleteParams::default())
                .await
                .unwrap();
        }
    });
    let prefix = stage.scope.name("c");
    let deadline = Instant::now() + Duration::from_secs(300);
    loop {
        let left = stage
            .instances()
            .list(&ListParams::default())
            .await
            .unwrap()
            .items
            .iter()
            .filter(|i| {
                i.metadata
                    .name
                    .as_deref()
                    .is_some_and(|n| n.starts_with(&prefix))
            })
            .count();
        churn.sample("delete").await;
        if left == 0 {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "{left} Instances not removed within 300 s"
        );
        churn.kill_leader().await;
        tokio::time::sleep(Duration::from_secs(3)).await;
    }
    let orphans: Vec<String> = stage
        .config_maps()
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .filter_map(|c| c.metadata.name)
        .filter(|n| n.starts_with("churn-"))
        .collect();
    assert!(orphans.is_empty(), "orphans: {orphans:?}");
    println!(
        "{count} Instances with two replicas, the leader killed {} times: all installed after {:.1} s, all removed after {:.1} s, nothing orphaned",
        churn.kills,
        installed_after.as_secs_f64(),
        began.elapsed().as_secs_f64()
    );
    for _ in 0..5 {
        churn.sample("idle").await;
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
    let kills = churn.kills;
    Report {
        title: format!(
            "{count} Instances, two replicas, the leader killed {kills} times (RSS: both replicas)"
        ),
        samples: churn.sampler.samples,
    }
    .write(&format!("churn-{count}"))
    .expect("writing the report");
    assert!(kills > 0, "the leader was killed at least once");
    for mut child in churn.replicas {
        let _ = child.kill().await;
    }
    stage.cleanup().await;
}
