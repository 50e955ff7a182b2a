//! Helm packages rendered by the real, pinned `helm template` in the
//! provisioner's pipeline (no Flux), on the real control plane with a kwok
//! node.
//!
//! Data: the real kubernetes-dashboard package of
//! ../shared/data/glasskube-packages (glasskube/packages at 3352e05d,
//! unedited): v2.7.0+1 is plain manifests (upstream's `recommended.yaml`),
//! v2.7.0+2 the `kubernetes-dashboard` chart 6.0.8 with values and the
//! real `dashboard-user.yaml` beside it. Neither upstream file is in the
//! data, so the test writes stand-ins: a `recommended.yaml` with the
//! dashboard's namespace, ServiceAccount, Service and Deployment, and a
//! chart that renders the same objects under the same names (as the real
//! chart does for a release named kubernetes-dashboard), packaged and
//! indexed by the real helm.

mod support;

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, ServiceAccount};
use kube::ResourceExt as _;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use pakket_packages_api::{ClusterPackage, ClusterPackageSpec, PackageInfoTemplate};
use pakket_testkit::{Scope, eventually};
use serde_json::json;

const DASHBOARD: &str = "kubernetes-dashboard";
const RECOMMENDED: &str =
    "https://raw.githubusercontent.com/kubernetes/dashboard/v2.7.0/aio/deploy/recommended.yaml";

/// Upstream's recommended.yaml, cut to the objects the chart also makes
/// (written by the test, not real data).
const RECOMMENDED_STAND_IN: &str = "apiVersion: v1
kind: Namespace
metadata:
  name: kubernetes-dashboard
---
apiVersion: v1
kind: ServiceAccount
metadata:
  name: kubernetes-dashboard
  namespace: kubernetes-dashboard
---
apiVersion: v1
kind: Service
metadata:
  name: kubernetes-dashboard
  namespace: kubernetes-dashboard
spec:
  selector: {k8s-app: kubernetes-dashboard}
  ports: [{port: 443, targetPort: 8443}]
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: kubernetes-dashboard
  namespace: kubernetes-dashboard
spec:
  replicas: 1
  selector: {matchLabels: {k8s-app: kubernetes-dashboard}}
  template:
    metadata: {labels: {k8s-app: kubernetes-dashboard}}
    spec:
      serviceAccountName: kubernetes-dashboard
      containers:
      - name: kubernetes-dashboard
        image: kubernetesui/dashboard:v2.7.0
";

/// The chart, written by the test: the same objects, named after the
/// release, its resources from the values, a metrics scraper when the
/// values enable it, a post-install hook, and objects that say what Helm
/// was told about the cluster.
fn dashboard_chart() -> Vec<(&'static str, &'static str)> {
    vec![
        (
            "Chart.yaml",
            "apiVersion: v2\nname: kubernetes-dashboard\nversion: 6.0.8\nappVersion: 2.7.0\n",
        ),
        (
            "values.yaml",
            "metricsScraper:\n  enabled: false\nresources: {}\n",
        ),
        (
            "templates/dashboard.yaml",
            r#"apiVersion: v1
kind: ServiceAccount
metadata:
  name: {{ .Release.Name }}
  labels: {helm.sh/chart: "{{ .Chart.Name }}-{{ .Chart.Version }}"}
---
apiVersion: v1
kind: Service
metadata:
  name: {{ .Release.Name }}
  labels: {helm.sh/chart: "{{ .Chart.Name }}-{{ .Chart.Version }}"}
spec:
  selector: {k8s-app: {{ .Release.Name }}}
  ports: [{port: 443, targetPort: 8443}]
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .Release.Name }}
  namespace: {{ .Release.Namespace }}
  labels:
    helm.sh/chart: "{{ .Chart.Name }}-{{ .Chart.Version }}"
    rendered-for-kubernetes: "{{ .Capabilities.KubeVersion.Major }}.{{ .Capabilities.KubeVersion.Minor }}"
spec:
  replicas: 1
  selector: {matchLabels: {k8s-app: {{ .Release.Name }}}}
  template:
    metadata: {labels: {k8s-app: {{ .Release.Name }}}}
    spec:
      serviceAccountName: {{ .Release.Name }}
      containers:
      - name: kubernetes-dashboard
        image: kubernetesui/dashboard:v2.7.0
        resources: {{- toYaml .Values.resources | nindent 10 }}
{{- if .Values.metricsScraper.enabled }}
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .Release.Name }}-metrics-scraper
spec:
  replicas: 1
  selector: {matchLabels: {k8s-app: dashboard-metrics-scraper}}
  template:
    metadata: {labels: {k8s-app: dashboard-metrics-scraper}}
    spec:
      containers:
      - name: dashboard-metrics-scraper
        image: kubernetesui/metrics-scraper:v1.0.8
{{- end }}
{{- if .Capabilities.APIVersions.Has "packages.pakket.dev/v1alpha1/ClusterPackage" }}
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}-sees-pakket
data: {served: "packages.pakket.dev/v1alpha1/ClusterPackage"}
{{- end }}
"#,
        ),
        (
            "templates/hook.yaml",
            r#"apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}-installed
  annotations:
    helm.sh/hook: post-install,post-upgrade
data: {by: a post-install hook}
"#,
        ),
    ]
}

