//! `drift.ignore`, on the real control plane: a field the class names as
//! someone else's (an autoscaler's `/spec/replicas`) keeps the value the
//! cluster has through re-applies and pivots, and a change to it alone is
//! no drift; any other change still is.

use std::time::Duration;

use k8s_openapi::api::apps::v1::Deployment;
use kube::api::{Api, Patch, PatchParams};
use pakket_api::ConditionType;
use pakket_testkit::{condition_is, reason_is, wait_for_instance as wait_for};
use serde_json::json;

mod plain_fixture;

use plain_fixture::Fixture;

/// Deployment `web` in `namespace` with one replica, labelled `version`.
fn web(namespace: &str, version: &str) -> String {
    format!(
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\n  namespace: {namespace}\n  labels: {{version: {version}}}\n\
         spec:\n  replicas: 1\n  revisionHistoryLimit: 5\n  selector:\n    matchLabels: {{app: web}}\n  template:\n    metadata:\n      labels: {{app: web}}\n    spec:\n      containers:\n      - name: web\n        image: registry.invalid/web:1\n"
    )
}

fn ignoring_replicas(mode: &str) -> serde_json::Value {
    json!({
        "approval": "AllowAll",
        "drift": {"mode": mode, "ignore": [
            {"group": "apps", "kind": "Deployment", "paths": ["/spec/replicas"]},
        ]},
    })
}

/// Sets `field` of Deployment `web` as someone else (a merge patch).
async fn set(deployments: &Api<Deployment>, spec: serde_json::Value) {
    deployments
        .patch(
            "web",
            &PatchParams::default(),
            &Patch::Merge(json!({ "spec": spec })),
        )
        .await
        .unwrap();
}

async fn replicas(deployments: &Api<Deployment>) -> Option<i32> {
    deployments
        .get("web")
        .await
        .unwrap()
        .spec
        .and_then(|spec| spec.replicas)
}

#[tokio::test]
async fn an_ignored_field_keeps_the_clusters_value_through_a_pivot() {
    let fixture = Fixture::without_class("ignore-pivot").await;
    fixture.create_class_with(ignoring_replicas("Repair")).await;
    let namespace = fixture.scope.namespace.clone();
    fixture
        .files("v1", &[("web.yaml", web(&namespace, "v1"))])
        .await;
    fixture
        .files("v2", &[("web.yaml", web(&namespace, "v2"))])
        .await;
    let (instances, name) = fixture.install("v1", "v1").await;
    let deployments: Api<Deployment> = Api::namespaced(fixture.scope.client.clone(), &namespace);
    assert_eq!(
        replicas(&deployments).await,
        Some(1),
        "created as the content says"
    );

    // An autoscaler (here, a merge patch) scales it; a pivot writes every
    // object again, the replicas as the cluster has them.
    set(&deployments, json!({"replicas": 3})).await;
    fixture.pivot("v2", "v2").await;
    wait_for(&instances, &name, "pivoted to v2", |i| {
        condition_is(i, ConditionType::Installed, "True")
            && i.status.as_ref().is_some_and(|status| {
                status.active_bundle.as_deref() == Some(fixture.scope.name("v2").as_str())
            })
    })
    .await;
    let deployment = deployments.get("web").await.unwrap();
    assert_eq!(
        deployment
            .metadata
            .labels
            .unwrap_or_default()
            .get("version")
            .map(String::as_str),
        Some("v2"),
        "the pivot wrote the object"
    );
    assert_eq!(
        replicas(&deployments).await,
        Some(3),
        "and left the replicas as found"
    );

    // A field not ignored is still put back.
    set(&deployments, json!({"revisionHistoryLimit": 9})).await;
    pakket_testkit::eventually("the other field is put back", || async {
        deployments
            .get("web")
            .await
            .unwrap()
            .spec
            .and_then(|spec| spec.revision_history_limit)
            == Some(5)
    })
    .await;
    assert_eq!(replicas(&deployments).await, Some(3));
    fixture.scope.cleanup().await;
}

