//! What the controller does when things change around an installed Instance,
//! on the real control plane: hand edits and deletions of installed objects
//! are put back, `deletionPolicy: Orphan` leaves objects behind, Events
//! tell the story, a denial stands, a changed spec needs approving again,
//! the selector finds the earlier Bundles, and `approval: UserPermission`
//! installs only what the Instance's creator may install, and a bad class
//! parameter is reported until the class is fixed.

use std::collections::BTreeMap;

use k8s_openapi::api::rbac::v1::{Role, RoleBinding};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use kube::ResourceExt;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use pakket_api::{
    Bundle, CREATED_BY_ANNOTATION, ConditionType, CreatorRecord, DeletionPolicy, Instance,
    ProvisionerClass,
};
use pakket_runtime::kernel::apply::{BUNDLE_LABEL, INSTANCE_LABEL};
use pakket_runtime::kernel::controller;
use pakket_testkit::{
    condition_is, eventually, instance_events, reason_is, wait_for_instance as wait_for,
};
use serde_json::json;

mod plain_fixture;

use plain_fixture::{Fixture, sealed, set_approval};

/// Sets the test class's parameters, as an admin would by hand.
async fn patch_class(fixture: &Fixture, parameters: serde_json::Value) {
    let classes: Api<ProvisionerClass> = Api::all(fixture.scope.client.clone());
    let patch = json!({ "spec": { "parameters": parameters } });
    classes
        .patch(
            &fixture.scope.name("class"),
            &PatchParams::default(),
            &Patch::Merge(&patch),
        )
        .await
        .unwrap();
}

/// A class made with `parameters` (made with them, not patched after: a
/// patch races the provisioner's watch of the class) and an Instance of it
/// whose content is ConfigMap `object`, once the Instance's `kind`
/// condition says `reason`: the fixture, the Instances, the Instance's
/// name and that condition's message. Nothing of it is applied.
async fn held_by_class(
    test: &str,
    parameters: serde_json::Value,
    object: &str,
    kind: ConditionType,
    reason: &str,
) -> (Fixture, Api<Instance>, String, String) {
    let fixture = Fixture::without_class(test).await;
    fixture.create_class_with(parameters).await;
    fixture.content("content", &[(object, "v1")]).await;
    let (instances, name) = fixture
        .create_instance("bundle", fixture.bundle_spec("content", "file://content"))
        .await;
    let held = wait_for(&instances, &name, reason, |i| reason_is(i, kind, reason)).await;
    let message = held.condition(kind).unwrap().message.clone();
    assert_eq!(fixture.value_of(object).await, None, "nothing applied");
    (fixture, instances, name, message)
}

async fn installed(fixture: &Fixture, content: &[(&str, &str)]) -> (Api<Instance>, String) {
    fixture.content("content", content).await;
    let (instances, name) = fixture
        .create_instance("bundle", fixture.bundle_spec("content", "file://content"))
        .await;
    wait_for(&instances, &name, "install", |i| {
        condition_is(i, ConditionType::Healthy, "True")
    })
    .await;
    (instances, name)
}

#[tokio::test]
async fn an_installed_object_edited_or_deleted_by_hand_is_put_back() {
    let fixture = Fixture::new("drift", "AllowAll").await;
    let (_, _) = installed(&fixture, &[("watched", "original")]).await;
    let config_maps = fixture.config_maps();

    // Someone edits the installed ConfigMap under another field manager.
    let edit = json!({ "data": { "value": "edited by hand" } });
    config_maps
        .patch(
            "watched",
            &PatchParams::apply("someone-else").force(),
            &Patch::Apply(&json!({
                "apiVersion": "v1", "kind": "ConfigMap",
                "metadata": { "name": "watched" },
                "data": edit["data"],
            })),
        )
        .await
        .unwrap();
    eventually("the hand edit is reverted", || async {
        fixture.value_of("watched").await.as_deref() == Some("original")
    })
    .await;

    // And deletes it.
    config_maps
        .delete("watched", &DeleteParams::default())
        .await
        .unwrap();
    eventually("the deleted object is recreated", || async {
        fixture.value_of("watched").await.as_deref() == Some("original")
    })
    .await;
    fixture.scope.cleanup().await;
}

