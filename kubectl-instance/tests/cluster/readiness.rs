//! `Ready`, `Reconciling` and `Stalled` as GitOps tools read them: for
//! each state an Instance can be in (installed and healthy, waiting for a
//! person, refused, failed, rolling out, being deleted), kstatus's own
//! verdict (`sigs.k8s.io/cli-utils`, built by `dev/kstatus/build.sh`),
//! `kubectl wait --for=condition=Ready` and `kubectl instance why` agree.
//!
//! The Instances are installed by pakket-helm run as `deploy/` runs it
//! (its ServiceAccount, the real webhooks, the helm class with
//! `UserPermission`); the charts are written here.

use super::helm_world;

use std::process::Command;

use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use pakket_api::Instance;
use pakket_api::readiness;
use pakket_testkit::{cluster, eventually};
use serde_json::{Value, json};

use super::support::plugin;

/// A Deployment no node will run (its node selector matches none): it
/// stays rolling out.
fn stuck_chart() -> Vec<(&'static str, String)> {
    vec![
        ("Chart.yaml", "apiVersion: v2\nname: stuck\nversion: 1.0.0\n".into()),
        (
            "templates/deployment.yaml",
            "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: {{ .Release.Name }}\nspec:\n  replicas: 1\n  selector:\n    matchLabels: {app: {{ .Release.Name }}}\n  template:\n    metadata:\n      labels: {app: {{ .Release.Name }}}\n    spec:\n      nodeSelector: {pakket.dev/no-such-node: \"true\"}\n      containers:\n      - name: web\n        image: ghcr.io/stefanprodan/podinfo:6.7.0\n".into(),
        ),
    ]
}

/// kstatus, built (or found in the cache) by `dev/kstatus/build.sh` once
/// per test run.
fn kstatus_binary() -> &'static str {
    static BINARY: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    BINARY.get_or_init(|| {
        let built = Command::new(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../dev/kstatus/build.sh"
        ))
        .output()
        .unwrap();
        assert!(built.status.success(), "dev/kstatus/build.sh: {built:?}");
        String::from_utf8(built.stdout).unwrap().trim().to_owned()
    })
}

/// What kstatus concludes about Instance `name`, as read from the
/// apiserver by kubectl.
fn kstatus_of(name: &str) -> String {
    let object = cluster()
        .kubectl()
        .args(["get", "instance", name, "-o", "json"])
        .output()
        .unwrap();
    assert!(object.status.success(), "{object:?}");
    let mut kstatus = Command::new(kstatus_binary())
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write as _;
    kstatus
        .stdin
        .take()
        .unwrap()
        .write_all(&object.stdout)
        .unwrap();
    let out = kstatus.wait_with_output().unwrap();
    assert!(out.status.success(), "{out:?}");
    let verdict: Value = serde_json::from_slice(&out.stdout).unwrap();
    verdict["status"].as_str().unwrap().to_owned()
}

/// With `PAKKET_CAPTURE_DIR` set, writes the Instance as kubectl reads
/// it to `DIR/<state>.yaml`: deploy/argocd's fixtures are captured so.
fn capture(state: &str, name: &str) {
    pakket_testkit::capture(&state.replace(' ', "-"), "instance", name, None);
}

/// Whether `kubectl wait --for=condition=Ready` succeeds within `seconds`.
fn kubectl_wait_ready(name: &str, seconds: u32) -> bool {
    cluster()
        .kubectl()
        .args([
            "wait",
            "--for=condition=Ready",
            &format!("--timeout={seconds}s"),
        ])
        .arg(format!("instance/{name}"))
        .output()
        .unwrap()
        .status
        .success()
}

