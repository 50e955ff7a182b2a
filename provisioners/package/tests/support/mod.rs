//! The package tests' world: the real Glasskube repository served over
//! loopback HTTPS, the package process run in the test, and a class.
//!
//! Data (unedited): `glasskube-packages/packages/` of ../shared/data, a
//! verbatim copy of glasskube/packages at 3352e05d (see its README). The
//! server serves those files as they are, except that absolute
//! `https://github.com/` URLs in a `package.yaml` are rewritten to this
//! server, which answers them with stand-ins written here: the real
//! release assets (cloudnative-pg's `cnpg-X.yaml`) are not in the data,
//! and tests never leave the machine. `publish` makes the server answer a
//! package's `versions.yaml` with a newer `latestVersion`, as the
//! repository does when it publishes one. `write_package` adds small
//! packages written by a test (a ConfigMap each, with the dependencies and
//! ranges the test needs): the real repository has one ranged dependency
//! only, in a package with components.
//!
//! Other hosts a package file names are rewritten too: the repository's
//! own published address (`https://glasskube.github.io/packages/packages/`,
//! where kubernetes-dashboard's `dashboard-user.yaml` is) to this server's
//! copy of the data, and whatever a test gives a stand-in for
//! (`stand_in_for`). Helm chart repositories are served by `write_chart`:
//! a chart written by the test, packaged and indexed by the real `helm`
//! (the charts themselves are not in the data).

#![allow(dead_code)]

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use axum::Router;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use kube::api::{Api, PostParams};
use pakket_api::{ProvisionerClass, ProvisionerClassSpec};
use pakket_package::process::{self, Options};
use pakket_packages_api::{PackageRepository, PackageRepositorySpec};
use pakket_runtime::kernel::controller::RunOptions;
use pakket_runtime::kernel::source::SourceOptions;
use pakket_testkit::Scope;
use pakket_testkit::https::HttpsServer;
use serde_json::json;

/// The repository server.
pub struct Repository {
    /// The HTTPS server (its CA is what clients trust).
    pub server: HttpsServer,
    /// Newer `latestVersion`s, by package.
    published: Arc<Mutex<BTreeMap<String, String>>>,
    /// How many times each path was asked for.
    pub hits: Arc<Mutex<BTreeMap<String, usize>>>,
    /// Files written by a test, served beside the real ones.
    written: Arc<Mutex<BTreeMap<String, String>>>,
    /// Chart repositories' files (index.yaml, archives), by path.
    charts: Arc<Mutex<BTreeMap<String, Vec<u8>>>>,
    /// URL prefixes rewritten in package files, and what to.
    rewrites: Arc<Mutex<Vec<(String, String)>>>,
}

#[derive(Clone)]
struct Served {
    base: Arc<OnceLock<String>>,
    published: Arc<Mutex<BTreeMap<String, String>>>,
    hits: Arc<Mutex<BTreeMap<String, usize>>>,
    written: Arc<Mutex<BTreeMap<String, String>>>,
    charts: Arc<Mutex<BTreeMap<String, Vec<u8>>>>,
    rewrites: Arc<Mutex<Vec<(String, String)>>>,
}

impl Repository {
    /// Serves the repository at `/packages/`.
    pub fn start() -> Self {
        let served = Served {
            base: Arc::default(),
            published: Arc::default(),
            hits: Arc::default(),
            written: Arc::default(),
            charts: Arc::default(),
            rewrites: Arc::default(),
        };
        let router = Router::new()
            .route("/packages/{*path}", get(package_file))
            .route("/github.com/{*path}", get(stand_in))
            .route("/charts/{*path}", get(chart_file))
            .with_state(served.clone());
        let server = HttpsServer::start(router);
        let base = server.url("");
        served.base.set(base.clone()).unwrap();
        served.rewrites.lock().unwrap().extend([
            (
                "https://github.com/".to_owned(),
                format!("{base}github.com/"),
            ),
            (
                "https://glasskube.github.io/packages/packages/".to_owned(),
                format!("{base}packages/"),
            ),
        ]);
        Self {
            server,
            published: served.published,
            hits: served.hits,
            written: served.written,
            charts: served.charts,
            rewrites: served.rewrites,
        }
    }