#[tokio::test]
async fn a_removed_instance_label_and_a_scaled_deployment_are_put_back_within_seconds() {
    use k8s_openapi::api::apps::v1::Deployment;
    let fixture = Fixture::new("drift-scale", "AllowAll").await;
    let namespace = fixture.scope.namespace.clone();
    let deployment = format!(
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\n  namespace: {namespace}\n\
         spec:\n  replicas: 1\n  selector:\n    matchLabels: {{app: web}}\n  template:\n    \
         metadata:\n      labels: {{app: web}}\n    spec:\n      containers:\n      - name: web\n        \
         image: registry.k8s.io/pause:3.10\n"
    );
    let config_map = format!(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: labelled\n  namespace: {namespace}\ndata:\n  value: v\n"
    );
    fixture
        .files(
            "content",
            &[("web.yaml", deployment), ("cm.yaml", config_map)],
        )
        .await;
    let (instances, name) = fixture
        .create_instance("bundle", fixture.bundle_spec("content", "file://content"))
        .await;
    // Installed is what this test waits for (whether the Deployment
    // becomes Available depends on the control plane having nodes).
    wait_for(&instances, &name, "install", |i| {
        condition_is(i, ConditionType::Installed, "True")
    })
    .await;

    // `kubectl scale` writes the scale subresource, which is the spec.
    let deployments: Api<Deployment> = Api::namespaced(fixture.scope.client.clone(), &namespace);
    deployments
        .patch_scale(
            "web",
            &PatchParams::default(),
            &Patch::Merge(&json!({ "spec": { "replicas": 5 } })),
        )
        .await
        .unwrap();
    let replicas = || async {
        deployments
            .get("web")
            .await
            .unwrap()
            .spec
            .and_then(|spec| spec.replicas)
    };
    assert_eq!(replicas().await, Some(5));
    eventually("the scale is put back", || async {
        replicas().await == Some(1)
    })
    .await;

    // Someone removes the Instance label: the object leaves the drift
    // watch's selector, and is still put back.
    let config_maps = fixture.config_maps();
    config_maps
        .patch(
            "labelled",
            &PatchParams::default(),
            &Patch::Merge(&json!({ "metadata": { "labels": { INSTANCE_LABEL: null } } })),
        )
        .await
        .unwrap();
    eventually("the Instance label is put back", || async {
        config_maps
            .get("labelled")
            .await
            .unwrap()
            .labels()
            .get(INSTANCE_LABEL)
            == Some(&name)
    })
    .await;
    fixture.scope.cleanup().await;
}

#[tokio::test]
async fn an_object_taken_over_by_someone_else_is_reported_within_seconds() {
    let fixture = Fixture::new("drift-takeover", "AllowAll").await;
    let (instances, name) = installed(&fixture, &[("coveted", "original")]).await;
    // Someone re-labels the object as another Instance's: its records no
    // longer say it is this Instance's, so it is not taken back either.
    fixture
        .config_maps()
        .patch(
            "coveted",
            &PatchParams::apply("someone-else").force(),
            &Patch::Apply(&json!({
                "apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {
                    "name": "coveted",
                    "labels": { "core.pakket.dev/instance-uid": "another-instance" },
                },
            })),
        )
        .await
        .unwrap();
    let reported = wait_for(&instances, &name, "the takeover reported", |i| {
        reason_is(i, ConditionType::Healthy, "ObjectsUnhealthy")
            && reason_is(i, ConditionType::Installed, "InstallFailed")
    })
    .await;
    let healthy = reported.condition(ConditionType::Healthy).unwrap();
    assert!(
        healthy
            .message
            .contains("objects this Instance installed are no longer its own")
            && healthy.message.contains("coveted"),
        "{}",
        healthy.message
    );
    let causes = &reported.status.as_ref().unwrap().causes;
    let cause = pakket_api::cause::cause_of(causes, "Healthy", "ObjectsUnhealthy")
        .unwrap_or_else(|| panic!("a cause beside ObjectsUnhealthy: {causes:?}"));
    assert!(
        cause
            .objects
            .iter()
            .any(|object| object.object.ends_with("/coveted")),
        "the object taken over, for tools: {cause:?}"
    );
    let labels = fixture.config_maps().get("coveted").await.unwrap();
    assert_eq!(
        labels
            .labels()
            .get("core.pakket.dev/instance-uid")
            .map(String::as_str),
        Some("another-instance"),
        "the runtime did not take the object back"
    );
    fixture.scope.cleanup().await;
}

