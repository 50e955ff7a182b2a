//! `deploy/`: the generated webhook configurations are in step with the
//! code, every YAML file parses, and the apiserver accepts every object in a
//! server-side dry run (admission, schema, CEL in `matchConditions`).
//!
//! Namespaced objects are dry-run in the test's own namespace (other tests
//! share the control plane, and `pakket-system` may come and go with them);
//! cert-manager's and the Prometheus Operator's objects are skipped: the
//! test cluster has neither (`deploy/monitoring/` is tested by
//! examples/plain/tests/monitoring.rs).

mod support;

use std::path::{Path, PathBuf};

use pakket_testkit::{Scope, cluster};
use serde_json::Value;
use support::repo_path;

fn yaml_files(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        // deploy/chart/ holds Helm templates, not objects: chart.rs renders
        // them and compares the objects with these.
        if path.ends_with("deploy/chart") {
            continue;
        }
        // Not objects for a cluster: Argo CD's health checks with their
        // test objects (kubectl-instance/tests/argocd_health.rs) and krew's
        // plugin manifest (kubectl-instance/tests/krew.rs).
        if path.ends_with("deploy/argocd") || path.ends_with("deploy/krew") {
            continue;
        }
        // promtool's rule tests, not objects (examples/plain/tests/monitoring.rs).
        if path.ends_with("monitoring/tests") {
            continue;
        }
        if path.is_dir() {
            files.extend(yaml_files(&path));
        } else if path.extension().is_some_and(|ext| ext == "yaml")
            && path
                .file_name()
                .is_some_and(|name| name != "kustomization.yaml")
        {
            files.push(path);
        }
    }
    files.sort();
    files
}

fn documents(path: &Path) -> Vec<Value> {
    let text = std::fs::read_to_string(path).unwrap();
    serde_saphyr::from_multiple::<Value>(&text)
        .unwrap_or_else(|error| panic!("{}: {error}", path.display()))
        .into_iter()
        .filter(|document| !document.is_null())
        .collect()
}

#[test]
fn the_webhook_configurations_in_deploy_are_generated_from_the_code() {
    let path = repo_path("deploy/webhooks/webhook-configurations.yaml");
    let committed = std::fs::read_to_string(&path).unwrap();
    let generated = pakket_webhooks::config::deployed_yaml().unwrap();
    assert!(
        committed == generated,
        "{} is stale: run `cargo run -p pakket-webhooks -- configurations > {}`",
        path.display(),
        path.display()
    );
}

#[tokio::test]
async fn every_object_in_deploy_passes_a_server_side_dry_run() {
    let scope = Scope::new("deploy-dry-run").await;
    // Every CRD in crds/, as an admin applies them (the core ones and
    // resolve.pakket.dev's Catalog, InputClass and Input, which
    // deploy/resolveset uses).
    apply_crds().await;
    let mut applied = Vec::new();
    let mut skipped = Vec::new();
    let mut documents_seen = 0;
    for file in yaml_files(&repo_path("deploy")) {
        for mut object in documents(&file) {
            documents_seen += 1;
            let kind = object["kind"].as_str().unwrap_or_default().to_owned();
            let name = object["metadata"]["name"]
                .as_str()
                .unwrap_or_default()
                .to_owned();
            assert!(
                !kind.is_empty() && !name.is_empty(),
                "{}: a document without kind or name",
                file.display()
            );
            let api_version = object["apiVersion"].as_str().unwrap_or_default();
            if api_version.starts_with("cert-manager.io/")
                || api_version.starts_with("monitoring.coreos.com/")
            {
                skipped.push(kind);
                continue;
            }
            move_into(&mut object, &scope.namespace);
            applied.push(format!("{kind}/{name}"));
            dry_run(&object, &file).await;
        }
    }
    assert!(
        documents_seen > 10,
        "only {documents_seen} documents in deploy/"
    );
    for expected in [
        "ValidatingWebhookConfiguration/pakket-webhooks",
        "MutatingWebhookConfiguration/pakket-webhooks",
        "Deployment/pakket-webhooks",
        "PodDisruptionBudget/pakket-webhooks",
        "ClusterRole/pakket-use-plain",
        "ClusterRole/pakket-instance-approver",
        "Deployment/pakket-resolveset",
        "Catalog/operatorhubio",
        "InputClass/subscription",
        "InputClass/dry-run-next",
        "ProvisionerClass/resolveset",
        "Deployment/pakket-package",
        "ProvisionerClass/package",
        "PackageRepository/glasskube",
    ] {
        assert!(
            applied.iter().any(|seen| seen == expected),
            "{expected} not in {applied:?}"
        );
    }
    skipped.sort();
    skipped.dedup();
    assert_eq!(
        skipped,
        ["Certificate", "Issuer", "PodMonitor", "PrometheusRule"]
    );
    scope.cleanup().await;
}

