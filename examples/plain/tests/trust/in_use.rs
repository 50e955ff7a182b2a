//! An Instance whose APIs are in use is not deleted, a pivot to content
//! without one of its CRDs is refused while that CRD is in use (unless an
//! admin overrides it for that pivot), and even then the CRD is never
//! deleted while custom resources of it exist: deleting a CRD
//! deletes every one of its objects, which belong to the people who made
//! them, not to whoever may delete the Instance.

use k8s_openapi::api::authorization::v1::{
    ResourceAttributes, SubjectAccessReview, SubjectAccessReviewSpec,
};
use k8s_openapi::api::rbac::v1::ClusterRole;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{
    Api, ApiResource, DeleteParams, DynamicObject, ListParams, Patch, PatchParams, PostParams,
};
use pakket_testkit::eventually;
use serde_json::json;

use crate::support::{Stage, Webhooks, refused_with, rule};

/// A CRD of a group only this test uses.
fn crd_manifest(group: &str) -> String {
    format!(
        "apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.{group}
spec:
  group: {group}
  scope: Namespaced
  names: {{kind: Widget, listKind: WidgetList, plural: widgets, singular: widget}}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema: {{type: object, x-kubernetes-preserve-unknown-fields: true}}
"
    )
}

#[tokio::test]
async fn an_instance_in_use_is_neither_deleted_nor_pivoted_off_its_crd_unless_an_admin_overrides() {
    // The webhooks run as their ServiceAccount, with `deploy/`'s RBAC: no
    // `list` on every resource, only on the kinds of Pakket's CRDs.
    let stage = Stage::new("trust-in-use", "AllowAll", Webhooks::Shipped).await;
    let group = format!("{}.test.pakket.dev", stage.scope.id);
    let crd_name = format!("widgets.{group}");
    stage
        .content(
            "v1",
            &[
                ("crd.yaml", crd_manifest(&group)),
                ("a.yaml", stage.config_map_manifest("a", "v1")),
            ],
        )
        .await;
    stage.config_map_content("v2", &[("a", "v2")]).await;
    stage
        .create(&stage.admin(), stage.instance("api", "api-v1", "v1"))
        .await
        .unwrap();
    let installed = stage.installed("api").await;
    assert_eq!(
        installed.status.unwrap().provides,
        [format!("{group}/v1 Widget")],
        "the Instance says what it provides"
    );
    let crds: Api<CustomResourceDefinition> = Api::all(stage.admin());
    // The CRD got its reader role: list on Widgets alone, owned by the CRD,
    // aggregated into what the webhooks hold; and they may read no Secret.
    let reader = format!("pakket-in-use:{crd_name}");
    let role = Api::<ClusterRole>::all(stage.admin())
        .get(&reader)
        .await
        .expect("the CRD's reader role");
    let crd_uid = crds.get(&crd_name).await.unwrap().metadata.uid;
    assert!(
        role.metadata
            .owner_references
            .iter()
            .flatten()
            .any(|owner| Some(&owner.uid) == crd_uid.as_ref()),
        "owned by the CRD"
    );
    let webhooks = "system:serviceaccount:pakket-system:pakket-webhooks";
    eventually("the webhooks may list Widgets (aggregated)", || async {
        may(&stage, webhooks, "list", &group, "widgets").await
    })
    .await;
    assert!(!may(&stage, webhooks, "list", "", "secrets").await);
    assert!(!may(&stage, webhooks, "list", "apps", "deployments").await);
    let widget = ApiResource {
        group: group.clone(),
        version: "v1".into(),
        api_version: format!("{group}/v1"),
        kind: "Widget".into(),
        plural: "widgets".into(),
    };
    // Alice may delete and annotate Instances, and make Widgets.
    stage
        .grant(
            "alice-instances",
            "alice",
            vec![rule(
                "core.pakket.dev",
                "instances",
                &["get", "patch", "delete"],
                &[],
            )],
        )
        .await;
    stage
        .grant(
            "alice-widgets",
            "alice",
            vec![rule(
                &group,
                "widgets",
                &["get", "list", "create", "delete"],
                &[],
            )],
        )
        .await;
    let alice = stage.client_as("alice").await;
    let alice_widgets: Api<DynamicObject> =
        Api::namespaced_with(alice.clone(), stage.namespace(), &widget);
    for name in ["first", "second"] {
        let object: DynamicObject = serde_json::from_value(json!({
            "apiVersion": format!("{group}/v1"), "kind": "Widget",
            "metadata": { "name": name, "labels": stage.scope.labels() },
        }))
        .unwrap();
        let mut made = false;
        for _ in 0..100 {
            // The CRD is being established, and alice's rights propagating.
            if alice_widgets
                .create(&PostParams::default(), &object)
                .await
                .is_ok()
            {
                made = true;
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        }
        assert!(made, "alice makes Widget {name}");
    }
    let name = stage.scope.name("api");
    let alice_instances: Api<pakket_api::Instance> = Api::all(alice.clone());

    // Deleting the Instance would delete the CRD and alice's Widgets.
    let refused = alice_instances
        .delete(&name, &DeleteParams::default())
        .await;
    assert!(refused_with(&refused, 403), "{refused:?}");
    let message = format!("{refused:?}");
    assert!(
        message.contains(&format!(
            "2 Widget objects in namespace {}",
            stage.namespace()
        )),
        "the users are named: {message}"
    );
    assert!(stage.instances().get_opt(&name).await.unwrap().is_some());
    assert!(crds.get_opt(&crd_name).await.unwrap().is_some());

    // Overriding needs the verb, which alice lacks: nothing is deleted.
    alice_instances
        .patch(
            &name,
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"annotations": {"core.pakket.dev/delete-in-use": "I want it gone"}}})),
        )
        .await
        .unwrap();
    let refused = alice_instances
        .delete(&name, &DeleteParams::default())
        .await;
    assert!(refused_with(&refused, 403), "{refused:?}");
    assert!(
        format!("{refused:?}").contains("delete-in-use"),
        "the verb is named: {refused:?}"
    );
    assert!(stage.instances().get_opt(&name).await.unwrap().is_some());
    stage
        .instances()
        .patch(
            &name,
            &PatchParams::default(),
            &Patch::Merge(
                json!({"metadata": {"annotations": {"core.pakket.dev/delete-in-use": null}}}),
            ),
        )
        .await
        .unwrap();

    // A pivot to content without the CRD is refused while Widgets
    // exist: nothing is applied, v1 keeps running, the users are named.
    let v2 = stage.scope.name("api-v2");
    stage
        .instances()
        .patch(
            &name,
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"bundle": {
                "name": v2, "spec": stage.bundle_spec("v2"),
            }}})),
        )
        .await
        .unwrap();
    let refused = stage
        .wait("api", "the pivot refused", |instance| {
            instance
                .condition(pakket_api::ConditionType::Installed)
                .is_some_and(|c| c.status == "False" && c.message.contains("drops"))
        })
        .await;
    let message = &refused
        .condition(pakket_api::ConditionType::Installed)
        .unwrap()
        .message;
    assert!(
        message.contains(&format!(
            "Bundle {v2} drops CustomResourceDefinition {crd_name}, which is in use: 2 Widget objects in namespace {}",
            stage.namespace()
        )) && message.contains("core.pakket.dev/pivot-in-use"),
        "the users and the way out are named: {message}"
    );
    assert_eq!(
        refused.status.as_ref().unwrap().active_bundle.as_deref(),
        Some(stage.scope.name("api-v1").as_str()),
        "v1 keeps running"
    );
    assert_eq!(
        stage.value_of("a").await.as_deref(),
        Some("v1"),
        "nothing applied"
    );
    assert!(crds.get_opt(&crd_name).await.unwrap().is_some());

    // Overriding the refusal needs the verb too: alice cannot set it.
    let refused = alice_instances
        .patch(
            &name,
            &PatchParams::default(),
            &Patch::Merge(
                json!({"metadata": {"annotations": {"core.pakket.dev/pivot-in-use": v2}}}),
            ),
        )
        .await;
    assert!(refused_with(&refused, 403), "{refused:?}");
    assert!(
        format!("{refused:?}").contains("delete-in-use"),
        "the verb is named: {refused:?}"
    );
    // An override naming another Bundle covers nothing.
    let annotate = |bundle: String| {
        let instances = stage.instances();
        let name = name.clone();
        async move {
            instances
                .patch(
                    &name,
                    &PatchParams::default(),
                    &Patch::Merge(json!({"metadata": {"annotations": {"core.pakket.dev/pivot-in-use": bundle}}})),
                )
                .await
                .unwrap();
        }
    };
    annotate(stage.scope.name("api-v3")).await;
    tokio::time::sleep(std::time::Duration::from_secs(3)).await;
    assert_eq!(
        stage.value_of("a").await.as_deref(),
        Some("v1"),
        "still refused"
    );

    // The admin's override for this very pivot: it goes through, the CRD
    // stays while Widgets exist, and a Warning Event says so.
    annotate(v2.clone()).await;
    let pivoted = stage
        .wait("api", "pivoted, the CRD kept", |instance| {
            instance
                .condition(pakket_api::ConditionType::Installed)
                .is_some_and(|c| {
                    c.status == "True"
                        && c.message
                            .contains(&format!("kept CustomResourceDefinition {crd_name}"))
                })
        })
        .await;
    let message = &pivoted
        .condition(pakket_api::ConditionType::Installed)
        .unwrap()
        .message;
    assert!(message.contains("2 Widget objects exist"), "{message}");
    assert!(crds.get_opt(&crd_name).await.unwrap().is_some(), "kept");
    assert_eq!(
        alice_widgets
            .list(&ListParams::default())
            .await
            .unwrap()
            .items
            .len(),
        2,
        "alice's Widgets are all there"
    );
    assert_eq!(stage.value_of("a").await.as_deref(), Some("v2"));
    eventually("the override is recorded", || async {
        pakket_testkit::instance_events(&stage.admin(), &name)
            .await
            .iter()
            .any(|event| {
                event.reason.as_deref() == Some("PivotedInUse")
                    && event.message.as_deref().is_some_and(|m| {
                        m.contains("2 Widget objects") && m.contains("pivoting anyway")
                    })
            })
    })
    .await;

    // Once the Widgets are gone, the next pass (within seconds) deletes
    // the CRD; then the Instance is no longer in use and goes.
    for widget in ["first", "second"] {
        alice_widgets
            .delete(widget, &DeleteParams::default())
            .await
            .unwrap();
    }
    eventually("the CRD left by the pivot is deleted", || async {
        crds.get_opt(&crd_name).await.unwrap().is_none()
    })
    .await;
    eventually("its reader role goes with it", || async {
        Api::<ClusterRole>::all(stage.admin())
            .get_opt(&reader)
            .await
            .unwrap()
            .is_none()
    })
    .await;
    stage.delete_instance("api").await;

    // An admin (who holds every verb) overrides; an Event says so.
    stage
        .create(&stage.admin(), stage.instance("api2", "api2-v1", "v1"))
        .await
        .unwrap();
    stage.installed("api2").await;
    let admin_widgets: Api<DynamicObject> =
        Api::namespaced_with(stage.admin(), stage.namespace(), &widget);
    let object: DynamicObject = serde_json::from_value(json!({
        "apiVersion": format!("{group}/v1"), "kind": "Widget",
        "metadata": { "name": "third", "labels": stage.scope.labels() },
    }))
    .unwrap();
    eventually("a Widget is made", || async {
        admin_widgets
            .create(&PostParams::default(), &object)
            .await
            .is_ok()
    })
    .await;
    let name2 = stage.scope.name("api2");
    assert!(refused_with(
        &stage
            .instances()
            .delete(&name2, &DeleteParams::default())
            .await,
        403
    ));
    stage
        .instances()
        .patch(
            &name2,
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"annotations": {"core.pakket.dev/delete-in-use": "retiring widgets"}}})),
        )
        .await
        .unwrap();
    stage.delete_instance("api2").await;
    let events: Api<k8s_openapi::api::core::v1::Event> = Api::namespaced(stage.admin(), "default");
    eventually("the override is recorded", || async {
        events
            .list(&ListParams::default())
            .await
            .unwrap()
            .items
            .iter()
            .any(|event| {
                event.involved_object.name.as_deref() == Some(name2.as_str())
                    && event.reason.as_deref() == Some("DeletedInUse")
                    && event
                        .message
                        .as_deref()
                        .is_some_and(|m| m.contains("retiring widgets"))
            })
    })
    .await;
    stage.cleanup().await;
}

/// Whether `user` may `verb` `resource` of `group` cluster-wide (a
/// SubjectAccessReview, asked as the admin).
async fn may(stage: &Stage, user: &str, verb: &str, group: &str, resource: &str) -> bool {
    let review = SubjectAccessReview {
        spec: SubjectAccessReviewSpec {
            user: Some(user.to_owned()),
            groups: Some(vec!["system:serviceaccounts".to_owned()]),
            resource_attributes: Some(ResourceAttributes {
                verb: Some(verb.to_owned()),
                group: Some(group.to_owned()),
                resource: Some(resource.to_owned()),
                ..ResourceAttributes::default()
            }),
            ..SubjectAccessReviewSpec::default()
        },
        ..SubjectAccessReview::default()
    };
    Api::<SubjectAccessReview>::all(stage.admin())
        .create(&PostParams::default(), &review)
        .await
        .unwrap()
        .status
        .is_some_and(|status| status.allowed)
}
