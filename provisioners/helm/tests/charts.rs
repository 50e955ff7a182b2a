//! Helm charts installed by pakket-helm on the real control plane (kwok
//! node), from a real chart repository served over loopback HTTPS, as
//! `deploy/` runs it: the provisioner reads and writes with the token of
//! pakket-helm's ServiceAccount and the rights of
//! `deploy/helm/provisioner.yaml`, the real admission webhooks seal who
//! created each Instance, and the class approves by `UserPermission`.
//!
//! Data: the charts are written here (not public charts), in the shapes
//! podinfo, metrics-server and cert-manager have: a Deployment, Service
//! and ConfigMap named after the release, a CRD in `crds/`, a vendored
//! subchart in `charts/` declared in `Chart.yaml`, `values.schema.json`,
//! an install/upgrade hook, a test hook (not rendered), and one chart
//! whose template calls `lookup`. The real pinned helm packages and
//! indexes them.

#[path = "../../../dev/registry/testing.rs"]
mod registry;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use axum::Router;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::routing::get;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Pod};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::Client;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use pakket_api::{ConditionType, Instance, ProvisionerClass, ProvisionerClassSpec};
use pakket_helm::helmchart_controller::{self, ChartsContext};
use pakket_helm::provisioner::HelmCharts;
use pakket_helm::template::Helm;
use pakket_helm_api::HelmChart;
use pakket_runtime::kernel::controller::{self, RunOptions};
use pakket_runtime::kernel::source::SourceOptions;
use pakket_testkit::https::HttpsServer;
use pakket_testkit::shipped::{self, HELM, WEBHOOKS};
use pakket_testkit::{Scope, condition_is, eventually, wait_for_instance};
use serde_json::{Value, json};

/// Served files by name.
type Files = Arc<Mutex<BTreeMap<String, Vec<u8>>>>;

/// A chart repository: `index.yaml` and archives under `/charts/`, made by
/// the real helm from charts the tests write.
struct ChartRepository {
    server: HttpsServer,
    files: Files,
}

async fn chart_file(
    State(files): State<Files>,
    Path(path): Path<String>,
) -> Result<Vec<u8>, StatusCode> {
    files
        .lock()
        .unwrap()
        .get(&path)
        .cloned()
        .ok_or(StatusCode::NOT_FOUND)
}

impl ChartRepository {
    fn start() -> Self {
        let files: Files = Arc::default();
        let router = Router::new()
            .route("/charts/{*path}", get(chart_file))
            .with_state(Arc::clone(&files));
        Self {
            server: HttpsServer::start(router),
            files,
        }
    }

    /// `helm+https://…/charts/#NAME@VERSION`.
    fn chart_ref(&self, name: &str, version: &str) -> String {
        format!("helm+{}#{name}@{version}", self.server.url("charts/"))
    }

    /// Packages the chart whose files are `files` with the real helm and
    /// indexes the repository again; the archive's bytes.
    fn publish(&self, files: &[(&str, String)]) -> Vec<u8> {
        let files: Vec<(&str, &str)> = files.iter().map(|(p, t)| (*p, t.as_str())).collect();
        let mut served = self.files.lock().unwrap();
        let (all, archive) =
            pakket_testkit::charts::with_chart(&served, &files, &self.server.url("charts/"));
        *served = all;
        served[&archive].clone()
    }
}

/// Pushes the archive of chart `name` at `version` to the registry under
/// `path` as an OCI chart with the real helm (which names the repository
/// after the chart); `oci://REGISTRY/PATH/NAME:VERSION`.
fn push_oci(archive: &[u8], path: &str, name: &str, version: &str) -> String {
    let registry = registry::Registry::shared();
    let helm = pakket_controlplane::helm().expect("the pinned helm");
    let work = tempfile::tempdir().unwrap();
    let file = work.path().join(format!("{name}-{version}.tgz"));
    std::fs::write(&file, archive).unwrap();
    let target = format!("oci://{}/{path}", registry.address);
    let output = std::process::Command::new(&helm)
        .args([
            "push".as_ref(),
            file.as_os_str(),
            target.as_ref(),
            "--plain-http".as_ref(),
        ])
        .env("HOME", work.path())
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "helm push: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    format!("{target}/{name}:{version}")
}

