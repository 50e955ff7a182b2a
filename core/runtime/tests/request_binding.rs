//! An approval covers the request, not only the content, on the real
//! control plane (issue 39's "config rides the approval"). The provisioner
//! here places every object in the namespace `spec.config.namespace`
//! names, as the runtime guide's example provisioner does: the same Bundle
//! at the same digest renders elsewhere when the config changes. A change
//! to the config after a decision (a person's or a policy's) is a new
//! request: nothing is written where the new config points until it is
//! judged anew, what runs stays, and the status says what changed.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use k8s_openapi::api::rbac::v1::{Role, RoleBinding};
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use pakket_api::{
    ApprovalPolicy, ConditionType, CreatorRecord, Instance, LAST_CHANGED_BY_ANNOTATION,
    ProvisionerClass,
};
use pakket_runtime::kernel::controller;
use pakket_runtime::provisioner::{ObjectsError, ObjectsRequest, Provisioner};
use pakket_testkit::{Scope, condition_is, install_crds, message_of, reason_is, wait_for_instance};
use serde_json::{Value, json};

mod plain_fixture;

/// Plain manifests, each placed in `spec.config.namespace`.
struct Placed {
    id: String,
}

impl Provisioner for Placed {
    fn id(&self) -> &str {
        &self.id
    }

    fn objects(&self, request: &ObjectsRequest<'_>) -> Result<Vec<Value>, ObjectsError> {
        let mut objects =
            pakket_runtime::manifest::load_objects(request.content, request.max_object_size)
                .map_err(|error| ObjectsError::Content(error.to_string()))?;
        let namespace = request
            .config()
            .and_then(|config| config.get("namespace"))
            .and_then(Value::as_str)
            .ok_or_else(|| ObjectsError::Config {
                field: "spec.config.namespace".into(),
                problem: "missing".into(),
            })?;
        for object in &mut objects {
            object["metadata"]["namespace"] = json!(namespace);
        }
        Ok(objects)
    }
}

/// A scope, a second namespace the config can point at, a class with
/// `parameters`, the content (one ConfigMap `app`), the controller with
/// the fixture's record key, and alice's Instance placing it in the
/// scope's namespace.
struct Stage {
    scope: Scope,
    other: String,
    running: tokio::task::JoinHandle<()>,
}

