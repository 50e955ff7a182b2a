//! An approval covers the objects that were approved, on the real control
//! plane: a provisioner upgraded (here: restarted with a render that adds
//! objects to the same content) never applies its new render under the old
//! approval. The new render is a new request, judged anew by the class's
//! policy (here `Android`, which approves what asks for no right beyond
//! what runs); more rights wait for a person, naming them, and nothing of
//! them is written.

use std::sync::Arc;
use std::sync::atomic::{AtomicU8, Ordering};

use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::api::rbac::v1::ClusterRoleBinding;
use kube::api::{Api, PostParams};
use pakket_api::{ConditionType, Instance, ProvisionerClass, ProvisionerClassSpec};
use pakket_runtime::kernel::controller;
use pakket_runtime::provisioner::{ObjectsError, ObjectsRequest, Provisioner};
use pakket_testkit::{
    condition_is, eventually, install_crds, message_of, reason_is, wait_for_instance,
};
use serde_json::{Value, json};

mod plain_fixture;

/// Plain manifests, plus what "later versions" of this provisioner render
/// from the same content: version 2 adds a ConfigMap (no right), version
/// 3 also a ClusterRoleBinding to `view` (a new right).
struct Upgradable {
    id: String,
    version: Arc<AtomicU8>,
    namespace: String,
    binding: String,
}

impl Provisioner for Upgradable {
    fn id(&self) -> &str {
        &self.id
    }

