//! `describe` on an Instance of an operator bundle: the Bundle's recorded
//! properties name it, the Deployments (made here as registry-v1 renders
//! them, run by the control plane's Deployment controller) say where it
//! runs, what it watches and whether it is Available.

use std::time::Duration;

use k8s_openapi::api::apps::v1::Deployment;
use kube::api::{Api, PostParams};
use pakket_api::Reason::*;
use pakket_api::condition::ConditionStatus::True;
use pakket_testkit::{Scope, install_crds};
use serde_json::{Value, json};

use crate::support::{
    Grant, conditions, create_bundle, create_instance, plugin, reviewer_rules, set_status,
};

/// Creates Deployment `name` in the scope's namespace with the annotations
/// registry-v1 puts on an operator's pod template, and waits until the
/// Deployment controller reports its `Available` condition.
async fn operator_deployment(scope: &Scope, name: &str, replicas: i32) {
    let deployment: Deployment = serde_json::from_value(json!({
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": { "name": name, "labels": scope.labels() },
        "spec": {
            "replicas": replicas,
            "selector": { "matchLabels": { "app": name } },
            "template": {
                "metadata": {
                    "labels": { "app": name },
                    "annotations": {
                        "olm.operatorNamespace": scope.namespace,
                        "olm.targetNamespaces": "",
                    },
                },
                // A node no control plane has: its pods never run, with
                // or without kwok nodes, so one replica is never Available.
                "spec": {
                    "nodeSelector": { "pakket.dev/test": "no-such-node" },
                    "containers": [{ "name": "operator", "image": "registry.test/operator:1" }],
                },
            },
        },
    }))
    .expect("a valid Deployment");
    let deployments: Api<Deployment> = Api::namespaced(scope.client.clone(), &scope.namespace);
    deployments
        .create(&PostParams::default(), &deployment)
        .await
        .unwrap_or_else(|error| panic!("creating Deployment {name}: {error}"));
    for _ in 0..300 {
        let current = deployments.get(name).await.unwrap();
        let reported = current
            .status
            .and_then(|status| status.conditions)
            .is_some_and(|conditions| conditions.iter().any(|c| c.type_ == "Available"));
        if reported {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("the Deployment controller did not report Deployment {name} within 30 s");
}

fn deployment_ref(scope: &Scope, name: &str) -> Value {
    json!({ "apiVersion": "apps/v1", "kind": "Deployment", "name": name, "namespace": scope.namespace })
}

#[tokio::test]
async fn describe_shows_an_operators_name_namespaces_and_deployments() {
    let scope = Scope::new("operator").await;
    install_crds(&scope.client).await.unwrap();
    let bundle = scope.name("etcd-v1");
    create_bundle(
        &scope,
        &bundle,
        &["docker://registry.test/etcd:0.9.4"],
        &[],
        Some(json!({
            "unpacked": "Done",
            "properties": [
                { "type": "olm.package", "value": { "packageName": "etcd", "version": "0.9.4" } },
                { "type": "olm.csv.metadata", "value": { "displayName": "etcd", "provider": { "name": "CNCF" } } },
            ],
        })),
    )
    .await;
    let name = create_instance(&scope, "etcd", &bundle).await;
    // No pod of these runs: zero replicas are Available, one is not.
    operator_deployment(&scope, "etcd-operator", 0).await;
    operator_deployment(&scope, "etcd-backup", 1).await;
    let list: [(pakket_api::Reason, _, &str); 1] = [(InstallSucceeded, True, "applied 3 objects")];
    set_status(
        &scope,
        &name,
        json!({
            "conditions": conditions(&list),
            "activeBundle": bundle,
            "objects": [
                deployment_ref(&scope, "etcd-operator"),
                deployment_ref(&scope, "etcd-backup"),
                deployment_ref(&scope, "etcd-gone"),
            ],
        }),
    )
    .await;
    let namespace = &scope.namespace;

    let run = plugin("admin", &["describe", &name]).await;
    assert_eq!(run.code, 0, "{run:?}");
    let text = &run.stdout;
    for expected in [
        "Operator:      etcd 0.9.4 (by CNCF)\n".to_owned(),
        format!("  Install namespace: {namespace}\n"),
        "  Watching:          all namespaces\n".to_owned(),
        format!("    {namespace}/etcd-operator: Available 0/0 ready\n"),
        format!("    {namespace}/etcd-backup: not Available (MinimumReplicasUnavailable: "),
        format!(
            "Note: Deployment {namespace}/etcd-gone is listed in the Instance's status.objects but does not exist"
        ),
    ] {
        assert!(text.contains(&expected), "missing {expected:?} in\n{text}");
    }

    let json_run = plugin("admin", &["describe", &name, "-o", "json"]).await;
    assert_eq!(json_run.code, 0, "{json_run:?}");
    let document: Value = serde_json::from_str(&json_run.stdout).unwrap();
    let operator = &document["operator"];
    assert_eq!(operator["package"], "etcd", "{operator}");
    assert_eq!(operator["installNamespace"], namespace.as_str());
    assert_eq!(operator["watchNamespaces"], json!([]));
    assert_eq!(operator["deployments"][0]["available"], true);
    assert_eq!(operator["deployments"][1]["available"], false);

    // Who may read Instances and Bundles but not Deployments still gets
    // the page, with the operator's name and what could not be read.
    let grant = Grant::new(&scope, "reviewer", "mallory", reviewer_rules()).await;
    let run = plugin("mallory", &["describe", &name]).await;
    assert_eq!(run.code, 0, "{run:?}");
    assert!(
        run.stdout
            .contains("Operator:      etcd 0.9.4 (by CNCF)\n  Deployments:       <none> read\n")
            && run.stdout.contains(&format!(
                "Note: reading Deployment {namespace}/etcd-operator: deployments.apps \"etcd-operator\" is forbidden"
            )),
        "{}",
        run.stdout
    );
    grant.revoke().await;

    // A plain bundle's Instance (no operator properties) has no Operator section.
    let plain = scope.name("plain-v1");
    create_bundle(
        &scope,
        &plain,
        &["docker://registry.test/plain:1"],
        &[],
        Some(json!({ "unpacked": "Done" })),
    )
    .await;
    let plain_instance = create_instance(&scope, "plain", &plain).await;
    set_status(
        &scope,
        &plain_instance,
        json!({ "activeBundle": plain, "objects": [deployment_ref(&scope, "etcd-operator")] }),
    )
    .await;
    let run = plugin("admin", &["describe", &plain_instance]).await;
    assert_eq!(run.code, 0, "{run:?}");
    assert!(!run.stdout.contains("Operator:"), "{}", run.stdout);
    scope.cleanup().await;
}
