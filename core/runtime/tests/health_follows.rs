//! Health follows the workload after the install, on the real control
//! plane with kwok's node: a Deployment whose Pod stops being ready turns
//! `Healthy` away from True at once and False once its grace is over,
//! naming the Deployment; when the Pod is ready again, `Healthy` is True
//! again. The test plays the kubelet's readiness probe on the Pod's
//! status; kwok's stages leave a Pod labelled `test.pakket.dev/unready`
//! as the test sets it (dev/controlplane/kwok-stages.yaml).

use std::time::Instant;

use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, ListParams, Patch, PatchParams};
use pakket_api::ConditionType;
use pakket_testkit::{condition_is, message_of, reason_is, wait_for_instance as wait_for};
use serde_json::json;

mod plain_fixture;

use plain_fixture::Fixture;

/// The label kwok's stages leave alone.
const UNREADY_LABEL: &str = "test.pakket.dev/unready";

fn deployment(namespace: &str) -> Vec<(&'static str, String)> {
    vec![(
        "deployment.yaml",
        format!(
            "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\n  namespace: {namespace}\n\
             spec:\n  replicas: 1\n  selector:\n    matchLabels: {{app: web}}\n  template:\n    metadata:\n      labels: {{app: web}}\n    spec:\n      containers:\n      - name: web\n        image: registry.invalid/web:1\n"
        ),
    )]
}

/// The Deployment's one Pod.
async fn the_pod(pods: &Api<Pod>) -> String {
    let found = pods
        .list(&ListParams::default().labels("app=web"))
        .await
        .unwrap();
    assert_eq!(found.items.len(), 1, "one replica");
    kube::ResourceExt::name_any(&found.items[0])
}

/// Makes the Pod unready (as a failing readiness probe would) and keeps it
/// so, or ready again (as the kubelet would once the probe passes).
async fn set_ready(pods: &Api<Pod>, pod: &str, ready: bool) {
    let label = if ready { json!(null) } else { json!("true") };
    pods.patch(
        pod,
        &PatchParams::default(),
        &Patch::Merge(json!({ "metadata": { "labels": { UNREADY_LABEL: label } } })),
    )
    .await
    .unwrap();
    let (status, reason) = if ready {
        ("True", "ReadinessPassed")
    } else {
        ("False", "ReadinessFailed")
    };
    let now = jiff::Timestamp::now().to_string();
    let conditions = json!({ "status": { "conditions": [
        { "type": "Ready", "status": status, "reason": reason, "lastTransitionTime": now },
        { "type": "ContainersReady", "status": status, "reason": reason, "lastTransitionTime": now },
    ] } });
    pods.patch_status(pod, &PatchParams::default(), &Patch::Strategic(conditions))
        .await
        .unwrap();
}

#[tokio::test]
async fn a_deployment_that_stops_being_ready_is_unhealthy_within_a_minute_and_healthy_again_after()
{
    let fixture = Fixture::new("health-follows", "AllowAll").await;
    let namespace = fixture.scope.namespace.clone();
    fixture.files("v1", &deployment(&namespace)).await;
    let (instances, name) = fixture.install("v1", "v1").await;
    wait_for(&instances, &name, "healthy once the Pod runs", |i| {
        condition_is(i, ConditionType::Healthy, "True")
    })
    .await;

    let pods: Api<Pod> = Api::namespaced(fixture.scope.client.clone(), &namespace);
    let pod = the_pod(&pods).await;
    let stopped = Instant::now();
    set_ready(&pods, &pod, false).await;
    let doubted = wait_for(&instances, &name, "Healthy no longer True", |i| {
        !condition_is(i, ConditionType::Healthy, "True")
    })
    .await;
    println!(
        "Healthy left True {:.1} s after the Pod stopped being ready: {}",
        stopped.elapsed().as_secs_f64(),
        message_of(&doubted, ConditionType::Healthy)
    );
    let unhealthy = wait_for(&instances, &name, "Healthy False", |i| {
        reason_is(i, ConditionType::Healthy, "ObjectsUnhealthy")
    })
    .await;
    let took = stopped.elapsed();
    let message = message_of(&unhealthy, ConditionType::Healthy);
    println!("Healthy False {:.1} s after: {message}", took.as_secs_f64());
    assert!(
        message.contains("Deployment")
            && message.contains("web")
            && message.contains("lost availability"),
        "names the Deployment and what it lost: {message}"
    );
    assert!(
        condition_is(&unhealthy, ConditionType::Installed, "True"),
        "still installed: only its health changed"
    );

    let recovered_at = Instant::now();
    set_ready(&pods, &pod, true).await;
    let recovered = wait_for(&instances, &name, "Healthy True again", |i| {
        condition_is(i, ConditionType::Healthy, "True")
    })
    .await;
    println!(
        "Healthy True again {:.1} s after the Pod was ready: {}",
        recovered_at.elapsed().as_secs_f64(),
        message_of(&recovered, ConditionType::Healthy)
    );
    fixture.scope.cleanup().await;
}