    /// Package files' `url` (a release asset the data does not hold) is
    /// answered with `text`, written by the test.
    pub fn stand_in_for(&self, url: &str, text: &str) {
        let path = format!("stand-in/{}", url.trim_start_matches("https://"));
        self.write_file(&path, text);
        let base = self.server.url("");
        self.rewrites
            .lock()
            .unwrap()
            .push((url.to_owned(), format!("{base}packages/{path}")));
    }

    /// Serves a Helm chart repository in place of `repository_url` (as
    /// package files name it), holding the chart whose files (`Chart.yaml`,
    /// `values.yaml`, `templates/…`) are `files`, written by the test and
    /// packaged and indexed by the real helm. Several charts may share a
    /// repository.
    pub fn write_chart(&self, repository_url: &str, files: &[(&str, &str)]) {
        let slug = repository_url
            .trim_start_matches("https://")
            .trim_end_matches('/')
            .to_owned();
        let served_at = self.server.url(&format!("charts/{slug}/"));
        let mut charts = self.charts.lock().unwrap();
        // The charts already served from this repository are indexed too.
        let prefix = format!("{slug}/");
        let archives: BTreeMap<String, Vec<u8>> = charts
            .iter()
            .filter_map(|(path, bytes)| {
                Some((path.strip_prefix(&prefix)?.to_owned(), bytes.clone()))
            })
            .collect();
        let (served, _) = pakket_testkit::charts::with_chart(&archives, files, &served_at);
        for (name, bytes) in served {
            charts.insert(format!("{slug}/{name}"), bytes);
        }
        let mut rewrites = self.rewrites.lock().unwrap();
        if !rewrites.iter().any(|(from, _)| from == repository_url) {
            rewrites.push((
                repository_url.to_owned(),
                served_at.trim_end_matches('/').to_owned(),
            ));
        }
    }

    /// Serves `text` at `path` under the repository, written by the test
    /// (not real data).
    pub fn write_file(&self, path: &str, text: &str) {
        self.written
            .lock()
            .unwrap()
            .insert(path.to_owned(), text.to_owned());
    }

    /// Serves a package written by the test (not real data): `name` at
    /// v1.0.0, one ConfigMap in `namespace`, needing `dependencies`
    /// (name, Glasskube range).
    pub fn write_package(
        &self,
        name: &str,
        namespace: &str,
        dependencies: &[(&str, Option<&str>)],
    ) {
        let needs: String = dependencies
            .iter()
            .map(|(dependency, range)| match range {
                Some(range) => format!("  - name: {dependency}\n    version: \"{range}\"\n"),
                None => format!("  - name: {dependency}\n"),
            })
            .collect();
        let mut written = self.written.lock().unwrap();
        written.insert(
            format!("{name}/versions.yaml"),
            "latestVersion: v1.0.0\nversions:\n  - version: v1.0.0\n".into(),
        );
        written.insert(
            format!("{name}/v1.0.0/package.yaml"),
            format!(
                "name: {name}\ndefaultNamespace: {namespace}\n{}manifests:\n  - url: ./{name}.yaml\n",
                if needs.is_empty() { String::new() } else { format!("dependencies:\n{needs}") }
            ),
        );
        written.insert(
            format!("{name}/v1.0.0/{name}.yaml"),
            format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\ndata:\n  written-by: the test\n"),
        );
    }

    /// The repository's URL.
    pub fn url(&self) -> String {
        self.server.url("packages/")
    }

    /// From now on `package`'s versions.yaml names `latest` as its latest.
    pub fn publish(&self, package: &str, latest: &str) {
        self.published
            .lock()
            .unwrap()
            .insert(package.to_owned(), latest.to_owned());
    }
}

async fn package_file(State(served): State<Served>, Path(path): Path<String>) -> Response {
    *served.hits.lock().unwrap().entry(path.clone()).or_default() += 1;
    if path
        .split('/')
        .any(|segment| segment == ".." || segment.is_empty())
    {
        return StatusCode::BAD_REQUEST.into_response();
    }
    let written = served.written.lock().unwrap().get(&path).cloned();
    let file = pakket_testkit::data("glasskube-packages/packages").join(&path);
    let Some(mut text) = written.or_else(|| std::fs::read_to_string(&file).ok()) else {
        return StatusCode::NOT_FOUND.into_response();
    };
    if path.ends_with("/package.yaml") {
        for (from, to) in served.rewrites.lock().unwrap().iter() {
            text = text.replace(from, to);
        }
    }
    if let Some(package) = path.strip_suffix("/versions.yaml")
        && let Some(latest) = served.published.lock().unwrap().get(package)
    {
        let current = text
            .lines()
            .find(|line| line.starts_with("latestVersion:"))
            .unwrap()
            .to_owned();
        text = text.replace(&current, &format!("latestVersion: {latest}"));
    }
    text.into_response()
}

