//! What the resolveset tests share: the Catalog CRD installed, the process
//! (controller and API) run in this test process for the test's own
//! Catalogs (by label), catalog content as images in the real local
//! registry, an HTTPS server with a CA made for the test, and the test
//! users' tokens.
#![allow(dead_code)] // each test binary uses its own share of the helpers

#[path = "../../../../core/runtime/tests/images/mod.rs"]
mod images;
#[path = "../../../../dev/registry/testing.rs"]
mod registry;

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use kube::api::{Api, DeleteParams, ListParams, PostParams};
use pakket_resolveset::api::listen::Transport;
use pakket_resolveset::catalogs::catalog::{Catalog, CatalogSource, CatalogSpec};
use pakket_resolveset::process::SetOptions;
use pakket_resolveset::process::{self, Options, Running};
use pakket_runtime::kernel::controller::StoreGc;
use pakket_runtime::kernel::serve::Metrics;
use pakket_runtime::kernel::source::{ImageSource, PlainHttp, SourceOptions};
use pakket_testkit::Scope;
pub use registry::Registry;

/// Applies the Catalog CRD (server-side, so every test may) and waits until
/// it is Established.
pub async fn install_crd(client: &kube::Client) {
    pakket_testkit::apply_crds(client, pakket_resolveset::crd::all())
        .await
        .expect("applying the resolver's CRDs");
}

/// Where the process of `scope`'s test keeps its content.
pub fn store_dir(scope: &Scope) -> std::path::PathBuf {
    scope.path("resolveset-store")
}

/// Runs the controller and the API for `scope`'s Catalogs on this runtime,
/// trusting `extra_roots` for `https` sources.
pub async fn start(scope: &Scope, transport: Transport, extra_roots: Vec<String>) -> Running {
    // The test's https server is on loopback.
    start_with_reach(scope, transport, extra_roots, true).await
}

/// [`start`], with `https` sources allowed to reach internal addresses or
/// not (`--allow-internal-addresses`).
pub async fn start_with_reach(
    scope: &Scope,
    transport: Transport,
    extra_roots: Vec<String>,
    allow_internal_addresses: bool,
) -> Running {
    start_with(
        scope,
        transport,
        extra_roots,
        allow_internal_addresses,
        set_of(scope),
    )
    .await
}

/// Where the Input controller of `scope`'s test writes its set: the
/// scope's namespace, and an Instance and class named after the scope.
pub fn set_of(scope: &Scope) -> SetOptions {
    SetOptions {
        namespace: scope.namespace.clone(),
        instance: scope.name("resolveset"),
        class: scope.name("resolveset"),
    }
}

/// [`start_with_reach`], the set written where `set` says.
pub async fn start_with(
    scope: &Scope,
    transport: Transport,
    extra_roots: Vec<String>,
    allow_internal_addresses: bool,
    set: SetOptions,
) -> Running {
    start_keyed_as(
        scope,
        scope.client.clone(),
        transport,
        extra_roots,
        allow_internal_addresses,
        set,
        None,
    )
    .await
}

/// [`start_with`], the process reading and writing as `client` (its CRDs
/// installed as the admin, as `deploy/` does before it runs), verifying
/// and sealing requester records with `record_key`.
pub async fn start_keyed_as(
    scope: &Scope,
    client: kube::Client,
    transport: Transport,
    extra_roots: Vec<String>,
    allow_internal_addresses: bool,
    set: SetOptions,
    record_key: Option<pakket_api::RecordKey>,
) -> Running {
    install_crd(&scope.client).await;
    process::start(
        client,
        Options {
            store: store_dir(scope),
            sources: SourceOptions {
                extra_roots,
                ..SourceOptions::default()
            },
            allow_internal_addresses,
            max_catalog_file: process::DEFAULT_MAX_CATALOG_FILE,
            api_address: "127.0.0.1:0".parse().unwrap(),
            transport,
            leader: None,
            selector: Some(scope.selector()),
            metrics: Arc::new(Metrics::new()),
            // Collected every second, so a test sees old content go; the
            // grace still covers a fetch whose load has not begun.
            set,
            store_gc: StoreGc {
                every: Duration::from_secs(1),
                policy: pakket_runtime::kernel::store::gc::Policy {
                    grace: Duration::from_secs(2),
                    ..StoreGc::default().policy
                },
            },
            record_key,
        },
    )
    .await
    .expect("the resolveset process starts")
}

