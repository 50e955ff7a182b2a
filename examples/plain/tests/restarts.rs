//! The control plane's own parts restarted under a working provisioner, on
//! a control plane of this test's own (restarting the shared one would
//! disturb every other test): kube-apiserver in the middle of a pivot, and
//! etcd while 200 Instances install. Each time, nothing is lost or
//! orphaned and every Instance ends Installed and Healthy.

use std::collections::BTreeMap;
use std::process::Stdio;
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::ConfigMap;
use kube::Client;
use kube::api::{Api, ListParams, Patch, PatchParams, PostParams};
use pakket_api::ownership::INSTANCE_LABEL;
use pakket_api::{ConditionType, Instance, ProvisionerClass, ProvisionerClassSpec};
use pakket_controlplane::{ControlPlane, Options};
use serde_json::json;

const NAMESPACE: &str = "default";
const CLASS: &str = "restarts";

fn config_map(name: &str, value: &str) -> String {
    format!(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\n  namespace: {NAMESPACE}\ndata:\n  value: {value}\n"
    )
}

/// An immutable content ConfigMap `name` holding `objects` (name → value).
async fn content(client: &Client, name: &str, objects: &BTreeMap<String, String>) {
    let text: Vec<String> = objects.iter().map(|(n, v)| config_map(n, v)).collect();
    let config_map: ConfigMap = serde_json::from_value(json!({
        "metadata": { "name": name, "labels": { pakket_api::BUNDLE_CONTENT_LABEL: "true" } },
        "data": { "all.yaml": text.join("---\n") },
        "immutable": true,
    }))
    .unwrap();
    Api::<ConfigMap>::namespaced(client.clone(), NAMESPACE)
        .create(&PostParams::default(), &config_map)
        .await
        .unwrap();
}

fn instance(name: &str, bundle: &str, content: &str) -> Instance {
    serde_json::from_value(json!({
        "apiVersion": "core.pakket.dev/v1alpha1", "kind": "Instance",
        "metadata": { "name": name },
        "spec": { "class": CLASS, "bundle": { "name": bundle, "spec": bundle_spec(content) } },
    }))
    .unwrap()
}

fn bundle_spec(content: &str) -> serde_json::Value {
    json!({
        "class": CLASS,
        "refs": ["file://content"],
        "volumeMounts": [{ "mountPath": "/content", "configMap": { "name": content, "namespace": NAMESPACE } }],
    })
}

/// What Instance `name` owns, by the runtime's label.
async fn owned(client: &Client, name: &str) -> BTreeMap<String, String> {
    Api::<ConfigMap>::namespaced(client.clone(), NAMESPACE)
        .list(&ListParams::default().labels(&format!("{INSTANCE_LABEL}={name}")))
        .await
        .unwrap()
        .items
        .into_iter()
        .map(|c| {
            let value = c
                .data
                .and_then(|d| d.get("value").cloned())
                .unwrap_or_default();
            (c.metadata.name.unwrap_or_default(), value)
        })
        .collect()
}

fn settled(instance: &Instance, bundle: &str) -> bool {
    instance
        .status
        .as_ref()
        .and_then(|s| s.active_bundle.as_deref())
        == Some(bundle)
        && instance
            .condition(ConditionType::Installed)
            .is_some_and(|c| c.status == "True")
        && instance
            .condition(ConditionType::Healthy)
            .is_some_and(|c| c.status == "True")
}