/// The `web` chart at `version`, its CRD in `crd_group`: in podinfo's
/// shape, with a vendored `cache` subchart, a schema, an install and
/// upgrade hook and a test hook.
fn web_chart(version: &str, crd_group: &str) -> Vec<(&'static str, String)> {
    vec![
        (
            "Chart.yaml",
            format!(
                "apiVersion: v2\nname: web\nversion: {version}\nappVersion: \"6.7.0\"\nkubeVersion: \">=1.29.0-0\"\ndependencies:\n- name: cache\n  version: 0.1.0\n  condition: cache.enabled\n"
            ),
        ),
        (
            "values.yaml",
            "replicaCount: 1\nimage: ghcr.io/stefanprodan/podinfo:6.7.0\nmessage: hello\ncache:\n  enabled: true\n".into(),
        ),
        (
            "values.schema.json",
            r#"{"type": "object", "required": ["replicaCount"], "properties": {"replicaCount": {"type": "integer", "minimum": 1}, "message": {"type": "string"}}}"#.into(),
        ),
        (
            "templates/_helpers.tpl",
            "{{- define \"web.fullname\" -}}{{ .Release.Name }}-web{{- end }}\n".into(),
        ),
        (
            "templates/deployment.yaml",
            "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: {{ include \"web.fullname\" . }}\nspec:\n  replicas: {{ .Values.replicaCount }}\n  selector:\n    matchLabels: {app: {{ include \"web.fullname\" . }}}\n  template:\n    metadata:\n      labels: {app: {{ include \"web.fullname\" . }}}\n    spec:\n      containers:\n      - name: web\n        image: {{ .Values.image }}\n".into(),
        ),
        (
            "templates/service.yaml",
            "apiVersion: v1\nkind: Service\nmetadata:\n  name: {{ include \"web.fullname\" . }}\nspec:\n  selector: {app: {{ include \"web.fullname\" . }}}\n  ports: [{port: 9898}]\n".into(),
        ),
        (
            "templates/configmap.yaml",
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ include \"web.fullname\" . }}\ndata:\n  version: {{ .Chart.Version | quote }}\n  message: {{ .Values.message | quote }}\n  kube: {{ .Capabilities.KubeVersion.Version | quote }}\n  namespace: {{ .Release.Namespace | quote }}\n".into(),
        ),
        (
            "templates/migrate.yaml",
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ include \"web.fullname\" . }}-migrated\n  annotations:\n    helm.sh/hook: pre-install,pre-upgrade\ndata:\n  to: {{ .Chart.Version | quote }}\n".into(),
        ),
        (
            "templates/tests/test-connection.yaml",
            "apiVersion: v1\nkind: Pod\nmetadata:\n  name: {{ include \"web.fullname\" . }}-test\n  annotations:\n    helm.sh/hook: test\nspec:\n  restartPolicy: Never\n  containers:\n  - name: wget\n    image: busybox\n".into(),
        ),
        (
            "crds/widgets.yaml",
            format!(
                "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: widgets.{crd_group}\nspec:\n  group: {crd_group}\n  scope: Namespaced\n  names: {{kind: Widget, plural: widgets, singular: widget}}\n  versions:\n  - name: v1\n    served: true\n    storage: true\n    schema:\n      openAPIV3Schema: {{type: object, x-kubernetes-preserve-unknown-fields: true}}\n"
            ),
        ),
        (
            "charts/cache/Chart.yaml",
            "apiVersion: v2\nname: cache\nversion: 0.1.0\n".into(),
        ),
        (
            "charts/cache/templates/deployment.yaml",
            "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: {{ .Release.Name }}-cache\nspec:\n  replicas: 1\n  selector:\n    matchLabels: {app: {{ .Release.Name }}-cache}\n  template:\n    metadata:\n      labels: {app: {{ .Release.Name }}-cache}\n    spec:\n      containers:\n      - name: cache\n        image: redis:7\n".into(),
        ),
    ]
}

