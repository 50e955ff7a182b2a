//! The provisioner the runtime calls: a package's content (its
//! `package.yaml` as ref 0, then one ref per `manifests[]` file, in
//! order) becomes objects, put in their namespaces and patched with the
//! package's values (the Instance's `spec.config`).
//!
//! Namespaces. A namespaced object without a namespace goes to its file's
//! `defaultNamespace`, else the package's; the namespace is created with
//! the package if absent (one that exists is used as it is, never taken
//! over), unless it is one Kubernetes makes (`default`, `kube-*`).
//! For a namespaced `Package` every namespaced object goes to the
//! Package's namespace instead, and no Namespace is created. Whether a
//! kind is namespaced is known for Kubernetes' own kinds and read from the
//! package's own CRDs; any other kind is taken as namespaced. Names are
//! never prefixed: two installs of one package in one namespace would
//! write the same objects, and the runtime refuses the second (it adopts
//! nothing), saying which Instance has them.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use pakket_runtime::approval::{Approval, ApprovalRequest};
use pakket_runtime::provisioner::{ObjectsError, ObjectsRequest, Provisioner};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::manifest::{self, PackageManifest};
use crate::values;

/// What the package controller writes as an Instance's `spec.config`.
#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct PackageConfig {
    /// A namespaced Package's namespace: every namespaced object goes
    /// there. `None` for a ClusterPackage.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// The values, by name (defaults are added here).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub values: BTreeMap<String, String>,
}

/// The file of ref 0.
pub const PACKAGE_FILE: &str = "package.yaml";

/// Kubernetes' own cluster-scoped kinds, by `group/kind`.
const CLUSTER_SCOPED: &[&str] = &[
    "/Namespace",
    "/Node",
    "/PersistentVolume",
    "/ComponentStatus",
    "apiextensions.k8s.io/CustomResourceDefinition",
    "apiregistration.k8s.io/APIService",
    "rbac.authorization.k8s.io/ClusterRole",
    "rbac.authorization.k8s.io/ClusterRoleBinding",
    "admissionregistration.k8s.io/ValidatingWebhookConfiguration",
    "admissionregistration.k8s.io/MutatingWebhookConfiguration",
    "admissionregistration.k8s.io/ValidatingAdmissionPolicy",
    "admissionregistration.k8s.io/ValidatingAdmissionPolicyBinding",
    "storage.k8s.io/StorageClass",
    "storage.k8s.io/CSIDriver",
    "storage.k8s.io/CSINode",
    "storage.k8s.io/VolumeAttachment",
    "scheduling.k8s.io/PriorityClass",
    "networking.k8s.io/IngressClass",
    "node.k8s.io/RuntimeClass",
    "flowcontrol.apiserver.k8s.io/FlowSchema",
    "flowcontrol.apiserver.k8s.io/PriorityLevelConfiguration",
    "certificates.k8s.io/CertificateSigningRequest",
];

/// Namespaces Kubernetes makes itself: never created or owned by a package.
fn is_system_namespace(namespace: &str) -> bool {
    namespace == "default" || namespace.starts_with("kube-")
}

/// The package provisioner.
#[derive(Clone, Debug)]
pub struct PackageProvisioner {
    id: String,
}

impl PackageProvisioner {
    /// Answers to `id`.
    pub fn new(id: impl Into<String>) -> Self {
        Self { id: id.into() }
    }
}

impl Provisioner for PackageProvisioner {
    fn id(&self) -> &str {
        &self.id
    }

    fn objects(&self, request: &ObjectsRequest<'_>) -> Result<Vec<Value>, ObjectsError> {
        let config: PackageConfig = match request.config() {
            Some(config) => {
                serde_json::from_value(Value::Object(config.clone())).map_err(|error| {
                    ObjectsError::Config {
                        field: "spec.config".into(),
                        problem: format!(
                            "{error}; the package controller writes namespace and values"
                        ),
                    }
                })?
            }
            None => PackageConfig::default(),
        };
        render(request.content, request.max_object_size, &config)
    }

    /// `UserPermission`, `Android`, or a person for any other policy.
    async fn approve(&self, request: &ApprovalRequest<'_>) -> Approval {
        match request.policy {
            "UserPermission" => pakket_runtime::approval::user_permission(request).await,
            "Android" => pakket_runtime::approval::android(request),
            _ => request.wait_for_a_person(),
        }
    }
}

