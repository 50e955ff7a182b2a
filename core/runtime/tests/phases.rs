//! Phases, on the real control plane with its kwok node: a set holding a
//! ConfigMap, a Deployment and an Ingress for it is written up to its
//! workloads, and the Ingress waits until the Deployment rolls out. While
//! it waits, `Installed` names the phase reached and the probe that holds
//! the next, `Progressing` says the revision rolls out, `Healthy` is not
//! True, and status lists what was written (an uninstall would find it).
//! Once a node can take the Deployment's pod, the Ingress is written and
//! the revision rolls out. A pivot held that way keeps the revision
//! before it whole, and deleting the Instance then leaves nothing; a
//! class's progression probe (CEL) holds the same way, and so does one the
//! content's author ships in `.progression-probes.yaml`. Content that
//! declares its own phases (`.phases.yaml`) is written in that order: a
//! ConfigMap waits until a claim is Bound, and a phase's own probe holds
//! the rest, named in `status.progression`.

use std::collections::BTreeMap;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Node, PersistentVolume, Secret};
use k8s_openapi::api::networking::v1::Ingress;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use pakket_api::ConditionType;
use pakket_testkit::{condition_is, eventually, reason_is, wait_for_instance as wait_for};
use serde_json::json;

mod plain_fixture;

use plain_fixture::Fixture;

/// Deployment `web` in `namespace` (labelled `labels`, a YAML flow map),
/// its pod only for nodes matching `node_selector` (a YAML flow map).
fn web_deployment(namespace: &str, labels: &str, node_selector: &str) -> String {
    format!(
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\n  namespace: {namespace}\n  labels: {labels}\n\
         spec:\n  replicas: 1\n  selector:\n    matchLabels: {{app: web}}\n  template:\n    metadata:\n      labels: {{app: web}}\n    spec:\n      nodeSelector: {node_selector}\n      containers:\n      - name: web\n        image: registry.invalid/web:1\n"
    )
}

/// Ingress `web` in `namespace`, for Service `web`.
fn web_ingress(namespace: &str) -> String {
    format!(
        "apiVersion: networking.k8s.io/v1\nkind: Ingress\nmetadata:\n  name: web\n  namespace: {namespace}\n\
         spec:\n  defaultBackend:\n    service:\n      name: web\n      port: {{number: 80}}\n"
    )
}

/// ConfigMap `name` in `namespace` with `value`.
fn config_map(namespace: &str, name: &str, value: &str) -> String {
    format!(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\n  namespace: {namespace}\ndata:\n  value: {value}\n"
    )
}

