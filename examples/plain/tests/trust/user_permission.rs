//! `approval: UserPermission` asks what RBAC would ask, of whoever asked for
//! this spec: `create` and `patch` on every object where it lands; for a
//! Role, every rule it grants (or `escalate`); for a binding, every rule of
//! the role it binds (or `bind`). The rights that count are the creator's
//! for the first spec and the last person's who changed it after that. A
//! change that removes objects asks `delete` on each of them, of that
//! person.

use k8s_openapi::api::rbac::v1::{ClusterRoleBinding, Role, RoleBinding};
use kube::api::{Api, Patch, PatchParams, PostParams};
use pakket_api::{ConditionType, LAST_CHANGED_BY_ANNOTATION};
use pakket_testkit::reason_is;
use serde_json::json;

use crate::support::{Stage, Webhooks, refused_with, rule};

const RBAC: &str = "rbac.authorization.k8s.io";

fn binding_manifest(namespace: &str, role: &str, user: &str) -> String {
    format!(
        "apiVersion: rbac.authorization.k8s.io/v1\nkind: RoleBinding\nmetadata:\n  name: {user}-{role}\n  namespace: {namespace}\nroleRef:\n  apiGroup: rbac.authorization.k8s.io\n  kind: ClusterRole\n  name: {role}\nsubjects:\n- apiGroup: rbac.authorization.k8s.io\n  kind: User\n  name: {user}\n"
    )
}

/// alice may ask the class for content, read its content ConfigMaps, and
/// create RoleBindings and Roles in the scope's namespace: what a team lead
/// might hold.
async fn team_lead(stage: &Stage) {
    stage.grant_requester("alice").await;
    stage
        .grant(
            "alice-content",
            "alice",
            vec![rule("", "configmaps", &["get"], &["binding", "role"])],
        )
        .await;
    stage
        .grant_in_namespace(
            "alice-rbac-writer",
            "alice",
            vec![
                rule(RBAC, "rolebindings", &["create", "patch"], &[]),
                rule(RBAC, "roles", &["create", "patch"], &[]),
            ],
        )
        .await;
}

#[tokio::test]
async fn a_binding_to_rules_the_requester_lacks_waits_until_she_may_bind() {
    let stage = Stage::new("trust-userperm-bind", "UserPermission", Webhooks::On).await;
    team_lead(&stage).await;
    let alice = stage.client_as("alice").await;
    stage
        .content(
            "binding",
            &[(
                "binding.yaml",
                binding_manifest(stage.namespace(), "admin", "alice"),
            )],
        )
        .await;

    // By hand, the apiserver itself refuses her.
    let by_hand: RoleBinding =
        serde_saphyr::from_str(&binding_manifest(stage.namespace(), "admin", "alice")).unwrap();
    let direct = Api::<RoleBinding>::namespaced(alice.clone(), stage.namespace())
        .create(&PostParams::default(), &by_hand)
        .await;
    assert!(refused_with(&direct, 403), "{direct:?}");

    stage
        .create(&alice, stage.instance("escalate", "escalate-v1", "binding"))
        .await
        .unwrap();
    let waiting = stage
        .wait("escalate", "UserPermission refuses", |i| {
            reason_is(i, ConditionType::Approved, "ApprovalPending")
                && i.condition(ConditionType::Approved)
                    .is_some_and(|c| c.message.contains("may not create"))
        })
        .await;
    let message = &waiting.condition(ConditionType::Approved).unwrap().message;
    assert!(
        message.contains(&format!(
            "the creator alice may not create RoleBinding/{}/alice-admin: it binds ClusterRole admin, which grants",
            stage.namespace()
        )) && message.contains("(nor bind clusterroles.rbac.authorization.k8s.io named admin"),
        "{message}"
    );
    let bindings = Api::<RoleBinding>::namespaced(stage.admin(), stage.namespace());
    assert!(
        bindings.get_opt("alice-admin").await.unwrap().is_none(),
        "nothing written"
    );

    // The legitimate path: an admin lets alice bind `admin` in her namespace.
    stage
        .grant_in_namespace(
            "alice-may-bind-admin",
            "alice",
            vec![rule(RBAC, "clusterroles", &["bind"], &["admin"])],
        )
        .await;
    stage.installed("escalate").await;
    assert!(bindings.get_opt("alice-admin").await.unwrap().is_some());
    stage.cleanup().await;
}

