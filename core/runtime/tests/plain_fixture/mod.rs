//! A plain provisioner's controller on the real control plane, for the
//! controller tests: one per test, with a provisioner id of its own, so
//! tests in parallel never act on each other's Instances.
#![allow(dead_code)] // each test binary uses its own share of the helpers

use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, PostParams};
use pakket_api::{
    BundleSpec, BundleTemplate, ConfigMapSource, Instance, InstanceSpec, ProvisionerClass,
    ProvisionerClassSpec, VolumeMount,
};
use pakket_runtime::Plain;
use pakket_runtime::kernel::controller;
use pakket_testkit::{Scope, install_crds};
use serde_json::json;

/// The key the fixture's controller verifies requester records with; the
/// tests seal records with it as the admission webhook would.
pub fn record_key() -> pakket_api::RecordKey {
    pakket_api::RecordKey::from_bytes(b"pakket runtime tests' record key, 32+ bytes").unwrap()
}

/// `record` sealed as the webhook would seal it on `instance`.
pub fn sealed(instance: &Instance, record: &pakket_api::CreatorRecord) -> String {
    record
        .sealed(
            &record_key(),
            pakket_api::CREATED_BY_ANNOTATION,
            instance.metadata.name.as_deref().unwrap(),
            &instance.spec,
        )
        .to_annotation()
}

/// Approves (or denies) the Instance's current Bundle at the digest its
/// status pins, the way `kubectl instance approve` writes it.
pub async fn set_approval(instances: &Api<Instance>, name: &str, status: &str, reason: &str) {
    let instance = instances.get(name).await.unwrap();
    let bundle = instance.spec.bundle.name.clone();
    let digest =
        pakket_testkit::pinned_digest_for(&instances.clone().into_client(), &instance).await;
    let mut conditions = instance.status.clone().unwrap_or_default().conditions;
    for condition in &mut conditions {
        if condition.type_ == "Approved" {
            condition.status = status.into();
            condition.reason = reason.into();
            condition.message = format!("{reason} by the test");
            condition.observed_generation = instance.metadata.generation;
        }
    }
    let patch = json!({ "status": {
        "conditions": conditions,
        "approval": { "bundle": bundle, "digest": digest, "approvedBy": "the test", "generation": instance.metadata.generation, "judged": null, "rendered": null },
    } });
    instances
        .patch_status(
            name,
            &kube::api::PatchParams::default(),
            &kube::api::Patch::Merge(&patch),
        )
        .await
        .unwrap();
}

pub struct Fixture {
    /// The test's namespace, label and admin client.
    pub scope: Scope,
    /// The provisioner id of this test's controller.
    pub id: String,
    /// Where its content store is.
    pub store: std::path::PathBuf,
    /// Its metrics.
    pub metrics: std::sync::Arc<pakket_runtime::kernel::serve::Metrics>,
}

impl Fixture {
    pub async fn new(test: &str, approval: &str) -> Self {
        let fixture = Self::start(test, None).await;
        fixture.create_class(approval).await;
        fixture
    }

    /// A controller that verifies requester records with [`record_key`],
    /// as a deployed provisioner does: policies approve only Instances
    /// with a record sealed for their current spec.
    pub async fn with_records(test: &str, approval: &str) -> Self {
        let fixture = Self::start(test, Some(record_key())).await;
        fixture.create_class(approval).await;
        fixture
    }

    /// A running controller, but no ProvisionerClass yet.
    pub async fn without_class(test: &str) -> Self {
        Self::start(test, None).await
    }

    /// A controller whose options `adjust` changes, with a class of
    /// `approval`.
    pub async fn with_options(
        test: &str,
        approval: &str,
        adjust: impl FnOnce(&mut controller::RunOptions),
    ) -> Self {
        let fixture = Self::start_with(test, None, adjust).await;
        fixture.create_class(approval).await;
        fixture
    }

    async fn start(test: &str, key: Option<pakket_api::RecordKey>) -> Self {
        Self::start_with(test, key, |_| {}).await
    }

    async fn start_with(
        test: &str,
        key: Option<pakket_api::RecordKey>,
        adjust: impl FnOnce(&mut controller::RunOptions),
    ) -> Self {
        let scope = Scope::new(test).await;
        install_crds(&scope.client).await.unwrap();
        let id = format!("test.pakket.dev/{}", scope.id);
        let store = scope.path("store");
        let client = scope.client.clone();
        let provisioner = Plain::new(id.clone());
        let mut options = controller::RunOptions {
            record_key: key,
            ..controller::RunOptions::new(store.clone())
        };
        adjust(&mut options);
        let metrics = options.metrics.clone();
        tokio::spawn(async move { controller::run_with(client, provisioner, options).await });
        Self {
            scope,
            id,
            store,
            metrics,
        }
    }

    pub async fn create_class(&self, approval: &str) {
        self.create_class_with(json!({ "approval": approval }))
            .await;
    }

