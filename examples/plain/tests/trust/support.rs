//! One attack's stage: a scope on the shared control plane, Pakket's
//! admission webhooks over TLS (registered for this scope's objects), a real
//! `pakket-plain` process with a provisioner id of its own and the
//! webhooks' record key, a ProvisionerClass, and the token users alice and
//! bob with exactly the rights a test grants them.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::Stdio;

use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::api::rbac::v1::{
    ClusterRole, ClusterRoleBinding, PolicyRule, Role, RoleBinding, RoleRef, Subject,
};
use kube::Client;
use kube::api::{Api, DeleteParams, ListParams, ObjectMeta, Patch, PatchParams, PostParams};
use pakket_api::{Instance, ProvisionerClass, ProvisionerClassSpec};
use pakket_testkit::{Scope, cluster, install_crds, wait_for_instance};
use pakket_webhooks::local::{LocalOptions, LocalWebhooks};
use serde_json::{Value, json};
use tokio::process::{Child, Command};

/// Whether the stage runs Pakket's webhooks.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Webhooks {
    /// Registered for the scope's objects; the server runs with the
    /// admin's rights, or, on a shipped stage, its ServiceAccount's.
    On,
    /// Registered, the server running as the ServiceAccount `deploy/`
    /// gives it, whoever the provisioner runs as.
    #[allow(dead_code)]
    Shipped,
    /// Not registered at all (what a cluster looks like before they are
    /// installed, or after someone removed them).
    Off,
}

/// Whose rights the provisioner process runs with.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Rights {
    /// The admin's (the tests written before the shipped-RBAC harness).
    Admin,
    /// Its ServiceAccount's, with the RBAC `deploy/` ships
    /// ([`crate::shipped`]).
    Shipped,
}

pub struct Stage {
    pub scope: Scope,
    pub webhooks: Option<LocalWebhooks>,
    provisioner: Option<Child>,
    store: PathBuf,
    key_file: PathBuf,
    /// The provisioner's kubeconfig and lease namespace.
    identity: (PathBuf, String),
    pub id: String,
}

impl Stage {
    /// A stage whose class has `approval: <approval>`, its provisioner
    /// running with the admin's rights.
    pub async fn new(test: &str, approval: &str, webhooks: Webhooks) -> Self {
        Self::with_rights(test, approval, webhooks, Rights::Admin).await
    }

    /// A stage whose provisioner runs as its ServiceAccount, with the
    /// RBAC `deploy/` ships.
    #[allow(dead_code)]
    pub async fn shipped(test: &str, approval: &str, webhooks: Webhooks) -> Self {
        Self::with_rights(test, approval, webhooks, Rights::Shipped).await
    }

    async fn with_rights(test: &str, approval: &str, webhooks: Webhooks, rights: Rights) -> Self {
        let scope = Scope::new(test).await;
        install_crds(&scope.client).await.unwrap();
        let webhooks = match webhooks {
            Webhooks::Off => None,
            Webhooks::On | Webhooks::Shipped => {
                let mut options = LocalOptions::for_labels(scope.id.clone(), scope.labels());
                if webhooks == Webhooks::Shipped || rights == Rights::Shipped {
                    options.serving_client = Some(
                        crate::shipped::webhooks_client(
                            &scope.client,
                            cluster().kubeconfig(),
                            &scope,
                        )
                        .await,
                    );
                }
                Some(
                    LocalWebhooks::start(scope.client.clone(), options)
                        .await
                        .expect("starting the webhooks"),
                )
            }
        };
        let key_file = match &webhooks {
            Some(webhooks) => webhooks.record_key_file().to_path_buf(),
            None => {
                // The key a deployment would have: the provisioner still
                // verifies, there is just no webhook writing records.
                let file = scope.path("key");
                std::fs::write(&file, pakket_api::RecordKey::generate().1).unwrap();
                file
            }
        };
        let id = format!("test.pakket.dev/{}", scope.id);
        let store = scope.path("store");
        let identity = match rights {
            Rights::Admin => (
                cluster().kubeconfig().to_path_buf(),
                scope.namespace.clone(),
            ),
            Rights::Shipped => {
                let kubeconfig = crate::shipped::kubeconfig_for(&scope);
                crate::shipped::provisioner_kubeconfig(
                    &scope.client,
                    cluster().kubeconfig(),
                    &kubeconfig,
                )
                .await;
                // What the admin adds for a class of her own.
                crate::shipped::grant_classes(
                    &scope.client,
                    &scope.name("plain-classes"),
                    &scope.labels(),
                    &[scope.name("class")],
                )
                .await;
                (kubeconfig, crate::shipped::NAMESPACE.to_owned())
            }
        };
        let mut stage = Self {
            scope,
            webhooks,
            provisioner: None,
            store,
            key_file,
            identity,
            id,
        };
        stage.start_provisioner().await;
        stage.create_class(approval).await;
        stage
    }