/// A chart of a ConfigMap and a Deployment only (nothing a namespace
/// owner may not create).
fn plain_chart(name: &str) -> Vec<(&'static str, String)> {
    vec![
        ("Chart.yaml", format!("apiVersion: v2\nname: {name}\nversion: 1.0.0\n")),
        ("values.yaml", "message: hello\n".into()),
        (
            "templates/configmap.yaml",
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}\ndata:\n  message: {{ .Values.message | quote }}\n".into(),
        ),
    ]
}

/// The provisioner as `deploy/` runs it, the webhooks, and the class.
struct World {
    scope: Scope,
    charts: ChartRepository,
    class: String,
    webhooks: pakket_webhooks::local::LocalWebhooks,
}

async fn world(name: &str) -> World {
    use pakket_webhooks::local::{LocalOptions, LocalWebhooks};
    let scope = Scope::new(name).await;
    pakket_testkit::install_crds(&scope.client).await.unwrap();
    let charts = ChartRepository::start();
    let admin_kubeconfig = scope.cluster.kubeconfig().to_path_buf();
    pakket_testkit::apply_crds(&scope.client, pakket_helm_api::crd::all())
        .await
        .unwrap();
    let mut options = LocalOptions::for_labels(format!("{}-helm", scope.id), scope.labels());
    // As deploy/webhooks/deployment.yaml: pakket-helm writes HelmCharts'
    // Instances for their authors.
    options.delegates = vec![HELM.user()];
    options.serving_client =
        Some(shipped::client(&scope.client, &admin_kubeconfig, WEBHOOKS, &scope).await);
    let webhooks = LocalWebhooks::start(scope.client.clone(), options)
        .await
        .expect("the webhooks start");
    let id = format!("test.pakket.dev/{}-helm", scope.id);
    let class = scope.name("helm");
    let provisioner_class = ProvisionerClass {
        metadata: scope.meta("helm"),
        spec: ProvisionerClassSpec {
            provisioner: id.clone(),
            // As deploy/helm/provisioner.yaml's class, and the chart
            // repository is on loopback.
            parameters: json!({"approval": "UserPermission", "maxObjectSize": "4Mi", "allowInternalAddresses": true})
                .as_object()
                .cloned(),
        },
        status: None,
    };
    Api::<ProvisionerClass>::all(scope.client.clone())
        .create(&PostParams::default(), &provisioner_class)
        .await
        .unwrap();
    let client = shipped::client(&scope.client, &admin_kubeconfig, HELM, &scope).await;
    shipped::grant_classes(
        &scope.client,
        HELM,
        &scope.name("helm-classes"),
        &scope.labels(),
        std::slice::from_ref(&class),
    )
    .await;
    let helm = Helm::new(pakket_controlplane::helm().expect("the pinned helm"));
    let options = RunOptions {
        sources: SourceOptions {
            extra_roots: vec![charts.server.ca_pem.clone()],
            ..SourceOptions::default()
        },
        record_key: Some(webhooks.record_key()),
        ..RunOptions::new(scope.path("helm-store"))
    };
    // The HelmChart controller, as pakket-helm runs it beside the runtime.
    let contexts = Arc::new(ChartsContext {
        client: client.clone(),
        class: class.clone(),
        record_key: Some(webhooks.record_key()),
        selector: Some(scope.selector()),
    });
    tokio::spawn(controller::run_with(
        client,
        HelmCharts::new(id, helm),
        options,
    ));
    tokio::spawn(helmchart_controller::run(contexts));
    World {
        scope,
        charts,
        class,
        webhooks,
    }
}

impl World {
    /// An Instance of the class installing `chart_ref` with `config`.
    fn instance(&self, name: &str, bundle: &str, chart_ref: &str, config: Value) -> Instance {
        serde_json::from_value(json!({
            "apiVersion": "core.pakket.dev/v1alpha1",
            "kind": "Instance",
            "metadata": { "name": self.scope.name(name), "labels": self.scope.labels() },
            "spec": {
                "class": self.class,
                "bundle": { "name": self.scope.name(bundle), "spec": { "class": self.class, "refs": [chart_ref] } },
                "config": config,
            },
        }))
        .unwrap()
    }
}

