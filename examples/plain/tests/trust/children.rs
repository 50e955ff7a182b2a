//! A child is judged by the person who asked for its parent, never by the
//! provisioner: content holding Pakket's own kinds (an Instance, a
//! ProvisionerClass) is refused by the runtime unless the provisioner
//! declares that it makes them, and the plain provisioner makes none. An
//! Instance in content would otherwise be written with the provisioner's
//! rights, recorded as the provisioner's own request, under a class its
//! requester may not use.

use kube::api::{Api, PostParams};
use pakket_api::{ConditionType, Instance, ProvisionerClass, ProvisionerClassSpec};
use pakket_testkit::{condition_is, reason_is};
use serde_json::json;

use crate::support::{Stage, Webhooks, rule};

#[tokio::test]
async fn pakket_kinds_in_content_are_refused_by_name_and_nothing_of_the_content_is_written() {
    // The admin lets alice install plain content by herself (AllowAll);
    // the provisioner runs with the rights deploy/ gives it.
    let stage = Stage::shipped("trust-children", "AllowAll", Webhooks::On).await;
    stage.grant_requester("alice").await;
    stage
        .grant(
            "alice-content",
            "alice",
            vec![rule("", "configmaps", &["get"], &["smuggler", "honest"])],
        )
        .await;
    // A second class of the same provisioner, approving everything, that
    // alice may not use.
    let open = stage.scope.name("open");
    Api::<ProvisionerClass>::all(stage.admin())
        .create(
            &PostParams::default(),
            &ProvisionerClass {
                metadata: stage.scope.meta("open"),
                spec: ProvisionerClassSpec {
                    provisioner: stage.id.clone(),
                    parameters: Some(
                        json!({ "approval": "AllowAll" })
                            .as_object()
                            .cloned()
                            .unwrap(),
                    ),
                },
                status: None,
            },
        )
        .await
        .unwrap();

    // alice's content carries, beside a ConfigMap, an Instance of the open
    // class (whose own content could be anything) and a class of her own.
    let child = stage.scope.name("smuggled-child");
    let class_of_her_own = stage.scope.name("hers");
    let child_manifest = format!(
        "apiVersion: core.pakket.dev/v1alpha1\nkind: Instance\nmetadata:\n  name: {child}\nspec:\n  class: {open}\n  bundle:\n    name: {child}\n    spec:\n      class: {open}\n      refs: [\"file://content\"]\n      volumeMounts:\n      - mountPath: /content\n        configMap: {{name: honest, namespace: {namespace}}}\n",
        namespace = stage.namespace()
    );
    let class_manifest = format!(
        "apiVersion: core.pakket.dev/v1alpha1\nkind: ProvisionerClass\nmetadata:\n  name: {class_of_her_own}\nspec:\n  provisioner: {}\n  parameters: {{approval: AllowAll}}\n",
        stage.id
    );
    stage
        .content(
            "smuggler",
            &[
                (
                    "carried.yaml",
                    stage.config_map_manifest("carried", "smuggled"),
                ),
                ("child.yaml", child_manifest),
                ("class.yaml", class_manifest),
            ],
        )
        .await;
    stage
        .config_map_content("honest", &[("welcome", "alice's")])
        .await;

    let alice = stage.client_as("alice").await;
    stage
        .create(&alice, stage.instance("smuggle", "smuggle", "smuggler"))
        .await
        .unwrap();
    let refused = stage
        .wait("smuggle", "the content refused", |i| {
            reason_is(i, ConditionType::Installed, "RenderFailed")
        })
        .await;
    let message = &refused.condition(ConditionType::Installed).unwrap().message;
    assert!(
        message.contains(&format!("Instance/{child}"))
            || message.contains(&format!("ProvisionerClass/{class_of_her_own}")),
        "the refusal names the object: {message}"
    );
    assert!(message.contains("does not make such objects"), "{message}");
    assert!(
        !condition_is(&refused, ConditionType::Installed, "True"),
        "nothing installed"
    );
    // Give a wrongly written child every chance to appear.
    tokio::time::sleep(std::time::Duration::from_secs(3)).await;
    assert!(
        Api::<Instance>::all(stage.admin())
            .get_opt(&child)
            .await
            .unwrap()
            .is_none(),
        "no child Instance was written"
    );
    assert!(
        Api::<ProvisionerClass>::all(stage.admin())
            .get_opt(&class_of_her_own)
            .await
            .unwrap()
            .is_none(),
        "no ProvisionerClass was written"
    );
    assert_eq!(
        stage.value_of("carried").await,
        None,
        "nothing of the content was written"
    );

    // The legitimate path: the same kind of content without Pakket's
    // kinds installs by policy.
    stage
        .create(&alice, stage.instance("honest", "honest", "honest"))
        .await
        .unwrap();
    stage.installed("honest").await;
    assert_eq!(stage.value_of("welcome").await.as_deref(), Some("alice's"));
    stage.cleanup().await;
}
