//! `kubectl instance list operators` and `describe operator/NAME` on an
//! Operator the real Operator controller (the resolveset process, run in
//! this test process) has reported on, from a Catalog served from an
//! immutable ConfigMap.
//!
//! Data (see the shared data README): `fbc/community-operators-prod-derived/catalog.json`
//! (DERIVED from redhat-openshift-ecosystem/community-operators-prod at
//! 699495f2): the documents of package etcd, selected by their
//! `package`/`name` fields.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, DeleteParams, ObjectMeta, PostParams};
use pakket_operators_api::Operator;
use pakket_resolve_api::InputClass;
use pakket_resolve_api::catalog::{Catalog, CatalogSource, CatalogSpec, ConfigMapCatalogSource};
use pakket_resolveset::process::SetOptions;
use pakket_testkit::{Scope, eventually};
use serde_json::json;

use crate::support::plugin;

#[tokio::test]
async fn operators_are_listed_and_described_with_what_they_got_and_could_get() {
    let scope = Scope::new("kubectl-operators").await;
    pakket_testkit::install_crds(&scope.client).await.unwrap();
    pakket_testkit::apply_crds(&scope.client, pakket_resolveset::crd::all())
        .await
        .unwrap();
    let running = crate::support::start_resolveset(
        &scope,
        SetOptions {
            namespace: scope.namespace.clone(),
            instance: scope.name("resolveset"),
            class: scope.name("resolveset"),
        },
    )
    .await;
    let catalog_name = scope.name("etcd-catalog");
    let config_map = ConfigMap {
        metadata: ObjectMeta {
            name: Some(catalog_name.clone()),
            labels: Some(BTreeMap::from([(
                pakket_resolveset::catalogs::source::CATALOG_CONTENT_LABEL.to_owned(),
                "true".to_owned(),
            )])),
            ..ObjectMeta::default()
        },
        data: Some(BTreeMap::from([(
            "catalog.json".to_owned(),
            pakket_testkit::derived_package("etcd"),
        )])),
        immutable: Some(true),
        ..ConfigMap::default()
    };
    Api::<ConfigMap>::namespaced(scope.client.clone(), &scope.namespace)
        .create(&PostParams::default(), &config_map)
        .await
        .unwrap();
    let mut catalog = Catalog::new(
        &catalog_name,
        CatalogSpec {
            source: CatalogSource {
                config_map: Some(ConfigMapCatalogSource {
                    name: catalog_name.clone(),
                    namespace: scope.namespace.clone(),
                }),
                ..CatalogSource::default()
            },
            priority: 0,
            poll_interval: None,
        },
    );
    catalog.metadata.labels = Some(scope.labels());
    Api::<Catalog>::all(scope.client.clone())
        .create(&PostParams::default(), &catalog)
        .await
        .unwrap();
    let mut subscription: InputClass = serde_json::from_value(json!({
        "apiVersion": "resolve.pakket.dev/v1alpha1", "kind": "InputClass",
        "metadata": { "name": scope.name("subscription") },
        "spec": { "parameters": {} },
    }))
    .unwrap();
    subscription.metadata.labels = Some(scope.labels());
    Api::<InputClass>::all(scope.client.clone())
        .create(&PostParams::default(), &subscription)
        .await
        .unwrap();
    let name = scope.name("etcd");
    let mut operator: Operator = serde_json::from_value(json!({
        "apiVersion": "operators.pakket.dev/v1alpha1", "kind": "Operator",
        "metadata": { "name": name },
        "spec": {
            "inputClass": scope.name("subscription"),
            "catalog": {"name": catalog_name, "package": "etcd", "channel": "singlenamespace-alpha"},
            "version": "0.9.2",
        },
    }))
    .unwrap();
    operator.metadata.labels = Some(scope.labels());
    let operators: Api<Operator> = Api::all(scope.client.clone());
    operators
        .create(&PostParams::default(), &operator)
        .await
        .unwrap();
    eventually(
        "the Operator reports 0.9.2 and an update outside its version",
        || async {
            operators
                .get(&name)
                .await
                .unwrap()
                .status
                .is_some_and(|status| {
                    status.installed_version.as_deref() == Some("0.9.2")
                        && status
                            .updates
                            .iter()
                            .any(|u| u.version == "0.9.4" && !u.allowed)
                })
        },
    )
    .await;

    let selector = scope.selector();
    let listed = plugin("admin", &["list", "operators", "-l", &selector]).await;
    assert_eq!(listed.code, 0, "{}", listed.stderr);
    let row: Vec<&str> = listed
        .stdout
        .lines()
        .find(|line| line.starts_with(&name))
        .expect("the Operator is listed")
        .split_whitespace()
        .collect();
    assert_eq!(
        row[..6],
        [
            name.as_str(),
            "etcd",
            "singlenamespace-alpha",
            "0.9.2",
            "0.9.2",
            "UpdateOutsideVersion"
        ]
    );
    let names = plugin(
        "admin",
        &["list", "operators", "-l", &selector, "-o", "name"],
    )
    .await;
    assert_eq!(
        names.stdout,
        format!("operator.operators.pakket.dev/{name}\n"),
        "{names:?}"
    );
    let described = plugin("admin", &["describe", &format!("operator/{name}")]).await;
    assert_eq!(described.code, 0, "{}", described.stderr);
    let text = &described.stdout;
    assert!(text.contains("Installed:     0.9.2"), "{text}");
    assert!(
        text.contains("etcdoperator.v0.9.4 0.9.4") && text.contains("outside spec.version"),
        "{text}"
    );
    assert!(text.contains(&format!("Input/{name}")), "{text}");
    // Plans: widening the Operator's version upgrades etcd; an Input
    // nothing satisfies changes nothing and says why; the Operator as it
    // is changes nothing.
    let server = format!("http://{}", running.api_address);
    let set = scope.name("resolveset");
    eventually("the set holds etcd 0.9.2", || async {
        let run = plugin(
            "admin",
            &[
                "plan", // A bare name: the Input of that name, the Operator's.
                &name, "--set", &set, "--server", &server,
            ],
        )
        .await;
        run.code == 0 && run.stdout.contains("The set would not change.")
    })
    .await;
    let scratch = scope.path("plan");
    std::fs::create_dir_all(&scratch).unwrap();
    let widened = scratch.join("operator.yaml");
    std::fs::write(
        &widened,
        format!(
            "apiVersion: operators.pakket.dev/v1alpha1\nkind: Operator\nmetadata:\n  name: {name}\nspec:\n  inputClass: {}\n  catalog: {{name: {catalog_name}, package: etcd, channel: singlenamespace-alpha}}\n  version: '>=0.9.2'\n",
            scope.name("subscription")
        ),
    )
    .unwrap();
    let upgrade = plugin(
        "admin",
        &[
            "plan",
            &format!("operator/{name}"),
            "-f",
            widened.to_str().unwrap(),
            "--set",
            &set,
            "--server",
            &server,
        ],
    )
    .await;
    assert_eq!(upgrade.code, 0, "{}", upgrade.stderr);
    assert!(
        upgrade
            .stdout
            .contains("UPGRADE   etcd 0.9.2 → 0.9.4 (etcdoperator.v0.9.4)")
            && upgrade.stdout.contains(&format!("Input {name}")),
        "{}",
        upgrade.stdout
    );
    let nowhere = scratch.join("input.yaml");
    std::fs::write(
        &nowhere,
        format!(
            "apiVersion: resolve.pakket.dev/v1alpha1\nkind: Input\nmetadata:\n  name: x\nspec:\n  inputClass: {}\n  constraints:\n  - type: olm.packageVersion\n    value: {{package: etcd, version: 9.9.9}}\n",
            scope.name("subscription")
        ),
    )
    .unwrap();
    let refused = plugin(
        "admin",
        &[
            "plan",
            "input/nowhere",
            "-f",
            nowhere.to_str().unwrap(),
            "--set",
            &set,
            "--server",
            &server,
            "-o",
            "json",
        ],
    )
    .await;
    assert_eq!(refused.code, 0, "{}", refused.stderr);
    let document: serde_json::Value = serde_json::from_str(&refused.stdout).unwrap();
    assert_eq!(document["answer"]["outcome"], "unsatisfiable", "{document}");
    assert!(
        document["changes"]
            .as_array()
            .unwrap()
            .iter()
            .all(|change| change["action"] == "keep"),
        "{document}"
    );
    let _ = std::fs::remove_dir_all(&scratch);

    let missing = plugin("admin", &["describe", "operator/no-such-operator"]).await;
    assert_ne!(missing.code, 0);
    assert!(
        missing.stderr.contains("no-such-operator"),
        "{}",
        missing.stderr
    );

    operators
        .delete(&name, &DeleteParams::default())
        .await
        .unwrap();
    let _ = Api::<Catalog>::all(scope.client.clone())
        .delete(&catalog_name, &DeleteParams::default())
        .await;
    let _ = Api::<InputClass>::all(scope.client.clone())
        .delete(&scope.name("subscription"), &DeleteParams::default())
        .await;
    let _ = Api::<pakket_api::Instance>::all(scope.client.clone())
        .delete(&scope.name("resolveset"), &DeleteParams::default())
        .await;
    scope.cleanup().await;
}
