//! The registry-v1 provisioner on the real control plane, from the real
//! local registry: the etcd operator bundles of ../shared/data/bundles
//! (verbatim from community-operators-prod, see its README) pushed as
//! images, etcd 0.9.2 installed into a namespace Pakket creates, upgraded
//! to 0.9.4 by pivot (the old Role gone, the Deployment kept and updated,
//! a user's EtcdCluster kept),
//! removed with everything it created; then installed into a namespace
//! that exists already, which is used and left in place.
//!
//! The control plane has a kwok node (the test kit's, or `dev/test.sh`'s),
//! so the operator's Deployment becomes Available and the Instance Healthy.

mod support;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::Namespace;
use k8s_openapi::api::rbac::v1::Role;
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use pakket_api::{ConditionType, Instance};
use pakket_testkit::{
    Scope, bundle_crd_names, condition_is, eventually, install_crds, wait_for_crds_gone,
    wait_for_instance as wait_for,
};
use serde_json::json;
use support::{push_tagged, run_provisioner};

/// etcd's CRDs are cluster-wide: two tests installing etcd at once would
/// each find them another Instance's and wait for it to leave. Every test
/// here installs etcd, so they take turns, and each ends only when the
/// CRDs are gone (`etcd_leaves`).
static ETCD_CRDS: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// Waits until etcd's CRDs (those its 0.9.4 bundle ships; 0.9.2 has the
/// same three) are gone, so the next test can own them.
async fn etcd_leaves(scope: &Scope) {
    let names = bundle_crd_names(&pakket_testkit::data("bundles/etcd/0.9.4"));
    wait_for_crds_gone(&scope.client, &names).await;
}

/// Pushes `bundles/etcd/<version>` as an image; returns its ref.
async fn push_etcd(scope: &Scope, version: &str) -> String {
    let dir = pakket_testkit::data(&format!("bundles/etcd/{version}"));
    push_tagged(scope, &dir, "etcd", version).await
}

/// Instance `etcd` installing `reference` (Bundle `bundle`) into
/// `install_namespace`.
fn instance(scope: &Scope, bundle: &str, reference: &str, install_namespace: &str) -> Instance {
    support::instance_into(scope, "etcd", bundle, reference, install_namespace)
}

/// Deletes Instance `name` and waits until it is gone.
async fn delete_and_wait(instances: &Api<Instance>, name: &str) {
    instances
        .delete(name, &DeleteParams::default())
        .await
        .unwrap();
    eventually("the Instance is gone", || async {
        instances.get_opt(name).await.unwrap().is_none()
    })
    .await;
}

