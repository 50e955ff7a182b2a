//! The provisioner the runtime calls: a package's content (its
//! `package.yaml` as ref 0, then one ref per `manifests[]` file, in
//! order) becomes objects, put in their namespaces and patched with the
//! package's values (the Instance's `spec.config`).
//!
//! Namespaces. A namespaced object without a namespace goes to its file's
//! `defaultNamespace`, else the package's; the namespace is the package's,
//! created and deleted with it, unless it is one Kubernetes makes
//! (`default`, `kube-*`). One that exists and is not the package's waits
//! until someone who may write it offers it (never used silently).
//! For a namespaced `Package` every namespaced object goes to the
//! Package's namespace instead, and no Namespace is created. Whether a
//! kind is namespaced is known for Kubernetes' own kinds and read from the
//! package's own CRDs; any other kind is taken as namespaced. Names are
//! never prefixed: two installs of one package in one namespace would
//! write the same objects, and the runtime refuses the second (it adopts
//! nothing), saying which Instance has them.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::Path;
use std::sync::{Arc, Mutex};

use kube::ResourceExt as _;
use pakket_runtime::provisioner::{ClusterFacts, ObjectsError, ObjectsRequest, Provisioner};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::helm::{Helm, Release};
use crate::secret_values::{self, SecretValueRef, SecretValues};
use crate::transformations;
use crate::values;
use pakket_packages_api::manifest::{self, PackageManifest};

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
    /// Values read from Secrets: where each comes from (the value itself
    /// reaches the provisioner in the process, see [`SecretValues`]).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub secret_values: BTreeMap<String, SecretValueRef>,
    /// The value of each of the package's `transformations`, read from
    /// the package object by the package controller.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub transformation_values: Vec<String>,
    /// A Helm package's release name (`.Release.Name`): the package's
    /// name for a ClusterPackage, the Package's for a Package.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub release_name: Option<String>,
}

/// The file of ref 0.
pub const PACKAGE_FILE: &str = "package.yaml";

/// Namespaces Kubernetes makes itself: never created or owned by a package.
fn is_system_namespace(namespace: &str) -> bool {
    namespace == "default" || namespace.starts_with("kube-")
}

/// The package provisioner.
pub struct PackageProvisioner {
    id: String,
    helm: Option<Helm>,
    /// The last renders of Helm packages: the runtime asks for a package's
    /// objects on every pass, and `helm template` takes a process and a
    /// fraction of a second each time.
    rendered: Mutex<HashMap<String, Vec<Value>>>,
    /// Values the package controller read from Secrets.
    secret_values: Arc<SecretValues>,
}

/// How many renders are kept.
const RENDERS_KEPT: usize = 128;

impl PackageProvisioner {
    /// Answers to `id`; renders Helm packages with `helm`, and refuses
    /// them without.
    pub fn new(
        id: impl Into<String>,
        helm: Option<Helm>,
        secret_values: Arc<SecretValues>,
    ) -> Self {
        Self {
            id: id.into(),
            helm,
            rendered: Mutex::default(),
            secret_values,
        }
    }
}

impl Provisioner for PackageProvisioner {
    fn id(&self) -> &str {
        &self.id
    }

    /// Helm is told the cluster's version and served kinds.
    fn needs_cluster_facts(&self) -> bool {
        true
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
        let key = render_key(request.content, &config, request.cluster);
        if let Some(objects) = self.rendered.lock().unwrap().get(&key) {
            return Ok(objects.clone());
        }
        let secrets = self
            .secret_values
            .for_instance(&request.instance.name_any(), &config.secret_values)
            .map_err(ObjectsError::DependenciesMissing)?;
        let renderer = Renderer {
            helm: self.helm.as_ref(),
            cluster: request.cluster,
            secrets: &secrets,
        };
        let objects = off_the_runtime(|| {
            render(request.content, request.max_object_size, &config, &renderer)
        })?;
        if renderer.renders_charts(request.content, request.max_object_size) {
            let mut rendered = self.rendered.lock().unwrap();
            if rendered.len() >= RENDERS_KEPT {
                rendered.clear();
            }
            rendered.insert(key, objects.clone());
        }
        Ok(objects)
    }
}