/// The objects of the package content under `content`, for `config`.
pub fn render(
    content: &Path,
    max_object_size: u64,
    config: &PackageConfig,
) -> Result<Vec<Value>, ObjectsError> {
    let package_file = content.join("0").join(PACKAGE_FILE);
    let text = std::fs::read_to_string(&package_file).map_err(|error| {
        ObjectsError::Content(format!(
            "the content has no {PACKAGE_FILE} as its first ref ({error}); a package's Bundle lists its package.yaml first, then its manifests"
        ))
    })?;
    let (package, _): (PackageManifest, Value) = manifest::parse(&text)
        .map_err(|problem| ObjectsError::Content(format!("{PACKAGE_FILE}: {problem}")))?;
    if let Some(missing) = package.unsupported() {
        return Err(ObjectsError::Content(format!(
            "package {} uses {missing}, which this version of pakket-package does not install",
            package.name
        )));
    }
    let mut objects = Vec::new();
    for (index, file) in package.manifests.iter().enumerate() {
        let dir = content.join((index + 1).to_string());
        let loaded =
            pakket_runtime::manifest::load_objects(&dir, max_object_size).map_err(|error| {
                ObjectsError::Content(format!("manifests[{index}] {}: {error}", file.url))
            })?;
        let default = file
            .default_namespace
            .clone()
            .or_else(|| package.default_namespace.clone());
        objects.extend(loaded.into_iter().map(|object| (object, default.clone())));
    }
    let custom_scopes = custom_resource_scopes(objects.iter().map(|(object, _)| object));
    let mut created_namespaces = BTreeSet::new();
    let mut placed = Vec::with_capacity(objects.len());
    for (mut object, default) in objects {
        if !namespaced(&object, &custom_scopes) {
            // A namespaced Package writes into its namespace only.
            if let Some(namespace) = &config.namespace {
                return Err(ObjectsError::Content(format!(
                    "{} {} is cluster-scoped, and a Package in namespace {namespace} installs namespaced objects only; install package {} as a ClusterPackage",
                    object["kind"].as_str().unwrap_or("object"),
                    object["metadata"]["name"].as_str().unwrap_or("?"),
                    package.name
                )));
            }
            placed.push(object);
            continue;
        }
        let namespace = match (&config.namespace, object["metadata"]["namespace"].as_str()) {
            (Some(forced), _) => forced.clone(),
            (None, Some(own)) => own.to_owned(),
            (None, None) => default.clone().ok_or_else(|| {
                ObjectsError::Content(format!(
                    "{} {} has no namespace, and package {} names no defaultNamespace",
                    object["kind"].as_str().unwrap_or("object"),
                    object["metadata"]["name"].as_str().unwrap_or("?"),
                    package.name
                ))
            })?,
        };
        if config.namespace.is_none() && Some(&namespace) == default.as_ref() {
            created_namespaces.insert(namespace.clone());
        }
        object["metadata"]["namespace"] = json!(namespace);
        placed.push(object);
    }
    let values = values::with_defaults(&package.value_definitions, &config.values);
    let problems = values::validate(&package.value_definitions, &values);
    if let Some(first) = problems.first() {
        let (name, problem) = first.split_once(": ").unwrap_or((first, ""));
        return Err(ObjectsError::Config {
            field: format!("spec.config.values.{name}"),
            problem: problem.to_owned(),
        });
    }
    values::apply(&package.value_definitions, &values, &mut placed).map_err(|problem| {
        ObjectsError::Config {
            field: "spec.config.values".into(),
            problem,
        }
    })?;
    let mut namespaces: Vec<Value> = created_namespaces
        .into_iter()
        .filter(|namespace| !is_system_namespace(namespace))
        .filter(|namespace| {
            !placed.iter().any(|object| {
                object["kind"] == "Namespace" && object["metadata"]["name"] == namespace.as_str()
            })
        })
        // Created if absent: one an admin made beforehand is used as it
        // is, never taken over, and stays when the package goes.
        .map(|namespace| {
            json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {
                "name": namespace,
                "annotations": { pakket_api::ownership::CREATE_IF_ABSENT_ANNOTATION: "true" },
            }})
        })
        .collect();
    namespaces.extend(placed);
    Ok(namespaces)
}

/// `group/kind` of `object`.
fn group_kind(object: &Value) -> String {
    let api_version = object["apiVersion"].as_str().unwrap_or_default();
    let group = api_version.rsplit_once('/').map_or("", |(group, _)| group);
    format!("{group}/{}", object["kind"].as_str().unwrap_or_default())
}

/// The scope (`Cluster` or `Namespaced`) of each kind the package's own
/// CRDs define, by `group/kind`.
fn custom_resource_scopes<'a>(
    objects: impl Iterator<Item = &'a Value>,
) -> BTreeMap<String, String> {
    objects
        .filter(|object| group_kind(object) == "apiextensions.k8s.io/CustomResourceDefinition")
        .filter_map(|crd| {
            let spec = &crd["spec"];
            Some((
                format!(
                    "{}/{}",
                    spec["group"].as_str()?,
                    spec["names"]["kind"].as_str()?
                ),
                spec["scope"].as_str()?.to_owned(),
            ))
        })
        .collect()
}

