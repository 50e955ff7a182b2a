//! `kubectl instance adopt helm-release`: a release the real, pinned helm
//! installed (as alice, into her namespace) becomes her HelmChart through
//! pakket-helm run as `deploy/` runs it (its ServiceAccount, the real
//! webhooks, the helm class with `UserPermission`), and its objects are
//! kept: the same UIDs, now the Instance's. Bob, who may not read the
//! release, and Carol, who may read it but not write its objects, adopt
//! nothing.
//!
//! Data: the chart is written here (not a public chart), in podinfo's
//! shape: a Deployment, a Service and a ConfigMap named after the release.

use super::helm_world;

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{ConfigMap, Service};
use kube::ResourceExt as _;
use kube::api::{Api, DeleteParams};
use pakket_helm_api::HelmChart;
use pakket_testkit::eventually;

use super::support::plugin;

fn web_chart() -> Vec<(&'static str, String)> {
    vec![
        ("Chart.yaml", "apiVersion: v2\nname: web\nversion: 1.2.0\n".into()),
        ("values.yaml", "replicaCount: 1\nmessage: hello\n".into()),
        (
            "templates/deployment.yaml",
            "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: {{ .Release.Name }}\nspec:\n  replicas: {{ .Values.replicaCount }}\n  selector:\n    matchLabels: {app: {{ .Release.Name }}}\n  template:\n    metadata:\n      labels: {app: {{ .Release.Name }}}\n    spec:\n      containers:\n      - name: web\n        image: ghcr.io/stefanprodan/podinfo:6.7.0\n".into(),
        ),
        (
            "templates/service.yaml",
            "apiVersion: v1\nkind: Service\nmetadata:\n  name: {{ .Release.Name }}\nspec:\n  selector: {app: {{ .Release.Name }}}\n  ports:\n  - port: 9898\n".into(),
        ),
        (
            "templates/configmap.yaml",
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}\ndata:\n  message: {{ .Values.message | quote }}\n".into(),
        ),
    ]
}

/// `helm install RELEASE CHART -n NAMESPACE --set ...` as kubeconfig user
/// `context`, with the pinned helm.
fn helm_install(context: &str, release: &str, chart: &[(&str, String)], namespace: &str) {
    let work = tempfile::tempdir().unwrap();
    for (path, text) in chart {
        let file = work.path().join("chart").join(path);
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        std::fs::write(file, text).unwrap();
    }
    let helm = pakket_controlplane::helm().expect("the pinned helm");
    let output = std::process::Command::new(helm)
        .arg("install")
        .arg(release)
        .arg(work.path().join("chart"))
        .args(["-n", namespace, "--set", "message=from-helm"])
        .arg("--kubeconfig")
        .arg(pakket_testkit::cluster().kubeconfig())
        .args(["--kube-context", context])
        .env("HOME", work.path())
        .env_remove("KUBECONFIG")
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "helm install: {}",
        String::from_utf8_lossy(&output.stderr)
    );
}