impl Stage {
    async fn new(test: &str, parameters: impl FnOnce(&Scope) -> Value) -> Self {
        let scope = Scope::new(test).await;
        let parameters = parameters(&scope);
        install_crds(&scope.client).await.unwrap();
        let other = format!("{}-other", scope.namespace);
        let namespace: Namespace = serde_json::from_value(json!({
            "metadata": { "name": other, "labels": scope.labels() },
        }))
        .unwrap();
        Api::<Namespace>::all(scope.client.clone())
            .create(&PostParams::default(), &namespace)
            .await
            .unwrap();
        let id = format!("test.pakket.dev/{}", scope.id);
        let class: ProvisionerClass = serde_json::from_value(json!({
            "metadata": { "name": scope.name("class"), "labels": scope.labels() },
            "spec": { "provisioner": id, "parameters": parameters },
        }))
        .unwrap();
        Api::<ProvisionerClass>::all(scope.client.clone())
            .create(&PostParams::default(), &class)
            .await
            .unwrap();
        let content: ConfigMap = serde_json::from_value(json!({
            "metadata": { "name": "content", "labels": { pakket_api::BUNDLE_CONTENT_LABEL: "true" } },
            "immutable": true,
            "data": { "app.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app\ndata:\n  value: v1\n" },
        }))
        .unwrap();
        Api::<ConfigMap>::namespaced(scope.client.clone(), &scope.namespace)
            .create(&PostParams::default(), &content)
            .await
            .unwrap();
        // The requesters may read the content (the provisioner reads it on
        // their behalf), and nothing else.
        let reader = json!({
            "metadata": { "name": "content-reader", "namespace": scope.namespace },
            "rules": [{ "apiGroups": [""], "resources": ["configmaps"], "resourceNames": ["content"], "verbs": ["get"] }],
        });
        Api::<Role>::namespaced(scope.client.clone(), &scope.namespace)
            .create(
                &PostParams::default(),
                &serde_json::from_value(reader).unwrap(),
            )
            .await
            .unwrap();
        let readers = json!({
            "metadata": { "name": "content-readers", "namespace": scope.namespace },
            "roleRef": { "apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "content-reader" },
            "subjects": [
                { "apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "alice" },
                { "apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "mallory" },
            ],
        });
        Api::<RoleBinding>::namespaced(scope.client.clone(), &scope.namespace)
            .create(
                &PostParams::default(),
                &serde_json::from_value(readers).unwrap(),
            )
            .await
            .unwrap();
        let options = controller::RunOptions {
            record_key: Some(plain_fixture::record_key()),
            ..controller::RunOptions::new(scope.path("store"))
        };
        let client = scope.client.clone();
        let provisioner = Placed { id };
        let running = tokio::spawn(async move {
            let _ = controller::run_with(client, provisioner, options).await;
        });
        let stage = Self {
            scope,
            other,
            running,
        };
        let mut instance: Instance = serde_json::from_value(json!({
            "apiVersion": "core.pakket.dev/v1alpha1", "kind": "Instance",
            "metadata": { "name": stage.name(), "labels": stage.scope.labels() },
            "spec": {
                "class": stage.scope.name("class"),
                "config": { "namespace": stage.scope.namespace },
                "bundle": { "name": stage.scope.name("bundle"), "spec": {
                    "class": stage.scope.name("class"), "refs": ["file://content"],
                    "volumeMounts": [{ "mountPath": "/content", "configMap": { "name": "content", "namespace": stage.scope.namespace } }],
                } },
            },
        }))
        .unwrap();
        // What the admission webhook records on create.
        let alice = CreatorRecord::new("alice", None, vec!["system:authenticated".into()]);
        instance.metadata.annotations = Some(BTreeMap::from([(
            pakket_api::CREATED_BY_ANNOTATION.to_owned(),
            plain_fixture::sealed(&instance, &alice),
        )]));
        stage
            .instances()
            .create(&PostParams::default(), &instance)
            .await
            .unwrap();
        stage
    }

    fn name(&self) -> String {
        self.scope.name("instance")
    }

    fn instances(&self) -> Api<Instance> {
        Api::all(self.scope.client.clone())
    }

    async fn app_in(&self, namespace: &str) -> Option<ConfigMap> {
        Api::<ConfigMap>::namespaced(self.scope.client.clone(), namespace)
            .get_opt("app")
            .await
            .unwrap()
    }

    /// `user` points the Instance's config at the other namespace, with
    /// the record the webhook would seal for her change.
    async fn point_elsewhere_as(&self, user: &str) -> i64 {
        let mut changed = self.instances().get(&self.name()).await.unwrap();
        changed.spec.config = json!({ "namespace": self.other }).as_object().cloned();
        let record = CreatorRecord::new(user, None, vec!["system:authenticated".into()]);
        let sealed = record
            .sealed(
                &plain_fixture::record_key(),
                LAST_CHANGED_BY_ANNOTATION,
                &self.name(),
                &changed.spec,
            )
            .to_annotation();
        let patch = json!({
            "metadata": { "annotations": { LAST_CHANGED_BY_ANNOTATION: sealed } },
            "spec": { "config": changed.spec.config },
        });
        let patched = self
            .instances()
            .patch(&self.name(), &PatchParams::default(), &Patch::Merge(&patch))
            .await
            .unwrap();
        patched.metadata.generation.unwrap()
    }

    /// Waits until the `Approved` condition describes `generation` and
    /// passes `check`.
    async fn approval_of(
        &self,
        generation: i64,
        what: &str,
        check: impl Fn(&Instance) -> bool,
    ) -> Instance {
        wait_for_instance(&self.instances(), &self.name(), what, |i| {
            i.condition(ConditionType::Approved)
                .is_some_and(|c| c.observed_generation == Some(generation))
                && check(i)
        })
        .await
    }

    /// `user` points the approved Instance elsewhere; waits until that
    /// new request waits for a decision, checks that nothing was written
    /// where it points and what runs stays, and returns the new generation
    /// and the `Approved` message.
    async fn pointed_elsewhere_waits(&self, user: &str, what: &str) -> (i64, String) {
        let generation = self.point_elsewhere_as(user).await;
        let waiting = self
            .approval_of(generation, what, |i| {
                reason_is(i, ConditionType::Approved, "ApprovalPending")
            })
            .await;
        assert!(
            self.app_in(&self.other).await.is_none(),
            "nothing is written where the new config points"
        );
        assert!(
            self.app_in(&self.scope.namespace).await.is_some(),
            "what runs stays"
        );
        (generation, message_of(&waiting, ConditionType::Approved))
    }

    async fn cleanup(self) {
        self.running.abort();
        let _ = Api::<Namespace>::all(self.scope.client.clone())
            .delete(&self.other, &DeleteParams::default())
            .await;
        self.scope.cleanup().await;
    }
}

#[tokio::test]
async fn a_persons_approval_covers_the_config_it_was_given_and_a_new_config_waits_for_a_person() {
    let stage = Stage::new("request-person", |_| json!({ "approval": "Manual" })).await;
    let instances = stage.instances();
    let name = stage.name();
    let waiting = wait_for_instance(&instances, &name, "waiting for a person", |i| {
        reason_is(i, ConditionType::Approved, "ApprovalPending")
            && condition_is(i, ConditionType::Unpacked, "True")
    })
    .await;
    let shown = waiting.status.unwrap().pending_request;
    assert!(
        shown.as_ref().is_some_and(|shown| !shown.config.is_empty()),
        "the status shows what a person would approve: {shown:?}"
    );
    plain_fixture::set_approval(&instances, &name, "True", "ApprovedByUser").await;
    let installed = wait_for_instance(&instances, &name, "installed where approved", |i| {
        condition_is(i, ConditionType::Installed, "True")
    })
    .await;
    assert_eq!(
        installed.status.as_ref().unwrap().pending_request,
        None,
        "nothing waits once approved"
    );
    let judged = installed.status.unwrap().approval.unwrap().judged;
    assert!(
        judged.is_some_and(|judged| !judged.config.is_empty() && !judged.effects.is_empty()),
        "the runtime recorded what the person's approval covers"
    );
    assert!(stage.app_in(&stage.scope.namespace).await.is_some());

    // The requester points the approved Instance elsewhere: a new request.
    let (generation, message) = stage
        .pointed_elsewhere_waits("alice", "the new config waits for a person")
        .await;
    assert!(
        message.contains("covered an earlier request")
            && message.contains("the Instance's spec changed since"),
        "says what changed since the approval: {message}"
    );

    // A person approves the new request: it installs there, and what it
    // deletes (the ConfigMap where it ran) is part of what was approved.
    plain_fixture::set_approval(&instances, &name, "True", "ApprovedByUser").await;
    let moved = wait_for_instance(&instances, &name, "installed where it now points", |i| {
        condition_is(i, ConditionType::Installed, "True")
            && i.status
                .as_ref()
                .is_some_and(|s| s.observed_generation == Some(generation))
    })
    .await;
    assert!(stage.app_in(&stage.other).await.is_some());
    pakket_testkit::eventually("the old placement is pruned", || async {
        stage.app_in(&stage.scope.namespace).await.is_none()
    })
    .await;
    let judged = moved.status.unwrap().approval.unwrap().judged.unwrap();
    assert!(
        !judged.deletes.is_empty(),
        "the approval covers what the change deleted"
    );
    stage.cleanup().await;
}

#[tokio::test]
async fn a_config_change_after_a_policy_approved_is_judged_anew_with_its_author_as_requester() {
    let stage = Stage::new(
        "request-policy",
        |scope| json!({ "approval": "Policy", "approvalPolicy": scope.name("policy") }),
    )
    .await;
    let policy_name = stage.scope.name("policy");
    // The policy approves alice's ConfigMaps in her own namespace, and
    // nothing else.
    let policy: ApprovalPolicy = serde_json::from_value(json!({
        "metadata": { "name": policy_name, "labels": stage.scope.labels() },
        "spec": { "rules": [{
            "name": "own-namespace",
            "cel": format!(
                "requester.name == 'alice' && instance.config.namespace == '{}'",
                stage.scope.namespace
            ),
            "outcome": "Approve",
        }] },
    }))
    .unwrap();
    Api::<ApprovalPolicy>::all(stage.scope.client.clone())
        .create(&PostParams::default(), &policy)
        .await
        .unwrap();
    let instances = stage.instances();
    let name = stage.name();
    wait_for_instance(&instances, &name, "installed under the policy", |i| {
        condition_is(i, ConditionType::Installed, "True")
            && reason_is(i, ConditionType::Approved, "ApprovedByPolicy")
    })
    .await;
    assert!(stage.app_in(&stage.scope.namespace).await.is_some());

    // mallory, who may edit the Instance, points it elsewhere.
    let (_, message) = stage
        .pointed_elsewhere_waits("mallory", "the change judged anew")
        .await;
    assert!(
        message.contains("no rule matched") && message.contains("covered an earlier request"),
        "the policy judged the new request and said why it asked again: {message}"
    );
    // For tools, beside the words: which policy handed it to a person.
    let waiting = instances.get(&name).await.unwrap();
    let causes = waiting
        .status
        .map(|status| status.causes)
        .unwrap_or_default();
    let cause = pakket_api::cause::cause_of(&causes, "Approved", "ApprovalPending")
        .unwrap_or_else(|| panic!("a cause beside ApprovalPending: {causes:?}"));
    assert_eq!(cause.kind, pakket_api::CauseKind::PolicyAsksPerson);
    let verdict = cause.policy.as_ref().expect("the policy's verdict");
    assert_eq!(
        (verdict.name.as_str(), verdict.rule, verdict.refused),
        (policy_name.as_str(), None, false)
    );
    let _ = Api::<ApprovalPolicy>::all(stage.scope.client.clone())
        .delete(&policy_name, &DeleteParams::default())
        .await;
    stage.cleanup().await;
}
