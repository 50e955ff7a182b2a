//! The runtime's Instance controller with the plain provisioner, on the real
//! control plane: install from a ConfigMap, approval that waits, a pivot that
//! deletes what the new bundle dropped, uninstall on delete, and clear status
//! for content the runtime cannot fetch.
//!
//! Each test runs its own controller for a provisioner id of its own, so
//! tests in parallel never act on each other's Instances.

use std::time::Duration;

use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use pakket_api::ConditionType;
use pakket_testkit::{condition_is, reason_is, wait_for_instance as wait_for};
use serde_json::json;

mod plain_fixture;

use plain_fixture::Fixture;

#[tokio::test]
async fn installs_pivots_and_uninstalls_a_plain_bundle_from_a_config_map() {
    let fixture = Fixture::new("plain-lifecycle", "AllowAll").await;
    fixture
        .content("content-v1", &[("first", "one"), ("second", "two")])
        .await;
    let spec = fixture.bundle_spec("content-v1", "file://content");
    let (instances, name) = fixture.create_instance("bundle-v1", spec).await;

    let installed = wait_for(&instances, &name, "install", |i| {
        condition_is(i, ConditionType::Installed, "True")
    })
    .await;
    assert!(condition_is(&installed, ConditionType::Approved, "True"));
    assert!(condition_is(&installed, ConditionType::Unpacked, "True"));
    assert_eq!(installed.status.as_ref().unwrap().objects.len(), 2);
    assert_eq!(fixture.value_of("first").await.as_deref(), Some("one"));
    let first = fixture.config_maps().get("first").await.unwrap();
    let labels = first.metadata.labels.unwrap();
    assert_eq!(labels.get("core.pakket.dev/instance"), Some(&name));
    assert_eq!(
        labels.get("core.pakket.dev/bundle"),
        Some(&fixture.scope.name("bundle-v1"))
    );
    wait_for(&instances, &name, "health", |i| {
        condition_is(i, ConditionType::Healthy, "True")
    })
    .await;

    // Pivot to a bundle that changes `first` and drops `second`.
    fixture.content("content-v2", &[("first", "uno")]).await;
    let v2 = fixture.bundle_spec("content-v2", "file://content");
    let pivot =
        json!({ "spec": { "bundle": { "name": fixture.scope.name("bundle-v2"), "spec": v2 } } });
    instances
        .patch(&name, &PatchParams::default(), &Patch::Merge(&pivot))
        .await
        .unwrap();
    wait_for(&instances, &name, "pivot", |i| {
        i.status.as_ref().and_then(|s| s.active_bundle.clone())
            == Some(fixture.scope.name("bundle-v2"))
    })
    .await;
    // Embedded Bundles have no objects to label: the pivot is told by an Event.
    let pivoted = format!(
        "pivoted from Bundle {} to Bundle {}",
        fixture.scope.name("bundle-v1"),
        fixture.scope.name("bundle-v2")
    );
    pakket_testkit::eventually("the pivot's Event", || async {
        pakket_testkit::instance_events(&fixture.scope.client, &name)
            .await
            .iter()
            .any(|event| {
                event
                    .message
                    .as_deref()
                    .is_some_and(|m| m.starts_with(&pivoted))
            })
    })
    .await;
    assert_eq!(fixture.value_of("first").await.as_deref(), Some("uno"));
    assert!(
        fixture
            .config_maps()
            .get_opt("second")
            .await
            .unwrap()
            .is_none(),
        "the dropped object is deleted"
    );

    // Deleting the Instance removes what it installed.
    instances
        .delete(&name, &DeleteParams::default())
        .await
        .unwrap();
    for _ in 0..600 {
        if instances.get_opt(&name).await.unwrap().is_none() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(
        instances.get_opt(&name).await.unwrap().is_none(),
        "the finalizer ran"
    );
    assert!(
        fixture
            .config_maps()
            .get_opt("first")
            .await
            .unwrap()
            .is_none(),
        "installed objects are removed"
    );
    fixture.scope.cleanup().await;
}

#[tokio::test]
async fn an_instance_created_before_its_class_installs_once_the_class_appears() {
    let fixture = Fixture::without_class("plain-class-later").await;
    fixture.content("content", &[("late", "fine")]).await;
    let spec = fixture.bundle_spec("content", "file://content");
    let (instances, name) = fixture.create_instance("bundle", spec).await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    let waiting = instances.get(&name).await.unwrap();
    assert!(
        waiting.status.is_none(),
        "no provisioner claims an Instance of an unknown class"
    );
    fixture.create_class("AllowAll").await;
    wait_for(&instances, &name, "install once the class exists", |i| {
        condition_is(i, ConditionType::Installed, "True")
    })
    .await;
    assert_eq!(fixture.value_of("late").await.as_deref(), Some("fine"));
    instances
        .delete(&name, &DeleteParams::default())
        .await
        .unwrap();
    fixture.scope.cleanup().await;
}

#[tokio::test]
async fn an_unapproved_instance_waits_and_installs_once_approved() {
    let fixture = Fixture::new("plain-approval", "DenyAll").await;
    fixture.content("content", &[("guarded", "approved")]).await;
    let spec = fixture.bundle_spec("content", "file://content/guarded.yaml");
    let (instances, name) = fixture.create_instance("bundle", spec).await;

    let waiting = wait_for(&instances, &name, "approval pending", |i| {
        reason_is(i, ConditionType::Approved, "ApprovalPending")
    })
    .await;
    let message = &waiting.condition(ConditionType::Approved).unwrap().message;
    assert!(
        message.contains(&format!("kubectl instance approve {name}")),
        "{message}"
    );
    assert!(condition_is(&waiting, ConditionType::Installed, "False"));
    assert!(
        fixture
            .config_maps()
            .get_opt("guarded")
            .await
            .unwrap()
            .is_none(),
        "nothing applied before approval"
    );

    // An approver approves the Bundle at the digest its status pins.
    plain_fixture::set_approval(&instances, &name, "True", "ApprovedByUser").await;
    wait_for(&instances, &name, "install after approval", |i| {
        condition_is(i, ConditionType::Installed, "True")
    })
    .await;
    assert_eq!(
        fixture.value_of("guarded").await.as_deref(),
        Some("approved")
    );
    instances
        .delete(&name, &DeleteParams::default())
        .await
        .unwrap();
    fixture.scope.cleanup().await;
}

#[tokio::test]
async fn content_the_runtime_cannot_fetch_is_reported_on_the_instance_and_bundle() {
    let fixture = Fixture::new("plain-unsupported", "AllowAll").await;
    let instances = fixture.instances();
    let name = fixture.scope.name("instance");
    // Unencrypted git:// is refused: the failure must say so, naming the
    // field, and without touching the network.
    let mut spec = fixture.bundle_spec("unused", "git://github.com/example/bundles");
    spec.volume_mounts.clear();
    instances
        .create(&PostParams::default(), &fixture.instance("bundle", spec))
        .await
        .unwrap();
    let failed = wait_for(&instances, &name, "unpack failure", |i| {
        reason_is(i, ConditionType::Unpacked, "UnpackFailed")
    })
    .await;
    let message = &failed.condition(ConditionType::Unpacked).unwrap().message;
    assert!(
        message.contains("spec.refs[0]") && message.contains("git+https"),
        "{message}"
    );
    let bundle =
        pakket_testkit::bundle_status(&fixture.scope.client, &fixture.scope.name("bundle"))
            .await
            .expect("the embedded Bundle's status is recorded");
    assert_eq!(bundle.unpacked, pakket_api::UnpackPhase::Failed);
    instances
        .delete(&name, &DeleteParams::default())
        .await
        .unwrap();
    fixture.scope.cleanup().await;
}

#[tokio::test]
async fn custom_resources_before_their_crd_and_objects_before_their_namespace_install() {
    let fixture = Fixture::new("plain-order", "AllowAll").await;
    let group = format!("{}.pakket.test", fixture.scope.id);
    let app = fixture.scope.name("app");
    // File order is the worst one: the custom resource first, its CRD and
    // the Namespace everything lands in last.
    let widget = format!(
        "apiVersion: {group}/v1\nkind: Widget\nmetadata:\n  name: first\n  namespace: {app}\nspec:\n  size: 3\n"
    );
    let config = format!(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\n  namespace: {app}\ndata:\n  value: v\n"
    );
    let crd = format!(
        "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: widgets.{group}\nspec:\n  group: {group}\n  scope: Namespaced\n  names: {{plural: widgets, singular: widget, kind: Widget}}\n  versions:\n  - name: v1\n    served: true\n    storage: true\n    schema:\n      openAPIV3Schema:\n        type: object\n        x-kubernetes-preserve-unknown-fields: true\n"
    );
    let namespace = format!("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: {app}\n");
    fixture
        .files(
            "content",
            &[
                ("a-widget.yaml", widget),
                ("b-config.yaml", config),
                ("c-crd.yaml", crd),
                ("d-namespace.yaml", namespace),
            ],
        )
        .await;
    let (instances, name) = fixture
        .create_instance("bundle", fixture.bundle_spec("content", "file://content"))
        .await;
    let installed = wait_for(&instances, &name, "installed in a safe order", |i| {
        condition_is(i, ConditionType::Installed, "True")
    })
    .await;
    let kinds: Vec<String> = installed
        .status
        .unwrap()
        .objects
        .iter()
        .map(|object| object.kind.clone())
        .collect();
    assert_eq!(
        kinds,
        [
            "Namespace",
            "ConfigMap",
            "CustomResourceDefinition",
            "Widget"
        ],
        "applied (and listed) in phase order"
    );
    let widgets = kube::core::ApiResource {
        group: group.clone(),
        version: "v1".into(),
        api_version: format!("{group}/v1"),
        kind: "Widget".into(),
        plural: "widgets".into(),
    };
    let api: Api<kube::api::DynamicObject> =
        Api::namespaced_with(fixture.scope.client.clone(), &app, &widgets);
    assert!(api.get_opt("first").await.unwrap().is_some());

    // Uninstall goes the other way round: the custom resource before its CRD.
    instances
        .delete(&name, &DeleteParams::default())
        .await
        .unwrap();
    let crds: Api<k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition> =
        Api::all(fixture.scope.client.clone());
    pakket_testkit::eventually("the CRD is gone", || async {
        crds.get_opt(&format!("widgets.{group}"))
            .await
            .unwrap()
            .is_none()
    })
    .await;
    fixture.scope.cleanup().await;
}

#[tokio::test]
async fn an_apply_the_apiserver_refuses_writes_nothing_and_the_instance_goes_clean() {
    let fixture = Fixture::new("plain-partial", "AllowAll").await;
    let namespace = fixture.scope.namespace.clone();
    let applied_first = format!(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: applied-first\n  namespace: {namespace}\ndata:\n  value: v\n"
    );
    // The apiserver refuses this one (a Deployment needs a selector and a
    // template): the dry run of the whole set finds it before the
    // ConfigMap, which comes first, is written.
    let refused = format!(
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: refused\n  namespace: {namespace}\nspec: {{}}\n"
    );
    fixture
        .files("content", &[("a.yaml", applied_first), ("b.yaml", refused)])
        .await;
    let (instances, name) = fixture
        .create_instance("bundle", fixture.bundle_spec("content", "file://content"))
        .await;
    let failed = wait_for(&instances, &name, "the apply cut short", |i| {
        reason_is(i, ConditionType::Installed, "InstallFailed")
    })
    .await;
    assert!(
        failed.status.as_ref().unwrap().objects.is_empty(),
        "nothing reached the status"
    );
    let message = &failed.condition(ConditionType::Installed).unwrap().message;
    assert!(
        message.contains("Deployment")
            && message.contains("refused")
            && message.contains("dry run"),
        "names the object, found by the dry run: {message}"
    );
    assert_eq!(
        fixture.value_of("applied-first").await,
        None,
        "nothing was written"
    );
    instances
        .delete(&name, &DeleteParams::default())
        .await
        .unwrap();
    pakket_testkit::eventually("the Instance and what it applied are gone", || async {
        instances.get_opt(&name).await.unwrap().is_none()
            && fixture.value_of("applied-first").await.is_none()
    })
    .await;
    fixture.scope.cleanup().await;
}

/// Objects past the status's list limit in the big-bundle test.
const BEYOND_THE_LIST: usize = 200;

#[tokio::test]
async fn a_bundle_longer_than_the_status_list_keeps_a_bounded_status_and_still_prunes_and_uninstalls()
 {
    use k8s_openapi::api::core::v1::ConfigMap;
    use kube::api::ListParams;
    use pakket_api::LISTED_OBJECTS_MAX;

    let fixture = Fixture::new("plain-big", "AllowAll").await;
    let total = LISTED_OBJECTS_MAX + BEYOND_THE_LIST;
    let manifests = |count: usize| {
        (0..count)
            .map(|i| {
                format!(
                    "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: big-{i:05}\n  namespace: {}\ndata:\n  value: v\n",
                    fixture.scope.namespace
                )
            })
            .collect::<Vec<_>>()
            .join("---\n")
    };
    fixture
        .files("content-v1", &[("all.yaml", manifests(total))])
        .await;
    let (instances, name) = fixture
        .create_instance(
            "bundle-v1",
            fixture.bundle_spec("content-v1", "file://content"),
        )
        .await;
    let installed = wait_for(&instances, &name, "install", |i| {
        condition_is(i, ConditionType::Installed, "True")
    })
    .await;
    let status = installed.status.unwrap();
    assert_eq!(status.objects.len(), LISTED_OBJECTS_MAX, "the list is cut");
    assert_eq!(status.object_count, Some(total as u64));
    assert_eq!(status.object_kinds.len(), 1);
    assert_eq!(status.object_kinds[0].kind, "ConfigMap");
    assert_eq!(status.object_kinds[0].count, total as u64);
    let bundle =
        pakket_testkit::bundle_status(&fixture.scope.client, &fixture.scope.name("bundle-v1"))
            .await
            .expect("the embedded Bundle's status is recorded");
    assert_eq!(bundle.objects.len(), LISTED_OBJECTS_MAX);
    assert_eq!(bundle.object_count, Some(total as u64));

    let mine = ListParams::default().labels(&format!("core.pakket.dev/instance={name}"));
    let config_maps: Api<ConfigMap> = fixture.config_maps();
    let count = || async { config_maps.list_metadata(&mine).await.unwrap().items.len() };
    assert_eq!(count().await, total);

    // A pivot to content without the last 100 objects, none of which the
    // status lists: they are found by the Instance's label and deleted.
    let kept = total - 100;
    fixture
        .files("content-v2", &[("all.yaml", manifests(kept))])
        .await;
    let v2 = fixture.bundle_spec("content-v2", "file://content");
    let pivot =
        json!({ "spec": { "bundle": { "name": fixture.scope.name("bundle-v2"), "spec": v2 } } });
    instances
        .patch(&name, &PatchParams::default(), &Patch::Merge(&pivot))
        .await
        .unwrap();
    wait_for(&instances, &name, "pivot", |i| {
        i.status.as_ref().and_then(|s| s.active_bundle.clone())
            == Some(fixture.scope.name("bundle-v2"))
            && condition_is(i, ConditionType::Installed, "True")
    })
    .await;
    assert_eq!(count().await, kept, "the dropped objects are pruned");
    assert!(
        config_maps
            .get_opt(&format!("big-{:05}", total - 1))
            .await
            .unwrap()
            .is_none()
    );

    instances
        .delete(&name, &DeleteParams::default())
        .await
        .unwrap();
    pakket_testkit::eventually("the Instance and every object it had are gone", || async {
        instances.get_opt(&name).await.unwrap().is_none() && count().await == 0
    })
    .await;
    fixture.scope.cleanup().await;
}

#[tokio::test]
async fn failure_messages_are_words_for_people_not_debug_dumps() {
    let fixture = Fixture::new("plain-words", "AllowAll").await;
    // An alias bomb: a few hundred bytes that expand to a million values.
    let mut bomb = String::from("a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n");
    for level in 1..=6 {
        let previous = format!("*a{}", level - 1);
        bomb.push_str(&format!(
            "a{level}: &a{level} [{}]\n",
            [previous.as_str(); 10].join(", ")
        ));
    }
    fixture.files("bomb", &[("bomb.yaml", bomb)]).await;
    let (instances, name) = fixture
        .create_instance("bundle-bomb", fixture.bundle_spec("bomb", "file://content"))
        .await;
    // wait_for checks every message it reads for Debug dumps and bytes.
    // Fetched fine; the content cannot be rendered: a render failure.
    let refused = wait_for(&instances, &name, "the bomb refused", |i| {
        reason_is(i, ConditionType::Installed, "RenderFailed")
    })
    .await;
    assert!(condition_is(&refused, ConditionType::Unpacked, "True"));
    // The Bundle's own status says it unpacked, not that unpacking failed.
    let bundle = &refused
        .status
        .as_ref()
        .and_then(|status| status.embedded_bundle.as_ref())
        .expect("an embedded Bundle's status is the Instance's")
        .status;
    assert_eq!(bundle.unpacked, pakket_api::UnpackPhase::Done);
    assert!(
        bundle
            .conditions
            .iter()
            .any(|c| c.reason == "UnpackSucceeded" && c.message.contains("could not render")),
        "{:?}",
        bundle.conditions
    );
    // Readiness is the Instance's to say: the embedded block, which no
    // GitOps tool reads, does not carry it in every write.
    assert!(
        bundle
            .conditions
            .iter()
            .all(|c| !pakket_api::readiness::is_readiness(&c.type_)),
        "{:?}",
        bundle.conditions
    );
    let message = &refused.condition(ConditionType::Installed).unwrap().message;
    assert!(
        message.contains("bomb.yaml") && message.contains("the YAML holds more than"),
        "{message}"
    );

    // An object the apiserver refuses: its message, not its Debug form.
    let invalid = format!(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: Not_A_Valid_Name\n  namespace: {}\n",
        fixture.scope.namespace
    );
    fixture.files("invalid", &[("invalid.yaml", invalid)]).await;
    let spec = fixture.bundle_spec("invalid", "file://content");
    let pivot = json!({ "spec": { "bundle": {
        "name": fixture.scope.name("bundle-invalid"), "spec": spec } } });
    instances
        .patch(&name, &PatchParams::default(), &Patch::Merge(&pivot))
        .await
        .unwrap();
    let failed = wait_for(&instances, &name, "the refusal", |i| {
        reason_is(i, ConditionType::Installed, "InstallFailed")
    })
    .await;
    let message = &failed.condition(ConditionType::Installed).unwrap().message;
    assert!(
        message.contains("ConfigMap/")
            && message.contains("Not_A_Valid_Name")
            && message.contains("(HTTP 422)")
            && !message.contains("Status {"),
        "{message}"
    );
    fixture.scope.cleanup().await;
}

#[tokio::test]
async fn a_pivot_the_apiserver_refuses_writes_nothing_and_a_later_one_installs() {
    let fixture = Fixture::new("plain-chain", "AllowAll").await;
    let namespace = fixture.scope.namespace.clone();
    let config_map = |name: &str| {
        format!(
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\n  namespace: {namespace}\ndata:\n  value: v\n"
        )
    };
    fixture
        .files("content-v1", &[("a.yaml", config_map("first"))])
        .await;
    let (instances, name) = fixture
        .create_instance(
            "bundle-v1",
            fixture.bundle_spec("content-v1", "file://content"),
        )
        .await;
    wait_for(&instances, &name, "v1 installed", |i| {
        condition_is(i, ConditionType::Installed, "True")
    })
    .await;

    // The apiserver refuses v2's Deployment: the dry run finds it, so
    // `stranded`, which comes first, is never written (and v1 keeps
    // running).
    let refused = format!(
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: refused\n  namespace: {namespace}\nspec: {{}}\n"
    );
    fixture
        .files(
            "content-v2",
            &[("a.yaml", config_map("stranded")), ("b.yaml", refused)],
        )
        .await;
    let pivot = |bundle: &str, content: &str| {
        json!({ "spec": { "bundle": {
            "name": fixture.scope.name(bundle),
            "spec": fixture.bundle_spec(content, "file://content"),
        } } })
    };
    instances
        .patch(
            &name,
            &PatchParams::default(),
            &Patch::Merge(&pivot("bundle-v2", "content-v2")),
        )
        .await
        .unwrap();
    wait_for(&instances, &name, "v2 cut short", |i| {
        reason_is(i, ConditionType::Installed, "InstallFailed")
    })
    .await;
    assert_eq!(fixture.value_of("stranded").await, None);
    assert_eq!(fixture.value_of("first").await.as_deref(), Some("v"));

    // v3 installs; then the Instance goes, and everything with it.
    fixture
        .files("content-v3", &[("a.yaml", config_map("third"))])
        .await;
    instances
        .patch(
            &name,
            &PatchParams::default(),
            &Patch::Merge(&pivot("bundle-v3", "content-v3")),
        )
        .await
        .unwrap();
    wait_for(&instances, &name, "v3 installed", |i| {
        i.status.as_ref().and_then(|s| s.active_bundle.clone())
            == Some(fixture.scope.name("bundle-v3"))
            && condition_is(i, ConditionType::Installed, "True")
    })
    .await;
    instances
        .delete(&name, &DeleteParams::default())
        .await
        .unwrap();
    pakket_testkit::eventually(
        "the Instance and every object it applied are gone",
        || async {
            instances.get_opt(&name).await.unwrap().is_none()
                && fixture.value_of("stranded").await.is_none()
                && fixture.value_of("third").await.is_none()
                && fixture.value_of("first").await.is_none()
        },
    )
    .await;
    fixture.scope.cleanup().await;
}

/// A Widget CRD whose `spec` has these properties (JSON).
fn widget_crd(properties: serde_json::Value) -> String {
    let crd = json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": { "name": "safetywidgets.upgrade.pakket.dev" },
        "spec": {
            "group": "upgrade.pakket.dev",
            "scope": "Namespaced",
            "names": { "kind": "SafetyWidget", "plural": "safetywidgets", "singular": "safetywidget" },
            "versions": [{
                "name": "v1", "served": true, "storage": true,
                "schema": { "openAPIV3Schema": { "type": "object", "properties": {
                    "spec": { "type": "object", "properties": properties },
                } } },
            }],
        },
    });
    serde_json::to_string(&crd).unwrap()
}