/// A Catalog of `scope` called `<scope>-<suffix>`.
pub fn catalog(scope: &Scope, suffix: &str, source: CatalogSource, priority: i32) -> Catalog {
    let mut catalog = Catalog::new(
        &scope.name(suffix),
        CatalogSpec {
            source,
            priority,
            poll_interval: None,
        },
    );
    catalog.metadata.labels = Some(scope.labels());
    catalog
}

/// Creates `catalog`.
pub async fn create(client: &kube::Client, catalog: &Catalog) {
    Api::<Catalog>::all(client.clone())
        .create(&PostParams::default(), catalog)
        .await
        .expect("creating the Catalog");
}

/// Polls Catalog `name` every 100 ms until `check` passes (up to 90 s);
/// panics naming `what` and the last status seen.
pub async fn wait_for(
    client: &kube::Client,
    name: &str,
    what: &str,
    check: impl Fn(&Catalog) -> bool,
) -> Catalog {
    let api: Api<Catalog> = Api::all(client.clone());
    let mut last = None;
    for _ in 0..900 {
        if let Some(catalog) = api.get_opt(name).await.expect("reading the Catalog") {
            if check(&catalog) {
                return catalog;
            }
            last = catalog.status;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("{what} did not happen within 90 s; last status: {last:#?}");
}

/// Whether the Catalog's condition `kind` has `status` and `reason`.
pub fn condition(
    catalog: &Catalog,
    kind: pakket_resolveset::ConditionType,
    status: &str,
    reason: pakket_resolveset::Reason,
) -> bool {
    catalog
        .condition(kind)
        .is_some_and(|c| c.status == status && c.reason == reason.as_str())
}

/// Deletes the scope's Catalogs, Inputs, InputClasses and resolveset
/// Instance, then the scope.
pub async fn cleanup(scope: Scope) {
    let by_scope = ListParams::default().labels(&scope.selector());
    let _ = Api::<Catalog>::all(scope.client.clone())
        .delete_collection(&DeleteParams::default(), &by_scope)
        .await;
    let _ = Api::<pakket_resolveset::Input>::all(scope.client.clone())
        .delete_collection(&DeleteParams::default(), &by_scope)
        .await;
    let _ = Api::<pakket_resolveset::InputClass>::all(scope.client.clone())
        .delete_collection(&DeleteParams::default(), &by_scope)
        .await;
    let _ = Api::<pakket_api::Instance>::all(scope.client.clone())
        .delete(&scope.name("resolveset"), &DeleteParams::default())
        .await;
    let _ = std::fs::remove_dir_all(store_dir(&scope));
    // The scratch directories of `scratch`.
    let prefix = format!("pakket-resolveset-{}-", scope.id);
    for entry in std::fs::read_dir(std::env::temp_dir()).unwrap().flatten() {
        if entry.file_name().to_string_lossy().starts_with(&prefix) {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
    scope.cleanup().await;
}

/// A gzip'd tar of everything in `dir`, paths relative to it.
pub fn tar_gz(dir: &Path) -> Vec<u8> {
    let gzip = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    let mut tar = tar::Builder::new(gzip);
    tar.append_dir_all(".", dir).unwrap();
    tar.into_inner().unwrap().finish().unwrap()
}

/// Pushes the directory `dir` (one holding `configs/`) as image
/// `catalogs/<scope>-<name>:<tag>` to the shared local registry; returns
/// the ref (without a scheme) and the manifest digest.
pub async fn push_catalog(scope: &Scope, dir: &Path, name: &str, tag: &str) -> (String, String) {
    let reference = Registry::shared().image(&format!("catalogs/{}-{name}:{tag}", scope.id));
    let source = ImageSource::new(SourceOptions {
        plain_http: PlainHttp::Loopback,
        ..SourceOptions::default()
    });
    let digest = images::push_gzip_layer(&source, &reference, tar_gz(dir)).await;
    (reference.trim_start_matches("docker://").to_owned(), digest)
}

/// A fresh scratch directory of `scope`.
pub fn scratch(scope: &Scope, name: &str) -> PathBuf {
    let dir = scope.path(&format!("resolveset-{name}"));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Copies the files under `from` into `to`, keeping relative paths.
pub fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_tree(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
            // The shared data is read-only; copies must be writable to clean up.
            let mut permissions = std::fs::metadata(&target).unwrap().permissions();
            #[allow(clippy::permissions_set_readonly_false)]
            permissions.set_readonly(false);
            std::fs::set_permissions(&target, permissions).unwrap();
        }
    }
}

/// A CA and a certificate for `127.0.0.1` it signed, written as PEM files.
pub struct TestTls {
    /// The CA's certificate: what a client trusts.
    pub ca_pem: String,
    /// The server's certificate file.
    pub cert: PathBuf,
    /// The server's key file.
    pub key: PathBuf,
}

impl TestTls {
    /// Makes the CA and certificate under `dir`.
    pub fn new(dir: &Path) -> Self {
        let made = pakket_testkit::https::TestCertificate::new();
        std::fs::create_dir_all(dir).unwrap();
        let (cert_path, key_path) = (dir.join("tls.crt"), dir.join("tls.key"));
        std::fs::write(&cert_path, &made.cert_pem).unwrap();
        std::fs::write(&key_path, &made.key_pem).unwrap();
        Self {
            ca_pem: made.ca_pem,
            cert: cert_path,
            key: key_path,
        }
    }

    /// HTTPS with this certificate on `address`.
    pub fn transport(&self, address: SocketAddr) -> Transport {
        Transport::from_flags(address, false, Some(&self.cert), Some(&self.key)).unwrap()
    }
}

/// Serves `files` (`/NAME`) over HTTPS on loopback with a certificate of
/// `tls`, on the calling runtime; returns `https://127.0.0.1:PORT`.
pub async fn https_files(tls: &TestTls, files: BTreeMap<String, Vec<u8>>) -> String {
    https_files_counted(tls, files).await.0
}

/// [`https_files`], and the number of requests it has answered so far.
pub async fn https_files_counted(
    tls: &TestTls,
    files: BTreeMap<String, Vec<u8>>,
) -> (String, Arc<std::sync::atomic::AtomicUsize>) {
    use axum::extract::{Path as UrlPath, State};
    use axum::http::StatusCode;
    use axum::response::IntoResponse;
    use std::sync::atomic::{AtomicUsize, Ordering};
    /// The files by name, and the requests answered.
    type Served = (Arc<BTreeMap<String, Vec<u8>>>, Arc<AtomicUsize>);
    let requests = Arc::new(AtomicUsize::new(0));
    let state = (Arc::new(files), Arc::clone(&requests));
    let router = axum::Router::new()
        .route(
            "/{name}",
            axum::routing::get(
                |State((files, requests)): State<Served>,
                 UrlPath(name): UrlPath<String>| async move {
                    requests.fetch_add(1, Ordering::Relaxed);
                    match files.get(&name) {
                        Some(bytes) => bytes.clone().into_response(),
                        None => StatusCode::NOT_FOUND.into_response(),
                    }
                },
            ),
        )
        .with_state(state);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    let transport = tls.transport(address);
    tokio::spawn(pakket_resolveset::api::listen::serve(
        listener, router, transport,
    ));
    (format!("https://{address}"), requests)
}

/// The bearer token of test user `name`, from the control plane's kubeconfig.
pub fn token_of(scope: &Scope, name: &str) -> String {
    let text = std::fs::read_to_string(scope.cluster.kubeconfig()).unwrap();
    let config: serde_json::Value = serde_saphyr::from_str(&text).unwrap();
    config["users"]
        .as_array()
        .unwrap()
        .iter()
        .find(|user| user["name"] == name)
        .and_then(|user| user["user"]["token"].as_str())
        .unwrap_or_else(|| panic!("no token for {name} in the kubeconfig"))
        .to_owned()
}

/// The API as `--api-insecure-loopback` serves it: plain HTTP on loopback.
pub fn loopback() -> Transport {
    Transport::from_flags("127.0.0.1:0".parse().unwrap(), true, None, None).unwrap()
}

/// Serves `files` as Catalog `<scope>-<suffix>` (priority 0) from an
/// immutable ConfigMap of the same name, marked as catalog content.
pub async fn serve_files(scope: &Scope, suffix: &str, files: BTreeMap<String, String>) {
    use k8s_openapi::api::core::v1::ConfigMap;
    use kube::api::ObjectMeta;
    let name = scope.name(suffix);
    let config_map = ConfigMap {
        metadata: ObjectMeta {
            name: Some(name.clone()),
            labels: Some(BTreeMap::from([(
                pakket_resolveset::catalogs::source::CATALOG_CONTENT_LABEL.to_owned(),
                "true".to_owned(),
            )])),
            ..ObjectMeta::default()
        },
        data: Some(files),
        immutable: Some(true),
        ..ConfigMap::default()
    };
    Api::<ConfigMap>::namespaced(scope.client.clone(), &scope.namespace)
        .create(&PostParams::default(), &config_map)
        .await
        .expect("creating the catalog's ConfigMap");
    let source = CatalogSource {
        config_map: Some(
            pakket_resolveset::catalogs::catalog::ConfigMapCatalogSource {
                name,
                namespace: scope.namespace.clone(),
            },
        ),
        ..CatalogSource::default()
    };
    create(&scope.client, &catalog(scope, suffix, source, 0)).await;
}

/// [`serve_files`], then waits until the Catalog says it serves them.
pub async fn serve_until_serving(scope: &Scope, suffix: &str, files: BTreeMap<String, String>) {
    serve_files(scope, suffix, files).await;
    wait_for(&scope.client, &scope.name(suffix), "serving", |c| {
        c.condition(pakket_resolveset::ConditionType::Serving)
            .is_some_and(|c| c.status == "True")
    })
    .await;
}

/// A ClusterRole of `rules` bound to user `user`, named after the scope.
pub async fn grant(scope: &Scope, user: &str, rules: serde_json::Value) {
    let role: k8s_openapi::api::rbac::v1::ClusterRole = serde_json::from_value(serde_json::json!({
        "metadata": { "name": scope.name(user), "labels": scope.labels() },
        "rules": rules,
    }))
    .unwrap();
    Api::<k8s_openapi::api::rbac::v1::ClusterRole>::all(scope.client.clone())
        .create(&PostParams::default(), &role)
        .await
        .unwrap();
    let binding: k8s_openapi::api::rbac::v1::ClusterRoleBinding = serde_json::from_value(serde_json::json!({
        "metadata": { "name": scope.name(user), "labels": scope.labels() },
        "roleRef": { "apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": scope.name(user) },
        "subjects": [{ "apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": user }],
    }))
    .unwrap();
    Api::<k8s_openapi::api::rbac::v1::ClusterRoleBinding>::all(scope.client.clone())
        .create(&PostParams::default(), &binding)
        .await
        .unwrap();
}

/// Removes what [`grant`] gave `user`.
pub async fn revoke(scope: &Scope, user: &str) {
    let name = scope.name(user);
    let _ = Api::<k8s_openapi::api::rbac::v1::ClusterRoleBinding>::all(scope.client.clone())
        .delete(&name, &DeleteParams::default())
        .await;
    let _ = Api::<k8s_openapi::api::rbac::v1::ClusterRole>::all(scope.client.clone())
        .delete(&name, &DeleteParams::default())
        .await;
}

/// ProvisionerClass `<scope>-<suffix>` of `provisioner` with `parameters`;
/// its name.
pub async fn class(
    scope: &Scope,
    suffix: &str,
    provisioner: &str,
    parameters: serde_json::Value,
) -> String {
    let class = pakket_api::ProvisionerClass {
        metadata: scope.meta(suffix),
        spec: pakket_api::ProvisionerClassSpec {
            provisioner: provisioner.to_owned(),
            parameters: parameters.as_object().cloned(),
        },
        status: None,
    };
    Api::<pakket_api::ProvisionerClass>::all(scope.client.clone())
        .create(&PostParams::default(), &class)
        .await
        .unwrap();
    scope.name(suffix)
}

/// InputClass `<scope>-subscription`.
pub async fn subscription_class(scope: &Scope) {
    let mut input_class = pakket_resolveset::InputClass::new(
        &scope.name("subscription"),
        pakket_resolveset::InputClassSpec {
            parameters: pakket_resolveset::inputs::input::InputClassParameters::default(),
        },
    );
    input_class.metadata.labels = Some(scope.labels());
    Api::<pakket_resolveset::InputClass>::all(scope.client.clone())
        .create(&PostParams::default(), &input_class)
        .await
        .unwrap();
}

/// What an Input asks for `package` in Catalog `<scope>-<catalog>`'s
/// `channel`, at `range`.
pub fn package_constraints(
    scope: &Scope,
    catalog: &str,
    package: &str,
    channel: &str,
    range: &str,
) -> Vec<pakket_resolveset::inputs::input::InputConstraint> {
    serde_json::from_value(serde_json::json!([
        {"type": "olm.catalog", "value": {"name": scope.name(catalog), "package": package, "channel": channel}},
        {"type": "olm.packageVersion", "value": {"package": package, "version": range}},
    ]))
    .unwrap()
}

/// Input `<scope>-<name>` of InputClass `<scope>-subscription`, asking for
/// `constraints`.
pub fn subscription_input(
    scope: &Scope,
    name: &str,
    constraints: Vec<pakket_resolveset::inputs::input::InputConstraint>,
) -> pakket_resolveset::Input {
    let mut input = pakket_resolveset::Input::new(
        &scope.name(name),
        pakket_resolveset::InputSpec {
            config: None,
            input_class: scope.name("subscription"),
            constraints,
        },
    );
    input.metadata.labels = Some(scope.labels());
    input
}