async fn chart_file(State(served): State<Served>, Path(path): Path<String>) -> Response {
    *served
        .hits
        .lock()
        .unwrap()
        .entry(format!("charts/{path}"))
        .or_default() += 1;
    match served.charts.lock().unwrap().get(&path) {
        Some(bytes) => bytes.clone().into_response(),
        None => StatusCode::NOT_FOUND.into_response(),
    }
}

/// Stand-ins for release assets the data does not hold: cloudnative-pg's
/// `cnpg-X.yaml` becomes its `Cluster` CRD (schema left open) and a
/// ConfigMap naming the version, enough for postgresql's Cluster to apply.
async fn stand_in(Path(path): Path<String>) -> Response {
    let Some(version) = path
        .strip_prefix("cloudnative-pg/cloudnative-pg/releases/download/v")
        .and_then(|rest| rest.split_once('/'))
        .map(|(version, _)| version.to_owned())
    else {
        return StatusCode::NOT_FOUND.into_response();
    };
    format!(
        "apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: clusters.postgresql.cnpg.io
spec:
  group: postgresql.cnpg.io
  scope: Namespaced
  names: {{kind: Cluster, listKind: ClusterList, plural: clusters, singular: cluster}}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema: {{type: object, x-kubernetes-preserve-unknown-fields: true}}
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: cnpg-release
data:
  version: \"{version}\"
"
    )
    .into_response()
}

/// The PackageRepository `<scope>-glasskube` for `repository`.
pub async fn repository_object(scope: &Scope, repository: &Repository) -> String {
    let mut object = PackageRepository::new(
        &scope.name("glasskube"),
        PackageRepositorySpec {
            url: repository.url(),
            auth: None,
        },
    );
    object.metadata.labels = Some(scope.labels());
    Api::<PackageRepository>::all(scope.client.clone())
        .create(&PostParams::default(), &object)
        .await
        .unwrap();
    scope.name("glasskube")
}

/// The package class of the test (`approval: AllowAll`, loopback refs
/// allowed) and the package process, run in this test; the class's name.
pub async fn start(scope: &Scope, repository: &Repository) -> String {
    start_with(scope, repository, "AllowAll", None).await
}

/// [`start`] with the class's `approval`, and the key that verifies and
/// seals requester records.
pub async fn start_with(
    scope: &Scope,
    repository: &Repository,
    approval: &str,
    record_key: Option<pakket_api::RecordKey>,
) -> String {
    start_trusting(
        scope,
        vec![repository.server.ca_pem.clone()],
        approval,
        record_key,
    )
    .await
}

/// [`start_with`], trusting the CAs `roots` (PEM) for repositories and
/// their manifests.
pub async fn start_trusting(
    scope: &Scope,
    roots: Vec<String>,
    approval: &str,
    record_key: Option<pakket_api::RecordKey>,
) -> String {
    start_as(scope, scope.client.clone(), roots, approval, record_key).await
}

/// [`start_trusting`], the provisioner reading and writing with `client`.
async fn start_as(
    scope: &Scope,
    client: kube::Client,
    roots: Vec<String>,
    approval: &str,
    record_key: Option<pakket_api::RecordKey>,
) -> String {
    pakket_testkit::install_crds(&scope.client).await.unwrap();
    pakket_testkit::apply_crds(&scope.client, pakket_packages_api::crd::all())
        .await
        .unwrap();
    let id = format!("test.pakket.dev/{}-package", scope.id);
    let class = ProvisionerClass {
        metadata: scope.meta("package"),
        spec: ProvisionerClassSpec {
            provisioner: id.clone(),
            parameters: json!({"approval": approval, "allowInternalAddresses": true})
                .as_object()
                .cloned(),
        },
        status: None,
    };
    Api::<ProvisionerClass>::all(scope.client.clone())
        .create(&PostParams::default(), &class)
        .await
        .unwrap();
    let sources = SourceOptions {
        extra_roots: roots,
        ..SourceOptions::default()
    };
    let store = scope.path("package-store");
    let options = Options {
        id,
        class: scope.name("package"),
        sources: sources.clone(),
        allow_internal_addresses: true,
        helm: Some(
            pakket_controlplane::helm().expect("the pinned helm (dev/controlplane/build-helm.sh)"),
        ),
        namespace: scope.namespace.clone(),
        update_interval: Duration::from_secs(1),
        resync: Duration::from_secs(60),
        selector: Some(scope.selector()),
        runtime: RunOptions {
            sources,
            record_key,
            ..RunOptions::new(store)
        },
    };
    tokio::spawn(async move { process::run(client, options).await });
    scope.name("package")
}

