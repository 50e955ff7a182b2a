//! `approval: UserPermission` with an operator bundle, on the real control
//! plane and the real local registry, with the rights `deploy/` ships:
//! pakket-registry-v1 runs as its ServiceAccount (`deploy/registry-v1/
//! provisioner.yaml`, which holds `escalate` and `bind`), the webhooks as
//! theirs. Erin, who may write Instances of the class but not create what
//! the etcd operator bundle (../shared/data/bundles/etcd/0.9.4, verbatim
//! from community-operators-prod) holds, asks for it herself: the webhooks
//! seal her as the requester, it waits and nothing is applied (not the
//! operator's ServiceAccount, roles or bindings, not its Deployment). A
//! record she forges for the admin is refused. The roles `pakket bundle
//! rbac` computes (`install_rbac::needed_roles`) are bound to her; then it
//! installs, with no `approve` from anyone.

mod support;

use std::collections::BTreeMap;

use k8s_openapi::api::apps::v1::Deployment;
use kube::api::{Api, DeleteParams, DynamicObject, Patch, PatchParams, PostParams};
use kube::core::GroupVersionKind;
use pakket_api::{CREATED_BY_ANNOTATION, ConditionType, CreatorRecord, Instance};
use pakket_registry_v1::RegistryV1;
use pakket_runtime::kernel::controller::RunOptions;
use pakket_runtime::kernel::trust::install_rbac::needed_roles;
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
    use pakket_testkit::shipped::{self, REGISTRY_V1, WEBHOOKS};
    use pakket_webhooks::local::{LocalOptions, LocalWebhooks};
    let scope = Scope::new("registry-v1-user-permission").await;
    install_crds(&scope.client).await.unwrap();
    let admin_kubeconfig = scope.cluster.kubeconfig().to_path_buf();
    let mut hooks = LocalOptions::for_labels(format!("{}-instances", scope.id), scope.labels());
    hooks.serving_client =
        Some(shipped::client(&scope.client, &admin_kubeconfig, WEBHOOKS, &scope).await);
    let hooks = LocalWebhooks::start(scope.client.clone(), hooks)
        .await
        .expect("the webhooks start");
    let key = hooks.record_key();
    shipped::grant_classes(
        &scope.client,
        REGISTRY_V1,
        &scope.name("registry-v1-classes"),
        &scope.labels(),
        &[scope.name("class")],
    )
    .await;
    let provisioner = shipped::client(&scope.client, &admin_kubeconfig, REGISTRY_V1, &scope).await;
    let options = RunOptions {
        record_key: Some(key.clone()),
        ..RunOptions::new(support::store(&scope))
    };
    let parameters = json!({ "approval": "UserPermission" });
    support::run_provisioner_as(
        &scope,
        provisioner,
        support::provisioner_id(&scope),
        parameters,
        options,
    )
    .await;
    // Erin may write Instances of the class, and nothing else.
    apply(
        &scope.client,
        &json!({
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
            "metadata": { "name": scope.name("erin"), "labels": scope.labels() },
            "rules": [
                {"apiGroups": ["core.pakket.dev"], "resources": ["instances"], "verbs": ["get", "list", "create", "update", "patch"]},
                {"apiGroups": ["core.pakket.dev"], "resources": ["provisionerclasses"], "resourceNames": [scope.name("class")], "verbs": ["use"]},
            ],
        }),
    )
    .await;
    apply(
        &scope.client,
        &json!({
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
            "metadata": { "name": scope.name("erin"), "labels": scope.labels() },
            "roleRef": { "apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": scope.name("erin") },
            "subjects": [{ "apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "erin" }],
        }),
    )
    .await;
    let erin_client = scope.cluster.client_as("erin").await;

    let bundle_dir = pakket_testkit::data("bundles/etcd/0.9.4");
    let reference = support::push_tagged(&scope, &bundle_dir, "etcd", "0.9.4").await;

    let namespace = scope.namespace.clone();
    let instance = support::instance_into(&scope, "etcd", "etcd-v094", &reference, &namespace);
    // She cannot pass the Instance off as the admin's: a record of her own
    // making is refused, whatever it says.
    let admin = CreatorRecord::new(
        pakket_controlplane::ADMIN_USER,
        None,
        vec!["system:masters".into()],
    );
    let mut forged = instance.clone();
    forged.metadata.annotations = Some(BTreeMap::from([(
        CREATED_BY_ANNOTATION.to_owned(),
        admin.to_annotation(),
    )]));
    let erins: Api<Instance> = Api::all(erin_client.clone());
    eventually("erin may write Instances", || async {
        match erins.create(&PostParams::default(), &forged).await {
            Err(kube::Error::Api(status)) => {
                status.code != 403 || status.message.contains("record")
            }
            _ => true,
        }
    })
    .await;
    let instances: Api<Instance> = Api::all(scope.client.clone());
    let name = scope.name("etcd");
    assert!(
        instances.get_opt(&name).await.unwrap().is_none(),
        "a forged record is refused"
    );
    erins
        .create(&PostParams::default(), &instance)
        .await
        .unwrap();
    let written = instances.get(&name).await.unwrap();
    let record = &written.metadata.annotations.as_ref().unwrap()[CREATED_BY_ANNOTATION];
    assert_eq!(
        CreatorRecord::from_annotation(record).unwrap().username,
        "erin",
        "the webhooks sealed erin as the requester"
    );
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
    let accounts: Api<k8s_openapi::api::core::v1::ServiceAccount> =
        Api::namespaced(scope.client.clone(), &namespace);
    assert!(
        accounts.get_opt("etcd-operator").await.unwrap().is_none(),
        "not the operator's ServiceAccount"
    );
    let roles: Api<k8s_openapi::api::rbac::v1::Role> =
        Api::namespaced(scope.client.clone(), &namespace);
    assert!(
        roles
            .list(&Default::default())
            .await
            .unwrap()
            .items
            .is_empty(),
        "not the operator's Role, which the provisioner could have made (it holds escalate)"
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
    let _ = bindings
        .delete(&scope.name("erin"), &DeleteParams::default())
        .await;
    let _ = cluster_roles
        .delete(&scope.name("erin"), &DeleteParams::default())
        .await;
    hooks.stop().await.unwrap();
    scope.cleanup().await;
}