#[tokio::test]
async fn a_change_to_an_ignored_field_alone_is_no_drift() {
    let fixture = Fixture::without_class("ignore-warn").await;
    fixture.create_class_with(ignoring_replicas("Warn")).await;
    let namespace = fixture.scope.namespace.clone();
    fixture
        .files("v1", &[("web.yaml", web(&namespace, "v1"))])
        .await;
    let (instances, name) = fixture.install("v1", "v1").await;
    let deployments: Api<Deployment> = Api::namespaced(fixture.scope.client.clone(), &namespace);

    set(&deployments, json!({"replicas": 4})).await;
    // A change the drift watch sees reaches the Instance within a second
    // or two (the other field, below, shows it); this one must not.
    tokio::time::sleep(Duration::from_secs(5)).await;
    let quiet = instances.get(&name).await.unwrap();
    assert!(
        quiet.condition(ConditionType::Drifted).is_none(),
        "{:?}",
        quiet.condition(ConditionType::Drifted)
    );

    set(&deployments, json!({"revisionHistoryLimit": 9})).await;
    let drifted = wait_for(&instances, &name, "the other change is drift", |i| {
        reason_is(i, ConditionType::Drifted, "ObjectsDrifted")
    })
    .await;
    let message = &drifted.condition(ConditionType::Drifted).unwrap().message;
    assert!(message.contains("Deployment"), "{message}");
    let seen = deployments.get("web").await.unwrap();
    assert_eq!(
        seen.spec.as_ref().and_then(|spec| spec.replicas),
        Some(4),
        "Warn writes nothing: {:?}",
        seen.metadata.managed_fields
    );
    fixture.scope.cleanup().await;
}

#[tokio::test]
async fn an_instance_chooses_its_drift_mode_but_may_not_ignore_fields() {
    let fixture = Fixture::new("drift-instance", "AllowAll").await;
    let namespace = fixture.scope.namespace.clone();
    fixture
        .files("v1", &[("web.yaml", web(&namespace, "v1"))])
        .await;
    let mut own = fixture.instance("v1", fixture.bundle_spec("v1", "file://content"));
    own.spec.drift = json!({"mode": "Warn"}).as_object().cloned();
    let instances = fixture.instances();
    instances
        .create(&kube::api::PostParams::default(), &own)
        .await
        .unwrap();
    let name = fixture.scope.name("instance");
    wait_for(&instances, &name, "installed", |i| {
        condition_is(i, ConditionType::Installed, "True")
    })
    .await;
    // The class repairs; this Instance asked to be told instead.
    let deployments: Api<Deployment> = Api::namespaced(fixture.scope.client.clone(), &namespace);
    set(&deployments, json!({"revisionHistoryLimit": 9})).await;
    wait_for(&instances, &name, "told, not repaired", |i| {
        reason_is(i, ConditionType::Drifted, "ObjectsDrifted")
    })
    .await;
    let limit = deployments
        .get("web")
        .await
        .unwrap()
        .spec
        .and_then(|spec| spec.revision_history_limit);
    assert_eq!(limit, Some(9));

    // Ignoring fields is the class's call: an Instance that asks is refused.
    let mut wrong = fixture.instance("v1", fixture.bundle_spec("v1", "file://content"));
    wrong.metadata.name = Some(fixture.scope.name("wrong"));
    wrong.spec.bundle.name = fixture.scope.name("w1");
    wrong.spec.drift = json!({"ignore": [
        {"group": "apps", "kind": "Deployment", "paths": ["/spec/replicas"]},
    ]})
    .as_object()
    .cloned();
    instances
        .create(&kube::api::PostParams::default(), &wrong)
        .await
        .unwrap();
    let refused = wait_for(&instances, &fixture.scope.name("wrong"), "refused", |i| {
        reason_is(i, ConditionType::Installed, "InvalidConfig")
    })
    .await;
    let message = &refused.condition(ConditionType::Installed).unwrap().message;
    assert!(
        message.starts_with("spec.drift.ignore: an Instance may not ignore fields"),
        "{message}"
    );
    fixture.scope.cleanup().await;
}
