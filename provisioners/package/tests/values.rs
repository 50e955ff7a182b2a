//! Values from Secrets (`valueFrom.secretRef`): read only for an author
//! who may read the Secret herself, and never written into the Instance
//! (whose readers are many more than the Secret's). And `transformations`:
//! the package's own name patched into its objects and its chart's values.
//!
//! The packages are written by the test (not real data): the real
//! repository has no package that takes a value from a Secret's key into a
//! Secret of its own, which is what shows the value arriving, and its
//! packages with transformations (tracecat, temporal, trieve) need charts
//! and operators that are not in the data; the unit tests of
//! `transformations` read the real tracecat.

mod support;

use std::time::Duration;

use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::api::{Api, DeleteParams, PostParams};
use pakket_api::Instance;
use pakket_packages_api::{Package, PackageInfoTemplate, PackageSpec};
use pakket_testkit::{Scope, eventually};
use serde_json::json;

const PASSWORD: &str = "correct-horse-battery-staple";

fn credentials_package(scope: &Scope, name: &str) -> Package {
    let mut object = Package::new(
        name,
        PackageSpec {
            package_info: PackageInfoTemplate {
                name: "credentials".into(),
                version: Some("v1.0.0".into()),
                repository_name: Some(scope.name("glasskube")),
            },
            values: [(
                "password".to_owned(),
                serde_json::from_value(json!({
                    "valueFrom": {"secretRef": {"name": "db-root", "key": "password"}}
                }))
                .unwrap(),
            )]
            .into(),
            suspend: false,
        },
    );
    object.metadata.namespace = Some(scope.namespace.clone());
    object.metadata.labels = Some(scope.labels());
    object
}

#[tokio::test]
async fn a_secrets_value_is_read_only_for_an_author_who_may_read_it_and_never_lands_in_the_instance()
 {
    let (scope, repository, hooks) = support::world_shipped("package-secret", "AllowAll").await;
    repository.write_file(
        "credentials/versions.yaml",
        "latestVersion: v1.0.0\nversions:\n  - version: v1.0.0\n",
    );
    repository.write_file(
        "credentials/v1.0.0/package.yaml",
        "name: credentials
scope: Namespaced
defaultNamespace: credentials
manifests:
  - url: ./secret.yaml
valueDefinitions:
  password:
    type: text
    constraints:
      minLength: 8
    targets:
      - resource: {apiGroup: v1, kind: Secret, name: app-credentials}
        patch: {op: add, path: /stringData/password}
",
    );
    repository.write_file(
        "credentials/v1.0.0/secret.yaml",
        "apiVersion: v1\nkind: Secret\nmetadata:\n  name: app-credentials\nstringData:\n  user: app\n",
    );
    // The admin's Secret.
    let secrets: Api<Secret> = Api::namespaced(scope.client.clone(), &scope.namespace);
    secrets
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({
                "metadata": {"name": "db-root", "labels": scope.labels()},
                "stringData": {"password": PASSWORD},
            }))
            .unwrap(),
        )
        .await
        .unwrap();
    let packages_rule = json!({"apiGroups": ["packages.pakket.dev"], "resources": ["packages"],
        "verbs": ["get", "list", "watch", "create", "delete"]});
    let admin_packages: Api<Package> = Api::namespaced(scope.client.clone(), &scope.namespace);
    let instances: Api<Instance> = Api::all(scope.client.clone());

    // Mallory may write Packages, not read Secrets: her Package does not
    // read the Secret for her, and nothing is made.
    support::grant(&scope, "mallory", json!([packages_rule])).await;
    let as_mallory: Api<Package> =
        Api::namespaced(scope.cluster.client_as("mallory").await, &scope.namespace);
    eventually("mallory may write Packages", || async {
        as_mallory
            .create(&PostParams::default(), &credentials_package(&scope, "leak"))
            .await
            .is_ok()
    })
    .await;
    eventually("the read is refused, naming her", || async {
        admin_packages
            .get("leak")
            .await
            .unwrap()
            .status
            .is_some_and(|s| {
                s.conditions.iter().any(|c| {
                    c.type_ == "Failed"
                        && c.reason == "ValueConfigurationInvalid"
                        && c.message.contains("mallory may not get secrets")
                })
            })
    })
    .await;
    let leak = pakket_package::names::instance(Some(&scope.namespace), "leak");
    assert!(
        instances.get_opt(&leak).await.unwrap().is_none(),
        "nothing made for mallory"
    );
    assert!(
        secrets.get_opt("app-credentials").await.unwrap().is_none(),
        "nothing written for mallory"
    );
    as_mallory
        .delete("leak", &DeleteParams::default())
        .await
        .unwrap();

    // Carol may read it: her Package installs, the value arrives in the
    // package's Secret, and the Instance says only where it came from.
    support::grant(
        &scope,
        "carol",
        json!([packages_rule, {"apiGroups": [""], "resources": ["secrets"], "verbs": ["get"]}]),
    )
    .await;
    let as_carol: Api<Package> =
        Api::namespaced(scope.cluster.client_as("carol").await, &scope.namespace);
    eventually("carol may write Packages", || async {
        as_carol
            .create(&PostParams::default(), &credentials_package(&scope, "app"))
            .await
            .is_ok()
    })
    .await;
    let instance_name = pakket_package::names::instance(Some(&scope.namespace), "app");
    let installed =
        pakket_testkit::wait_for_instance(&instances, &instance_name, "carol's installs", |i| {
            pakket_testkit::condition_is(i, pakket_api::ConditionType::Installed, "True")
        })
        .await;
    let written = secrets.get("app-credentials").await.unwrap();
    let data = written.data.unwrap();
    assert_eq!(data["password"].0, PASSWORD.as_bytes(), "the value arrived");
    assert_eq!(data["user"].0, b"app");
    let instance_text = serde_json::to_string(&installed).unwrap();
    assert!(
        !instance_text.contains(PASSWORD),
        "the value is not in the Instance: {instance_text}"
    );
    let config = installed.spec.config.as_ref().unwrap();
    assert_eq!(
        config["secretValues"]["password"]["name"], "db-root",
        "the Instance says where the value came from"
    );
    let package_text = serde_json::to_string(&admin_packages.get("app").await.unwrap()).unwrap();
    assert!(
        !package_text.contains(PASSWORD),
        "nor in the Package's status"
    );

    // A hand-written Instance that names the Secret gets nothing: the
    // value is handed only to the Instance it was read for.
    let mut forged = installed.clone();
    forged.metadata = kube::api::ObjectMeta {
        name: Some(scope.name("forged")),
        labels: Some(scope.labels()),
        ..Default::default()
    };
    forged.status = None;
    instances
        .create(&PostParams::default(), &forged)
        .await
        .unwrap();
    let refused = pakket_testkit::wait_for_instance(
        &instances,
        &scope.name("forged"),
        "the forged Instance is refused the value",
        |i| {
            i.status.as_ref().is_some_and(|s| {
                s.conditions
                    .iter()
                    .any(|c| c.message.contains("has not read for this Instance"))
            })
        },
    )
    .await;
    assert!(!serde_json::to_string(&refused).unwrap().contains(PASSWORD));
    instances
        .delete(&scope.name("forged"), &DeleteParams::default())
        .await
        .unwrap();

    as_carol
        .delete("app", &DeleteParams::default())
        .await
        .unwrap();
    eventually("carol's Package is gone with its Secret", || async {
        admin_packages.get_opt("app").await.unwrap().is_none()
            && secrets.get_opt("app-credentials").await.unwrap().is_none()
    })
    .await;
    tokio::time::sleep(Duration::from_millis(100)).await;
    support::revoke(&scope, "mallory").await;
    support::revoke(&scope, "carol").await;
    hooks.stop().await.unwrap();
    scope.cleanup().await;
}