fn every_message(instance: &Instance) -> String {
    instance
        .status
        .as_ref()
        .map(|status| {
            status
                .conditions
                .iter()
                .map(|c| format!("{}: {}", c.type_, c.message))
                .collect::<Vec<_>>()
                .join("\n")
        })
        .unwrap_or_default()
}

#[tokio::test]
async fn a_chart_from_a_repository_installs_pinned_upgrades_and_uninstalls() {
    let world = world("helm-chart-lifecycle").await;
    let scope = &world.scope;
    let group = format!("{}.example.com", scope.id);
    let first = world.charts.publish(&web_chart("1.0.0", &group));
    world.charts.publish(&web_chart("1.1.0", &group));
    let instances: Api<Instance> = Api::all(scope.client.clone());
    let name = scope.name("web");
    // Into a namespace it makes (`--create-namespace`), which then goes
    // with it.
    let release = scope.name("release");
    let config = json!({
        "releaseName": "web",
        "namespace": release,
        "createNamespace": true,
        "values": { "replicaCount": 2, "message": "from pakket" },
    });
    instances
        .create(
            &PostParams::default(),
            &world.instance(
                "web",
                "web-1-0-0",
                &world.charts.chart_ref("web", "1.0.0"),
                config,
            ),
        )
        .await
        .unwrap();
    wait_for_instance(&instances, &name, "web 1.0.0 installed", |i| {
        condition_is(i, ConditionType::Installed, "True")
    })
    .await;

    // Pinned to the archive the index named.
    let digest = pakket_testkit::pinned_digest(&scope.client, &scope.name("web-1-0-0")).await;
    use sha2::Digest as _;
    assert_eq!(
        digest,
        format!("sha256:{}", hex::encode(sha2::Sha256::digest(&first)))
    );

    // Rendered as Helm renders it, for this cluster, in the release's
    // namespace: the values over values.yaml, the subchart, the CRD, the
    // install hook as an object; the test hook not at all.
    let config_maps: Api<ConfigMap> = Api::namespaced(scope.client.clone(), &release);
    let deployments: Api<Deployment> = Api::namespaced(scope.client.clone(), &release);
    let rendered = config_maps.get("web-web").await.unwrap().data.unwrap();
    assert_eq!(rendered["version"], "1.0.0");
    assert_eq!(rendered["message"], "from pakket");
    assert_eq!(rendered["namespace"], release);
    assert!(rendered["kube"].starts_with("v1.35"), "{rendered:?}");
    let web = deployments.get("web-web").await.unwrap();
    assert_eq!(web.spec.as_ref().unwrap().replicas, Some(2));
    assert!(
        deployments.get_opt("web-cache").await.unwrap().is_some(),
        "the vendored subchart"
    );
    assert!(
        config_maps
            .get_opt("web-web-migrated")
            .await
            .unwrap()
            .is_some(),
        "the install hook"
    );
    let pods: Api<Pod> = Api::namespaced(scope.client.clone(), &release);
    assert!(
        pods.get_opt("web-web-test").await.unwrap().is_none(),
        "test hooks are not installed"
    );
    let crds: Api<CustomResourceDefinition> = Api::all(scope.client.clone());
    assert!(
        crds.get_opt(&format!("widgets.{group}"))
            .await
            .unwrap()
            .is_some()
    );

    // Upgraded by pointing the Instance at 1.1.0: a pivot, the same
    // Deployment updated in place, the hook's object re-rendered.
    let pivot = json!({ "spec": { "bundle": {
        "name": scope.name("web-1-1-0"),
        "spec": { "class": world.class, "refs": [world.charts.chart_ref("web", "1.1.0")] },
    } } });
    instances
        .patch(&name, &PatchParams::default(), &Patch::Merge(&pivot))
        .await
        .unwrap();
    wait_for_instance(&instances, &name, "web 1.1.0 installed", |i| {
        i.status.as_ref().and_then(|s| s.active_bundle.clone()) == Some(scope.name("web-1-1-0"))
            && condition_is(i, ConditionType::Installed, "True")
    })
    .await;
    assert_eq!(
        config_maps.get("web-web").await.unwrap().data.unwrap()["version"],
        "1.1.0"
    );
    assert_eq!(
        config_maps
            .get("web-web-migrated")
            .await
            .unwrap()
            .data
            .unwrap()["to"],
        "1.1.0"
    );
    assert_eq!(
        deployments.get("web-web").await.unwrap().metadata.uid,
        web.metadata.uid,
        "the Deployment is updated in place"
    );

    // Uninstalled: everything it wrote goes.
    instances
        .delete(&name, &DeleteParams::default())
        .await
        .unwrap();
    eventually("the Instance is gone", || async {
        instances.get_opt(&name).await.unwrap().is_none()
    })
    .await;
    for gone in ["web-web", "web-cache"] {
        assert!(deployments.get_opt(gone).await.unwrap().is_none(), "{gone}");
    }
    eventually("the chart's CRD is gone", || async {
        crds.get_opt(&format!("widgets.{group}"))
            .await
            .unwrap()
            .is_none()
    })
    .await;
    world.scope.cleanup().await;
}

