//! `approval: UserPermission` with an operator bundle, on the real control
//! plane and the real local registry: erin, who may not create what the
//! etcd operator bundle (../shared/data/bundles/etcd/0.9.4, verbatim from
//! community-operators-prod) holds, waits and nothing is applied; the
//! roles `pakket bundle rbac` computes (`install_rbac::needed_roles`) are
//! bound to her; then it installs, with no `approve` from anyone.

mod support;

use std::collections::BTreeMap;

use k8s_openapi::api::apps::v1::Deployment;
use kube::api::{Api, DeleteParams, DynamicObject, Patch, PatchParams, PostParams};
use kube::core::GroupVersionKind;
use pakket_api::{CREATED_BY_ANNOTATION, ConditionType, CreatorRecord, Instance, RecordKey};
use pakket_registry_v1::RegistryV1;
use pakket_registry_v1::install_rbac::needed_roles;
use pakket_runtime::controller::RunOptions;
use pakket_runtime::{ClusterFacts, ObjectsRequest, Provisioner};
use pakket_testkit::{
    Scope, condition_is, eventually, install_crds, reason_is, wait_for_instance as wait_for,
};
use serde_json::json;

/// Creates `object` (any kind) as the admin, by server-side apply.
async fn apply(client: &kube::Client, object: &serde_json::Value) {
    let api_version = object["apiVersion"].as_str().unwrap();
    let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
    let gvk = GroupVersionKind::gvk(group, version, object["kind"].as_str().unwrap());
    let (resource, _) = kube::discovery::pinned_kind(client, &gvk).await.unwrap();
    let name = object["metadata"]["name"].as_str().unwrap();
    let api: Api<DynamicObject> = match object["metadata"]["namespace"].as_str() {
        Some(namespace) => Api::namespaced_with(client.clone(), namespace, &resource),
        None => Api::all_with(client.clone(), &resource),
    };
    api.patch(
        name,
        &PatchParams::apply("test").force(),
        &Patch::Apply(object),
    )
    .await
    .unwrap();
}

#[tokio::test]
async fn a_requester_without_the_rights_waits_and_the_roles_bundle_rbac_prints_let_it_install() {
    let scope = Scope::new("registry-v1-user-permission").await;
    install_crds(&scope.client).await.unwrap();
    // The key the webhooks would seal requester records with.
    let key = RecordKey::from_bytes(b"registry-v1 tests' record key, 32+ bytes long").unwrap();
    let options = RunOptions {
        record_key: Some(key.clone()),
        ..RunOptions::new(support::store(&scope))
    };
    let parameters = json!({ "approval": "UserPermission" });
    support::run_provisioner_with(&scope, support::provisioner_id(&scope), parameters, options)
        .await;

    let bundle_dir = pakket_testkit::data("bundles/etcd/0.9.4");
    let reference = support::push_tagged(&scope, &bundle_dir, "etcd", "0.9.4").await;

    let namespace = scope.namespace.clone();
    let mut instance = support::instance_into(&scope, "etcd", "etcd-v094", &reference, &namespace);
    // What the admission webhook records for erin, sealed with the key.
    let erin = CreatorRecord::new("erin", None, vec!["system:authenticated".into()]);
    let sealed = erin
        .sealed(
            &key,
            CREATED_BY_ANNOTATION,
            &scope.name("etcd"),
            &instance.spec,
        )
        .to_annotation();
    instance.metadata.annotations =
        Some(BTreeMap::from([(CREATED_BY_ANNOTATION.to_owned(), sealed)]));
    let instances: Api<Instance> = Api::all(scope.client.clone());
    instances
        .create(&PostParams::default(), &instance)
        .await
        .unwrap();
    let name = scope.name("etcd");
    let waiting = wait_for(&instances, &name, "waiting on erin's rights", |i| {
        reason_is(i, ConditionType::Approved, "ApprovalPending")
    })
    .await;
    let message = &waiting.condition(ConditionType::Approved).unwrap().message;
    assert!(message.contains("erin may not"), "{message}");
    let deployments: Api<Deployment> = Api::namespaced(scope.client.clone(), &namespace);
    assert!(
        deployments
            .get_opt("etcd-operator")
            .await
            .unwrap()
            .is_none(),
        "nothing applied"
    );

    // The roles `pakket bundle rbac` prints for this bundle and config,
    // bound to erin by an admin.
    let rendered = RegistryV1::new("x")
        .objects(&ObjectsRequest {
            content: &bundle_dir,
            max_object_size: 4 << 20,
            instance: &instance,
            cluster: &ClusterFacts::default(),
            class_parameters: None,
        })
        .unwrap();
    let role_name = scope.name("install-etcd");
    for needed in needed_roles(&rendered, &role_name) {
        assert!(needed.guessed.is_empty(), "{:?}", needed.guessed);
        apply(&scope.client, &needed.role).await;
        let binding = match needed.role["metadata"]["namespace"].as_str() {
            Some(role_namespace) => json!({
                "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
                "metadata": { "name": role_name, "namespace": role_namespace },
                "roleRef": { "apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": role_name },
                "subjects": [{ "apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "erin" }],
            }),
            None => json!({
                "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
                "metadata": { "name": role_name },
                "roleRef": { "apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role_name },
                "subjects": [{ "apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "erin" }],
            }),
        };
        apply(&scope.client, &binding).await;
    }
    wait_for(
        &instances,
        &name,
        "installed once erin holds the rights",
        |i| condition_is(i, ConditionType::Installed, "True"),
    )
    .await;
    assert!(
        deployments
            .get_opt("etcd-operator")
            .await
            .unwrap()
            .is_some()
    );

    instances
        .delete(&name, &DeleteParams::default())
        .await
        .unwrap();
    eventually("the Instance is gone", || async {
        instances.get_opt(&name).await.unwrap().is_none()
    })
    .await;
    let cluster_roles: Api<k8s_openapi::api::rbac::v1::ClusterRole> =
        Api::all(scope.client.clone());
    let _ = cluster_roles
        .delete(&role_name, &DeleteParams::default())
        .await;
    let bindings: Api<k8s_openapi::api::rbac::v1::ClusterRoleBinding> =
        Api::all(scope.client.clone());
    let _ = bindings.delete(&role_name, &DeleteParams::default()).await;
    scope.cleanup().await;
}
