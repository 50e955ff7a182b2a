//! Helm charts from a catalog, through the resolveset, on the real control
//! plane: a Catalog of `helm.chart` documents, an Input asking for a chart,
//! the engine choosing it and the chart it needs (one version each, Helm's
//! ranges, never a downgrade), and the resolveset class's `matchSchema`
//! sending each chart entry to a helm class, whose provisioner
//! (pakket-helm's, run in this process) installs it from a real chart
//! repository served over loopback HTTPS.
//!
//! Data: the charts are written here (not public charts), packaged and
//! indexed by the real, pinned helm: `web`, in podinfo's shape, and `cache`,
//! a separate release `web` needs, as podinfo's docs have users install
//! redis beside it.

mod support;

use std::collections::BTreeMap;
use std::sync::Arc;

use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use pakket_api::{ConditionType, Instance};
use pakket_helm::provisioner::HelmCharts;
use pakket_helm::template::Helm;
use pakket_resolveset::Input;
use pakket_resolveset::set::provisioner::ResolveSet;
use pakket_runtime::kernel::controller::{self, RunOptions};
use pakket_runtime::kernel::source::SourceOptions;
use pakket_runtime::secret_values::SecretValues;
use pakket_testkit::charts::ChartRepository;
use pakket_testkit::{Scope, condition_is, eventually, wait_for_instance};
use serde_json::json;

/// A chart of one ConfigMap, named after the release, saying the chart's
/// version.
fn chart(name: &str, version: &str) -> Vec<(&'static str, String)> {
    vec![
        (
            "Chart.yaml",
            format!("apiVersion: v2\nname: {name}\nversion: {version}\n"),
        ),
        (
            "templates/configmap.yaml",
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}\ndata:\n  version: {{ .Chart.Version | quote }}\n".into(),
        ),
    ]
}

/// The helm class and its provisioner, trusting the repository's CA.
async fn start_helm(scope: &Scope, repository: &ChartRepository) -> String {
    let id = format!("test.pakket.dev/{}-helm", scope.id);
    let helm_class = support::class(
        scope,
        "helm",
        &id,
        json!({"approval": "AllowAll", "allowInternalAddresses": true}),
    )
    .await;
    let options = RunOptions {
        sources: SourceOptions {
            extra_roots: vec![repository.server.ca_pem.clone()],
            ..SourceOptions::default()
        },
        ..RunOptions::new(scope.path("store-helm"))
    };
    let helm = Helm::new(pakket_controlplane::helm().expect("the pinned helm"));
    let values = Arc::new(SecretValues::new("the test", |name| name.to_owned()));
    let client = scope.client.clone();
    tokio::spawn(async move {
        controller::run_with(client, HelmCharts::new(id, helm, values), options).await
    });
    helm_class
}

/// The resolveset class (charts to `helm_class`, into the scope's
/// namespace) and its provisioner.
async fn start_resolveset(scope: &Scope, helm_class: &str) {
    let id = format!("test.pakket.dev/{}-resolveset", scope.id);
    support::class(
        scope,
        "resolveset",
        &id,
        json!({
            "approval": "AllowAll",
            "matchSchema": [
                {"schema": "olm.bundle", "class": "registry-v1"},
                {"schema": "helm.chart", "class": helm_class},
            ],
            "installNamespace": scope.namespace,
        }),
    )
    .await;
    let store = scope.path("store-resolveset");
    let client = scope.client.clone();
    tokio::spawn(async move {
        controller::run_with(client, ResolveSet::new(id), RunOptions::new(store)).await
    });
}