fn namespaced(object: &Value, custom: &BTreeMap<String, String>) -> bool {
    let kind = group_kind(object);
    if CLUSTER_SCOPED.contains(&kind.as_str()) {
        return false;
    }
    custom.get(&kind).is_none_or(|scope| scope == "Namespaced")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The content a Bundle of the real postgresql package unpacks to
    /// (glasskube/packages at 3352e05d, ../shared/data/glasskube-packages/
    /// packages/postgresql/v16.4.0+2: package.yaml as ref 0, manifest.yaml
    /// as ref 1).
    fn postgresql_content() -> tempfile_dir::Dir {
        let source = pakket_testkit::data("glasskube-packages/packages/postgresql/v16.4.0+2");
        let dir = tempfile_dir::Dir::new("postgresql");
        for (index, file) in [(0, "package.yaml"), (1, "manifest.yaml")] {
            let to = dir.path.join(index.to_string());
            std::fs::create_dir_all(&to).unwrap();
            std::fs::copy(source.join(file), to.join(file)).unwrap();
        }
        dir
    }

    mod tempfile_dir {
        /// A scratch directory removed when dropped.
        pub struct Dir {
            pub path: std::path::PathBuf,
        }
        impl Dir {
            pub fn new(name: &str) -> Self {
                let path = std::env::temp_dir()
                    .join(format!("pakket-package-{}-{name}", std::process::id()));
                let _ = std::fs::remove_dir_all(&path);
                std::fs::create_dir_all(&path).unwrap();
                Self { path }
            }
        }
        impl Drop for Dir {
            fn drop(&mut self) {
                let _ = std::fs::remove_dir_all(&self.path);
            }
        }
    }

    fn config(namespace: Option<&str>, values: &[(&str, &str)]) -> PackageConfig {
        PackageConfig {
            namespace: namespace.map(str::to_owned),
            values: values
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect(),
        }
    }

    #[test]
    fn a_package_renders_into_its_default_namespace_or_the_packages_with_its_values() {
        let content = postgresql_content();
        let cluster_wide = render(
            &content.path,
            1 << 20,
            &config(None, &[("databaseName", "shop")]),
        )
        .unwrap();
        assert_eq!(
            cluster_wide.len(),
            1,
            "default is never created: {cluster_wide:?}"
        );
        assert_eq!(cluster_wide[0]["metadata"]["namespace"], "default");
        assert_eq!(
            cluster_wide[0]["spec"]["bootstrap"]["initdb"]["database"],
            "shop"
        );
        let namespaced = render(
            &content.path,
            1 << 20,
            &config(
                Some("team-a"),
                &[("databaseName", "shop"), ("instances", "2")],
            ),
        )
        .unwrap();
        assert_eq!(namespaced[0]["metadata"]["namespace"], "team-a");
        assert_eq!(namespaced[0]["spec"]["instances"], 2);
        let missing = render(&content.path, 1 << 20, &config(None, &[])).unwrap_err();
        assert_eq!(
            missing,
            ObjectsError::Config {
                field: "spec.config.values.databaseName".into(),
                problem: "required; set spec.values.databaseName".into(),
            }
        );
    }

    #[test]
    fn a_namespace_the_package_names_is_created_with_it_and_crd_scopes_are_read() {
        let dir = tempfile_dir::Dir::new("scopes");
        for index in ["0", "1"] {
            std::fs::create_dir_all(dir.path.join(index)).unwrap();
        }
        std::fs::write(
            dir.path.join("0/package.yaml"),
            "name: demo\ndefaultNamespace: demo-system\nmanifests:\n- url: ./all.yaml\n",
        )
        .unwrap();
        std::fs::write(
            dir.path.join("1/all.yaml"),
            "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {name: widgets.example.com}\nspec: {group: example.com, scope: Cluster, names: {kind: Widget, plural: widgets}, versions: []}\n---\napiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w}\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n",
        )
        .unwrap();
        let refused = render(&dir.path, 1 << 20, &config(Some("team-a"), &[])).unwrap_err();
        assert!(
            matches!(&refused, ObjectsError::Content(m) if m.starts_with("CustomResourceDefinition widgets.example.com is cluster-scoped, and a Package in namespace team-a")),
            "{refused:?}"
        );
        let objects = render(&dir.path, 1 << 20, &PackageConfig::default()).unwrap();
        let kinds: Vec<(&str, Option<&str>)> = objects
            .iter()
            .map(|o| {
                (
                    o["kind"].as_str().unwrap(),
                    o["metadata"]["namespace"].as_str(),
                )
            })
            .collect();
        assert_eq!(
            kinds,
            [
                ("Namespace", None),
                ("CustomResourceDefinition", None),
                ("Widget", None),
                ("ConfigMap", Some("demo-system")),
            ]
        );
    }
}
