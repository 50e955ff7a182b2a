//! With `real_node: true` Pods really run: a Deployment of the local pause
//! image becomes Available on the node, a Pod running the pinned kubectl
//! reaches the apiserver through the `kubernetes` Service (kube-proxy's
//! rules) with its ServiceAccount token, its logs come back through the
//! kubelet, and `stop` leaves nothing behind: no containers, no mounts,
//! no network namespaces, no bridge, no rules, `ip_forward` as it was.
//! A node killed before its teardown (SIGKILL, a restarted sandbox) does
//! not stop the next one: its leftovers are removed at the next start.
//!
//! Needs root (CI runs as root); without it the test says so and fails.

use std::time::{Duration, Instant};

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{Namespace, Pod};
use kube::Api;
use kube::api::{LogParams, PostParams};
use pakket_controlplane::{ADMIN_CONTEXT, Binaries, ControlPlane, Options, real_node};
use serde_json::json;

const WITHIN: Duration = Duration::from_secs(90);

fn network_namespaces() -> Vec<String> {
    std::fs::read_dir("/run/netns")
        .map(|entries| {
            entries
                .flatten()
                .map(|entry| entry.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default()
}

#[tokio::test]
async fn pods_run_on_the_real_node_and_stopping_it_leaves_nothing() {
    // Installs iptables on a fresh machine, so the rules can be read
    // before the node starts.
    let binaries = real_node::RealNodeBinaries::ensure().unwrap();
    // A node killed before its teardown (by an earlier run on this
    // machine) left its bridge and rules: they are what the start below
    // removes first, so they are removed before the machine is read.
    if let Some(removed) = real_node::clear_left_by_killed(&binaries).unwrap() {
        println!("{removed}");
    }
    let forward_before = std::fs::read_to_string("/proc/sys/net/ipv4/ip_forward").unwrap();
    let namespaces_before = network_namespaces();
    // Rules and chains, not the text: the first use of iptables on a
    // machine loads its tables, which stay, empty, after the node stops.
    let rules_before = real_node::netfilter::current().unwrap();
    let dir = std::env::temp_dir().join(format!("pakket-real-node-{}", std::process::id()));
    let began = Instant::now();
    let control_plane = ControlPlane::start(Options {
        dir: dir.clone(),
        stop_with_this_process: false,
        nodes: 0,
        real_node: true,
    })
    .await
    .unwrap();
    let state = control_plane.state().clone();
    let node = state.real_node.clone().expect("a real node");
    println!(
        "control plane with a real node Ready in {:.1} s (node Ready {} ms after etcd started)",
        began.elapsed().as_secs_f64(),
        node.ready_millis
    );
    let client = control_plane.client(ADMIN_CONTEXT).await.unwrap();
    // Checked in a task of its own, so that a failure still stops the node
    // (a panic here would leave its bridge and containers behind).
    let checked = tokio::spawn(pods_run(client, node)).await;
    let stopping = Instant::now();
    control_plane.stop(true).unwrap();
    println!("stopped in {:.1} s", stopping.elapsed().as_secs_f64());
    if let Err(failure) = checked {
        std::panic::resume_unwind(failure.into_panic());
    }
    assert!(
        !std::path::Path::new(&format!("/sys/class/net/{}", real_node::BRIDGE)).exists(),
        "the bridge is gone"
    );
    assert_eq!(
        std::fs::read_to_string("/proc/sys/net/ipv4/ip_forward").unwrap(),
        forward_before,
        "ip_forward as it was"
    );
    assert_eq!(network_namespaces(), namespaces_before, "no Pod netns left");
    assert_eq!(
        real_node::netfilter::current().unwrap(),
        rules_before,
        "no rules or chains left"
    );
    let mounts = std::fs::read_to_string("/proc/self/mountinfo").unwrap();
    assert!(
        !mounts.contains(&dir.display().to_string()),
        "nothing mounted under {}",
        dir.display()
    );
    assert!(!dir.exists(), "the folder is removed");
}

/// A Deployment of pause and a Pod asking the apiserver for its version.
async fn pods_run(client: kube::Client, node: real_node::RealNodeState) {
    let namespace = "on-the-real-node";
    Api::<Namespace>::all(client.clone())
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({ "metadata": { "name": namespace } })).unwrap(),
        )
        .await
        .unwrap();

    // The pause image, imported at start, never pulled.
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), namespace);
    deployments
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({
                "metadata": { "name": "pause" },
                "spec": {
                    "replicas": 2,
                    "selector": { "matchLabels": { "app": "pause" } },
                    "template": {
                        "metadata": { "labels": { "app": "pause" } },
                        "spec": {
                            "terminationGracePeriodSeconds": 1,
                            "containers": [{
                                "name": "pause",
                                "image": real_node::PAUSE_IMAGE,
                                "imagePullPolicy": "Never",
                            }],
                        },
                    },
                },
            }))
            .unwrap(),
        )
        .await
        .unwrap();

    // kubectl in a Pod, with in-cluster config: the Service's ClusterIP,
    // kube-proxy's DNAT to the apiserver on the node's address, the token.
    let kubectl = std::fs::read(Binaries::ensure().unwrap().path("kubectl")).unwrap();
    real_node::import_image(
        &node,
        "registry.pakket.dev/kubectl:test",
        "kubectl",
        &kubectl,
        65532,
    )
    .unwrap();
    let pods: Api<Pod> = Api::namespaced(client.clone(), namespace);
    pods.create(
        &PostParams::default(),
        &serde_json::from_value(json!({
            "metadata": { "name": "ask-the-apiserver" },
            "spec": {
                "restartPolicy": "Never",
                "terminationGracePeriodSeconds": 1,
                "containers": [{
                    "name": "kubectl",
                    "image": "registry.pakket.dev/kubectl:test",
                    "imagePullPolicy": "Never",
                    "args": ["get", "--raw", "/version"],
                }],
            },
        }))
        .unwrap(),
    )
    .await
    .unwrap();

    let began = Instant::now();
    let deadline = began + WITHIN;
    loop {
        let deployment = deployments.get("pause").await.unwrap();
        let available = deployment
            .status
            .as_ref()
            .and_then(|status| status.available_replicas)
            == Some(2);
        let asked = pods.get("ask-the-apiserver").await.unwrap();
        let phase = asked
            .status
            .as_ref()
            .and_then(|status| status.phase.clone())
            .unwrap_or_default();
        if available && (phase == "Succeeded" || phase == "Failed") {
            let logs = pods
                .logs("ask-the-apiserver", &LogParams::default())
                .await
                .unwrap();
            assert_eq!(phase, "Succeeded", "kubectl in the Pod: {logs}");
            assert!(
                logs.contains("\"gitVersion\": \"v1.35"),
                "the apiserver's version, read from inside a Pod, its log read through the kubelet: {logs}"
            );
            break;
        }
        assert!(
            Instant::now() < deadline,
            "after {WITHIN:?}: Deployment available: {available}; kubectl Pod: {phase}"
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    println!(
        "the Deployment Available and kubectl's Pod done {:.1} s after they were created",
        began.elapsed().as_secs_f64()
    );
}
