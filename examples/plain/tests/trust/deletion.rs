//! Nothing a user can write decides what the provisioner deletes.
//!
//! The attack: bob holds the approver role deploy/rbac ships, so he may
//! write `instances/status`. He adds objects Pakket never created (a
//! ConfigMap, a whole Namespace) to an Instance's `status.objects`, then
//! waits for the next pivot or uninstall to delete them with the
//! provisioner's rights. Pakket deletes only objects whose own records
//! (the Instance's UID label and Pakket's field manager) say they are that
//! Instance's.

use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kube::api::{Api, DeleteParams, ObjectMeta, Patch, PatchParams, PostParams};
use pakket_api::ConditionType;
use pakket_testkit::condition_is;
use serde_json::json;

use crate::support::{Stage, Webhooks};

/// An object bob wants gone: a ConfigMap and a Namespace Pakket never made.
async fn victims(stage: &Stage) -> (String, String) {
    let precious = ConfigMap {
        metadata: ObjectMeta {
            name: Some("precious".into()),
            ..ObjectMeta::default()
        },
        data: Some([("value".to_owned(), "keep me".to_owned())].into()),
        ..ConfigMap::default()
    };
    stage
        .config_maps()
        .create(&PostParams::default(), &precious)
        .await
        .unwrap();
    let namespace = stage.scope.name("victim");
    Api::<Namespace>::all(stage.admin())
        .create(
            &PostParams::default(),
            &Namespace {
                metadata: stage.scope.meta("victim"),
                ..Namespace::default()
            },
        )
        .await
        .unwrap();
    ("precious".into(), namespace)
}

/// bob adds the victims to Instance `suffix`'s status.objects.
async fn forge_objects(stage: &Stage, suffix: &str, namespace: &str) {
    let bob = stage.client_as("bob").await;
    let instances: Api<pakket_api::Instance> = Api::all(bob);
    let name = stage.scope.name(suffix);
    let mut objects = serde_json::to_value(
        &stage
            .instances()
            .get(&name)
            .await
            .unwrap()
            .status
            .unwrap()
            .objects,
    )
    .unwrap();
    let list = objects.as_array_mut().unwrap();
    list.push(json!({"apiVersion": "v1", "kind": "ConfigMap", "name": "precious", "namespace": stage.namespace()}));
    list.push(json!({"apiVersion": "v1", "kind": "Namespace", "name": namespace}));
    instances
        .patch_status(
            &name,
            &PatchParams::default(),
            &Patch::Merge(json!({ "status": { "objects": objects } })),
        )
        .await
        .expect("RBAC and the webhook let a status writer write status.objects");
}

async fn still_there(stage: &Stage, namespace: &str) {
    assert_eq!(
        stage.value_of("precious").await.as_deref(),
        Some("keep me"),
        "the ConfigMap Pakket never created is untouched"
    );
    let found = Api::<Namespace>::all(stage.admin())
        .get(namespace)
        .await
        .unwrap();
    assert!(
        found.metadata.deletion_timestamp.is_none(),
        "the Namespace Pakket never created is not being deleted"
    );
}

#[tokio::test]
async fn a_forged_status_list_deletes_nothing_at_uninstall() {
    let stage = Stage::shipped("trust-delete-uninstall", "AllowAll", Webhooks::On).await;
    stage.grant_approver("bob").await;
    let (_, namespace) = victims(&stage).await;
    stage.config_map_content("content", &[("app", "v1")]).await;
    stage
        .create(&stage.admin(), stage.instance("app", "app-v1", "content"))
        .await
        .unwrap();
    stage.installed("app").await;

    forge_objects(&stage, "app", &namespace).await;
    stage.delete_instance("app").await;
    assert_eq!(
        stage.value_of("app").await,
        None,
        "its own object went with it"
    );
    still_there(&stage, &namespace).await;
    let _ = Api::<Namespace>::all(stage.admin())
        .delete(&namespace, &DeleteParams::default())
        .await;
    stage.cleanup().await;
}

#[tokio::test]
async fn a_forged_status_list_deletes_nothing_at_a_pivot() {
    let stage = Stage::shipped("trust-delete-pivot", "AllowAll", Webhooks::On).await;
    stage.grant_approver("bob").await;
    let (_, namespace) = victims(&stage).await;
    stage.config_map_content("v1", &[("a", "v1")]).await;
    stage.config_map_content("v2", &[("b", "v2")]).await;
    stage
        .create(&stage.admin(), stage.instance("app", "app-v1", "v1"))
        .await
        .unwrap();
    stage.installed("app").await;

    forge_objects(&stage, "app", &namespace).await;
    // The admin moves the Instance to v2: the pivot deletes what v1 alone had.
    let change = json!({ "spec": { "bundle": {
        "name": stage.scope.name("app-v2"), "spec": stage.bundle_spec("v2"),
    } } });
    stage
        .instances()
        .patch(
            &stage.scope.name("app"),
            &PatchParams::default(),
            &Patch::Merge(&change),
        )
        .await
        .unwrap();
    let pivoted = stage
        .wait("app", "v2 installed", |i| {
            i.status.as_ref().and_then(|s| s.active_bundle.as_deref())
                == Some(stage.scope.name("app-v2").as_str())
                && condition_is(i, ConditionType::Installed, "True")
        })
        .await;
    let message = &pivoted.condition(ConditionType::Installed).unwrap().message;
    assert!(
        message.contains("left 2 listed objects alone because they are not this Instance's"),
        "{message}"
    );
    assert_eq!(
        stage.value_of("a").await,
        None,
        "v1's own object was pruned"
    );
    assert_eq!(stage.value_of("b").await.as_deref(), Some("v2"));
    still_there(&stage, &namespace).await;
    let _ = Api::<Namespace>::all(stage.admin())
        .delete(&namespace, &DeleteParams::default())
        .await;
    stage.cleanup().await;
}
