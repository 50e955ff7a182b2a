//! The in-use check on Instance deletion through the real apiserver: what
//! the Instance installed (its CRDs, by the Instance UID label) comes from
//! the webhook's watch cache, so a deletion costs no list of every CRD or
//! APIService, and an Instance whose CRD has custom resources is still
//! refused.

mod support;

use std::time::Duration;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::Client;
use kube::api::{Api, ApiResource, DeleteParams, DynamicObject, PostParams};
use pakket_api::Instance;
use pakket_api::ownership::INSTANCE_UID_LABEL;
use pakket_testkit::wait_for_crds_gone;
use serde_json::json;
use support::{Harness, eventually};

/// LISTs of CRDs and APIServices the apiserver has served so far, from its
/// own `/metrics` (every client's: other tests share the control plane).
async fn api_lists(client: &Client) -> u64 {
    let request = hyper::Request::get("/metrics").body(Vec::new()).unwrap();
    let text = client.request_text(request).await.unwrap();
    text.lines()
        .filter(|line| {
            line.starts_with("apiserver_request_total{")
                && line.contains(r#"verb="LIST""#)
                && (line.contains(r#"resource="customresourcedefinitions""#)
                    || line.contains(r#"resource="apiservices""#))
        })
        .filter_map(|line| line.rsplit(' ').next()?.parse::<f64>().ok())
        .sum::<f64>() as u64
}

/// A CRD of a group only this test uses, labelled as Instance `uid`'s.
fn crd(harness: &Harness, group: &str, uid: &str) -> CustomResourceDefinition {
    let mut labels = harness.scope.labels();
    labels.insert(INSTANCE_UID_LABEL.to_owned(), uid.to_owned());
    serde_json::from_value(json!({
        "metadata": {"name": format!("widgets.{group}"), "labels": labels},
        "spec": {
            "group": group,
            "scope": "Namespaced",
            "names": {"kind": "Widget", "listKind": "WidgetList", "plural": "widgets", "singular": "widget"},
            "versions": [{"name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}],
        },
    }))
    .unwrap()
}

#[tokio::test]
async fn deleting_an_instance_reads_its_apis_from_the_watch_cache_and_still_refuses_one_in_use() {
    let harness = Harness::start("in-use-cache").await;
    let admin = harness.scope.client.clone();
    let class = harness.class("class");
    Api::<pakket_api::ProvisionerClass>::all(admin.clone())
        .create(&PostParams::default(), &class)
        .await
        .unwrap();
    let instances: Api<Instance> = Api::all(admin.clone());
    let instance = instances
        .create(
            &PostParams::default(),
            &harness.instance("api", &harness.scope.name("class")),
        )
        .await
        .unwrap();
    let name = harness.scope.name("api");
    let uid = instance.metadata.uid.clone().unwrap();
    let group = format!("{}.test.pakket.dev", harness.scope.id);
    let crds: Api<CustomResourceDefinition> = Api::all(admin.clone());
    crds.create(&PostParams::default(), &crd(&harness, &group, &uid))
        .await
        .unwrap();
    let cache = harness.webhooks.api_cache().unwrap().clone();
    tokio::time::timeout(Duration::from_secs(60), cache.wait_ready())
        .await
        .expect("the CRD and APIService cache syncs");
    let metrics = harness.webhooks.metrics().unwrap().clone();
    let listed = metrics.provided_lookups("list");

    // A Widget: the Instance is in use, which the webhook can only know
    // from the cache holding its CRD (nothing else names it).
    let widgets: Api<DynamicObject> = Api::namespaced_with(
        admin.clone(),
        &harness.scope.namespace,
        &ApiResource {
            group: group.clone(),
            version: "v1".into(),
            api_version: format!("{group}/v1"),
            kind: "Widget".into(),
            plural: "widgets".into(),
        },
    );
    let widget: DynamicObject = serde_json::from_value(json!({
        "apiVersion": format!("{group}/v1"), "kind": "Widget",
        "metadata": {"name": "first"},
    }))
    .unwrap();
    eventually("a Widget (the CRD being established)", || async {
        widgets
            .create(&PostParams::default(), &widget)
            .await
            .map(drop)
            .map_err(|error| error.to_string())
    })
    .await;
    // Dry runs: the same check, and nothing deleted while waiting for the
    // Widget's API to be served.
    let dry_run = DeleteParams {
        dry_run: true,
        ..DeleteParams::default()
    };
    eventually("the deletion refused as in use", || async {
        match instances.delete(&name, &dry_run).await {
            Ok(_) => Err("allowed while a Widget exists".to_owned()),
            Err(error) => Ok(error.to_string()),
        }
    })
    .await;
    let message = instances
        .delete(&name, &DeleteParams::default())
        .await
        .expect_err("an Instance in use is not deleted")
        .to_string();
    assert!(
        message.contains(&format!(
            "Instance {name} is in use: 1 Widget objects in namespace {}",
            harness.scope.namespace
        )),
        "{message}"
    );

    // No Widget left: the deletion goes through. Dry runs first, until one
    // runs while no other client on the shared apiserver lists CRDs or
    // APIServices: had the webhook listed them, no such run could exist.
    widgets
        .delete("first", &DeleteParams::default())
        .await
        .unwrap();
    let mut deltas = Vec::new();
    for _ in 0..20 {
        let before = api_lists(&admin).await;
        let allowed = instances.delete(&name, &dry_run).await.is_ok();
        let delta = api_lists(&admin).await - before;
        deltas.push((allowed, delta));
        if allowed && delta == 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert_eq!(
        deltas.last().copied(),
        Some((true, 0)),
        "(allowed, CRD and APIService LISTs served meanwhile) per dry run: {deltas:?}"
    );
    instances
        .delete(&name, &DeleteParams::default())
        .await
        .unwrap();
    assert_eq!(
        metrics.provided_lookups("list"),
        listed,
        "every look-up once synced came from the cache"
    );
    assert!(metrics.provided_lookups("cache") >= 2 + deltas.len() as u64);

    crds.delete(&format!("widgets.{group}"), &DeleteParams::default())
        .await
        .unwrap();
    wait_for_crds_gone(&admin, &[format!("widgets.{group}")]).await;
    harness.cleanup().await;
}