#[tokio::test]
async fn an_input_brings_a_chart_and_the_chart_it_needs_through_the_helm_class() {
    let scope = Scope::new("rs-charts").await;
    pakket_testkit::install_crds(&scope.client).await.unwrap();
    let _running = support::start(&scope, support::loopback(), Vec::new()).await;
    let repository = ChartRepository::start();
    for (name, version) in [
        ("cache", "0.1.0"),
        ("cache", "0.2.0"),
        ("web", "1.0.0"),
        ("web", "1.1.0"),
    ] {
        repository.publish(&chart(name, version));
    }
    let document = |name: &str, version: &str, needs: Option<&str>| {
        let mut document = json!({
            "schema": "helm.chart",
            "name": name,
            "version": version,
            "chart": repository.chart_ref(name, version),
            "kubeVersion": ">=1.25.0-0",
        });
        if let Some(range) = needs {
            document["dependencies"] = json!([{ "name": "cache", "version": range }]);
        }
        document.to_string()
    };
    let catalog = [
        document("web", "1.0.0", Some("~0.1")),
        document("web", "1.1.0", Some(">=0.2.0")),
        document("cache", "0.1.0", None),
        document("cache", "0.2.0", None),
    ]
    .join("\n");
    support::serve_files(
        &scope,
        "charts",
        BTreeMap::from([("catalog.json".to_owned(), catalog)]),
    )
    .await;
    let helm_class = start_helm(&scope, &repository).await;
    start_resolveset(&scope, &helm_class).await;
    support::subscription_class(&scope).await;

    let constraints =
        |range: &str| support::package_constraints(&scope, "charts", "web", "helm", range);
    let input = support::subscription_input(&scope, "web", constraints("1.0.0"));
    let inputs: Api<Input> = Api::all(scope.client.clone());
    inputs.create(&PostParams::default(), &input).await.unwrap();

    // web 1.0.0 and the cache in its range, each a release of the helm
    // class from its ref as the catalog wrote it.
    let instances: Api<Instance> = Api::all(scope.client.clone());
    let set = scope.name("resolveset");
    let config_maps: Api<k8s_openapi::api::core::v1::ConfigMap> =
        Api::namespaced(scope.client.clone(), &scope.namespace);
    let installed_at = |package: &'static str, version: &'static str| {
        let (instances, config_maps, name) = (
            instances.clone(),
            config_maps.clone(),
            format!("{set}-{package}"),
        );
        async move {
            let child = wait_for_instance(
                &instances,
                &name,
                &format!("{package} {version} installed"),
                |i| {
                    i.spec.bundle.name == format!("{package}.v{version}")
                        && condition_is(i, ConditionType::Installed, "True")
                },
            )
            .await;
            // Installed=True may still be the last version's word: the
            // release's own object says which is there.
            eventually(&format!("release {package} at {version}"), || async {
                config_maps
                    .get_opt(package)
                    .await
                    .unwrap()
                    .and_then(|map| map.data)
                    .is_some_and(|data| data["version"] == version)
            })
            .await;
            child
        }
    };
    let web = installed_at("web", "1.0.0").await;
    installed_at("cache", "0.1.0").await;
    assert_eq!(web.spec.class, helm_class);
    assert_eq!(
        web.spec.bundle.spec.as_ref().unwrap().refs,
        [repository.chart_ref("web", "1.0.0")]
    );

    // Widened: both upgrade, web's new range taking the newer cache.
    let widen = |range: &str| {
        let patch = json!({
            "apiVersion": "resolve.pakket.dev/v1alpha1",
            "kind": "Input",
            "spec": { "inputClass": scope.name("subscription"), "constraints": constraints(range) },
        });
        let inputs = inputs.clone();
        let name = scope.name("web");
        async move {
            inputs
                .patch(
                    &name,
                    &PatchParams::apply("test").force(),
                    &Patch::Apply(patch),
                )
                .await
                .unwrap();
        }
    };
    widen(">=1.0.0").await;
    installed_at("web", "1.1.0").await;
    installed_at("cache", "0.2.0").await;

    // Pinned back: never a downgrade; said so, and nothing moves.
    widen("1.0.0").await;
    eventually("the downgrade refused in the Input's status", || async {
        inputs
            .get(&scope.name("web"))
            .await
            .unwrap()
            .condition("ResolutionFailed")
            .is_some_and(|c| c.reason == "Unsatisfiable" && c.message.contains("never downgrade"))
    })
    .await;
    tokio::time::sleep(std::time::Duration::from_secs(2)).await;
    assert_eq!(
        config_maps.get("web").await.unwrap().data.unwrap()["version"],
        "1.1.0"
    );

    inputs
        .delete(&scope.name("web"), &DeleteParams::default())
        .await
        .unwrap();
    eventually("both releases are gone", || async {
        config_maps.get_opt("web").await.unwrap().is_none()
            && config_maps.get_opt("cache").await.unwrap().is_none()
    })
    .await;
    let _ = instances.delete(&set, &DeleteParams::default()).await;
    support::cleanup(scope).await;
}
