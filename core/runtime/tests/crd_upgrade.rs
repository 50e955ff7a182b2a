//! CRD upgrade safety on the real control plane: a pivot whose new CRD
//! would refuse custom resources already stored is refused, naming each
//! one that would break (and the field) and none that would not, and the
//! same pivot goes through once the breaking ones are gone. An uninstall
//! that deleted a CRD ends only once the API server has deleted it.

use kube::api::{Api, ApiResource, DeleteParams, DynamicObject, Patch, PatchParams, PostParams};
use pakket_api::ConditionType;
use pakket_testkit::{condition_is, reason_is, wait_for_instance as wait_for};
use serde_json::{Value, json};

mod plain_fixture;

use plain_fixture::Fixture;

const KIND: &str = "UpgradeWidget";
const PLURAL: &str = "upgradewidgets";

/// The test's own API group, so parallel runs never share the CRD.
fn group(fixture: &Fixture) -> String {
    format!("{}.pakket.dev", fixture.scope.id)
}

/// An UpgradeWidget CRD (with a status subresource) whose `spec.name` and
/// `status.phase` have these schemas.
fn widget_crd(fixture: &Fixture, name: Value, phase: Value) -> String {
    let group = group(fixture);
    let crd = json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": { "name": format!("{PLURAL}.{group}") },
        "spec": {
            "group": group,
            "scope": "Namespaced",
            "names": { "kind": KIND, "plural": PLURAL, "singular": "upgradewidget" },
            "versions": [{
                "name": "v1", "served": true, "storage": true,
                "subresources": { "status": {} },
                "schema": { "openAPIV3Schema": { "type": "object", "properties": {
                    "spec": { "type": "object", "properties": { "name": name } },
                    "status": { "type": "object", "properties": { "phase": phase } },
                } } },
            }],
        },
    });
    serde_json::to_string(&crd).unwrap()
}

/// The widgets of the test's namespace.
fn widgets(fixture: &Fixture) -> Api<DynamicObject> {
    let group = group(fixture);
    let resource = ApiResource {
        api_version: format!("{group}/v1"),
        group,
        version: "v1".into(),
        kind: KIND.into(),
        plural: PLURAL.into(),
    };
    Api::namespaced_with(
        fixture.scope.client.clone(),
        &fixture.scope.namespace,
        &resource,
    )
}

/// Creates widget `name` with `spec.name` and, if given, `status.phase`;
/// tries again while the CRD is not served yet.
async fn create_widget(fixture: &Fixture, name: &str, spec_name: &str, phase: Option<&str>) {
    let widgets = widgets(fixture);
    let object: DynamicObject = serde_json::from_value(json!({
        "apiVersion": format!("{}/v1", group(fixture)),
        "kind": KIND,
        "metadata": { "name": name },
        "spec": { "name": spec_name },
    }))
    .unwrap();
    let mut tries = 0;
    while let Err(error) = widgets.create(&PostParams::default(), &object).await {
        tries += 1;
        assert!(tries < 100, "creating widget {name}: {error}");
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }
    if let Some(phase) = phase {
        widgets
            .patch_status(
                name,
                &PatchParams::default(),
                &Patch::Merge(json!({ "status": { "phase": phase } })),
            )
            .await
            .unwrap();
    }
}