/// Retries `read` through an apiserver that is coming back.
async fn until<T>(what: &str, mut read: impl AsyncFnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        if let Some(found) = read().await {
            return found;
        }
        if Instant::now() > deadline {
            let log = std::env::temp_dir()
                .join(format!("pakket-restarts-{}", std::process::id()))
                .join("provisioner.log");
            let text = std::fs::read_to_string(&log).unwrap_or_default();
            let tail: Vec<&str> = text.lines().rev().take(30).collect();
            panic!(
                "{what} did not happen within 120 s; the provisioner's last words:\n{}",
                tail.into_iter().rev().collect::<Vec<_>>().join("\n")
            );
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

#[tokio::test]
async fn the_apiserver_restarted_mid_pivot_and_etcd_restarted_mid_install_lose_nothing() {
    let dir = std::env::temp_dir().join(format!("pakket-restarts-{}", std::process::id()));
    let mut plane = ControlPlane::start(Options {
        dir: dir.clone(),
        stop_with_this_process: true,
        nodes: 0,
        real_node: false,
    })
    .await
    .expect("a control plane of this test's own");
    let client = plane.client("admin").await.unwrap();
    pakket_testkit::install_crds(&client).await.unwrap();
    let class = ProvisionerClass {
        metadata: kube::api::ObjectMeta {
            name: Some(CLASS.into()),
            ..Default::default()
        },
        spec: ProvisionerClassSpec {
            provisioner: "test.pakket.dev/restarts".into(),
            parameters: json!({"approval": "AllowAll"}).as_object().cloned(),
        },
        status: None,
    };
    Api::<ProvisionerClass>::all(client.clone())
        .create(&PostParams::default(), &class)
        .await
        .unwrap();
    let store = dir.join("store");
    let mut provisioner = tokio::process::Command::new(env!("CARGO_BIN_EXE_pakket-plain"))
        .args([
            "--id",
            "test.pakket.dev/restarts",
            "--lease-namespace",
            NAMESPACE,
        ])
        .args([
            "--lease-duration",
            "3",
            "--probe-address",
            "127.0.0.1:0",
            "--store",
        ])
        .arg(&store)
        .env("KUBECONFIG", plane.kubeconfig())
        .env("RUST_LOG", "warn")
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(dir.join("provisioner.log")).unwrap())
        .kill_on_drop(true)
        .spawn()
        .expect("starting pakket-plain");

    // kube-apiserver, restarted in the middle of a pivot.
    let v1: BTreeMap<String, String> = (0..100)
        .map(|i| (format!("p-{i:03}"), "v1".into()))
        .collect();
    let v2: BTreeMap<String, String> = (50..150)
        .map(|i| (format!("p-{i:03}"), "v2".into()))
        .collect();
    content(&client, "v1", &v1).await;
    content(&client, "v2", &v2).await;
    let instances: Api<Instance> = Api::all(client.clone());
    instances
        .create(
            &PostParams::default(),
            &instance("pivoting", "pivoting-v1", "v1"),
        )
        .await
        .unwrap();
    until("pivoting installed at v1", async || {
        instances
            .get("pivoting")
            .await
            .ok()
            .filter(|i| settled(i, "pivoting-v1"))
    })
    .await;
    instances
        .patch(
            "pivoting",
            &PatchParams::default(),
            &Patch::Merge(
                json!({"spec": {"bundle": {"name": "pivoting-v2", "spec": bundle_spec("v2")}}}),
            ),
        )
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(150)).await;
    let away = plane.restart("kube-apiserver").await.unwrap();
    println!(
        "kube-apiserver restarted mid-pivot: back in {:.1} s",
        away.as_secs_f64()
    );
    until("pivoting installed at v2", async || {
        instances
            .get("pivoting")
            .await
            .ok()
            .filter(|i| settled(i, "pivoting-v2"))
    })
    .await;
    assert_eq!(
        owned(&client, "pivoting").await,
        v2,
        "v2 whole, v1's other half gone"
    );

    // etcd, restarted while 200 Instances install.
    let began = Instant::now();
    for i in 0..200 {
        let objects: BTreeMap<String, String> = [(format!("many-{i:03}"), "v1".to_owned())].into();
        content(&client, &format!("content-{i:03}"), &objects).await;
    }
    for i in 0..200 {
        instances
            .create(
                &PostParams::default(),
                &instance(
                    &format!("many-{i:03}"),
                    &format!("many-{i:03}-v1"),
                    &format!("content-{i:03}"),
                ),
            )
            .await
            .unwrap();
    }
    let away = plane.restart("etcd").await.unwrap();
    println!(
        "etcd restarted while 200 Instances install: apiserver ready again in {:.1} s",
        away.as_secs_f64()
    );
    let installed = until("all 200 Instances installed", async || {
        let list = instances.list(&ListParams::default()).await.ok()?;
        let done = list
            .items
            .iter()
            .filter(|i| {
                let name = i.metadata.name.clone().unwrap_or_default();
                name.starts_with("many-") && settled(i, &format!("{name}-v1"))
            })
            .count();
        (done == 200).then_some(done)
    })
    .await;
    println!(
        "{installed} Instances installed and healthy {:.1} s after the first was created",
        began.elapsed().as_secs_f64()
    );
    let config_maps = Api::<ConfigMap>::namespaced(client.clone(), NAMESPACE)
        .list(&ListParams::default().labels(INSTANCE_LABEL))
        .await
        .unwrap()
        .items;
    let mut by_owner: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for config_map in &config_maps {
        let owner = config_map.metadata.labels.as_ref().unwrap()[INSTANCE_LABEL].clone();
        by_owner
            .entry(owner)
            .or_default()
            .push(config_map.metadata.name.clone().unwrap());
    }
    for i in 0..200 {
        let name = format!("many-{i:03}");
        assert_eq!(
            by_owner.get(&name),
            Some(&vec![name.clone()]),
            "exactly its own object"
        );
    }
    assert_eq!(
        by_owner.len(),
        201,
        "the 200 and pivoting own objects, nobody else"
    );

    let _ = provisioner.kill().await;
    plane.stop(true).unwrap();
}
