//! No silent adoption. An object that exists and is not this Instance's is
//! never overwritten: the Instance reports a conflict naming the object and
//! its owner, nothing of its Bundle is applied, and deleting it deletes
//! nothing it never owned. Adoption is explicit: someone who may write the
//! object annotates it with `core.pakket.dev/adopt-into: <instance>`.

use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, ObjectMeta, Patch, PatchParams, PostParams};
use pakket_api::ConditionType;
use pakket_api::ownership::{ADOPT_ANNOTATION, INSTANCE_UID_LABEL};
use pakket_testkit::{condition_is, eventually, instance_events, reason_is};
use serde_json::json;

use crate::support::{Stage, Webhooks, labels_of, refused_with, rule};

#[tokio::test]
async fn an_object_pakket_did_not_create_is_not_taken_over_and_survives_the_instance() {
    let stage = Stage::shipped("trust-adopt-unmanaged", "AllowAll", Webhooks::On).await;
    stage.grant_requester("alice").await;
    // The admin's own ConfigMap, made by hand.
    let mine = ConfigMap {
        metadata: ObjectMeta {
            name: Some("settings".into()),
            ..ObjectMeta::default()
        },
        data: Some([("value".to_owned(), "the admin's".to_owned())].into()),
        ..ConfigMap::default()
    };
    stage
        .config_maps()
        .create(&PostParams::default(), &mine)
        .await
        .unwrap();
    // alice may ask the class for content, but may not write that ConfigMap.
    let alice = stage.client_as("alice").await;
    let alices_view: Api<ConfigMap> = Api::namespaced(alice.clone(), stage.namespace());
    assert!(refused_with(
        &alices_view
            .patch(
                "settings",
                &PatchParams::apply("alice"),
                &Patch::Apply(json!({
                    "apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "settings"},
                    "data": {"value": "alice's"},
                }))
            )
            .await,
        403
    ));
    stage
        .content(
            "content",
            &[
                (
                    "a-extra.yaml",
                    stage.config_map_manifest("extra", "alice's"),
                ),
                (
                    "settings.yaml",
                    stage.config_map_manifest("settings", "alice's"),
                ),
            ],
        )
        .await;
    stage
        .grant(
            "alice-reads-content",
            "alice",
            vec![rule("", "configmaps", &["get"], &["content"])],
        )
        .await;
    stage
        .create(&alice, stage.instance("alices", "alices-v1", "content"))
        .await
        .expect("alice may create an Instance of the class");
    let failed = stage
        .wait("alices", "the conflict reported", |i| {
            reason_is(i, ConditionType::Installed, "InstallFailed")
        })
        .await;
    let message = &failed.condition(ConditionType::Installed).unwrap().message;
    assert!(
        message.contains(&format!(
            "ConfigMap/{}/settings exists and is not managed by Pakket",
            stage.namespace()
        )) && message.contains(&format!(
            "kubectl annotate configmap -n {} settings {ADOPT_ANNOTATION}={}",
            stage.namespace(),
            stage.scope.name("alices")
        )),
        "{message}"
    );
    assert_eq!(
        stage.value_of("settings").await.as_deref(),
        Some("the admin's")
    );
    assert_eq!(
        stage.value_of("extra").await,
        None,
        "nothing of the Bundle is applied when one object conflicts"
    );
    let kept = stage.config_maps().get("settings").await.unwrap();
    assert!(!labels_of(&kept).contains_key(INSTANCE_UID_LABEL));

    stage.delete_instance("alices").await;
    assert_eq!(
        stage.value_of("settings").await.as_deref(),
        Some("the admin's")
    );
    stage.cleanup().await;
}