fn cluster_package(scope: &Scope, name: &str, package: &str, version: &str) -> ClusterPackage {
    let mut object = ClusterPackage::new(
        name,
        ClusterPackageSpec {
            package_info: PackageInfoTemplate {
                name: package.into(),
                version: Some(version.into()),
                repository_name: Some(scope.name("glasskube")),
            },
            values: BTreeMap::new(),
            suspend: false,
        },
    );
    object.metadata.labels = Some(scope.labels());
    object
}

/// Waits until ClusterPackage `name` has `version` and is ready.
async fn ready_at(packages: &Api<ClusterPackage>, name: &str, version: &str) -> ClusterPackage {
    for _ in 0..900 {
        if let Some(package) = packages.get_opt(name).await.unwrap()
            && let Some(status) = &package.status
            && status.version.as_deref() == Some(version)
            && status.conditions.iter().any(|c| {
                c.type_ == "Ready" && c.status == "True" && c.reason == "InstallationSucceeded"
            })
        {
            return package;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!(
        "{name} was not ready at {version} within 90 s: {:#?}",
        packages.get(name).await.unwrap().status
    );
}

#[tokio::test]
async fn a_package_moves_from_manifests_to_a_helm_chart_without_losing_its_objects() {
    let (scope, repository) = support::world("package-helm").await;
    repository.stand_in_for(RECOMMENDED, RECOMMENDED_STAND_IN);
    repository.write_chart("https://kubernetes.github.io/dashboard", &dashboard_chart());
    let packages: Api<ClusterPackage> = Api::all(scope.client.clone());
    let name = scope.name("dashboard");
    packages
        .create(
            &PostParams::default(),
            &cluster_package(&scope, &name, DASHBOARD, "v2.7.0+1"),
        )
        .await
        .unwrap();
    ready_at(&packages, &name, "v2.7.0+1").await;
    let deployments: Api<Deployment> = Api::namespaced(scope.client.clone(), DASHBOARD);
    let before = deployments.get(DASHBOARD).await.unwrap();
    assert!(
        !before.labels().contains_key("helm.sh/chart"),
        "v2.7.0+1 is the plain manifests"
    );
    let service_accounts: Api<ServiceAccount> = Api::namespaced(scope.client.clone(), DASHBOARD);
    let account_before = service_accounts.get(DASHBOARD).await.unwrap();

    // The repository's next version is the Helm chart.
    let moved = Instant::now();
    packages
        .patch(
            &name,
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"packageInfo": {"version": "v2.7.0+2"}}})),
        )
        .await
        .unwrap();
    let installed = ready_at(&packages, &name, "v2.7.0+2").await;
    println!(
        "manifests → Helm chart, InstallationSucceeded: {:.1} s",
        moved.elapsed().as_secs_f64()
    );
    let after = deployments.get(DASHBOARD).await.unwrap();
    // The same objects, updated in place: never deleted and made again.
    assert_eq!(after.uid(), before.uid(), "the Deployment was kept");
    assert_eq!(
        service_accounts.get(DASHBOARD).await.unwrap().uid(),
        account_before.uid(),
        "the ServiceAccount was kept"
    );
    assert_eq!(
        after.labels().get("helm.sh/chart").map(String::as_str),
        Some("kubernetes-dashboard-6.0.8"),
        "now rendered by the chart"
    );
    // The package's own chart values (resources, metricsScraper) reached
    // the chart.
    let container = &after
        .spec
        .as_ref()
        .unwrap()
        .template
        .spec
        .as_ref()
        .unwrap()
        .containers[0];
    let requests = container
        .resources
        .as_ref()
        .and_then(|r| r.requests.as_ref())
        .unwrap();
    assert_eq!(requests["cpu"].0, "10m");
    assert_eq!(requests["memory"].0, "20Mi");
    deployments
        .get(&format!("{DASHBOARD}-metrics-scraper"))
        .await
        .unwrap();
    // Helm was told this cluster's version and served kinds.
    let version = scope.client.apiserver_version().await.unwrap();
    assert_eq!(
        after
            .labels()
            .get("rendered-for-kubernetes")
            .map(String::as_str),
        Some(format!("{}.{}", version.major, version.minor.trim_end_matches('+')).as_str())
    );
    let config_maps: Api<ConfigMap> = Api::namespaced(scope.client.clone(), DASHBOARD);
    config_maps
        .get(&format!("{DASHBOARD}-sees-pakket"))
        .await
        .expect("the chart saw a kind only this cluster serves");
    // An install hook is applied as an object of the package.
    config_maps
        .get(&format!("{DASHBOARD}-installed"))
        .await
        .unwrap();
    // The manifest beside the chart (the real dashboard-user.yaml).
    service_accounts.get("dashboard-user").await.unwrap();
    // The chart archive is pinned by the digest its index gives.
    let instance: Api<pakket_api::Instance> = Api::all(scope.client.clone());
    let instance = instance
        .get(
            installed
                .status
                .as_ref()
                .unwrap()
                .instance
                .as_deref()
                .unwrap(),
        )
        .await
        .unwrap();
    let refs = serde_json::to_value(&instance.spec.bundle)
        .unwrap()
        .to_string();
    assert!(
        refs.contains("kubernetes-dashboard-6.0.8.tgz#sha256="),
        "the chart ref is pinned: {refs}"
    );

    // Gone with its package, namespace and all.
    packages
        .delete(&name, &DeleteParams::default())
        .await
        .unwrap();
    eventually("the dashboard is gone", || async {
        packages.get_opt(&name).await.unwrap().is_none()
            && Api::<Namespace>::all(scope.client.clone())
                .get_opt(DASHBOARD)
                .await
                .unwrap()
                .is_none()
    })
    .await;
    scope.cleanup().await;
}

