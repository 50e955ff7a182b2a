//! The shared test control plane is a working cluster: the controller manager
//! collects garbage and finalizes namespaces, and the test users are real,
//! authenticated, non-admin identities that RBAC governs.

use std::time::Duration;

use k8s_openapi::api::authentication::v1::SelfSubjectReview;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding, PolicyRule, RoleRef, Subject};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube::api::{Api, DeleteParams, PostParams};
use kube::{Client, Resource, ResourceExt};
use pakket_api::Bundle;
use pakket_testkit::{Scope, install_crds};

/// Polls `check` every 100 ms for up to 60 s.
async fn eventually<F, Fut>(what: &str, mut check: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    for _ in 0..600 {
        if check().await {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("{what} did not happen within 60 s");
}

#[tokio::test]
async fn garbage_collector_deletes_dependents_of_a_deleted_owner() {
    let scope = Scope::new("garbage-collection").await;
    let config_maps: Api<ConfigMap> = Api::namespaced(scope.client.clone(), &scope.namespace);
    let post = PostParams::default();
    let mut owner = ConfigMap::default();
    owner.metadata.name = Some("owner".into());
    let owner = config_maps.create(&post, &owner).await.unwrap();
    let mut dependent = ConfigMap::default();
    dependent.metadata.name = Some("dependent".into());
    dependent.metadata.owner_references = Some(vec![OwnerReference {
        api_version: ConfigMap::api_version(&()).into_owned(),
        kind: ConfigMap::kind(&()).into_owned(),
        name: owner.name_any(),
        uid: owner.uid().unwrap(),
        ..OwnerReference::default()
    }]);
    config_maps.create(&post, &dependent).await.unwrap();

    config_maps
        .delete("owner", &DeleteParams::default())
        .await
        .unwrap();
    eventually("garbage collection of the dependent ConfigMap", || async {
        config_maps.get_opt("dependent").await.unwrap().is_none()
    })
    .await;
    scope.cleanup().await;
}

#[tokio::test]
async fn deleted_namespaces_are_finalized() {
    let scope = Scope::new("namespace-deletion").await;
    let namespaces: Api<Namespace> = Api::all(scope.client.clone());
    let config_maps: Api<ConfigMap> = Api::namespaced(scope.client.clone(), &scope.namespace);
    let mut content = ConfigMap::default();
    content.metadata.name = Some("content".into());
    config_maps
        .create(&PostParams::default(), &content)
        .await
        .unwrap();
    let name = scope.namespace.clone();
    scope.cleanup().await;
    eventually("namespace deletion", || async {
        namespaces.get_opt(&name).await.unwrap().is_none()
    })
    .await;
}

async fn can_list_bundles(client: &Client) -> bool {
    match Api::<Bundle>::all(client.clone())
        .list(&Default::default())
        .await
    {
        Ok(_) => true,
        Err(kube::Error::Api(status)) if status.code == 403 => false,
        Err(error) => panic!("unexpected error: {error}"),
    }
}

#[tokio::test]
async fn test_users_are_authenticated_non_admins_that_rbac_governs() {
    let scope = Scope::new("test-users").await;
    install_crds(&scope.client).await.unwrap();
    let cluster = scope.cluster;
    let alice = cluster.client_as("alice").await;
    let bob = cluster.client_as("bob").await;

    let review = Api::<SelfSubjectReview>::all(alice.clone())
        .create(&PostParams::default(), &SelfSubjectReview::default())
        .await
        .unwrap();
    let user = review.status.unwrap().user_info.unwrap();
    assert_eq!(user.username.as_deref(), Some("alice"));
    let groups = user.groups.unwrap_or_default();
    assert!(
        groups.contains(&pakket_controlplane::TEST_USERS_GROUP.to_owned()),
        "{groups:?}"
    );
    assert!(
        !groups.iter().any(|group| group == "system:masters"),
        "{groups:?}"
    );
    // Her team, as the example policies name teams; mallory has none.
    assert!(groups.contains(&"team-a".to_owned()), "{groups:?}");
    let mallory = Api::<SelfSubjectReview>::all(cluster.client_as("mallory").await)
        .create(&PostParams::default(), &SelfSubjectReview::default())
        .await
        .unwrap();
    let theirs = mallory
        .status
        .unwrap()
        .user_info
        .unwrap()
        .groups
        .unwrap_or_default();
    assert!(!theirs.iter().any(|g| g.starts_with("team-")), "{theirs:?}");

    assert!(
        !can_list_bundles(&alice).await,
        "alice starts with no rights"
    );
    let role_name = scope.name("bundle-reader");
    let role = ClusterRole {
        metadata: scope.meta("bundle-reader"),
        rules: Some(vec![PolicyRule {
            api_groups: Some(vec![pakket_api::GROUP.into()]),
            resources: Some(vec!["bundles".into()]),
            verbs: vec!["get".into(), "list".into()],
            ..PolicyRule::default()
        }]),
        ..ClusterRole::default()
    };
    let binding = ClusterRoleBinding {
        metadata: scope.meta("bundle-reader"),
        role_ref: RoleRef {
            api_group: "rbac.authorization.k8s.io".into(),
            kind: "ClusterRole".into(),
            name: role_name.clone(),
        },
        subjects: Some(vec![Subject {
            kind: "User".into(),
            name: "alice".into(),
            api_group: Some("rbac.authorization.k8s.io".into()),
            ..Subject::default()
        }]),
    };
    let roles: Api<ClusterRole> = Api::all(scope.client.clone());
    let bindings: Api<ClusterRoleBinding> = Api::all(scope.client.clone());
    roles.create(&PostParams::default(), &role).await.unwrap();
    bindings
        .create(&PostParams::default(), &binding)
        .await
        .unwrap();

    eventually("alice's new binding to take effect", || {
        can_list_bundles(&alice)
    })
    .await;
    assert!(
        !can_list_bundles(&bob).await,
        "a binding for alice grants bob nothing"
    );

    bindings
        .delete(&role_name, &DeleteParams::default())
        .await
        .unwrap();
    roles
        .delete(&role_name, &DeleteParams::default())
        .await
        .unwrap();
    scope.cleanup().await;
}
