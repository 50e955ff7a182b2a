//! The example provisioner on a real control plane, as its author tests
//! it: an Instance of a `.properties` Bundle installs its ConfigMaps; one
//! without `spec.config.namespace` is `InvalidConfig`, naming the field.

use std::time::Duration;

use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, PostParams};
use pakket_api::{ConditionType, Instance, ProvisionerClass};
use pakket_example_properties::Properties;
use pakket_runtime::kernel::controller;
use pakket_testkit::{Scope, install_crds, reason_is, wait_for_instance};
use serde_json::json;

#[tokio::test]
async fn a_properties_bundle_installs_its_config_maps_and_a_missing_setting_is_named() {
    let scope = Scope::new("properties").await;
    install_crds(&scope.client).await.unwrap();
    let id = format!("example.com/{}", scope.id);
    let class: ProvisionerClass = serde_json::from_value(json!({
        "apiVersion": "core.pakket.dev/v1alpha1", "kind": "ProvisionerClass",
        "metadata": { "name": scope.name("class"), "labels": scope.labels() },
        "spec": { "provisioner": id, "parameters": { "approval": "AllowAll" } },
    }))
    .unwrap();
    Api::<ProvisionerClass>::all(scope.client.clone())
        .create(&PostParams::default(), &class)
        .await
        .unwrap();
    // The content: one .properties file, in an immutable ConfigMap the
    // Bundle mounts (a `file://` ref), labelled as Bundle content.
    let content: ConfigMap = serde_json::from_value(json!({
        "metadata": { "name": "content", "labels": { pakket_api::BUNDLE_CONTENT_LABEL: "true" } },
        "immutable": true,
        "data": { "app.properties": "# the app's settings\nmode = fast\nlevel=3\n" },
    }))
    .unwrap();
    Api::<ConfigMap>::namespaced(scope.client.clone(), &scope.namespace)
        .create(&PostParams::default(), &content)
        .await
        .unwrap();
    let store = scope.path("store");
    let options = controller::RunOptions::new(store);
    let client = scope.client.clone();
    let provisioner = Properties { id: id.clone() };
    let running = tokio::spawn(async move {
        let _ = controller::run_with(client, provisioner, options).await;
    });

    let instances: Api<Instance> = Api::all(scope.client.clone());
    let instance = |suffix: &str, config: serde_json::Value| -> Instance {
        serde_json::from_value(json!({
            "apiVersion": "core.pakket.dev/v1alpha1", "kind": "Instance",
            "metadata": { "name": scope.name(suffix), "labels": scope.labels() },
            "spec": {
                "class": scope.name("class"),
                "config": config,
                "bundle": { "name": scope.name(&format!("{suffix}-bundle")), "spec": {
                    "class": scope.name("class"), "refs": ["file://content"],
                    "volumeMounts": [{ "mountPath": "/content", "configMap": { "name": "content", "namespace": scope.namespace } }],
                } },
            },
        }))
        .unwrap()
    };
    instances
        .create(
            &PostParams::default(),
            &instance("app", json!({ "namespace": scope.namespace })),
        )
        .await
        .unwrap();
    wait_for_instance(
        &instances,
        &scope.name("app"),
        "installed and healthy",
        |i| reason_is(i, ConditionType::Healthy, "ObjectsHealthy"),
    )
    .await;
    let installed = Api::<ConfigMap>::namespaced(scope.client.clone(), &scope.namespace)
        .get("app")
        .await
        .unwrap();
    let data = installed.data.unwrap();
    assert_eq!(data.get("mode").map(String::as_str), Some("fast"));
    assert_eq!(data.get("level").map(String::as_str), Some("3"));

    instances
        .create(&PostParams::default(), &instance("unset", json!({})))
        .await
        .unwrap();
    let refused = wait_for_instance(&instances, &scope.name("unset"), "InvalidConfig", |i| {
        reason_is(i, ConditionType::Installed, "InvalidConfig")
    })
    .await;
    let message = &refused.condition(ConditionType::Installed).unwrap().message;
    assert!(
        message.starts_with("spec.config.namespace: missing"),
        "names the field: {message}"
    );

    running.abort();
    tokio::time::sleep(Duration::from_millis(100)).await;
    scope.cleanup().await;
}