/// What rendering a Helm package needs.
pub struct Renderer<'a> {
    /// The helm binary, if the provisioner has one.
    pub helm: Option<&'a Helm>,
    /// What Helm is told about the cluster.
    pub cluster: &'a ClusterFacts,
    /// The values read from Secrets, by name.
    pub secrets: &'a BTreeMap<String, String>,
}

impl Renderer<'_> {
    /// Whether the content under `content` is a Helm package (its ref 1
    /// is a chart).
    fn renders_charts(&self, content: &Path, max_size: u64) -> bool {
        read_package(content, max_size).is_ok_and(|package| package.helm.is_some())
    }
}

/// The key of one render: the pinned content (its folder is named by its
/// digests), the config and what Helm is told about the cluster.
fn render_key(content: &Path, config: &PackageConfig, cluster: &ClusterFacts) -> String {
    format!(
        "{}\n{}\n{:?}\n{:?}",
        content.display(),
        serde_json::to_string(config).unwrap_or_default(),
        cluster.version,
        cluster.served
    )
}

/// Runs `work` (which may wait for a child process) without stalling the
/// async runtime's other tasks, where the runtime allows it.
fn off_the_runtime<T>(work: impl FnOnce() -> T) -> T {
    match tokio::runtime::Handle::try_current().map(|handle| handle.runtime_flavor()) {
        Ok(tokio::runtime::RuntimeFlavor::MultiThread) => tokio::task::block_in_place(work),
        _ => work(),
    }
}

/// The package's `package.yaml` (ref 0), read with the runtime's safe
/// read: inside the content only (no link leading out), within the size
/// limit, errors naming file, line and column.
fn read_package(content: &Path, max_size: u64) -> Result<PackageManifest, ObjectsError> {
    let relative = Path::new("0").join(PACKAGE_FILE);
    let missing = || {
        ObjectsError::Content(format!(
            "the content has no {PACKAGE_FILE} as its first ref; a package's Bundle lists its package.yaml first, then its chart, then its manifests"
        ))
    };
    let document = pakket_runtime::manifest::read_document(content, &relative, max_size)
        .map_err(|error| ObjectsError::Content(error.to_string()))?
        .ok_or_else(missing)?;
    serde_json::from_value(document)
        .map_err(|problem| ObjectsError::Content(format!("{PACKAGE_FILE}: {problem}")))
}

/// The objects of the package content under `content`, for `config`: the
/// chart's (if it has one, ref 1) and then its manifests' (the refs after).
pub fn render(
    content: &Path,
    max_object_size: u64,
    config: &PackageConfig,
    renderer: &Renderer<'_>,
) -> Result<Vec<Value>, ObjectsError> {
    let package = read_package(content, max_object_size)?;
    if let Some(missing) = package.unsupported() {
        return Err(ObjectsError::Content(format!(
            "package {} uses {missing}, which this version of pakket-package does not install",
            package.name
        )));
    }
    // Values are checked first: a chart renders with them.
    let values = checked_values(&package, config, renderer)?;
    let (transformed, transformation_values) =
        transformations::as_values(&package.transformations, &config.transformation_values)
            .map_err(|problem| ObjectsError::Config {
                field: "spec.config.transformationValues".into(),
                problem,
            })?;
    let patches = [
        (&package.value_definitions, &values),
        (&transformed, &transformation_values),
    ];
    let objects = load(
        content,
        max_object_size,
        config,
        renderer,
        &package,
        &patches,
    )?;
    let (created_namespaces, mut placed) = place(objects, config, renderer, &package)?;
    values::apply(&package.value_definitions, &values, &mut placed).map_err(|problem| {
        ObjectsError::Config {
            field: "spec.config.values".into(),
            problem,
        }
    })?;
    values::apply(&transformed, &transformation_values, &mut placed)
        .map_err(|problem| ObjectsError::Content(format!("package {}: {problem}", package.name)))?;
    Ok(with_namespaces(created_namespaces, placed))
}

