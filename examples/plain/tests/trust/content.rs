//! Bundle content is what someone who may write a ConfigMap marked as
//! content (`core.pakket.dev/bundle-content: "true"`). The webhooks see
//! only such ConfigMaps, so a ConfigMap that arrives unlabelled after the
//! Bundle naming it was admitted ("it may come later") has never been
//! checked: the provisioner refuses to read it, in words naming the
//! ConfigMap and the label, installs nothing, and reads it once labelled.

use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Patch, PatchParams, PostParams};
use pakket_api::{BUNDLE_CONTENT_LABEL, ConditionType};
use pakket_testkit::{condition_is, message_of, reason_is};
use serde_json::json;

use crate::support::{Stage, Webhooks};

#[tokio::test]
async fn content_that_arrives_unlabelled_is_never_unpacked() {
    let stage = Stage::shipped("trust-content-label", "AllowAll", Webhooks::On).await;
    // The Instance first: its ConfigMap does not exist yet, which the
    // webhook allows with a warning.
    stage
        .create(&stage.admin(), stage.instance("late", "late-v1", "later"))
        .await
        .unwrap();
    // Then the ConfigMap, immutable but unlabelled: no webhook is called
    // for it.
    let config_map: ConfigMap = serde_json::from_value(json!({
        "metadata": {"name": "later", "labels": stage.scope.labels()},
        "immutable": true,
        "data": {"app.yaml": stage.config_map_manifest("app", "never-echoed")},
    }))
    .unwrap();
    stage
        .config_maps()
        .create(&PostParams::default(), &config_map)
        .await
        .unwrap();
    let namespace = stage.namespace().to_owned();
    let refused = stage
        .wait(
            "late",
            "the unpack refused for the missing label",
            |instance| {
                reason_is(instance, ConditionType::Unpacked, "UnpackFailed")
                    && message_of(instance, ConditionType::Unpacked).contains("is not labelled")
            },
        )
        .await;
    let message = message_of(&refused, ConditionType::Unpacked);
    assert!(
        message.contains(&format!(
            "ConfigMap {namespace}/later (spec.volumeMounts) is not labelled {BUNDLE_CONTENT_LABEL}=true, so nothing of it is read"
        )) && message.contains(&format!(
            "kubectl -n {namespace} label configmap later {BUNDLE_CONTENT_LABEL}=true"
        )),
        "{message}"
    );
    assert!(
        !message.contains("never-echoed"),
        "nothing of its data is echoed: {message}"
    );
    assert!(!condition_is(&refused, ConditionType::Installed, "True"));
    assert_eq!(stage.value_of("app").await, None, "nothing installed");

    // Labelled by someone who may write it (its data untouched), it is read
    // at the next try.
    stage
        .config_maps()
        .patch(
            "later",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"labels": {BUNDLE_CONTENT_LABEL: "true"}}})),
        )
        .await
        .unwrap();
    stage.installed("late").await;
    assert_eq!(stage.value_of("app").await.as_deref(), Some("never-echoed"));
    stage.cleanup().await;
}
