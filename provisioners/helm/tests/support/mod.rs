//! What the helm tests and the `helmcharts` bench share: a chart
//! repository served over loopback HTTPS (charts written by the tests,
//! packaged and indexed by the real helm), the charts, and the provisioner
//! and HelmChart controller run as `deploy/` runs them (pakket-helm's
//! ServiceAccount and rights, the real webhooks, pakket-helm their
//! delegate) with the helm class.

#![allow(dead_code)]

use std::sync::Arc;

use kube::api::{Api, PostParams};
use pakket_api::{Instance, ProvisionerClass, ProvisionerClassSpec};
use pakket_helm::helmchart_controller::{self, ChartsContext};
use pakket_helm::provisioner::HelmCharts;
use pakket_helm::template::Helm;
use pakket_helm_api::HelmChart;
use pakket_runtime::kernel::controller::{self, RunOptions};
use pakket_runtime::kernel::source::SourceOptions;
use pakket_runtime::secret_values::SecretValues;
use pakket_testkit::Scope;
use pakket_testkit::shipped::{self, HELM, WEBHOOKS};
use serde_json::{Value, json};

use pakket_testkit::charts::{CREDENTIALS_SECRET, ChartRepository};

/// The `web` chart at `version`, its CRD in `crd_group`: in podinfo's
/// shape, with a vendored `cache` subchart, a schema, an install and
/// upgrade hook and a test hook.
pub fn web_chart(version: &str, crd_group: &str) -> Vec<(&'static str, String)> {
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
pub fn plain_chart(name: &str) -> Vec<(&'static str, String)> {
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
pub struct World {
    pub scope: Scope,
    pub charts: ChartRepository,
    pub class: String,
    /// A class like `class` whose `pullSecrets` names [`CREDENTIALS_SECRET`]
    /// in the scope's namespace (the provisioner's, here).
    pub private_class: String,
    /// A class as deploy/helm/provisioner.yaml ships it: no internal
    /// addresses.
    pub public_class: String,
    pub webhooks: pakket_webhooks::local::LocalWebhooks,
}

pub async fn world(name: &str) -> World {
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
    let private_class = scope.name("helm-private");
    let public_class = scope.name("helm-public");
    // As deploy/helm/provisioner.yaml's class, and the chart repository is
    // on loopback.
    let parameters = json!({"approval": "UserPermission", "maxObjectSize": "4Mi", "allowInternalAddresses": true});
    let mut private_parameters = parameters.clone();
    private_parameters["pullSecrets"] = json!([CREDENTIALS_SECRET]);
    let mut public_parameters = parameters.clone();
    public_parameters
        .as_object_mut()
        .unwrap()
        .remove("allowInternalAddresses");
    for (name, parameters) in [
        ("helm", parameters),
        ("helm-private", private_parameters),
        ("helm-public", public_parameters),
    ] {
        let provisioner_class = ProvisionerClass {
            metadata: scope.meta(name),
            spec: ProvisionerClassSpec {
                provisioner: id.clone(),
                parameters: parameters.as_object().cloned(),
            },
            status: None,
        };
        Api::<ProvisionerClass>::all(scope.client.clone())
            .create(&PostParams::default(), &provisioner_class)
            .await
            .unwrap();
    }
    let client = shipped::client(&scope.client, &admin_kubeconfig, HELM, &scope).await;
    shipped::grant_classes(
        &scope.client,
        HELM,
        &scope.name("helm-classes"),
        &scope.labels(),
        &[class.clone(), private_class.clone(), public_class.clone()],
    )
    .await;
    let helm = Helm::new(pakket_controlplane::helm().expect("the pinned helm"));
    let options = RunOptions {
        sources: SourceOptions {
            extra_roots: vec![charts.server.ca_pem.clone()],
            secret_namespace: Some(scope.namespace.clone()),
            ..SourceOptions::default()
        },
        record_key: Some(webhooks.record_key()),
        ..RunOptions::new(scope.path("helm-store"))
    };
    // The HelmChart controller, as pakket-helm runs it beside the runtime.
    let secret_values = Arc::new(SecretValues::new(
        "pakket-helm's HelmChart controller",
        pakket_helm::values_from::field,
    ));
    let contexts = Arc::new(ChartsContext {
        client: client.clone(),
        class: class.clone(),
        record_key: Some(webhooks.record_key()),
        selector: Some(scope.selector()),
        secret_values: Arc::clone(&secret_values),
    });
    tokio::spawn(controller::run_with(
        client,
        HelmCharts::new(id, helm, secret_values),
        options,
    ));
    tokio::spawn(helmchart_controller::run(contexts));
    World {
        scope,
        charts,
        class,
        private_class,
        public_class,
        webhooks,
    }
}

impl World {
    /// An Instance of the class installing `chart_ref` with `config`.
    pub fn instance(&self, name: &str, bundle: &str, chart_ref: &str, config: Value) -> Instance {
        self.instance_of(&self.class, name, bundle, chart_ref, config)
    }

    /// [`Self::instance`] in `class`.
    pub fn instance_of(
        &self,
        class: &str,
        name: &str,
        bundle: &str,
        chart_ref: &str,
        config: Value,
    ) -> Instance {
        serde_json::from_value(json!({
            "apiVersion": "core.pakket.dev/v1alpha1",
            "kind": "Instance",
            "metadata": { "name": self.scope.name(name), "labels": self.scope.labels() },
            "spec": {
                "class": class,
                "bundle": { "name": self.scope.name(bundle), "spec": { "class": class, "refs": [chart_ref] } },
                "config": config,
            },
        }))
        .unwrap()
    }
}

pub fn every_message(instance: &Instance) -> String {
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

/// A ClusterRole to write HelmCharts (as deploy/rbac/examples.yaml's
/// pakket-helm-charts), for binding in a namespace; its name.
pub async fn helm_charts_role(scope: &Scope) -> String {
    use k8s_openapi::api::rbac::v1::ClusterRole;
    let name = scope.name("helm-charts");
    let role: ClusterRole = serde_json::from_value(json!({
        "metadata": { "name": name, "labels": scope.labels() },
        "rules": [{ "apiGroups": ["helm.pakket.dev"], "resources": ["helmcharts"], "verbs": ["get", "list", "watch", "create", "update", "patch", "delete"] }],
    }))
    .unwrap();
    Api::<ClusterRole>::all(scope.client.clone())
        .create(&PostParams::default(), &role)
        .await
        .unwrap();
    name
}

/// The HelmChart `name` once its `type_` condition is `status` and says
/// `words`; panics with its status after 90 s.
pub async fn helm_chart_says(
    charts: &Api<HelmChart>,
    name: &str,
    type_: &str,
    status: &str,
    words: String,
) -> HelmChart {
    let mut last = None;
    for _ in 0..900 {
        let chart = charts.get(name).await.unwrap();
        let condition = chart
            .status
            .as_ref()
            .and_then(|s| s.conditions.iter().find(|c| c.type_ == type_).cloned());
        if condition
            .as_ref()
            .is_some_and(|c| c.status == status && c.message.contains(&words))
        {
            return chart;
        }
        last = Some(chart.status);
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    panic!("HelmChart {name}: no {type_}={status} saying {words:?} in 90 s: {last:#?}");
}

/// A namespace nobody in the test owns, `<scope>-elsewhere`.
pub async fn another_namespace(
    scope: &Scope,
) -> (String, Api<k8s_openapi::api::core::v1::Namespace>) {
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
pub async fn namespace_owner(world: &World, user: &str, namespace: &str) -> kube::Client {
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