#[tokio::test]
async fn orphan_policy_leaves_the_objects_and_events_tell_the_story() {
    let fixture = Fixture::new("orphan", "AllowAll").await;
    fixture.content("content", &[("kept", "still here")]).await;
    let instances = fixture.instances();
    let name = fixture.scope.name("instance");
    let mut instance = fixture.instance("bundle", fixture.bundle_spec("content", "file://content"));
    instance.spec.deletion_policy = DeletionPolicy::Orphan;
    instances
        .create(&PostParams::default(), &instance)
        .await
        .unwrap();
    wait_for(&instances, &name, "install", |i| {
        condition_is(i, ConditionType::Healthy, "True")
    })
    .await;

    instances
        .delete(&name, &DeleteParams::default())
        .await
        .unwrap();
    eventually("the Instance is gone", || async {
        instances.get_opt(&name).await.unwrap().is_none()
    })
    .await;
    assert_eq!(
        fixture.value_of("kept").await.as_deref(),
        Some("still here"),
        "an orphaned object stays"
    );
    let kept = fixture.config_maps().get("kept").await.unwrap();
    assert!(
        !kept.labels().contains_key(INSTANCE_LABEL) && !kept.labels().contains_key(BUNDLE_LABEL),
        "an orphaned object is no longer labelled as installed: {:?}",
        kept.labels()
    );

    let reasons = || async {
        instance_events(&fixture.scope.client, &name)
            .await
            .into_iter()
            .filter_map(|event| event.reason)
            .collect::<Vec<_>>()
    };
    eventually("an Orphaned event", || async {
        reasons().await.iter().any(|reason| reason == "Orphaned")
    })
    .await;
    let seen = reasons().await;
    assert!(
        seen.iter()
            .any(|r| r == "ObjectsHealthy" || r == "InstallSucceeded"),
        "the install is an Event too: {seen:?}"
    );
    fixture.scope.cleanup().await;
}

/// A ValidatingAdmissionPolicy (in the apiserver itself, no webhook) that
/// refuses deleting ConfigMaps named `guarded*` in `namespace`.
fn deletion_guard(name: &str, namespace: &str) -> [serde_json::Value; 2] {
    let policy = json!({
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicy",
        "metadata": { "name": name },
        "spec": {
            "failurePolicy": "Fail",
            "matchConstraints": { "resourceRules": [{
                "apiGroups": [""], "apiVersions": ["v1"],
                "operations": ["DELETE"], "resources": ["configmaps"],
            }]},
            "validations": [{
                "expression": format!(
                    "!(oldObject.metadata.namespace == '{namespace}' && oldObject.metadata.name.startsWith('guarded'))"
                ),
                "message": "guarded by the test",
            }],
        },
    });
    let binding = json!({
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicyBinding",
        "metadata": { "name": name },
        "spec": { "policyName": name, "validationActions": ["Deny"] },
    });
    [policy, binding]
}

