//! What the cluster tests share: running the real binary as a kubeconfig
//! user, making Instances and Bundles in a test's scope, writing statuses
//! as the provisioner would, and granting RBAC for the length of a test.

use std::time::Duration;

use jiff::Timestamp;
use k8s_openapi::api::authorization::v1::{
    ResourceAttributes, SelfSubjectAccessReview, SelfSubjectAccessReviewSpec,
};
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding, PolicyRule, RoleRef, Subject};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::api::{Api, DeleteParams, ObjectMeta, Patch, PatchParams, PostParams};
use pakket_api::Reason::{ApprovalPending, HealthUnknown, InstallPending, UnpackSucceeded};
use pakket_api::condition::ConditionStatus::{False, True, Unknown};
use pakket_api::condition::{self, ConditionStatus};
use pakket_api::{Bundle, Instance, Reason};
use pakket_testkit::{Scope, cluster};
use serde_json::{Value, json};

/// The plugin binary cargo built for these tests.
pub const BIN: &str = env!("CARGO_BIN_EXE_kubectl-instance");

/// What one run of the plugin did.
#[derive(Debug)]
pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

/// Runs `kubectl-instance --kubeconfig <test kubeconfig> --context <context> <args>`.
pub async fn plugin(context: &str, args: &[&str]) -> Run {
    let output = tokio::process::Command::new(BIN)
        .arg("--kubeconfig")
        .arg(cluster().kubeconfig())
        .arg("--context")
        .arg(context)
        .args(args)
        .env_remove("KUBECONFIG")
        .output()
        .await
        .expect("running kubectl-instance");
    Run {
        code: output.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    }
}

/// Creates Instance `<scope>-<suffix>` of a class no provisioner serves
/// (so nothing but the test writes its status), wanting `bundle`.
pub async fn create_instance(scope: &Scope, suffix: &str, bundle: &str) -> String {
    let name = scope.name(suffix);
    let instance: Instance = serde_json::from_value(json!({
        "apiVersion": "core.pakket.dev/v1alpha1",
        "kind": "Instance",
        "metadata": { "name": name, "labels": scope.labels() },
        "spec": { "class": scope.name("no-provisioner"), "bundle": { "name": bundle } },
    }))
    .expect("a valid Instance");
    Api::<Instance>::all(scope.client.clone())
        .create(&PostParams::default(), &instance)
        .await
        .unwrap_or_else(|error| panic!("creating Instance {name}: {error}"));
    name
}

/// The digest [`pending_instance`]'s Bundle pins.
pub const PENDING_DIGEST: &str =
    "sha256:1111111111111111111111111111111111111111111111111111111111111111";

/// Creates Instance `<scope>-<suffix>` wanting Bundle `<scope>-<suffix>-v1`,
/// and writes the status of one whose Bundle is unpacked and which waits
/// for approval; returns the Instance's and the Bundle's names.
pub async fn pending_instance(scope: &Scope, suffix: &str) -> (String, String) {
    let bundle = scope.name(&format!("{suffix}-v1"));
    // Unpacked, with the digest an approval names.
    create_bundle(
        scope,
        &bundle,
        &["docker://registry.example/web:v1"],
        &[],
        Some(json!({
            "unpacked": "Done",
            "source": { "ref": "docker://registry.example/web:v1", "digest": PENDING_DIGEST },
        })),
    )
    .await;
    let name = create_instance(scope, suffix, &bundle).await;
    let waiting = format!(
        "waiting for approval (ProvisionerClass x has approval: Manual); run `kubectl instance approve {name}`"
    );
    let list: [(Reason, _, &str); 4] = [
        (ApprovalPending, False, waiting.as_str()),
        (UnpackSucceeded, True, "Bundle unpacked 2 objects"),
        (InstallPending, False, "nothing is applied before approval"),
        (HealthUnknown, Unknown, "nothing installed yet"),
    ];
    set_status(scope, &name, json!({ "conditions": conditions(&list) })).await;
    (name, bundle)
}

