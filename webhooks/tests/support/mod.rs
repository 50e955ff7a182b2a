//! What the webhook integration tests share: the webhook server on loopback
//! ([`LocalWebhooks`]), registered with the shared apiserver for this test's
//! objects only (an `objectSelector` on the scope label), RBAC grants named
//! after the scope, and a bounded retry for what the apiserver applies
//! eventually (new RBAC bindings).
//!
//! Not every test binary uses every helper.
#![allow(dead_code)]

use std::future::Future;
use std::path::{Path, PathBuf};
use std::time::Duration;

use k8s_openapi::api::authentication::v1::TokenRequest;
use k8s_openapi::api::core::v1::ServiceAccount;
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding, PolicyRule, RoleRef, Subject};
use kube::api::{Api, DeleteParams, ListParams, ObjectMeta, PostParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::{Client, Config};
use pakket_api::{Bundle, Instance, ProvisionerClass};
use pakket_testkit::Scope;
use pakket_webhooks::local::{LocalOptions, LocalWebhooks};
use serde_json::json;

/// A provisioner id no provisioner in the test suite serves, so nothing but
/// the webhook acts on these tests' objects.
pub const NO_PROVISIONER: &str = "webhooks.test.pakket.dev/none";

/// Retries `attempt` every 200 ms until it returns `Ok`, for at most 60 s
/// (what the apiserver applies eventually: RBAC, webhook configurations);
/// panics with the last error.
pub async fn eventually<T, F, Fut>(what: &str, mut attempt: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, String>>,
{
    let mut last = String::new();
    for _ in 0..300 {
        match attempt().await {
            Ok(value) => return value,
            Err(error) => last = error,
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    panic!("{what} did not happen within 60 s; last: {last}");
}

/// One test's webhooks: a scope, and the server on loopback registered for
/// objects carrying the scope label ([`LocalWebhooks`]).
pub struct Harness {
    /// The test's namespace, label and admin client.
    pub scope: Scope,
    /// The server and its registration.
    pub webhooks: LocalWebhooks,
}

impl Harness {
    /// Installs the CRDs, starts a server and registers it for objects
    /// carrying this test's scope label; returns once the apiserver calls it.
    pub async fn start(test: &str) -> Self {
        let _ = tracing_subscriber::fmt()
            .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
            .with_test_writer()
            .try_init();
        let scope = Scope::new(test).await;
        pakket_testkit::install_crds(&scope.client).await.unwrap();
        let options = LocalOptions::for_labels(scope.id.clone(), scope.labels());
        let webhooks = LocalWebhooks::start(scope.client.clone(), options)
            .await
            .unwrap();
        Self { scope, webhooks }
    }

    /// Stops the server; its registration stays, so calls to it fail.
    pub async fn stop_server(&mut self) {
        self.webhooks.stop_server().await;
    }

    /// Starts the server again on the same port; returns once it is called.
    pub async fn start_server(&mut self) {
        self.webhooks.restart_server().await.unwrap();
    }

    /// Metadata for a cluster-scoped object of this test: scope name and label.
    pub fn meta(&self, suffix: &str) -> ObjectMeta {
        self.scope.meta(suffix)
    }

    /// A ProvisionerClass of this test that no provisioner serves.
    pub fn class(&self, suffix: &str) -> ProvisionerClass {
        let mut class: ProvisionerClass = serde_json::from_value(json!({
            "apiVersion": "core.pakket.dev/v1alpha1",
            "kind": "ProvisionerClass",
            "metadata": {},
            "spec": {"provisioner": NO_PROVISIONER},
        }))
        .unwrap();
        class.metadata = self.meta(suffix);
        class
    }

    /// An Instance of this test naming Bundle `<suffix>-bundle` of `class`.
    pub fn instance(&self, suffix: &str, class: &str) -> Instance {
        let mut instance: Instance = serde_json::from_value(json!({
            "apiVersion": "core.pakket.dev/v1alpha1",
            "kind": "Instance",
            "metadata": {},
            "spec": {"class": class, "bundle": {"name": self.scope.name(&format!("{suffix}-bundle"))}},
        }))
        .unwrap();
        instance.metadata = self.meta(suffix);
        instance
    }

    /// A Bundle of this test with one image ref.
    pub fn bundle(&self, suffix: &str, class: &str) -> Bundle {
        self.bundle_with_refs(suffix, class, &["docker://quay.io/pakket/hello:v1"])
    }

    /// A Bundle of this test with the given refs.
    pub fn bundle_with_refs(&self, suffix: &str, class: &str, refs: &[&str]) -> Bundle {
        let mut bundle: Bundle = serde_json::from_value(json!({
            "apiVersion": "core.pakket.dev/v1alpha1",
            "kind": "Bundle",
            "metadata": {},
            "spec": {"class": class, "refs": refs},
        }))
        .unwrap();
        bundle.metadata = self.meta(suffix);
        bundle
    }

    /// Creates a ClusterRole `<scope>-<suffix>` with `rules` and binds it to
    /// `subjects`; both carry the scope label so cleanup finds them.
    pub async fn grant(&self, suffix: &str, subjects: Vec<Subject>, rules: Vec<PolicyRule>) {
        let name = self.scope.name(suffix);
        let role = ClusterRole {
            metadata: self.meta(suffix),
            rules: Some(rules),
            ..ClusterRole::default()
        };
        let binding = ClusterRoleBinding {
            metadata: self.meta(suffix),
            role_ref: RoleRef {
                api_group: "rbac.authorization.k8s.io".into(),
                kind: "ClusterRole".into(),
                name,
            },
            subjects: Some(subjects),
        };
        Api::<ClusterRole>::all(self.scope.client.clone())
            .create(&PostParams::default(), &role)
            .await
            .unwrap();
        Api::<ClusterRoleBinding>::all(self.scope.client.clone())
            .create(&PostParams::default(), &binding)
            .await
            .unwrap();
    }

    /// A client for a new ServiceAccount `name` in the scope's namespace,
    /// authenticated with a real token from the TokenRequest API.
    pub async fn service_account_client(&self, name: &str) -> (Client, Subject) {
        let accounts: Api<ServiceAccount> =
            Api::namespaced(self.scope.client.clone(), &self.scope.namespace);
        let account = ServiceAccount {
            metadata: ObjectMeta {
                name: Some(name.to_owned()),
                ..ObjectMeta::default()
            },
            ..ServiceAccount::default()
        };
        accounts
            .create(&PostParams::default(), &account)
            .await
            .unwrap();
        let token = accounts
            .create_token_request(name, &PostParams::default(), &TokenRequest::default())
            .await
            .unwrap()
            .status
            .unwrap()
            .token;
        let kubeconfig = Kubeconfig::read_from(self.scope.cluster.kubeconfig()).unwrap();
        let cluster = &kubeconfig.clusters[0];
        let inner = cluster.cluster.as_ref().unwrap();
        let text = json!({
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": cluster.name, "cluster": {
                "server": inner.server,
                "certificate-authority": inner.certificate_authority,
            }}],
            "users": [{"name": name, "user": {"token": token}}],
            "contexts": [{"name": name, "context": {"cluster": cluster.name, "user": name}}],
            "current-context": name,
        })
        .to_string();
        let config = Config::from_custom_kubeconfig(
            Kubeconfig::from_yaml(&text).unwrap(),
            &KubeConfigOptions::default(),
        )
        .await
        .unwrap();
        let subject = Subject {
            kind: "ServiceAccount".into(),
            name: name.to_owned(),
            namespace: Some(self.scope.namespace.clone()),
            ..Subject::default()
        };
        (Client::try_from(config).unwrap(), subject)
    }

    /// Removes the registration first (so nothing of this test is refused
    /// on the way out), then the server, the grants and the scope.
    pub async fn cleanup(self) {
        let Self { scope, webhooks } = self;
        webhooks.stop().await.unwrap();
        let labelled = ListParams::default().labels(&scope.selector());
        let _ = Api::<ClusterRoleBinding>::all(scope.client.clone())
            .delete_collection(&DeleteParams::default(), &labelled)
            .await;
        let _ = Api::<ClusterRole>::all(scope.client.clone())
            .delete_collection(&DeleteParams::default(), &labelled)
            .await;
        scope.cleanup().await;
    }
}

/// A user subject (the test users are token users of the control plane).
pub fn user(name: &str) -> Subject {
    Subject {
        kind: "User".into(),
        name: name.to_owned(),
        api_group: Some("rbac.authorization.k8s.io".into()),
        ..Subject::default()
    }
}

/// An RBAC rule in group core.pakket.dev.
pub fn pakket_rule(resources: &[&str], verbs: &[&str], names: &[&str]) -> PolicyRule {
    PolicyRule {
        api_groups: Some(vec![pakket_api::GROUP.to_owned()]),
        resources: Some(resources.iter().map(|r| (*r).to_owned()).collect()),
        verbs: verbs.iter().map(|v| (*v).to_owned()).collect(),
        resource_names: (!names.is_empty())
            .then(|| names.iter().map(|n| (*n).to_owned()).collect()),
        ..PolicyRule::default()
    }
}

/// What the test users need besides the webhook's verbs: to write Bundles,
/// Instances and Instance status at all.
pub fn writer_rules() -> Vec<PolicyRule> {
    vec![pakket_rule(
        &["bundles", "instances", "instances/status"],
        &["get", "list", "create", "update", "patch"],
        &[],
    )]
}

/// The message of a refused request, `None` if it succeeded.
pub fn refusal<T>(result: kube::Result<T>) -> Option<String> {
    result.err().map(|error| error.to_string())
}

/// A file of this crate, for tests that read `deploy/`.
pub fn repo_path(relative: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join(relative)
}