#[tokio::test]
async fn an_ingress_waits_for_its_deployment_to_roll_out() {
    let fixture = Fixture::new("phases", "AllowAll").await;
    let namespace = fixture.scope.namespace.clone();
    // Only a node labelled for this test takes the pod: none, at first.
    let label = format!("pakket.dev/phases-{}", fixture.scope.id);
    let deployment = web_deployment(&namespace, "{}", &format!("{{{label}: \"true\"}}"));
    let ingress = web_ingress(&namespace);
    let config = config_map(&namespace, "web-config", "hello");
    // The Ingress first in the bundle: the phases, not the file order, decide.
    fixture
        .files(
            "web",
            &[
                ("a-ingress.yaml", ingress),
                ("b-deployment.yaml", deployment),
                ("c-config.yaml", config),
            ],
        )
        .await;
    let (instances, name) = fixture
        .create_instance("v1", fixture.bundle_spec("web", "file://content"))
        .await;

    let held = wait_for(&instances, &name, "held before publishing", |i| {
        reason_is(i, ConditionType::Installed, "Installing")
            && i.condition(ConditionType::Installed)
                .is_some_and(|c| c.message.contains("waiting for phase publishing"))
    })
    .await;
    let message = &held.condition(ConditionType::Installed).unwrap().message;
    assert!(
        message.contains("applied 2 of 3 objects")
            && message.contains("through phase workloads")
            && message.contains("Deployment")
            && message.contains("web"),
        "names the phase reached and what holds the next: {message}"
    );
    let progression = held.status.as_ref().unwrap().progression.clone();
    let progression = progression.expect("status.progression while held");
    assert_eq!(
        (progression.reached.as_str(), progression.next.as_str()),
        ("workloads", "publishing")
    );
    assert!(
        progression.held_by.len() == 1 && progression.held_by[0].starts_with("Deployment/"),
        "the probe that holds it, in status: {:?}",
        progression.held_by
    );
    assert!(condition_is(&held, ConditionType::Installed, "False"));
    assert!(
        reason_is(&held, ConditionType::Progressing, "RollingOut"),
        "{:?}",
        held.condition(ConditionType::Progressing)
    );
    assert!(
        !condition_is(&held, ConditionType::Healthy, "True"),
        "never healthy while held"
    );
    let listed: Vec<String> = held
        .status
        .as_ref()
        .unwrap()
        .objects
        .iter()
        .map(|object| object.kind.clone())
        .collect();
    assert!(
        listed.contains(&"Deployment".to_owned()) && listed.contains(&"ConfigMap".to_owned()),
        "what was written is listed: {listed:?}"
    );
    let ingresses: Api<Ingress> = Api::namespaced(fixture.scope.client.clone(), &namespace);
    let deployments: Api<Deployment> = Api::namespaced(fixture.scope.client.clone(), &namespace);
    assert!(deployments.get_opt("web").await.unwrap().is_some());
    assert!(
        fixture
            .config_maps()
            .get_opt("web-config")
            .await
            .unwrap()
            .is_some()
    );
    // Still held a while later: the gate is not a delay.
    tokio::time::sleep(std::time::Duration::from_secs(6)).await;
    assert!(
        ingresses.get_opt("web").await.unwrap().is_none(),
        "the Ingress waits for its Deployment"
    );

    // A node takes the pod: the Deployment rolls out, the Ingress follows.
    let nodes: Api<Node> = Api::all(fixture.scope.client.clone());
    let node = nodes.list(&Default::default()).await.unwrap().items[0]
        .metadata
        .name
        .clone()
        .expect("a node");
    let labelled = |value: Option<&str>| json!({ "metadata": { "labels": BTreeMap::from([(label.clone(), value)]) } });
    nodes
        .patch(
            &node,
            &PatchParams::default(),
            &Patch::Merge(labelled(Some("true"))),
        )
        .await
        .unwrap();
    let installed = wait_for(&instances, &name, "installed and rolled out", |i| {
        condition_is(i, ConditionType::Installed, "True")
            && reason_is(i, ConditionType::Progressing, "Succeeded")
    })
    .await;
    assert!(condition_is(&installed, ConditionType::Healthy, "True"));
    assert_eq!(
        installed.status.as_ref().unwrap().progression,
        None,
        "held at no phase once the whole set is written"
    );
    assert!(ingresses.get_opt("web").await.unwrap().is_some());

    instances
        .delete(&name, &DeleteParams::default())
        .await
        .unwrap();
    eventually("the Instance and its objects are gone", || async {
        instances.get_opt(&name).await.unwrap().is_none()
            && ingresses.get_opt("web").await.unwrap().is_none()
    })
    .await;
    nodes
        .patch(
            &node,
            &PatchParams::default(),
            &Patch::Merge(labelled(None)),
        )
        .await
        .unwrap();
    fixture.scope.cleanup().await;
}