/// Creates Bundle `name` with `refs`, extra labels, and `status` (if any).
pub async fn create_bundle(
    scope: &Scope,
    name: &str,
    refs: &[&str],
    labels: &[(&str, &str)],
    status: Option<Value>,
) {
    let mut all_labels = scope.labels();
    for (key, value) in labels {
        all_labels.insert((*key).to_owned(), (*value).to_owned());
    }
    let bundle: Bundle = serde_json::from_value(json!({
        "apiVersion": "core.pakket.dev/v1alpha1",
        "kind": "Bundle",
        "metadata": { "name": name, "labels": all_labels },
        "spec": { "class": scope.name("no-provisioner"), "refs": refs },
    }))
    .expect("a valid Bundle");
    let bundles: Api<Bundle> = Api::all(scope.client.clone());
    bundles
        .create(&PostParams::default(), &bundle)
        .await
        .unwrap_or_else(|error| panic!("creating Bundle {name}: {error}"));
    if let Some(status) = status {
        bundles
            .patch_status(
                name,
                &PatchParams::default(),
                &Patch::Merge(json!({ "status": status })),
            )
            .await
            .unwrap_or_else(|error| panic!("writing Bundle {name}'s status: {error}"));
    }
}

/// The four conditions, stamped now, the way the runtime writes them.
pub fn conditions(list: &[(Reason, ConditionStatus, &str)]) -> Vec<Condition> {
    let mut conditions = Vec::new();
    for (reason, status, message) in list {
        condition::set(
            &mut conditions,
            condition::new(*reason, *status, *message, Some(1), Timestamp::now()),
        );
    }
    conditions
}

/// Writes Instance `name`'s status as admin, replacing whatever was there.
pub async fn set_status(scope: &Scope, name: &str, status: Value) {
    Api::<Instance>::all(scope.client.clone())
        .patch_status(
            name,
            &PatchParams::default(),
            &Patch::Merge(json!({ "status": status })),
        )
        .await
        .unwrap_or_else(|error| panic!("writing Instance {name}'s status: {error}"));
}

/// Instance `name` as admin sees it.
pub async fn get_instance(scope: &Scope, name: &str) -> Instance {
    Api::<Instance>::all(scope.client.clone())
        .get(name)
        .await
        .unwrap_or_else(|error| panic!("reading Instance {name}: {error}"))
}

/// A ClusterRole and its binding to one user, named after the scope.
pub struct Grant {
    name: String,
    client: kube::Client,
}

/// `instances`: get, list, approve; `instances/status`: update, patch.
pub fn approver_rules() -> Vec<PolicyRule> {
    vec![
        rule("instances", &["get", "list", "approve"]),
        rule("instances/status", &["update", "patch"]),
        rule("bundles", &["get", "list"]),
    ]
}

/// `instances`: get, list; `instances/status`: update, patch. All RBAC
/// asks of an approval, without the webhook's `approve` verb.
pub fn status_writer_rules() -> Vec<PolicyRule> {
    vec![
        rule("instances", &["get", "list"]),
        rule("instances/status", &["update", "patch"]),
        rule("bundles", &["get", "list"]),
    ]
}

/// `instances`: approve only, the verb Pakket's webhook asks for.
pub fn approve_verb_rules() -> Vec<PolicyRule> {
    vec![rule("instances", &["approve"])]
}

/// `instances`: get, list only.
pub fn reader_rules() -> Vec<PolicyRule> {
    vec![rule("instances", &["get", "list"])]
}

/// `instances` and `bundles`: get, list: everything an approver reads.
pub fn reviewer_rules() -> Vec<PolicyRule> {
    vec![
        rule("instances", &["get", "list"]),
        rule("bundles", &["get", "list"]),
    ]
}

fn rule(resource: &str, verbs: &[&str]) -> PolicyRule {
    PolicyRule {
        api_groups: Some(vec![pakket_api::GROUP.to_owned()]),
        resources: Some(vec![resource.to_owned()]),
        verbs: verbs.iter().map(|verb| (*verb).to_owned()).collect(),
        ..PolicyRule::default()
    }
}