#[tokio::test]
async fn a_chart_that_asks_the_cluster_breaks_its_schema_or_is_not_indexed_is_refused_in_words_writing_nothing()
 {
    let world = world("helm-chart-refusals").await;
    let scope = &world.scope;
    let group = format!("{}.example.com", scope.id);
    world.charts.publish(&web_chart("1.0.0", &group));
    let mut asks = plain_chart("asks");
    asks.push((
        "templates/secret.yaml",
        "{{- $found := lookup \"v1\" \"Secret\" .Release.Namespace \"db\" }}\napiVersion: v1\nkind: Secret\nmetadata:\n  name: db\nstringData:\n  password: {{ $found | default \"new\" | quote }}\n".into(),
    ));
    world.charts.publish(&asks);
    let instances: Api<Instance> = Api::all(scope.client.clone());
    let into = |values: Value| json!({ "namespace": scope.namespace, "values": values });
    let cases = [
        (
            "lookup",
            world.charts.chart_ref("asks", "1.0.0"),
            into(json!({})),
            "templates/secret.yaml calls lookup (which needs the cluster)",
        ),
        (
            "schema",
            world.charts.chart_ref("web", "1.0.0"),
            into(json!({"replicaCount": 0})),
            "replicaCount",
        ),
        (
            "missing",
            world.charts.chart_ref("web", "9.9.9"),
            into(json!({})),
            "lists no version 9.9.9 of chart web (it lists 1.0.0)",
        ),
        (
            "config",
            world.charts.chart_ref("web", "1.0.0"),
            json!({"replicas": 2}),
            "spec.config.replicas",
        ),
    ];
    for (name, chart_ref, config, says) in &cases {
        instances
            .create(
                &PostParams::default(),
                &world.instance(name, &format!("{name}-bundle"), chart_ref, config.clone()),
            )
            .await
            .unwrap();
        wait_for_instance(
            &instances,
            &scope.name(name),
            &format!("{name} refused naming {says}"),
            |i| {
                every_message(i).contains(says)
                    && !condition_is(i, ConditionType::Installed, "True")
            },
        )
        .await;
    }
    let config_maps: Api<ConfigMap> = Api::namespaced(scope.client.clone(), &scope.namespace);
    let written: Vec<String> = config_maps
        .list(&Default::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .filter_map(|c| c.metadata.name)
        .filter(|n| n != "kube-root-ca.crt")
        .collect();
    assert!(written.is_empty(), "nothing was written: {written:?}");
    let deployments: Api<Deployment> = Api::namespaced(scope.client.clone(), &scope.namespace);
    assert!(
        deployments
            .list(&Default::default())
            .await
            .unwrap()
            .items
            .is_empty()
    );
    for (name, ..) in &cases {
        instances
            .delete(&scope.name(name), &DeleteParams::default())
            .await
            .unwrap();
    }
    world.scope.cleanup().await;
}

#[tokio::test]
async fn a_chart_pushed_to_a_registry_installs_pinned_by_its_manifest_digest() {
    let world = world("helm-chart-oci").await;
    let scope = &world.scope;
    let group = format!("{}.example.com", scope.id);
    let archive = world.charts.publish(&web_chart("1.0.0", &group));
    let chart_ref = push_oci(&archive, &format!("charts/{}", scope.id), "web", "1.0.0");
    let instances: Api<Instance> = Api::all(scope.client.clone());
    let config = json!({ "releaseName": "oci", "namespace": scope.namespace });
    instances
        .create(
            &PostParams::default(),
            &world.instance("oci", "oci-bundle", &chart_ref, config),
        )
        .await
        .unwrap();
    wait_for_instance(
        &instances,
        &scope.name("oci"),
        "the OCI chart installed",
        |i| condition_is(i, ConditionType::Installed, "True"),
    )
    .await;
    let digest = pakket_testkit::pinned_digest(&scope.client, &scope.name("oci-bundle")).await;
    assert!(
        digest.starts_with("sha256:") && digest.len() == 71,
        "{digest}"
    );
    let config_maps: Api<ConfigMap> = Api::namespaced(scope.client.clone(), &scope.namespace);
    assert_eq!(
        config_maps.get("oci-web").await.unwrap().data.unwrap()["version"],
        "1.0.0"
    );
    instances
        .delete(&scope.name("oci"), &DeleteParams::default())
        .await
        .unwrap();
    eventually("the OCI chart's Instance is gone", || async {
        instances
            .get_opt(&scope.name("oci"))
            .await
            .unwrap()
            .is_none()
    })
    .await;
    world.scope.cleanup().await;
}

/// A namespace nobody in the test owns, `<scope>-elsewhere`.
async fn another_namespace(scope: &Scope) -> (String, Api<k8s_openapi::api::core::v1::Namespace>) {
    let elsewhere = scope.name("elsewhere");
    let namespaces: Api<k8s_openapi::api::core::v1::Namespace> = Api::all(scope.client.clone());
    let namespace =
        serde_json::from_value(json!({"metadata": {"name": elsewhere, "labels": scope.labels()}}))
            .unwrap();
    namespaces
        .create(&PostParams::default(), &namespace)
        .await
        .unwrap();
    (elsewhere, namespaces)
}

/// `user` may create Instances and use the class, and is admin of
/// `namespace` only: a namespace owner.
async fn namespace_owner(world: &World, user: &str, namespace: &str) -> Client {
    let scope = &world.scope;
    pakket_testkit::rbac::grant(
        scope,
        user,
        json!([
            { "apiGroups": ["core.pakket.dev"], "resources": ["instances"], "verbs": ["get", "list", "watch", "create", "delete"] },
            { "apiGroups": ["core.pakket.dev"], "resources": ["provisionerclasses"], "resourceNames": [world.class], "verbs": ["use"] },
        ]),
    )
    .await;
    pakket_testkit::rbac::bind_in(scope, namespace, user, "admin").await;
    scope.cluster.client_as(user).await
}

#[tokio::test]
async fn a_namespace_owner_installs_into_her_namespace_and_nothing_more_by_herself() {
    let world = world("helm-chart-owner").await;
    let scope = &world.scope;
    let group = format!("{}.example.com", scope.id);
    world.charts.publish(&web_chart("1.0.0", &group));
    world.charts.publish(&plain_chart("notes"));
    let alice = namespace_owner(&world, "alice", &scope.namespace).await;
    let hers: Api<Instance> = Api::all(alice);
    let instances: Api<Instance> = Api::all(scope.client.clone());
    let create = |name: &'static str, chart_ref: String, namespace: String| {
        let instance = world.instance(
            name,
            &format!("{name}-bundle"),
            &chart_ref,
            json!({ "namespace": namespace }),
        );
        let hers = hers.clone();
        async move {
            eventually(&format!("alice creates {name}"), || async {
                hers.create(&PostParams::default(), &instance).await.is_ok()
            })
            .await;
        }
    };

    // What she could create by hand: installed with nobody asked.
    create(
        "notes",
        world.charts.chart_ref("notes", "1.0.0"),
        scope.namespace.clone(),
    )
    .await;
    wait_for_instance(
        &instances,
        &scope.name("notes"),
        "alice's notes installed",
        |i| condition_is(i, ConditionType::Installed, "True"),
    )
    .await;

    // A CRD (cluster-wide), or her chart in a namespace not hers: a
    // person decides, and nothing is written meanwhile.
    let (elsewhere, namespaces) = another_namespace(scope).await;
    create(
        "web",
        world.charts.chart_ref("web", "1.0.0"),
        scope.namespace.clone(),
    )
    .await;
    create(
        "away",
        world.charts.chart_ref("notes", "1.0.0"),
        elsewhere.clone(),
    )
    .await;
    for name in ["web", "away"] {
        let waiting = wait_for_instance(
            &instances,
            &scope.name(name),
            &format!("{name} waits for a person"),
            |i| condition_is(i, ConditionType::Approved, "False"),
        )
        .await;
        let said = pakket_testkit::message_of(&waiting, ConditionType::Approved);
        assert!(
            said.contains("alice may not create") && said.contains("kubectl instance approve"),
            "{name}: {said}"
        );
    }
    let crds: Api<CustomResourceDefinition> = Api::all(scope.client.clone());
    assert!(
        crds.get_opt(&format!("widgets.{group}"))
            .await
            .unwrap()
            .is_none()
    );
    let deployments: Api<Deployment> = Api::namespaced(scope.client.clone(), &scope.namespace);
    assert!(deployments.get_opt("web-web").await.unwrap().is_none());
    let away: Api<ConfigMap> = Api::namespaced(scope.client.clone(), &elsewhere);
    assert!(away.get_opt(&scope.name("away")).await.unwrap().is_none());
    for name in ["notes", "web", "away"] {
        instances
            .delete(&scope.name(name), &DeleteParams::default())
            .await
            .unwrap();
    }
    let _ = namespaces
        .delete(&elsewhere, &DeleteParams::default())
        .await;
    world.scope.cleanup().await;
}