/// `user` may do `rules` cluster-wide (a ClusterRole and its binding,
/// labelled with the scope).
pub async fn grant(scope: &Scope, user: &str, rules: serde_json::Value) {
    pakket_testkit::rbac::grant(scope, user, rules).await;
}

/// Removes what [`grant`] gave `user`.
pub async fn revoke(scope: &Scope, user: &str) {
    use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding};
    let _ = Api::<ClusterRoleBinding>::all(scope.client.clone())
        .delete(&scope.name(user), &Default::default())
        .await;
    let _ = Api::<ClusterRole>::all(scope.client.clone())
        .delete(&scope.name(user), &Default::default())
        .await;
}

/// A test's world: its scope, the repository server, the class and the
/// package process, and the PackageRepository `<scope>-glasskube`.
pub async fn world(name: &str) -> (Scope, Repository) {
    let scope = Scope::new(name).await;
    let repository = Repository::start();
    start(&scope, &repository).await;
    repository_object(&scope, &repository).await;
    (scope, repository)
}

/// [`world`] with the real admission webhooks for the scope's objects and
/// the class's `approval`, as `deploy/` runs them: the provisioner reads and
/// writes with the token of pakket-package's ServiceAccount and the RBAC
/// of `deploy/package/provisioner.yaml` (plus `use` on the test's class,
/// as an admin adds for a class of hers), the webhooks with theirs
/// (`deploy/webhooks/rbac.yaml`), and that ServiceAccount is the
/// webhooks' delegate, as `deploy/webhooks/deployment.yaml` names it.
pub async fn world_shipped(
    name: &str,
    approval: &str,
) -> (Scope, Repository, pakket_webhooks::local::LocalWebhooks) {
    use pakket_testkit::shipped::{self, PACKAGE, WEBHOOKS};
    use pakket_webhooks::local::{LocalOptions, LocalWebhooks};
    let scope = Scope::new(name).await;
    let repository = Repository::start();
    pakket_testkit::install_crds(&scope.client).await.unwrap();
    pakket_testkit::apply_crds(&scope.client, pakket_packages_api::crd::all())
        .await
        .unwrap();
    let admin_kubeconfig = scope.cluster.kubeconfig().to_path_buf();
    let mut options = LocalOptions::for_labels(format!("{}-packages", scope.id), scope.labels());
    options.delegates = vec![PACKAGE.user()];
    options.serving_client =
        Some(shipped::client(&scope.client, &admin_kubeconfig, WEBHOOKS, &scope).await);
    let hooks = LocalWebhooks::start(scope.client.clone(), options)
        .await
        .expect("the webhooks start");
    let provisioner = shipped::client(&scope.client, &admin_kubeconfig, PACKAGE, &scope).await;
    shipped::grant_classes(
        &scope.client,
        PACKAGE,
        &scope.name("package-classes"),
        &scope.labels(),
        &[scope.name("package")],
    )
    .await;
    start_as(
        &scope,
        provisioner,
        vec![repository.server.ca_pem.clone()],
        approval,
        Some(hooks.record_key()),
    )
    .await;
    repository_object(&scope, &repository).await;
    (scope, repository, hooks)
}

/// postgresql's `Cluster`s in `namespace`.
pub fn clusters(scope: &Scope, namespace: &str) -> Api<kube::api::DynamicObject> {
    Api::namespaced_with(
        scope.client.clone(),
        namespace,
        &kube::discovery::ApiResource {
            group: "postgresql.cnpg.io".into(),
            version: "v1".into(),
            api_version: "postgresql.cnpg.io/v1".into(),
            kind: "Cluster".into(),
            plural: "clusters".into(),
        },
    )
}