#[tokio::test]
async fn a_role_with_rules_the_requester_lacks_is_not_installed() {
    let stage = Stage::new("trust-userperm-role", "UserPermission", Webhooks::On).await;
    team_lead(&stage).await;
    let alice = stage.client_as("alice").await;
    let role = format!(
        "apiVersion: rbac.authorization.k8s.io/v1\nkind: Role\nmetadata:\n  name: secret-reader\n  namespace: {}\nrules:\n- apiGroups: [\"\"]\n  resources: [secrets]\n  verbs: [get, list]\n",
        stage.namespace()
    );
    stage.content("role", &[("role.yaml", role)]).await;
    stage
        .create(&alice, stage.instance("reader", "reader-v1", "role"))
        .await
        .unwrap();
    let waiting = stage
        .wait("reader", "UserPermission refuses", |i| {
            i.condition(ConditionType::Approved)
                .is_some_and(|c| c.message.contains("may not create"))
        })
        .await;
    let message = &waiting.condition(ConditionType::Approved).unwrap().message;
    assert!(
        message.contains(&format!(
            "it grants get secrets in namespace {}, which the requester does not hold (nor escalate roles.rbac.authorization.k8s.io named secret-reader",
            stage.namespace()
        )),
        "{message}"
    );
    let roles = Api::<Role>::namespaced(stage.admin(), stage.namespace());
    assert!(
        roles.get_opt("secret-reader").await.unwrap().is_none(),
        "nothing written"
    );
    stage.cleanup().await;
}