#[tokio::test]
async fn an_object_that_cannot_be_deleted_yet_keeps_the_instance_until_it_is_gone() {
    use kube::api::DynamicObject;
    use kube::core::GroupVersionKind;
    use kube::discovery::ApiResource;

    let fixture = Fixture::new("stuck-uninstall", "AllowAll").await;
    let (instances, name) = installed(&fixture, &[("guarded", "kept"), ("free", "goes")]).await;
    let config_maps = fixture.config_maps();

    // Deleting `guarded` is refused until the policy goes, as a transient
    // conflict, a lost right or a webhook outage would refuse it.
    let guard = fixture.scope.name("guard");
    let resource = |kind: &str, plural: &str| {
        ApiResource::from_gvk_with_plural(
            &GroupVersionKind::gvk("admissionregistration.k8s.io", "v1", kind),
            plural,
        )
    };
    let policies = resource("ValidatingAdmissionPolicy", "validatingadmissionpolicies");
    let bindings = resource(
        "ValidatingAdmissionPolicyBinding",
        "validatingadmissionpolicybindings",
    );
    let [policy, binding] = deletion_guard(&guard, &fixture.scope.namespace);
    for (resource, object) in [(&policies, policy), (&bindings, binding)] {
        Api::<DynamicObject>::all_with(fixture.scope.client.clone(), resource)
            .create(
                &PostParams::default(),
                &serde_json::from_value(object).unwrap(),
            )
            .await
            .unwrap();
    }
    // The policy is in force once a canary's deletion is refused.
    let canary: k8s_openapi::api::core::v1::ConfigMap = serde_json::from_value(json!({
        "metadata": { "name": "guarded-canary" },
    }))
    .unwrap();
    eventually("the deletion guard is in force", || async {
        // Deleted while the policy was not yet loaded: made again.
        let _ = config_maps.create(&PostParams::default(), &canary).await;
        matches!(
            config_maps.delete("guarded-canary", &DeleteParams::default()).await,
            Err(kube::Error::Api(status)) if status.code != 404
        )
    })
    .await;

    instances
        .delete(&name, &DeleteParams::default())
        .await
        .unwrap();
    eventually(
        "an UninstallIncomplete Warning names the refused object",
        || async {
            instance_events(&fixture.scope.client, &name)
                .await
                .into_iter()
                .any(|event| {
                    event.reason.as_deref() == Some("UninstallIncomplete")
                        && event.type_.as_deref() == Some("Warning")
                        && event
                            .message
                            .as_deref()
                            .is_some_and(|note| note.contains("guarded"))
                })
        },
    )
    .await;
    assert!(
        instances.get_opt(&name).await.unwrap().is_some(),
        "the Instance stays while one of its objects cannot be deleted"
    );
    // Two ConfigMaps were not worth a `Deleting` write before the
    // uninstall; one that fails says so on Ready, so `kubectl wait
    // --for=condition=Ready` no longer finds the True of before.
    eventually("Ready says the Instance is being deleted", || async {
        instances
            .get(&name)
            .await
            .unwrap()
            .status
            .and_then(|status| {
                pakket_api::readiness::ready(&status.conditions)
                    .map(|ready| (ready.status.clone(), ready.reason.clone()))
            })
            == Some(("False".into(), pakket_api::readiness::DELETING.into()))
    })
    .await;
    assert_eq!(fixture.value_of("guarded").await.as_deref(), Some("kept"));
    assert_eq!(
        fixture.value_of("free").await,
        None,
        "what could be deleted is"
    );

    // The refusal lifts: the uninstall finishes by itself.
    for resource in [&bindings, &policies] {
        Api::<DynamicObject>::all_with(fixture.scope.client.clone(), resource)
            .delete(&guard, &DeleteParams::default())
            .await
            .unwrap();
    }
    eventually("the Instance and its last object are gone", || async {
        instances.get_opt(&name).await.unwrap().is_none()
            && fixture.value_of("guarded").await.is_none()
    })
    .await;
    fixture.scope.cleanup().await;
}