/// The Instance once its `Ready` condition has `reason`.
async fn ready_says(name: &str, reason: &str) -> Instance {
    let instances: Api<Instance> = Api::all(cluster().client_as("admin").await);
    let mut last = None;
    for _ in 0..1200 {
        let instance = instances.get(name).await.unwrap();
        let ready = instance
            .status
            .as_ref()
            .and_then(|status| readiness::ready(&status.conditions).cloned());
        if ready.as_ref().is_some_and(|c| c.reason == reason) {
            return instance;
        }
        last = instance.status;
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    panic!("Instance {name}: Ready never says {reason} in 120 s: {last:#?}");
}

/// Checks that kstatus says `verdict`, `kubectl wait` succeeds exactly
/// when Ready, and `kubectl instance why` leads with Ready's reason (or
/// says the state `why_state`).
async fn all_agree(state: &str, name: &str, verdict: &str, why_state: &str) {
    let instances: Api<Instance> = Api::all(cluster().client_as("admin").await);
    let instance = instances.get(name).await.unwrap();
    capture(state, name);
    let conditions = &instance.status.as_ref().unwrap().conditions;
    let ready = readiness::ready(conditions).unwrap();
    assert_eq!(
        kstatus_of(name),
        verdict,
        "{state}: kstatus, beside {ready:?}"
    );
    let is_ready = ready.status == "True";
    let waited = kubectl_wait_ready(name, if is_ready { 30 } else { 2 });
    assert_eq!(waited, is_ready, "{state}: kubectl wait, beside {ready:?}");
    let why = plugin("admin", &["why", name, "-o", "json"]).await;
    assert_eq!(why.code, 0, "{state}: {why:?}");
    let why: Value = serde_json::from_str(&why.stdout).unwrap();
    assert_eq!(why["state"], why_state, "{state}: why says {why:#}");
    if !is_ready && why_state != "DeletionHeld" {
        assert_eq!(
            why["problems"][0]["reason"], ready.reason,
            "{state}: why leads with Ready's reason: {why:#}"
        );
    }
    let stalled = conditions.iter().find(|c| c.type_ == readiness::STALLED);
    let reconciling = conditions
        .iter()
        .find(|c| c.type_ == readiness::RECONCILING);
    let holds = |c: Option<&k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition>| {
        c.is_some_and(|c| c.status == "True")
    };
    assert_eq!(holds(stalled), verdict == "Failed", "{state}: Stalled");
    assert_eq!(
        holds(reconciling),
        verdict == "InProgress" || verdict == "Terminating",
        "{state}: Reconciling"
    );
    assert_eq!(
        instance.status.as_ref().unwrap().observed_generation,
        instance.metadata.generation,
        "{state}: observedGeneration"
    );
}

#[tokio::test]
async fn kstatus_kubectl_wait_and_why_agree_on_every_state_of_an_instance() {
    let world = helm_world::world("kc-ready").await;
    let scope = &world.scope;
    let instances: Api<Instance> = Api::all(scope.client.clone());
    world.charts.publish(&helm_world::plain_chart("plain"));
    world.charts.publish(&stuck_chart());
    let plain = world.charts.chart_ref("plain", "1.0.0");
    let here = json!({ "namespace": scope.namespace });
    let create = |name: &str, chart: &str, config: Value| {
        world.instance(name, &format!("{name}-bundle"), chart, config)
    };

    // Installed and healthy.
    let installed = scope.name("installed");
    instances
        .create(
            &PostParams::default(),
            &create("installed", &plain, here.clone()),
        )
        .await
        .unwrap();
    ready_says(&installed, "InstallSucceeded").await;
    all_agree("installed and healthy", &installed, "Current", "Ready").await;

    // Rolling out, and never getting there within the test.
    let stuck_chart_ref = world.charts.chart_ref("stuck", "1.0.0");
    let rolling = scope.name("rolling");
    instances
        .create(
            &PostParams::default(),
            &create("rolling", &stuck_chart_ref, here.clone()),
        )
        .await
        .unwrap();
    ready_says(&rolling, "ObjectsProgressing").await;
    all_agree("rolling out", &rolling, "InProgress", "Progressing").await;

    // Failed: the ConfigMap it would create is someone else's.
    let failed = scope.name("failed");
    let config_maps: Api<ConfigMap> = Api::namespaced(scope.client.clone(), &scope.namespace);
    let theirs: ConfigMap = serde_json::from_value(json!({
        "metadata": { "name": failed, "labels": scope.labels() },
        "data": { "owner": "someone else" },
    }))
    .unwrap();
    config_maps
        .create(&PostParams::default(), &theirs)
        .await
        .unwrap();
    instances
        .create(
            &PostParams::default(),
            &create("failed", &plain, here.clone()),
        )
        .await
        .unwrap();
    ready_says(&failed, "InstallFailed").await;
    all_agree("failed", &failed, "Failed", "InstallFailed").await;

    // Waiting for a person: alice owns only her namespace and asks for
    // the chart in another.
    let alice = helm_world::namespace_owner(&world, "alice", &scope.namespace).await;
    let (elsewhere, namespaces) = helm_world::another_namespace(scope).await;
    let hers: Api<Instance> = Api::all(alice);
    let waiting = scope.name("waiting");
    let asked = create("waiting", &plain, json!({ "namespace": elsewhere }));
    eventually("alice creates her Instance", || async {
        hers.create(&PostParams::default(), &asked).await.is_ok()
    })
    .await;
    let pending = ready_says(&waiting, "ApprovalPending").await;
    let message = &readiness::ready(&pending.status.as_ref().unwrap().conditions)
        .unwrap()
        .message;
    assert!(message.starts_with("waiting for a person"), "{message}");
    all_agree(
        "waiting for a person",
        &waiting,
        "InProgress",
        "WaitingForApproval",
    )
    .await;

    // Refused: an approver denies it.
    let denied = plugin("admin", &["deny", &waiting, "-m", "not in that namespace"]).await;
    assert_eq!(denied.code, 0, "{denied:?}");
    ready_says(&waiting, "ApprovalDenied").await;
    all_agree("refused", &waiting, "Failed", "ApprovalDenied").await;

    // Being deleted, held by a finalizer of the test's own after the
    // provisioner has uninstalled it.
    // Beside the provisioner's own finalizer, which a merge patch of the
    // list would drop.
    let mut finalizers = instances
        .get(&installed)
        .await
        .unwrap()
        .metadata
        .finalizers
        .unwrap_or_default();
    assert!(
        !finalizers.is_empty(),
        "the provisioner holds its finalizer"
    );
    finalizers.push("test.pakket.dev/hold".into());
    let hold = json!({ "metadata": { "finalizers": finalizers } });
    instances
        .patch(&installed, &PatchParams::default(), &Patch::Merge(&hold))
        .await
        .unwrap();
    instances
        .delete(&installed, &DeleteParams::default())
        .await
        .unwrap();
    ready_says(&installed, readiness::DELETING).await;
    all_agree("being deleted", &installed, "Terminating", "DeletionHeld").await;
    let done = json!({ "metadata": { "finalizers": null } });
    eventually("the provisioner has let go", || async {
        let now = instances.get(&installed).await.unwrap();
        now.metadata.finalizers.unwrap_or_default() == ["test.pakket.dev/hold"]
    })
    .await;
    instances
        .patch(&installed, &PatchParams::default(), &Patch::Merge(&done))
        .await
        .unwrap();

    for name in [&rolling, &failed, &waiting] {
        instances
            .delete(name, &DeleteParams::default())
            .await
            .unwrap();
    }
    let _ = namespaces
        .delete(&elsewhere, &DeleteParams::default())
        .await;
    world.scope.cleanup().await;
}
