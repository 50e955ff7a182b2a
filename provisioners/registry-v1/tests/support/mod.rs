//! What the registry-v1 cluster tests and the `operators` bench share:
//! bundle directories pushed as images to the real local registry
//! ([`push`]), the provisioner run in this process for a ProvisionerClass of
//! the test's own ([`run_provisioner`]), Instances installing a bundle into
//! a namespace ([`instance`], [`instance_into`]), and the smallest
//! registry+v1 operator bundles, written into a temp dir
//! ([`OperatorBundle`]).
#![allow(dead_code)] // each test binary uses its own share of the helpers

#[path = "../../../../core/runtime/tests/images/mod.rs"]
mod images;
#[path = "../../../../dev/registry/testing.rs"]
mod registry;

use std::path::{Path, PathBuf};

use kube::api::{Api, PostParams};
use pakket_api::{
    BundleSpec, BundleTemplate, Instance, InstanceSpec, ProvisionerClass, ProvisionerClassSpec,
};
use pakket_registry_v1::RegistryV1;
use pakket_runtime::kernel::controller::{self, RunOptions};
use pakket_runtime::kernel::source::{ImageSource, PlainHttp, SourceOptions};
use pakket_testkit::Scope;
use registry::Registry;
use serde_json::{Value, json};

/// A gzip'd tar of the bundle directory `dir` (`manifests/`, `metadata/`).
pub fn layer(dir: &Path) -> Vec<u8> {
    let gzip = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    let mut tar = tar::Builder::new(gzip);
    tar.append_dir_all(".", dir).unwrap();
    tar.into_inner().unwrap().finish().unwrap()
}

/// Pushes the bundle in `dir` as image `bundles/<scope id>-<name>:v1` to the
/// shared local registry; returns its `docker://` ref.
pub async fn push(scope: &Scope, dir: &Path, name: &str) -> String {
    push_tagged(scope, dir, name, "v1").await
}

/// [`push`] with tag `tag`.
pub async fn push_tagged(scope: &Scope, dir: &Path, name: &str, tag: &str) -> String {
    let reference = Registry::shared().image(&format!("bundles/{}-{name}:{tag}", scope.id));
    let source = ImageSource::new(SourceOptions {
        plain_http: PlainHttp::Loopback,
        ..SourceOptions::default()
    });
    images::push_gzip_layer(&source, &reference, layer(dir)).await;
    format!("docker://{}", reference.trim_start_matches("docker://"))
}

/// The provisioner id of `scope`'s tests: theirs alone, so the tests run in
/// parallel.
pub fn provisioner_id(scope: &Scope) -> String {
    format!("test.pakket.dev/{}", scope.id)
}

/// Where the provisioner of `scope`'s tests keeps its content.
pub fn store(scope: &Scope) -> PathBuf {
    scope.path("store")
}

/// [`run_provisioner_with`] the id and store of `scope`'s tests.
pub async fn run_provisioner(scope: &Scope, parameters: Value) {
    let options = RunOptions::new(store(scope));
    run_provisioner_with(scope, provisioner_id(scope), parameters, options).await;
}

/// Creates the ProvisionerClass `class` of provisioner `id` with
/// `parameters`, and runs the registry-v1 provisioner `id` in this process
/// (its RSS is the process's) for as long as the runtime runs.
pub async fn run_provisioner_with(
    scope: &Scope,
    id: String,
    parameters: Value,
    options: RunOptions,
) {
    run_provisioner_as(scope, scope.client.clone(), id, parameters, options).await;
}

/// As [`run_provisioner_with`], the provisioner reading and writing as
/// `client` (the class created as the admin).
pub async fn run_provisioner_as(
    scope: &Scope,
    client: kube::Client,
    id: String,
    parameters: Value,
    options: RunOptions,
) {
    // The test registry is on loopback, which a class pulls from only when
    // it allows internal addresses.
    let mut parameters = parameters.as_object().cloned().unwrap_or_default();
    parameters
        .entry("allowInternalAddresses")
        .or_insert(json!(true));
    let class = ProvisionerClass {
        metadata: scope.meta("class"),
        spec: ProvisionerClassSpec {
            provisioner: id.clone(),
            parameters: Some(parameters),
        },
        status: None,
    };
    Api::<ProvisionerClass>::all(scope.client.clone())
        .create(&PostParams::default(), &class)
        .await
        .unwrap();
    tokio::spawn(async move { controller::run_with(client, RegistryV1::new(id), options).await });
}