#[tokio::test]
async fn a_class_probe_holds_what_comes_after_until_its_cel_is_true() {
    // The admin's probe: a Deployment of this class goes on only once a
    // smoke test (here, the test itself) has marked it passed.
    let fixture = Fixture::without_class("phases-probe").await;
    fixture
        .create_class_with(json!({
            "approval": "AllowAll",
            "progressionProbes": [{
                "selector": {"group": "apps", "kind": "Deployment", "labels": {"tier": "web"}},
                "assertions": [{
                    "cel": "has(self.metadata.annotations) && 'example.com/smoke' in self.metadata.annotations && self.metadata.annotations['example.com/smoke'] == 'passed'",
                    "message": "the smoke test has not passed",
                }],
            }],
        }))
        .await;
    let namespace = fixture.scope.namespace.clone();
    let deployment = web_deployment(&namespace, "{tier: web}", "{}");
    let ingress = web_ingress(&namespace);
    fixture
        .files(
            "web",
            &[("deployment.yaml", deployment), ("ingress.yaml", ingress)],
        )
        .await;
    let (instances, name) = fixture
        .create_instance("v1", fixture.bundle_spec("web", "file://content"))
        .await;
    let held = wait_for(&instances, &name, "held by the class's probe", |i| {
        i.condition(ConditionType::Installed)
            .is_some_and(|c| c.message.contains("the smoke test has not passed"))
    })
    .await;
    let message = &held.condition(ConditionType::Installed).unwrap().message;
    assert!(
        message.contains("progressionProbes[0]") && message.contains("Deployment"),
        "names the probe and the object: {message}"
    );
    let ingresses: Api<Ingress> = Api::namespaced(fixture.scope.client.clone(), &namespace);
    assert!(ingresses.get_opt("web").await.unwrap().is_none());

    // The smoke test passes: what came after is written, the revision rolls out.
    let deployments: Api<Deployment> = Api::namespaced(fixture.scope.client.clone(), &namespace);
    deployments
        .patch(
            "web",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"annotations": {"example.com/smoke": "passed"}}})),
        )
        .await
        .unwrap();
    wait_for(&instances, &name, "installed and rolled out", |i| {
        condition_is(i, ConditionType::Installed, "True")
            && reason_is(i, ConditionType::Progressing, "Succeeded")
    })
    .await;
    assert!(ingresses.get_opt("web").await.unwrap().is_some());
    instances
        .delete(&name, &DeleteParams::default())
        .await
        .unwrap();
    eventually("the Instance is gone", || async {
        instances.get_opt(&name).await.unwrap().is_none()
    })
    .await;

    // A probe that is not CEL is refused, naming the field; nothing applied.
    let classes: Api<pakket_api::ProvisionerClass> = Api::all(fixture.scope.client.clone());
    classes
        .patch(
            &fixture.scope.name("class"),
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"parameters": {"progressionProbes": [{
                "selector": {"group": "apps", "kind": "Deployment"},
                "assertions": [{"cel": "self.status.readyReplicas =="}],
            }]}}})),
        )
        .await
        .unwrap();
    let mut again = fixture.instance("v1", fixture.bundle_spec("web", "file://content"));
    again.metadata.name = Some(fixture.scope.name("again"));
    instances
        .create(&PostParams::default(), &again)
        .await
        .unwrap();
    let refused = wait_for(&instances, &fixture.scope.name("again"), "refused", |i| {
        reason_is(i, ConditionType::Installed, "InstallFailed")
    })
    .await;
    let message = &refused.condition(ConditionType::Installed).unwrap().message;
    assert!(
        message.contains("progressionProbes[0].assertions[0].cel")
            && message.contains("is not valid CEL"),
        "{message}"
    );
    fixture.scope.cleanup().await;
}