#[tokio::test]
async fn a_denial_stands_and_a_changed_spec_needs_approving_again() {
    let fixture = Fixture::new("denial", "Manual").await;
    fixture.content("content", &[("gated", "v1")]).await;
    fixture.content("content-v2", &[("gated", "v2")]).await;
    let (instances, name) = fixture
        .create_instance("bundle", fixture.bundle_spec("content", "file://content"))
        .await;
    wait_for(&instances, &name, "waiting for approval", |i| {
        reason_is(i, ConditionType::Approved, "ApprovalPending")
    })
    .await;

    set_approval(&instances, &name, "False", "ApprovalDenied").await;
    let denied = wait_for(&instances, &name, "the denial is reported", |i| {
        i.condition(ConditionType::Installed)
            .is_some_and(|c| c.message.contains("denied"))
    })
    .await;
    assert!(reason_is(
        &denied,
        ConditionType::Approved,
        "ApprovalDenied"
    ));
    assert_eq!(fixture.value_of("gated").await, None, "nothing applied");

    set_approval(&instances, &name, "True", "ApprovedByUser").await;
    wait_for(&instances, &name, "install after approval", |i| {
        condition_is(i, ConditionType::Installed, "True")
    })
    .await;
    assert_eq!(fixture.value_of("gated").await.as_deref(), Some("v1"));

    // Each person's decision is an Event from the provisioner, naming who
    // decided and the content.
    let decisions = || async {
        instance_events(&fixture.scope.client, &name)
            .await
            .into_iter()
            .filter(|event| event.action.as_deref() == Some("Decide"))
            .map(|event| {
                (
                    event.reason.unwrap_or_default(),
                    event.message.unwrap_or_default(),
                )
            })
            .collect::<Vec<_>>()
    };
    eventually(
        "an Event for the denial and one for the approval",
        || async {
            let seen = decisions().await;
            seen.iter().any(|(reason, _)| reason == "ApprovalDenied")
                && seen.iter().any(|(reason, message)| {
                    reason == "ApprovedByUser"
                        && message.starts_with("the test approved Bundle ")
                        && message.contains(" at sha256:")
                })
        },
    )
    .await;

    // A new Bundle is new content: the old approval does not cover it.
    let v2 = fixture.bundle_spec("content-v2", "file://content");
    let change =
        json!({ "spec": { "bundle": { "name": fixture.scope.name("bundle-v2"), "spec": v2 } } });
    instances
        .patch(&name, &PatchParams::default(), &Patch::Merge(&change))
        .await
        .unwrap();
    let pending = wait_for(&instances, &name, "approval asked again", |i| {
        reason_is(i, ConditionType::Approved, "ApprovalPending")
    })
    .await;
    let message = &pending.condition(ConditionType::Approved).unwrap().message;
    assert!(
        message.contains(&format!(
            "the last approval covered Bundle {} at sha256:",
            fixture.scope.name("bundle")
        )) && message.contains(&format!(
            "but the content to install is Bundle {} at sha256:",
            fixture.scope.name("bundle-v2")
        )),
        "{message}"
    );
    assert_eq!(
        fixture.value_of("gated").await.as_deref(),
        Some("v1"),
        "the approved content keeps running"
    );

    set_approval(&instances, &name, "True", "ApprovedByUser").await;
    eventually("the new Bundle installs once approved", || async {
        fixture.value_of("gated").await.as_deref() == Some("v2")
    })
    .await;
    fixture.scope.cleanup().await;
}