/// What `kubectl kustomize DIR` builds, as documents.
async fn kustomized(dir: &Path) -> Vec<Value> {
    let output = tokio::process::Command::from(cluster().kubectl())
        .arg("kustomize")
        .arg(dir)
        .output()
        .await
        .unwrap();
    assert!(
        output.status.success(),
        "kubectl kustomize {}: {}",
        dir.display(),
        String::from_utf8_lossy(&output.stderr)
    );
    serde_saphyr::from_multiple::<Value>(&String::from_utf8_lossy(&output.stdout)).unwrap()
}

fn kind_and_name(object: &Value) -> String {
    format!(
        "{}/{}",
        object["kind"].as_str().unwrap_or_default(),
        object["metadata"]["name"].as_str().unwrap_or_default()
    )
}

/// deploy/install.sh applies deploy/kustomization.yaml: it must build, and
/// hold every object of deploy/ but the ones an admin opts into (named in
/// its header), cert-manager's (deploy/cert-manager/, which builds too)
/// and the monitoring (deploy/monitoring/, which builds too).
#[tokio::test]
async fn the_kustomization_install_applies_holds_every_object_but_the_optional_ones() {
    let built: Vec<String> = kustomized(&repo_path("deploy"))
        .await
        .iter()
        .map(kind_and_name)
        .collect();
    let optional = [
        "package/repository.yaml",
        "resolveset/catalog-example.yaml",
        "rbac/examples.yaml",
        "cert-manager/certificates.yaml",
    ];
    let deploy = repo_path("deploy");
    let mut expected = Vec::new();
    for file in yaml_files(&deploy) {
        let relative = file.strip_prefix(&deploy).unwrap().display().to_string();
        // Example ApprovalPolicies (an admin copies and adapts them), and
        // the monitoring (it needs the Prometheus Operator's CRDs).
        if optional.contains(&relative.as_str())
            || relative.starts_with("policies/")
            || relative.starts_with("monitoring/")
        {
            continue;
        }
        expected.extend(documents(&file).iter().map(kind_and_name));
    }
    let mut missing: Vec<&String> = expected.iter().filter(|o| !built.contains(o)).collect();
    missing.sort();
    assert!(
        missing.is_empty(),
        "not in deploy/kustomization.yaml: {missing:?}"
    );
    assert_eq!(built.len(), expected.len(), "{built:?}");
    let certificates: Vec<String> = kustomized(&repo_path("deploy/cert-manager"))
        .await
        .iter()
        .map(kind_and_name)
        .collect();
    assert!(
        certificates.contains(&"Certificate/pakket-resolveset".to_owned()),
        "{certificates:?}"
    );
    let monitoring: Vec<String> = kustomized(&repo_path("deploy/monitoring"))
        .await
        .iter()
        .map(kind_and_name)
        .collect();
    for expected in [
        "PodMonitor/pakket-provisioners",
        "PodMonitor/pakket-webhooks",
        "PrometheusRule/pakket",
        "ConfigMap/pakket-grafana-dashboard",
    ] {
        assert!(
            monitoring.contains(&expected.to_owned()),
            "{expected} not in {monitoring:?}"
        );
    }
}

/// Applies `crds/` (server-side, like every test sharing the control
/// plane) and waits until each CRD is Established.
async fn apply_crds() {
    let crds = repo_path("crds");
    for args in [
        vec!["apply", "--server-side", "--force-conflicts", "-f"],
        vec!["wait", "--for=condition=Established", "--timeout=30s", "-f"],
    ] {
        let output = tokio::process::Command::from(cluster().kubectl())
            .args(&args)
            .arg(&crds)
            .output()
            .await
            .unwrap();
        assert!(
            output.status.success(),
            "kubectl {}: {}",
            args[0],
            String::from_utf8_lossy(&output.stderr)
        );
    }
}

/// Puts a namespaced object (and ServiceAccount subjects) into `namespace`.
fn move_into(object: &mut Value, namespace: &str) {
    if object["metadata"]["namespace"].is_string() {
        object["metadata"]["namespace"] = namespace.into();
    }
    if let Some(subjects) = object["subjects"].as_array_mut() {
        for subject in subjects {
            if subject["namespace"].is_string() {
                subject["namespace"] = namespace.into();
            }
        }
    }
}

async fn dry_run(object: &Value, file: &Path) {
    let dir = tempfile::tempdir().unwrap();
    let manifest = dir.path().join("object.json");
    std::fs::write(&manifest, object.to_string()).unwrap();
    let mut kubectl = tokio::process::Command::from(cluster().kubectl());
    let output = kubectl
        .args(["apply", "--dry-run=server", "-f"])
        .arg(&manifest)
        .output()
        .await
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success() && stdout.contains("(server dry run)"),
        "{}: {} {}: {stdout}{}",
        file.display(),
        object["kind"],
        object["metadata"]["name"],
        String::from_utf8_lossy(&output.stderr)
    );
}