impl Grant {
    /// Grants `rules` to `user` and waits until the apiserver's authorizer
    /// says the user has the first rule's first verb.
    pub async fn new(scope: &Scope, suffix: &str, user: &str, rules: Vec<PolicyRule>) -> Self {
        let name = scope.name(suffix);
        let meta = ObjectMeta {
            name: Some(name.clone()),
            labels: Some(scope.labels()),
            ..ObjectMeta::default()
        };
        let first = rules[0].clone();
        let role = ClusterRole {
            metadata: meta.clone(),
            rules: Some(rules),
            ..ClusterRole::default()
        };
        let binding = ClusterRoleBinding {
            metadata: meta,
            role_ref: RoleRef {
                api_group: "rbac.authorization.k8s.io".into(),
                kind: "ClusterRole".into(),
                name: name.clone(),
            },
            subjects: Some(vec![Subject {
                kind: "User".into(),
                name: user.into(),
                api_group: Some("rbac.authorization.k8s.io".into()),
                ..Subject::default()
            }]),
        };
        let params = PostParams::default();
        Api::<ClusterRole>::all(scope.client.clone())
            .create(&params, &role)
            .await
            .expect("creating the ClusterRole");
        Api::<ClusterRoleBinding>::all(scope.client.clone())
            .create(&params, &binding)
            .await
            .expect("creating the ClusterRoleBinding");
        let (resource, subresource) = match first.resources.as_ref().unwrap()[0].split_once('/') {
            Some((resource, sub)) => (resource.to_owned(), Some(sub.to_owned())),
            None => (first.resources.as_ref().unwrap()[0].clone(), None),
        };
        wait_allowed(
            user,
            ResourceAttributes {
                group: first
                    .api_groups
                    .as_ref()
                    .and_then(|groups| groups.first().cloned()),
                resource: Some(resource),
                subresource,
                verb: Some(first.verbs[0].clone()),
                ..ResourceAttributes::default()
            },
        )
        .await;
        Self {
            name,
            client: scope.client.clone(),
        }
    }

    /// Deletes the ClusterRole and its binding.
    pub async fn revoke(self) {
        let params = DeleteParams::default();
        let _ = Api::<ClusterRoleBinding>::all(self.client.clone())
            .delete(&self.name, &params)
            .await;
        let _ = Api::<ClusterRole>::all(self.client.clone())
            .delete(&self.name, &params)
            .await;
    }
}

/// RBAC reaches the authorizer through its informers; ask as the user until
/// the grant shows (at most 10 s).
async fn wait_allowed(user: &str, attributes: ResourceAttributes) {
    let client = cluster().client_as(user).await;
    let reviews: Api<SelfSubjectAccessReview> = Api::all(client);
    let review = SelfSubjectAccessReview {
        spec: SelfSubjectAccessReviewSpec {
            resource_attributes: Some(attributes),
            ..SelfSubjectAccessReviewSpec::default()
        },
        ..SelfSubjectAccessReview::default()
    };
    for _ in 0..100 {
        let answer = reviews
            .create(&PostParams::default(), &review)
            .await
            .expect("SelfSubjectAccessReview");
        if answer.status.is_some_and(|status| status.allowed) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("the grant to {user} did not reach the authorizer within 10 s");
}

/// Runs the resolveset process (Catalog, Input and Operator controllers and
/// the resolver API over plain HTTP on loopback) for `scope`'s Catalogs,
/// Inputs and Operators, writing its set where `set` says.
pub async fn start_resolveset(
    scope: &Scope,
    set: pakket_resolveset::process::SetOptions,
) -> pakket_resolveset::process::Running {
    use pakket_resolveset::api::listen::Transport;
    use pakket_resolveset::process::{self, Options};
    process::start(
        scope.client.clone(),
        Options {
            store: scope.path("resolveset-store"),
            sources: Default::default(),
            allow_internal_addresses: false,
            max_catalog_file: process::DEFAULT_MAX_CATALOG_FILE,
            api_address: "127.0.0.1:0".parse().unwrap(),
            transport: Transport::from_flags("127.0.0.1:0".parse().unwrap(), true, None, None)
                .unwrap(),
            leader: None,
            selector: Some(scope.selector()),
            metrics: std::sync::Arc::new(pakket_runtime::kernel::serve::Metrics::new()),
            set,
            store_gc: Default::default(),
            record_key: None,
        },
    )
    .await
    .unwrap()
}
