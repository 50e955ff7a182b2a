//! `kubectl instance deps NAME` on real objects: an Instance whose CRD
//! (labelled with its UID, as the runtime labels what it installs) has a
//! custom resource, and another Instance whose Bundle requires its package
//! and its API. No provisioner runs: the test writes what one would.

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, ApiResource, DynamicObject, PostParams};
use pakket_api::Reason::{ApprovedByPolicy, InstallSucceeded, ObjectsHealthy, UnpackSucceeded};
use pakket_api::condition::ConditionStatus::True;
use pakket_testkit::{Scope, eventually, install_crds};
use serde_json::json;

use crate::support::{conditions, create_bundle, create_instance, plugin, set_status};

async fn installed(scope: &Scope, suffix: &str, properties: serde_json::Value) -> String {
    let bundle = scope.name(&format!("{suffix}-v1"));
    create_bundle(
        scope,
        &bundle,
        &["docker://registry.example/x:v1"],
        &[],
        Some(json!({ "properties": properties })),
    )
    .await;
    let name = create_instance(scope, suffix, &bundle).await;
    let list = [
        (ApprovedByPolicy, True, "approved"),
        (UnpackSucceeded, True, "unpacked"),
        (InstallSucceeded, True, "applied"),
        (ObjectsHealthy, True, "healthy"),
    ];
    set_status(
        scope,
        &name,
        json!({ "conditions": conditions(&list), "activeBundle": bundle }),
    )
    .await;
    name
}

#[tokio::test]
async fn deps_shows_who_an_instance_needs_who_needs_it_and_what_uses_its_apis() {
    let scope = Scope::new("deps").await;
    install_crds(&scope.client).await.unwrap();
    let group = format!("{}.test.pakket.dev", scope.id);
    let package = scope.name("widgets");
    let provider = installed(
        &scope,
        "widgets",
        json!([{ "type": "olm.package", "value": { "packageName": package, "version": "1.0.0" } }]),
    )
    .await;
    let dependent = installed(
        &scope,
        "backup",
        json!([
            { "type": "olm.package.required", "value": { "packageName": package, "versionRange": ">=1.0.0" } },
            { "type": "olm.gvk.required", "value": { "group": group, "version": "v1", "kind": "Widget" } },
        ]),
    )
    .await;
    let uid = crate::support::get_instance(&scope, &provider)
        .await
        .metadata
        .uid
        .unwrap();
    // The provider's CRD, labelled as the runtime labels what it installs.
    let crd: CustomResourceDefinition = serde_json::from_value(json!({
        "metadata": {
            "name": format!("widgets.{group}"),
            "labels": { pakket_api::ownership::INSTANCE_UID_LABEL: uid, "test.pakket.dev/scope": scope.id },
        },
        "spec": {
            "group": group, "scope": "Namespaced",
            "names": { "kind": "Widget", "listKind": "WidgetList", "plural": "widgets", "singular": "widget" },
            "versions": [{ "name": "v1", "served": true, "storage": true,
                "schema": { "openAPIV3Schema": { "type": "object", "x-kubernetes-preserve-unknown-fields": true } } }],
        },
    }))
    .unwrap();
    let crds: Api<CustomResourceDefinition> = Api::all(scope.client.clone());
    crds.create(&PostParams::default(), &crd).await.unwrap();
    let widget = ApiResource {
        group: group.clone(),
        version: "v1".into(),
        api_version: format!("{group}/v1"),
        kind: "Widget".into(),
        plural: "widgets".into(),
    };
    let widgets: Api<DynamicObject> =
        Api::namespaced_with(scope.client.clone(), &scope.namespace, &widget);
    let object: DynamicObject = serde_json::from_value(json!({
        "apiVersion": format!("{group}/v1"), "kind": "Widget", "metadata": { "name": "one" },
    }))
    .unwrap();
    eventually("a Widget is made once the CRD serves", || async {
        widgets
            .create(&PostParams::default(), &object)
            .await
            .is_ok()
    })
    .await;

    let run = plugin("admin", &["deps", &provider]).await;
    assert_eq!(run.code, 0, "{run:?}");
    let text = &run.stdout;
    assert!(
        text.contains(&format!(
            "provides: {group}/v1 Widget, package {package} 1.0.0"
        )),
        "{text}"
    );
    assert!(
        text.contains("needed by:\n")
            && text.contains(&format!("─ {dependent} ({group}/v1 Widget)"))
            && text.contains(&format!("─ {dependent} (package {package} >=1.0.0)")),
        "{text}"
    );
    assert!(
        text.contains(&format!(
            "1 {group}/Widget objects (1 in {})",
            scope.namespace
        )),
        "{text}"
    );
    let dot = plugin("admin", &["deps", &dependent, "--format", "dot"]).await;
    assert_eq!(dot.code, 0, "{dot:?}");
    assert!(
        dot.stdout
            .contains(&format!("\"{dependent}\" -> \"{provider}\"")),
        "{}",
        dot.stdout
    );
    // An Instance that is not installed says so.
    let pending = create_instance(&scope, "pending", &scope.name("nothing")).await;
    let run = plugin("admin", &["deps", &pending]).await;
    assert_ne!(run.code, 0);
    assert!(run.stderr.contains("is not installed"), "{run:?}");

    crds.delete(&format!("widgets.{group}"), &Default::default())
        .await
        .unwrap();
    scope.cleanup().await;
}
