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
mod support;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Pod};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use pakket_api::{ConditionType, Instance};
use pakket_helm_api::HelmChart;
use pakket_testkit::{condition_is, eventually, wait_for_instance};
use serde_json::{Value, json};
use support::{another_namespace, every_message, namespace_owner, plain_chart, web_chart, world};

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

#[tokio::test]
async fn a_private_repository_is_read_with_the_classs_pull_secret_only() {
    use k8s_openapi::api::core::v1::Secret;
    use pakket_testkit::charts::{CREDENTIALS_SECRET, PRIVATE_USER};
    let world = world("helm-chart-private").await;
    let scope = &world.scope;
    world.charts.publish_private(&plain_chart("hidden"));
    let chart_ref = world.charts.private_ref("hidden", "1.0.0");
    let instances: Api<Instance> = Api::all(scope.client.clone());
    let config = json!({ "namespace": scope.namespace });
    let create = |class: String, name: &'static str| {
        let instance = world.instance_of(
            &class,
            name,
            &format!("{name}-bundle"),
            &chart_ref,
            config.clone(),
        );
        let instances = instances.clone();
        async move {
            instances
                .create(&PostParams::default(), &instance)
                .await
                .unwrap();
        }
    };
    let unpacked_says = |name: &'static str, words: &'static str| {
        let (instances, name) = (instances.clone(), scope.name(name));
        async move {
            wait_for_instance(&instances, &name, words, move |i| {
                condition_is(i, ConditionType::Unpacked, "False")
                    && pakket_testkit::message_of(i, ConditionType::Unpacked).contains(words)
            })
            .await
        }
    };

    // A class without credentials: the repository refuses, and says so.
    create(world.class.clone(), "anonymous").await;
    unpacked_says("anonymous", "401").await;
    // The private class before its Secret exists: the admin is told what
    // to create, and where.
    create(world.private_class.clone(), "private").await;
    unpacked_says("private", CREDENTIALS_SECRET).await;

    // The admin gives the class its credentials, as `kubectl create secret
    // docker-registry` makes them, for the repository's host and port.
    let served = world.charts.server.url("");
    let registry = served
        .trim_start_matches("https://")
        .trim_end_matches('/')
        .to_owned();
    let secret: Secret = serde_json::from_value(json!({
        "metadata": { "name": CREDENTIALS_SECRET, "labels": scope.labels() },
        "type": "kubernetes.io/dockerconfigjson",
        "stringData": { ".dockerconfigjson": json!({"auths": {registry: {"username": PRIVATE_USER.0, "password": PRIVATE_USER.1}}}).to_string() },
    }))
    .unwrap();
    Api::<Secret>::namespaced(scope.client.clone(), &scope.namespace)
        .create(&PostParams::default(), &secret)
        .await
        .unwrap();
    let installed = wait_for_instance(
        &instances,
        &scope.name("private"),
        "the private chart installed",
        |i| condition_is(i, ConditionType::Installed, "True"),
    )
    .await;
    assert!(
        !serde_json::to_string(&installed)
            .unwrap()
            .contains(PRIVATE_USER.1),
        "the password is in no status"
    );
    let config_maps: Api<ConfigMap> = Api::namespaced(scope.client.clone(), &scope.namespace);
    assert!(
        config_maps
            .get_opt(&scope.name("private"))
            .await
            .unwrap()
            .is_some()
    );
    // The other class still reads it anonymously and is still refused:
    // where one class's credentials found the archive is not another's.
    let anonymous = instances.get(&scope.name("anonymous")).await.unwrap();
    assert!(
        !condition_is(&anonymous, ConditionType::Installed, "True"),
        "{}",
        every_message(&anonymous)
    );
    for name in ["anonymous", "private"] {
        instances
            .delete(&scope.name(name), &DeleteParams::default())
            .await
            .unwrap();
    }
    eventually("both Instances are gone", || async {
        instances
            .get_opt(&scope.name("private"))
            .await
            .unwrap()
            .is_none()
            && instances
                .get_opt(&scope.name("anonymous"))
                .await
                .unwrap()
                .is_none()
    })
    .await;
    world.scope.cleanup().await;
}