    /// Registers Pakket's webhooks now (a stage started without them),
    /// sealing with the key the provisioner already has.
    pub async fn start_webhooks(&mut self) {
        let mut options = LocalOptions::for_labels(self.scope.id.clone(), self.scope.labels());
        options.record_key_file = Some(self.key_file.clone());
        self.webhooks = Some(
            LocalWebhooks::start(self.scope.client.clone(), options)
                .await
                .expect("starting the webhooks"),
        );
    }

    /// Starts the provisioner process (again).
    pub async fn start_provisioner(&mut self) {
        let child = Command::new(env!("CARGO_BIN_EXE_pakket-plain"))
            .args(["--id", &self.id, "--lease-namespace", &self.identity.1])
            // A killed provisioner's successor waits out its Lease: short
            // here, so restarts (the fault tests') take seconds.
            .args(["--lease-duration", "3"])
            .args(["--probe-address", "127.0.0.1:0", "--store"])
            .arg(&self.store)
            .arg("--record-key-file")
            .arg(&self.key_file)
            .env("KUBECONFIG", &self.identity.0)
            .env("RUST_LOG", "warn")
            .stdout(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .expect("starting pakket-plain");
        self.provisioner = Some(child);
    }

    /// The provisioner process's id, while it runs (the soak samples its
    /// memory).
    #[allow(dead_code)]
    pub fn provisioner_pid(&self) -> Option<u32> {
        self.provisioner.as_ref().and_then(Child::id)
    }

    /// The record key's file the provisioner verifies with (for replicas
    /// the fault tests start beside it).
    #[allow(dead_code)]
    pub fn key_file(&self) -> &std::path::Path {
        &self.key_file
    }

    /// Kills the provisioner (SIGKILL) and, with `lose_store`, its content
    /// store: what a pod restart on an emptyDir does.
    pub async fn kill_provisioner(&mut self, lose_store: bool) {
        if let Some(mut child) = self.provisioner.take() {
            let _ = child.kill().await;
        }
        if lose_store {
            let _ = std::fs::remove_dir_all(&self.store);
        }
    }

    async fn create_class(&self, approval: &str) {
        let class = ProvisionerClass {
            metadata: self.scope.meta("class"),
            spec: ProvisionerClassSpec {
                provisioner: self.id.clone(),
                parameters: Some(
                    json!({ "approval": approval })
                        .as_object()
                        .cloned()
                        .unwrap(),
                ),
            },
            status: None,
        };
        Api::<ProvisionerClass>::all(self.scope.client.clone())
            .create(&PostParams::default(), &class)
            .await
            .unwrap();
    }

    pub fn class(&self) -> String {
        self.scope.name("class")
    }

    pub fn namespace(&self) -> &str {
        &self.scope.namespace
    }

    pub async fn client_as(&self, user: &str) -> Client {
        cluster().client_as(user).await
    }

    pub fn admin(&self) -> Client {
        self.scope.client.clone()
    }

    /// A ClusterRole with `rules` bound to `user`, named after the scope and
    /// `suffix`, labelled so cleanup removes it.
    pub async fn grant(&self, suffix: &str, user: &str, rules: Vec<PolicyRule>) {
        let name = self.scope.name(suffix);
        let role = ClusterRole {
            metadata: self.scope.meta(suffix),
            rules: Some(rules),
            ..ClusterRole::default()
        };
        Api::<ClusterRole>::all(self.admin())
            .create(&PostParams::default(), &role)
            .await
            .unwrap();
        let binding = ClusterRoleBinding {
            metadata: self.scope.meta(suffix),
            role_ref: RoleRef {
                api_group: "rbac.authorization.k8s.io".into(),
                kind: "ClusterRole".into(),
                name: name.clone(),
            },
            subjects: Some(vec![Subject {
                api_group: Some("rbac.authorization.k8s.io".into()),
                kind: "User".into(),
                name: user.into(),
                namespace: None,
            }]),
        };
        Api::<ClusterRoleBinding>::all(self.admin())
            .create(&PostParams::default(), &binding)
            .await
            .unwrap();
    }

    /// A Role with `rules` in the scope's namespace, bound to `user`.
    pub async fn grant_in_namespace(&self, suffix: &str, user: &str, rules: Vec<PolicyRule>) {
        let role: Role = serde_json::from_value(json!({
            "metadata": { "name": suffix, "namespace": self.scope.namespace },
            "rules": rules,
        }))
        .unwrap();
        Api::<Role>::namespaced(self.admin(), &self.scope.namespace)
            .create(&PostParams::default(), &role)
            .await
            .unwrap();
        let binding: RoleBinding = serde_json::from_value(json!({
            "metadata": { "name": suffix, "namespace": self.scope.namespace },
            "roleRef": { "apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": suffix },
            "subjects": [{ "apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": user }],
        }))
        .unwrap();
        Api::<RoleBinding>::namespaced(self.admin(), &self.scope.namespace)
            .create(&PostParams::default(), &binding)
            .await
            .unwrap();
    }

    /// What a user who may ask this class for content holds: create, get
    /// and list on Instances, and `use` on the class.
    pub async fn grant_requester(&self, user: &str) {
        self.grant(
            &format!("{user}-requester"),
            user,
            vec![
                rule(
                    pakket_api::GROUP,
                    "instances",
                    &["create", "get", "list", "watch"],
                    &[],
                ),
                rule(
                    pakket_api::GROUP,
                    "provisionerclasses",
                    &["use"],
                    &[&self.class()],
                ),
            ],
        )
        .await;
    }

    /// The rights of the `pakket-instance-approver` role deploy/rbac ships.
    pub async fn grant_approver(&self, user: &str) {
        let shipped = std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../deploy/rbac/examples.yaml"
        ))
        .unwrap();
        let approver: ClusterRole = serde_saphyr_docs(&shipped)
            .into_iter()
            .find(|doc| {
                doc.get("kind") == Some(&json!("ClusterRole"))
                    && doc.pointer("/metadata/name") == Some(&json!("pakket-instance-approver"))
            })
            .map(|doc| serde_json::from_value(doc).unwrap())
            .expect("deploy/rbac/examples.yaml ships pakket-instance-approver");
        self.grant(
            &format!("{user}-approver"),
            user,
            approver.rules.unwrap_or_default(),
        )
        .await;
    }

    /// An immutable ConfigMap in the scope's namespace holding `files`,
    /// labelled as Bundle content.
    pub async fn content(&self, name: &str, files: &[(&str, String)]) {
        let mut labels = self.scope.labels();
        labels.insert(pakket_api::BUNDLE_CONTENT_LABEL.into(), "true".into());
        let config_map = ConfigMap {
            metadata: ObjectMeta {
                name: Some(name.into()),
                labels: Some(labels),
                ..ObjectMeta::default()
            },
            data: Some(
                files
                    .iter()
                    .map(|(file, text)| ((*file).to_owned(), text.clone()))
                    .collect(),
            ),
            immutable: Some(true),
            ..ConfigMap::default()
        };
        self.config_maps()
            .create(&PostParams::default(), &config_map)
            .await
            .unwrap();
    }

    /// Content ConfigMap `name` holding one ConfigMap manifest per
    /// `(object, value)`.
    pub async fn config_map_content(&self, name: &str, objects: &[(&str, &str)]) {
        let files: Vec<(String, String)> = objects
            .iter()
            .map(|(object, value)| {
                (
                    format!("{object}.yaml"),
                    self.config_map_manifest(object, value),
                )
            })
            .collect();
        let files: Vec<(&str, String)> = files
            .iter()
            .map(|(file, text)| (file.as_str(), text.clone()))
            .collect();
        self.content(name, &files).await;
    }

    /// Waits until Instance `suffix` is installed.
    pub async fn installed(&self, suffix: &str) -> Instance {
        self.wait(suffix, "installed", |i| {
            pakket_testkit::condition_is(i, pakket_api::ConditionType::Installed, "True")
        })
        .await
    }

    /// Deletes Instance `suffix` as admin and waits until it is gone
    /// (its finalizer ran).
    pub async fn delete_instance(&self, suffix: &str) {
        let name = self.scope.name(suffix);
        self.instances()
            .delete(&name, &DeleteParams::default())
            .await
            .unwrap();
        pakket_testkit::eventually("the Instance is gone", || async {
            self.instances().get_opt(&name).await.unwrap().is_none()
        })
        .await;
    }

    /// The manifest of a ConfigMap `name` in the scope's namespace.
    pub fn config_map_manifest(&self, name: &str, value: &str) -> String {
        format!(
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\n  namespace: {}\ndata:\n  value: {value}\n",
            self.scope.namespace
        )
    }

    /// An Instance `suffix` of this stage's class embedding a Bundle
    /// `bundle` whose content is ConfigMap `content`.
    pub fn instance(&self, suffix: &str, bundle: &str, content: &str) -> Value {
        json!({
            "apiVersion": "core.pakket.dev/v1alpha1",
            "kind": "Instance",
            "metadata": { "name": self.scope.name(suffix), "labels": self.scope.labels() },
            "spec": {
                "class": self.class(),
                "bundle": { "name": self.scope.name(bundle), "spec": self.bundle_spec(content) },
            },
        })
    }

    pub fn bundle_spec(&self, content: &str) -> Value {
        json!({
            "class": self.class(),
            "refs": ["file://content"],
            "volumeMounts": [{
                "mountPath": "/content",
                "configMap": { "name": content, "namespace": self.scope.namespace },
            }],
        })
    }

    /// Creates an Instance as `client`.
    pub async fn create(&self, client: &Client, instance: Value) -> Result<Instance, kube::Error> {
        let instance: Instance = serde_json::from_value(instance).unwrap();
        Api::<Instance>::all(client.clone())
            .create(&PostParams::default(), &instance)
            .await
    }

    pub fn instances(&self) -> Api<Instance> {
        Api::all(self.admin())
    }

    pub fn config_maps(&self) -> Api<ConfigMap> {
        Api::namespaced(self.admin(), &self.scope.namespace)
    }

    /// Waits for Instance `suffix` to pass `check`.
    pub async fn wait(
        &self,
        suffix: &str,
        what: &str,
        check: impl Fn(&Instance) -> bool,
    ) -> Instance {
        wait_for_instance(&self.instances(), &self.scope.name(suffix), what, check).await
    }

    /// `data.value` of ConfigMap `name` in the scope's namespace.
    pub async fn value_of(&self, name: &str) -> Option<String> {
        let found = self.config_maps().get_opt(name).await.unwrap()?;
        found.data.and_then(|data| data.get("value").cloned())
    }

    /// Approves Instance `suffix` as `client` the way `kubectl instance
    /// approve` does: the condition and the content (the Bundle's digest).
    pub async fn approve_as(&self, client: &Client, suffix: &str) -> Result<(), kube::Error> {
        let name = self.scope.name(suffix);
        let instance = self.instances().get(&name).await.unwrap();
        let bundle = instance.spec.bundle.name.clone();
        let digest = pakket_testkit::pinned_digest_for(&self.admin(), &instance).await;
        // The conditions are written whole (an atomic list), as the
        // command writes them: the others kept, Approved in its place.
        let mut conditions: Vec<serde_json::Value> = instance
            .status
            .iter()
            .flat_map(|status| &status.conditions)
            .filter(|condition| condition.type_ != "Approved")
            .map(|condition| serde_json::to_value(condition).unwrap())
            .collect();
        conditions.push(json!({
            "type": "Approved", "status": "True", "reason": "ApprovedByUser",
            "message": "approved by the test", "lastTransitionTime": "2026-01-01T00:00:00Z",
        }));
        let patch = json!({
            "apiVersion": "core.pakket.dev/v1alpha1", "kind": "Instance",
            "metadata": { "name": name },
            "status": {
                "conditions": conditions,
                "approval": { "bundle": bundle, "digest": digest, "approvedBy": "the test", "generation": instance.metadata.generation },
            },
        });
        Api::<Instance>::all(client.clone())
            .patch_status(
                &name,
                &PatchParams::apply("kubectl-instance").force(),
                &Patch::Apply(&patch),
            )
            .await
            .map(|_| ())
    }

    pub async fn cleanup(mut self) {
        self.kill_provisioner(true).await;
        let _ = Api::<ClusterRoleBinding>::all(self.admin())
            .delete_collection(
                &DeleteParams::default(),
                &ListParams::default().labels(&self.scope.selector()),
            )
            .await;
        let _ = Api::<ClusterRole>::all(self.admin())
            .delete_collection(
                &DeleteParams::default(),
                &ListParams::default().labels(&self.scope.selector()),
            )
            .await;
        if let Some(webhooks) = self.webhooks.take() {
            let _ = webhooks.stop().await;
        }
        let _ = std::fs::remove_file(&self.key_file);
        self.scope.cleanup().await;
    }
}

/// An RBAC rule: `verbs` on `resource` in `group`, limited to `names` if any.
pub fn rule(group: &str, resource: &str, verbs: &[&str], names: &[&str]) -> PolicyRule {
    PolicyRule {
        api_groups: Some(vec![group.to_owned()]),
        resources: Some(vec![resource.to_owned()]),
        verbs: verbs.iter().map(|verb| (*verb).to_owned()).collect(),
        resource_names: (!names.is_empty())
            .then(|| names.iter().map(|name| (*name).to_owned()).collect()),
        ..PolicyRule::default()
    }
}

/// The documents of a multi-document YAML file, as JSON.
fn serde_saphyr_docs(text: &str) -> Vec<Value> {
    serde_saphyr::from_multiple::<Value>(text).expect("valid YAML")
}

/// Whether an API call was refused with HTTP `code`.
pub fn refused_with(result: &Result<impl std::fmt::Debug, kube::Error>, code: u16) -> bool {
    matches!(result, Err(kube::Error::Api(status)) if status.code == code)
}

/// The labels of an object, for assertions.
pub fn labels_of(object: &ConfigMap) -> BTreeMap<String, String> {
    object.metadata.labels.clone().unwrap_or_default()
}
