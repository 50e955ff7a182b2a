//! A requester record no webhook wrote is not trusted. The webhook seals
//! each record (HMAC over the Instance's name, the identity and the spec's
//! digest) with a key only the webhooks and provisioners read; the runtime
//! verifies it. Here the webhooks are not registered at all, as before they
//! are installed or after someone removed them.

use pakket_api::{CREATED_BY_ANNOTATION, ConditionType};
use pakket_testkit::condition_is;
use serde_json::json;

use crate::support::{Stage, Webhooks, rule};

#[tokio::test]
async fn a_forged_creator_record_is_not_honoured_without_the_webhook() {
    let mut stage = Stage::shipped("trust-records", "UserPermission", Webhooks::Off).await;
    stage.grant_requester("alice").await;
    stage
        .grant(
            "alice-content",
            "alice",
            vec![rule("", "configmaps", &["get"], &["content"])],
        )
        .await;
    stage
        .config_map_content("content", &[("x", "installed")])
        .await;
    let alice = stage.client_as("alice").await;
    let forgeries = [
        (
            "unsealed",
            json!({"username": "pakket-admin", "groups": ["system:masters"]}),
        ),
        (
            "bad-seal",
            json!({
                "username": "pakket-admin", "groups": ["system:masters"],
                "spec": "sha256:0000000000000000000000000000000000000000000000000000000000000000",
                "seal": "00".repeat(32),
            }),
        ),
    ];
    for (suffix, record) in &forgeries {
        let mut instance = stage.instance(suffix, &format!("{suffix}-v1"), "content");
        instance["metadata"]["annotations"] = json!({ CREATED_BY_ANNOTATION: record.to_string() });
        stage
            .create(&alice, instance)
            .await
            .expect("without the webhooks, RBAC alone lets alice create it");
        // Not trusted: nothing is read on the forged admin's behalf, so
        // nothing can be approved or installed.
        let refused = stage
            .wait(suffix, "the forged record refused", |i| {
                i.condition(ConditionType::Unpacked)
                    .is_some_and(|c| c.message.contains("nothing was read"))
            })
            .await;
        let message = &refused.condition(ConditionType::Unpacked).unwrap().message;
        assert!(
            message.contains("carries no seal") || message.contains("does not verify"),
            "{message}"
        );
        assert!(condition_is(&refused, ConditionType::Installed, "False"));
    }
    assert_eq!(
        stage.value_of("x").await,
        None,
        "the forged admin installed nothing"
    );

    // The legitimate path: with the webhooks registered, the admin's own
    // Instance carries a sealed record, and UserPermission approves it.
    stage.start_webhooks().await;
    stage
        .create(
            &stage.admin(),
            stage.instance("admins", "admins-v1", "content"),
        )
        .await
        .unwrap();
    stage.installed("admins").await;
    assert_eq!(stage.value_of("x").await.as_deref(), Some("installed"));
    stage.cleanup().await;
}