/// Instance `name` of class `class`, installing the bundle at `reference`
/// (its Bundle `<name>-bundle`) into a namespace of its own, named like it.
pub fn instance(scope: &Scope, name: &str, reference: &str) -> Instance {
    let bundle = format!("{name}-bundle");
    instance_into(scope, name, &bundle, reference, &scope.name(name))
}

/// Instance `name` of class `class`, installing the bundle at `reference`
/// (its Bundle named `bundle`) into `install_namespace`.
pub fn instance_into(
    scope: &Scope,
    name: &str,
    bundle: &str,
    reference: &str,
    install_namespace: &str,
) -> Instance {
    let mut config = serde_json::Map::new();
    config.insert("installNamespace".into(), json!(install_namespace));
    Instance {
        metadata: scope.meta(name),
        spec: InstanceSpec {
            class: scope.name("class"),
            selector: None,
            bundle: BundleTemplate {
                name: scope.name(bundle),
                spec: Some(BundleSpec {
                    class: scope.name("class"),
                    refs: vec![reference.to_owned()],
                    volume_mounts: vec![],
                }),
            },
            deletion_policy: Default::default(),
            config: Some(config),
            progress_deadline: None,
            drift: None,
        },
        status: None,
    }
}

/// The smallest registry+v1 operator bundle: package `name`, one CSV
/// `<name>.v1.0.0` (version 1.0.0, OwnNamespace) whose one Deployment `name`
/// runs pause; no CRDs.
pub struct OperatorBundle {
    name: String,
    all_namespaces: bool,
    dependencies: Option<String>,
    permissions: Option<Value>,
}

impl OperatorBundle {
    /// Package `name`, as above.
    pub fn new(name: &str) -> Self {
        Self {
            name: name.to_owned(),
            all_namespaces: false,
            dependencies: None,
            permissions: None,
        }
    }

    /// Supports AllNamespaces too.
    pub fn all_namespaces(mut self) -> Self {
        self.all_namespaces = true;
        self
    }

    /// Needs what `dependencies` (the text of `metadata/dependencies.yaml`)
    /// says.
    pub fn needing(mut self, dependencies: &str) -> Self {
        self.dependencies = Some(dependencies.to_owned());
        self
    }

    /// Runs as ServiceAccount `name`, granted the namespaced `rules`.
    pub fn with_permissions(mut self, rules: Value) -> Self {
        self.permissions = Some(rules);
        self
    }

    /// The bundle, written into a temp dir.
    pub fn write(&self) -> tempfile::TempDir {
        let name = &self.name;
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("manifests")).unwrap();
        std::fs::create_dir_all(dir.path().join("metadata")).unwrap();
        std::fs::write(
            dir.path().join("metadata/annotations.yaml"),
            format!(
                "annotations:\n  operators.operatorframework.io.bundle.mediatype.v1: registry+v1\n  \
                 operators.operatorframework.io.bundle.package.v1: {name}\n"
            ),
        )
        .unwrap();
        if let Some(dependencies) = &self.dependencies {
            std::fs::write(dir.path().join("metadata/dependencies.yaml"), dependencies).unwrap();
        }
        let mut install_modes = vec![json!({ "type": "OwnNamespace", "supported": true })];
        if self.all_namespaces {
            install_modes.push(json!({ "type": "AllNamespaces", "supported": true }));
        }
        let mut pod = json!({
            "containers": [{ "name": "manager", "image": "registry.k8s.io/pause:3.10" }],
        });
        let mut strategy = json!({ "deployments": [{
            "name": name,
            "spec": {
                "selector": { "matchLabels": { "app": name } },
                "template": { "metadata": { "labels": { "app": name } } },
            },
        }] });
        if let Some(rules) = &self.permissions {
            pod["serviceAccountName"] = json!(name);
            strategy["permissions"] = json!([{ "serviceAccountName": name, "rules": rules }]);
        }
        strategy["deployments"][0]["spec"]["template"]["spec"] = pod;
        let csv = json!({
            "apiVersion": "operators.coreos.com/v1alpha1",
            "kind": "ClusterServiceVersion",
            "metadata": { "name": format!("{name}.v1.0.0") },
            "spec": {
                "version": "1.0.0",
                "installModes": install_modes,
                "install": { "strategy": "deployment", "spec": strategy },
            },
        });
        std::fs::write(
            dir.path().join("manifests/csv.yaml"),
            serde_json::to_string(&csv).unwrap(),
        )
        .unwrap();
        dir
    }
}
