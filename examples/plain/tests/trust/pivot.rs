//! A pivot touches only Bundles this Instance has had active: a selector
//! that matches everything relabels nobody else's Bundles.

use kube::api::{Api, Patch, PatchParams, PostParams};
use pakket_api::Bundle;
use pakket_runtime::kernel::controller::REPLACED_BY_LABEL;
use pakket_testkit::eventually;
use serde_json::json;

use crate::support::{Stage, Webhooks, rule};

#[tokio::test]
async fn a_selector_that_matches_everything_relabels_no_one_elses_bundles() {
    let stage = Stage::shipped("trust-pivot", "AllowAll", Webhooks::On).await;
    stage.grant_requester("alice").await;
    stage
        .grant(
            "alice-content",
            "alice",
            vec![rule("", "configmaps", &["get"], &["v1", "v2"])],
        )
        .await;
    stage.config_map_content("v1", &[("a", "v1")]).await;
    stage.config_map_content("v2", &[("a", "v2")]).await;
    // Someone else's Bundle.
    let theirs: Bundle = serde_json::from_value(json!({
        "apiVersion": "core.pakket.dev/v1alpha1", "kind": "Bundle",
        "metadata": { "name": stage.scope.name("theirs"), "labels": stage.scope.labels() },
        "spec": stage.bundle_spec("v1"),
    }))
    .unwrap();
    let bundles: Api<Bundle> = Api::all(stage.admin());
    bundles
        .create(&PostParams::default(), &theirs)
        .await
        .unwrap();

    let alice = stage.client_as("alice").await;
    let mut instance = stage.instance("greedy", "greedy-v1", "v1");
    instance["spec"]["selector"] = json!({});
    stage.create(&alice, instance).await.unwrap();
    stage.installed("greedy").await;
    let change = json!({ "spec": { "bundle": {
        "name": stage.scope.name("greedy-v2"), "spec": stage.bundle_spec("v2"),
    } } });
    stage
        .grant(
            "alice-edits",
            "alice",
            vec![rule(
                pakket_api::GROUP,
                "instances",
                &["patch"],
                &[&stage.scope.name("greedy")],
            )],
        )
        .await;
    // A new grant reaches the apiserver's authorizer a moment later.
    let alices: Api<pakket_api::Instance> = Api::all(alice);
    eventually("alice's patch is allowed", || async {
        alices
            .patch(
                &stage.scope.name("greedy"),
                &PatchParams::default(),
                &Patch::Merge(&change),
            )
            .await
            .is_ok()
    })
    .await;
    eventually("v2 installed", || async {
        stage.value_of("a").await.as_deref() == Some("v2")
    })
    .await;
    // The status is written after the pivot has labelled what it labels.
    stage
        .wait("greedy", "the pivot recorded", |i| {
            i.status.as_ref().and_then(|s| s.active_bundle.clone())
                == Some(stage.scope.name("greedy-v2"))
        })
        .await;
    let untouched = bundles.get(&stage.scope.name("theirs")).await.unwrap();
    assert!(
        !untouched
            .metadata
            .labels
            .unwrap_or_default()
            .contains_key(REPLACED_BY_LABEL),
        "someone else's Bundle is not relabelled"
    );
    stage.cleanup().await;
}