#[tokio::test]
async fn a_pivot_marks_the_bundles_this_instance_had_active_and_no_others() {
    let fixture = Fixture::new("selector", "AllowAll").await;
    fixture.content("content", &[("current", "v1")]).await;
    fixture.content("content-v2", &[("current", "v2")]).await;
    let bundles: Api<Bundle> = Api::all(fixture.scope.client.clone());
    let mut labels = fixture.scope.labels();
    labels.insert("app".into(), "selected".into());
    // A Bundle the selector matches but this Instance never had active.
    let mut stranger = Bundle::new(
        &fixture.scope.name("stranger"),
        fixture.bundle_spec("content", "file://content"),
    );
    stranger.metadata.labels = Some(labels.clone());
    bundles
        .create(&PostParams::default(), &stranger)
        .await
        .unwrap();
    // The Bundles this Instance has active are objects of their own (an
    // embedded Bundle has no object to mark).
    for (bundle, content) in [("v1", "content"), ("v2", "content-v2")] {
        let own = Bundle::new(
            &fixture.scope.name(bundle),
            fixture.bundle_spec(content, "file://content"),
        );
        bundles.create(&PostParams::default(), &own).await.unwrap();
    }
    let instances = fixture.instances();
    let name = fixture.scope.name("instance");
    let mut instance = fixture.instance("v1", fixture.bundle_spec("content", "file://content"));
    instance.spec.bundle.spec = None;
    instance.metadata.labels = Some(labels.clone());
    instance.spec.selector = Some(LabelSelector {
        match_labels: Some(BTreeMap::from([("app".into(), "selected".into())])),
        ..LabelSelector::default()
    });
    instances
        .create(&PostParams::default(), &instance)
        .await
        .unwrap();
    wait_for(&instances, &name, "install v1", |i| {
        condition_is(i, ConditionType::Installed, "True")
    })
    .await;
    let change = json!({ "spec": { "bundle": { "name": fixture.scope.name("v2") } } });
    instances
        .patch(&name, &PatchParams::default(), &Patch::Merge(&change))
        .await
        .unwrap();
    eventually("v2 installed", || async {
        fixture.value_of("current").await.as_deref() == Some("v2")
    })
    .await;
    let current = fixture.scope.name("v2");
    let earlier = fixture.scope.name("v1");
    eventually("the earlier Bundle is marked replaced", || async {
        let bundle = bundles.get(&earlier).await.unwrap();
        bundle.labels().get(controller::REPLACED_BY_LABEL) == Some(&current)
    })
    .await;
    // The pivot is an Event of its own.
    eventually("a Pivoted event", || async {
        instance_events(&fixture.scope.client, &name)
            .await
            .iter()
            .any(|event| {
                event.reason.as_deref() == Some("Pivoted")
                    && event
                        .message
                        .as_deref()
                        .is_some_and(|note| note.contains(&format!("to Bundle {current}")))
            })
    })
    .await;
    for untouched in [current.clone(), fixture.scope.name("stranger")] {
        let bundle = bundles.get(&untouched).await.unwrap();
        assert!(
            !bundle.labels().contains_key(controller::REPLACED_BY_LABEL),
            "{untouched} is not marked replaced"
        );
    }
    fixture.scope.cleanup().await;
}