#[tokio::test]
async fn a_probe_the_content_ships_holds_what_comes_after_until_its_cel_is_true() {
    let fixture = Fixture::new("content-probe", "AllowAll").await;
    let namespace = fixture.scope.namespace.clone();
    let probes = "- selector: {group: apps, kind: Deployment}\n  assertions:\n  - cel: has(self.metadata.annotations) && 'example.com/warm' in self.metadata.annotations\n    message: the cache is not warm yet\n";
    fixture
        .files(
            "web",
            &[
                ("deployment.yaml", web_deployment(&namespace, "{}", "{}")),
                ("ingress.yaml", web_ingress(&namespace)),
                (".progression-probes.yaml", probes.to_owned()),
            ],
        )
        .await;
    let (instances, name) = fixture
        .create_instance("v1", fixture.bundle_spec("web", "file://content"))
        .await;
    let held = wait_for(&instances, &name, "held by the content's probe", |i| {
        i.condition(ConditionType::Installed)
            .is_some_and(|c| c.message.contains("the cache is not warm yet"))
    })
    .await;
    let message = &held.condition(ConditionType::Installed).unwrap().message;
    assert!(
        message.contains(".progression-probes.yaml[0]") && message.contains("Deployment"),
        "names the content's probe and the object: {message}"
    );
    let ingresses: Api<Ingress> = Api::namespaced(fixture.scope.client.clone(), &namespace);
    assert!(ingresses.get_opt("web").await.unwrap().is_none());
    let deployments: Api<Deployment> = Api::namespaced(fixture.scope.client.clone(), &namespace);
    deployments
        .patch(
            "web",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"annotations": {"example.com/warm": "yes"}}})),
        )
        .await
        .unwrap();
    wait_for(&instances, &name, "installed and rolled out", |i| {
        condition_is(i, ConditionType::Installed, "True")
            && reason_is(i, ConditionType::Progressing, "Succeeded")
    })
    .await;
    assert!(ingresses.get_opt("web").await.unwrap().is_some());

    // Probes the content cannot hold are the content's fault: RenderFailed,
    // naming the file and the field; nothing applied.
    fixture
        .files(
            "broken",
            &[
                ("configmap.yaml", format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: never-applied\n  namespace: {namespace}\n")),
                (".progression-probes.yaml", "- selector: {group: apps}\n  assertions: [{cel: 'true'}]\n".to_owned()),
            ],
        )
        .await;
    let mut broken = fixture.instance("broken", fixture.bundle_spec("broken", "file://content"));
    broken.metadata.name = Some(fixture.scope.name("broken"));
    instances
        .create(&PostParams::default(), &broken)
        .await
        .unwrap();
    let refused = wait_for(&instances, &fixture.scope.name("broken"), "refused", |i| {
        reason_is(i, ConditionType::Installed, "RenderFailed")
    })
    .await;
    let message = &refused.condition(ConditionType::Installed).unwrap().message;
    assert!(
        message.contains(".progression-probes.yaml[0].selector.kind: is required"),
        "{message}"
    );
    let config_maps: Api<k8s_openapi::api::core::v1::ConfigMap> =
        Api::namespaced(fixture.scope.client.clone(), &namespace);
    assert!(
        config_maps
            .get_opt("never-applied")
            .await
            .unwrap()
            .is_none()
    );
    fixture.scope.cleanup().await;
}

#[tokio::test]
async fn a_pivot_held_at_a_phase_keeps_the_revision_before_and_an_uninstall_then_leaves_nothing() {
    let fixture = Fixture::new("phases-pivot", "AllowAll").await;
    let namespace = fixture.scope.namespace.clone();
    // v1: one ConfigMap. v2: another, a Deployment no node takes, and an
    // Ingress for it; v1's ConfigMap is not in v2.
    fixture.content("v1", &[("old", "v1")]).await;
    let deployment = web_deployment(&namespace, "{}", "{pakket.dev/no-such-node: \"true\"}");
    let ingress = web_ingress(&namespace);
    let config = config_map(&namespace, "new", "v2");
    fixture
        .files(
            "v2",
            &[
                ("config.yaml", config),
                ("deployment.yaml", deployment),
                ("ingress.yaml", ingress),
            ],
        )
        .await;
    let (instances, name) = fixture.install("v1", "v1").await;
    fixture.pivot("v2", "v2").await;
    wait_for(&instances, &name, "the pivot held before publishing", |i| {
        reason_is(i, ConditionType::Installed, "Installing")
            && i.condition(ConditionType::Installed)
                .is_some_and(|c| c.message.contains("waiting for phase publishing"))
    })
    .await;
    // The revision before is not pruned while the new one is held.
    assert_eq!(fixture.value_of("old").await.as_deref(), Some("v1"));
    assert_eq!(fixture.value_of("new").await.as_deref(), Some("v2"));

    // Deleted while held: v1's object and what v2 wrote so far all go.
    instances
        .delete(&name, &DeleteParams::default())
        .await
        .unwrap();
    let deployments: Api<Deployment> = Api::namespaced(fixture.scope.client.clone(), &namespace);
    eventually(
        "the Instance and every object it wrote are gone",
        || async {
            instances.get_opt(&name).await.unwrap().is_none()
                && fixture.value_of("old").await.is_none()
                && fixture.value_of("new").await.is_none()
                && deployments.get_opt("web").await.unwrap().is_none()
        },
    )
    .await;
    fixture.scope.cleanup().await;
}

/// Phases content declares: the claim, then the ConfigMap (whose probe
/// waits for a person's check), then the rest (a Secret).
const DECLARED_PHASES: &str = "\
- name: storage
  objects: [{kind: PersistentVolumeClaim, name: data}]
- name: config
  objects: [{kind: ConfigMap}]
  probes:
  - selector: {kind: ConfigMap}
    assertions:
    - cel: has(self.metadata.annotations) && 'example.com/checked' in self.metadata.annotations
      message: the settings are not checked yet