#[tokio::test]
async fn another_instances_object_is_a_conflict_and_the_owner_stays_healthy() {
    let stage = Stage::shipped("trust-adopt-other", "AllowAll", Webhooks::On).await;
    stage
        .config_map_content("first", &[("shared", "first")])
        .await;
    stage
        .config_map_content("second", &[("shared", "second")])
        .await;
    stage
        .create(&stage.admin(), stage.instance("owner", "owner-v1", "first"))
        .await
        .unwrap();
    stage.installed("owner").await;
    stage
        .create(
            &stage.admin(),
            stage.instance("intruder", "intruder-v1", "second"),
        )
        .await
        .unwrap();
    let failed = stage
        .wait("intruder", "the conflict reported", |i| {
            reason_is(i, ConditionType::Installed, "InstallFailed")
        })
        .await;
    let message = &failed.condition(ConditionType::Installed).unwrap().message;
    assert!(
        message.contains(&format!(
            "ConfigMap/{}/shared belongs to Instance {}",
            stage.namespace(),
            stage.scope.name("owner")
        )),
        "{message}"
    );
    assert_eq!(stage.value_of("shared").await.as_deref(), Some("first"));
    let owner = stage
        .instances()
        .get(&stage.scope.name("owner"))
        .await
        .unwrap();
    assert!(condition_is(&owner, ConditionType::Healthy, "True"));

    // The intruder goes; the owner's object stays.
    stage.delete_instance("intruder").await;
    assert_eq!(stage.value_of("shared").await.as_deref(), Some("first"));
    stage.cleanup().await;
}

#[tokio::test]
async fn someone_who_may_write_the_object_hands_it_over_explicitly() {
    let stage = Stage::shipped("trust-adopt-explicit", "AllowAll", Webhooks::On).await;
    // An object another tool installed, running.
    let existing = ConfigMap {
        metadata: ObjectMeta {
            name: Some("legacy".into()),
            ..ObjectMeta::default()
        },
        data: Some([("value".to_owned(), "from helm".to_owned())].into()),
        ..ConfigMap::default()
    };
    let created = stage
        .config_maps()
        .create(&PostParams::default(), &existing)
        .await
        .unwrap();
    stage
        .content(
            "content",
            &[(
                "legacy.yaml",
                stage.config_map_manifest("legacy", "from pakket"),
            )],
        )
        .await;
    stage
        .create(
            &stage.admin(),
            stage.instance("takeover", "takeover-v1", "content"),
        )
        .await
        .unwrap();
    stage
        .wait("takeover", "the conflict reported", |i| {
            reason_is(i, ConditionType::Installed, "InstallFailed")
        })
        .await;

    // The object's owner offers it to the Instance.
    let offer = json!({ "metadata": { "annotations": { ADOPT_ANNOTATION: stage.scope.name("takeover") } } });
    stage
        .config_maps()
        .patch("legacy", &PatchParams::default(), &Patch::Merge(&offer))
        .await
        .unwrap();
    // A spec change is not needed: the next retry adopts.
    let installed = stage
        .wait("takeover", "adopted and installed", |i| {
            condition_is(i, ConditionType::Installed, "True")
        })
        .await;
    // The adoption is told in an Event of its own (the condition's message
    // may be rewritten by a later re-apply with nothing to adopt, or the
    // adopting reconcile's status write lost to a conflict).
    eventually("an Event telling of the adoption", || async {
        instance_events(&stage.admin(), &stage.scope.name("takeover"))
            .await
            .iter()
            .any(|event| {
                event
                    .message
                    .as_deref()
                    .is_some_and(|note| note.contains("adopted 1 offered to it"))
            })
    })
    .await;
    let adopted = stage.config_maps().get("legacy").await.unwrap();
    assert_eq!(
        adopted.metadata.uid, created.metadata.uid,
        "the same object, never deleted"
    );
    assert_eq!(
        adopted.data.unwrap().get("value").map(String::as_str),
        Some("from pakket")
    );
    assert!(
        !adopted
            .metadata
            .annotations
            .unwrap_or_default()
            .contains_key(ADOPT_ANNOTATION),
        "the offer is used up"
    );
    assert_eq!(
        adopted
            .metadata
            .labels
            .unwrap_or_default()
            .get(INSTANCE_UID_LABEL),
        installed.metadata.uid.as_ref()
    );
    stage.cleanup().await;
}
