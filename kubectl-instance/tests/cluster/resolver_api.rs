//! `kubectl instance graph --server` and `why --server`: the cluster's
//! Catalogs read through the resolver API (the resolveset process, run in
//! this test process, serving Catalogs from immutable ConfigMaps on the
//! real control plane).
//!
//! `graph --server` prints exactly what `graph --catalog` prints on the
//! same files, text and DOT, for every package; `why --server` names what
//! to install for an Instance whose dependencies are missing.
//!
//! Data (unedited, see the shared data README):
//! - `fbc/community-operators-prod-v4.20/`: verbatim
//!   `catalogs/v4.20/<pkg>/catalog.yaml` files of
//!   redhat-openshift-ecosystem/community-operators-prod at 699495f2; for
//!   the graphs, the packages under 210 kB, in two Catalogs (a ConfigMap
//!   holds at most 1 MiB);
//! - `fbc/community-operators-prod-derived/catalog.json` (DERIVED from the
//!   same repository and commit): the documents of package
//!   rabbitmq-cluster-operator, selected by their `package`/`name` fields.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, ObjectMeta, Patch, PatchParams, PostParams};
use pakket_resolve_api::catalog::{Catalog, CatalogSource, CatalogSpec, ConfigMapCatalogSource};
use pakket_testkit::{Scope, data};

use crate::support::BIN;

const V420: &str = "fbc/community-operators-prod-v4.20";