    fn objects(&self, request: &ObjectsRequest<'_>) -> Result<Vec<Value>, ObjectsError> {
        let mut objects =
            pakket_runtime::manifest::load_objects(request.content, request.max_object_size)
                .map_err(|error| ObjectsError::Content(error.to_string()))?;
        let version = self.version.load(Ordering::SeqCst);
        if version >= 2 {
            objects.push(json!({
                "apiVersion": "v1", "kind": "ConfigMap",
                "metadata": { "name": "added-by-v2", "namespace": self.namespace },
                "data": { "value": "v2" },
            }));
        }
        if version >= 3 {
            objects.push(json!({
                "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
                "metadata": { "name": self.binding },
                "roleRef": { "apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "view" },
                "subjects": [{ "kind": "ServiceAccount", "name": "default", "namespace": self.namespace }],
            }));
        }
        Ok(objects)
    }
}

/// Runs the controller with the provisioner at `version` until aborted.
fn start(
    client: &kube::Client,
    id: &str,
    store: &std::path::Path,
    provisioner: &Upgradable,
) -> tokio::task::JoinHandle<()> {
    let provisioner = Upgradable {
        id: id.to_owned(),
        version: Arc::clone(&provisioner.version),
        namespace: provisioner.namespace.clone(),
        binding: provisioner.binding.clone(),
    };
    let options = controller::RunOptions::new(store.to_path_buf());
    let client = client.clone();
    tokio::spawn(async move {
        let _ = controller::run_with(client, provisioner, options).await;
    })
}

#[tokio::test]
async fn an_upgraded_provisioner_applies_a_new_render_only_within_the_rights_that_were_approved() {
    let scope = pakket_testkit::Scope::new("rerender").await;
    install_crds(&scope.client).await.unwrap();
    let id = format!("test.pakket.dev/{}", scope.id);
    let store = scope.path("store");
    let provisioner = Upgradable {
        id: id.clone(),
        version: Arc::new(AtomicU8::new(1)),
        namespace: scope.namespace.clone(),
        binding: scope.name("viewer"),
    };
    let class = ProvisionerClass {
        metadata: scope.meta("class"),
        spec: ProvisionerClassSpec {
            provisioner: id.clone(),
            parameters: json!({ "approval": "Android" }).as_object().cloned(),
        },
        status: None,
    };
    Api::<ProvisionerClass>::all(scope.client.clone())
        .create(&PostParams::default(), &class)
        .await
        .unwrap();
    let content: ConfigMap = serde_json::from_value(json!({
        "metadata": { "name": "content", "labels": { pakket_api::BUNDLE_CONTENT_LABEL: "true" } },
        "immutable": true,
        "data": { "a.yaml": format!(
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: original\n  namespace: {}\ndata:\n  value: v1\n",
            scope.namespace
        ) },
    }))
    .unwrap();
    Api::<ConfigMap>::namespaced(scope.client.clone(), &scope.namespace)
        .create(&PostParams::default(), &content)
        .await
        .unwrap();
    let mut running = start(&scope.client, &id, &store, &provisioner);

    // A first install under Android waits for a person, who approves it.
    let instances: Api<Instance> = Api::all(scope.client.clone());
    let instance: Instance = serde_json::from_value(json!({
        "apiVersion": "core.pakket.dev/v1alpha1", "kind": "Instance",
        "metadata": { "name": scope.name("instance"), "labels": scope.labels() },
        "spec": { "class": scope.name("class"), "bundle": { "name": scope.name("bundle"), "spec": {
            "class": scope.name("class"), "refs": ["file://content"],
            "volumeMounts": [{ "mountPath": "/content", "configMap": { "name": "content", "namespace": scope.namespace } }],
        } } },
    }))
    .unwrap();
    instances
        .create(&PostParams::default(), &instance)
        .await
        .unwrap();
    let name = scope.name("instance");
    wait_for_instance(&instances, &name, "waiting for a person", |i| {
        reason_is(i, ConditionType::Approved, "ApprovalPending")
            && condition_is(i, ConditionType::Unpacked, "True")
    })
    .await;
    plain_fixture::set_approval(&instances, &name, "True", "ApprovedByUser").await;
    let installed = wait_for_instance(&instances, &name, "installed, its render recorded", |i| {
        condition_is(i, ConditionType::Installed, "True")
            && i.status
                .as_ref()
                .and_then(|s| s.approval.as_ref())
                .is_some_and(|a| a.rendered.is_some())
    })
    .await;
    let first_render = installed.status.unwrap().approval.unwrap().rendered;
    let config_maps: Api<ConfigMap> = Api::namespaced(scope.client.clone(), &scope.namespace);

    // Upgraded to version 2 and restarted: one more ConfigMap, no right.
    // The person's approval does not cover the new render: the class's
    // policy judges it anew, and says what changed.
    running.abort();
    provisioner.version.store(2, Ordering::SeqCst);
    running = start(&scope.client, &id, &store, &provisioner);
    let carried = wait_for_instance(&instances, &name, "the new render installed", |i| {
        condition_is(i, ConditionType::Installed, "True")
            && i.status
                .as_ref()
                .and_then(|s| s.approval.as_ref())
                .is_some_and(|a| a.rendered != first_render)
    })
    .await;
    assert!(reason_is(
        &carried,
        ConditionType::Approved,
        "ApprovedByPolicy"
    ));
    let message = message_of(&carried, ConditionType::Approved);
    assert!(
        message.contains("the objects it writes changed since"),
        "says why it was judged again: {message}"
    );
    eventually("the added ConfigMap is installed", || async {
        config_maps.get_opt("added-by-v2").await.unwrap().is_some()
    })
    .await;

    // The person's approval was told once: the restart did not tell it
    // again. (The recorder folds repeats of one Event into a count, so the
    // counts are what is summed.)
    let approvals = || async {
        pakket_testkit::instance_events(&scope.client, &name)
            .await
            .iter()
            .filter(|event| event.reason.as_deref() == Some("ApprovedByUser"))
            .map(|event| {
                event
                    .series
                    .as_ref()
                    .and_then(|series| series.count)
                    .or(event.count)
                    .unwrap_or(1)
            })
            .sum::<i32>()
    };
    assert_eq!(approvals().await, 1, "one person, one decision, one Event");

    // Version 3 renders a binding to `view` as well: a right nothing
    // running holds. It waits for a person, naming it; nothing is written.
    running.abort();
    provisioner.version.store(3, Ordering::SeqCst);
    running = start(&scope.client, &id, &store, &provisioner);
    let waiting = wait_for_instance(&instances, &name, "the new render waits", |i| {
        reason_is(i, ConditionType::Approved, "ApprovalPending")
    })
    .await;
    let message = message_of(&waiting, ConditionType::Approved);
    // The class's Android policy compares the new render with what runs,
    // names the right, and says why it asks again.
    assert!(
        message.contains("bound to ClusterRole view"),
        "names the new right: {message}"
    );
    assert!(
        message.contains("the objects it writes changed since"),
        "says what changed since the approval: {message}"
    );
    let bindings: Api<ClusterRoleBinding> = Api::all(scope.client.clone());
    assert!(
        bindings
            .get_opt(&scope.name("viewer"))
            .await
            .unwrap()
            .is_none(),
        "nothing of the new render was written"
    );

    // A person approves: the new render installs.
    plain_fixture::set_approval(&instances, &name, "True", "ApprovedByUser").await;
    eventually("the binding is installed once approved", || async {
        bindings
            .get_opt(&scope.name("viewer"))
            .await
            .unwrap()
            .is_some()
    })
    .await;
    eventually("her second decision is told", || async {
        approvals().await >= 2
    })
    .await;
    let told: Vec<String> = pakket_testkit::instance_events(&scope.client, &name)
        .await
        .iter()
        .filter(|event| event.reason.as_deref() == Some("ApprovedByUser"))
        .map(|event| {
            format!(
                "{:?} x{:?}",
                event.message,
                event.series.as_ref().and_then(|s| s.count)
            )
        })
        .collect();
    assert_eq!(approvals().await, 2, "each decision told once: {told:?}");
    running.abort();
    bindings
        .delete(&scope.name("viewer"), &Default::default())
        .await
        .unwrap();
    scope.cleanup().await;
}