#[tokio::test]
async fn user_permission_approves_what_the_creator_may_install_and_nothing_more() {
    let fixture = Fixture::with_records("user-permission", "UserPermission").await;
    fixture.content("content", &[("granted", "v1")]).await;
    let instances = fixture.instances();
    let name = fixture.scope.name("instance");
    let mut instance = fixture.instance("bundle", fixture.bundle_spec("content", "file://content"));
    // alice may read the content (the provisioner reads it on her behalf)
    // but not write ConfigMaps yet.
    let reader = json!({
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
        "metadata": { "name": "content-reader", "namespace": fixture.scope.namespace },
        "rules": [{ "apiGroups": [""], "resources": ["configmaps"], "resourceNames": ["content"], "verbs": ["get"] }],
    });
    let reader_binding = json!({
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
        "metadata": { "name": "content-reader-alice", "namespace": fixture.scope.namespace },
        "roleRef": { "apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "content-reader" },
        "subjects": [{ "apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "alice" }],
    });
    Api::<Role>::namespaced(fixture.scope.client.clone(), &fixture.scope.namespace)
        .create(
            &PostParams::default(),
            &serde_json::from_value(reader).unwrap(),
        )
        .await
        .unwrap();
    Api::<RoleBinding>::namespaced(fixture.scope.client.clone(), &fixture.scope.namespace)
        .create(
            &PostParams::default(),
            &serde_json::from_value(reader_binding).unwrap(),
        )
        .await
        .unwrap();
    // What the admission webhook records on create (the runtime's tests run
    // without it), sealed with the fixture's key.
    let alice = CreatorRecord::new("alice", None, vec!["system:authenticated".into()]);
    instance.metadata.annotations = Some(BTreeMap::from([(
        CREATED_BY_ANNOTATION.to_owned(),
        sealed(&instance, &alice),
    )]));
    instances
        .create(&PostParams::default(), &instance)
        .await
        .unwrap();
    let waiting = wait_for(&instances, &name, "waiting on alice's rights", |i| {
        reason_is(i, ConditionType::Approved, "ApprovalPending")
    })
    .await;
    let message = &waiting.condition(ConditionType::Approved).unwrap().message;
    assert!(
        message.contains("the creator alice may not create ConfigMap")
            && message.contains("\"create\" on configmaps"),
        "{message}"
    );
    assert_eq!(fixture.value_of("granted").await, None, "nothing applied");

    // An admin lets alice write ConfigMaps in the namespace: the next check
    // approves and installs, without anyone running `approve`.
    let role = json!({
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
        "metadata": { "name": "configmap-writer", "namespace": fixture.scope.namespace },
        "rules": [{ "apiGroups": [""], "resources": ["configmaps"], "verbs": ["create", "patch"] }],
    });
    let binding = json!({
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
        "metadata": { "name": "configmap-writer-alice", "namespace": fixture.scope.namespace },
        "roleRef": { "apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "configmap-writer" },
        "subjects": [{ "apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "alice" }],
    });
    let roles: Api<Role> = Api::namespaced(fixture.scope.client.clone(), &fixture.scope.namespace);
    roles
        .create(
            &PostParams::default(),
            &serde_json::from_value(role).unwrap(),
        )
        .await
        .unwrap();
    let bindings: Api<RoleBinding> =
        Api::namespaced(fixture.scope.client.clone(), &fixture.scope.namespace);
    bindings
        .create(
            &PostParams::default(),
            &serde_json::from_value(binding).unwrap(),
        )
        .await
        .unwrap();
    let installed = wait_for(&instances, &name, "install once alice may", |i| {
        condition_is(i, ConditionType::Installed, "True")
    })
    .await;
    let approved = installed.condition(ConditionType::Approved).unwrap();
    assert_eq!(approved.reason, "ApprovedByPolicy");
    assert!(
        approved.message.contains("UserPermission"),
        "{}",
        approved.message
    );
    assert_eq!(fixture.value_of("granted").await.as_deref(), Some("v1"));
    fixture.scope.cleanup().await;
}

#[tokio::test]
async fn without_a_creator_record_nothing_is_read_or_approved() {
    let fixture = Fixture::with_records("no-creator", "UserPermission").await;
    fixture.content("content", &[("unrecorded", "v1")]).await;
    let (instances, name) = fixture
        .create_instance("bundle", fixture.bundle_spec("content", "file://content"))
        .await;
    // Nobody's record: nothing is read on nobody's behalf, nothing approved.
    let waiting = wait_for(&instances, &name, "the read refused", |i| {
        reason_is(i, ConditionType::Unpacked, "UnpackFailed")
    })
    .await;
    let message = &waiting.condition(ConditionType::Unpacked).unwrap().message;
    assert!(
        message.contains("has no core.pakket.dev/created-by record")
            && message.contains("nothing was read"),
        "{message}"
    );
    assert!(condition_is(&waiting, ConditionType::Installed, "False"));
    fixture.scope.cleanup().await;
}

#[tokio::test]
async fn a_bad_class_parameter_is_reported_and_fixing_the_class_installs() {
    let (fixture, instances, name, message) = held_by_class(
        "bad-parameter",
        json!({ "approval": "AllowAll", "maxObjectSize": "1 MB" }),
        "sized",
        ConditionType::Unpacked,
        "UnpackFailed",
    )
    .await;
    let class = fixture.scope.name("class");
    assert!(
        message.contains(&format!("ProvisionerClass {class}"))
            && message.contains("parameter maxObjectSize")
            && message.contains("1Mi"),
        "{message}"
    );

    patch_class(&fixture, json!({ "maxObjectSize": "1Mi" })).await;
    wait_for(&instances, &name, "install once the class is fixed", |i| {
        condition_is(i, ConditionType::Installed, "True")
    })
    .await;
    assert_eq!(fixture.value_of("sized").await.as_deref(), Some("v1"));
    fixture.scope.cleanup().await;
}

#[tokio::test]
async fn an_approval_parameter_that_is_not_a_string_gates_instead_of_allowing_all() {
    let (fixture, _, _, message) = held_by_class(
        "bad-approval",
        json!({ "approval": false }),
        "gated",
        ConditionType::Approved,
        "ApprovalPending",
    )
    .await;
    assert!(message.contains("parameter approval"), "{message}");
    fixture.scope.cleanup().await;
}

#[tokio::test]
async fn under_drift_warn_a_hand_edit_stays_and_is_named_until_the_class_repairs_it() {
    let fixture = Fixture::without_class("drift-warn").await;
    fixture
        .create_class_with(json!({ "approval": "AllowAll", "drift": { "mode": "Warn" } }))
        .await;
    let (instances, name) = installed(&fixture, &[("watched", "original")]).await;
    fixture
        .config_maps()
        .patch(
            "watched",
            &PatchParams::apply("someone-else").force(),
            &Patch::Apply(&json!({
                "apiVersion": "v1", "kind": "ConfigMap",
                "metadata": { "name": "watched" },
                "data": { "value": "edited by hand" },
            })),
        )
        .await
        .unwrap();
    let drifted = wait_for(&instances, &name, "the edit reported as drift", |i| {
        reason_is(i, ConditionType::Drifted, "ObjectsDrifted")
    })
    .await;
    let message = &drifted.condition(ConditionType::Drifted).unwrap().message;
    assert!(
        message.contains("ConfigMap") && message.contains("watched") && message.contains("Warn"),
        "{message}"
    );
    // Several passes later the edit is still there.
    tokio::time::sleep(std::time::Duration::from_secs(3)).await;
    assert_eq!(
        fixture.value_of("watched").await.as_deref(),
        Some("edited by hand")
    );
    let events = instance_events(&fixture.scope.client, &name).await;
    assert!(
        events
            .iter()
            .any(|event| event.reason.as_deref() == Some("ObjectsDrifted")),
        "{events:?}"
    );

    // The admin chooses Repair: the object is put back, and the condition
    // says nothing is left changed.
    patch_class(&fixture, json!({ "drift": { "mode": "Repair" } })).await;
    eventually("the edit is put back", || async {
        fixture.value_of("watched").await.as_deref() == Some("original")
    })
    .await;
    wait_for(&instances, &name, "no drift left", |i| {
        reason_is(i, ConditionType::Drifted, "NotDrifted")
    })
    .await;
    fixture.scope.cleanup().await;
}

#[tokio::test]
async fn a_drift_ignore_entry_that_names_pakkets_records_is_refused_naming_it() {
    let (fixture, _, _, message) = held_by_class(
        "drift-ignore",
        json!({ "approval": "AllowAll", "drift": { "mode": "Warn", "ignore": [
            { "group": "", "kind": "ConfigMap", "paths": ["/metadata/name"] },
        ] } }),
        "kept",
        ConditionType::Installed,
        "InstallFailed",
    )
    .await;
    assert!(
        message.contains("parameter drift.ignore[0].paths[0]")
            && message.contains("what Pakket records"),
        "{message}"
    );
    fixture.scope.cleanup().await;
}