/// A chart whose CRD (in `crds/`, as cert-manager's and
/// kube-prometheus-stack's are) lists `sizes` as the enum of
/// `spec.size`.
fn gadget_chart(version: &str, group: &str, sizes: &str) -> Vec<(&'static str, String)> {
    vec![
        (
            "Chart.yaml",
            format!("apiVersion: v2\nname: gadget\nversion: {version}\n"),
        ),
        (
            "crds/gadgets.yaml",
            format!(
                "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: gadgets.{group}\nspec:\n  group: {group}\n  names: {{kind: Gadget, plural: gadgets, singular: gadget}}\n  scope: Namespaced\n  versions:\n  - name: v1\n    served: true\n    storage: true\n    schema:\n      openAPIV3Schema:\n        type: object\n        properties:\n          spec:\n            type: object\n            properties:\n              size: {{type: string, enum: [{sizes}]}}\n"
            ),
        ),
        (
            "templates/configmap.yaml",
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}\ndata:\n  version: {{ .Chart.Version | quote }}\n".into(),
        ),
    ]
}

#[tokio::test]
async fn a_charts_crd_upgrades_only_under_the_runtimes_crd_safety_rules() {
    let world = world("helm-chart-crd").await;
    let scope = &world.scope;
    let group = format!("{}.example.com", scope.id);
    world
        .charts
        .publish(&gadget_chart("1.0.0", &group, "small, large"));
    world
        .charts
        .publish(&gadget_chart("1.1.0", &group, "small, large, huge"));
    world
        .charts
        .publish(&gadget_chart("2.0.0", &group, "small"));
    let instances: Api<Instance> = Api::all(scope.client.clone());
    let name = scope.name("gadget");
    let config = json!({ "namespace": scope.namespace });
    instances
        .create(
            &PostParams::default(),
            &world.instance(
                "gadget",
                "gadget-1-0-0",
                &world.charts.chart_ref("gadget", "1.0.0"),
                config,
            ),
        )
        .await
        .unwrap();
    wait_for_instance(&instances, &name, "gadget 1.0.0 installed", |i| {
        condition_is(i, ConditionType::Installed, "True")
    })
    .await;
    let pivot = |version: &'static str| {
        let bundle = scope.name(&format!("gadget-{}", version.replace('.', "-")));
        let patch = json!({ "spec": { "bundle": {
            "name": bundle,
            "spec": { "class": world.class, "refs": [world.charts.chart_ref("gadget", version)] },
        } } });
        let (instances, name) = (instances.clone(), name.clone());
        async move {
            instances
                .patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
                .await
                .unwrap();
            bundle
        }
    };
    let crds: Api<CustomResourceDefinition> = Api::all(scope.client.clone());
    let sizes = || async {
        let crd =
            serde_json::to_value(crds.get(&format!("gadgets.{group}")).await.unwrap()).unwrap();
        crd.pointer("/spec/versions/0/schema/openAPIV3Schema/properties/spec/properties/size/enum")
            .cloned()
            .unwrap()
    };
    // A value added: safe, upgraded.
    let widened = pivot("1.1.0").await;
    wait_for_instance(&instances, &name, "gadget 1.1.0 installed", |i| {
        i.status.as_ref().and_then(|s| s.active_bundle.clone()) == Some(widened.clone())
            && condition_is(i, ConditionType::Installed, "True")
    })
    .await;
    assert_eq!(sizes().await, json!(["small", "large", "huge"]));
    // Values removed: refused, naming them, and nothing is applied.
    pivot("2.0.0").await;
    let refused = wait_for_instance(&instances, &name, "gadget 2.0.0 refused", |i| {
        every_message(i).contains("enum values removed")
    })
    .await;
    let said = every_message(&refused);
    assert!(
        said.contains("\"large\"") && said.contains("nothing was applied"),
        "{said}"
    );
    assert_eq!(
        sizes().await,
        json!(["small", "large", "huge"]),
        "the CRD stays as it was"
    );
    let config_maps: Api<ConfigMap> = Api::namespaced(scope.client.clone(), &scope.namespace);
    assert_eq!(
        config_maps.get(&name).await.unwrap().data.unwrap()["version"],
        "1.1.0",
        "the release stays at the version installed"
    );
    instances
        .delete(&name, &DeleteParams::default())
        .await
        .unwrap();
    eventually("the gadget's CRD is gone", || async {
        crds.get_opt(&format!("gadgets.{group}"))
            .await
            .unwrap()
            .is_none()
    })
    .await;
    world.scope.cleanup().await;
}