#[tokio::test]
async fn a_crd_upgrade_that_removes_or_retypes_fields_is_refused_and_an_additive_one_passes() {
    let fixture = Fixture::new("crd-upgrade", "AllowAll").await;
    let v1 = widget_crd(json!({ "size": { "type": "integer" }, "color": { "type": "string" } }));
    fixture.files("content-v1", &[("crd.json", v1)]).await;
    let (instances, name) = fixture
        .create_instance(
            "bundle-v1",
            fixture.bundle_spec("content-v1", "file://content"),
        )
        .await;
    wait_for(&instances, &name, "v1 installed", |i| {
        condition_is(i, ConditionType::Installed, "True")
    })
    .await;
    let pivot = |bundle: &str, content: &str| {
        json!({ "spec": { "bundle": {
            "name": fixture.scope.name(bundle),
            "spec": fixture.bundle_spec(content, "file://content"),
        } } })
    };

    // v2 drops `color` and turns `size` into a string.
    let v2 = widget_crd(json!({ "size": { "type": "string" } }));
    fixture.files("content-v2", &[("crd.json", v2)]).await;
    instances
        .patch(
            &name,
            &PatchParams::default(),
            &Patch::Merge(&pivot("bundle-v2", "content-v2")),
        )
        .await
        .unwrap();
    let refused = wait_for(&instances, &name, "the unsafe upgrade refused", |i| {
        reason_is(i, ConditionType::Installed, "InstallFailed")
    })
    .await;
    let message = &refused.condition(ConditionType::Installed).unwrap().message;
    assert!(
        message.contains("CustomResourceDefinition safetywidgets.upgrade.pakket.dev: version v1, .spec.color: the field is removed")
            && message.contains(".spec.size: type changes from integer to string")
            && message.contains("crdUpgradeSafety: None"),
        "{message}"
    );
    let crds: Api<k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition> =
        Api::all(fixture.scope.client.clone());
    let stored =
        serde_json::to_value(crds.get("safetywidgets.upgrade.pakket.dev").await.unwrap()).unwrap();
    assert!(
        stored
            .pointer("/spec/versions/0/schema/openAPIV3Schema/properties/spec/properties/color")
            .is_some(),
        "the CRD on the cluster is untouched"
    );

    // v3 only adds an optional field: it passes.
    let v3 = widget_crd(json!({
        "size": { "type": "integer" }, "color": { "type": "string" }, "shape": { "type": "string" },
    }));
    fixture.files("content-v3", &[("crd.json", v3)]).await;
    instances
        .patch(
            &name,
            &PatchParams::default(),
            &Patch::Merge(&pivot("bundle-v3", "content-v3")),
        )
        .await
        .unwrap();
    wait_for(&instances, &name, "the safe upgrade installed", |i| {
        i.status.as_ref().and_then(|s| s.active_bundle.clone())
            == Some(fixture.scope.name("bundle-v3"))
            && condition_is(i, ConditionType::Installed, "True")
    })
    .await;
    instances
        .delete(&name, &DeleteParams::default())
        .await
        .unwrap();
    pakket_testkit::eventually("the Instance is gone", || async {
        instances.get_opt(&name).await.unwrap().is_none()
    })
    .await;
    fixture.scope.cleanup().await;
}