#[tokio::test]
async fn etcd_installs_upgrades_by_pivot_and_goes_leaving_existing_namespaces_alone() {
    let _etcd = ETCD_CRDS.lock().await;
    let scope = Scope::new("registry-v1-etcd").await;
    install_crds(&scope.client).await.unwrap();
    run_provisioner(&scope, json!({ "approval": "AllowAll" })).await;
    let v092 = push_etcd(&scope, "0.9.2").await;
    let v094 = push_etcd(&scope, "0.9.4").await;

    // 0.9.2 into a namespace that does not exist yet: Pakket creates it.
    let operators = scope.name("operators");
    let instances: Api<Instance> = Api::all(scope.client.clone());
    instances
        .create(
            &PostParams::default(),
            &instance(&scope, "etcd-v092", &v092, &operators),
        )
        .await
        .unwrap();
    let name = scope.name("etcd");
    wait_for(&instances, &name, "0.9.2 installed and healthy", |i| {
        condition_is(i, ConditionType::Installed, "True")
            && condition_is(i, ConditionType::Healthy, "True")
    })
    .await;
    // A user's etcd cluster, made with the operator's API: it outlives the upgrade.
    let clusters_api = kube::discovery::ApiResource::from_gvk_with_plural(
        &kube::core::GroupVersionKind::gvk("etcd.database.coreos.com", "v1beta2", "EtcdCluster"),
        "etcdclusters",
    );
    let clusters: Api<kube::api::DynamicObject> =
        Api::namespaced_with(scope.client.clone(), &operators, &clusters_api);
    let cluster: kube::api::DynamicObject = serde_json::from_value(json!({
        "apiVersion": "etcd.database.coreos.com/v1beta2",
        "kind": "EtcdCluster",
        "metadata": { "name": "example" },
        "spec": { "size": 3, "version": "3.2.13" },
    }))
    .unwrap();
    let cluster = clusters
        .create(&PostParams::default(), &cluster)
        .await
        .unwrap();
    let deployments: Api<Deployment> = Api::namespaced(scope.client.clone(), &operators);
    let deployment = deployments.get("etcd-operator").await.unwrap();
    let annotations = deployment
        .spec
        .as_ref()
        .and_then(|spec| spec.template.metadata.as_ref())
        .and_then(|metadata| metadata.annotations.clone())
        .unwrap_or_default();
    assert_eq!(
        annotations.get("olm.targetNamespaces"),
        Some(&operators),
        "OwnNamespace: it watches where it runs"
    );
    let roles: Api<Role> = Api::namespaced(scope.client.clone(), &operators);
    let role_names = || async {
        roles
            .list(&ListParams::default())
            .await
            .unwrap()
            .items
            .into_iter()
            .filter_map(|role| role.metadata.name)
            .collect::<Vec<_>>()
    };
    let before = role_names().await;
    assert!(
        before
            .iter()
            .any(|name| name.starts_with("etcdoperator.v0.9.2-etcd-operator-")),
        "{before:?}"
    );

    // Upgrade by pivot to 0.9.4: the same Deployment, a new Role, the old
    // one gone.
    let pivot = json!({ "spec": { "bundle": {
        "name": scope.name("etcd-v094"),
        "spec": { "class": scope.name("class"), "refs": [v094] },
    } } });
    instances
        .patch(&name, &PatchParams::default(), &Patch::Merge(&pivot))
        .await
        .unwrap();
    wait_for(&instances, &name, "0.9.4 installed", |i| {
        i.status.as_ref().and_then(|s| s.active_bundle.clone()) == Some(scope.name("etcd-v094"))
            && condition_is(i, ConditionType::Installed, "True")
    })
    .await;
    let after = role_names().await;
    assert!(
        after
            .iter()
            .any(|name| name.starts_with("etcdoperator.v0.9.4-etcd-operator-"))
            && !after
                .iter()
                .any(|name| name.starts_with("etcdoperator.v0.9.2-")),
        "{after:?}"
    );
    let upgraded = deployments.get("etcd-operator").await.unwrap();
    assert_eq!(
        upgraded.metadata.uid, deployment.metadata.uid,
        "the Deployment is updated in place, not recreated"
    );
    assert_eq!(
        clusters.get("example").await.unwrap().metadata.uid,
        cluster.metadata.uid,
        "the custom resource is kept through the upgrade (its CRD checked, not replaced)"
    );

    // Gone: the namespace Pakket created goes with everything in it.
    instances
        .delete(&name, &DeleteParams::default())
        .await
        .unwrap();
    let namespaces: Api<Namespace> = Api::all(scope.client.clone());
    eventually(
        "the Instance is gone and its namespace is being deleted",
        || async {
            instances.get_opt(&name).await.unwrap().is_none()
                && namespaces
                    .get_opt(&operators)
                    .await
                    .unwrap()
                    .is_none_or(|namespace| namespace.metadata.deletion_timestamp.is_some())
        },
    )
    .await;

    // Into a namespace that exists: used, not adopted, left in place.
    let existing = scope.namespace.clone();
    let mut again = instance(&scope, "etcd-again", &v094, &existing);
    again.metadata = scope.meta("etcd");
    // All three CRDs, not one: a CRD still being finalized belongs to the
    // first Instance, and the second would be refused it (no adoption).
    etcd_leaves(&scope).await;
    instances
        .create(&PostParams::default(), &again)
        .await
        .unwrap();
    wait_for(
        &instances,
        &name,
        "installed into an existing namespace",
        |i| condition_is(i, ConditionType::Installed, "True"),
    )
    .await;
    let namespace = namespaces.get(&existing).await.unwrap();
    assert!(
        !namespace
            .metadata
            .labels
            .unwrap_or_default()
            .contains_key("core.pakket.dev/instance-uid"),
        "an existing namespace is not the Instance's"
    );
    delete_and_wait(&instances, &name).await;
    let namespace = namespaces.get(&existing).await.unwrap();
    assert!(
        namespace.metadata.deletion_timestamp.is_none(),
        "the existing namespace stays"
    );
    etcd_leaves(&scope).await;
    scope.cleanup().await;
}