#[tokio::test]
async fn a_helm_release_becomes_her_helmchart_keeping_its_objects_and_bob_adopts_nothing() {
    let world = helm_world::world("kc-adopt").await;
    let scope = &world.scope;
    let namespace = scope.namespace.clone();
    world.charts.publish(&web_chart());
    let chart_ref = world.charts.chart_ref("web", "1.2.0");
    let charts_role = helm_world::helm_charts_role(scope).await;
    for (user, role) in [
        ("alice", "admin"),
        ("alice", charts_role.as_str()),
        ("bob", "view"),
        ("bob", charts_role.as_str()),
        ("carol", "view"),
        ("carol", charts_role.as_str()),
    ] {
        pakket_testkit::rbac::bind_in(scope, &namespace, user, role).await;
    }
    pakket_testkit::rbac::grant(
        scope,
        "carol",
        serde_json::json!([{ "apiGroups": [""], "resources": ["secrets"], "verbs": ["get", "list"] }]),
    )
    .await;
    eventually("alice may write in her namespace", || async {
        scope
            .cluster
            .client_as("alice")
            .await
            .apiserver_version()
            .await
            .is_ok()
    })
    .await;
    helm_install("alice", "shop", &web_chart(), &namespace);
    let config_maps: Api<ConfigMap> = Api::namespaced(scope.client.clone(), &namespace);
    let services: Api<Service> = Api::namespaced(scope.client.clone(), &namespace);
    let before = BTreeMap::from([
        ("configmap", config_maps.get("shop").await.unwrap().uid()),
        ("service", services.get("shop").await.unwrap().uid()),
    ]);
    let charts: Api<HelmChart> = Api::namespaced(scope.client.clone(), &namespace);

    // Bob may not read the release, Carol may not write its objects:
    // nothing is created or offered.
    // The scope's labels, so the test's HelmChart controller sees it.
    let labels: Vec<String> = scope
        .labels()
        .iter()
        .map(|(key, value)| format!("{key}={value}"))
        .collect();
    let adopt = |user: &'static str, chart: String| {
        let mut args: Vec<String> = ["adopt", "helm-release", "shop", "-n", &namespace]
            .map(str::to_owned)
            .to_vec();
        args.extend(["--chart".to_owned(), chart]);
        for label in &labels {
            args.extend(["--label".to_owned(), label.clone()]);
        }
        async move {
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            plugin(user, &args).await
        }
    };
    let unread = adopt("bob", chart_ref.clone()).await;
    assert!(
        unread.code != 0 && unread.stderr.contains("cannot list resource \"secrets\""),
        "{unread:?}"
    );
    let refused = adopt("carol", chart_ref.clone()).await;
    assert_ne!(refused.code, 0, "{refused:?}");
    assert!(
        refused.stderr.contains("you may not patch")
            && refused.stderr.contains("Deployment shop")
            && refused.stderr.contains("nothing was written"),
        "{}",
        refused.stderr
    );
    // Another version than the release runs: refused, nothing written.
    let wrong = adopt("alice", world.charts.chart_ref("web", "9.9.9")).await;
    assert!(wrong.stderr.contains("runs web 1.2.0"), "{}", wrong.stderr);
    assert!(charts.get_opt("shop").await.unwrap().is_none());
    let offered = config_maps.get("shop").await.unwrap();
    assert!(
        !offered
            .annotations()
            .contains_key(pakket_api::ownership::ADOPT_ANNOTATION),
        "nothing offered"
    );

    // Alice adopts it: her HelmChart, the same objects, now the Instance's.
    let adopted = adopt("alice", chart_ref.clone()).await;
    assert_eq!(adopted.code, 0, "{adopted:?}");
    assert!(
        adopted.stdout.contains("chart web 1.2.0, revision 1")
            && adopted.stdout.contains("Service shop"),
        "{}",
        adopted.stdout
    );
    let installed =
        helm_world::helm_chart_says(&charts, "shop", "Installed", "True", String::new()).await;
    let instance = installed.status.unwrap().instance.unwrap();
    let requester = charts.get("shop").await.unwrap();
    let author = helm_world_author(&requester, &world);
    assert_eq!(author.as_deref(), Some("alice"));
    eventually("the objects are the Instance's, the same ones", || async {
        let map = config_maps.get("shop").await.unwrap();
        map.labels().get(pakket_api::ownership::INSTANCE_LABEL) == Some(&instance)
            && !map
                .annotations()
                .contains_key(pakket_api::ownership::ADOPT_ANNOTATION)
    })
    .await;
    let map = config_maps.get("shop").await.unwrap();
    assert_eq!(map.uid(), before["configmap"], "kept, not created again");
    assert_eq!(
        map.data.unwrap()["message"],
        "from-helm",
        "the values the release was installed with"
    );
    assert_eq!(services.get("shop").await.unwrap().uid(), before["service"]);

    charts
        .delete("shop", &DeleteParams::default())
        .await
        .unwrap();
    eventually("the adopted objects go with the HelmChart", || async {
        charts.get_opt("shop").await.unwrap().is_none()
            && config_maps.get_opt("shop").await.unwrap().is_none()
    })
    .await;
    world.scope.cleanup().await;
}

/// The HelmChart's verified author.
fn helm_world_author(chart: &HelmChart, world: &helm_world::World) -> Option<String> {
    pakket_helm::helmchart_controller::author(chart, Some(&world.webhooks.record_key()))
        .map(|record| record.username)
}