/// A chart of one ConfigMap, in the namespace its values name (`target`,
/// else the release's).
fn reaching_chart(name: &str) -> Vec<(&'static str, String)> {
    vec![
        ("Chart.yaml", format!("apiVersion: v2\nname: {name}\nversion: 1.0.0\n")),
        (
            "templates/configmap.yaml",
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}\n  {{- with .Values.target }}\n  namespace: {{ . }}\n  {{- end }}\ndata: {}\n".into(),
        ),
    ]
}

/// A chart of one ClusterRole.
fn cluster_wide_chart(name: &str) -> Vec<(&'static str, String)> {
    vec![
        ("Chart.yaml", format!("apiVersion: v2\nname: {name}\nversion: 1.0.0\n")),
        (
            "templates/clusterrole.yaml",
            "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata:\n  name: {{ .Release.Name }}\nrules:\n- apiGroups: [\"\"]\n  resources: [secrets]\n  verbs: [get]\n".into(),
        ),
    ]
}

#[tokio::test]
async fn a_namespace_owners_helmchart_installs_as_hers_and_nothing_outside_her_namespace() {
    use k8s_openapi::api::rbac::v1::ClusterRole;
    let world = world("helm-helmchart").await;
    let scope = &world.scope;
    world.charts.publish(&plain_chart("notes"));
    world.charts.publish(&reaching_chart("reach"));
    world.charts.publish(&cluster_wide_chart("wide"));
    // Alice: admin of her namespace and may write HelmCharts there (as
    // deploy/rbac/examples.yaml's pakket-helm-charts); no Instance rights.
    let charts_role = scope.name("helm-charts");
    let role: ClusterRole = serde_json::from_value(json!({
        "metadata": { "name": charts_role, "labels": scope.labels() },
        "rules": [{ "apiGroups": ["helm.pakket.dev"], "resources": ["helmcharts"], "verbs": ["get", "list", "watch", "create", "update", "patch", "delete"] }],
    }))
    .unwrap();
    Api::<ClusterRole>::all(scope.client.clone())
        .create(&PostParams::default(), &role)
        .await
        .unwrap();
    for cluster_role in ["admin", charts_role.as_str()] {
        pakket_testkit::rbac::bind_in(scope, &scope.namespace, "alice", cluster_role).await;
    }
    let hers: Api<HelmChart> =
        Api::namespaced(scope.cluster.client_as("alice").await, &scope.namespace);
    let charts: Api<HelmChart> = Api::namespaced(scope.client.clone(), &scope.namespace);
    let write = |name: &'static str, chart: String, values: Value| {
        let hers = hers.clone();
        let labels = scope.labels();
        async move {
            let chart: HelmChart = serde_json::from_value(json!({
                "apiVersion": "helm.pakket.dev/v1alpha1",
                "kind": "HelmChart",
                "metadata": { "name": name, "labels": labels },
                "spec": { "chart": chart, "values": values },
            }))
            .unwrap();
            eventually(&format!("alice writes HelmChart {name}"), || async {
                hers.create(&PostParams::default(), &chart).await.is_ok()
            })
            .await;
        }
    };
    let says =
        |name: &'static str, type_: &'static str, status: &'static str, words: &'static str| {
            let charts = charts.clone();
            async move {
                let mut last = None;
                for _ in 0..900 {
                    let chart = charts.get(name).await.unwrap();
                    let condition = chart
                        .status
                        .as_ref()
                        .and_then(|s| s.conditions.iter().find(|c| c.type_ == type_).cloned());
                    if condition
                        .as_ref()
                        .is_some_and(|c| c.status == status && c.message.contains(words))
                    {
                        return chart;
                    }
                    last = Some(chart.status);
                    tokio::time::sleep(std::time::Duration::from_millis(100)).await;
                }
                panic!("HelmChart {name}: no {type_}={status} saying {words:?} in 90 s: {last:#?}");
            }
        };

    // Hers, in her namespace: installed as her request, with nobody asked.
    write(
        "notes",
        world.charts.chart_ref("notes", "1.0.0"),
        json!({"message": "mine"}),
    )
    .await;
    let installed = says("notes", "Installed", "True", "").await;
    let instance_name = installed.status.unwrap().instance.unwrap();
    let instances: Api<Instance> = Api::all(scope.client.clone());
    let instance = instances.get(&instance_name).await.unwrap();
    let (requester, _) =
        pakket_api::requester(&instance, Some(&world.webhooks.record_key())).unwrap();
    assert_eq!(
        requester.username, "alice",
        "the Instance is judged as hers"
    );
    let config_maps: Api<ConfigMap> = Api::namespaced(scope.client.clone(), &scope.namespace);
    assert_eq!(
        config_maps.get("notes").await.unwrap().data.unwrap()["message"],
        "mine"
    );

    // A cluster-scoped object, or one in another namespace: refused before
    // anything is written, naming it.
    let (elsewhere, namespaces) = another_namespace(scope).await;
    write("wide", world.charts.chart_ref("wide", "1.0.0"), json!({})).await;
    write(
        "reach",
        world.charts.chart_ref("reach", "1.0.0"),
        json!({"target": elsewhere}),
    )
    .await;
    says(
        "wide",
        "Installed",
        "False",
        "ClusterRole wide (cluster-scoped)",
    )
    .await;
    says(
        "reach",
        "Installed",
        "False",
        &*Box::leak(format!("ConfigMap reach (in namespace {elsewhere})").into_boxed_str()),
    )
    .await;
    let cluster_roles: Api<ClusterRole> = Api::all(scope.client.clone());
    assert!(cluster_roles.get_opt("wide").await.unwrap().is_none());
    let away: Api<ConfigMap> = Api::namespaced(scope.client.clone(), &elsewhere);
    assert!(away.get_opt("reach").await.unwrap().is_none());

    // Deleting her HelmChart uninstalls what it installed.
    hers.delete("notes", &DeleteParams::default())
        .await
        .unwrap();
    eventually("the HelmChart and its Instance are gone", || async {
        charts.get_opt("notes").await.unwrap().is_none()
            && instances.get_opt(&instance_name).await.unwrap().is_none()
    })
    .await;
    assert!(config_maps.get_opt("notes").await.unwrap().is_none());
    for name in ["wide", "reach"] {
        hers.delete(name, &DeleteParams::default()).await.unwrap();
    }
    eventually("her other HelmCharts are gone", || async {
        charts
            .list(&Default::default())
            .await
            .unwrap()
            .items
            .is_empty()
    })
    .await;
    let _ = namespaces
        .delete(&elsewhere, &DeleteParams::default())
        .await;
    world.scope.cleanup().await;
}