#[tokio::test]
async fn a_watch_the_bundle_does_not_support_is_reported_naming_the_field_and_nothing_is_applied() {
    let _etcd = ETCD_CRDS.lock().await;
    let scope = Scope::new("registry-v1-bad-config").await;
    install_crds(&scope.client).await.unwrap();
    run_provisioner(&scope, json!({ "approval": "AllowAll" })).await;
    let reference = push_etcd(&scope, "0.9.4").await;
    // etcd 0.9.4 does not support MultiNamespace.
    let mut instance = instance(&scope, "etcd-v094", &reference, &scope.namespace);
    instance
        .spec
        .config
        .as_mut()
        .unwrap()
        .insert("watchNamespaces".into(), json!(["team-a", "team-b"]));
    let instances: Api<Instance> = Api::all(scope.client.clone());
    instances
        .create(&PostParams::default(), &instance)
        .await
        .unwrap();
    let name = scope.name("etcd");
    let refused = wait_for(&instances, &name, "the config refused", |i| {
        pakket_testkit::reason_is(i, ConditionType::Installed, "InvalidConfig")
    })
    .await;
    let message = &refused.condition(ConditionType::Installed).unwrap().message;
    assert!(
        message.starts_with("spec.config.watchNamespaces: lists 2 namespaces")
            && message.contains("does not support MultiNamespace"),
        "{message}"
    );
    assert!(
        condition_is(&refused, ConditionType::Unpacked, "True"),
        "the Bundle is fine; the config is not"
    );
    let deployments: Api<Deployment> = Api::namespaced(scope.client.clone(), &scope.namespace);
    assert!(
        deployments
            .get_opt("etcd-operator")
            .await
            .unwrap()
            .is_none(),
        "nothing applied"
    );
    delete_and_wait(&instances, &name).await;
    etcd_leaves(&scope).await;
    scope.cleanup().await;
}

#[tokio::test]
async fn a_deployment_config_shapes_the_operators_deployment_and_a_wrong_one_changes_nothing() {
    let _etcd = ETCD_CRDS.lock().await;
    let scope = Scope::new("registry-v1-deployment-config").await;
    install_crds(&scope.client).await.unwrap();
    run_provisioner(&scope, json!({ "approval": "AllowAll" })).await;
    let reference = push_etcd(&scope, "0.9.4").await;
    let mut instance = instance(&scope, "etcd-v094", &reference, &scope.namespace);
    let config = json!({
        "env": [{"name": "LOG_LEVEL", "value": "debug"}],
        "nodeSelector": {"pakket.dev/test-pool": "operators"},
        "tolerations": [{"key": "dedicated", "operator": "Equal", "value": "operators", "effect": "NoSchedule"}],
        "resources": {"requests": {"memory": "64Mi"}, "limits": {"memory": "128Mi"}},
        "annotations": {"example.com/owner": "platform"},
    });
    instance
        .spec
        .config
        .as_mut()
        .unwrap()
        .insert("deploymentConfig".into(), config);
    let instances: Api<Instance> = Api::all(scope.client.clone());
    instances
        .create(&PostParams::default(), &instance)
        .await
        .unwrap();
    let name = scope.name("etcd");
    wait_for(&instances, &name, "installed with the config", |i| {
        condition_is(i, ConditionType::Installed, "True")
    })
    .await;
    let deployments: Api<Deployment> = Api::namespaced(scope.client.clone(), &scope.namespace);
    let deployment = deployments.get("etcd-operator").await.unwrap();
    let check = |deployment: &Deployment| {
        let template = &deployment.spec.as_ref().unwrap().template;
        let pod = template.spec.as_ref().unwrap();
        assert_eq!(
            pod.node_selector.as_ref().unwrap()["pakket.dev/test-pool"],
            "operators"
        );
        assert!(
            pod.tolerations
                .iter()
                .flatten()
                .any(|t| t.key.as_deref() == Some("dedicated"))
        );
        for container in &pod.containers {
            assert!(
                container
                    .env
                    .iter()
                    .flatten()
                    .any(|e| e.name == "LOG_LEVEL" && e.value.as_deref() == Some("debug")),
                "{:?}",
                container.env
            );
            let limits = container
                .resources
                .as_ref()
                .unwrap()
                .limits
                .as_ref()
                .unwrap();
            assert_eq!(limits["memory"].0, "128Mi");
        }
        assert_eq!(
            deployment.metadata.annotations.as_ref().unwrap()["example.com/owner"],
            "platform"
        );
        assert_eq!(
            template
                .metadata
                .as_ref()
                .unwrap()
                .annotations
                .as_ref()
                .unwrap()["example.com/owner"],
            "platform"
        );
    };
    check(&deployment);

    // A wrong config: refused naming the field; what runs is untouched.
    instances
        .patch(
            &name,
            &PatchParams::default(),
            &Patch::Merge(
                json!({"spec": {"config": {"deploymentConfig": {"tolerations": "dedicated"}}}}),
            ),
        )
        .await
        .unwrap();
    let refused = wait_for(&instances, &name, "the deploymentConfig refused", |i| {
        pakket_testkit::reason_is(i, ConditionType::Installed, "InvalidConfig")
    })
    .await;
    let message = &refused.condition(ConditionType::Installed).unwrap().message;
    assert!(
        message.starts_with("spec.config.deploymentConfig.tolerations: "),
        "{message}"
    );
    let kept = deployments.get("etcd-operator").await.unwrap();
    assert_eq!(kept.metadata.uid, deployment.metadata.uid);
    check(&kept);

    delete_and_wait(&instances, &name).await;
    etcd_leaves(&scope).await;
    scope.cleanup().await;
}