";

/// The Instance's `status.progression` once its apply is held with stage
/// `reached` written.
async fn held_at(
    instances: &Api<pakket_api::Instance>,
    name: &str,
    reached: &str,
) -> pakket_api::PhaseProgression {
    let held = wait_for(instances, name, &format!("held after {reached}"), |i| {
        i.status
            .as_ref()
            .and_then(|s| s.progression.as_ref())
            .is_some_and(|p| p.reached == reached)
    })
    .await;
    held.status.and_then(|s| s.progression).unwrap()
}

#[tokio::test]
async fn phases_the_content_declares_hold_a_config_map_until_its_claim_is_bound_and_its_probe_passes()
 {
    let fixture = Fixture::new("declared-phases", "AllowAll").await;
    let namespace = fixture.scope.namespace.clone();
    let claim = format!(
        "apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata:\n  name: data\n  namespace: {namespace}\n\
         spec:\n  storageClassName: \"\"\n  accessModes: [ReadWriteOnce]\n  resources: {{requests: {{storage: 1Mi}}}}\n"
    );
    let settings = format!(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\n  namespace: {namespace}\ndata:\n  mode: fast\n"
    );
    let secret = format!(
        "apiVersion: v1\nkind: Secret\nmetadata:\n  name: after\n  namespace: {namespace}\nstringData:\n  token: x\n"
    );
    fixture
        .files(
            "app",
            &[
                ("claim.yaml", claim),
                ("settings.yaml", settings),
                ("secret.yaml", secret),
                (".phases.yaml", DECLARED_PHASES.to_owned()),
            ],
        )
        .await;
    let (instances, name) = fixture
        .create_instance("v1", fixture.bundle_spec("app", "file://content"))
        .await;
    // By kind the ConfigMap would come first; declared, it waits for the claim.
    let progression = held_at(&instances, &name, "storage/storage").await;
    assert_eq!(progression.next, "config/configuration");
    assert!(
        progression.held_by.len() == 1
            && progression.held_by[0].starts_with("PersistentVolumeClaim/")
            && progression.held_by[0].contains("Bound"),
        "{:?}",
        progression.held_by
    );
    let config_maps: Api<ConfigMap> = fixture.config_maps();
    assert!(config_maps.get_opt("settings").await.unwrap().is_none());

    // A volume for the claim: it binds, and the next phase is written, up
    // to the probe the content declared for it.
    let volume: PersistentVolume = serde_json::from_value(json!({
        "metadata": {"name": fixture.scope.name("data"), "labels": fixture.scope.labels()},
        "spec": {
            "capacity": {"storage": "1Mi"}, "accessModes": ["ReadWriteOnce"],
            "storageClassName": "", "hostPath": {"path": "/tmp/pakket-test-volume"},
            "claimRef": {"namespace": namespace, "name": "data"},
        },
    }))
    .unwrap();
    let volumes: Api<PersistentVolume> = Api::all(fixture.scope.client.clone());
    volumes
        .create(&PostParams::default(), &volume)
        .await
        .unwrap();
    let progression = held_at(&instances, &name, "config/configuration").await;
    assert_eq!(progression.next, "the rest/configuration");
    assert!(
        progression
            .held_by
            .iter()
            .any(|why| why.contains("the settings are not checked yet")
                && why.contains(".phases.yaml[1].probes[0]")),
        "{:?}",
        progression.held_by
    );
    assert!(config_maps.get_opt("settings").await.unwrap().is_some());
    let secrets: Api<Secret> = Api::namespaced(fixture.scope.client.clone(), &namespace);
    assert!(
        secrets.get_opt("after").await.unwrap().is_none(),
        "the rest waits"
    );

    config_maps
        .patch(
            "settings",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"annotations": {"example.com/checked": "yes"}}})),
        )
        .await
        .unwrap();
    wait_for(&instances, &name, "installed whole", |i| {
        condition_is(i, ConditionType::Installed, "True")
            && i.status.as_ref().is_some_and(|s| s.progression.is_none())
    })
    .await;
    assert!(secrets.get_opt("after").await.unwrap().is_some());
    volumes
        .delete(&fixture.scope.name("data"), &DeleteParams::default())
        .await
        .unwrap();
    fixture.scope.cleanup().await;
}
