//! From an Input to a running operator, on the real control plane with a
//! kwok node and the real local registry: the Input controller resolves
//! the Input against a Catalog of the real etcd documents, writes the set
//! and the resolveset Instance; the resolveset provisioner (approval
//! `Android`) turns the set into a child Instance of the registry-v1 class;
//! the registry-v1 provisioner installs the etcd operator, pulling the
//! catalog's `quay.io/openshift-community-operators/etcd:v0.9.x` images
//! through the class's `mirrors` from the local registry (as a
//! disconnected cluster would). Widening the Input's range upgrades it by
//! pivot (Android approves that by itself: no new package); pinning it
//! back to the older version is refused (the resolver never downgrades)
//! and leaves it running; deleting the Input removes the child and
//! everything it installed.
//!
//! Data (unedited, see ../shared/data/README.md):
//! - `bundles/etcd/0.9.2` and `bundles/etcd/0.9.4`: the etcd operator
//!   bundles, verbatim from community-operators-prod (699495f2), pushed as
//!   images under the mirror's names;
//! - `fbc/community-operators-prod-derived/catalog.json` (DERIVED from the
//!   same repository and commit): the documents of package etcd, selected
//!   by their `package`/`name` fields, served as the Catalog.
//!
//! One bundle is written by the tests, not real: `etcd-backup`, which
//! needs package etcd, so that a set brings in a dependency of real
//! content (see `etcd_backup_bundle`).

mod support;

use std::collections::BTreeMap;
use std::time::Duration;

use k8s_openapi::api::core::v1::ConfigMap;
use kube::ResourceExt as _;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use pakket_api::{ConditionType, Instance, ProvisionerClass};
use pakket_operators_api::request::operator_name;
use pakket_operators_api::{Operator, OperatorRequest};
use pakket_registry_v1::RegistryV1;
use pakket_resolveset::inputs::input::{InputClassParameters, InputConstraint};
use pakket_resolveset::set::provisioner::ResolveSet;
use pakket_resolveset::{Input, InputClass, InputClassSpec, InputSpec};
use pakket_runtime::kernel::controller::{self, RunOptions};
use pakket_testkit::{
    Scope, bundle_crd_names, condition_is, data, eventually, wait_for_crds_gone, wait_for_instance,
};
use serde_json::{Value, json};

/// etcd's CRDs are cluster-wide: two tests installing etcd at once would
/// each find them another Instance's, and wait for it to leave. The tests
/// of this file that may install etcd take turns.
static ETCD_CRDS: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// Waits until etcd's CRDs (those its bundles ship) are gone, not merely
/// being deleted: a CRD still being finalized is the leaving Instance's,
/// and the next test would be refused it.
async fn etcd_leaves(scope: &Scope) {
    let names = bundle_crd_names(&data("bundles/etcd/0.9.4"));
    wait_for_crds_gone(&scope.client, &names).await;
}

/// The CSV's name and version of the bundle in `dir`.
fn csv_of(dir: &std::path::Path) -> (String, String) {
    let manifests = dir.join("manifests");
    for entry in std::fs::read_dir(&manifests).unwrap() {
        let path = entry.unwrap().path();
        if path
            .to_string_lossy()
            .ends_with(".clusterserviceversion.yaml")
        {
            let csv: Value =
                serde_saphyr::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
            return (
                csv["metadata"]["name"].as_str().unwrap().to_owned(),
                csv["spec"]["version"].as_str().unwrap().to_owned(),
            );
        }
    }
    panic!("no CSV in {}", manifests.display());
}

