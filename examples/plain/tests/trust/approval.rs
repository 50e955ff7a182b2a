//! An approval covers exactly the content that was approved: the Bundle and
//! the digest the approver saw. New bytes under the same name are never
//! installed under it, and the fields that decide approval are the ones the
//! webhook guards: moving anything else approves nothing.

use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, DeleteParams, ObjectMeta, Patch, PatchParams, PostParams};
use pakket_api::{ConditionType, Instance};
use pakket_testkit::{condition_is, eventually, pinned_digest, reason_is};
use serde_json::json;

use crate::support::{Stage, Webhooks, refused_with, rule};

/// A content ConfigMap the webhooks do not guard (no scope label: the
/// stage's webhooks see only its own objects), so the admin can delete and
/// re-create it under the same name.
async fn unguarded_content(stage: &Stage, value: &str) {
    let config_map = ConfigMap {
        metadata: ObjectMeta {
            name: Some("content".into()),
            labels: Some(
                [(
                    pakket_api::BUNDLE_CONTENT_LABEL.to_owned(),
                    "true".to_owned(),
                )]
                .into(),
            ),
            ..ObjectMeta::default()
        },
        data: Some(
            [(
                "app.yaml".to_owned(),
                stage.config_map_manifest("app", value),
            )]
            .into(),
        ),
        immutable: Some(true),
        ..ConfigMap::default()
    };
    stage
        .config_maps()
        .create(&PostParams::default(), &config_map)
        .await
        .unwrap();
}

#[tokio::test]
async fn content_that_changed_at_its_source_is_not_installed_under_the_old_approval() {
    let mut stage = Stage::shipped("trust-approval-source", "Manual", Webhooks::On).await;
    stage.grant_approver("bob").await;
    unguarded_content(&stage, "approved").await;
    stage
        .create(&stage.admin(), stage.instance("app", "app-v1", "content"))
        .await
        .unwrap();
    stage
        .wait("app", "waiting for approval", |i| {
            reason_is(i, ConditionType::Approved, "ApprovalPending")
                && condition_is(i, ConditionType::Unpacked, "True")
        })
        .await;
    let bob = stage.client_as("bob").await;
    stage.approve_as(&bob, "app").await.unwrap();
    stage.installed("app").await;
    let pinned = pinned_digest(&stage.admin(), &stage.scope.name("app-v1")).await;

    // The provisioner restarts on an empty store, and meanwhile the source
    // serves other bytes under the same name.
    stage.kill_provisioner(true).await;
    stage
        .config_maps()
        .delete("content", &DeleteParams::default())
        .await
        .unwrap();
    unguarded_content(&stage, "swapped").await;
    stage.start_provisioner().await;
    let failed = stage
        .wait("app", "the changed source reported", |i| {
            reason_is(i, ConditionType::Unpacked, "UnpackFailed")
        })
        .await;
    let message = &failed.condition(ConditionType::Unpacked).unwrap().message;
    assert!(
        message.contains("changed at its source") && message.contains(&pinned),
        "{message}"
    );
    assert_eq!(
        pinned_digest(&stage.admin(), &stage.scope.name("app-v1")).await,
        pinned,
        "a Bundle's pin never moves"
    );
    assert_eq!(stage.value_of("app").await.as_deref(), Some("approved"));
    stage.cleanup().await;
}

#[tokio::test]
async fn moving_what_the_guard_ignores_approves_nothing_and_what_it_guards_needs_approve() {
    let mut stage = Stage::shipped("trust-approval-guard", "Manual", Webhooks::On).await;
    stage.grant_approver("bob").await;
    // carol may write instances/status as far as RBAC goes, but lacks `approve`.
    stage
        .grant(
            "carol-status",
            "carol",
            vec![
                rule(pakket_api::GROUP, "instances", &["get", "list"], &[]),
                rule(
                    pakket_api::GROUP,
                    "instances/status",
                    &["update", "patch"],
                    &[],
                ),
            ],
        )
        .await;
    stage.config_map_content("v1", &[("app", "v1")]).await;
    stage.config_map_content("v2", &[("app", "v2")]).await;
    stage
        .create(&stage.admin(), stage.instance("app", "app-v1", "v1"))
        .await
        .unwrap();
    stage
        .wait("app", "unpacked", |i| {
            condition_is(i, ConditionType::Unpacked, "True")
        })
        .await;
    let bob = stage.client_as("bob").await;
    stage.approve_as(&bob, "app").await.unwrap();
    stage.installed("app").await;
    let name = stage.scope.name("app");
    let change = json!({ "spec": { "bundle": {
        "name": stage.scope.name("app-v2"), "spec": stage.bundle_spec("v2"),
    } } });
    stage
        .instances()
        .patch(&name, &PatchParams::default(), &Patch::Merge(&change))
        .await
        .unwrap();
    stage
        .wait("app", "v2 waits for approval", |i| {
            reason_is(i, ConditionType::Approved, "ApprovalPending")
                && i.metadata.generation == Some(2)
        })
        .await;
    let v2_digest = pinned_digest(&stage.admin(), &stage.scope.name("app-v2")).await;

    // While the provisioner is away, carol tries everything around the guard.
    stage.kill_provisioner(false).await;
    let carol: Api<Instance> = Api::all(stage.client_as("carol").await);
    let current = stage.instances().get(&name).await.unwrap();
    let mut conditions = current.status.clone().unwrap().conditions;
    for condition in &mut conditions {
        if condition.type_ == "Approved" {
            condition.observed_generation = Some(2);
            condition.message = "approved, honest".into();
        }
    }
    carol
        .patch_status(
            &name,
            &PatchParams::default(),
            &Patch::Merge(json!({ "status": { "conditions": conditions } })),
        )
        .await
        .expect("generation and message decide nothing, so the webhook lets them through");
    let content = json!({ "status": { "approval": {
        "bundle": stage.scope.name("app-v2"), "digest": v2_digest, "approvedBy": "carol",
    } } });
    let forged = carol
        .patch_status(&name, &PatchParams::default(), &Patch::Merge(&content))
        .await;
    assert!(refused_with(&forged, 403), "{forged:?}");
    let mut approving = conditions.clone();
    for condition in &mut approving {
        if condition.type_ == "Approved" {
            condition.status = "True".into();
            condition.reason = "ApprovedByUser".into();
        }
    }
    let forged = carol
        .patch_status(
            &name,
            &PatchParams::default(),
            &Patch::Merge(json!({ "status": { "conditions": approving } })),
        )
        .await;
    assert!(refused_with(&forged, 403), "{forged:?}");

    stage.start_provisioner().await;
    // The provisioner reconciles every Instance when it starts: give it the
    // time to take the Lease and look, then check nothing moved.
    eventually("the provisioner has looked again", || async {
        let instance = stage.instances().get(&name).await.unwrap();
        instance
            .condition(ConditionType::Approved)
            .is_some_and(|c| c.message != "approved, honest")
    })
    .await;
    let still = stage.instances().get(&name).await.unwrap();
    assert!(reason_is(
        &still,
        ConditionType::Approved,
        "ApprovalPending"
    ));
    assert_eq!(
        stage.value_of("app").await.as_deref(),
        Some("v1"),
        "v2 was never applied"
    );

    // The approver approves v2: it installs.
    stage.approve_as(&bob, "app").await.unwrap();
    eventually("v2 installed once approved", || async {
        stage.value_of("app").await.as_deref() == Some("v2")
    })
    .await;
    stage.cleanup().await;
}
