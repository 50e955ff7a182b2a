//! An unapproved Instance creates nothing a different Instance installs.
//! A Bundle created from an Instance's embedded spec belongs to that
//! Instance alone (its controller ownerReference), and an Instance that
//! embeds a spec installs only the Bundle it created from exactly that spec.

use kube::api::Api;
use pakket_api::{Bundle, ConditionType};
use pakket_testkit::{condition_is, reason_is};
use serde_json::json;

use crate::support::{Stage, Webhooks, rule};

#[tokio::test]
async fn a_squatted_bundle_name_is_refused_and_nothing_is_installed() {
    let stage = Stage::new("trust-claims", "Manual", Webhooks::On).await;
    stage.grant_requester("alice").await;
    stage.grant_approver("bob").await;
    stage
        .grant(
            "alice-content",
            "alice",
            vec![rule("", "configmaps", &["get"], &["evil"])],
        )
        .await;
    stage
        .config_map_content("evil", &[("evil", "alice's")])
        .await;
    stage
        .config_map_content("real", &[("team", "the team's")])
        .await;
    // alice's Instance, never approved, embeds a Bundle under the name the
    // team's Instance is about to ask for.
    let alice = stage.client_as("alice").await;
    stage
        .create(&alice, stage.instance("squat", "team-app", "evil"))
        .await
        .unwrap();
    stage
        .wait("squat", "unpacked, waiting for approval", |i| {
            condition_is(i, ConditionType::Unpacked, "True")
        })
        .await;

    // The admin's Instance names Bundle team-app without embedding it.
    let team = json!({
        "apiVersion": "core.pakket.dev/v1alpha1", "kind": "Instance",
        "metadata": { "name": stage.scope.name("team"), "labels": stage.scope.labels() },
        "spec": { "class": stage.class(), "bundle": { "name": stage.scope.name("team-app") } },
    });
    stage.create(&stage.admin(), team).await.unwrap();
    let refused = stage
        .wait("team", "the claim refused", |i| {
            reason_is(i, ConditionType::Unpacked, "UnpackFailed")
        })
        .await;
    let message = &refused.condition(ConditionType::Unpacked).unwrap().message;
    assert!(
        message.contains(&format!(
            "Bundle {} belongs to Instance {}",
            stage.scope.name("team-app"),
            stage.scope.name("squat")
        )),
        "{message}"
    );
    // The same name embedded with the team's own spec: refused too.
    stage
        .create(&stage.admin(), stage.instance("team2", "team-app", "real"))
        .await
        .unwrap();
    let refused = stage
        .wait("team2", "the claim refused", |i| {
            reason_is(i, ConditionType::Unpacked, "UnpackFailed")
        })
        .await;
    let message = &refused.condition(ConditionType::Unpacked).unwrap().message;
    assert!(message.contains("belongs to Instance"), "{message}");

    // An approver who approves the team's Instance still installs nothing of alice's.
    let bob = stage.client_as("bob").await;
    let _ = stage.approve_as(&bob, "team").await;
    tokio::time::sleep(std::time::Duration::from_secs(2)).await;
    assert_eq!(
        stage.value_of("evil").await,
        None,
        "alice's content never installed"
    );
    let bundle = Api::<Bundle>::all(stage.admin())
        .get(&stage.scope.name("team-app"))
        .await
        .unwrap();
    assert_eq!(
        bundle.metadata.owner_references.unwrap()[0].name,
        stage.scope.name("squat")
    );

    // The legitimate path: a Bundle name of the team's own installs once approved.
    stage
        .create(
            &stage.admin(),
            stage.instance("team3", "team-app-own", "real"),
        )
        .await
        .unwrap();
    stage
        .wait("team3", "unpacked", |i| {
            condition_is(i, ConditionType::Unpacked, "True")
        })
        .await;
    stage.approve_as(&bob, "team3").await.unwrap();
    stage.installed("team3").await;
    assert_eq!(stage.value_of("team").await.as_deref(), Some("the team's"));
    stage.cleanup().await;
}