/// Approves the Instance's pinned content, as `kubectl instance approve` does.
async fn approve(instances: &Api<Instance>, name: &str) {
    let instance = instances.get(name).await.unwrap();
    let digest =
        pakket_testkit::pinned_digest_for(&instances.clone().into_client(), &instance).await;
    let mut conditions = instance.status.clone().unwrap_or_default().conditions;
    for condition in &mut conditions {
        if condition.type_ == "Approved" {
            condition.status = "True".into();
            condition.reason = "ApprovedByUser".into();
            condition.message = "approved by the test".into();
            condition.observed_generation = instance.metadata.generation;
        }
    }
    let patch = json!({ "status": {
        "conditions": conditions,
        "approval": { "bundle": instance.spec.bundle.name, "digest": digest, "approvedBy": "the test", "generation": instance.metadata.generation, "judged": null, "rendered": null },
    } });
    instances
        .patch_status(name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .unwrap();
}

/// The derived catalog's etcd documents, served as Catalog
/// `<scope>-etcd-catalog` from an immutable, marked ConfigMap.
async fn serve_etcd_catalog(scope: &Scope) {
    serve_etcd_catalog_with(scope, "").await;
}

/// As [`serve_etcd_catalog`], with `extra` documents (JSON lines) after
/// etcd's.
async fn serve_etcd_catalog_with(scope: &Scope, extra: &str) {
    let catalog_text = pakket_testkit::derived_package("etcd") + extra;
    assert!(
        catalog_text.contains("quay.io/openshift-community-operators/etcd:v0.9.2"),
        "the catalog names the public image"
    );
    support::serve_files(
        scope,
        "etcd-catalog",
        BTreeMap::from([("catalog.json".to_owned(), catalog_text)]),
    )
    .await;
}

/// The resolveset class (`Android`, olm.bundle → `child_class`, children
/// into the scope's namespace) and its provisioner, run in this process
/// with the admin's rights.
async fn start_resolveset(scope: &Scope, child_class: &str, key: Option<pakket_api::RecordKey>) {
    start_resolveset_as(scope, scope.client.clone(), child_class, key).await;
}

/// As [`start_resolveset`], the provisioner reading and writing as
/// `client`.
async fn start_resolveset_as(
    scope: &Scope,
    client: kube::Client,
    child_class: &str,
    key: Option<pakket_api::RecordKey>,
) {
    let id = format!("test.pakket.dev/{}-resolveset", scope.id);
    support::class(
        scope,
        "resolveset",
        &id,
        json!({
            "approval": "Android",
            "matchSchema": [{"schema": "olm.bundle", "class": child_class}],
            "installNamespace": scope.namespace,
        }),
    )
    .await;
    let store = scope.path("store-resolveset");
    tokio::spawn(async move {
        let options = RunOptions {
            record_key: key.clone(),
            ..RunOptions::new(store)
        };
        let provisioner = ResolveSet::new(id).with_record_key(key);
        controller::run_with(client, provisioner, options).await
    });
}

/// The etcd bundles pushed as images under the catalog's names (the
/// catalog's tags), and the catalog's etcd documents served: each bundle's
/// CSV name, version and pushed ref, and the mirror they are under.
async fn etcd_images_and_catalog(scope: &Scope) -> (Vec<(String, String, String)>, String) {
    let pushed = push_etcd_images(scope).await;
    serve_etcd_catalog(scope).await;
    pushed
}

/// The etcd bundles pushed as images under the catalog's names: each
/// bundle's CSV name, version and pushed ref, and the mirror they are under.
async fn push_etcd_images(scope: &Scope) -> (Vec<(String, String, String)>, String) {
    let mut bundles = Vec::new();
    let mut mirror = String::new();
    for version in ["0.9.2", "0.9.4"] {
        let dir = data(&format!("bundles/etcd/{version}"));
        let (reference, _) =
            support::push_catalog(scope, &dir, "etcd", &format!("v{version}")).await;
        mirror = reference.rsplit_once(':').unwrap().0.to_owned();
        let (name, csv_version) = csv_of(&dir);
        bundles.push((name, csv_version, reference));
    }
    (bundles, mirror)
}

/// The registry-v1 class of the test (`approval`, pulling the catalog's
/// etcd images from `mirror`) and its provisioner, run in this process;
/// the class's name.
async fn start_registry_v1(
    scope: &Scope,
    approval: &str,
    mirror: &str,
    key: Option<pakket_api::RecordKey>,
) -> String {
    start_registry_v1_as(scope, scope.client.clone(), approval, mirror, key).await
}

/// As [`start_registry_v1`], the provisioner reading and writing as
/// `client`.
async fn start_registry_v1_as(
    scope: &Scope,
    client: kube::Client,
    approval: &str,
    mirror: &str,
    key: Option<pakket_api::RecordKey>,
) -> String {
    let mirrors =
        json!([{"source": "quay.io/openshift-community-operators/etcd", "mirror": mirror}]);
    start_registry_v1_with(scope, client, approval, mirrors, key).await
}

/// As [`start_registry_v1_as`], with the class's `mirrors` as given.
async fn start_registry_v1_with(
    scope: &Scope,
    client: kube::Client,
    approval: &str,
    mirrors: Value,
    key: Option<pakket_api::RecordKey>,
) -> String {
    let registry_id = format!("test.pakket.dev/{}-registry-v1", scope.id);
    let registry_class = support::class(
        scope,
        "registry-v1",
        &registry_id,
        json!({
            "approval": approval,
            "mirrors": mirrors,
        }),
    )
    .await;
    let store = scope.path("store-registry");
    tokio::spawn(async move {
        let options = RunOptions {
            record_key: key,
            ..RunOptions::new(store)
        };
        controller::run_with(client, RegistryV1::new(registry_id), options).await
    });
    registry_class
}

/// Input `<scope>-etcd` asks for `constraints` now, as a user's apply would.
async fn set_constraints(inputs: &Api<Input>, scope: &Scope, constraints: Vec<InputConstraint>) {
    inputs
        .patch(
            &scope.name("etcd"),
            &PatchParams::apply("test").force(),
            &Patch::Apply(json!({
                "apiVersion": "resolve.pakket.dev/v1alpha1",
                "kind": "Input",
                "spec": { "inputClass": scope.name("subscription"), "constraints": constraints },
            })),
        )
        .await
        .unwrap();
}

/// InputClass `<scope>-subscription`, labelled as the one class
/// OperatorRequests resolve through.
async fn requests_subscription_class(scope: &Scope) {
    support::subscription_class(scope).await;
    Api::<InputClass>::all(scope.client.clone())
        .patch(
            &scope.name("subscription"),
            &PatchParams::default(),
            &Patch::Merge(json!({ "metadata": { "labels": {
                pakket_resolveset::operators::request_controller::FOR_REQUESTS_LABEL: "true",
            } } })),
        )
        .await
        .unwrap();
}

#[tokio::test]
async fn an_input_installs_upgrades_and_removes_a_real_operator_through_the_resolveset() {
    let _etcd = ETCD_CRDS.lock().await;
    let scope = Scope::new("resolveset-install").await;
    pakket_testkit::install_crds(&scope.client).await.unwrap();
    let _running = support::start(&scope, support::loopback(), Vec::new()).await;

    // The bundles as images under the mirror's names (the catalog's tags),
    // and the catalog's own etcd documents.
    let (bundles, mirror) = etcd_images_and_catalog(&scope).await;

    // The two provisioners, each for a class of this test.
    let registry_class = start_registry_v1(&scope, "AllowAll", &mirror, None).await;
    start_resolveset(&scope, &registry_class, None).await;
    support::subscription_class(&scope).await;
    let constraints = |range: &str| {
        support::package_constraints(
            &scope,
            "etcd-catalog",
            "etcd",
            "singlenamespace-alpha",
            range,
        )
    };
    let input = support::subscription_input(&scope, "etcd", constraints("0.9.2"));
    let inputs: Api<Input> = Api::all(scope.client.clone());
    let asked = std::time::Instant::now();
    inputs.create(&PostParams::default(), &input).await.unwrap();

    // A new package: Android waits for a person, naming it.
    let instances: Api<Instance> = Api::all(scope.client.clone());
    let set = scope.name("resolveset");
    let child_name = format!("{set}-etcd");
    let pending = wait_for_instance(&instances, &set, "the new set waiting for approval", |i| {
        pakket_testkit::reason_is(i, ConditionType::Approved, "ApprovalPending")
            && i.condition(ConditionType::Approved)
                .is_some_and(|c| c.message.contains("adds 1 new package(s): etcd"))
    })
    .await;
    assert!(
        instances.get_opt(&child_name).await.unwrap().is_none(),
        "nothing is installed before approval: {:?}",
        pending.status
    );
    let waiting = asked.elapsed();
    let approved = std::time::Instant::now();
    approve(&instances, &set).await;
    let child = wait_for_instance(
        &instances,
        &child_name,
        "etcd 0.9.2 installed and healthy",
        |i| {
            condition_is(i, ConditionType::Installed, "True")
                && condition_is(i, ConditionType::Healthy, "True")
        },
    )
    .await;
    // A figure for README (printed with --nocapture, never asserted).
    println!(
        "Input created → set waiting for approval: {:.1} s; approved → etcd Installed and Healthy: {:.1} s",
        waiting.as_secs_f64(),
        approved.elapsed().as_secs_f64()
    );
    assert_eq!(child.spec.class, registry_class);
    assert_eq!(child.spec.bundle.name, bundles[0].0);
    // The child names the catalog's public image; it was pulled from the
    // mirror, and its pin says so.
    let bundle_spec = child.spec.bundle.spec.clone().unwrap();
    assert_eq!(
        bundle_spec.refs,
        ["docker://quay.io/openshift-community-operators/etcd:v0.9.2"]
    );
    let pinned = child
        .status
        .as_ref()
        .and_then(|s| s.embedded_bundle.as_ref())
        .and_then(|b| b.status.source.clone())
        .unwrap();
    assert_eq!(pinned.reference, format!("docker://{}", bundles[0].2));

    // Widened: the child pivots to 0.9.4, approved by Android on its own.
    set_constraints(&inputs, &scope, constraints(">=0.9.2")).await;
    wait_for_instance(&instances, &child_name, "etcd upgraded to 0.9.4", |i| {
        i.spec.bundle.name == bundles[1].0 && condition_is(i, ConditionType::Installed, "True")
    })
    .await;
    // The set's own status is written at the end of its reconcile, which
    // may land after the child's provisioner is done (on a busy cluster).
    wait_for_instance(&instances, &set, "the new set approved by Android", |i| {
        i.condition(ConditionType::Approved)
            .is_some_and(|c| c.reason == "ApprovedByPolicy" && c.message.contains("Android"))
    })
    .await;

    // Pinned back to 0.9.2 (someone who may edit Inputs going back to an
    // older, maybe vulnerable, version): the resolver never downgrades, the
    // Input says so, and the installed 0.9.4 stays.
    set_constraints(&inputs, &scope, constraints("0.9.2")).await;
    eventually("the downgrade refused in the Input's status", || async {
        inputs
            .get(&scope.name("etcd"))
            .await
            .unwrap()
            .condition("ResolutionFailed")
            .is_some_and(|c| c.reason == "Unsatisfiable" && c.message.contains("never downgrade"))
    })
    .await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    let kept = instances.get(&child_name).await.unwrap();
    assert_eq!(
        kept.spec.bundle.name, bundles[1].0,
        "the installed version stays"
    );
    assert!(condition_is(&kept, ConditionType::Installed, "True"));

    // The Input goes: the set empties, the child and its objects go.
    inputs
        .delete(&scope.name("etcd"), &DeleteParams::default())
        .await
        .unwrap();
    eventually("the child Instance is gone", || async {
        instances.get_opt(&child_name).await.unwrap().is_none()
    })
    .await;
    etcd_leaves(&scope).await;
    remove_set(&instances, &set).await;
    tokio::time::sleep(Duration::from_millis(100)).await;
    support::cleanup(scope).await;
}

fn refused<T: std::fmt::Debug>(result: Result<T, kube::Error>) -> bool {
    matches!(result, Err(kube::Error::Api(status)) if status.code == 403 || status.code == 422)
}

#[tokio::test]
async fn a_user_who_may_write_inputs_cannot_install_a_new_operator_without_an_approver() {
    // Mallory may create and edit Inputs (an admin delegated that), and
    // read the set, nothing more. Her Input resolves, and the set waits
    // for a person (Android: a new package); everything she tries on top
    // is refused and nothing is installed.
    let _etcd = ETCD_CRDS.lock().await;
    let scope = Scope::new("resolveset-attack").await;
    pakket_testkit::install_crds(&scope.client).await.unwrap();
    // pakket-resolveset with the rights deploy/ ships, not the admin's.
    let shipped = Shipped::new(&scope).await;
    let _running = shipped.start_controllers(&scope, None).await;
    serve_etcd_catalog(&scope).await;
    // The children's class need not exist: nothing may get that far.
    start_resolveset_as(
        &scope,
        shipped.resolveset.clone(),
        &scope.name("never-used"),
        None,
    )
    .await;
    support::subscription_class(&scope).await;
    support::grant(
        &scope,
        "mallory",
        json!([
            {"apiGroups": ["resolve.pakket.dev"], "resources": ["inputs"], "verbs": ["get", "list", "create", "update", "patch"]},
            {"apiGroups": ["core.pakket.dev"], "resources": ["instances"], "verbs": ["get", "list"]},
        ]),
    )
    .await;
    // ConfigMaps in the test's namespace only: a grant left behind by a
    // failed run must not change what other tests' users may read.
    grant_in(
        &scope,
        &scope.namespace,
        "mallory-reads",
        "mallory",
        json!([{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get"]}]),
    )
    .await;
    let mallory = scope.cluster.client_as("mallory").await;
    let mut input: Input = serde_json::from_value(json!({
        "apiVersion": "resolve.pakket.dev/v1alpha1",
        "kind": "Input",
        "metadata": { "name": scope.name("etcd"), "labels": scope.labels() },
        "spec": {
            "inputClass": scope.name("subscription"),
            "constraints": [{"type": "olm.catalog", "value": {"name": scope.name("etcd-catalog"), "package": "etcd"}}],
        },
    }))
    .unwrap();
    input.metadata.labels = Some(scope.labels());
    Api::<Input>::all(mallory.clone())
        .create(&PostParams::default(), &input)
        .await
        .unwrap();

    let instances: Api<Instance> = Api::all(scope.client.clone());
    let set = scope.name("resolveset");
    let child_name = format!("{set}-etcd");
    wait_for_instance(&instances, &set, "the set waiting for a person", |i| {
        pakket_testkit::reason_is(i, ConditionType::Approved, "ApprovalPending")
            && i.condition(ConditionType::Approved)
                .is_some_and(|c| c.message.contains("adds 1 new package(s): etcd"))
    })
    .await;

    // She approves it herself: no right to the status.
    let as_mallory: Api<Instance> = Api::all(mallory.clone());
    let approve = json!({ "status": { "conditions": [{
        "type": "Approved", "status": "True", "reason": "ApprovedByUser", "message": "me",
        "lastTransitionTime": jiff::Timestamp::now().to_string(),
    }]}});
    assert!(refused(
        as_mallory
            .patch_status(&set, &PatchParams::default(), &Patch::Merge(&approve))
            .await
    ));
    // She creates the child herself.
    let child: Instance = serde_json::from_value(json!({
        "apiVersion": "core.pakket.dev/v1alpha1", "kind": "Instance",
        "metadata": { "name": child_name },
        "spec": { "class": scope.name("never-used"), "bundle": { "name": "x", "spec": { "class": scope.name("never-used"), "refs": ["docker://quay.io/openshift-community-operators/etcd:v0.9.4"] } } },
    }))
    .unwrap();
    let created = as_mallory.create(&PostParams::default(), &child).await;
    assert!(
        matches!(&created, Err(kube::Error::Api(status)) if status.code == 403 || status.code == 422),
        "{created:?}"
    );
    // She points the set at content of her own.
    let retarget = json!({ "spec": { "bundle": { "name": "mine" } } });
    assert!(refused(
        as_mallory
            .patch(&set, &PatchParams::default(), &Patch::Merge(&retarget))
            .await
    ));
    // She rewrites the set's content: it is immutable, and hers to read only.
    let (config_map, _) = {
        let instance = instances.get(&set).await.unwrap();
        let mount = instance.spec.bundle.spec.unwrap().volume_mounts[0].clone();
        (mount.config_map.name, mount.config_map.namespace)
    };
    let config_maps: Api<ConfigMap> = Api::namespaced(mallory.clone(), &scope.namespace);
    assert!(
        config_maps.get(&config_map).await.is_ok(),
        "she may read it"
    );
    let rewrite = json!({ "data": { "resolved.bundles.json": "[]" } });
    assert!(refused(
        config_maps
            .patch(
                &config_map,
                &PatchParams::default(),
                &Patch::Merge(&rewrite)
            )
            .await
    ));
    // She makes her Input a "force" one with a class of her own: no right.
    let own_class: InputClass = serde_json::from_value(json!({
        "apiVersion": "resolve.pakket.dev/v1alpha1", "kind": "InputClass",
        "metadata": { "name": scope.name("mine") },
        "spec": { "parameters": { "force": true } },
    }))
    .unwrap();
    assert!(refused(
        Api::<InputClass>::all(mallory.clone())
            .create(&PostParams::default(), &own_class)
            .await
    ));

    // Nothing was installed, and the set still waits.
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert!(instances.get_opt(&child_name).await.unwrap().is_none());
    let still = instances.get(&set).await.unwrap();
    assert!(pakket_testkit::reason_is(
        &still,
        ConditionType::Approved,
        "ApprovalPending"
    ));
    remove_set(&instances, &set).await;
    support::revoke(&scope, "mallory").await;
    support::cleanup(scope).await;
}

/// The clients pakket-resolveset and pakket-registry-v1 run with in the
/// requester tests: each its ServiceAccount's token, with the RBAC of its
/// file in `deploy/` applied as it is, plus what `deploy/` grants by the
/// names an admin picks, given for this test's names: `use` on its classes
/// (and resolveset's on the children's), `approve` on the set's Instance,
/// and the set's ConfigMaps in the namespace the sets are written to
/// (`pakket-system` in `deploy/`, the scope's here).
struct Shipped {
    resolveset: kube::Client,
    registry_v1: kube::Client,
    webhooks: kube::Client,
}

impl Shipped {
    /// pakket-resolveset's Catalog, Input and Operator controllers and its
    /// resolver API, as its ServiceAccount, for the scope's objects
    /// (Catalogs on loopback), sealing with `key`.
    async fn start_controllers(
        &self,
        scope: &Scope,
        key: Option<pakket_api::RecordKey>,
    ) -> pakket_resolveset::process::Running {
        let (catalogs, roots, reach) = (support::loopback(), Vec::new(), true);
        let set = support::set_of(scope);
        let client = self.resolveset.clone();
        support::start_keyed_as(scope, client, catalogs, roots, reach, set, key).await
    }

    async fn new(scope: &Scope) -> Self {
        use pakket_testkit::shipped::{self, REGISTRY_V1, RESOLVESET, WEBHOOKS};
        let admin = &scope.client;
        let kubeconfig = scope.cluster.kubeconfig().to_path_buf();
        let labels = scope.labels();
        let (set, registry_class) = (scope.name("resolveset"), scope.name("registry-v1"));
        shipped::grant_classes(
            admin,
            RESOLVESET,
            &scope.name("resolveset-classes"),
            &labels,
            std::slice::from_ref(&set),
        )
        .await;
        shipped::grant(
            admin,
            RESOLVESET,
            None,
            &scope.name("resolveset-names"),
            &labels,
            json!([
                {"apiGroups": [pakket_api::GROUP], "resources": ["provisionerclasses"], "resourceNames": [registry_class], "verbs": ["use"]},
                {"apiGroups": [pakket_api::GROUP], "resources": ["instances"], "resourceNames": [set], "verbs": ["approve"]},
            ]),
        )
        .await;
        shipped::grant(
            admin,
            RESOLVESET,
            Some(&scope.namespace),
            &scope.name("resolveset-sets"),
            &labels,
            json!([{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list", "create", "delete"]}]),
        )
        .await;
        shipped::grant_classes(
            admin,
            REGISTRY_V1,
            &scope.name("registry-v1-classes"),
            &labels,
            &[registry_class],
        )
        .await;
        Self {
            resolveset: shipped::client(admin, &kubeconfig, RESOLVESET, scope).await,
            registry_v1: shipped::client(admin, &kubeconfig, REGISTRY_V1, scope).await,
            webhooks: shipped::client(admin, &kubeconfig, WEBHOOKS, scope).await,
        }
    }
}

/// Starts the webhooks for this test as `deploy/` runs them (their own
/// ServiceAccount's rights, pakket-resolveset's ServiceAccount their
/// delegate): one server for the scope's objects (Inputs, Operators), one
/// for the set's children (labelled with the set), sharing one record key.
async fn webhooks_for(
    scope: &Scope,
    shipped: &Shipped,
) -> (
    pakket_webhooks::local::LocalWebhooks,
    pakket_webhooks::local::LocalWebhooks,
) {
    use pakket_webhooks::local::{LocalOptions, LocalWebhooks};
    let delegates = vec![pakket_testkit::shipped::RESOLVESET.user()];
    let mut scoped = LocalOptions::for_labels(format!("{}-inputs", scope.id), scope.labels());
    scoped.delegates = delegates.clone();
    scoped.serving_client = Some(shipped.webhooks.clone());
    let inputs = LocalWebhooks::start(scope.client.clone(), scoped)
        .await
        .expect("the Inputs' webhooks start");
    let mut children = LocalOptions::for_labels(
        format!("{}-children", scope.id),
        BTreeMap::from([(
            pakket_resolveset::inputs::input_controller::SET_LABEL.to_owned(),
            scope.name("resolveset"),
        )]),
    );
    children.delegates = delegates;
    children.serving_client = Some(shipped.webhooks.clone());
    children.record_key_file = Some(inputs.record_key_file().to_path_buf());
    let children = LocalWebhooks::start(scope.client.clone(), children)
        .await
        .expect("the children's webhooks start");
    (inputs, children)
}

/// `user` may write `<scope>-etcd` Inputs and read Instances.
async fn grant_inputs(scope: &Scope, user: &str) {
    support::grant(
        scope,
        user,
        json!([
            {"apiGroups": ["resolve.pakket.dev"], "resources": ["inputs"], "verbs": ["get", "list", "create", "update", "patch", "delete"]},
            {"apiGroups": ["core.pakket.dev"], "resources": ["instances"], "verbs": ["get", "list"]},
            {"apiGroups": ["apiextensions.k8s.io"], "resources": ["customresourcedefinitions"], "verbs": if user == "carol" { json!(["create", "patch", "get"]) } else { json!(["get"]) }},
            {"apiGroups": [""], "resources": ["namespaces"], "verbs": if user == "carol" { json!(["create", "patch", "get"]) } else { json!(["get"]) }},
        ]),
    )
    .await;
}

/// The user named in record annotation `annotation` of `instance`.
fn recorded(instance: &Instance, annotation: &str) -> String {
    let text = &instance.metadata.annotations.as_ref().unwrap()[annotation];
    pakket_api::CreatorRecord::from_annotation(text)
        .unwrap()
        .username
}

#[tokio::test]
async fn the_author_of_an_input_is_the_requester_of_the_operator_it_installs() {
    // The children's class has `approval: UserPermission`. Carol, who may
    // install the etcd operator by hand (CRDs, its namespace, and everything
    // in it), writes an Input: the child Instance is judged by her
    // rights and installs. Mallory, who may only write Inputs, asks for the
    // same operator: the set leaves it to the class as before, and the child
    // still waits, naming her. She cannot borrow Carol's record.
    let _etcd = ETCD_CRDS.lock().await;
    let scope = Scope::new("resolveset-requester").await;
    pakket_testkit::install_crds(&scope.client).await.unwrap();
    let shipped = Shipped::new(&scope).await;
    let (inputs_hooks, children_hooks) = webhooks_for(&scope, &shipped).await;
    let key = inputs_hooks.record_key();
    let _running = shipped.start_controllers(&scope, Some(key.clone())).await;
    let (_, mirror) = etcd_images_and_catalog(&scope).await;
    let registry_class = start_registry_v1_as(
        &scope,
        shipped.registry_v1.clone(),
        "UserPermission",
        &mirror,
        Some(key.clone()),
    )
    .await;
    start_resolveset_as(
        &scope,
        shipped.resolveset.clone(),
        &registry_class,
        Some(key.clone()),
    )
    .await;
    support::subscription_class(&scope).await;

    // Carol: everything in the namespace, and CRDs.
    grant_inputs(&scope, "carol").await;
    grant_in(
        &scope,
        &scope.namespace,
        "carol-installs",
        "carol",
        json!([{"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]}]),
    )
    .await;
    let input_of = |name: &str| -> Input {
        serde_json::from_value(json!({
            "apiVersion": "resolve.pakket.dev/v1alpha1", "kind": "Input",
            "metadata": { "name": scope.name(name), "labels": scope.labels() },
            "spec": {
                "inputClass": scope.name("subscription"),
                "constraints": [
                    {"type": "olm.catalog", "value": {"name": scope.name("etcd-catalog"), "package": "etcd", "channel": "singlenamespace-alpha"}},
                    {"type": "olm.packageVersion", "value": {"package": "etcd", "version": "0.9.2"}},
                ],
            },
        }))
        .unwrap()
    };
    let carol = scope.cluster.client_as("carol").await;
    eventually("carol may write Inputs", || async {
        Api::<Input>::all(carol.clone())
            .create(&PostParams::default(), &input_of("carols"))
            .await
            .is_ok()
    })
    .await;
    let written = Api::<Input>::all(scope.client.clone())
        .get(&scope.name("carols"))
        .await
        .unwrap();
    assert_eq!(
        recorded_on(&written, pakket_api::CREATED_BY_ANNOTATION),
        "carol",
        "the webhook sealed who wrote the Input"
    );

    let instances: Api<Instance> = Api::all(scope.client.clone());
    let set = scope.name("resolveset");
    let child_name = format!("{set}-etcd");
    // The set asks nobody: the package is carol's request alone, and the
    // children's class judges it as hers.
    wait_for_instance(
        &instances,
        &set,
        "the set approved for carol's request",
        |i| {
            condition_is(i, ConditionType::Approved, "True")
                && pakket_testkit::message_of(i, ConditionType::Approved)
                    .contains("carol's request, judged as theirs by class")
        },
    )
    .await;
    let child = wait_for_instance(&instances, &child_name, "etcd installed as carol's", |i| {
        condition_is(i, ConditionType::Installed, "True")
    })
    .await;
    let approved = child.condition(ConditionType::Approved).unwrap();
    assert!(
        approved.reason == "ApprovedByPolicy" && approved.message.contains("carol"),
        "{approved:?}"
    );
    assert_eq!(
        recorded(&child, pakket_api::LAST_CHANGED_BY_ANNOTATION),
        "carol"
    );
    assert_eq!(
        recorded(&child, pakket_api::CREATED_BY_ANNOTATION),
        pakket_testkit::shipped::RESOLVESET.user(),
        "the child was written by the process, for carol"
    );
    let carols_record = child.metadata.annotations.as_ref().unwrap()
        [pakket_api::LAST_CHANGED_BY_ANNOTATION]
        .clone();

    // Carol's Input goes, and the operator with it.
    Api::<Input>::all(carol.clone())
        .delete(&scope.name("carols"), &DeleteParams::default())
        .await
        .unwrap();
    eventually("the child Instance is gone", || async {
        instances.get_opt(&child_name).await.unwrap().is_none()
    })
    .await;

    // Mallory asks for the same operator.
    grant_inputs(&scope, "mallory").await;
    let mallory = scope.cluster.client_as("mallory").await;
    eventually("mallory may write Inputs", || async {
        Api::<Input>::all(mallory.clone())
            .create(&PostParams::default(), &input_of("mallorys"))
            .await
            .is_ok()
    })
    .await;
    // The set leaves her request to the class, as it did carol's; the
    // class's UserPermission asks about her rights, which fall short.
    wait_for_instance(
        &instances,
        &set,
        "the set approved for mallory's request",
        |i| {
            condition_is(i, ConditionType::Approved, "True")
                && pakket_testkit::message_of(i, ConditionType::Approved)
                    .contains("mallory's request, judged as theirs by class")
        },
    )
    .await;
    let waiting = wait_for_instance(
        &instances,
        &child_name,
        "the child waiting on mallory's rights",
        |i| {
            pakket_testkit::reason_is(i, ConditionType::Approved, "ApprovalPending")
                && i.condition(ConditionType::Approved)
                    .is_some_and(|c| c.message.contains("mallory"))
        },
    )
    .await;
    assert_eq!(
        recorded(&waiting, pakket_api::LAST_CHANGED_BY_ANNOTATION),
        "mallory"
    );
    // She cannot pass carol's record off as hers on her Input.
    let borrowed = json!({ "metadata": { "annotations": {
        pakket_api::LAST_CHANGED_BY_ANNOTATION: carols_record,
    } } });
    assert!(refused(
        Api::<Input>::all(mallory.clone())
            .patch(
                &scope.name("mallorys"),
                &PatchParams::default(),
                &Patch::Merge(&borrowed)
            )
            .await
    ));
    tokio::time::sleep(Duration::from_secs(2)).await;
    let crds: Api<k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition> =
        Api::all(scope.client.clone());
    assert!(
        crds.get_opt("etcdclusters.etcd.database.coreos.com")
            .await
            .unwrap()
            .is_none(),
        "nothing of the operator was installed for mallory"
    );

    Api::<Input>::all(scope.client.clone())
        .delete(&scope.name("mallorys"), &DeleteParams::default())
        .await
        .unwrap();
    eventually("the child Instance is gone", || async {
        instances.get_opt(&child_name).await.unwrap().is_none()
    })
    .await;
    remove_set(&instances, &set).await;
    support::revoke(&scope, "carol").await;
    support::revoke(&scope, "mallory").await;
    children_hooks.stop().await.unwrap();
    inputs_hooks.stop().await.unwrap();
    support::cleanup(scope).await;
}

/// The user named in record annotation `annotation` of an Input.
fn recorded_on(input: &Input, annotation: &str) -> String {
    let text = &input.metadata.annotations.as_ref().unwrap()[annotation];
    pakket_api::CreatorRecord::from_annotation(text)
        .unwrap()
        .username
}

#[tokio::test]
async fn the_author_of_an_operator_is_carried_through_its_input_into_the_set() {
    // Carol writes an Operator; the Operator controller writes its Input
    // (as the process, a delegate) with Carol sealed as the Input's
    // last-changed-by; the Input controller verifies that and stamps the
    // set's entry for her.
    let _etcd = ETCD_CRDS.lock().await;
    let scope = Scope::new("resolveset-operator-author").await;
    pakket_testkit::install_crds(&scope.client).await.unwrap();
    let shipped = Shipped::new(&scope).await;
    let (inputs_hooks, children_hooks) = webhooks_for(&scope, &shipped).await;
    let key = inputs_hooks.record_key();
    let _running = shipped.start_controllers(&scope, Some(key)).await;
    serve_etcd_catalog(&scope).await;
    support::subscription_class(&scope).await;
    support::grant(
        &scope,
        "carol",
        json!([
            {"apiGroups": ["operators.pakket.dev"], "resources": ["operators"], "verbs": ["get", "create"]},
        ]),
    )
    .await;
    let operator: pakket_resolveset::Operator = serde_json::from_value(json!({
        "apiVersion": "operators.pakket.dev/v1alpha1", "kind": "Operator",
        "metadata": { "name": scope.name("etcd"), "labels": scope.labels() },
        "spec": {
            "inputClass": scope.name("subscription"),
            "catalog": {"name": scope.name("etcd-catalog"), "package": "etcd", "channel": "singlenamespace-alpha"},
            "version": "0.9.2",
        },
    }))
    .unwrap();
    let carol = scope.cluster.client_as("carol").await;
    eventually("carol may write Operators", || async {
        Api::<pakket_resolveset::Operator>::all(carol.clone())
            .create(&PostParams::default(), &operator)
            .await
            .is_ok()
    })
    .await;
    let inputs: Api<Input> = Api::all(scope.client.clone());
    eventually(
        "the Operator's Input carries carol as its requester",
        || async {
            inputs
                .get_opt(&scope.name("etcd"))
                .await
                .unwrap()
                .is_some_and(|input| {
                    input
                        .metadata
                        .annotations
                        .as_ref()
                        .and_then(|a| a.get(pakket_api::LAST_CHANGED_BY_ANNOTATION))
                        .is_some()
                        && recorded_on(&input, pakket_api::LAST_CHANGED_BY_ANNOTATION) == "carol"
                        && recorded_on(&input, pakket_api::CREATED_BY_ANNOTATION)
                            == pakket_testkit::shipped::RESOLVESET.user()
                })
        },
    )
    .await;
    let config_maps: Api<ConfigMap> = Api::namespaced(scope.client.clone(), &scope.namespace);
    let instances: Api<Instance> = Api::all(scope.client.clone());
    eventually("the set's etcd entry is stamped for carol", || async {
        let Some(set) = instances.get_opt(&scope.name("resolveset")).await.unwrap() else {
            return false;
        };
        let mount = set.spec.bundle.spec.unwrap().volume_mounts[0].clone();
        // Gone between the reads: the Instance moved on to a newer set.
        let Some(config_map) = config_maps.get_opt(&mount.config_map.name).await.unwrap() else {
            return false;
        };
        let entries = pakket_resolveset::set::resolved_set::from_bytes(
            config_map.data.unwrap()[pakket_resolveset::set::resolved_set::FILE].as_bytes(),
        )
        .unwrap();
        entries.iter().any(|entry| {
            entry.package_name == "etcd"
                && pakket_resolveset::set::requested_by::of(entry)
                    .is_some_and(|who| who.username == "carol")
        })
    })
    .await;
    Api::<pakket_resolveset::Operator>::all(scope.client.clone())
        .delete(&scope.name("etcd"), &DeleteParams::default())
        .await
        .unwrap();
    let _ = instances
        .delete(&scope.name("resolveset"), &DeleteParams::default())
        .await;
    support::revoke(&scope, "carol").await;
    children_hooks.stop().await.unwrap();
    inputs_hooks.stop().await.unwrap();
    support::cleanup(scope).await;
}

/// A small registry+v1 bundle written here (not real data): package
/// `etcd-backup` 0.1.0, one Deployment, and `metadata/dependencies.yaml`
/// needing package etcd `>=0.9.2`, the way eclipse-che's real bundle needs
/// devworkspace-operator (which ../shared/data does not hold). The
/// directory, and the catalog documents that list it under `image`.
fn etcd_backup_bundle(scope: &Scope, image: &str) -> (std::path::PathBuf, String) {
    let dir = support::scratch(scope, "etcd-backup-bundle");
    std::fs::create_dir_all(dir.join("manifests")).unwrap();
    std::fs::create_dir_all(dir.join("metadata")).unwrap();
    let csv = json!({
        "apiVersion": "operators.coreos.com/v1alpha1",
        "kind": "ClusterServiceVersion",
        "metadata": { "name": "etcd-backup.v0.1.0" },
        "spec": {
            "version": "0.1.0",
            "displayName": "etcd backup (test bundle)",
            "installModes": [
                {"type": "OwnNamespace", "supported": true},
                {"type": "SingleNamespace", "supported": true},
                {"type": "MultiNamespace", "supported": false},
                {"type": "AllNamespaces", "supported": false},
            ],
            "customresourcedefinitions": { "required": [
                {"name": "etcdbackups.etcd.database.coreos.com", "version": "v1beta2", "kind": "EtcdBackup"},
            ] },
            "install": { "strategy": "deployment", "spec": {
                "deployments": [{ "name": "etcd-backup-scheduler", "spec": {
                    "replicas": 1,
                    "selector": { "matchLabels": { "app": "etcd-backup-scheduler" } },
                    "template": {
                        "metadata": { "labels": { "app": "etcd-backup-scheduler" } },
                        "spec": {
                            "serviceAccountName": "etcd-backup-scheduler",
                            "containers": [{ "name": "scheduler", "image": "quay.io/pakket-test/etcd-backup-scheduler:v0.1.0" }],
                        },
                    },
                } }],
                "permissions": [{
                    "serviceAccountName": "etcd-backup-scheduler",
                    "rules": [{ "apiGroups": ["etcd.database.coreos.com"], "resources": ["etcdbackups"], "verbs": ["get", "list", "watch", "create"] }],
                }],
            } },
        },
    });
    std::fs::write(
        dir.join("manifests/etcd-backup.v0.1.0.clusterserviceversion.yaml"),
        serde_json::to_string_pretty(&csv).unwrap(),
    )
    .unwrap();
    std::fs::write(
        dir.join("metadata/annotations.yaml"),
        "annotations:\n  operators.operatorframework.io.bundle.mediatype.v1: registry+v1\n  operators.operatorframework.io.bundle.manifests.v1: manifests/\n  operators.operatorframework.io.bundle.metadata.v1: metadata/\n  operators.operatorframework.io.bundle.package.v1: etcd-backup\n  operators.operatorframework.io.bundle.channels.v1: stable\n  operators.operatorframework.io.bundle.channel.default.v1: stable\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("metadata/dependencies.yaml"),
        "dependencies:\n- type: olm.package\n  value:\n    packageName: etcd\n    version: \">=0.9.2\"\n",
    )
    .unwrap();
    let documents = [
        json!({"schema": "olm.package", "name": "etcd-backup", "defaultChannel": "stable"}),
        json!({"schema": "olm.channel", "name": "stable", "package": "etcd-backup",
               "entries": [{"name": "etcd-backup.v0.1.0"}]}),
        json!({"schema": "olm.bundle", "name": "etcd-backup.v0.1.0", "package": "etcd-backup", "image": image,
        "properties": [
            {"type": "olm.package", "value": {"packageName": "etcd-backup", "version": "0.1.0"}},
            {"type": "olm.package.required", "value": {"packageName": "etcd", "versionRange": ">=0.9.2"}},
        ]}),
    ];
    let lines = documents.iter().map(|d| format!("{d}\n")).collect();
    (dir, lines)
}

/// Writes Operator `<scope>-<suffix>` for `package` in `channel`.
async fn operator_for(scope: &Scope, suffix: &str, package: &str, channel: &str) {
    let operator: pakket_resolveset::Operator = serde_json::from_value(json!({
        "apiVersion": "operators.pakket.dev/v1alpha1", "kind": "Operator",
        "metadata": { "name": scope.name(suffix), "labels": scope.labels() },
        "spec": {
            "inputClass": scope.name("subscription"),
            "catalog": {"name": scope.name("etcd-catalog"), "package": package, "channel": channel},
        },
    }))
    .unwrap();
    Api::<pakket_resolveset::Operator>::all(scope.client.clone())
        .create(&PostParams::default(), &operator)
        .await
        .unwrap();
}

#[tokio::test]
async fn an_operator_brings_its_dependency_which_stays_while_another_operator_needs_it() {
    let _etcd = ETCD_CRDS.lock().await;
    let scope = Scope::new("resolveset-dependency").await;
    pakket_testkit::install_crds(&scope.client).await.unwrap();
    let _running = support::start(&scope, support::loopback(), Vec::new()).await;

    let (etcd_bundles, registry_class) = serve_backup_and_etcd(&scope).await;
    start_resolveset(&scope, &registry_class, None).await;
    support::subscription_class(&scope).await;

    // An Operator for the backup package alone: the set brings etcd in
    // as its dependency, and waits for a person (two new packages).
    let asked = std::time::Instant::now();
    operator_for(&scope, "backup", "etcd-backup", "stable").await;
    let instances: Api<Instance> = Api::all(scope.client.clone());
    let set = scope.name("resolveset");
    let (backup_child, etcd_child) = (format!("{set}-etcd-backup"), format!("{set}-etcd"));
    wait_for_instance(&instances, &set, "the two-package set waiting", |i| {
        pakket_testkit::reason_is(i, ConditionType::Approved, "ApprovalPending")
            && i.condition(ConditionType::Approved).is_some_and(|c| {
                c.message.contains("adds 2 new package(s)")
                    && c.message.contains("etcd")
                    && c.message.contains("etcd-backup")
            })
    })
    .await;
    let waiting = asked.elapsed();
    let approved = std::time::Instant::now();
    approve(&instances, &set).await;
    for child in [&backup_child, &etcd_child] {
        wait_for_instance(&instances, child, "installed", |i| {
            condition_is(i, ConditionType::Installed, "True")
        })
        .await;
    }
    println!(
        "Operator created → two-package set waiting for approval: {:.1} s; approved → both children Installed: {:.1} s",
        waiting.as_secs_f64(),
        approved.elapsed().as_secs_f64()
    );
    let etcd = instances.get(&etcd_child).await.unwrap();
    assert_eq!(
        etcd.spec.bundle.name, etcd_bundles[1].0,
        "the newest etcd the range allows"
    );

    // Each records why it is there: the Input asked for the backup; etcd
    // is there for the backup's package requirement.
    let inputs: Api<Input> = Api::all(scope.client.clone());
    let input = inputs.get(&scope.name("backup")).await.unwrap();
    let resolved = input.status.unwrap().instances;
    let of = |name: &str| resolved.iter().find(|r| r.name == name).unwrap().clone();
    let (backup, dependency) = (of(&backup_child), of(&etcd_child));
    assert_eq!(backup.satisfies[0].kind, "Input");
    assert_eq!(backup.dependencies[0].name, etcd_child);
    assert_eq!(
        (
            dependency.satisfies[0].kind.as_str(),
            dependency.satisfies[0].name.as_str()
        ),
        ("Instance", backup_child.as_str())
    );
    assert!(
        dependency.satisfies[0]
            .meets
            .iter()
            .any(|m| m.contains("etcd") && m.contains(">=0.9.2")),
        "{dependency:?}"
    );

    // An Operator for etcd itself: nothing new, so Android lets the set
    // through; then the backup Operator goes. Its child goes, and etcd
    // stays: another Operator needs it.
    operator_for(&scope, "etcd", "etcd", "singlenamespace-alpha").await;
    eventually(
        "the etcd Operator's Input resolved to the installed etcd",
        || async {
            inputs
                .get_opt(&scope.name("etcd"))
                .await
                .unwrap()
                .is_some_and(|input| {
                    input
                        .status
                        .is_some_and(|s| s.instances.iter().any(|r| r.name == etcd_child))
                })
        },
    )
    .await;
    let operators: Api<pakket_resolveset::Operator> = Api::all(scope.client.clone());
    operators
        .delete(&scope.name("backup"), &DeleteParams::default())
        .await
        .unwrap();
    eventually("the backup child is gone", || async {
        instances.get_opt(&backup_child).await.unwrap().is_none()
    })
    .await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    let kept = instances.get(&etcd_child).await.unwrap();
    assert!(
        kept.metadata.deletion_timestamp.is_none()
            && condition_is(&kept, ConditionType::Installed, "True"),
        "etcd stays while the etcd Operator needs it: {:?}",
        kept.status
    );

    // The backup Operator again (a new package: approved by a person),
    // then the etcd Operator goes: etcd stays, as the backup's dependency.
    operator_for(&scope, "backup", "etcd-backup", "stable").await;
    wait_for_instance(&instances, &set, "the backup waiting again", |i| {
        pakket_testkit::reason_is(i, ConditionType::Approved, "ApprovalPending")
    })
    .await;
    approve(&instances, &set).await;
    wait_for_instance(&instances, &backup_child, "installed again", |i| {
        condition_is(i, ConditionType::Installed, "True")
    })
    .await;
    operators
        .delete(&scope.name("etcd"), &DeleteParams::default())
        .await
        .unwrap();
    eventually("the etcd Operator's Input is gone", || async {
        inputs.get_opt(&scope.name("etcd")).await.unwrap().is_none()
    })
    .await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    let kept = instances.get(&etcd_child).await.unwrap();
    assert!(
        kept.metadata.deletion_timestamp.is_none(),
        "etcd stays while the backup needs it"
    );

    // The backup Operator goes: nothing needs etcd any more, and the
    // dependency goes with it, CRDs and all (OLM v0 would keep it).
    operators
        .delete(&scope.name("backup"), &DeleteParams::default())
        .await
        .unwrap();
    eventually("the etcd child is gone", || async {
        instances.get_opt(&etcd_child).await.unwrap().is_none()
    })
    .await;
    etcd_leaves(&scope).await;
    remove_set(&instances, &set).await;
    support::cleanup(scope).await;
}

/// The real etcd bundles, and the backup bundle that needs etcd, as images
/// under the catalog's public names, each from its mirror; the catalog of
/// both served; the registry-v1 class (`AllowAll`) started. The etcd
/// bundles (as [`push_etcd_images`]) and the class.
async fn serve_backup_and_etcd(scope: &Scope) -> (Vec<(String, String, String)>, String) {
    let (etcd_bundles, etcd_mirror) = push_etcd_images(scope).await;
    let public = "quay.io/pakket-test/etcd-backup";
    let (backup_dir, backup_documents) = etcd_backup_bundle(scope, &format!("{public}:v0.1.0"));
    let (backup_ref, _) = support::push_catalog(scope, &backup_dir, "etcd-backup", "v0.1.0").await;
    let backup_mirror = backup_ref.rsplit_once(':').unwrap().0.to_owned();
    serve_etcd_catalog_with(scope, &backup_documents).await;
    let registry_class = start_registry_v1_with(
        scope,
        scope.client.clone(),
        "AllowAll",
        json!([
            {"source": "quay.io/openshift-community-operators/etcd", "mirror": etcd_mirror},
            {"source": public, "mirror": backup_mirror},
        ]),
        None,
    )
    .await;
    (etcd_bundles, registry_class)
}

#[tokio::test]
async fn a_class_that_generates_inputs_gives_a_dependency_its_own_input_while_it_is_needed() {
    let _etcd = ETCD_CRDS.lock().await;
    let scope = Scope::new("resolveset-generated").await;
    pakket_testkit::install_crds(&scope.client).await.unwrap();
    let _running = support::start(&scope, support::loopback(), Vec::new()).await;
    let (_, registry_class) = serve_backup_and_etcd(&scope).await;
    start_resolveset(&scope, &registry_class, None).await;
    let mut generating = InputClass::new(
        &scope.name("generating"),
        InputClassSpec {
            parameters: InputClassParameters {
                generate_inputs_for_dependencies: true,
                ..InputClassParameters::default()
            },
        },
    );
    generating.metadata.labels = Some(scope.labels());
    Api::<InputClass>::all(scope.client.clone())
        .create(&PostParams::default(), &generating)
        .await
        .unwrap();
    let mut backup = Input::new(
        &scope.name("backup"),
        InputSpec {
            config: None,
            input_class: scope.name("generating"),
            constraints: serde_json::from_value(json!([
                {"type": "olm.catalog", "value": {"name": scope.name("etcd-catalog"), "package": "etcd-backup"}},
            ]))
            .unwrap(),
        },
    );
    backup.metadata.labels = Some(scope.labels());
    let inputs: Api<Input> = Api::all(scope.client.clone());
    let backup = inputs
        .create(&PostParams::default(), &backup)
        .await
        .unwrap();

    // etcd, brought in as the backup's dependency, gets an Input of its
    // own, owned by the backup's, asking for etcd by name in its catalog.
    let generated_name = pakket_resolveset::inputs::dependency_inputs::name_for("etcd");
    let generated = eventually_some("etcd's generated Input", || async {
        inputs.get_opt(&generated_name).await.unwrap()
    })
    .await;
    assert_eq!(
        generated.labels()[pakket_resolveset::inputs::dependency_inputs::DEPENDENCY_LABEL],
        "etcd"
    );
    assert_eq!(generated.owner_references()[0].uid, backup.uid().unwrap());
    assert_eq!(generated.spec.input_class, scope.name("generating"));
    assert_eq!(generated.spec.constraints[0].value["package"], "etcd");

    let instances: Api<Instance> = Api::all(scope.client.clone());
    let set = scope.name("resolveset");
    wait_for_instance(&instances, &set, "the set waiting", |i| {
        pakket_testkit::reason_is(i, ConditionType::Approved, "ApprovalPending")
    })
    .await;
    approve(&instances, &set).await;
    let etcd_child = format!("{set}-etcd");
    wait_for_instance(&instances, &etcd_child, "etcd installed", |i| {
        condition_is(i, ConditionType::Installed, "True")
    })
    .await;
    // The backup's Input still counts etcd as its dependency, though the
    // generated Input asks for it by name; the generated Input has it as
    // its own. A few passes later it is still there (no flapping).
    tokio::time::sleep(Duration::from_secs(2)).await;
    let backup_status = inputs
        .get(&scope.name("backup"))
        .await
        .unwrap()
        .status
        .unwrap();
    let brought = backup_status
        .instances
        .iter()
        .find(|i| i.name == etcd_child)
        .expect("etcd is still among the backup's bundles");
    assert_eq!(brought.satisfies[0].kind, "Instance", "{brought:?}");
    let generated = inputs.get(&generated_name).await.unwrap();
    assert!(generated.metadata.deletion_timestamp.is_none());
    let own = generated.status.unwrap().instances;
    assert_eq!(own[0].name, etcd_child);
    assert_eq!(own[0].satisfies[0].kind, "Input");

    // The backup's Input goes: the generated Input goes with it, and etcd
    // after it.
    inputs
        .delete(&scope.name("backup"), &DeleteParams::default())
        .await
        .unwrap();
    eventually("the generated Input is gone", || async {
        inputs.get_opt(&generated_name).await.unwrap().is_none()
    })
    .await;
    eventually("the etcd child is gone", || async {
        instances.get_opt(&etcd_child).await.unwrap().is_none()
    })
    .await;
    remove_set(&instances, &set).await;
    support::cleanup(scope).await;
}

/// Polls `get` until it gives something (60 s at most).
async fn eventually_some<T, F, Fut>(what: &str, get: F) -> T
where
    F: Fn() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    for _ in 0..600 {
        if let Some(found) = get().await {
            return found;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("{what} did not appear within 60 s");
}

#[tokio::test]
async fn an_input_someone_wrote_under_a_generated_name_is_never_taken_over() {
    // Alice's own Input happens to be named as the one the controller
    // would generate for etcd. The controller must not add owners to it:
    // the garbage collector would then delete Alice's Input when the
    // dependent goes.
    let _etcd = ETCD_CRDS.lock().await;
    let scope = Scope::new("resolveset-generated-name").await;
    pakket_testkit::install_crds(&scope.client).await.unwrap();
    let _running = support::start(&scope, support::loopback(), Vec::new()).await;
    let (_, backup_documents) =
        etcd_backup_bundle(&scope, "quay.io/pakket-test/etcd-backup:v0.1.0");
    serve_etcd_catalog_with(&scope, &backup_documents).await;
    let mut generating = InputClass::new(
        &scope.name("generating"),
        InputClassSpec {
            parameters: InputClassParameters {
                generate_inputs_for_dependencies: true,
                ..InputClassParameters::default()
            },
        },
    );
    generating.metadata.labels = Some(scope.labels());
    Api::<InputClass>::all(scope.client.clone())
        .create(&PostParams::default(), &generating)
        .await
        .unwrap();
    let inputs: Api<Input> = Api::all(scope.client.clone());
    let named = pakket_resolveset::inputs::dependency_inputs::name_for("etcd");
    let mut alices = Input::new(
        &named,
        InputSpec {
            config: None,
            input_class: scope.name("generating"),
            constraints: serde_json::from_value(json!([
                {"type": "olm.packageVersion", "value": {"package": "etcd", "version": ">=0.9.0"}},
            ]))
            .unwrap(),
        },
    );
    // She even labels it as generated: a label she can write is no proof.
    let mut labels = scope.labels();
    labels.insert(
        pakket_resolveset::inputs::dependency_inputs::DEPENDENCY_LABEL.to_owned(),
        "etcd".to_owned(),
    );
    alices.metadata.labels = Some(labels);
    let alices = inputs
        .create(&PostParams::default(), &alices)
        .await
        .unwrap();
    let mut backup = Input::new(
        &scope.name("backup"),
        InputSpec {
            config: None,
            input_class: scope.name("generating"),
            constraints: serde_json::from_value(json!([
                {"type": "olm.catalog", "value": {"name": scope.name("etcd-catalog"), "package": "etcd-backup"}},
            ]))
            .unwrap(),
        },
    );
    backup.metadata.labels = Some(scope.labels());
    inputs
        .create(&PostParams::default(), &backup)
        .await
        .unwrap();
    eventually("the backup's Input resolved", || async {
        inputs
            .get(&scope.name("backup"))
            .await
            .unwrap()
            .condition("ResolutionFailed")
            .is_some_and(|c| c.reason == "Resolved")
    })
    .await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    let kept = inputs.get(&named).await.unwrap();
    assert!(kept.owner_references().is_empty(), "{:?}", kept.metadata);
    assert_eq!(kept.spec, alices.spec);
    assert!(
        !kept
            .annotations()
            .contains_key(pakket_resolveset::inputs::dependency_inputs::GENERATED_ANNOTATION),
        "not sealed as generated: {:?}",
        kept.metadata
    );
    // Not silently: the Input that needs etcd is told the name is taken.
    eventually(
        "a GeneratedNameTaken Event on the backup's Input",
        || async {
            pakket_testkit::cluster_object_events(&scope.client, "Input", &scope.name("backup"))
                .await
                .iter()
                .any(|event| {
                    event.reason.as_deref() == Some("GeneratedNameTaken")
                        && event.type_.as_deref() == Some("Warning")
                        && event
                            .message
                            .as_deref()
                            .is_some_and(|m| m.contains(&named) && m.contains("dependency etcd"))
                })
        },
    )
    .await;
    inputs
        .delete(&scope.name("backup"), &DeleteParams::default())
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert!(
        inputs.get_opt(&named).await.unwrap().is_some(),
        "Alice's Input stays when the dependent goes"
    );
    support::cleanup(scope).await;
}

/// What an etcd Operator test starts from: the CRDs, the resolveset
/// process, the etcd images and catalog, registry-v1 (`AllowAll`), the
/// resolveset provisioner and the subscription class. The process (keep
/// it while the test runs) and the etcd bundles.
async fn operator_world(
    scope: &Scope,
) -> (
    pakket_resolveset::process::Running,
    Vec<(String, String, String)>,
) {
    pakket_testkit::install_crds(&scope.client).await.unwrap();
    let running = support::start(scope, support::loopback(), Vec::new()).await;
    let (bundles, mirror) = etcd_images_and_catalog(scope).await;
    let registry_class = start_registry_v1(scope, "AllowAll", &mirror, None).await;
    start_resolveset(scope, &registry_class, None).await;
    support::subscription_class(scope).await;
    (running, bundles)
}

/// Operator `<scope>-etcd`'s new set approved (as a person would) and
/// its child installed at `bundle`: the set's name, the child's name and
/// the child.
async fn approved_etcd_child(
    scope: &Scope,
    instances: &Api<Instance>,
    bundle: &str,
) -> (String, String, Instance) {
    let operator = &scope.name("etcd");
    let set = scope.name("resolveset");
    let child_name = format!("{set}-etcd");
    wait_for_instance(instances, &set, "the new set waiting", |i| {
        pakket_testkit::reason_is(i, ConditionType::Approved, "ApprovalPending")
    })
    .await;
    // What the Operator waits on is a person's approval of the set, and
    // its Ready says so (not that its child is merely missing).
    operator_says(instances, operator, "the set's approval", |ready| {
        ready.status == "False"
            && ready.reason == "ApprovalPending"
            && ready.message.contains(&format!("Instance {set}"))
            && ready.message.contains("waiting for a person to approve")
            // Not the set's own message, which names every package it adds.
            && !ready.message.contains("the set adds")
    })
    .await;
    pakket_testkit::capture(
        "operator-progressing_set_waits_for_approval",
        "operators.operators.pakket.dev",
        operator,
        None,
    );
    approve(instances, &set).await;
    let child = wait_for_instance(instances, &child_name, "the child installed", |i| {
        i.spec.bundle.name == bundle && condition_is(i, ConditionType::Installed, "True")
    })
    .await;
    operator_follows_its_child(instances, operator, &child_name).await;
    (set, child_name, child)
}

/// Once the child is Ready, Operator `operator` says so within seconds:
/// its controller watches the Instances it stands on, rather than finding
/// out at its next resync (5 min).
async fn operator_follows_its_child(instances: &Api<Instance>, operator: &str, child_name: &str) {
    let ready = |conditions: &[k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition]| {
        pakket_api::readiness::ready(conditions).is_some_and(|c| c.status == "True")
    };
    wait_for_instance(instances, child_name, "the child Ready", |i| {
        i.status
            .as_ref()
            .is_some_and(|status| ready(&status.conditions))
    })
    .await;
    operator_says(instances, operator, "its Ready child", |ready| {
        ready.status == "True"
    })
    .await;
}

/// Waits at most 10 s (well within the Operator controller's 5 min resync:
/// it watches what its Operators stand on) until Operator `operator`'s
/// Ready condition meets `check`.
async fn operator_says(
    instances: &Api<Instance>,
    operator: &str,
    what: &str,
    check: impl Fn(&k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition) -> bool,
) {
    let operators: Api<Operator> = Api::all(instances.clone().into_client());
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        let now = operators.get(operator).await.unwrap();
        let ready = now
            .status
            .as_ref()
            .and_then(|status| pakket_api::readiness::ready(&status.conditions));
        if ready.is_some_and(&check) {
            return;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "Operator {operator} did not follow {what} within 10 s: {ready:#?}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Operator `<scope>-etcd` in the single-namespace channel, at `version`,
/// as a user's apply would write it.
async fn apply_etcd_operator(scope: &Scope, version: &str) {
    Api::<pakket_resolveset::Operator>::all(scope.client.clone())
        .patch(
            &scope.name("etcd"),
            &PatchParams::apply("test").force(),
            &Patch::Apply(json!({
                "apiVersion": "operators.pakket.dev/v1alpha1", "kind": "Operator",
                "metadata": { "name": scope.name("etcd"), "labels": scope.labels() },
                "spec": {
                    "inputClass": scope.name("subscription"),
                    "catalog": {"name": scope.name("etcd-catalog"), "package": "etcd", "channel": "singlenamespace-alpha"},
                    "version": version,
                },
            })),
        )
        .await
        .unwrap();
}

/// Deletes the resolveset Instance `set` and waits until it is gone.
async fn remove_set(instances: &Api<Instance>, set: &str) {
    let _ = instances.delete(set, &DeleteParams::default()).await;
    eventually("the resolveset Instance is gone", || async {
        instances.get_opt(set).await.unwrap().is_none()
    })
    .await;
}

/// The uid of cluster-scoped `T` `name`, if it is there.
async fn uid_of<T>(client: &kube::Client, name: &str) -> Option<String>
where
    T: kube::Resource<Scope = k8s_openapi::ClusterResourceScope>
        + Clone
        + serde::de::DeserializeOwned
        + std::fmt::Debug,
    T::DynamicType: Default,
{
    Api::<T>::all(client.clone())
        .get_opt(name)
        .await
        .unwrap()
        .and_then(|object| object.uid())
}

#[tokio::test]
async fn deleting_a_catalog_uninstalls_nothing_and_upgrades_resume_when_it_is_back() {
    use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
    const CRD: &str = "etcdclusters.etcd.database.coreos.com";
    let _etcd = ETCD_CRDS.lock().await;
    let scope = Scope::new("resolveset-catalog-gone").await;
    let (_running, bundles) = operator_world(&scope).await;

    // etcd 0.9.2 installed through an Operator.
    apply_etcd_operator(&scope, "0.9.2").await;
    let instances: Api<Instance> = Api::all(scope.client.clone());
    let (set, child_name, child) = approved_etcd_child(&scope, &instances, &bundles[0].0).await;
    let objects = child.status.as_ref().unwrap().objects.len();
    let crd_uid = uid_of::<CustomResourceDefinition>(&scope.client, CRD).await;
    assert!(crd_uid.is_some(), "etcd's CRD is installed");

    // The Catalog goes. Nothing is uninstalled; the Input and the Operator
    // say which catalog what runs waits for.
    let catalogs: Api<pakket_resolveset::Catalog> = Api::all(scope.client.clone());
    let catalog_name = scope.name("etcd-catalog");
    let saved = catalogs.get(&catalog_name).await.unwrap();
    catalogs
        .delete(&catalog_name, &DeleteParams::default())
        .await
        .unwrap();
    let inputs: Api<Input> = Api::all(scope.client.clone());
    eventually("the Input says its catalog is unavailable", || async {
        inputs
            .get(&scope.name("etcd"))
            .await
            .unwrap()
            .condition("CatalogUnavailable")
            .is_some_and(|c| c.status == "True" && c.message.contains(&catalog_name))
    })
    .await;
    let operators: Api<pakket_resolveset::Operator> = Api::all(scope.client.clone());
    eventually("the Operator says its catalog is unavailable", || async {
        operators
            .get(&scope.name("etcd"))
            .await
            .unwrap()
            .condition("CatalogUnavailable")
            .is_some_and(|c| c.status == "True")
    })
    .await;
    // What runs still meets what the Operator asks for: nothing fails, as
    // OLM says Succeeded; only upgrades wait for the catalog.
    let input = inputs.get(&scope.name("etcd")).await.unwrap();
    let failed = input.condition("ResolutionFailed").unwrap();
    assert_eq!(
        (failed.status.as_str(), failed.reason.as_str()),
        ("False", "InstalledSatisfies"),
        "{}",
        failed.message
    );
    assert!(
        failed.message.contains("etcd 0.9.2 stays installed")
            && failed.message.contains("meets the request")
            && failed.message.contains(&catalog_name),
        "{}",
        failed.message
    );
    assert_eq!(input.status.as_ref().unwrap().instances.len(), 1);

    // A spec change the installed version still meets: still satisfied.
    apply_etcd_operator(&scope, ">=0.9.2").await;
    // Several passes of the Input controller and the set's provisioner.
    eventually(
        "the Input, judged for its new spec, is still satisfied",
        || async {
            let input = inputs.get(&scope.name("etcd")).await.unwrap();
            let judged = input
                .status
                .as_ref()
                .is_some_and(|status| status.observed_generation == input.metadata.generation);
            judged
                && input
                    .condition("ResolutionFailed")
                    .is_some_and(|c| c.reason == "InstalledSatisfies")
        },
    )
    .await;
    tokio::time::sleep(Duration::from_secs(3)).await;

    // Asking for what only the catalog has: that change waits, and says so.
    apply_etcd_operator(&scope, ">=0.9.4").await;
    eventually(
        "the Input says the change waits for its catalog",
        || async {
            inputs
                .get(&scope.name("etcd"))
                .await
                .unwrap()
                .condition("ResolutionFailed")
                .is_some_and(|c| c.status == "True" && c.reason == "CatalogUnavailable")
        },
    )
    .await;
    tokio::time::sleep(Duration::from_secs(3)).await;
    let kept = instances.get(&child_name).await.unwrap();
    assert_eq!(
        kept.uid(),
        child.uid(),
        "the child Instance is the same one"
    );
    assert_eq!(kept.spec.bundle.name, bundles[0].0, "still 0.9.2");
    assert!(condition_is(&kept, ConditionType::Installed, "True"));
    assert_eq!(kept.status.as_ref().unwrap().objects.len(), objects);
    assert_eq!(
        uid_of::<CustomResourceDefinition>(&scope.client, CRD).await,
        crd_uid,
        "etcd's CRD was not removed"
    );
    let set_content = instances.get(&set).await.unwrap();
    assert!(
        condition_is(&set_content, ConditionType::Installed, "True"),
        "{:?}",
        set_content.status
    );

    // The Catalog is back: the waiting upgrade goes through.
    support::create(
        &scope.client,
        &support::catalog(&scope, "etcd-catalog", saved.spec.source.clone(), 0),
    )
    .await;
    wait_for_instance(&instances, &child_name, "etcd upgraded to 0.9.4", |i| {
        i.spec.bundle.name == bundles[1].0 && condition_is(i, ConditionType::Installed, "True")
    })
    .await;
    eventually("the Input's catalog is served again", || async {
        inputs
            .get(&scope.name("etcd"))
            .await
            .unwrap()
            .condition("CatalogUnavailable")
            .is_some_and(|c| c.status == "False")
    })
    .await;
    pakket_testkit::capture(
        "operator-healthy",
        "operators.operators.pakket.dev",
        &scope.name("etcd"),
        None,
    );

    // Only deleting the Operator removes what it installed.
    operators
        .delete(&scope.name("etcd"), &DeleteParams::default())
        .await
        .unwrap();
    eventually("the child Instance is gone", || async {
        instances.get_opt(&child_name).await.unwrap().is_none()
    })
    .await;
    eventually("etcd's CRD is gone", || async {
        uid_of::<CustomResourceDefinition>(&scope.client, CRD)
            .await
            .is_none()
    })
    .await;
    remove_set(&instances, &set).await;
    support::cleanup(scope).await;
}

#[tokio::test]
async fn a_class_namespace_pattern_puts_each_package_in_its_own_namespace_with_the_class_labels() {
    let _etcd = ETCD_CRDS.lock().await;
    let scope = Scope::new("rs-ns-pattern").await;
    let (_running, bundles) = operator_world(&scope).await;
    // The admin's class: OLM's `<package>-system` (prefixed, so parallel
    // tests never share it), created restricted by Pod Security.
    let prefix = scope.name("ns");
    Api::<ProvisionerClass>::all(scope.client.clone())
        .patch(
            &scope.name("resolveset"),
            &PatchParams::default(),
            &Patch::Merge(json!({ "spec": { "parameters": {
                "installNamespace": format!("{prefix}-{{package}}-system"),
                "namespaceTemplate": { "labels": {
                    "pod-security.kubernetes.io/enforce": "baseline",
                    "test.pakket.dev/from": "class",
                } },
            } } })),
        )
        .await
        .unwrap();
    apply_etcd_operator(&scope, "0.9.2").await;
    let instances: Api<Instance> = Api::all(scope.client.clone());
    let (set, child_name, child) = approved_etcd_child(&scope, &instances, &bundles[0].0).await;
    let namespace = format!("{prefix}-etcd-system");
    assert_eq!(
        child.spec.config.as_ref().unwrap()["installNamespace"],
        json!(namespace)
    );
    let made = Api::<k8s_openapi::api::core::v1::Namespace>::all(scope.client.clone())
        .get(&namespace)
        .await
        .unwrap();
    let labels = made.metadata.labels.unwrap_or_default();
    assert_eq!(
        labels
            .get("pod-security.kubernetes.io/enforce")
            .map(String::as_str),
        Some("baseline"),
        "{labels:?}"
    );
    assert_eq!(
        labels.get("test.pakket.dev/from").map(String::as_str),
        Some("class")
    );
    Api::<k8s_openapi::api::apps::v1::Deployment>::namespaced(scope.client.clone(), &namespace)
        .get("etcd-operator")
        .await
        .expect("the operator runs in the package's namespace");

    Api::<pakket_resolveset::Operator>::all(scope.client.clone())
        .delete(&scope.name("etcd"), &DeleteParams::default())
        .await
        .unwrap();
    eventually("the child Instance is gone", || async {
        instances.get_opt(&child_name).await.unwrap().is_none()
    })
    .await;
    remove_set(&instances, &set).await;
    support::cleanup(scope).await;
}

#[tokio::test]
async fn an_operators_config_reaches_its_deployment_and_a_second_operator_for_the_package_is_refused_naming_the_owner()
 {
    let _etcd = ETCD_CRDS.lock().await;
    let scope = Scope::new("resolveset-operator-config").await;
    let (_running, bundles) = operator_world(&scope).await;

    // An Operator that says where etcd runs and how its Deployment looks.
    let namespace = scope.name("ops");
    let operators: Api<pakket_resolveset::Operator> = Api::all(scope.client.clone());
    let operator = |suffix: &str, namespace: &str| {
        json!({
            "apiVersion": "operators.pakket.dev/v1alpha1", "kind": "Operator",
            "metadata": { "name": scope.name(suffix), "labels": scope.labels() },
            "spec": {
                "inputClass": scope.name("subscription"),
                "catalog": {"name": scope.name("etcd-catalog"), "package": "etcd", "channel": "singlenamespace-alpha"},
                "version": "0.9.2",
                "config": {
                    "installNamespace": namespace,
                    "deploymentConfig": {"env": [{"name": "LOG_LEVEL", "value": "debug"}]},
                },
            },
        })
    };
    operators
        .patch(
            &scope.name("etcd"),
            &PatchParams::apply("test").force(),
            &Patch::Apply(operator("etcd", &namespace)),
        )
        .await
        .unwrap();
    let instances: Api<Instance> = Api::all(scope.client.clone());
    let (set, child_name, child) = approved_etcd_child(&scope, &instances, &bundles[0].0).await;
    let config = child.spec.config.clone().unwrap();
    assert_eq!(config["installNamespace"], json!(namespace));
    let deployment =
        Api::<k8s_openapi::api::apps::v1::Deployment>::namespaced(scope.client.clone(), &namespace)
            .get("etcd-operator")
            .await
            .unwrap();
    let pod = deployment.spec.unwrap().template.spec.unwrap();
    assert!(
        pod.containers.iter().all(|container| container
            .env
            .iter()
            .flatten()
            .any(|e| e.name == "LOG_LEVEL" && e.value.as_deref() == Some("debug"))),
        "the deploymentConfig's env is on every container"
    );

    // A second Operator for etcd elsewhere: told who owns the package; the
    // running etcd keeps its place.
    operators
        .patch(
            &scope.name("etcd-again"),
            &PatchParams::apply("test").force(),
            &Patch::Apply(operator("etcd-again", &scope.name("elsewhere"))),
        )
        .await
        .unwrap();
    eventually("the second Operator names the owner", || async {
        operators
            .get(&scope.name("etcd-again"))
            .await
            .unwrap()
            .condition("ConfigConflict")
            .is_some_and(|c| c.status == "True" && c.message.contains(&scope.name("etcd")))
    })
    .await;
    // It installs nothing and is not told it has what the first installed.
    let inputs: Api<Input> = Api::all(scope.client.clone());
    let refused = |suffix: &'static str| {
        let (inputs, name, owner) = (inputs.clone(), scope.name(suffix), scope.name("etcd"));
        async move {
            let Some(input) = inputs.get_opt(&name).await.unwrap() else {
                return false;
            };
            let said = input.condition("ResolutionFailed").cloned();
            said.is_some_and(|c| {
                c.status == "True"
                    && c.reason == "PackageOwnedByAnother"
                    && c.message.contains(&format!("Input {owner}"))
            }) && input
                .status
                .as_ref()
                .is_some_and(|s| s.instances.is_empty())
        }
    };
    eventually(
        "the second Operator's Input is refused, naming the first",
        || refused("etcd-again"),
    )
    .await;
    // So is a third with the very same config: one owner per package.
    operators
        .patch(
            &scope.name("etcd-same"),
            &PatchParams::apply("test").force(),
            &Patch::Apply(operator("etcd-same", &namespace)),
        )
        .await
        .unwrap();
    eventually("an Operator with the same config is refused too", || {
        refused("etcd-same")
    })
    .await;
    // Its Operator says so (it follows its Input a moment later).
    eventually(
        "the Operator shows its Input refused and nothing installed",
        || async {
            let same = operators.get(&scope.name("etcd-same")).await.unwrap();
            let status = same.status.unwrap_or_default();
            status.installed_version.is_none()
                && status
                    .components
                    .iter()
                    .any(|c| c.kind == "Input" && c.state == "PackageOwnedByAnother")
        },
    )
    .await;
    pakket_testkit::capture(
        "operator-degraded_package_owned_by_another",
        "operators.operators.pakket.dev",
        &scope.name("etcd-same"),
        None,
    );
    tokio::time::sleep(Duration::from_secs(2)).await;
    let kept = instances.get(&child_name).await.unwrap();
    assert_eq!(kept.uid(), child.uid());
    assert_eq!(
        kept.spec.config.unwrap()["installNamespace"],
        json!(namespace)
    );

    for suffix in ["etcd-same", "etcd-again", "etcd"] {
        operators
            .delete(&scope.name(suffix), &DeleteParams::default())
            .await
            .unwrap();
    }
    eventually("the child Instance is gone", || async {
        instances.get_opt(&child_name).await.unwrap().is_none()
    })
    .await;
    remove_set(&instances, &set).await;
    support::cleanup(scope).await;
}

/// OperatorRequest `<name>` in the scope's namespace for etcd 0.9.2.
fn etcd_request(scope: &Scope, name: &str, extra: Value) -> OperatorRequest {
    let mut request = json!({
        "apiVersion": "operators.pakket.dev/v1alpha1", "kind": "OperatorRequest",
        "metadata": { "name": name, "namespace": scope.namespace, "labels": scope.labels() },
        "spec": {
            "catalog": {"name": scope.name("etcd-catalog"), "package": "etcd", "channel": "singlenamespace-alpha"},
            "version": "0.9.2",
        },
    });
    if let (Some(metadata), Some(extra)) = (
        request["metadata"].as_object_mut(),
        extra.get("metadata").and_then(Value::as_object),
    ) {
        metadata.extend(extra.clone());
    }
    if let (Some(spec), Some(extra)) = (
        request["spec"].as_object_mut(),
        extra.get("spec").and_then(Value::as_object),
    ) {
        spec.extend(extra.clone());
    }
    serde_json::from_value(request).unwrap()
}

/// The request's condition `type_` once it has one matching `reason`.
async fn request_says(
    requests: &Api<OperatorRequest>,
    name: &str,
    type_: &str,
    reason: &str,
) -> k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition {
    let started = std::time::Instant::now();
    loop {
        let request = requests.get(name).await.unwrap();
        if let Some(found) = request.condition(type_).filter(|c| c.reason == reason) {
            return found.clone();
        }
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "request {name}: no {type_} {reason} in 60 s: {:?}",
            request.status
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

#[tokio::test]
async fn a_namespace_owners_request_becomes_her_operator_and_nothing_more() {
    // Alice owns the scope's namespace (`admin` there) and asks for the
    // etcd operator watching it: pakket-resolveset, as its ServiceAccount,
    // writes an Operator on her behalf, its Input carries her, the set's
    // entry is stamped for her, and the request mirrors the Instance that
    // installs it. Mallory may write requests but owns no namespace: hers
    // is refused with nothing written; she cannot write an Operator
    // herself, nor pass a request off as alice's. An Operator the
    // controller did not write is never adopted nor deleted.
    let _etcd = ETCD_CRDS.lock().await;
    let scope = Scope::new("resolveset-operator-request").await;
    pakket_testkit::install_crds(&scope.client).await.unwrap();
    let shipped = Shipped::new(&scope).await;
    let (inputs_hooks, children_hooks) = webhooks_for(&scope, &shipped).await;
    let key = inputs_hooks.record_key();
    let _running = shipped.start_controllers(&scope, Some(key.clone())).await;
    let child_class = scope.name("registry-v1");
    start_resolveset_as(&scope, shipped.resolveset.clone(), &child_class, Some(key)).await;
    serve_etcd_catalog(&scope).await;
    requests_subscription_class(&scope).await;
    for user in ["alice", "mallory"] {
        support::grant(
            &scope,
            user,
            json!([
                {"apiGroups": ["operators.pakket.dev"], "resources": ["operatorrequests"], "verbs": ["get", "list", "create", "delete"]},
            ]),
        )
        .await;
    }
    let owner: k8s_openapi::api::rbac::v1::RoleBinding = serde_json::from_value(json!({
        "metadata": { "name": scope.name("alice-admin"), "namespace": scope.namespace, "labels": scope.labels() },
        "roleRef": { "apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "admin" },
        "subjects": [{ "apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "alice" }],
    }))
    .unwrap();
    Api::<k8s_openapi::api::rbac::v1::RoleBinding>::namespaced(
        scope.client.clone(),
        &scope.namespace,
    )
    .create(&PostParams::default(), &owner)
    .await
    .unwrap();
    let alice = scope.cluster.client_as("alice").await;
    let mallory = scope.cluster.client_as("mallory").await;
    let alices: Api<OperatorRequest> = Api::namespaced(alice.clone(), &scope.namespace);
    let requests: Api<OperatorRequest> = Api::namespaced(scope.client.clone(), &scope.namespace);
    let operators: Api<Operator> = Api::all(scope.client.clone());
    let inputs: Api<Input> = Api::all(scope.client.clone());
    let instances: Api<Instance> = Api::all(scope.client.clone());

    // Alice's request: an Operator on her behalf, installed into and
    // watching her namespace, its Input hers.
    eventually("alice may write requests", || async {
        alices
            .create(
                &PostParams::default(),
                &etcd_request(&scope, "etcd", json!({})),
            )
            .await
            .is_ok()
    })
    .await;
    let accepted = request_says(&requests, "etcd", "Accepted", "OperatorWritten").await;
    assert_eq!(accepted.status, "True");
    let etcd_operator = request_operator_name(&requests, "etcd").await;
    let operator = operators.get(&etcd_operator).await.unwrap();
    let config = operator.spec.config.clone().unwrap();
    assert_eq!(
        config.install_namespace.as_deref(),
        Some(scope.namespace.as_str())
    );
    assert_eq!(config.watch_namespaces, Some(vec![scope.namespace.clone()]));
    assert_eq!(operator.spec.input_class, scope.name("subscription"));
    let record = |annotations: &std::collections::BTreeMap<String, String>, key: &str| {
        pakket_api::CreatorRecord::from_annotation(&annotations[key])
            .unwrap()
            .username
    };
    assert_eq!(
        record(
            operator.annotations(),
            pakket_api::LAST_CHANGED_BY_ANNOTATION
        ),
        "alice"
    );
    assert_eq!(
        record(operator.annotations(), pakket_api::CREATED_BY_ANNOTATION),
        pakket_testkit::shipped::RESOLVESET.user()
    );
    eventually("the Operator's Input carries alice", || async {
        inputs
            .get_opt(&etcd_operator)
            .await
            .unwrap()
            .is_some_and(|input| {
                input
                    .metadata
                    .annotations
                    .as_ref()
                    .is_some_and(|a| a.contains_key(pakket_api::LAST_CHANGED_BY_ANNOTATION))
                    && recorded_on(&input, pakket_api::LAST_CHANGED_BY_ANNOTATION) == "alice"
            })
    })
    .await;
    // No class installs the children here (none exists), so nothing
    // judges alice's request but the set's approver: the set waits for a
    // person, and once it is approved, the Instance installing etcd is
    // alice's request, and the request says what that Instance says.
    let set = scope.name("resolveset");
    eventually("the set waits for its approver", || async {
        instances.get_opt(&set).await.unwrap().is_some_and(|i| {
            pakket_testkit::reason_is(&i, ConditionType::Approved, "ApprovalPending")
        })
    })
    .await;
    eventually(
        "the request says the set waits for its approver",
        || async {
            requests
                .get("etcd")
                .await
                .unwrap()
                .condition("Approved")
                .is_some_and(|waiting| {
                    waiting.status == "Unknown"
                        && waiting
                            .message
                            .contains("the cluster's set waits for a cluster admin to approve it")
                })
        },
    )
    .await;
    approve(&instances, &set).await;
    let child = format!("{set}-etcd");
    let installing = wait_for_instance(&instances, &child, "the set's etcd child", |_| true).await;
    assert_eq!(
        pakket_api::requester(&installing, Some(&inputs_hooks.record_key()))
            .unwrap()
            .0
            .username,
        "alice"
    );
    // No registry-v1 runs here: the Instance's status is written as the
    // runtime would, and the request mirrors it.
    let pending = "policy team-operators asks a person: no rule matched";
    instances
        .patch_status(
            &child,
            &PatchParams::default(),
            &Patch::Merge(json!({ "status": { "conditions": [{
                "type": "Approved", "status": "False", "reason": "ApprovalPending",
                "message": pending, "lastTransitionTime": "2026-11-28T10:00:00Z",
            }] } })),
        )
        .await
        .unwrap();
    let mirrored = request_says(&requests, "etcd", "Approved", "ApprovalPending").await;
    assert_eq!(mirrored.message, pending);
    assert_eq!(
        requests.get("etcd").await.unwrap().status.unwrap().instance,
        Some(child.clone())
    );

    // Mallory owns no namespace: refused, no Operator written for her.
    let mallorys: Api<OperatorRequest> = Api::namespaced(mallory.clone(), &scope.namespace);
    eventually("mallory may write requests", || async {
        mallorys
            .create(
                &PostParams::default(),
                &etcd_request(&scope, "mine", json!({})),
            )
            .await
            .is_ok()
    })
    .await;
    let refusal = request_says(&requests, "mine", "Accepted", "NotYourNamespace").await;
    assert!(
        refusal
            .message
            .contains("mallory may not create RoleBindings"),
        "{refusal:?}"
    );
    assert!(
        operators
            .get_opt(&request_operator_name(&requests, "mine").await)
            .await
            .unwrap()
            .is_none()
    );
    // Nor may she run it elsewhere, write an Operator, or claim alice asked.
    let elsewhere = etcd_request(
        &scope,
        "elsewhere",
        json!({ "spec": { "installMode": "SingleNamespace", "installNamespace": "kube-system" } }),
    );
    mallorys
        .create(&PostParams::default(), &elsewhere)
        .await
        .unwrap();
    request_says(&requests, "elsewhere", "Accepted", "NotYourNamespace").await;
    let direct: Operator = serde_json::from_value(json!({
        "apiVersion": "operators.pakket.dev/v1alpha1", "kind": "Operator",
        "metadata": { "name": scope.name("mallorys"), "labels": scope.labels() },
        "spec": { "catalog": {"name": scope.name("etcd-catalog"), "package": "etcd"} },
    }))
    .unwrap();
    assert!(refused(
        Api::<Operator>::all(mallory.clone())
            .create(&PostParams::default(), &direct)
            .await
    ));
    let alices_record = requests
        .get("etcd")
        .await
        .unwrap()
        .annotations()
        .get(pakket_api::CREATED_BY_ANNOTATION)
        .cloned()
        .unwrap();
    let forged = etcd_request(
        &scope,
        "forged",
        json!({ "metadata": { "annotations": { pakket_api::CREATED_BY_ANNOTATION: alices_record } } }),
    );
    assert!(refused(
        mallorys.create(&PostParams::default(), &forged).await
    ));

    // An Operator or Input at a request's name that the controller did
    // not write is neither taken over nor deleted: see
    // `a_request_stands_only_while_every_namespace_is_the_requesters_and_names_are_hers`.

    // Deleting a request removes the Operator written for it, and only it.
    for name in ["etcd", "mine", "elsewhere"] {
        requests
            .delete(name, &DeleteParams::default())
            .await
            .unwrap();
    }
    eventually("the requests are gone", || async {
        requests
            .list(&Default::default())
            .await
            .unwrap()
            .items
            .is_empty()
    })
    .await;
    // The Operator is deleted in the foreground, so it may outlive its
    // request for as long as its own dependents take to go.
    eventually("the request's Operator is gone", || async {
        operators.get_opt(&etcd_operator).await.unwrap().is_none()
    })
    .await;
    let _ = instances.delete(&set, &DeleteParams::default()).await;
    for user in ["alice", "mallory"] {
        support::revoke(&scope, user).await;
    }
    children_hooks.stop().await.unwrap();
    inputs_hooks.stop().await.unwrap();
    support::cleanup(scope).await;
}

/// The name the controller gave a request's Operator and Input before it
/// carried the request's UID: anyone could compute it from the namespace
/// and the request's name.
fn predictable_name(namespace: &str, name: &str) -> String {
    use sha2::Digest as _;
    let digest = hex::encode(sha2::Sha256::digest(
        format!("{namespace}/{name}").as_bytes(),
    ));
    format!("request-{}", &digest[..20])
}

/// The name the controller uses for request `name` in `namespace`, from
/// its UID.
async fn request_operator_name(requests: &Api<OperatorRequest>, name: &str) -> String {
    let request = requests.get(name).await.unwrap();
    operator_name(
        &request.namespace().unwrap(),
        name,
        &request.metadata.uid.unwrap(),
    )
}

/// An Input of the scope asking for etcd, named `name`.
fn squatting_input(scope: &Scope, name: &str) -> Input {
    let mut input = Input::new(
        name,
        InputSpec {
            config: None,
            input_class: scope.name("subscription"),
            constraints: serde_json::from_value(json!([
                {"type": "olm.catalog", "value": {"name": scope.name("etcd-catalog"), "package": "etcd"}},
            ]))
            .unwrap(),
        },
    );
    input.metadata.labels = Some(scope.labels());
    input
}

/// `user` is `admin` in `namespace` (she owns it).
async fn own_namespace(scope: &Scope, user: &str, namespace: &str) {
    let owner: k8s_openapi::api::rbac::v1::RoleBinding = serde_json::from_value(json!({
        "metadata": { "name": scope.name(&format!("{user}-admin")), "namespace": namespace, "labels": scope.labels() },
        "roleRef": { "apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "admin" },
        "subjects": [{ "apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": user }],
    }))
    .unwrap();
    Api::<k8s_openapi::api::rbac::v1::RoleBinding>::namespaced(scope.client.clone(), namespace)
        .create(&PostParams::default(), &owner)
        .await
        .unwrap();
}

/// Whether an Input someone else wrote is as she wrote it: no owner
/// added, nothing of pakket-resolveset's in it (its status aside: the
/// Input controller reports on every Input).
fn untouched_input(input: &Input) -> bool {
    input.owner_references().is_empty()
        && !input
            .metadata
            .managed_fields
            .iter()
            .flatten()
            .filter(|entry| entry.subresource.is_none())
            .any(|entry| {
                entry
                    .manager
                    .as_deref()
                    .is_some_and(|m| m.starts_with("pakket-resolveset"))
            })
}

#[tokio::test]
async fn a_request_stands_only_while_every_namespace_is_the_requesters_and_names_are_hers() {
    // Attacks on OperatorRequest, with pakket-resolveset and the webhooks
    // as their ServiceAccounts on the shipped RBAC. Erin owns namespace
    // `<scope>-erin`; the scope's namespace is another team's, where she
    // may write OperatorRequests but not RoleBindings. Mallory may write
    // Inputs. (a) Erin's request in the other team's namespace, running
    // the operator in hers, would have it watch theirs: refused, naming
    // it, nothing written. (c) Inputs and Operators at the names anyone
    // could compute are ignored: her request writes its own under names
    // carrying its UID. (b) She loses her namespace: the Operator and the
    // Input written for her are deleted, and the request says so. (c) An
    // Input squatted at her request's name (once its UID is known) is
    // named on the request, neither adopted nor deleted.
    let scope = Scope::new("resolveset-request-ownership").await;
    pakket_testkit::install_crds(&scope.client).await.unwrap();
    let shipped = Shipped::new(&scope).await;
    let (inputs_hooks, children_hooks) = webhooks_for(&scope, &shipped).await;
    let key = inputs_hooks.record_key();
    let _running = shipped.start_controllers(&scope, Some(key)).await;
    requests_subscription_class(&scope).await;
    let hers = scoped_namespace(&scope, "erin").await;
    support::grant(
        &scope,
        "erin",
        json!([
            {"apiGroups": ["operators.pakket.dev"], "resources": ["operatorrequests"], "verbs": ["get", "list", "create", "delete"]},
        ]),
    )
    .await;
    grant_inputs(&scope, "mallory").await;
    own_namespace(&scope, "erin", &hers).await;
    let erin = scope.cluster.client_as("erin").await;
    let mallory = scope.cluster.client_as("mallory").await;
    let operators: Api<Operator> = Api::all(scope.client.clone());
    let inputs: Api<Input> = Api::all(scope.client.clone());
    let theirs: Api<OperatorRequest> = Api::namespaced(scope.client.clone(), &scope.namespace);
    let in_hers: Api<OperatorRequest> = Api::namespaced(scope.client.clone(), &hers);

    // (a) Watching another team's namespace is refused, naming it.
    let watching = etcd_request(
        &scope,
        "watching",
        json!({ "spec": { "installMode": "SingleNamespace", "installNamespace": hers } }),
    );
    eventually("erin may write requests", || async {
        Api::<OperatorRequest>::namespaced(erin.clone(), &scope.namespace)
            .create(&PostParams::default(), &watching)
            .await
            .is_ok()
    })
    .await;
    let refused = request_says(&theirs, "watching", "Accepted", "NotYourNamespace").await;
    assert!(
        refused.status == "False"
            && refused.message.contains(&format!(
                "erin may not create RoleBindings in namespace {}",
                scope.namespace
            ))
            && refused.message.contains("watch")
            && refused.message.contains("nothing was written"),
        "{refused:?}"
    );
    let watching_name = request_operator_name(&theirs, "watching").await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert!(operators.get_opt(&watching_name).await.unwrap().is_none());
    assert!(inputs.get_opt(&watching_name).await.unwrap().is_none());

    // (c) The names anyone could compute are taken beforehand, an Input by
    // mallory and an Operator by an admin: her request goes on under its own.
    let predictable = predictable_name(&hers, "etcd");
    eventually("mallory may write Inputs", || async {
        Api::<Input>::all(mallory.clone())
            .create(
                &PostParams::default(),
                &squatting_input(&scope, &predictable),
            )
            .await
            .is_ok()
    })
    .await;
    let admins: Operator = serde_json::from_value(json!({
        "apiVersion": "operators.pakket.dev/v1alpha1", "kind": "Operator",
        "metadata": { "name": predictable, "labels": scope.labels(), "annotations": {
            pakket_operators_api::request::REQUEST_ANNOTATION: format!("{hers}/etcd"),
        } },
        "spec": { "inputClass": scope.name("subscription"), "catalog": {"name": scope.name("etcd-catalog"), "package": "etcd"} },
    }))
    .unwrap();
    operators
        .create(&PostParams::default(), &admins)
        .await
        .unwrap();
    Api::<OperatorRequest>::namespaced(erin.clone(), &hers)
        .create(
            &PostParams::default(),
            &etcd_request(&scope, "etcd", json!({ "metadata": { "namespace": hers } })),
        )
        .await
        .unwrap();
    let accepted = request_says(&in_hers, "etcd", "Accepted", "OperatorWritten").await;
    assert_eq!(accepted.status, "True");
    let written = request_operator_name(&in_hers, "etcd").await;
    assert_ne!(written, predictable);
    let operator = operators.get(&written).await.unwrap();
    assert_eq!(
        operator.spec.config.unwrap().watch_namespaces,
        Some(vec![hers.clone()])
    );
    let input = eventually_some("the Input written for erin", || async {
        inputs.get_opt(&written).await.unwrap()
    })
    .await;
    assert!(
        input
            .owner_references()
            .iter()
            .any(|o| Some(&o.uid) == operator.metadata.uid.as_ref())
    );
    let squatted = inputs.get(&predictable).await.unwrap();
    assert!(untouched_input(&squatted), "{:?}", squatted.metadata);
    let kept = operators.get(&predictable).await.unwrap();
    assert!(
        kept.spec.config.is_none()
            && !kept
                .annotations()
                .contains_key(pakket_operators_api::request::REQUEST_SEAL_ANNOTATION)
    );

    // (b) Erin loses her namespace: what was written for her goes, and
    // the request says why; what others wrote stays.
    Api::<k8s_openapi::api::rbac::v1::RoleBinding>::namespaced(scope.client.clone(), &hers)
        .delete(&scope.name("erin-admin"), &DeleteParams::default())
        .await
        .unwrap();
    let withdrawn = request_says(&in_hers, "etcd", "Accepted", "Withdrawn").await;
    assert!(
        withdrawn.status == "False"
            && withdrawn.message.contains(&format!(
                "erin may not create RoleBindings in namespace {hers}"
            ))
            && withdrawn.message.contains(&format!("Operator/{written}"))
            && withdrawn.message.contains(&format!("Input/{written}")),
        "{withdrawn:?}"
    );
    eventually(
        "the Operator and Input written for erin are gone",
        || async {
            operators.get_opt(&written).await.unwrap().is_none()
                && inputs.get_opt(&written).await.unwrap().is_none()
        },
    )
    .await;
    assert!(inputs.get_opt(&predictable).await.unwrap().is_some());
    assert!(operators.get_opt(&predictable).await.unwrap().is_some());
    // It keeps saying so while she has no rights there.
    tokio::time::sleep(Duration::from_secs(20)).await;
    let still = in_hers.get("etcd").await.unwrap();
    assert_eq!(still.condition("Accepted").unwrap().reason, "Withdrawn");
    assert!(operators.get_opt(&written).await.unwrap().is_none());

    // (c) A request's own name, once its UID is known, squatted by mallory
    // while the request waits: named on the request, never adopted, never
    // deleted, and no Operator written.
    // An Operator squatted the same way (by an admin) is named too.
    for name in ["again", "more"] {
        Api::<OperatorRequest>::namespaced(erin.clone(), &hers)
            .create(
                &PostParams::default(),
                &etcd_request(&scope, name, json!({ "metadata": { "namespace": hers } })),
            )
            .await
            .unwrap();
        request_says(&in_hers, name, "Accepted", "NotYourNamespace").await;
    }
    let again = request_operator_name(&in_hers, "again").await;
    Api::<Input>::all(mallory.clone())
        .create(&PostParams::default(), &squatting_input(&scope, &again))
        .await
        .unwrap();
    let more = request_operator_name(&in_hers, "more").await;
    let mut admins_too = admins.clone();
    admins_too.metadata.name = Some(more.clone());
    admins_too.metadata.annotations = Some(BTreeMap::from([(
        pakket_operators_api::request::REQUEST_ANNOTATION.to_owned(),
        format!("{hers}/more"),
    )]));
    operators
        .create(&PostParams::default(), &admins_too)
        .await
        .unwrap();
    own_namespace(&scope, "erin", &hers).await;
    let taken = request_says(&in_hers, "again", "Accepted", "NameTaken").await;
    assert!(
        taken.status == "False" && taken.message.contains(&format!("Input/{again}")),
        "{taken:?}"
    );
    let taken = request_says(&in_hers, "more", "Accepted", "NameTaken").await;
    assert!(
        taken.status == "False" && taken.message.contains(&format!("Operator/{more}")),
        "{taken:?}"
    );
    assert!(operators.get_opt(&again).await.unwrap().is_none());
    let squatted = inputs.get(&again).await.unwrap();
    assert!(untouched_input(&squatted), "{:?}", squatted.metadata);
    for name in ["again", "more"] {
        in_hers
            .delete(name, &DeleteParams::default())
            .await
            .unwrap();
    }
    eventually("the squatted requests are gone", || async {
        in_hers.get_opt("again").await.unwrap().is_none()
            && in_hers.get_opt("more").await.unwrap().is_none()
    })
    .await;
    assert!(untouched_input(&inputs.get(&again).await.unwrap()));
    let kept = operators.get(&more).await.unwrap();
    assert!(
        kept.spec.config.is_none()
            && !kept
                .annotations()
                .contains_key(pakket_operators_api::request::REQUEST_SEAL_ANNOTATION)
    );

    for request in [(&theirs, "watching"), (&in_hers, "etcd")] {
        let _ = request.0.delete(request.1, &DeleteParams::default()).await;
    }
    eventually("the requests are gone", || async {
        theirs.get_opt("watching").await.unwrap().is_none()
            && in_hers.get_opt("etcd").await.unwrap().is_none()
    })
    .await;
    for name in [&predictable, &more] {
        let _ = operators.delete(name, &DeleteParams::default()).await;
    }
    let _ = Api::<k8s_openapi::api::core::v1::Namespace>::all(scope.client.clone())
        .delete(&hers, &DeleteParams::default())
        .await;
    for user in ["erin", "mallory"] {
        support::revoke(&scope, user).await;
    }
    children_hooks.stop().await.unwrap();
    inputs_hooks.stop().await.unwrap();
    support::cleanup(scope).await;
}

/// An Input for etcd at `version` (a version or a range), in the test's
/// scope, as `client` writes it.
async fn etcd_input_as(client: &kube::Client, scope: &Scope, name: &str, version: &str) -> Input {
    let input: Input = serde_json::from_value(json!({
        "apiVersion": "resolve.pakket.dev/v1alpha1", "kind": "Input",
        "metadata": { "name": name, "labels": scope.labels() },
        "spec": {
            "inputClass": scope.name("subscription"),
            "constraints": [
                {"type": "olm.catalog", "value": {"name": scope.name("etcd-catalog"), "package": "etcd"}},
                {"type": "olm.packageVersion", "value": {"package": "etcd", "version": version}},
            ],
        },
    }))
    .unwrap();
    Api::<Input>::all(client.clone())
        .create(&PostParams::default(), &input)
        .await
        .unwrap()
}

/// Waits until Input `name` says `reason` for its current generation, and
/// returns it.
async fn input_says(inputs: &Api<Input>, name: &str, reason: &str) -> Input {
    let mut last = None;
    for _ in 0..600 {
        let input = inputs.get(name).await.unwrap();
        if input.condition("ResolutionFailed").is_some_and(|c| {
            c.reason == reason && c.observed_generation == input.metadata.generation
        }) {
            return input;
        }
        last = input.status;
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("Input {name} does not say {reason} within 60 s: {last:#?}");
}

/// The Input once it waits on a conflict naming the request with `uid`.
async fn conflict_names(inputs: &Api<Input>, name: &str, uid: &str) -> Input {
    let mut last = None;
    for _ in 0..600 {
        let input = input_says(inputs, name, "ConflictWaitsForDecision").await;
        let conflict = input.status.as_ref().and_then(|s| s.conflict.as_ref());
        if conflict.is_some_and(|c| c.with.iter().any(|with| with == uid)) {
            return input;
        }
        last = input.status;
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("Input {name} does not wait on a conflict with {uid} within 60 s: {last:#?}");
}

/// The packages and versions of the set the Input controller wrote.
async fn set_versions(scope: &Scope) -> Vec<(String, String)> {
    let Some(instance) = Api::<Instance>::all(scope.client.clone())
        .get_opt(&scope.name("resolveset"))
        .await
        .unwrap()
    else {
        return Vec::new();
    };
    let mount = instance.spec.bundle.spec.unwrap().volume_mounts[0].clone();
    let Some(config_map) = Api::<ConfigMap>::namespaced(scope.client.clone(), &scope.namespace)
        .get_opt(&mount.config_map.name)
        .await
        .unwrap()
    else {
        return Vec::new();
    };
    let text = &config_map.data.unwrap()[pakket_resolveset::set::resolved_set::FILE];
    pakket_resolveset::set::resolved_set::from_bytes(text.as_bytes())
        .unwrap()
        .into_iter()
        .map(|entry| (entry.package_name, entry.version))
        .collect()
}

#[tokio::test]
async fn conflicting_requests_both_wait_until_a_person_chooses_and_no_writer_steers_it() {
    // Alice and Bob may each write Inputs. Alice asks for etcd 0.9.2, Bob
    // for >=0.9.4: alone each resolves, together they cannot. Alice names
    // and times her Input every way she can; Bob is never refused silently
    // and never shown what she asked for; she cannot choose herself, even
    // with the status subresource; only a person an admin bound the
    // shipped pakket-input-decider role to chooses, in her own name. The
    // webhooks and pakket-resolveset run with deploy/'s rights.
    // Data: the etcd package of fbc/community-operators-prod-derived
    // (see `serve_etcd_catalog`).
    let scope = Scope::new("resolveset-conflicts").await;
    pakket_testkit::install_crds(&scope.client).await.unwrap();
    let shipped = Shipped::new(&scope).await;
    let (inputs_hooks, children_hooks) = webhooks_for(&scope, &shipped).await;
    let _running = shipped
        .start_controllers(&scope, Some(inputs_hooks.record_key()))
        .await;
    serve_etcd_catalog(&scope).await;
    support::subscription_class(&scope).await;
    let writer = json!([
        {"apiGroups": ["resolve.pakket.dev"], "resources": ["inputs"], "verbs": ["get", "list", "create", "update", "patch", "delete"]},
    ]);
    support::grant(&scope, "alice", writer.clone()).await;
    support::grant(&scope, "bob", writer).await;
    support::grant(
        &scope,
        "carol",
        pakket_testkit::shipped::example_rules("pakket-input-decider"),
    )
    .await;
    let (alice, bob, carol) = (
        scope.cluster.client_as("alice").await,
        scope.cluster.client_as("bob").await,
        scope.cluster.client_as("carol").await,
    );
    let inputs: Api<Input> = Api::all(scope.client.clone());
    let bobs = scope.name("zz-bob");
    etcd_input_as(&bob, &scope, &bobs, ">=0.9.4").await;
    // Alone, Bob's resolves.
    input_says(&inputs, &bobs, "Resolved").await;
    inputs
        .delete(&bobs, &DeleteParams::default())
        .await
        .unwrap();
    eventually("Bob's first Input is gone", || async {
        inputs.get_opt(&bobs).await.unwrap().is_none()
    })
    .await;
    eventually("the set is empty again", || async {
        set_versions(&scope).await.is_empty()
    })
    .await;

    // Alice first by name and by time, then Bob; then Alice again, written
    // after Bob. Every way round, both wait and each is told why.
    let alices = scope.name("aa-alice");
    etcd_input_as(&alice, &scope, &alices, "0.9.2").await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    let bob_input = etcd_input_as(&bob, &scope, &bobs, ">=0.9.4").await;
    let bob_uid = bob_input.metadata.uid.clone().unwrap();
    for round in ["alice first", "alice again, after bob"] {
        let alice_now = input_says(&inputs, &alices, "ConflictWaitsForDecision").await;
        let alice_uid = alice_now.metadata.uid.clone().unwrap();
        // Bob's own spec did not change, so his status names the Alice of
        // this round only once the controller has resolved again.
        let bob_now = conflict_names(&inputs, &bobs, &alice_uid).await;
        let told = bob_now
            .condition("ResolutionFailed")
            .unwrap()
            .message
            .clone();
        assert!(told.contains("1 other request"), "{round}: {told}");
        for secret in ["0.9.2", "aa-alice", "alice"] {
            assert!(
                !told.contains(secret),
                "{round}: Bob is shown {secret:?}: {told}"
            );
        }
        let conflict = bob_now.status.clone().unwrap().conflict.unwrap();
        assert_eq!(
            (conflict.standing.as_str(), conflict.with),
            ("Waiting", vec![alice_uid])
        );
        assert!(
            set_versions(&scope)
                .await
                .iter()
                .all(|(package, _)| package != "etcd"),
            "{round}: nothing of etcd is chosen while both wait"
        );
        if round == "alice first" {
            Api::<Input>::all(alice.clone())
                .delete(&alices, &DeleteParams::default())
                .await
                .unwrap();
            eventually("Alice's first Input is gone", || async {
                inputs.get_opt(&alices).await.unwrap().is_none()
            })
            .await;
            etcd_input_as(&alice, &scope, &alices, "0.9.2").await;
        }
    }
    let alice_uid = inputs.get(&alices).await.unwrap().metadata.uid.unwrap();

    // Alice chooses herself: no right to the status; and with it (an admin
    // who gave it by mistake), the webhooks still want `approve`.
    let generation = inputs.get(&alices).await.unwrap().metadata.generation;
    let choose = |by: &str, over: &str| json!({ "status": { "decision": { "chosenBy": by, "generation": generation, "over": [over] } } });
    let as_alice: Api<Input> = Api::all(alice.clone());
    assert!(refused(
        as_alice
            .patch_status(
                &alices,
                &PatchParams::default(),
                &Patch::Merge(&choose("alice", &bob_uid))
            )
            .await
    ));
    // Her Input writer's rights again, with the status subresource.
    support::revoke(&scope, "alice").await;
    support::grant(
        &scope,
        "alice",
        json!([
            {"apiGroups": ["resolve.pakket.dev"], "resources": ["inputs"], "verbs": ["get", "list", "create", "update", "patch", "delete"]},
            {"apiGroups": ["resolve.pakket.dev"], "resources": ["inputs/status"], "verbs": ["get", "patch", "update"]},
        ]),
    )
    .await;
    let with_status = eventually_some("Alice's status write reaches the webhooks", || async {
        match as_alice
            .patch_status(
                &alices,
                &PatchParams::default(),
                &Patch::Merge(&choose("alice", &bob_uid)),
            )
            .await
        {
            Err(kube::Error::Api(status)) if status.message.contains("may not choose") => {
                Some(status)
            }
            _ => None,
        }
    })
    .await;
    assert_eq!(with_status.code, 403, "{with_status:?}");
    // Carol, the decider, may not write a decision in another's name.
    let as_carol: Api<Input> = Api::all(carol.clone());
    let bob_generation = inputs.get(&bobs).await.unwrap().metadata.generation;
    let forged = json!({ "status": { "decision": { "chosenBy": "admin", "generation": bob_generation, "over": [alice_uid] } } });
    let refusal = as_carol
        .patch_status(&bobs, &PatchParams::default(), &Patch::Merge(&forged))
        .await
        .unwrap_err();
    assert!(
        format!("{refusal}").contains("names the user who writes it"),
        "{refusal}"
    );
    // Nothing of it reached the Inputs.
    for name in [&alices, &bobs] {
        assert!(
            inputs
                .get(name)
                .await
                .unwrap()
                .status
                .unwrap()
                .decision
                .is_none()
        );
    }

    // Carol chooses Bob's, in her name: his installs, Alice's is told a
    // person chose another.
    let decided = json!({ "status": { "decision": { "chosenBy": "carol", "generation": bob_generation, "over": [alice_uid] } } });
    as_carol
        .patch_status(&bobs, &PatchParams::default(), &Patch::Merge(&decided))
        .await
        .unwrap();
    let chosen = input_says(&inputs, &bobs, "Resolved").await;
    let words = chosen
        .condition("ResolutionFailed")
        .unwrap()
        .message
        .clone();
    assert!(
        words.contains("chosen by carol over 1 conflicting request(s)"),
        "{words}"
    );
    let lost = input_says(&inputs, &alices, "AnotherRequestChosen").await;
    assert_eq!(lost.status.unwrap().conflict.unwrap().with, [bob_uid]);
    eventually("the set holds Bob's etcd", || async {
        set_versions(&scope)
            .await
            .iter()
            .any(|(package, version)| package == "etcd" && version == "0.9.4")
    })
    .await;
    // The decision stays Carol's: the controller never wrote over it.
    let record = inputs
        .get(&bobs)
        .await
        .unwrap()
        .status
        .unwrap()
        .decision
        .unwrap();
    assert_eq!(record.chosen_by, "carol");

    for name in [&alices, &bobs] {
        let _ = inputs.delete(name, &DeleteParams::default()).await;
    }
    let _ = Api::<Instance>::all(scope.client.clone())
        .delete(&scope.name("resolveset"), &DeleteParams::default())
        .await;
    for user in ["alice", "bob", "carol"] {
        support::revoke(&scope, user).await;
    }
    children_hooks.stop().await.unwrap();
    inputs_hooks.stop().await.unwrap();
    support::cleanup(scope).await;
}

/// Namespace `<scope>-<team>`, owned by `user` (`admin` there) with the
/// request rights deploy/rbac/examples.yaml aggregates to `admin`
/// (ClusterRole pakket-operator-requests, as shipped); its name.
async fn team_namespace(scope: &Scope, team: &str, user: &str) -> String {
    let name = scoped_namespace(scope, team).await;
    own_namespace(scope, user, &name).await;
    grant_in(
        scope,
        &name,
        "operator-requests",
        user,
        pakket_testkit::shipped::example_rules("pakket-operator-requests"),
    )
    .await;
    name
}

/// Namespace `<scope>-<suffix>`, labelled with the scope; its name.
async fn scoped_namespace(scope: &Scope, suffix: &str) -> String {
    let name = scope.name(suffix);
    let namespace: k8s_openapi::api::core::v1::Namespace = serde_json::from_value(json!({
        "metadata": { "name": name, "labels": scope.labels() },
    }))
    .unwrap();
    Api::<k8s_openapi::api::core::v1::Namespace>::all(scope.client.clone())
        .create(&PostParams::default(), &namespace)
        .await
        .unwrap();
    name
}

/// Role `name` in `namespace` with `rules`, bound to `user`.
async fn grant_in(scope: &Scope, namespace: &str, name: &str, user: &str, rules: Value) {
    let role: k8s_openapi::api::rbac::v1::Role = serde_json::from_value(json!({
        "metadata": { "name": name, "namespace": namespace },
        "rules": rules,
    }))
    .unwrap();
    Api::<k8s_openapi::api::rbac::v1::Role>::namespaced(scope.client.clone(), namespace)
        .create(&PostParams::default(), &role)
        .await
        .unwrap();
    let binding: k8s_openapi::api::rbac::v1::RoleBinding = serde_json::from_value(json!({
        "metadata": { "name": name, "namespace": namespace },
        "roleRef": { "apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": name },
        "subjects": [{ "apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": user }],
    }))
    .unwrap();
    Api::<k8s_openapi::api::rbac::v1::RoleBinding>::namespaced(scope.client.clone(), namespace)
        .create(&PostParams::default(), &binding)
        .await
        .unwrap();
}

/// `user`'s request `etcd` for etcd 0.9.2 in `namespace`, created as her
/// once her rights have reached the apiserver's authorizer.
async fn request_as(scope: &Scope, user: &str, namespace: &str) -> Api<OperatorRequest> {
    let mut request = etcd_request(scope, "etcd", json!({}));
    request.metadata.namespace = Some(namespace.to_owned());
    let hers: Api<OperatorRequest> =
        Api::namespaced(scope.cluster.client_as(user).await, namespace);
    eventually(&format!("{user} may write requests"), || async {
        hers.create(&PostParams::default(), &request).await.is_ok()
    })
    .await;
    Api::namespaced(scope.client.clone(), namespace)
}

/// The one Deployment in a namespace.
async fn only_deployment(
    deployments: &Api<k8s_openapi::api::apps::v1::Deployment>,
) -> k8s_openapi::api::apps::v1::Deployment {
    let mut items = deployments.list(&Default::default()).await.unwrap().items;
    assert_eq!(items.len(), 1, "{items:?}");
    items.remove(0)
}

/// The shipped `deploy/policies/namespace-operators.yaml`, unedited but for
/// its name (the scope's) and labels.
async fn shipped_namespace_operators(scope: &Scope) -> String {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../deploy/policies/namespace-operators.yaml");
    let mut policy: pakket_api::ApprovalPolicy =
        serde_saphyr::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    policy.metadata.name = Some(scope.name("namespace-operators"));
    policy.metadata.labels = Some(scope.labels());
    Api::<pakket_api::ApprovalPolicy>::all(scope.client.clone())
        .create(&PostParams::default(), &policy)
        .await
        .unwrap();
    scope.name("namespace-operators")
}

#[tokio::test]
async fn a_listed_team_self_serves_an_operator_under_the_shipped_policy_and_no_request_wears_anothers_install()
 {
    // The shipped classes' approvals as deploy/ has them (the set:
    // Android; the children: the shipped namespace-operators policy),
    // pakket-resolveset, registry-v1 and the webhooks as their
    // ServiceAccounts, and three namespace owners whose teams come from
    // their groups (pakket-dev: carol team-c, alice team-a, bob team-b).
    // Carol's team is not listed: her request is refused with the rule's
    // words and nothing runs for her. Alice's installs etcd into her
    // namespace without anyone approving anything. Bob asks for etcd
    // while alice's runs and gets his own copy in his namespace, sharing
    // the CRDs; alice leaving keeps them for him, bob leaving takes them.
    let _etcd = ETCD_CRDS.lock().await;
    let scope = Scope::new("resolveset-self-service").await;
    pakket_testkit::install_crds(&scope.client).await.unwrap();
    let shipped = Shipped::new(&scope).await;
    let (inputs_hooks, children_hooks) = webhooks_for(&scope, &shipped).await;
    let key = inputs_hooks.record_key();
    let _running = shipped.start_controllers(&scope, Some(key.clone())).await;
    let (_, mirror) = etcd_images_and_catalog(&scope).await;
    let policy = shipped_namespace_operators(&scope).await;
    let registry_class = start_registry_v1_as(
        &scope,
        shipped.registry_v1.clone(),
        "Policy",
        &mirror,
        Some(key.clone()),
    )
    .await;
    Api::<ProvisionerClass>::all(scope.client.clone())
        .patch(
            &registry_class,
            &PatchParams::default(),
            &Patch::Merge(json!({ "spec": { "parameters": { "approvalPolicy": policy } } })),
        )
        .await
        .unwrap();
    start_resolveset_as(
        &scope,
        shipped.resolveset.clone(),
        &registry_class,
        Some(key.clone()),
    )
    .await;
    requests_subscription_class(&scope).await;
    let instances: Api<Instance> = Api::all(scope.client.clone());
    let set = scope.name("resolveset");
    let child = format!("{set}-etcd");

    // Carol (team-c): refused by the policy's rule, in its words.
    let team_c = team_namespace(&scope, "team-c", "carol").await;
    let carols = request_as(&scope, "carol", &team_c).await;
    let refused = request_says(&carols, "etcd", "Approved", "RefusedByPolicy").await;
    assert!(
        refused.message.contains("rule 3 (listed-teams)")
            && refused.message.contains("only the teams"),
        "{refused:?}"
    );
    let deployments = |namespace: &str| {
        Api::<k8s_openapi::api::apps::v1::Deployment>::namespaced(scope.client.clone(), namespace)
    };
    assert!(
        deployments(&team_c)
            .list(&Default::default())
            .await
            .unwrap()
            .items
            .is_empty(),
        "nothing runs for a refused request"
    );
    carols
        .delete("etcd", &DeleteParams::default())
        .await
        .unwrap();
    eventually("carol's refused child is gone", || async {
        instances.get_opt(&child).await.unwrap().is_none()
    })
    .await;

    // Alice (team-a): no person anywhere, etcd runs in her namespace.
    let asked = std::time::Instant::now();
    let team_a = team_namespace(&scope, "team-a", "alice").await;
    let alices = request_as(&scope, "alice", &team_a).await;
    let healthy = request_says(&alices, "etcd", "Healthy", "ObjectsHealthy").await;
    println!(
        "request created → etcd Healthy, no person: {:.1} s",
        asked.elapsed().as_secs_f64()
    );
    assert_eq!(healthy.status, "True");
    let approved = alices.get("etcd").await.unwrap();
    let approved_condition = approved.condition("Approved").unwrap();
    assert!(
        approved_condition.message.contains("rule 5 (self-service)"),
        "{approved_condition:?}"
    );
    assert_eq!(
        approved.status.as_ref().unwrap().instance,
        Some(child.clone())
    );
    let the_set = instances.get(&set).await.unwrap();
    let set_approval = pakket_testkit::message_of(&the_set, ConditionType::Approved);
    assert!(
        set_approval.contains("alice's request, judged as theirs by class"),
        "{set_approval}"
    );
    let installed = instances.get(&child).await.unwrap();
    let approval = installed.status.as_ref().unwrap().approval.clone().unwrap();
    assert!(
        approval.approved_by.contains("self-service"),
        "{approval:?}"
    );
    assert_eq!(
        deployments(&team_a)
            .list(&Default::default())
            .await
            .unwrap()
            .items
            .len(),
        1,
        "the operator runs in alice's namespace"
    );

    // Bob (team-b), while alice's etcd runs: his own copy, in and for
    // his namespace, judged as his request under the same rule, using the
    // CRDs alice's install owns. Alice's install is not touched.
    let alice_operator = only_deployment(&deployments(&team_a)).await;
    let team_b = team_namespace(&scope, "team-b", "bob").await;
    let asked = std::time::Instant::now();
    let bobs = request_as(&scope, "bob", &team_b).await;
    let copy = pakket_resolveset::inputs::input_resolve::copy_name(&set, "etcd", &team_b);
    let healthy = request_says(&bobs, "etcd", "Healthy", "ObjectsHealthy").await;
    println!(
        "second team's request created → its own copy Healthy, no person: {:.1} s",
        asked.elapsed().as_secs_f64()
    );
    assert_eq!(healthy.status, "True");
    let bob_status = bobs.get("etcd").await.unwrap().status.unwrap();
    assert_eq!(bob_status.instance, Some(copy.clone()));
    assert_eq!(bob_status.installed_version.as_deref(), Some("0.9.2"));
    let bobs_copy = instances.get(&copy).await.unwrap();
    let (requester, _) = pakket_api::requester(&bobs_copy, Some(&key)).unwrap();
    assert_eq!(requester.username, "bob", "the copy is judged as bob's");
    let copy_approval = bobs_copy.status.as_ref().unwrap().approval.clone().unwrap();
    assert!(
        copy_approval.approved_by.contains("self-service"),
        "{copy_approval:?}"
    );
    let copy_config = bobs_copy.spec.config.clone().unwrap();
    assert_eq!(copy_config["crds"], "Omit");
    assert_eq!(copy_config["watchNamespaces"], json!([team_b]));
    assert!(
        !bobs_copy
            .status
            .as_ref()
            .unwrap()
            .objects
            .iter()
            .any(|o| o.kind == "CustomResourceDefinition"
                || o.namespace.as_deref().is_some_and(|ns| ns != team_b)),
        "the copy writes only into bob's namespace and owns no CRD"
    );
    let bob_operator = only_deployment(&deployments(&team_b)).await;
    let watched = bob_operator
        .spec
        .as_ref()
        .and_then(|spec| spec.template.metadata.as_ref())
        .and_then(|metadata| metadata.annotations.as_ref())
        .and_then(|annotations| annotations.get("olm.targetNamespaces").cloned());
    assert_eq!(watched.as_deref(), Some(team_b.as_str()));
    let set_approval =
        pakket_testkit::message_of(&instances.get(&set).await.unwrap(), ConditionType::Approved);
    assert!(
        set_approval.contains(&format!("etcd in {team_b}"))
            && set_approval.contains("bob's request"),
        "{set_approval}"
    );
    assert_eq!(
        only_deployment(&deployments(&team_a)).await.metadata.uid,
        alice_operator.metadata.uid,
        "alice's operator runs on as it was"
    );

    // Alice leaves while bob's copy runs: her operator goes, the CRDs
    // (and bob's EtcdClusters with them) stay, kept alone by the
    // package's own Instance; bob's operator is not restarted.
    alices
        .delete("etcd", &DeleteParams::default())
        .await
        .unwrap();
    eventually(
        "alice's operator is gone and the CRDs are kept alone",
        || async {
            let Some(kept) = instances.get_opt(&child).await.unwrap() else {
                return false;
            };
            let approval = kept.status.as_ref().and_then(|s| s.approval.clone());
            deployments(&team_a)
                .list(&Default::default())
                .await
                .unwrap()
                .items
                .is_empty()
                && kept
                    .spec
                    .config
                    .as_ref()
                    .is_some_and(|c| c["crds"] == "Only")
                && approval.is_some_and(|a| a.approved_by.contains("crds-kept-for-copies"))
                && pakket_testkit::condition_is(&kept, ConditionType::Installed, "True")
        },
    )
    .await;
    let crds = Api::<k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition>::all(scope.client.clone());
    for name in bundle_crd_names(&data("bundles/etcd/0.9.2")) {
        assert!(
            crds.get_opt(&name).await.unwrap().is_some(),
            "{name} is kept"
        );
    }
    assert_eq!(
        only_deployment(&deployments(&team_b)).await.metadata.uid,
        bob_operator.metadata.uid,
        "bob's operator runs on as it was"
    );
    request_says(&bobs, "etcd", "Healthy", "ObjectsHealthy").await;

    // Bob leaves last: his copy and the CRDs go.
    bobs.delete("etcd", &DeleteParams::default()).await.unwrap();
    eventually("both Instances are uninstalled", || async {
        instances.get_opt(&child).await.unwrap().is_none()
            && instances.get_opt(&copy).await.unwrap().is_none()
    })
    .await;
    etcd_leaves(&scope).await;
    remove_set(&instances, &set).await;
    let _ = Api::<pakket_api::ApprovalPolicy>::all(scope.client.clone())
        .delete(&policy, &DeleteParams::default())
        .await;
    children_hooks.stop().await.unwrap();
    inputs_hooks.stop().await.unwrap();
    support::cleanup(scope).await;
}