#[tokio::test]
async fn a_namespace_pakket_creates_gets_the_templates_labels_and_an_existing_one_is_left_alone() {
    const ENFORCE: &str = "pod-security.kubernetes.io/enforce";
    let _etcd = ETCD_CRDS.lock().await;
    let scope = Scope::new("registry-v1-namespace-template").await;
    install_crds(&scope.client).await.unwrap();
    // The admin's class enforces baseline on every namespace it creates.
    run_provisioner(
        &scope,
        json!({
            "approval": "AllowAll",
            "namespaceTemplate": {"labels": {ENFORCE: "baseline"}},
        }),
    )
    .await;
    let reference = push_etcd(&scope, "0.9.4").await;
    let instances: Api<Instance> = Api::all(scope.client.clone());
    let namespaces: Api<Namespace> = Api::all(scope.client.clone());
    let name = scope.name("etcd");
    let install = |namespace: String| {
        let mut instance = instance(&scope, "etcd-v094", &reference, &namespace);
        // The Instance asks for a weaker level too: the class's key wins.
        instance.spec.config.as_mut().unwrap().insert(
            "namespaceTemplate".into(),
            json!({
                "labels": {ENFORCE: "privileged", "team": "a"},
                "annotations": {"example.com/owner": "team a"},
            }),
        );
        instance
    };

    // A namespace Pakket creates: the template's labels and annotations.
    let created = scope.name("made");
    instances
        .create(&PostParams::default(), &install(created.clone()))
        .await
        .unwrap();
    wait_for(&instances, &name, "installed", |i| {
        condition_is(i, ConditionType::Installed, "True")
    })
    .await;
    let made = namespaces.get(&created).await.unwrap();
    let labels = made.metadata.labels.clone().unwrap();
    assert_eq!(labels[ENFORCE], "baseline");
    assert_eq!(labels["team"], "a");
    assert_eq!(
        made.metadata.annotations.clone().unwrap()["example.com/owner"],
        "team a"
    );
    delete_and_wait(&instances, &name).await;

    // A namespace that exists already: used as it is, not relabelled.
    let existing = scope.name("existing");
    let mut namespace = Namespace::default();
    namespace.metadata.name = Some(existing.clone());
    namespace.metadata.labels = Some([("team".to_owned(), "b".to_owned())].into());
    namespaces
        .create(&PostParams::default(), &namespace)
        .await
        .unwrap();
    instances
        .create(&PostParams::default(), &install(existing.clone()))
        .await
        .unwrap();
    wait_for(
        &instances,
        &name,
        "installed into the existing namespace",
        |i| condition_is(i, ConditionType::Installed, "True"),
    )
    .await;
    let kept = namespaces.get(&existing).await.unwrap();
    assert_eq!(
        kept.metadata
            .labels
            .clone()
            .unwrap()
            .get("team")
            .map(String::as_str),
        Some("b")
    );
    assert!(
        !kept.metadata.labels.clone().unwrap().contains_key(ENFORCE),
        "{:?}",
        kept.metadata.labels
    );
    delete_and_wait(&instances, &name).await;
    let _ = namespaces.delete(&existing, &DeleteParams::default()).await;
    etcd_leaves(&scope).await;
    scope.cleanup().await;
}
