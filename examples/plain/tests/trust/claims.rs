//! An unapproved Instance creates nothing a different Instance installs:
//! content an Instance embeds exists only in that Instance (no Bundle
//! object is made from it), so no other Instance can name it, and an
//! approval covers only the content of the Instance it is given on.

use kube::api::Api;
use pakket_api::{Bundle, ConditionType};
use pakket_testkit::{condition_is, reason_is};
use serde_json::json;

use crate::support::{Stage, Webhooks, rule};

#[tokio::test]
async fn a_squatted_bundle_name_installs_nothing_of_the_squatter() {
    let stage = Stage::shipped("trust-claims", "Manual", Webhooks::On).await;
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

    // The admin's Instance names Bundle team-app without embedding it:
    // alice's embedded content made no Bundle object anyone else can name.
    let team = json!({
        "apiVersion": "core.pakket.dev/v1alpha1", "kind": "Instance",
        "metadata": { "name": stage.scope.name("team"), "labels": stage.scope.labels() },
        "spec": { "class": stage.class(), "bundle": { "name": stage.scope.name("team-app") } },
    });
    stage.create(&stage.admin(), team).await.unwrap();
    let refused = stage
        .wait("team", "no such Bundle", |i| {
            reason_is(i, ConditionType::Unpacked, "UnpackFailed")
        })
        .await;
    let message = &refused.condition(ConditionType::Unpacked).unwrap().message;
    assert!(
        message.contains(&format!(
            "Bundle {} does not exist",
            stage.scope.name("team-app")
        )),
        "{message}"
    );
    assert!(
        Api::<Bundle>::all(stage.admin())
            .get_opt(&stage.scope.name("team-app"))
            .await
            .unwrap()
            .is_none(),
        "no Bundle object is made from an embedded spec"
    );

    // An approver who approves the team's Instance installs nothing of alice's.
    let bob = stage.client_as("bob").await;
    let _ = stage.approve_as(&bob, "team").await;
    tokio::time::sleep(std::time::Duration::from_secs(2)).await;
    assert_eq!(
        stage.value_of("evil").await,
        None,
        "alice's content never installed"
    );

    // The same name embedded with the team's own spec is the team's own
    // content: approved, it installs that and nothing of alice's.
    stage
        .create(&stage.admin(), stage.instance("team2", "team-app", "real"))
        .await
        .unwrap();
    stage
        .wait("team2", "unpacked", |i| {
            condition_is(i, ConditionType::Unpacked, "True")
        })
        .await;
    stage.approve_as(&bob, "team2").await.unwrap();
    stage.installed("team2").await;
    assert_eq!(stage.value_of("team").await.as_deref(), Some("the team's"));
    assert_eq!(
        stage.value_of("evil").await,
        None,
        "alice's content never installed"
    );
    stage.cleanup().await;
}
