//! `approval: Android`: an update installs itself only when it asks for no
//! right the running content did not. A requester who may only edit her
//! Instance cannot slip a binding to `cluster-admin` into an update: it
//! waits for a person, naming the binding, and nothing of it is written.

use k8s_openapi::api::rbac::v1::{ClusterRoleBinding, Role};
use kube::Client;
use kube::api::{Api, Patch, PatchParams};
use pakket_api::{ConditionType, Instance};
use pakket_testkit::{eventually, reason_is};
use serde_json::json;

use crate::support::{Stage, Webhooks, rule};

/// Content `name`: a Role `role` allowing `get` on pods, its binding to
/// the ServiceAccount `operator`, a ConfigMap `marker` saying `version`,
/// and `extra` manifests.
async fn content(stage: &Stage, name: &str, role: &str, version: &str, extra: &[String]) {
    let namespace = stage.namespace();
    let mut files = vec![
        (
            "role.yaml".to_owned(),
            format!(
                "apiVersion: rbac.authorization.k8s.io/v1\nkind: Role\nmetadata:\n  name: {role}\n  namespace: {namespace}\nrules:\n- apiGroups: [\"\"]\n  resources: [pods]\n  verbs: [get]\n"
            ),
        ),
        (
            "binding.yaml".to_owned(),
            format!(
                "apiVersion: rbac.authorization.k8s.io/v1\nkind: RoleBinding\nmetadata:\n  name: {role}\n  namespace: {namespace}\nroleRef:\n  apiGroup: rbac.authorization.k8s.io\n  kind: Role\n  name: {role}\nsubjects:\n- kind: ServiceAccount\n  name: operator\n"
            ),
        ),
        (
            "marker.yaml".to_owned(),
            stage.config_map_manifest("marker", version),
        ),
    ];
    for (i, text) in extra.iter().enumerate() {
        files.push((format!("extra-{i}.yaml"), text.clone()));
    }
    let files: Vec<(&str, String)> = files
        .iter()
        .map(|(file, text)| (file.as_str(), text.clone()))
        .collect();
    stage.content(name, &files).await;
}

/// Alice moves Instance `app` to Bundle `bundle` of content `name`.
async fn update(stage: &Stage, alice: &Client, bundle: &str, name: &str) {
    let change = json!({ "spec": { "bundle": {
        "name": stage.scope.name(bundle), "spec": stage.bundle_spec(name),
    } } });
    let alices: Api<Instance> = Api::all(alice.clone());
    // A new grant reaches the apiserver's authorizer a moment later.
    eventually("alice's edit is allowed", || async {
        alices
            .patch(
                &stage.scope.name("app"),
                &PatchParams::default(),
                &Patch::Merge(&change),
            )
            .await
            .is_ok()
    })
    .await;
}

#[tokio::test]
async fn an_update_asking_for_a_new_right_waits_for_a_person_and_writes_nothing() {
    let stage = Stage::new("trust-android", "Android", Webhooks::On).await;
    stage.grant_requester("alice").await;
    stage
        .grant(
            "alice-content",
            "alice",
            vec![rule("", "configmaps", &["get"], &["v1", "v2", "v3"])],
        )
        .await;
    stage
        .grant(
            "alice-edits",
            "alice",
            vec![rule(
                pakket_api::GROUP,
                "instances",
                &["patch"],
                &[&stage.scope.name("app")],
            )],
        )
        .await;
    let alice = stage.client_as("alice").await;
    content(&stage, "v1", "operator-v1", "v1", &[]).await;
    // v2: the same rule under another Role's name.
    content(&stage, "v2", "operator-v2", "v2", &[]).await;
    // v3: v2 and the operator's ServiceAccount bound to cluster-admin.
    let admin_binding = stage.scope.name("operator-admin");
    let escalation = format!(
        "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRoleBinding\nmetadata:\n  name: {admin_binding}\nroleRef:\n  apiGroup: rbac.authorization.k8s.io\n  kind: ClusterRole\n  name: cluster-admin\nsubjects:\n- kind: ServiceAccount\n  name: operator\n  namespace: {}\n",
        stage.namespace()
    );
    content(&stage, "v3", "operator-v2", "v3", &[escalation]).await;

    // A first install waits for a person, naming what it asks for.
    stage
        .create(&alice, stage.instance("app", "app-v1", "v1"))
        .await
        .unwrap();
    let first = stage
        .wait("app", "the first install waiting", |i| {
            reason_is(i, ConditionType::Approved, "ApprovalPending")
        })
        .await;
    let message = &first.condition(ConditionType::Approved).unwrap().message;
    assert!(
        message.contains("a first install asks for")
            && message.contains("get pods in namespace")
            && message.contains("ServiceAccount"),
        "{message}"
    );
    assert_eq!(
        stage.value_of("marker").await,
        None,
        "nothing before approval"
    );
    stage.approve_as(&stage.admin(), "app").await.unwrap();
    stage.installed("app").await;
    assert_eq!(stage.value_of("marker").await.as_deref(), Some("v1"));

    // An update asking for nothing new installs itself.
    update(&stage, &alice, "app-v2", "v2").await;
    eventually("v2 installed by policy", || async {
        stage.value_of("marker").await.as_deref() == Some("v2")
    })
    .await;
    // The status is written just after the objects: wait for it to say v2.
    let updated = stage
        .wait("app", "the approval of v2 written", |instance| {
            instance
                .status
                .as_ref()
                .and_then(|s| s.approval.as_ref())
                .is_some_and(|a| a.bundle == stage.scope.name("app-v2"))
        })
        .await;
    let approved = updated.condition(ConditionType::Approved).unwrap();
    assert!(
        approved.reason == "ApprovedByPolicy" && approved.message.contains("Android"),
        "{approved:?}"
    );

    // The escalation: it waits, names the binding, writes nothing.
    update(&stage, &alice, "app-v3", "v3").await;
    let waiting = stage
        .wait("app", "the escalation waiting", |i| {
            reason_is(i, ConditionType::Approved, "ApprovalPending")
                && i.spec.bundle.name == stage.scope.name("app-v3")
        })
        .await;
    let message = &waiting.condition(ConditionType::Approved).unwrap().message;
    assert!(
        message.contains("1 right(s) the content it replaces did not")
            && message.contains("bound to ClusterRole cluster-admin cluster-wide"),
        "{message}"
    );
    tokio::time::sleep(std::time::Duration::from_secs(2)).await;
    assert!(
        Api::<ClusterRoleBinding>::all(stage.admin())
            .get_opt(&admin_binding)
            .await
            .unwrap()
            .is_none(),
        "no binding to cluster-admin was written"
    );
    assert_eq!(
        stage.value_of("marker").await.as_deref(),
        Some("v2"),
        "the running content stays"
    );
    assert!(
        Api::<Role>::namespaced(stage.admin(), stage.namespace())
            .get_opt("operator-v2")
            .await
            .unwrap()
            .is_some(),
        "and its Role with it"
    );
    // Alice cannot approve it herself.
    assert!(stage.approve_as(&alice, "app").await.is_err());
    stage.delete_instance("app").await;
    stage.cleanup().await;
}