#[tokio::test]
async fn a_spec_change_is_judged_by_who_made_it_not_by_the_creator() {
    let stage = Stage::new("trust-userperm-editor", "UserPermission", Webhooks::On).await;
    stage
        .config_map_content("harmless-content", &[("harmless", "v1")])
        .await;
    let takeover = format!(
        "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRoleBinding\nmetadata:\n  name: {}\nroleRef:\n  apiGroup: rbac.authorization.k8s.io\n  kind: ClusterRole\n  name: cluster-admin\nsubjects:\n- apiGroup: rbac.authorization.k8s.io\n  kind: User\n  name: bob\n",
        stage.scope.name("bob-is-admin")
    );
    stage.content("takeover", &[("crb.yaml", takeover)]).await;
    // The admin's Instance installs: the admin may do everything.
    stage
        .create(
            &stage.admin(),
            stage.instance("admins", "admins-v1", "harmless-content"),
        )
        .await
        .unwrap();
    stage.installed("admins").await;

    // bob may edit that one Instance (and use the class, read the content).
    let name = stage.scope.name("admins");
    stage
        .grant(
            "bob-editor",
            "bob",
            vec![
                rule(
                    pakket_api::GROUP,
                    "instances",
                    &["get", "update", "patch"],
                    &[&name],
                ),
                rule(
                    pakket_api::GROUP,
                    "provisionerclasses",
                    &["use"],
                    &[&stage.class()],
                ),
                rule("", "configmaps", &["get"], &["takeover"]),
            ],
        )
        .await;
    let bob = stage.client_as("bob").await;
    let change = json!({ "spec": { "bundle": {
        "name": stage.scope.name("admins-v2"), "spec": stage.bundle_spec("takeover"),
    } } });
    Api::<pakket_api::Instance>::all(bob)
        .patch(&name, &PatchParams::default(), &Patch::Merge(&change))
        .await
        .expect("bob may edit the Instance");
    let waiting = stage
        .wait("admins", "bob's change waits on bob's rights", |i| {
            i.condition(ConditionType::Approved)
                .is_some_and(|c| c.message.contains("may not create"))
        })
        .await;
    let message = &waiting.condition(ConditionType::Approved).unwrap().message;
    assert!(
        message.contains("who last changed the spec bob may not create ClusterRoleBinding/"),
        "{message}"
    );
    let record = waiting
        .metadata
        .annotations
        .as_ref()
        .and_then(|annotations| annotations.get(LAST_CHANGED_BY_ANNOTATION))
        .expect("the webhook recorded who changed the spec");
    assert!(record.contains(r#""username":"bob""#), "{record}");
    let bindings = Api::<ClusterRoleBinding>::all(stage.admin());
    assert!(
        bindings
            .get_opt(&stage.scope.name("bob-is-admin"))
            .await
            .unwrap()
            .is_none(),
        "bob did not become cluster-admin"
    );
    assert_eq!(
        stage.value_of("harmless").await.as_deref(),
        Some("v1"),
        "what runs stays"
    );
    stage.cleanup().await;
}

#[tokio::test]
async fn a_change_that_removes_objects_waits_until_its_author_may_delete_them() {
    let stage = Stage::shipped("trust-userperm-prune", "UserPermission", Webhooks::On).await;
    stage.grant_requester("alice").await;
    stage
        .grant(
            "alice-content",
            "alice",
            vec![
                rule("", "configmaps", &["get"], &["both", "one"]),
                rule(pakket_api::GROUP, "instances", &["patch"], &[]),
            ],
        )
        .await;
    // alice may write ConfigMaps in the namespace, not delete them.
    stage
        .grant_in_namespace(
            "alice-writer",
            "alice",
            vec![rule("", "configmaps", &["create", "patch"], &[])],
        )
        .await;
    stage
        .config_map_content("both", &[("kept", "v1"), ("dropped", "v1")])
        .await;
    stage.config_map_content("one", &[("kept", "v2")]).await;
    let alice = stage.client_as("alice").await;
    stage
        .create(&alice, stage.instance("app", "app-v1", "both"))
        .await
        .unwrap();
    stage.installed("app").await;
    assert_eq!(stage.value_of("dropped").await.as_deref(), Some("v1"));

    // Her change to content without `dropped` would delete it for her.
    let change = json!({ "spec": { "bundle": {
        "name": stage.scope.name("app-v2"), "spec": stage.bundle_spec("one"),
    } } });
    Api::<pakket_api::Instance>::all(alice)
        .patch(
            &stage.scope.name("app"),
            &PatchParams::default(),
            &Patch::Merge(&change),
        )
        .await
        .expect("alice may change her Instance");
    let waiting = stage
        .wait("app", "the change waits on alice's delete", |i| {
            i.condition(ConditionType::Approved)
                .is_some_and(|c| c.message.contains("may not delete"))
        })
        .await;
    let message = &waiting.condition(ConditionType::Approved).unwrap().message;
    assert!(
        message.contains("alice may not delete ConfigMap/")
            && message.contains("dropped, which this change removes"),
        "{message}"
    );
    tokio::time::sleep(std::time::Duration::from_secs(2)).await;
    assert_eq!(
        stage.value_of("dropped").await.as_deref(),
        Some("v1"),
        "nothing was deleted"
    );
    assert_eq!(
        stage.value_of("kept").await.as_deref(),
        Some("v1"),
        "nothing was written"
    );

    // Once she may delete ConfigMaps there, her change goes through.
    stage
        .grant_in_namespace(
            "alice-deleter",
            "alice",
            vec![rule("", "configmaps", &["delete"], &[])],
        )
        .await;
    pakket_testkit::eventually("v2 installed, dropped deleted", || async {
        stage.value_of("kept").await.as_deref() == Some("v2")
            && stage.value_of("dropped").await.is_none()
    })
    .await;
    stage.cleanup().await;
}