/// The values (written, and from Secrets) with the defaults, if they fit
/// the package's definitions; the first problem names its field.
fn checked_values(
    package: &PackageManifest,
    config: &PackageConfig,
    renderer: &Renderer<'_>,
) -> Result<values::Values, ObjectsError> {
    let mut given = config.values.clone();
    given.extend(renderer.secrets.clone());
    let values = values::with_defaults(&package.value_definitions, &given);
    let problems = values::validate(&package.value_definitions, &values);
    if let Some(first) = problems.first() {
        let (name, problem) = first.split_once(": ").unwrap_or((first, ""));
        return Err(ObjectsError::Config {
            field: format!("spec.config.values.{name}"),
            problem: secret_values::masked(problem, renderer.secrets),
        });
    }
    Ok(values)
}

/// The chart's objects (in its release's namespace) and each manifest's
/// (with its default namespace), not placed yet.
fn load(
    content: &Path,
    max_object_size: u64,
    config: &PackageConfig,
    renderer: &Renderer<'_>,
    package: &PackageManifest,
    patches: &[(&values::Definitions, &values::Values)],
) -> Result<Vec<(Value, Option<String>)>, ObjectsError> {
    let mut objects = Vec::new();
    let mut first_manifest = 1;
    if let Some(chart) = &package.helm {
        first_manifest = 2;
        let namespace = config
            .namespace
            .clone()
            .or_else(|| package.default_namespace.clone())
            .ok_or_else(|| {
                ObjectsError::Content(format!(
                    "package {} has a Helm chart and no defaultNamespace to install its release in",
                    package.name
                ))
            })?;
        let rendered = render_chart(
            content,
            config,
            renderer,
            package,
            chart,
            &namespace,
            patches,
            max_object_size,
        )?;
        objects.extend(
            rendered
                .into_iter()
                .map(|object| (object, Some(namespace.clone()))),
        );
    }
    for (index, file) in package.manifests.iter().enumerate() {
        let dir = content.join((index + first_manifest).to_string());
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
    Ok(objects)
}

/// Every object in its namespace (a cluster-scoped one as it is), and the
/// default namespaces the package's objects go into (made with it).
fn place(
    objects: Vec<(Value, Option<String>)>,
    config: &PackageConfig,
    renderer: &Renderer<'_>,
    package: &PackageManifest,
) -> Result<(BTreeSet<String>, Vec<Value>), ObjectsError> {
    let everything: Vec<Value> = objects.iter().map(|(object, _)| object.clone()).collect();
    let mut created_namespaces = BTreeSet::new();
    let mut placed = Vec::with_capacity(objects.len());
    for (mut object, default) in objects {
        if !is_namespaced(&object, &everything, config, renderer, package)? {
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
    Ok((created_namespaces, placed))
}

/// Whether `object` is namespaced; an error when a namespaced Package's
/// content holds what it may not write.
fn is_namespaced(
    object: &Value,
    everything: &[Value],
    config: &PackageConfig,
    renderer: &Renderer<'_>,
    package: &PackageManifest,
) -> Result<bool, ObjectsError> {
    // The scope is the cluster's answer (discovery), else the content's
    // CRD's. A namespace owner's content waits while neither knows: the
    // answer decides whether she stays in her namespace. The API is
    // usually a dependency's CRD still being installed, so this is a
    // missing dependency (woken when another Instance installs), not
    // broken content. A ClusterPackage's admin-made content takes an
    // unknown kind as namespaced (the apiserver refuses it at apply if
    // it is not).
    let namespaced = match renderer.cluster.namespaced(object, everything) {
        Ok(namespaced) => namespaced,
        Err(unknown) => match &config.namespace {
            Some(namespace) => {
                return Err(ObjectsError::DependenciesMissing(format!(
                    "{unknown}: a Package in namespace {namespace} installs only what is known to be namespaced"
                )));
            }
            None => true,
        },
    };
    // A namespaced Package writes into its namespace only.
    if !namespaced && let Some(namespace) = &config.namespace {
        return Err(ObjectsError::Content(format!(
            "{} {} is cluster-scoped, and a Package in namespace {namespace} installs namespaced objects only; install package {} as a ClusterPackage",
            object["kind"].as_str().unwrap_or("object"),
            object["metadata"]["name"].as_str().unwrap_or("?"),
            package.name
        )));
    }
    Ok(namespaced)
}

/// The package's own default namespaces first (made with it and gone
/// with it), then its objects.
fn with_namespaces(created_namespaces: BTreeSet<String>, placed: Vec<Value>) -> Vec<Value> {
    let mut namespaces: Vec<Value> = created_namespaces
        .into_iter()
        .filter(|namespace| !is_system_namespace(namespace))
        .filter(|namespace| {
            !placed.iter().any(|object| {
                object["kind"] == "Namespace" && object["metadata"]["name"] == namespace.as_str()
            })
        })
        // The package's own: made with it and gone with it. One that
        // exists and is not this package's (made by hand, or by another
        // package) is never used silently: whoever made it could read
        // and change what the package puts there. The runtime refuses it
        // as a conflict naming the namespace and how its owner offers it
        // (the adopt-into annotation); nothing is written until then.
        .map(|namespace| {
            json!({"apiVersion": "v1", "kind": "Namespace", "metadata": { "name": namespace }})
        })
        .collect();
    namespaces.extend(placed);
    namespaces
}

/// The objects the package's chart renders to, with its values (patched
/// by the value definitions that target the chart).
#[allow(clippy::too_many_arguments)]
fn render_chart(
    content: &Path,
    config: &PackageConfig,
    renderer: &Renderer<'_>,
    package: &PackageManifest,
    chart: &manifest::HelmChart,
    namespace: &str,
    patches: &[(&values::Definitions, &values::Values)],
    max_object_size: u64,
) -> Result<Vec<Value>, ObjectsError> {
    let helm = renderer.helm.ok_or_else(|| {
        ObjectsError::Content(format!(
            "package {} is a Helm chart, and this pakket-package was started without --helm; its admin names the helm binary",
            package.name
        ))
    })?;
    let mut chart_values = chart.values.clone().unwrap_or_else(|| json!({}));
    for (definitions, values) in patches {
        values::apply_to_chart(definitions, values, &chart.chart_name, &mut chart_values).map_err(
            |problem| ObjectsError::Config {
                field: "spec.config.values".into(),
                problem,
            },
        )?;
    }
    let release = Release {
        name: config.release_name.as_deref().unwrap_or(&package.name),
        namespace,
        chart: &content.join("1"),
        values: &chart_values,
    };
    helm.template(&release, renderer.cluster, max_object_size)
        .map_err(|problem| {
            ObjectsError::Content(format!(
                "chart {} {} of package {}: {problem}",
                chart.chart_name, chart.chart_version, package.name
            ))
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn render_plain(
        content: &Path,
        max_object_size: u64,
        config: &PackageConfig,
    ) -> Result<Vec<Value>, ObjectsError> {
        let cluster = served();
        let secrets = BTreeMap::new();
        let renderer = Renderer {
            helm: None,
            cluster: &cluster,
            secrets: &secrets,
        };
        render(content, max_object_size, config, &renderer)
    }

    /// What discovery says of a cluster with CloudNativePG installed: the
    /// kinds these tests render, and which are cluster-scoped.
    fn served() -> ClusterFacts {
        let kind = |api_version: &str, kind: &str| (api_version.to_owned(), kind.to_owned());
        let cluster_scoped = [
            kind("v1", "Namespace"),
            kind("apiextensions.k8s.io/v1", "CustomResourceDefinition"),
        ];
        let namespaced = [
            kind("v1", "ConfigMap"),
            kind("postgresql.cnpg.io/v1", "Cluster"),
        ];
        ClusterFacts {
            served: cluster_scoped.iter().chain(&namespaced).cloned().collect(),
            cluster_scoped: cluster_scoped.into_iter().collect(),
            ..ClusterFacts::default()
        }
    }

    #[test]
    fn a_package_file_is_read_inside_the_content_and_within_the_size_limit() {
        let dir = tempfile_dir::Dir::new("package-file");
        let content = dir.path.join("content");
        std::fs::create_dir_all(content.join("0")).unwrap();
        // A link leading out of the content: never followed.
        let secret = dir.path.join("elsewhere.yaml");
        std::fs::write(&secret, "name: not-in-the-content\n").unwrap();
        std::os::unix::fs::symlink(&secret, content.join("0/package.yaml")).unwrap();
        let refused = read_package(&content, 1 << 20).unwrap_err();
        let ObjectsError::Content(message) = refused else {
            panic!("{refused:?}");
        };
        assert!(message.contains("leaves the content"), "{message}");
        // Over the class's maxObjectSize: refused before it is parsed.
        std::fs::remove_file(content.join("0/package.yaml")).unwrap();
        let big = format!("name: demo\ndescription: {}\n", "x".repeat(4096));
        std::fs::write(content.join("0/package.yaml"), big).unwrap();
        let refused = read_package(&content, 1024).unwrap_err();
        let ObjectsError::Content(message) = refused else {
            panic!("{refused:?}");
        };
        assert!(message.contains("1024"), "names the limit: {message}");
        // Absent: says what a package's Bundle holds.
        std::fs::remove_file(content.join("0/package.yaml")).unwrap();
        let ObjectsError::Content(message) = read_package(&content, 1 << 20).unwrap_err() else {
            panic!("a missing package.yaml is a content error");
        };
        assert!(
            message.contains("lists its package.yaml first"),
            "{message}"
        );
    }

    #[test]
    fn a_namespace_owners_content_of_a_kind_nobody_knows_waits_and_is_not_taken_as_namespaced() {
        let dir = tempfile_dir::Dir::new("unknown");
        for index in ["0", "1"] {
            std::fs::create_dir_all(dir.path.join(index)).unwrap();
        }
        std::fs::write(
            dir.path.join("0/package.yaml"),
            "name: demo\nscope: Namespaced\nmanifests:\n- url: ./all.yaml\n",
        )
        .unwrap();
        // A cluster-scoped kind of an API the cluster does not serve (yet):
        // taken as namespaced, it would land outside her namespace.
        std::fs::write(
            dir.path.join("1/all.yaml"),
            "apiVersion: policy.example.com/v1\nkind: ClusterPolicy\nmetadata: {name: everyone}\n",
        )
        .unwrap();
        let refused = render_plain(&dir.path, 1 << 20, &config(Some("team-a"), &[])).unwrap_err();
        let ObjectsError::DependenciesMissing(message) = refused else {
            panic!("{refused:?}");
        };
        assert!(message.contains("ClusterPolicy everyone"), "{message}");
        assert!(
            message.contains("is not served by this cluster"),
            "{message}"
        );
        assert!(message.contains("Package in namespace team-a"), "{message}");
    }

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
            release_name: None,
            secret_values: BTreeMap::new(),
            transformation_values: Vec::new(),
        }
    }

    #[test]
    fn a_package_renders_into_its_default_namespace_or_the_packages_with_its_values() {
        let content = postgresql_content();
        let cluster_wide = render_plain(
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
        let namespaced = render_plain(
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
        let missing = render_plain(&content.path, 1 << 20, &config(None, &[])).unwrap_err();
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
        let refused = render_plain(&dir.path, 1 << 20, &config(Some("team-a"), &[])).unwrap_err();
        assert!(
            matches!(&refused, ObjectsError::Content(m) if m.starts_with("CustomResourceDefinition widgets.example.com is cluster-scoped, and a Package in namespace team-a")),
            "{refused:?}"
        );
        let objects = render_plain(&dir.path, 1 << 20, &PackageConfig::default()).unwrap();
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