    /// The test's class with exactly these parameters (a JSON object).
    pub async fn create_class_with(&self, parameters: serde_json::Value) {
        let class = ProvisionerClass {
            metadata: self.scope.meta("class"),
            spec: ProvisionerClassSpec {
                provisioner: self.id.clone(),
                parameters: parameters.as_object().cloned(),
            },
            status: None,
        };
        Api::<ProvisionerClass>::all(self.scope.client.clone())
            .create(&PostParams::default(), &class)
            .await
            .unwrap();
    }

    /// An immutable ConfigMap holding `files` (name, text) as they are,
    /// labelled as Bundle content.
    pub async fn files(&self, name: &str, files: &[(&str, String)]) {
        let config_map = ConfigMap {
            metadata: kube::api::ObjectMeta {
                name: Some(name.into()),
                labels: Some(
                    [(
                        pakket_api::BUNDLE_CONTENT_LABEL.to_owned(),
                        "true".to_owned(),
                    )]
                    .into(),
                ),
                ..Default::default()
            },
            data: Some(
                files
                    .iter()
                    .map(|(file, text)| ((*file).to_owned(), text.clone()))
                    .collect(),
            ),
            immutable: Some(true),
            ..Default::default()
        };
        Api::<ConfigMap>::namespaced(self.scope.client.clone(), &self.scope.namespace)
            .create(&PostParams::default(), &config_map)
            .await
            .unwrap();
    }

    /// An immutable ConfigMap holding plain manifests of ConfigMaps named `names`.
    pub async fn content(&self, name: &str, names: &[(&str, &str)]) {
        let files: Vec<(String, String)> = names
            .iter()
            .map(|(object, value)| {
                let manifest = format!(
                    "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {object}\n  namespace: {}\ndata:\n  value: {value}\n",
                    self.scope.namespace
                );
                (format!("{object}.yaml"), manifest)
            })
            .collect();
        let files: Vec<(&str, String)> = files
            .iter()
            .map(|(file, text)| (file.as_str(), text.clone()))
            .collect();
        self.files(name, &files).await;
    }

    pub fn bundle_spec(&self, content: &str, reference: &str) -> BundleSpec {
        BundleSpec {
            class: self.scope.name("class"),
            refs: vec![reference.into()],
            volume_mounts: vec![VolumeMount {
                mount_path: "/content".into(),
                config_map: ConfigMapSource {
                    name: content.into(),
                    namespace: self.scope.namespace.clone(),
                },
            }],
        }
    }

    pub fn instance(&self, bundle: &str, spec: BundleSpec) -> Instance {
        Instance {
            metadata: self.scope.meta("instance"),
            spec: InstanceSpec {
                class: self.scope.name("class"),
                selector: None,
                deletion_policy: Default::default(),
                config: None,
                bundle: BundleTemplate {
                    name: self.scope.name(bundle),
                    spec: Some(spec),
                },
                progress_deadline: None,
                drift: None,
            },
            status: None,
        }
    }

    /// Creates the test's Instance, embedding `spec` as Bundle `bundle`;
    /// returns the Instances API and the Instance's name.
    pub async fn create_instance(&self, bundle: &str, spec: BundleSpec) -> (Api<Instance>, String) {
        let instances = self.instances();
        instances
            .create(&PostParams::default(), &self.instance(bundle, spec))
            .await
            .unwrap();
        (instances, self.scope.name("instance"))
    }

    /// Creates the test's Instance of Bundle `bundle` from the content
    /// ConfigMap `content`, and waits until it is installed.
    pub async fn install(&self, bundle: &str, content: &str) -> (Api<Instance>, String) {
        let (instances, name) = self
            .create_instance(bundle, self.bundle_spec(content, "file://content"))
            .await;
        pakket_testkit::wait_for_instance(&instances, &name, "installed", |i| {
            pakket_testkit::condition_is(i, pakket_api::ConditionType::Installed, "True")
        })
        .await;
        (instances, name)
    }

    /// Pivots the test's Instance to Bundle `bundle` of the content
    /// ConfigMap `content`, as a user edits the spec.
    pub async fn pivot(&self, bundle: &str, content: &str) {
        let pivot = json!({ "spec": { "bundle": {
            "name": self.scope.name(bundle),
            "spec": self.bundle_spec(content, "file://content"),
        } } });
        self.instances()
            .patch(
                &self.scope.name("instance"),
                &kube::api::PatchParams::default(),
                &kube::api::Patch::Merge(&pivot),
            )
            .await
            .unwrap();
    }

    pub fn instances(&self) -> Api<Instance> {
        Api::all(self.scope.client.clone())
    }

    pub fn config_maps(&self) -> Api<ConfigMap> {
        Api::namespaced(self.scope.client.clone(), &self.scope.namespace)
    }

    pub async fn value_of(&self, name: &str) -> Option<String> {
        let found = self.config_maps().get_opt(name).await.unwrap()?;
        found.data.and_then(|data| data.get("value").cloned())
    }
}
