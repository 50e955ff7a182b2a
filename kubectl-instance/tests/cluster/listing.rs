//! `-o json|yaml|name` on `list packages` and `list helmcharts`, as
//! `kubectl get` prints them (`list` and `list operators` are in
//! inspect.rs and operators.rs).

use kube::api::{Api, DynamicObject, PostParams};
use kube::core::{ApiResource, GroupVersionKind};
use pakket_testkit::Scope;
use serde_json::{Value, json};

use crate::support::plugin;

/// Creates `object` (group/version/kind as written) in the cluster.
async fn create(scope: &Scope, object: Value) {
    let object: DynamicObject = serde_json::from_value(object).unwrap();
    let types = object.types.clone().unwrap();
    let (group, version) = types.api_version.split_once('/').unwrap();
    let resource = ApiResource::from_gvk(&GroupVersionKind::gvk(group, version, &types.kind));
    let api: Api<DynamicObject> = match &object.metadata.namespace {
        Some(namespace) => Api::namespaced_with(scope.client.clone(), namespace, &resource),
        None => Api::all_with(scope.client.clone(), &resource),
    };
    api.create(&PostParams::default(), &object).await.unwrap();
}

#[tokio::test]
async fn packages_and_helm_charts_are_listed_as_names_and_documents() {
    let scope = Scope::new("listing").await;
    pakket_testkit::apply_crds(&scope.client, pakket_packages_api::crd::all())
        .await
        .unwrap();
    pakket_testkit::apply_crds(&scope.client, pakket_helm_api::crd::all())
        .await
        .unwrap();
    let labels = scope.labels();
    let cluster_package = scope.name("cnpg");
    create(
        &scope,
        json!({
            "apiVersion": "packages.pakket.dev/v1alpha1", "kind": "ClusterPackage",
            "metadata": { "name": cluster_package, "labels": labels },
            "spec": { "packageInfo": { "name": "cloudnative-pg", "version": "v1.24.1+1" } },
        }),
    )
    .await;
    create(
        &scope,
        json!({
            "apiVersion": "packages.pakket.dev/v1alpha1", "kind": "Package",
            "metadata": { "name": "tool", "namespace": scope.namespace, "labels": labels },
            "spec": { "packageInfo": { "name": "tool", "version": "v1.0.0" } },
        }),
    )
    .await;
    create(
        &scope,
        json!({
            "apiVersion": "helm.pakket.dev/v1alpha1", "kind": "HelmChart",
            "metadata": { "name": "site", "namespace": scope.namespace, "labels": labels },
            "spec": { "chart": "oci://registry.example/charts/site:1.0.0" },
        }),
    )
    .await;
    let selector = scope.selector();

    let packages = plugin(
        "admin",
        &["list", "packages", "-l", &selector, "-o", "name"],
    )
    .await;
    assert_eq!(packages.code, 0, "{packages:?}");
    assert_eq!(
        packages.stdout,
        format!(
            "clusterpackage.packages.pakket.dev/{cluster_package}\npackage.packages.pakket.dev/tool\n"
        )
    );

    let charts = plugin(
        "admin",
        &[
            "list",
            "helmcharts",
            "-n",
            &scope.namespace,
            "-l",
            &selector,
            "-o",
            "name",
        ],
    )
    .await;
    assert_eq!(charts.code, 0, "{charts:?}");
    assert_eq!(charts.stdout, "helmchart.helm.pakket.dev/site\n");

    // A `List`, as `kubectl get -o json` prints one.
    let charts = plugin(
        "admin",
        &[
            "list",
            "helmcharts",
            "-n",
            &scope.namespace,
            "-l",
            &selector,
            "-o",
            "json",
        ],
    )
    .await;
    let document: Value = serde_json::from_str(&charts.stdout).unwrap();
    assert_eq!(document["kind"], "List");
    assert_eq!(document["items"][0]["metadata"]["name"], "site");
    // Cluster-scoped: not gone with the namespace.
    Api::<pakket_packages_api::ClusterPackage>::all(scope.client.clone())
        .delete(&cluster_package, &Default::default())
        .await
        .unwrap();
    scope.cleanup().await;
}
