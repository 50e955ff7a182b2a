//! How a first install writes, on the real control plane: objects are
//! created (a create fails if the object exists, so nothing someone else
//! made is ever taken over, not even one made a moment before), a conflict
//! found half way leaves nothing behind, and created objects still lose the
//! fields a later Bundle drops.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::PostParams;
use pakket_api::ConditionType;
use pakket_testkit::{condition_is, reason_is, wait_for_instance as wait_for};

mod plain_fixture;

use plain_fixture::Fixture;

fn config_map(namespace: &str, name: &str, data: &[(&str, &str)]) -> String {
    let mut text = format!(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\n  namespace: {namespace}\ndata:\n"
    );
    for (key, value) in data {
        text.push_str(&format!("  {key}: \"{value}\"\n"));
    }
    text
}

#[tokio::test]
async fn a_conflict_found_while_creating_leaves_nothing_behind() {
    let fixture = Fixture::new("create-conflict", "AllowAll").await;
    let namespace = fixture.scope.namespace.clone();
    // Someone else's ConfigMap, third in the Bundle's order.
    let theirs = ConfigMap {
        metadata: kube::api::ObjectMeta {
            name: Some("taken".into()),
            ..Default::default()
        },
        data: Some(BTreeMap::from([("owner".into(), "someone else".into())])),
        ..Default::default()
    };
    fixture
        .config_maps()
        .create(&PostParams::default(), &theirs)
        .await
        .unwrap();
    fixture
        .files(
            "content",
            &[
                ("a.yaml", config_map(&namespace, "early-1", &[("v", "1")])),
                ("b.yaml", config_map(&namespace, "early-2", &[("v", "2")])),
                (
                    "c.yaml",
                    config_map(&namespace, "taken", &[("owner", "me")]),
                ),
                ("d.yaml", config_map(&namespace, "late", &[("v", "4")])),
            ],
        )
        .await;
    let (instances, name) = fixture
        .create_instance("bundle", fixture.bundle_spec("content", "file://content"))
        .await;
    let failed = wait_for(&instances, &name, "conflict", |i| {
        reason_is(i, ConditionType::Installed, "InstallFailed")
    })
    .await;
    let message = &failed.condition(ConditionType::Installed).unwrap().message;
    assert!(
        message.contains("ConfigMap") && message.contains("taken"),
        "the conflict names the object: {message}"
    );
    assert!(
        message.contains("not managed by Pakket"),
        "and whose it is: {message}"
    );
    // Tools read the same from status.causes, not from the words.
    let causes = &failed.status.as_ref().unwrap().causes;
    let cause = pakket_api::cause::cause_of(causes, "Installed", "InstallFailed")
        .unwrap_or_else(|| panic!("a cause beside InstallFailed: {causes:?}"));
    assert_eq!(cause.kind, pakket_api::CauseKind::ObjectNotManaged);
    assert_eq!(
        cause
            .objects
            .iter()
            .map(|object| object.object.as_str())
            .collect::<Vec<_>>(),
        [format!("ConfigMap/{namespace}/taken").as_str()],
        "{cause:?}"
    );
    for created_then_removed in ["early-1", "early-2", "late"] {
        assert!(
            fixture
                .config_maps()
                .get_opt(created_then_removed)
                .await
                .unwrap()
                .is_none(),
            "{created_then_removed} is not left behind"
        );
    }
    let taken = fixture.config_maps().get("taken").await.unwrap();
    assert_eq!(
        taken.data.unwrap().get("owner").map(String::as_str),
        Some("someone else"),
        "their object is untouched"
    );
    assert!(
        !taken
            .metadata
            .labels
            .unwrap_or_default()
            .contains_key("core.pakket.dev/instance-uid"),
        "and not labelled as the Instance's"
    );
    fixture.scope.cleanup().await;
}

#[tokio::test]
async fn a_field_the_next_bundle_drops_is_removed_from_a_created_object() {
    let fixture = Fixture::new("create-then-drop", "AllowAll").await;
    let namespace = fixture.scope.namespace.clone();
    fixture
        .files(
            "content-v1",
            &[(
                "a.yaml",
                config_map(&namespace, "settings", &[("kept", "1"), ("dropped", "2")]),
            )],
        )
        .await;
    let (instances, name) = fixture.install("bundle-v1", "content-v1").await;
    let created = fixture.config_maps().get("settings").await.unwrap();
    assert_eq!(created.data.unwrap().len(), 2);

    fixture
        .files(
            "content-v2",
            &[(
                "a.yaml",
                config_map(&namespace, "settings", &[("kept", "1")]),
            )],
        )
        .await;
    fixture.pivot("bundle-v2", "content-v2").await;
    wait_for(&instances, &name, "v2", |i| {
        i.status.as_ref().and_then(|s| s.active_bundle.clone())
            == Some(fixture.scope.name("bundle-v2"))
            && condition_is(i, ConditionType::Installed, "True")
    })
    .await;
    let data = fixture
        .config_maps()
        .get("settings")
        .await
        .unwrap()
        .data
        .unwrap_or_default();
    assert_eq!(
        data.keys().map(String::as_str).collect::<Vec<_>>(),
        ["kept"],
        "the field v2 dropped is gone"
    );
    fixture.scope.cleanup().await;
}

#[tokio::test]
async fn a_provisioner_claims_the_classes_that_name_it_and_no_others() {
    use kube::api::Api;
    use pakket_api::{ProvisionerClass, ProvisionerClassSpec};
    let fixture = Fixture::new("claim", "AllowAll").await;
    let classes: Api<ProvisionerClass> = Api::all(fixture.scope.client.clone());
    let class = |suffix: &str, provisioner: String| ProvisionerClass {
        metadata: fixture.scope.meta(suffix),
        spec: ProvisionerClassSpec {
            provisioner,
            parameters: None,
        },
        status: None,
    };
    // A class whose id has a typo, then one more for this provisioner: once
    // the second is claimed, the watch has delivered the first.
    classes
        .create(
            &PostParams::default(),
            &class("typo", format!("{}x", fixture.id)),
        )
        .await
        .unwrap();
    classes
        .create(&PostParams::default(), &class("second", fixture.id.clone()))
        .await
        .unwrap();
    for suffix in ["class", "second"] {
        pakket_testkit::eventually("the provisioner claims its class", || async {
            classes
                .get(&fixture.scope.name(suffix))
                .await
                .unwrap()
                .is_claimed()
        })
        .await;
    }
    let claim = classes
        .get(&fixture.scope.name("class"))
        .await
        .unwrap()
        .status
        .unwrap()
        .claimed
        .unwrap();
    assert_eq!(claim.provisioner, fixture.id);
    // Its claim is a patch in a task of its own: give a wrong one a moment.
    tokio::time::sleep(std::time::Duration::from_secs(1)).await;
    let typo = classes.get(&fixture.scope.name("typo")).await.unwrap();
    assert!(
        typo.status.and_then(|status| status.claimed).is_none(),
        "a class naming another id is not claimed"
    );
    fixture.scope.cleanup().await;
}