/// Runs `kubectl-instance graph ARGS` (no cluster flags: graph needs none).
async fn graph(args: &[&str]) -> (i32, String, String) {
    let output = tokio::process::Command::new(BIN)
        .arg("graph")
        .args(args)
        .env_remove("PAKKET_TOKEN")
        .output()
        .await
        .expect("running kubectl-instance graph");
    (
        output.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

async fn install_catalog_crd(client: &kube::Client) {
    pakket_testkit::apply_crds(client, pakket_resolveset::crd::all())
        .await
        .unwrap();
}

/// Files of the packages in `packages`, as ConfigMap keys (`<pkg>.yaml`).
fn package_files(packages: &[&str]) -> BTreeMap<String, String> {
    packages
        .iter()
        .map(|package| {
            let text =
                std::fs::read_to_string(data(&format!("{V420}/{package}/catalog.yaml"))).unwrap();
            (format!("{package}.yaml"), text)
        })
        .collect()
}

/// Serves `files` as Catalog `<scope>-<suffix>` at `priority` (from an
/// immutable ConfigMap marked as catalog content), and writes them into
/// a folder of the same name for `--catalog`; returns the folder.
async fn serve(
    scope: &Scope,
    suffix: &str,
    priority: i32,
    files: &BTreeMap<String, String>,
    root: &Path,
) -> std::path::PathBuf {
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
        data: Some(files.clone()),
        immutable: Some(true),
        ..ConfigMap::default()
    };
    Api::<ConfigMap>::namespaced(scope.client.clone(), &scope.namespace)
        .create(&PostParams::default(), &config_map)
        .await
        .unwrap();
    let mut catalog = Catalog::new(
        &name,
        CatalogSpec {
            source: CatalogSource {
                config_map: Some(ConfigMapCatalogSource {
                    name: name.clone(),
                    namespace: scope.namespace.clone(),
                }),
                ..CatalogSource::default()
            },
            priority,
            poll_interval: None,
        },
    );
    catalog.metadata.labels = Some(scope.labels());
    Api::<Catalog>::all(scope.client.clone())
        .create(&PostParams::default(), &catalog)
        .await
        .unwrap();
    let folder = root.join(&name);
    std::fs::create_dir_all(&folder).unwrap();
    for (file, text) in files {
        std::fs::write(folder.join(file), text).unwrap();
    }
    folder
}

/// Starts the resolveset process for `scope`'s Catalogs; its API's URL.
async fn start_resolver(scope: &Scope) -> String {
    install_catalog_crd(&scope.client).await;
    let running = crate::support::start_resolveset(scope, Default::default()).await;
    format!("http://{}", running.api_address)
}

/// Waits until the API serves each of `packages`.
async fn wait_served(server: &str, packages: &[&str]) {
    let client = pakket_resolve_client::ResolverClient::new(server, None, None).unwrap();
    for _ in 0..600 {
        let mut all = true;
        for package in packages {
            all &= client.package(package).await.unwrap().is_some();
        }
        if all {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("{packages:?} were not served within 60 s");
}

async fn remove_catalogs(scope: Scope) {
    let _ = std::fs::remove_dir_all(scope.path("resolveset-store"));
    let catalogs: Api<Catalog> = Api::all(scope.client.clone());
    let _ = catalogs
        .delete_collection(
            &Default::default(),
            &kube::api::ListParams::default().labels(&scope.selector()),
        )
        .await;
    scope.cleanup().await;
}

#[tokio::test]
async fn graph_from_the_resolver_api_prints_what_the_catalog_files_print() {
    let scope = Scope::new("graph-server").await;
    let server = start_resolver(&scope).await;

    // Packages with skips, skipRanges, several channels and one head or more.
    let first = [
        "libredb-studio-operator",
        "kubevirt-wol",
        "nfs-provisioner-operator",
        "ecr-secret-operator",
        "aws-neuron-operator",
        "coherence-operator",
        "kubernaut-operator",
        "jumpstarter-operator",
        "rsct-operator",
        "dotvirt-operator",
        "project-onboarding-operator",
        "multicluster-global-hub-operator",
        "openshift-integration-operator",
    ];
    let second = [
        "kairos-operator",
        "layer7-operator",
        "apicurio-registry-3",
        "rabbitmq-messaging-topology-operator",
        "slurm-operator",
        "clusterpulse",
        // Also in the first Catalog: both catalogs' graphs, by priority.
        "kubevirt-wol",
    ];
    let root = scope.path("graph");
    let low = serve(&scope, "low", 0, &package_files(&first), &root).await;
    let high = serve(&scope, "high", 10, &package_files(&second), &root).await;
    wait_served(&server, &["clusterpulse", "jumpstarter-operator"]).await;

    let files = [
        "--catalog".to_owned(),
        format!("{}@10", high.display()),
        "--catalog".to_owned(),
        low.display().to_string(),
    ];
    let mut compared = 0;
    for package in first.iter().chain(&second) {
        for format in ["text", "dot"] {
            let mut local: Vec<&str> = vec![package, "--format", format];
            local.extend(files.iter().map(String::as_str));
            let from_files = graph(&local).await;
            let from_server = graph(&[package, "--format", format, "--server", &server]).await;
            assert_eq!(from_files.0, 0, "{package}: {}", from_files.2);
            assert!(!from_files.1.is_empty());
            assert_eq!(
                from_server, from_files,
                "{package} ({format}): --server differs from the files"
            );
            compared += 1;
        }
    }
    assert_eq!(compared, 2 * (first.len() + second.len()));

    // One channel, and the refusals: both ways alike where the files
    // would say the same, naming the server where only it can.
    let one = graph(&["kubevirt-wol", "--channel", "fast-v0", "--server", &server]).await;
    let mut local = vec!["kubevirt-wol", "--channel", "fast-v0"];
    local.extend(files.iter().map(String::as_str));
    assert_eq!(one, graph(&local).await);
    let (code, _, stderr) =
        graph(&["kubevirt-wol", "--channel", "nope", "--server", &server]).await;
    assert_eq!(code, 1);
    assert!(
        stderr.contains("has no channel nope; its channels:"),
        "{stderr}"
    );
    let (code, _, stderr) = graph(&["no-such-package", "--server", &server]).await;
    assert_eq!(code, 1);
    assert!(
        stderr.contains(&format!(
            "package no-such-package is in none of the catalogs {server} serves"
        )),
        "{stderr}"
    );
    let (code, _, stderr) = graph(&["etcd", "--server", "http://127.0.0.1:9"]).await;
    assert_eq!(code, 1);
    assert!(
        stderr.contains("--server http://127.0.0.1:9: cannot reach"),
        "{stderr}"
    );

    let _ = std::fs::remove_dir_all(&root);
    remove_catalogs(scope).await;
}

/// An Instance (of a class nobody serves) whose Bundle object is unpacked
/// with `package` `version` as its properties, and whose conditions are
/// written as a provisioner would.
async fn instance_of(
    scope: &Scope,
    suffix: &str,
    package: &str,
    version: &str,
    installed: (
        pakket_api::Reason,
        pakket_api::condition::ConditionStatus,
        &str,
    ),
) -> String {
    use pakket_api::Reason::{ApprovedByPolicy, HealthUnknown, UnpackSucceeded};
    use pakket_api::condition::ConditionStatus::{True, Unknown};
    let bundle = scope.name(&format!("{suffix}-bundle"));
    crate::support::create_bundle(
        scope,
        &bundle,
        &["docker://registry.example/operator:v1"],
        &[],
        Some(serde_json::json!({
            "unpacked": "Done",
            "properties": [{
                "type": "olm.package",
                "value": { "packageName": package, "version": version },
            }],
        })),
    )
    .await;
    let name = crate::support::create_instance(scope, suffix, &bundle).await;
    let list = [
        (ApprovedByPolicy, True, "approved by policy"),
        (UnpackSucceeded, True, "unpacked"),
        installed,
        (HealthUnknown, Unknown, "nothing installed yet"),
    ];
    crate::support::set_status(
        scope,
        &name,
        serde_json::json!({ "conditions": crate::support::conditions(&list) }),
    )
    .await;
    name
}

#[tokio::test]
async fn why_names_what_to_install_from_the_clusters_catalogs() {
    use pakket_api::Reason::{DependenciesMissing, InstallSucceeded};
    use pakket_api::condition::ConditionStatus::{False, True};

    let scope = Scope::new("why-server").await;
    pakket_testkit::install_crds(&scope.client).await.unwrap();
    let server = start_resolver(&scope).await;
    let root = scope.path("why");
    // The topology operator needs the cluster operator (olm.package.required
    // >2.0.0 and its RabbitmqCluster API); each is in a Catalog of its own.
    serve(
        &scope,
        "topology",
        0,
        &package_files(&["rabbitmq-messaging-topology-operator"]),
        &root,
    )
    .await;
    let cluster_catalog = scope.name("cluster-op");
    serve(
        &scope,
        "cluster-op",
        0,
        &BTreeMap::from([(
            "rabbitmq-cluster-operator.json".to_owned(),
            pakket_testkit::derived_package("rabbitmq-cluster-operator"),
        )]),
        &root,
    )
    .await;
    wait_served(
        &server,
        &[
            "rabbitmq-messaging-topology-operator",
            "rabbitmq-cluster-operator",
        ],
    )
    .await;

    let missing = "ClusterServiceVersion rabbitmq-messaging-topology-operator.v1.15.0 needs what is not installed: package rabbitmq-cluster-operator >2.0.0";
    let topology = instance_of(
        &scope,
        "topology",
        "rabbitmq-messaging-topology-operator",
        "1.15.0",
        (DependenciesMissing, False, missing),
    )
    .await;
    let run = crate::support::plugin("admin", &["why", &topology, "--server", &server]).await;
    assert_eq!(run.code, 0, "{run:?}");
    let step = run
        .stdout
        .lines()
        .find(|line| line.contains("install rabbitmq-cluster-operator "))
        .unwrap_or_else(|| panic!("a step names the package to install: {}", run.stdout));
    assert!(
        step.contains(&format!("catalog {cluster_catalog}, channel stable"))
            && step.contains("rabbitmq-messaging-topology-operator.v1.15.0 needs"),
        "{step}"
    );
    // Without --server, nothing is asked.
    let run = crate::support::plugin("admin", &["why", &topology]).await;
    assert!(!run.stdout.contains("install rabbitmq-cluster-operator "));

    // Once an Instance of the cluster operator is installed, the resolver
    // counts it: nothing else to install, and why says what that means.
    instance_of(
        &scope,
        "cluster-op",
        "rabbitmq-cluster-operator",
        "2.17.2",
        (InstallSucceeded, True, "installed"),
    )
    .await;
    let run = crate::support::plugin("admin", &["why", &topology, "--server", &server]).await;
    assert_eq!(run.code, 0, "{run:?}");
    assert!(
        run.stdout.contains("with nothing else to install")
            && !run.stdout.contains("install rabbitmq-cluster-operator "),
        "{}",
        run.stdout
    );

    // A resolver that cannot be reached is a step, not a failure of why.
    let run = crate::support::plugin(
        "admin",
        &["why", &topology, "--server", "http://127.0.0.1:9"],
    )
    .await;
    assert_eq!(run.code, 0, "{run:?}");
    assert!(
        run.stdout
            .contains("could not ask the resolver API at http://127.0.0.1:9: cannot reach"),
        "{}",
        run.stdout
    );
    let _ = std::fs::remove_dir_all(&root);
    remove_catalogs(scope).await;
}

/// Writes Input `name`'s status as the Input controller would.
async fn set_input_status(scope: &Scope, name: &str, status: serde_json::Value) {
    Api::<pakket_resolve_api::Input>::all(scope.client.clone())
        .patch_status(
            name,
            &PatchParams::default(),
            &Patch::Merge(serde_json::json!({ "status": status })),
        )
        .await
        .unwrap();
}

async fn create_input(scope: &Scope, suffix: &str) -> String {
    let input: pakket_resolve_api::Input = serde_json::from_value(serde_json::json!({
        "apiVersion": "resolve.pakket.dev/v1alpha1",
        "kind": "Input",
        "metadata": { "name": scope.name(suffix), "labels": scope.labels() },
        "spec": {
            "inputClass": "subscription",
            "constraints": [{"type": "olm.catalog", "value": {"name": "community", "package": "app"}}],
        },
    }))
    .unwrap();
    Api::<pakket_resolve_api::Input>::all(scope.client.clone())
        .create(&PostParams::default(), &input)
        .await
        .unwrap();
    scope.name(suffix)
}

#[tokio::test]
async fn why_explains_an_input_what_it_brings_in_and_how_far_each_got() {
    use pakket_api::Reason::{
        ApprovalPending, ApprovedByPolicy, HealthUnknown, InstallPending, InstallSucceeded,
        ObjectsHealthy, UnpackSucceeded,
    };
    use pakket_api::condition::ConditionStatus::{False, True, Unknown};

    let scope = Scope::new("why-input").await;
    pakket_testkit::install_crds(&scope.client).await.unwrap();
    install_catalog_crd(&scope.client).await;
    let now = jiff::Timestamp::now().to_string();
    let condition = |status: &str, reason: &str, message: &str| {
        serde_json::json!({"type": "ResolutionFailed", "status": status, "reason": reason,
            "message": message, "lastTransitionTime": now})
    };

    // Resolved: the app (installed) and its dependency (waiting).
    let app_child = crate::support::create_instance(&scope, "app-child", "app.v1").await;
    let dep_child = crate::support::create_instance(&scope, "dep-child", "dep.v1").await;
    let installed = [
        (ApprovedByPolicy, True, "ok"),
        (UnpackSucceeded, True, "ok"),
        (InstallSucceeded, True, "ok"),
        (ObjectsHealthy, True, "ok"),
    ];
    crate::support::set_status(
        &scope,
        &app_child,
        serde_json::json!({ "conditions": crate::support::conditions(&installed) }),
    )
    .await;
    let waiting = [
        (ApprovalPending, False, "waiting"),
        (UnpackSucceeded, True, "ok"),
        (InstallPending, False, "not yet"),
        (HealthUnknown, Unknown, "not yet"),
    ];
    crate::support::set_status(
        &scope,
        &dep_child,
        serde_json::json!({ "conditions": crate::support::conditions(&waiting) }),
    )
    .await;
    let input = create_input(&scope, "app").await;
    set_input_status(
        &scope,
        &input,
        serde_json::json!({
            "conditions": [condition("False", "Resolved", "installs app 1.0.0, dep 2.0.0")],
            "instances": [
                {"name": app_child, "package": "app", "version": "1.0.0", "bundle": "app.v1", "catalog": "community", "channel": "stable",
                 "satisfies": [{"kind": "Input", "name": input, "meets": ["app from catalog community"]}],
                 "dependencies": [{"kind": "Instance", "name": dep_child, "meets": ["package dep >=2.0.0"]}]},
                {"name": dep_child, "package": "dep", "version": "2.0.0", "bundle": "dep.v1", "catalog": "community",
                 "satisfies": [{"kind": "Instance", "name": app_child, "meets": ["package dep >=2.0.0"]}]},
            ],
        }),
    )
    .await;
    let run = crate::support::plugin("admin", &["why", &input]).await;
    assert_eq!(run.code, 0, "{run:?}");
    assert!(
        run.stdout.starts_with(&format!(
            "Input {input} brings in 2 bundle(s); 1 not installed and healthy yet.\n"
        )),
        "{}",
        run.stdout
    );
    for line in [
        format!(
            "  app 1.0.0 (bundle app.v1, catalog community, channel stable) as Instance {app_child}: InstalledAndHealthy"
        ),
        format!("    for Input {input}: app from catalog community"),
        format!("    needs Instance {dep_child}: package dep >=2.0.0"),
        format!(
            "  dep 2.0.0 (bundle dep.v1, catalog community) as Instance {dep_child}: ApprovalPending"
        ),
        format!("    for Instance {app_child}: package dep >=2.0.0"),
        format!("    kubectl instance why {dep_child}   # ApprovalPending"),
    ] {
        assert!(
            run.stdout.contains(&line),
            "missing {line:?} in:\n{}",
            run.stdout
        );
    }
    // The explicit form and JSON say the same.
    let run =
        crate::support::plugin("admin", &["why", &format!("input/{input}"), "-o", "json"]).await;
    assert_eq!(run.code, 0, "{run:?}");
    let document: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(document["bundles"][1]["state"], "ApprovalPending");
    assert_eq!(document["bundles"][0]["dependencies"][0]["name"], dep_child);

    // Unresolvable: the explanation and what to do.
    let broken = create_input(&scope, "broken").await;
    set_input_status(
        &scope,
        &broken,
        serde_json::json!({ "conditions": [condition("True", "Unsatisfiable",
            "cannot install app\n  needs package dep >=9.0.0\n    but nothing fits")] }),
    )
    .await;
    let run = crate::support::plugin("admin", &["why", &broken]).await;
    assert_eq!(run.code, 0, "{run:?}");
    assert!(
        run.stdout.starts_with(&format!(
            "Input {broken} cannot be resolved (Unsatisfiable); nothing of it is installed or changed.\n"
        )) && run.stdout.contains("      needs package dep >=9.0.0"),
        "{}",
        run.stdout
    );

    // Neither an Instance nor an Input.
    let run = crate::support::plugin("admin", &["why", "input/no-such-input"]).await;
    assert_eq!(run.code, 1);
    assert!(
        run.stderr.contains("input \"no-such-input\" not found"),
        "{}",
        run.stderr
    );
    let _ = Api::<pakket_resolve_api::Input>::all(scope.client.clone())
        .delete_collection(
            &Default::default(),
            &kube::api::ListParams::default().labels(&scope.selector()),
        )
        .await;
    scope.cleanup().await;
}