#[tokio::test]
async fn a_transformation_patches_the_packages_own_name_into_its_objects_and_chart() {
    let (scope, repository) = support::world("package-transform").await;
    let namespace = scope.namespace.clone();
    repository.write_chart(
        "https://charts.example.com/named",
        &[
            ("Chart.yaml", "apiVersion: v2\nname: named\nversion: 1.0.0\n"),
            ("values.yaml", "greeting: unset\n"),
            (
                "templates/config.yaml",
                "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}-chart\ndata:\n  greeting: {{ .Values.greeting | quote }}\n",
            ),
        ],
    );
    repository.write_file(
        "named/versions.yaml",
        "latestVersion: v1.0.0\nversions:\n  - version: v1.0.0\n",
    );
    repository.write_file(
        "named/v1.0.0/package.yaml",
        r#"name: named
scope: Namespaced
defaultNamespace: named
helm:
  repositoryUrl: https://charts.example.com/named
  chartName: named
  chartVersion: 1.0.0
manifests:
  - url: ./config.yaml
transformations:
  - source:
      path: "{ $.metadata.name }"
    targets:
      - resource: {apiGroup: v1, kind: ConfigMap, name: named-config}
        valueTemplate: '"http://{{.}}-api:8000"'
        patch: {op: replace, path: /data/API_URL}
      - chartName: named
        valueTemplate: '"{{.}}-from-the-chart"'
        patch: {op: add, path: /greeting}
"#,
    );
    repository.write_file(
        "named/v1.0.0/config.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: named-config\ndata:\n  API_URL: \"\"\n",
    );
    let packages: Api<Package> = Api::namespaced(scope.client.clone(), &namespace);
    let mut orders = Package::new(
        "orders",
        PackageSpec {
            package_info: PackageInfoTemplate {
                name: "named".into(),
                version: Some("v1.0.0".into()),
                repository_name: Some(scope.name("glasskube")),
            },
            values: Default::default(),
            suspend: false,
        },
    );
    orders.metadata.labels = Some(scope.labels());
    let created = std::time::Instant::now();
    packages
        .create(&PostParams::default(), &orders)
        .await
        .unwrap();
    let config_maps: Api<ConfigMap> = Api::namespaced(scope.client.clone(), &namespace);
    eventually("the Package is installed", || async {
        packages
            .get("orders")
            .await
            .unwrap()
            .status
            .is_some_and(|s| {
                s.conditions.iter().any(|c| {
                    c.type_ == "Ready" && c.status == "True" && c.reason == "InstallationSucceeded"
                })
            })
    })
    .await;
    println!(
        "Package created → InstallationSucceeded (a Helm chart and a manifest): {:.1} s",
        created.elapsed().as_secs_f64()
    );
    eventually("both ConfigMaps are written", || async {
        config_maps.get_opt("named-config").await.unwrap().is_some()
            && config_maps.get_opt("orders-chart").await.unwrap().is_some()
    })
    .await;
    let data = |config_map: ConfigMap| config_map.data.unwrap_or_default();
    assert_eq!(
        data(config_maps.get("named-config").await.unwrap())["API_URL"],
        "http://orders-api:8000",
        "into the manifest's object"
    );
    assert_eq!(
        data(config_maps.get("orders-chart").await.unwrap())["greeting"],
        "orders-from-the-chart",
        "into the chart's values (the release is named after the Package)"
    );
    packages
        .delete("orders", &DeleteParams::default())
        .await
        .unwrap();
    eventually("the package and its objects are gone", || async {
        packages.get_opt("orders").await.unwrap().is_none()
            && config_maps.get_opt("named-config").await.unwrap().is_none()
    })
    .await;
    scope.cleanup().await;
}
