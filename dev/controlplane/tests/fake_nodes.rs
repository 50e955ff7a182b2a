//! With `nodes: 1` the control plane runs workloads: kube-scheduler binds
//! a Deployment's Pods to the kwok node and kwok reports them Running and
//! Ready, so the Deployment becomes Available. Without either component the
//! Pods stay Pending and the test fails.

use std::time::{Duration, Instant};

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{Namespace, Node, Pod};
use kube::api::{Api, ListParams, PostParams};
use kube::{Client, ResourceExt};
use pakket_controlplane::{ADMIN_CONTEXT, ControlPlane, KWOK_ANNOTATION, Options};
use serde_json::json;

const REPLICAS: i32 = 2;
/// Scheduling and kwok's pod-ready stage take about a second; the rest is
/// headroom for a machine busy with other test binaries.
const AVAILABLE_WITHIN: Duration = Duration::from_secs(60);

#[tokio::test]
async fn a_deployment_becomes_available_on_a_kwok_node() {
    let dir = std::env::temp_dir().join(format!("pakket-fake-nodes-{}", std::process::id()));
    let control_plane = ControlPlane::start(Options {
        dir,
        stop_with_this_process: true,
        nodes: 1,
        real_node: false,
    })
    .await
    .unwrap();
    let names: Vec<&str> = control_plane
        .state()
        .components
        .iter()
        .map(|component| component.name.as_str())
        .collect();
    assert!(
        names.contains(&"kube-scheduler") && names.contains(&"kwok"),
        "components: {names:?}"
    );
    assert_eq!(control_plane.state().nodes, ["kwok-node-0"]);
    let client = control_plane.client(ADMIN_CONTEXT).await.unwrap();
    let node = Api::<Node>::all(client.clone())
        .get("kwok-node-0")
        .await
        .unwrap();
    assert_eq!(node.annotations()[KWOK_ANNOTATION], "fake");

    let namespace = "deployment-on-kwok";
    let namespaces: Api<Namespace> = Api::all(client.clone());
    namespaces
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({ "metadata": { "name": namespace } })).unwrap(),
        )
        .await
        .unwrap();
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), namespace);
    let deployment: Deployment = serde_json::from_value(json!({
        "metadata": { "name": "pause" },
        "spec": {
            "replicas": REPLICAS,
            "selector": { "matchLabels": { "app": "pause" } },
            "template": {
                "metadata": { "labels": { "app": "pause" } },
                // Never pulled: kwok fakes the container's life.
                "spec": { "containers": [{ "name": "pause", "image": "registry.k8s.io/pause:3.10" }] },
            },
        },
    }))
    .unwrap();
    deployments
        .create(&PostParams::default(), &deployment)
        .await
        .unwrap();

    let deadline = Instant::now() + AVAILABLE_WITHIN;
    loop {
        let found = deployments.get("pause").await.unwrap();
        if available(&found) {
            break;
        }
        if Instant::now() > deadline {
            panic!(
                "Deployment {namespace}/pause not Available within {}s; status: {}; pods: {}; \
                 see the logs in {}",
                AVAILABLE_WITHIN.as_secs(),
                serde_json::to_string(&found.status).unwrap(),
                pods(&client, namespace).await,
                control_plane.state().dir.join("logs").display()
            );
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }

    let pids: Vec<u32> = control_plane
        .state()
        .components
        .iter()
        .map(|component| component.pid)
        .collect();
    control_plane.stop(true).unwrap();
    for pid in pids {
        assert!(
            !std::path::Path::new(&format!("/proc/{pid}")).exists(),
            "pid {pid} still runs after stop"
        );
    }
}

/// `Available=True` and every replica ready, for the current generation.
fn available(deployment: &Deployment) -> bool {
    let Some(status) = &deployment.status else {
        return false;
    };
    let condition = status
        .conditions
        .iter()
        .flatten()
        .any(|condition| condition.type_ == "Available" && condition.status == "True");
    condition
        && status.ready_replicas == Some(REPLICAS)
        && status.observed_generation == deployment.metadata.generation
}

/// Each pod's node and phase, for the failure message.
async fn pods(client: &Client, namespace: &str) -> String {
    let pods: Api<Pod> = Api::namespaced(client.clone(), namespace);
    match pods.list(&ListParams::default()).await {
        Ok(list) => list
            .items
            .iter()
            .map(|pod| {
                let spec_node = pod.spec.as_ref().and_then(|spec| spec.node_name.clone());
                let phase = pod.status.as_ref().and_then(|status| status.phase.clone());
                format!(
                    "{} on {} ({})",
                    pod.name_any(),
                    spec_node.as_deref().unwrap_or("no node: not scheduled"),
                    phase.as_deref().unwrap_or("no phase")
                )
            })
            .collect::<Vec<_>>()
            .join(", "),
        Err(error) => format!("listing pods failed: {error}"),
    }
}
