//! A HelmChart's `valuesFrom` on the real control plane, as `deploy/`
//! runs pakket-helm (its ServiceAccount's token and rights, the real
//! webhooks recording who wrote each HelmChart): values come from a
//! ConfigMap and a Secret in her namespace only when the HelmChart's
//! author may read them, and a Secret's values never reach the Instance.
//!
//! Data: the chart is written here (not a public chart), in the shape
//! charts with a database password have (bitnami's and podinfo's take one
//! as a value and render it into a Secret).

mod support;

use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::api::{Api, DeleteParams, PostParams};
use pakket_api::Instance;
use pakket_helm_api::HelmChart;
use pakket_testkit::eventually;
use serde_json::{Value, json};
use support::world;

/// A chart rendering its greeting into a ConfigMap and its database user
/// and password into a Secret.
fn app_chart() -> Vec<(&'static str, String)> {
    vec![
        ("Chart.yaml", "apiVersion: v2\nname: app\nversion: 1.0.0\n".into()),
        (
            "values.yaml",
            "greeting: hello\ndb:\n  user: root\n  password: \"\"\n".into(),
        ),
        (
            "templates/config.yaml",
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}\ndata:\n  greeting: {{ .Values.greeting | quote }}\n  user: {{ .Values.db.user | quote }}\n".into(),
        ),
        (
            "templates/secret.yaml",
            "apiVersion: v1\nkind: Secret\nmetadata:\n  name: {{ .Release.Name }}-db\nstringData:\n  password: {{ .Values.db.password | quote }}\n".into(),
        ),
    ]
}

const PASSWORD: &str = "correct-horse-battery-staple";

#[tokio::test]
async fn values_come_from_what_the_author_may_read_and_a_secrets_never_reach_the_instance() {
    let world = world("helm-values-from").await;
    let scope = &world.scope;
    world.charts.publish(&app_chart());
    let chart_ref = world.charts.chart_ref("app", "1.0.0");
    let namespace = scope.namespace.clone();
    // An admin keeps the team's defaults in a ConfigMap and the database
    // password in a Secret.
    let config_maps: Api<ConfigMap> = Api::namespaced(scope.client.clone(), &namespace);
    let secrets: Api<Secret> = Api::namespaced(scope.client.clone(), &namespace);
    let defaults: ConfigMap = serde_json::from_value(json!({
        "metadata": { "name": "app-defaults", "labels": scope.labels() },
        "data": { "values.yaml": "greeting: from-the-configmap\ndb:\n  user: app\n" },
    }))
    .unwrap();
    config_maps
        .create(&PostParams::default(), &defaults)
        .await
        .unwrap();
    let password: Secret = serde_json::from_value(json!({
        "metadata": { "name": "team-db", "labels": scope.labels() },
        "stringData": { "db.yaml": format!("db:\n  password: {PASSWORD}\n") },
    }))
    .unwrap();
    secrets
        .create(&PostParams::default(), &password)
        .await
        .unwrap();

    // Alice owns the namespace (admin: she reads its Secrets); Mallory may
    // view it and write HelmCharts, but not read its Secrets.
    let charts_role = support::helm_charts_role(scope).await;
    for (user, role) in [
        ("alice", "admin"),
        ("alice", charts_role.as_str()),
        ("mallory", "view"),
        ("mallory", charts_role.as_str()),
    ] {
        pakket_testkit::rbac::bind_in(scope, &namespace, user, role).await;
    }
    let write = |user: &'static str, name: &'static str| {
        let chart: HelmChart = serde_json::from_value(json!({
            "apiVersion": "helm.pakket.dev/v1alpha1",
            "kind": "HelmChart",
            "metadata": { "name": name, "labels": scope.labels() },
            "spec": {
                "chart": chart_ref,
                "values": { "greeting": "hi" },
                "valuesFrom": [
                    { "kind": "ConfigMap", "name": "app-defaults" },
                    { "kind": "Secret", "name": "team-db", "valuesKey": "db.yaml" },
                    { "kind": "ConfigMap", "name": "absent", "optional": true },
                ],
            },
        }))
        .unwrap();
        async move {
            let as_user: Api<HelmChart> =
                Api::namespaced(scope.cluster.client_as(user).await, &scope.namespace);
            eventually(&format!("{user} writes HelmChart {name}"), || async {
                as_user.create(&PostParams::default(), &chart).await.is_ok()
            })
            .await;
        }
    };
    let charts: Api<HelmChart> = Api::namespaced(scope.client.clone(), &namespace);
    let instances: Api<Instance> = Api::all(scope.client.clone());

    // Mallory names the Secret she cannot read: nothing is read or
    // written for her, and the refusal says why.
    write("mallory", "stolen").await;
    let refused = support::helm_chart_says(
        &charts,
        "stolen",
        "Accepted",
        "False",
        "mallory may not get secrets".into(),
    )
    .await;
    let said = serde_json::to_string(&refused.status).unwrap();
    assert!(said.contains("spec.valuesFrom[1]"), "{said}");
    assert!(!said.contains(PASSWORD), "{said}");
    let none_for_her = instances
        .list(&Default::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .filter(|i| {
            i.metadata
                .annotations
                .as_ref()
                .and_then(|a| a.get("helm.pakket.dev/name"))
                == Some(&"stolen".to_owned())
        })
        .count();
    assert_eq!(
        none_for_her, 0,
        "no Instance is written for mallory's HelmChart"
    );
    assert!(secrets.get_opt("stolen-db").await.unwrap().is_none());

    // Alice's: the ConfigMap's values, then the Secret's, then hers over
    // them; the optional absent ConfigMap adds nothing.
    write("alice", "app").await;
    let installed =
        support::helm_chart_says(&charts, "app", "Installed", "True", String::new()).await;
    let rendered = config_maps.get("app").await.unwrap().data.unwrap();
    assert_eq!(rendered["greeting"], "hi", "spec.values wins");
    assert_eq!(
        rendered["user"], "app",
        "the ConfigMap's value over the chart's"
    );
    let rendered_password = secrets.get("app-db").await.unwrap().data.unwrap()["password"]
        .0
        .clone();
    assert_eq!(String::from_utf8(rendered_password).unwrap(), PASSWORD);

    // The Instance names the Secret and the version read, never its text;
    // the ConfigMap's values are in it, where the approval sees them.
    let instance = instances
        .get(&installed.status.unwrap().instance.unwrap())
        .await
        .unwrap();
    let config = serde_json::to_value(&instance.spec.config).unwrap();
    let written = config.to_string();
    assert!(!written.contains(PASSWORD), "{written}");
    let from: &Vec<Value> = config["valuesFrom"].as_array().unwrap();
    assert_eq!(from.len(), 2, "{from:?}");
    assert_eq!(from[0]["values"]["greeting"], "from-the-configmap");
    assert_eq!(from[1]["secret"], "team-db");
    assert_eq!(
        from[1]["resourceVersion"],
        secrets
            .get("team-db")
            .await
            .unwrap()
            .metadata
            .resource_version
            .unwrap()
    );

    for name in ["app", "stolen"] {
        charts.delete(name, &DeleteParams::default()).await.unwrap();
    }
    eventually("the HelmCharts are gone", || async {
        charts
            .list(&Default::default())
            .await
            .unwrap()
            .items
            .is_empty()
    })
    .await;
    world.scope.cleanup().await;
}