/// A chart with a hook that has no moment here (pre-delete) is refused
/// before anything is applied, the condition naming the hook.
#[tokio::test]
async fn a_chart_with_a_delete_hook_is_refused_naming_it_and_installs_nothing() {
    let (scope, repository) = support::world("package-helm-hook").await;
    let namespace = scope.namespace.clone();
    repository.write_chart(
        "https://charts.example.com/hooked",
        &[
            ("Chart.yaml", "apiVersion: v2\nname: hooked\nversion: 1.0.0\n"),
            (
                "templates/all.yaml",
                "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: hooked\ndata: {}\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: hooked-cleanup\n  annotations:\n    helm.sh/hook: pre-delete\ndata: {}\n",
            ),
        ],
    );
    repository.write_file(
        "hooked/versions.yaml",
        "latestVersion: v1.0.0\nversions:\n  - version: v1.0.0\n",
    );
    repository.write_file(
        "hooked/v1.0.0/package.yaml",
        &format!(
            "name: hooked\ndefaultNamespace: {namespace}\nhelm:\n  repositoryUrl: https://charts.example.com/hooked\n  chartName: hooked\n  chartVersion: 1.0.0\n"
        ),
    );
    let packages: Api<ClusterPackage> = Api::all(scope.client.clone());
    let name = scope.name("hooked");
    packages
        .create(
            &PostParams::default(),
            &cluster_package(&scope, &name, "hooked", "v1.0.0"),
        )
        .await
        .unwrap();
    let mut message = String::new();
    for _ in 0..600 {
        let package = packages.get(&name).await.unwrap();
        if let Some(failed) = package.status.as_ref().and_then(|s| {
            s.conditions
                .iter()
                .find(|c| c.type_ == "Failed" && c.status == "True")
        }) {
            message = failed.message.clone();
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(
        message.contains("ConfigMap hooked-cleanup (pre-delete)"),
        "the condition names the hook: {message:?}"
    );
    let config_maps: Api<ConfigMap> = Api::namespaced(scope.client.clone(), &namespace);
    assert!(
        config_maps.get_opt("hooked").await.unwrap().is_none(),
        "nothing of the chart was applied"
    );
    packages
        .delete(&name, &DeleteParams::default())
        .await
        .unwrap();
    eventually("the refused package is gone", || async {
        packages.get_opt(&name).await.unwrap().is_none()
    })
    .await;
    scope.cleanup().await;
}