#[tokio::test]
async fn a_pivot_whose_crd_would_refuse_stored_objects_names_them_and_passes_once_they_are_gone() {
    let fixture = Fixture::new("crd-upgrade-objects", "AllowAll").await;
    let string = json!({ "type": "string" });
    let v1 = widget_crd(&fixture, string.clone(), string);
    fixture.files("content-v1", &[("crd.json", v1)]).await;
    let (instances, name) = fixture.install("bundle-v1", "content-v1").await;
    create_widget(&fixture, "fine", "alpha", Some("Ready")).await;
    create_widget(&fixture, "bad-spec", "Bad_Name", None).await;
    create_widget(&fixture, "bad-status", "beta", Some("not-ready")).await;

    // v2 adds patterns: a change the schema diff does not refuse, but
    // two of the three stored widgets would not validate.
    let v2 = widget_crd(
        &fixture,
        json!({ "type": "string", "pattern": "^[a-z]+$" }),
        json!({ "type": "string", "pattern": "^[A-Z][a-z]+$" }),
    );
    fixture.files("content-v2", &[("crd.json", v2)]).await;
    fixture.pivot("bundle-v2", "content-v2").await;
    let refused = wait_for(&instances, &name, "the unsafe upgrade refused", |i| {
        reason_is(i, ConditionType::Installed, "InstallFailed")
    })
    .await;
    pakket_testkit::assert_readable_messages(&refused);
    let installed = refused.condition(ConditionType::Installed).unwrap();
    assert_eq!(installed.status, "False");
    let message = &installed.message;
    let namespace = &fixture.scope.namespace;
    let crd_name = format!("{PLURAL}.{}", group(&fixture));
    for expected in [
        format!(
            "CustomResourceDefinition {crd_name}: 2 existing {KIND} objects do not validate against the new schema"
        ),
        format!(
            "{KIND} {namespace}/bad-spec: spec.name: a string of 8 characters does not match the pattern ^[a-z]+$"
        ),
        format!(
            "{KIND} {namespace}/bad-status: status.phase: a string of 9 characters does not match the pattern ^[A-Z][a-z]+$"
        ),
        "crdUpgradeSafety: None".to_owned(),
    ] {
        assert!(message.contains(&expected), "{expected:?} in: {message}");
    }
    assert!(
        !message.contains("/fine"),
        "the valid widget is not named: {message}"
    );
    // The widgets are someone else's: what they hold never reaches the
    // Instance's requester, in the status or in an Event.
    let events = pakket_testkit::instance_events(&fixture.scope.client, &name).await;
    let told: Vec<&str> = events.iter().filter_map(|e| e.message.as_deref()).collect();
    for held in ["Bad_Name", "not-ready"] {
        assert!(!message.contains(held), "{held:?} quoted in: {message}");
        assert!(
            !told.iter().any(|note| note.contains(held)),
            "{held:?} in an Event: {told:?}"
        );
    }
    let crds: Api<k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition> =
        Api::all(fixture.scope.client.clone());
    let pattern = "/spec/versions/0/schema/openAPIV3Schema/properties/spec/properties/name/pattern";
    let stored = serde_json::to_value(crds.get(&crd_name).await.unwrap()).unwrap();
    assert!(
        stored.pointer(pattern).is_none(),
        "the CRD on the cluster is untouched"
    );

    // Without the breaking widgets, the same pivot goes through (on the
    // controller's retry), with the valid one still there.
    for broken in ["bad-spec", "bad-status"] {
        widgets(&fixture)
            .delete(broken, &DeleteParams::default())
            .await
            .unwrap();
    }
    wait_for(&instances, &name, "the upgrade installed", |i| {
        i.status.as_ref().and_then(|s| s.active_bundle.clone())
            == Some(fixture.scope.name("bundle-v2"))
            && condition_is(i, ConditionType::Installed, "True")
    })
    .await;
    let stored = serde_json::to_value(crds.get(&crd_name).await.unwrap()).unwrap();
    assert_eq!(
        stored.pointer(pattern),
        Some(&json!("^[a-z]+$")),
        "the new CRD is applied"
    );
    assert!(widgets(&fixture).get_opt("fine").await.unwrap().is_some());

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

#[tokio::test]
async fn an_instance_stays_until_the_api_server_has_deleted_its_crd_and_says_what_holds_it() {
    use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;

    let fixture = Fixture::new("crd-uninstall-waits", "AllowAll").await;
    let string = json!({ "type": "string" });
    let crd = widget_crd(&fixture, string.clone(), string);
    fixture.files("content", &[("crd.json", crd)]).await;
    let (instances, name) = fixture.install("bundle", "content").await;
    let crd_name = format!("{PLURAL}.{}", group(&fixture));
    // A widget whose own finalizer (a controller of the user's, say) holds
    // it, and so holds the CRD the API server is deleting.
    create_widget(&fixture, "held", "alpha", None).await;
    let hold = json!({ "metadata": { "finalizers": ["test.pakket.dev/hold"] } });
    widgets(&fixture)
        .patch("held", &PatchParams::default(), &Patch::Merge(&hold))
        .await
        .unwrap();

    instances
        .delete(&name, &DeleteParams::default())
        .await
        .unwrap();
    pakket_testkit::eventually(
        "an UninstallWaiting Event names the CRD that holds the Instance",
        || async {
            pakket_testkit::instance_events(&fixture.scope.client, &name)
                .await
                .iter()
                .any(|event| {
                    event.reason.as_deref() == Some("UninstallWaiting")
                        && event
                            .message
                            .as_deref()
                            .is_some_and(|note| note.contains(&crd_name))
                })
        },
    )
    .await;
    let crds: Api<CustomResourceDefinition> = Api::all(fixture.scope.client.clone());
    let terminating = crds.get(&crd_name).await.unwrap();
    assert!(
        terminating.metadata.deletion_timestamp.is_some(),
        "the CRD is being deleted"
    );
    assert!(
        instances.get_opt(&name).await.unwrap().is_some(),
        "the Instance stays while its CRD does"
    );
    let told = pakket_testkit::instance_events(&fixture.scope.client, &name).await;
    assert!(
        !told
            .iter()
            .any(|event| event.reason.as_deref() == Some("Uninstalled")),
        "nothing says Uninstalled while the CRD is there: {told:?}"
    );

    // The widget's finalizer goes: the API server deletes it and the CRD,
    // and the Instance goes after them.
    let release = json!({ "metadata": { "finalizers": null } });
    widgets(&fixture)
        .patch("held", &PatchParams::default(), &Patch::Merge(&release))
        .await
        .unwrap();
    pakket_testkit::eventually("the CRD and then the Instance are gone", || async {
        crds.get_opt(&crd_name).await.unwrap().is_none()
            && instances.get_opt(&name).await.unwrap().is_none()
    })
    .await;
    pakket_testkit::eventually("Uninstalled is said once it is true", || async {
        pakket_testkit::instance_events(&fixture.scope.client, &name)
            .await
            .iter()
            .any(|event| event.reason.as_deref() == Some("Uninstalled"))
    })
    .await;
    fixture.scope.cleanup().await;
}