#[tokio::test]
async fn a_chart_ref_to_an_internal_address_reaches_nothing_under_the_shipped_class() {
    // A namespace owner who may create Instances of the class, as the
    // shipped class is (no internal addresses), names a chart repository
    // and a registry inside the cluster's network: the test's own
    // repository and the local registry, both on loopback, both real.
    let world = world("helm-chart-internal").await;
    let scope = &world.scope;
    world.charts.publish(&plain_chart("inside"));
    pakket_testkit::rbac::grant(
        scope,
        "alice",
        json!([
            { "apiGroups": ["core.pakket.dev"], "resources": ["instances"], "verbs": ["get", "list", "watch", "create", "delete"] },
            { "apiGroups": ["core.pakket.dev"], "resources": ["provisionerclasses"], "resourceNames": [world.public_class], "verbs": ["use"] },
        ]),
    )
    .await;
    pakket_testkit::rbac::bind_in(scope, &scope.namespace, "alice", "admin").await;
    let hers: Api<Instance> = Api::all(scope.cluster.client_as("alice").await);
    let instances: Api<Instance> = Api::all(scope.client.clone());
    let registry = registry::Registry::shared();
    let refs = [
        ("repository", world.charts.chart_ref("inside", "1.0.0")),
        (
            "registry",
            format!("oci://{}/charts/inside:1.0.0", registry.address),
        ),
    ];
    let before = world.charts.requests();
    for (name, chart_ref) in &refs {
        let instance = world.instance_of(
            &world.public_class,
            name,
            &format!("{name}-bundle"),
            chart_ref,
            json!({ "namespace": scope.namespace }),
        );
        eventually(&format!("alice creates {name}"), || async {
            hers.create(&PostParams::default(), &instance).await.is_ok()
        })
        .await;
    }
    for (name, _) in &refs {
        let refused = wait_for_instance(&instances, &scope.name(name), "refused", |i| {
            condition_is(i, ConditionType::Unpacked, "False")
        })
        .await;
        let said = pakket_testkit::message_of(&refused, ConditionType::Unpacked);
        assert!(
            said.contains("is a loopback address; nothing was sent to it")
                && said.contains("allowInternalAddresses: true"),
            "{name}: {said}"
        );
    }
    assert_eq!(
        world.charts.requests(),
        before,
        "the repository on loopback was never asked"
    );
    let config_maps: Api<ConfigMap> = Api::namespaced(scope.client.clone(), &scope.namespace);
    for (name, _) in &refs {
        assert!(
            config_maps
                .get_opt(&scope.name(name))
                .await
                .unwrap()
                .is_none()
        );
        instances
            .delete(&scope.name(name), &DeleteParams::default())
            .await
            .unwrap();
    }
    world.scope.cleanup().await;
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

/// A chart of one ClusterRole, and a ClusterRoleBinding made by a
/// pre-install hook (where charts put what must exist first).
fn cluster_wide_chart(name: &str) -> Vec<(&'static str, String)> {
    vec![
        ("Chart.yaml", format!("apiVersion: v2\nname: {name}\nversion: 1.0.0\n")),
        (
            "templates/clusterrole.yaml",
            "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata:\n  name: {{ .Release.Name }}\nrules:\n- apiGroups: [\"\"]\n  resources: [secrets]\n  verbs: [get]\n".into(),
        ),
        (
            "templates/hook.yaml",
            "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRoleBinding\nmetadata:\n  name: {{ .Release.Name }}-hook\n  annotations:\n    helm.sh/hook: pre-install\nroleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: cluster-admin}\nsubjects:\n- {kind: ServiceAccount, name: default, namespace: {{ .Release.Namespace }}}\n".into(),
        ),
    ]
}

/// A chart binding `cluster-admin` to its release's ServiceAccount in the
/// release's namespace (as charts with an `rbac.create` value do, with a
/// role too broad).
fn binding_chart(name: &str) -> Vec<(&'static str, String)> {
    vec![
        ("Chart.yaml", format!("apiVersion: v2\nname: {name}\nversion: 1.0.0\n")),
        (
            "templates/rbac.yaml",
            "apiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: {{ .Release.Name }}\n---\napiVersion: rbac.authorization.k8s.io/v1\nkind: RoleBinding\nmetadata:\n  name: {{ .Release.Name }}\nroleRef:\n  apiGroup: rbac.authorization.k8s.io\n  kind: ClusterRole\n  name: cluster-admin\nsubjects:\n- kind: ServiceAccount\n  name: {{ .Release.Name }}\n  namespace: {{ .Release.Namespace }}\n".into(),
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
    world.charts.publish(&binding_chart("binder"));
    // Alice: admin of her namespace and may write HelmCharts there (as
    // deploy/rbac/examples.yaml's pakket-helm-charts); no Instance rights.
    let charts_role = support::helm_charts_role(scope).await;
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
    let says = |name: &'static str, type_: &'static str, status: &'static str, words: &str| {
        support::helm_chart_says(&charts, name, type_, status, words.to_owned())
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
    let wide = says(
        "wide",
        "Installed",
        "False",
        "ClusterRole wide (cluster-scoped)",
    )
    .await;
    let said = serde_json::to_string(&wide.status).unwrap();
    assert!(
        said.contains("ClusterRoleBinding wide-hook (cluster-scoped)"),
        "a hook is confined as any object: {said}"
    );
    says(
        "reach",
        "Installed",
        "False",
        &format!("ConfigMap reach (in namespace {elsewhere})"),
    )
    .await;
    let cluster_roles: Api<ClusterRole> = Api::all(scope.client.clone());
    assert!(cluster_roles.get_opt("wide").await.unwrap().is_none());

    // Rights she lacks, granted inside her namespace (cluster-admin bound
    // to the chart's ServiceAccount): a person decides, nothing is written.
    write(
        "binder",
        world.charts.chart_ref("binder", "1.0.0"),
        json!({}),
    )
    .await;
    let waiting = says("binder", "Approved", "False", "kubectl instance approve").await;
    let said = serde_json::to_string(&waiting.status).unwrap();
    assert!(
        said.contains("alice") && said.contains("cluster-admin"),
        "{said}"
    );
    let bindings: Api<k8s_openapi::api::rbac::v1::RoleBinding> =
        Api::namespaced(scope.client.clone(), &scope.namespace);
    assert!(bindings.get_opt("binder").await.unwrap().is_none());
    let away: Api<ConfigMap> = Api::namespaced(scope.client.clone(), &elsewhere);
    assert!(away.get_opt("reach").await.unwrap().is_none());

    // Bob, who also owns the namespace, names her release: its objects are
    // her Instance's, so nothing of his is applied and hers stay.
    pakket_testkit::rbac::bind_in(scope, &scope.namespace, "bob", "admin").await;
    pakket_testkit::rbac::bind_in(scope, &scope.namespace, "bob", &charts_role).await;
    let his: Api<HelmChart> =
        Api::namespaced(scope.cluster.client_as("bob").await, &scope.namespace);
    let taking: HelmChart = serde_json::from_value(json!({
        "apiVersion": "helm.pakket.dev/v1alpha1",
        "kind": "HelmChart",
        "metadata": { "name": "taking", "labels": scope.labels() },
        "spec": {
            "chart": world.charts.chart_ref("notes", "1.0.0"),
            "releaseName": "notes",
            "values": { "message": "bob's" },
        },
    }))
    .unwrap();
    eventually("bob writes HelmChart taking", || async {
        his.create(&PostParams::default(), &taking).await.is_ok()
    })
    .await;
    says("taking", "Installed", "False", "not this Instance's").await;
    assert_eq!(
        config_maps.get("notes").await.unwrap().data.unwrap()["message"],
        "mine"
    );
    his.delete("taking", &DeleteParams::default())
        .await
        .unwrap();

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
    for name in ["wide", "reach", "binder"] {
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
